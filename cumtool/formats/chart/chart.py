"""`--to chart`: a line chart of the results, on the terminal or (-o FILE.svg, FILE.png) as
an image.

ChartSink receives result batches like every other sink and keeps no rows: each line is
decimated as it goes (decimate.py). One line per result column (`<name>_<op>` with several
ops or --keep; the scanned column itself otherwise), against the row number from 1 or
against `--x COL` (numbers, dates, times, or their text from a CSV: ISO, or a layout of
dates.py, or --x-format's); with --by, one line per group and result, and where the
results are of several scanned columns, a panel per column (its own y axis, one x axis
under them all), each drawing a line per group. At most MAX_LINES lines (or groups) show:
those with the largest last value, and a line under the legend says how many more there
were.

On a terminal (and in text written to a pipe or a file) the lines are braille dots, two
by four to a character cell, each line in its colour where the terminal shows colour and
NO_COLOR is unset; without colour, several lines are drawn with a marker each (`•`, `+`,
...) at one point a cell, so that the legend still tells them apart. The text fits the
size asked for (the terminal's, else 80 x 24): axes with round tick labels, the legend,
and the caption line of the table view. Names from the file are escaped as the table
escapes them (`\\x1b`): a column name cannot drive the terminal. Images are drawn by
image.py (matplotlib, the `plot` extra).
"""

from __future__ import annotations

import itertools
import math
import textwrap
from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from typing import IO, Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from cumtool.columns import Selection, resolve
from cumtool.errors import DataError
from cumtool.formats.chart import dates, ticks
from cumtool.formats.chart.decimate import Decimator
from cumtool.formats.chart.figure import Chart, Drawn, Panel
from cumtool.formats.layout import Cells, plural
from cumtool.view import View, printable

MAX_LINES = 8
PANEL_ROWS = 3  # the least lines of a panel on the terminal
MAX_WAITING = 200_000  # rows of slash dates held until one tells month/day or day/month
DEFAULT_CELLS = (80, 24)
DEFAULT_PIXELS = (1000, 500)
COLOURS = ("blue", "red", "green", "magenta", "cyan", "yellow", "bright_blue", "bright_red")
MARKERS = ("•", "+", "x", "o", "*", "#", "@", "%")
ASCII_MARKERS = ("*", "+", "x", "o", "#", "@", "%", "&")
_DOTS = ((0x01, 0x08), (0x02, 0x10), (0x04, 0x20), (0x40, 0x80))  # braille [row][col]
_UNITS_PER_DAY = {"s": 86400, "ms": 86400_000, "us": 86400_000_000, "ns": 86400_000_000_000}


@dataclass(frozen=True)
class ChartOptions:
    """What the chart needs of the run's options."""

    ops: tuple[str, ...]
    keep: bool  # results appended as <name>_<op> (--keep, or several ops)
    x: Selection | None = None
    x_format: str | None = None  # --x-format: the strftime layout of --x's text
    by: tuple[Selection, ...] = ()
    width: int | None = None
    height: int | None = None
    image: str | None = None  # "svg" or "png": an image (image.py), else text
    # --period with --time COL (cumtool.periods.Period): where --x is COL, a line per
    # period, over the day of its period, so that this year's sits over last year's.
    period: Any = None
    time: Selection | None = None


class ChartSink:
    """Decimates the results as they come; draws the chart on close."""

    def __init__(self, stream: IO[bytes], schema: pa.Schema, view: View,
                 options: ChartOptions, source_name: str, console: Any = None,
                 encoding: str = "utf-8") -> None:
        self._stream = stream
        self._view = view
        self._options = options
        self._console = console
        self._encoding = encoding if console is None else console.encoding
        self._cells = Cells(view.precision, self._encoding)
        self._source = source_name
        self._schema = schema
        self._columns = len(schema)
        names = schema.names
        self._x = None if options.x is None else _one(options.x, names, source_name)
        self._period = options.period if (
            options.period is not None and options.time is not None and self._x is not None
            and _one(options.time, names, source_name) == self._x) else None
        self._keys: list[int] = []
        for selection in options.by:
            self._keys.extend(k for k in resolve(selection, names, source_name)
                              if k not in self._keys)
        self._results = _results(schema, view, options)
        self._ops = list(options.ops)
        # Each result's scanned column, and its op where the result is <name>_<op>.
        self._result_of = _result_of(schema, view, options)
        if not self._results:
            raise DataError(f"{source_name}: no result column to draw")
        for i in self._results:
            kind = schema.field(i).type
            if not (pa.types.is_integer(kind) or pa.types.is_floating(kind)
                    or pa.types.is_decimal(kind)):
                raise DataError(f"{source_name}: a chart draws numbers; column "
                                f"{names[i]!r} holds {kind}")
        self._x_kind = "row" if self._x is None else None  # number, date or time
        self._x_unit = 1.0  # a timestamp's units per day
        self._layout: str | None = None  # the date layout of --x's text, guessed
        self._candidates: tuple[str, ...] = ()  # the layouts it may still be
        self._first_cell = ""
        # Batches held while slash dates may be month/day or day/month: (batch, row).
        self._waiting: list[tuple[pa.RecordBatch, int]] | None = None
        self.size = _size(options, console)
        pixels = self.size[0] if options.image else 2 * self.size[0]
        self._decimator = Decimator(pixels, integral=self._x is None)
        self._groups: dict[tuple[Any, ...], int] = {}
        self._group_names: list[str] = []
        self._rows = 0
        if options.image:
            from cumtool.formats.chart.image import check_library

            check_library()  # before any row is read: the plot extra is installed

    # Feeding --------------------------------------------------------------------------
    def write(self, batch: pa.RecordBatch) -> None:
        n = batch.num_rows
        if not n:
            return
        first_row = self._rows
        self._rows += n
        if self._waiting is None:
            try:
                self._feed(batch, first_row)
            except _Wait:
                self._waiting = [(batch, first_row)]
            return
        # Slash dates that read both as month/day and as day/month: held until a cell
        # tells which (dates.py).
        self._waiting.append((batch, first_row))
        text = _text(batch.column(self._x)) if self._x is not None else None
        if text is not None:
            self._narrow(text, first_row)
        if self._layout is None:
            if self._rows - self._waiting[0][1] > MAX_WAITING:
                raise self._ambiguous(f" in its first {MAX_WAITING} rows")
            return
        waiting, self._waiting = self._waiting, None
        for held, row in waiting:
            self._feed(held, row)

    def _feed(self, batch: pa.RecordBatch, first_row: int) -> None:
        n = batch.num_rows
        rows = np.arange(first_row, first_row + n, dtype=np.int64)
        if self._x is None:
            x = (rows + 1).astype(np.float64)
            present = None
        else:
            x, present = self._x_values(batch.column(self._x), first_row)
        starts = None
        if self._period is not None:  # the day of each row's period, and the period
            from cumtool.periods import starts as period_starts

            days = np.floor(np.where(np.isfinite(x), x, 0.0)).astype(np.int64)
            starts = period_starts(self._period, days)
            x = x - starts
        groups = self._group_ids(batch, starts) if self._keys or starts is not None else None
        if present is not None:
            rows, x = rows[present], x[present]
            groups = None if groups is None else groups[present]
        k = self._decimator.buckets(x)
        for position in self._results:
            y = _floats(batch.column(position))
            if present is not None:
                y = y[present]
            if groups is None:
                self._decimator.line((position,)).add(k, rows, x, y)
                continue
            order = np.argsort(groups, kind="stable")
            sorted_groups = groups[order]
            starts = np.flatnonzero(np.r_[True, sorted_groups[1:] != sorted_groups[:-1]])
            for start, end in zip(starts, np.r_[starts[1:], len(order)], strict=True):
                at = order[start:end]
                line = self._decimator.line((position, int(sorted_groups[start])))
                line.add(k[at], rows[at], x[at], y[at])

    def _x_values(self, column: pa.Array, first_row: int
                  ) -> tuple[np.ndarray, np.ndarray | None]:
        """The x of each row as a float (days for dates and times), and which rows have
        one (None: all)."""
        if pa.types.is_dictionary(column.type):
            column = column.dictionary_decode()
        kind = column.type
        if self._options.x_format is not None:
            if not (pa.types.is_string(kind) or pa.types.is_large_string(kind)
                    or pa.types.is_integer(kind)):
                raise DataError(f"{self._source}: --x-format reads text, and --x "
                                f"{self._x_name()!r} holds {kind}; leave --x-format out")
            column = self._read_layout(_text(column), self._options.x_format, first_row)
            kind = column.type
        elif pa.types.is_string(kind) or pa.types.is_large_string(kind):
            column = self._parse_text(_text(column), first_row)
            kind = column.type
        if pa.types.is_integer(kind) or pa.types.is_floating(kind) or pa.types.is_decimal(kind):
            self._settle("number", kind)
            values = _floats(column)
        elif pa.types.is_date(kind):
            self._settle("date", kind)
            values = _floats(column.cast(pa.date32()).cast(pa.int32()))
        elif pa.types.is_timestamp(kind):
            self._settle("time", kind)
            self._x_unit = _UNITS_PER_DAY[kind.unit]
            values = _floats(column.cast(pa.int64())) / self._x_unit
        else:
            raise DataError(f"{self._source}: --x {self._x_name()!r} holds {kind}: the "
                            "horizontal axis takes numbers, dates or times")
        present = np.isfinite(values)
        return values, None if present.all() else present

    def _x_name(self) -> str:
        assert self._x is not None
        return str(self._schema.names[self._x])

    def _settle(self, kind: str, arrow_type: pa.DataType) -> None:
        if self._x_kind is None:
            self._x_kind = kind
            self._decimator.integral = kind == "date" or pa.types.is_integer(arrow_type)
        elif self._x_kind != kind:
            raise DataError(f"{self._source}: --x {self._x_name()!r}: its cells are "
                            f"{self._x_kind}s, then {kind}s")

    def _parse_text(self, text: pa.Array, first_row: int) -> pa.Array:
        """CSV cells of the x column: numbers, ISO dates or times, or dates in one of the
        layouts of dates.py, as the first cell that is not missing says; a later cell
        of another kind or layout is an error naming it."""
        if self._x_kind in (None, "row") and self._layout is None:
            present = text.drop_null()
            if not len(present):
                return pa.nulls(len(text), pa.float64())
            first = present.slice(0, 1)
            kind = next((k for k, t in _TEXT_KINDS.items() if _casts(first, t)), None)
            if kind is None:
                self._guess_layout(text, first_row)  # or _Wait: the batch waits
            else:
                self._settle(kind, _TEXT_KINDS[kind])
                if kind == "number" and _casts(present, pa.int64()):
                    # Whole numbers: integral, so the buckets are a whole number wide.
                    self._decimator.integral = True
        if self._layout is not None:
            return self._read_layout(text, self._layout, first_row, guessed=True)
        kind = str(self._x_kind)
        try:
            return pc.cast(text, _TEXT_KINDS[kind])
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
            pass
        for n, cell in enumerate(text.to_pylist()):
            if cell is not None and not _casts(pa.array([cell]), _TEXT_KINDS[kind]):
                raise DataError(f"{self._source}: row {first_row + n + 1}: --x "
                                f"{self._x_name()!r}: {printable(cell)!r} is not a {kind} "
                                "like the cells before it")
        raise AssertionError("a cell failed to cast, but none alone does")

    def _guess_layout(self, text: pa.Array, first_row: int) -> None:
        """The layout of dates.py that reads the first cell and every one after it in
        this batch; where both slash layouts do, the batch waits for one that tells."""
        present = text.drop_null()
        first = present.slice(0, 1)
        found = [layout for layout in dates.LAYOUTS
                 if dates.read(first, layout).null_count == 0]
        if not found:
            raise DataError(f"{self._source}: row {first_row + _first_valid(text) + 1}: "
                            f"--x {self._x_name()!r}: {printable(first[0].as_py())!r} is "
                            f"not a number or a date in a layout --x reads "
                            f"({dates.KNOWN}); --x-format FMT reads another")
        self._candidates = tuple(found[:2] if found[0] in dates.SLASHES else found[:1])
        self._first_cell = str(first[0].as_py())
        self._narrow(text, first_row)
        if self._layout is None:
            raise _Wait

    def _narrow(self, text: pa.Array, first_row: int) -> None:
        """Keep the candidate layouts that read every cell of `text`; where one is left,
        it is the column's layout. Where none is, the cell that the one reading most
        cells stops at is the error."""
        unread = {layout: dates.first_unread(text, dates.read(text, layout))
                  for layout in self._candidates}
        kept = tuple(layout for layout, at in unread.items() if at is None)
        if not kept:
            at = max(found for found in unread.values() if found is not None)
            layouts = " or ".join(name for name, found in unread.items() if found == at)
            raise DataError(f"{self._source}: row {first_row + at + 1}: --x "
                            f"{self._x_name()!r}: {printable(text[at].as_py())!r} is not a "
                            f"date like the cells before it ({layouts}); --x-format FMT "
                            "reads one layout")
        self._candidates = kept
        if len(kept) == 1:
            self._layout = kept[0]
            self._settle("date", pa.date32())

    def _ambiguous(self, where: str = "") -> DataError:
        return DataError(f"{self._source}: --x {self._x_name()!r}: slash dates such as "
                         f"{printable(self._first_cell)!r} read as month/day and as "
                         f"day/month, and no field above 12{where} tells which: give "
                         "--x-format %m/%d/%Y or --x-format %d/%m/%Y")

    def _read_layout(self, text: pa.Array, layout: str, first_row: int,
                     guessed: bool = False) -> pa.Array:
        """`text` read in `layout` (--x-format, or the one guessed); a cell it does not
        read is an error naming it."""
        parsed = dates.read(text, layout, guessed)
        at = dates.first_unread(text, parsed)
        if at is not None:
            cell = printable(text[at].as_py())
            where = f"{self._source}: row {first_row + at + 1}: --x {self._x_name()!r}"
            if guessed:
                raise DataError(f"{where}: {cell!r} is not a date like the cells before it "
                                f"({layout}); --x-format FMT reads one layout")
            raise DataError(f"{where}: {cell!r} does not match --x-format {layout!r}")
        return parsed

    def _group_ids(self, batch: pa.RecordBatch, starts: np.ndarray | None = None
                   ) -> np.ndarray:
        """Each row's group (its --by keys, and its period where `starts` gives each
        row's period by its first day), numbered in order of first appearance."""
        codes = []
        dictionaries: list[list[Any]] = []
        for key in self._keys:
            column = batch.column(key)
            if not pa.types.is_dictionary(column.type):
                column = pc.dictionary_encode(column, null_encoding="encode")
            codes.append(np.asarray(column.indices.fill_null(-1)).astype(np.int64))
            dictionaries.append(column.dictionary.to_pylist())
        if starts is not None:
            first_days, inverse_days = np.unique(starts, return_inverse=True)
            codes.append(np.asarray(inverse_days).reshape(-1).astype(np.int64))
            dictionaries.append([_period_name(self._period, int(d)) for d in first_days])
        stacked = np.stack(codes, axis=1)
        combos, inverse = np.unique(stacked, axis=0, return_inverse=True)
        ids = np.empty(len(combos), dtype=np.int64)
        for c, combo in enumerate(combos):
            group = tuple(None if code < 0 else dictionaries[j][code]
                          for j, code in enumerate(combo.tolist()))
            found = self._groups.get(group)
            if found is None:
                found = self._groups[group] = len(self._group_names)
                self._group_names.append(", ".join("(missing)" if v is None else str(v)
                                                   for v in group))
            ids[c] = found
        return ids[np.asarray(inverse).reshape(-1)]

    # Drawing --------------------------------------------------------------------------
    def close(self) -> None:
        if self._waiting is not None:
            raise self._ambiguous()
        legend, panels, notes = self._panels()
        infinite = sum(line.infinite for panel in panels for line in panel.lines)
        caption = self._view.caption(
            f"{plural(self._rows, 'row')} x {plural(self._columns, 'column')}")
        if infinite:
            caption += (f"; {infinite} infinite {'value' if infinite == 1 else 'values'} "
                        "clipped to the frame")
        x_range = (self._decimator.x_low, self._decimator.x_high)
        if self._period is not None:  # days into each line's period
            x_kind, x_name = "number", f"day of the {self._period.unit}"
        else:
            x_kind = self._x_kind or "row"
            x_name = self._x_name() if self._x is not None else "row"
        chart = Chart(legend, panels, x_range, x_kind, x_name, caption, notes)
        if self._options.image:
            from cumtool.formats.chart.image import draw_image

            draw_image(chart, self._stream, self._options.image, self.size)
            return
        colour = self._console is not None and _shows_colour(self._console)
        text = draw_text(chart, self.size, colour, self._cells)
        if self._console is not None:
            from rich.text import Text

            for line in text:
                self._console.print(line if isinstance(line, Text) else Text(line),
                                    soft_wrap=True, crop=False)
        else:
            body = "".join(str(line).rstrip() + "\n" for line in text)
            self._stream.write(body.encode(self._encoding, errors="replace"))

    def _panels(self) -> tuple[list[str], list[Panel], list[str]]:
        """The legend, the panels and the notes under the legend.

        One panel, holding every line, but with --by and results of several scanned
        columns: then a panel per scanned column, each line an entry of the legend (a
        group, and an op where there are several) drawn in every panel. Of more than
        MAX_LINES entries, those whose line in the first panel ends highest are drawn."""
        columns = list(dict.fromkeys(self._result_of[p][0] for p in self._results))
        stacked = bool(self._keys) and len(columns) > 1
        lines = {key: line for key, line in self._decimator.lines.items()
                 if line.last_row >= 0 or line.gap.any()}

        def entry(key: Hashable) -> tuple[int, ...]:
            assert isinstance(key, tuple)
            if not stacked:
                return _order(key)
            _column, op = self._result_of[key[0]]
            return (key[1], self._ops.index(op) if op is not None else 0)

        def panel(key: Hashable) -> int:
            assert isinstance(key, tuple)
            return columns.index(self._result_of[key[0]][0]) if stacked else 0

        # Each entry's rank: the last value of its line in the first panel it is in.
        last: dict[tuple[int, ...], tuple[int, float]] = {}
        names: dict[tuple[int, ...], str] = {}
        for key, line in sorted(lines.items(), key=lambda item: panel(item[0])):
            found = entry(key)
            value = -math.inf if math.isnan(line.last_value) else line.last_value
            last.setdefault(found, (panel(key), value))
            names.setdefault(found, self._line_name(key, stacked))
        entries = sorted(last)
        notes = []
        if len(entries) > MAX_LINES:
            ranked = sorted(entries, key=lambda e: (-last[e][1], e))  # ties: the first
            hidden = len(entries) - MAX_LINES
            entries = sorted(ranked[:MAX_LINES])
            what = ("groups" if self._keys and (stacked or len(self._results) == 1)
                    and len(self._ops_drawn()) == 1 else "lines")
            notes.append(f"{hidden} more {what} not drawn: these are the {MAX_LINES} with "
                         f"the largest last value{f' of {columns[0]}' if stacked else ''}")
        index = {e: n for n, e in enumerate(entries)}
        panels = [Panel([], (math.inf, -math.inf), columns[n] if stacked else None)
                  for n in range(len(columns) if stacked else 1)]
        for key, line in sorted(lines.items(), key=lambda item: entry(item[0])):
            n = index.get(entry(key))
            if n is None:
                continue
            into = panels[panel(key)]
            into.lines.append(Drawn(names[entry(key)], line.runs(), line.infinite, n))
            into.y_range = (min(into.y_range[0], line.finite_low),
                            max(into.y_range[1], line.finite_high))
        return [names[e] for e in entries], panels, notes

    def _ops_drawn(self) -> set[str | None]:
        return {self._result_of[p][1] for p in self._results}

    def abort(self) -> None:
        self._decimator.lines.clear()
        self._waiting = None

    def _line_name(self, key: Hashable, stacked: bool = False) -> str:
        """A line's name in the legend: its result column, its group, or both; in a
        panel per column, its group, and the op where there are several."""
        assert isinstance(key, tuple)
        column = str(self._schema.names[key[0]])
        if len(key) == 1:
            return column
        group = self._group_names[key[1]]
        if stacked:
            op = self._result_of[key[0]][1]
            return group if op is None or len(self._ops_drawn()) == 1 else f"{group}: {op}"
        return group if len(self._results) == 1 else f"{group}: {column}"


def _period_name(period: Any, first_day: int) -> str:
    """A period in the legend, by its first day: 2024, 2024-03, 2024-Q1, 2024-W10, or
    the first day's date where years start elsewhere than on 1 January."""
    import datetime as dt

    day = dt.date(1970, 1, 1) + dt.timedelta(days=first_day)
    january = (period.month, period.day) == (1, 1)
    if period.unit == "year" and january:
        return str(day.year)
    if period.unit == "quarter" and january:
        return f"{day.year}-Q{(day.month - 1) // 3 + 1}"
    if period.unit == "month":
        return f"{day.year}-{day.month:02d}"
    if period.unit == "week":
        year, week, _weekday = day.isocalendar()
        return f"{year}-W{week:02d}"
    return day.isoformat()


def _order(key: Hashable) -> tuple[int, ...]:
    assert isinstance(key, tuple)
    return key[1:] + key[:1] if len(key) > 1 else key


def _one(selection: Selection, names: Sequence[str], source: str) -> int:
    found = resolve(selection, names, source)
    if len(found) != 1:
        raise DataError(f"{source}: {selection.option} {str(selection)!r} names "
                        f"{len(found)} columns; the horizontal axis is one column")
    return found[0]


def _results(schema: pa.Schema, view: View, options: ChartOptions) -> list[int]:
    """The result columns, in output order: each scanned column's results."""
    names = schema.names
    if not view.scanned:  # an array: every column is a result
        return list(range(len(names)))
    if options.keep:
        wanted = {f"{name}_{op}" for name in view.scanned for op in options.ops}
    else:
        wanted = set(view.scanned)
    return [i for i, name in enumerate(names) if name in wanted and name in view.first]


class _Wait(Exception):
    """The x column's first dates read both as month/day and day/month."""


def _text(column: pa.Array) -> pa.Array:
    """Text cells trimmed, an empty one missing."""
    if pa.types.is_dictionary(column.type):
        column = column.dictionary_decode()
    if not (pa.types.is_string(column.type) or pa.types.is_large_string(column.type)):
        column = pc.cast(column, pa.large_string())
    text = pc.utf8_trim_whitespace(column)
    return pc.if_else(pc.equal(text, ""), pa.scalar(None, text.type), text)


def _result_of(schema: pa.Schema, view: View, options: ChartOptions
               ) -> dict[int, tuple[str, str | None]]:
    """Each column's scanned column and op: (name, op) for <name>_<op>, else (name, None)."""
    named = {f"{name}_{op}": (name, op) for name in view.scanned for op in options.ops}
    found: dict[int, tuple[str, str | None]] = {}
    for i, name in enumerate(schema.names):
        found[i] = named[name] if options.keep and name in named else (str(name), None)
    return found


def _floats(column: pa.Array) -> np.ndarray:
    """A numeric column as float64, missing cells NaN."""
    if not pa.types.is_floating(column.type) or column.type != pa.float64():
        column = pc.cast(column, pa.float64(), safe=False)
    if column.null_count:
        column = column.fill_null(math.nan)
    return np.asarray(column.to_numpy(zero_copy_only=False), dtype=np.float64)


_TEXT_KINDS = {"number": pa.float64(), "date": pa.date32(), "time": pa.timestamp("us")}


def _casts(text: pa.Array, to: pa.DataType) -> bool:
    try:
        pc.cast(text, to)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        return False
    return True


def _first_valid(column: pa.Array) -> int:
    return int(np.flatnonzero(np.asarray(column.is_valid()))[0])


def _size(options: ChartOptions, console: Any) -> tuple[int, int]:
    if options.image:
        return options.width or DEFAULT_PIXELS[0], options.height or DEFAULT_PIXELS[1]
    width, height = DEFAULT_CELLS
    if console is not None:
        # A line less than the terminal's: the shell's prompt comes after the chart, and
        # a chart of the terminal's full height would scroll its top line off.
        width, height = console.width, console.height - 1
    return options.width or width, options.height or height


def _shows_colour(console: Any) -> bool:
    return console.color_system is not None and not console.no_color


def draw_text(chart: Chart, size: tuple[int, int], colour: bool, cells: Cells) -> list[Any]:
    """The chart as lines of text (rich Text where `colour`), fitting `size`: its panels
    stacked, each titled where there are several, over one x axis."""
    from rich.text import Text

    width, height = size
    utf = cells.utf
    glyph = ({"tick": "┤", "axis": "│", "corner": "└", "rule": "─", "xtick": "┬",
              "key": "━━"} if utf else
             {"tick": "+", "axis": "|", "corner": "+", "rule": "-", "xtick": "+", "key": "--"})
    several = len(chart.legend) > 1
    braille = utf and (colour or not several)
    markers = MARKERS if utf else ASCII_MARKERS
    # The legend, the notes and the caption, wrapped to the width.
    entries = []
    for n, name in enumerate(chart.legend):
        key = glyph["key"] if braille else markers[n] * 2
        entries.append((key, cells.text(name), n))
    legend = _wrap_entries(entries, width)
    notes = list(chart.notes)
    panels = chart.panels
    titled = len(panels) > 1

    def free() -> int:  # the lines left for the panels: the x axis takes two
        below = sum(len(_wrap(cells.text(note), width)) for note in notes)
        return height - 2 - len(legend) - below - len(_wrap(cells.text(chart.caption), width))

    if titled and free() < len(panels) * (PANEL_ROWS + 1):
        # A panel needs its title and PANEL_ROWS lines: as many as fit are drawn.
        notes.append("")
        while len(panels) > 1 and free() < len(panels) * (PANEL_ROWS + 1):
            panels = panels[:-1]
            left = [cells.text(str(p.title)) for p in chart.panels[len(panels):]]
            notes[-1] = f"not drawn, for want of lines: {', '.join(left)} (-c picks columns)"
        titled = free() > PANEL_ROWS  # the one panel left keeps its title where it fits
    caption = _wrap(cells.text(chart.caption), width)
    below = [line for note in notes for line in _wrap(cells.text(note), width)]
    room = max(len(panels) * PANEL_ROWS, free() - (len(panels) if titled else 0))
    heights = [room // len(panels) + (n < room % len(panels)) for n in range(len(panels))]
    # Each panel's y axis: round ticks, labels right-aligned left of it; one margin.
    frames = []
    for panel, rows in zip(panels, heights, strict=True):
        low, high, step = panel.y_frame(max(2, rows // 3))
        y_ticks = ticks.number_ticks(low, high, step)
        frames.append((low, high, y_ticks, [ticks.number_label(v, step) for v in y_ticks]))
    margin = max(len(label) for frame in frames for label in frame[3]) + 1
    columns = max(4, width - margin - 1)
    sx, sy = (2, 4) if braille else (1, 1)
    dots_w = columns * sx
    x_low, x_high = chart.x_frame()

    def px(x: float) -> int:
        return round((x - x_low) / (x_high - x_low) * (dots_w - 1))

    out: list[Any] = []
    for panel, rows, (low, high, y_ticks, labels) in zip(panels, heights, frames,
                                                         strict=True):
        if titled:
            title = " " * margin + cells.text(str(panel.title))
            out.append(Text(title, style="bold") if colour else title)
        dots_h = rows * sy

        def py(y: float, low: float = low, high: float = high, dots_h: int = dots_h) -> int:
            if math.isinf(y):
                return 0 if y > 0 else dots_h - 1
            return dots_h - 1 - round((y - low) / (high - low) * (dots_h - 1))

        bits = np.zeros((rows, columns), dtype=np.int64)
        owner = np.full((rows, columns), -1, dtype=np.int64)
        for line in panel.lines:
            for run in line.runs:
                points = [(px(x), py(y)) for x, y in run]
                if len(points) == 1:
                    points = points * 2
                for (x0, y0), (x1, y1) in itertools.pairwise(points):
                    for dx, dy in _segment(x0, y0, x1, y1):
                        row, col = dy // sy, dx // sx
                        bits[row, col] |= _DOTS[dy % sy][dx % sx] if braille else 1
                        owner[row, col] = line.key
        label_rows = {py(v) // sy: label for v, label in zip(y_ticks, labels, strict=True)}
        for row in range(rows):
            label = label_rows.get(row)
            text = Text((label or "").rjust(margin - 1) + " "
                        + (glyph["tick"] if label is not None else glyph["axis"]))
            for col in range(columns):
                if not bits[row, col]:
                    text.append(" ")
                    continue
                n = int(owner[row, col])
                char = chr(0x2800 + int(bits[row, col])) if braille else markers[n]
                text.append(char, style=COLOURS[n % len(COLOURS)] if colour else None)
            out.append(text if colour else text.plain)
    # The x axis: a rule with ticks, and their labels where they do not overlap.
    rule = [glyph["rule"]] * columns
    label_line = [" "] * width
    taken = -1
    for x, label in chart.x_ticks(max(2, columns // 12)):
        col = px(x) // sx
        if not 0 <= col < columns:
            continue
        rule[col] = glyph["xtick"]
        start = min(max(margin + 1 + col - len(label) // 2, 0), width - len(label))
        if start > taken and start >= 0:
            label_line[start:start + len(label)] = list(label)
            taken = start + len(label)
    out.append(" " * (margin - 1) + " " + glyph["corner"] + "".join(rule))
    out.append("".join(label_line).rstrip())
    for entries_line in legend:
        text = Text()
        for k, (key, name, n) in enumerate(entries_line):
            if k:
                text.append("   ")
            text.append(key, style=COLOURS[n % len(COLOURS)] if colour else None)
            text.append(" " + name)
        out.append(text if colour else text.plain)
    # Where the least of each panel does not leave room (a few lines, a long caption),
    # the caption is cut short, then the notes: the chart keeps to its height.
    excess = len(out) + len(below) + len(caption) - height
    if excess > 0 and len(caption) > 1:
        cut = min(excess, len(caption) - 1)
        caption = caption[:len(caption) - cut]
        caption[-1] = _cut(caption[-1], width - 3) + "..."
        excess -= cut
    if excess > 0:
        below = below[:max(0, len(below) - excess)]
    for words in below:
        out.append(Text(words, style="dim") if colour else words)
    for words in caption:
        out.append(Text(words, style="italic") if colour else words)
    return out


def _wrap(text: str, width: int) -> list[str]:
    return textwrap.wrap(text, width, break_long_words=True, break_on_hyphens=False) or [""]


def _wrap_entries(entries: list[tuple[str, str, int]], width: int
                  ) -> list[list[tuple[str, str, int]]]:
    """Legend entries in lines of at most `width` cells (a long name alone, cut)."""
    from rich.cells import cell_len

    lines: list[list[tuple[str, str, int]]] = []
    used = 0
    for key, name, n in entries:
        size = cell_len(key) + 1 + cell_len(name)
        if size > width:
            name = _cut(name, width - cell_len(key) - 4) + "..."
            size = width
        if lines and used + 3 + size <= width:
            lines[-1].append((key, name, n))
            used += 3 + size
        else:
            lines.append([(key, name, n)])
            used = size
    return lines


def _cut(text: str, cells: int) -> str:
    from rich.cells import cell_len

    while text and cell_len(text) > cells:
        text = text[:-1]
    return text


def _segment(x0: int, y0: int, x1: int, y1: int) -> list[tuple[int, int]]:
    """The dots of a straight segment (Bresenham), both ends included."""
    points = []
    dx, dy = abs(x1 - x0), -abs(y1 - y0)
    sx, sy = (1 if x0 < x1 else -1), (1 if y0 < y1 else -1)
    error = dx + dy
    while True:
        points.append((x0, y0))
        if x0 == x1 and y0 == y1:
            return points
        twice = 2 * error
        if twice >= dy:
            error += dy
            x0 += sx
        if twice <= dx:
            error += dx
            y0 += sy
