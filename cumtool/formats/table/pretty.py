"""The terminal view: a rich table of the result that fits the terminal, however big.

Rows: of a long result the first and last half of `View.rows` rows, with a `… N rows …`
line between them; every row is numbered (a table's by its 1-based input row, an array's
by its 0-based index, like the array's column labels and slice labels).

Columns: whole columns only, as many as the terminal's width holds; a number or a name
is never cut and a column never squeezed, and a line under the table counts (and names
the first of) the columns left out. A single column wider than the terminal still shows,
and the terminal wraps it. Which columns: the --by keys (always), then the scanned columns
and their results, then the others, each group from the left, shown in input order. The
results are what the run is for: a result 25th of 30 columns would otherwise never show
on 80 columns, while input order on screen keeps the table recognisable as the file (a
date or key column stays left of the values). Not on a terminal (a pipe, `-o FILE`)
there is no width to fit: up to `MAX_COLUMNS` columns, each as wide as it needs.

An N-d array shows as labelled 2-D slices (`[i, j, :, :]`), the first and last
`EDGE_SLICES`, with the same rows and columns each. Only what can show is ever kept, so a
huge result costs no memory.

Cells: a float64 column with the decimals its values have (money: 26293.27, each value
to the same places), up to `View.precision` places; else floats at `View.precision`
significant digits (the table only: every other format keeps every digit); a missing cell
is a dim `null`, NaN `nan`. Columns are labelled as they were read (an unscanned column
of integers from a CSV is int64: the view is a typed output). Names, cells and the
caption are plain text, never rich markup, with every control character shown escaped
(`\\x1b`), so a file cannot drive the terminal. The text is written in the output's
encoding, with a replacement character for what it cannot hold (and ASCII borders and
`...` if it is not UTF-8). Not on a terminal there are no colour codes.

This module decides what is kept of a result and prints it; layout.py lays out one table
(cell texts, which columns fit, the rendered frame).
"""

from __future__ import annotations

import collections
import itertools
import math
from collections.abc import Sequence
from typing import IO, TYPE_CHECKING, Any, cast

import numpy as np
import pyarrow as pa
from rich.cells import cell_len
from rich.console import Console
from rich.segment import Segments
from rich.text import Text

from cumtool.formats.layout import (
    MAX_COLUMNS,
    PAD,
    ROW_HEADER,
    Cells,
    Frame,
    decimal_places,
    fit,
    join_lines,
    keep,
    plural,
    split_rows,
)
from cumtool.view import View

if TYPE_CHECKING:
    from cumtool.columns import Selection

EDGE_SLICES = 2


def terminal_console(stream: IO[bytes], encoding: str) -> Console:
    """A console for standard output on a terminal: its width, colours, and `encoding`."""
    return _PipeConsole(file=cast(IO[str], _TextAdapter(stream, encoding, tty=True)),
                        force_terminal=True, highlight=False)


def _is_numeric(dtype: pa.DataType) -> bool:
    return bool(pa.types.is_integer(dtype) or pa.types.is_floating(dtype)
                or pa.types.is_decimal(dtype))


def _dtype_label(dtype: pa.DataType) -> str:
    if pa.types.is_dictionary(dtype):  # dictionary-encoded: what its values are
        return _dtype_label(dtype.value_type)
    if pa.types.is_large_string(dtype) or pa.types.is_string(dtype):
        return "str"
    return {"halffloat": "float16", "float": "float32", "double": "float64"}.get(str(dtype),
                                                                                str(dtype))


def _numpy_cells(values: np.ndarray) -> list[object]:
    """Python values, except floats stay numpy scalars: a float32 is then shown at its
    own precision (0.1), not that of the float64 it would become (0.10000000149011612)."""
    if values.dtype.kind in "fc":
        return list(values)
    return list(values.tolist())


def _arrow_cells(column: pa.Array) -> list[object]:
    if pa.types.is_floating(column.type):
        from cumtool.columnar import column_to_numpy  # not to_numpy(): it imports pandas

        values, valid = column_to_numpy(column)
        return [value if valid is None or valid[i] else None
                for i, value in enumerate(_numpy_cells(values))]
    if pa.types.is_string(column.type) or pa.types.is_large_string(column.type):
        # Text from a damaged file need not be UTF-8: show it, never fail on it.
        raw = column.cast(pa.large_binary()).to_pylist()
        return [None if cell is None else cell.decode("utf-8", errors="replace")
                for cell in raw]
    return list(column.to_pylist())


class PrettySink:
    """Collects what can show of a result and prints it as rich tables on close."""

    def __init__(self, stream: IO[bytes], view: View, console: Console | None = None,
                 schema: pa.Schema | None = None, encoding: str = "utf-8",
                 keys: frozenset[str] = frozenset()) -> None:
        self._stream = stream
        self._view = view
        self._keys = keys  # --by columns: always in view
        self._encoding = encoding if console is None else console.encoding
        self._console = console
        self._budget = None if console is None else console.width
        self._cells = Cells(view.precision, self._encoding)
        self._head_limit, self._tail_limit = split_rows(view.rows)
        self._schema: pa.Schema | None = None
        self._order: list[int] = []  # columns that may show, results first
        self._kept: list[int] = []
        if schema is not None:
            self._set_schema(schema)
        self._head: list[pa.RecordBatch] = []
        self._head_rows = 0
        self._tail: collections.deque[pa.RecordBatch] = collections.deque()
        self._tail_rows = 0
        self._rows = 0
        self._array: _ArrayView | None = None

    def _set_schema(self, schema: pa.Schema) -> None:
        self._schema = schema
        keys = [i for i, name in enumerate(schema.names) if name in self._keys]
        first = [i for i, name in enumerate(schema.names)
                 if name in self._view.first and name not in self._keys]
        rest = [i for i, name in enumerate(schema.names)
                if name not in self._view.first and name not in self._keys]
        widths = {i: self._cells.header_width(f.name, _dtype_label(f.type))
                  for i, f in enumerate(schema)}
        # Each column takes at least its header's width: the columns that could show.
        self._order = fit(widths, keys + first + rest, self._budget,
                          1 + cell_len(ROW_HEADER) + PAD)
        self._kept = sorted(self._order)  # the same, in input order

    # Tables ------------------------------------------------------------------
    def write(self, batch: pa.RecordBatch) -> None:
        if self._schema is None:
            self._set_schema(batch.schema)
        self._rows += batch.num_rows
        batch = batch.select(self._kept)
        if self._head_rows < self._head_limit:
            take = batch.slice(0, int(min(self._head_limit - self._head_rows, batch.num_rows)))
            self._head.append(take)
            self._head_rows += take.num_rows
            batch = batch.slice(take.num_rows)
        if batch.num_rows and self._tail_limit:
            self._tail.append(batch.slice(max(0, batch.num_rows - self._tail_limit)))
            self._tail_rows += self._tail[-1].num_rows
            while self._tail_rows - self._tail[0].num_rows >= self._tail_limit:
                self._tail_rows -= self._tail.popleft().num_rows

    # Arrays ------------------------------------------------------------------
    def write_array(self, shape: tuple[int, ...], values: np.ndarray,
                    indices: np.ndarray | None) -> None:
        if self._array is None:
            self._array = _ArrayView(shape, values.dtype, indices is not None,
                                     self._view.rows, self._budget)
        self._array.add(values, indices)

    def close(self) -> None:
        if self._array is not None:
            frames, names, size = self._array.frames(self._cells)
            order = self._array.order()
        else:
            frames, names, size = self._table_frame()
            order = self._order
        console = self._console or _PipeConsole(
            file=cast(IO[str], _TextAdapter(self._stream, self._encoding)),
            color_system=None, force_terminal=False, highlight=False, soft_wrap=False)
        # Widths over every frame, so that the slices of an array show the same columns.
        widths: dict[int, int] = dict.fromkeys(order, 0)
        numbers = 1
        for frame in frames:
            numbers = max(numbers, frame.number_width())
            for unit, width in frame.unit_widths().items():
                widths[unit] = max(widths[unit], width)
        shown = set(fit(widths, order, self._budget, 1 + numbers + PAD))
        for frame in frames:
            if frame.before is not None:
                console.print(Text(frame.before), soft_wrap=True)
            lines = frame.render(console, shown)
            console.print(Segments(join_lines(lines)), soft_wrap=True, end="")
        hidden = len(names) - len(shown)
        if hidden:
            first = itertools.islice((n for i, n in enumerate(names) if i not in shown), 5)
            listed = ", ".join(self._cells.text(n) for n in first)
            more = f", {self._cells.ellipsis}" if hidden > 5 else ""
            count = plural(hidden, "more column")
            console.print(Text(f"{self._cells.ellipsis} {count} not shown: {listed}{more}",
                               style="dim"), soft_wrap=True)
        # A line of text (the caption) is never broken by us: a terminal narrower than it
        # wraps it on screen, and a copied path stays whole.
        console.print(Text(self._cells.text(self._view.caption(size)), style="italic"),
                      soft_wrap=True)

    def _table_frame(self) -> tuple[list[Frame], list[str], str]:
        schema = self._schema if self._schema is not None else pa.schema([])
        frame = Frame(self._cells)
        for position in self._kept:
            field = schema.field(position)
            frame.column(field.name, _dtype_label(field.type), _is_numeric(field.type),
                         position)
        tail = pa.Table.from_batches(list(self._tail)) if self._tail else None
        shown_tail = 0 if tail is None else min(self._tail_limit, tail.num_rows)
        tail_batches = [] if tail is None else tail.slice(tail.num_rows - shown_tail).to_batches()
        places = self._places([*self._head, *tail_batches])
        for batch in self._head:
            self._add_rows(frame, batch, len(frame.rows), places)
        frame.gap(self._rows - self._head_rows - shown_tail)
        first = self._rows - shown_tail
        for batch in tail_batches:
            self._add_rows(frame, batch, first, places)
            first += batch.num_rows
        size = f"{plural(self._rows, 'row')} x {plural(len(schema), 'column')}"
        return [frame], schema.names, size

    def _add_rows(self, frame: Frame, batch: pa.RecordBatch, first: int,
                  places: list[int | None]) -> None:
        """`batch`'s rows, numbered from input row `first` (0-based) + 1; floats of a
        column with `places` to that many decimals."""
        columns = [_arrow_cells(column) for column in batch.columns]
        cells = self._cells
        for n, row in enumerate(zip(*columns, strict=True)):
            frame.rows.append((str(first + n + 1), [
                cells.cell(v) if p is None or not isinstance(v, np.floating | float)
                else cells.fixed(v, p) for v, p in zip(row, places, strict=True)]))

    def _places(self, batches: list[pa.RecordBatch]) -> list[int | None]:
        """Each kept column's decimals: for floats, the fewest places (at least one, at
        most the precision) that every shown value has, as money has two; else None."""
        if not batches:
            return []
        out: list[int | None] = []
        for j, field in enumerate(batches[0].schema):
            if not pa.types.is_floating(field.type):
                out.append(None)
                continue
            from cumtool.columnar import column_to_numpy

            parts = []
            for batch in batches:
                values, valid = column_to_numpy(batch.column(j))
                parts.append(values if valid is None else values[valid])
            out.append(decimal_places(np.concatenate(parts), self._view.precision))
        return out


class _ArrayView:
    """What can show of an N-d array, collected block by block along axis 0.

    The array is a sequence of 2-D pages: a 0-d or 1-D array is one page of one column, a
    2-D array one page, and an N-d array one page per index of its leading N-2 axes. Only
    the kept pages, cropped to the kept rows and columns, are ever stored. With indices,
    a column is a pair: its values and their positions."""

    def __init__(self, shape: tuple[int, ...], dtype: np.dtype, with_indices: bool,
                 rows: int | None, budget: int | None) -> None:
        self.shape = shape
        self.dtype = dtype
        self.with_indices = with_indices
        ndim = len(shape)
        if ndim <= 2:
            page_rows = 1 if ndim == 0 else shape[0]
            columns = shape[1] if ndim == 2 else 1
            self.leading: tuple[int, ...] = ()
            self.pages_per_row = 0  # axis 0 runs down the page's rows
        else:
            page_rows, columns = shape[-2], shape[-1]
            self.leading = shape[:-2]
            self.pages_per_row = math.prod(shape[1:-2])
        self.page_rows = page_rows
        self.page_columns = columns
        head, tail = split_rows(rows)
        self.row_keep = keep(page_rows, head, tail)
        self.pages_total = math.prod(self.leading) if ndim > 2 else 1
        self.page_keep = keep(self.pages_total, EDGE_SLICES, EDGE_SLICES)
        # Each column takes at least its header's width: those that could show.
        # (Columns are numbered, so the narrowest come first: the cut is by count.)
        least = [self._least_width(c) for c in range(min(columns, MAX_COLUMNS))]
        self.column_keep = fit(dict(enumerate(least)), range(len(least)), budget,
                               1 + cell_len(ROW_HEADER) + PAD)
        self.seen = 0  # positions along axis 0 received so far
        # page number -> row position -> (values, indices) of the kept columns
        self.rows: dict[int, dict[int, tuple[np.ndarray, np.ndarray | None]]] = {}

    def _least_width(self, column: int) -> int:
        width = max(len(str(column)), len(str(self.dtype)))
        if self.with_indices:
            width += max(len(f"{column}_index"), len("int64")) + PAD
        return width

    def order(self) -> list[int]:
        return list(self.column_keep)

    def add(self, values: np.ndarray, indices: np.ndarray | None) -> None:
        count = values.shape[0] if values.ndim else 1
        if len(self.shape) <= 2:
            flat = values.reshape(count, self.page_columns)
            flat_indices = None if indices is None else indices.reshape(flat.shape)
            self._keep_rows(0, self.seen, flat, flat_indices)
        else:
            pages = values.reshape(count * self.pages_per_row, self.page_rows,
                                   self.page_columns)
            page_indices = None if indices is None else indices.reshape(pages.shape)
            first = self.seen * self.pages_per_row
            for page in self.page_keep:
                if first <= page < first + pages.shape[0]:
                    local = page - first
                    self._keep_rows(page, 0, pages[local],
                                    None if page_indices is None else page_indices[local])
        self.seen += count

    def _keep_rows(self, page: int, start: int, block: np.ndarray,
                   indices: np.ndarray | None) -> None:
        kept = self.rows.setdefault(page, {})
        for row in self.row_keep:
            if start <= row < start + block.shape[0]:
                local = row - start
                kept[row] = (
                    block[local, self.column_keep].copy(),
                    None if indices is None else indices[local, self.column_keep].copy(),
                )

    def frames(self, cells: Cells) -> tuple[list[Frame], Sequence[str], str]:
        frames = []
        for number, page in enumerate(self.page_keep):
            title = before = None
            if len(self.shape) > 2:
                label = ", ".join(str(int(i)) for i in np.unravel_index(page, self.leading))
                title = f"[{label}, :, :]"
            if number == EDGE_SLICES and self.pages_total > len(self.page_keep):
                hidden = self.pages_total - len(self.page_keep)
                before = f"{cells.ellipsis} {hidden} more slices {cells.ellipsis}"
            frames.append(self._frame(cells, self.rows.get(page, {}), title, before))
        return frames, _Numbers(self.page_columns), f"shape {self.shape}"

    def _frame(self, cells: Cells, rows: dict[int, tuple[np.ndarray, np.ndarray | None]],
               title: str | None, before: str | None) -> Frame:
        frame = Frame(cells, title, before)
        for column in self.column_keep:
            frame.column(str(column), str(self.dtype), True, column)
            if self.with_indices:
                frame.column(f"{column}_index", "int64", True, column)
        for number, row in enumerate(self.row_keep):
            if number and row != self.row_keep[number - 1] + 1:
                frame.gap(row - self.row_keep[number - 1] - 1)
            if row not in rows:
                continue
            values, indices = rows[row]
            row_cells = []
            for column, value in enumerate(_numpy_cells(values)):
                row_cells.append(cells.cell(value))
                if indices is not None:
                    row_cells.append(Text(str(indices[column])))
            frame.rows.append((str(row), row_cells))
        return frame


class _Numbers(Sequence[str]):
    """An array's column names, 0 to count - 1, made only when asked for."""

    def __init__(self, count: int) -> None:
        self._count = count

    def __len__(self) -> int:
        return self._count

    def __getitem__(self, index: Any) -> Any:
        return str(range(self._count)[index]) if isinstance(index, int) else [
            str(i) for i in range(self._count)[index]]


class _PipeConsole(Console):
    """rich answers a closed pipe (or terminal) with a silent exit status 1; cumtool's
    own handler gives the 141 of every other output format."""

    def on_broken_pipe(self) -> None:
        raise BrokenPipeError


class _TextAdapter:
    """rich writes text; the sink's stream takes bytes, in `encoding`, with a replacement
    for what the encoding cannot hold (a CJK name on a Latin-1 terminal)."""

    def __init__(self, stream: IO[bytes], encoding: str, tty: bool = False) -> None:
        self._stream = stream
        self.encoding = encoding
        self._tty = tty

    def write(self, text: str) -> int:
        self._stream.write(text.encode(self.encoding, errors="replace"))
        return len(text)

    def flush(self) -> None:
        self._stream.flush()

    def isatty(self) -> bool:
        return self._tty


class InMemory:
    """A sink that holds only memory until `close`: abort drops it."""

    def __init__(self, sink: PrettySink) -> None:
        self._sink: PrettySink | None = sink

    def write(self, batch: pa.RecordBatch) -> None:
        assert self._sink is not None
        self._sink.write(batch)

    def close(self) -> None:
        assert self._sink is not None
        self._sink.close()

    def abort(self) -> None:
        self._sink = None


class ArrayToPretty:
    """Array blocks for the terminal view, which holds only memory until `close`."""

    def __init__(self, sink: PrettySink, shape: tuple[int, ...]) -> None:
        self._sink: PrettySink | None = sink
        self._shape = shape

    def write(self, values: np.ndarray, indices: np.ndarray | None) -> None:
        assert self._sink is not None
        self._sink.write_array(self._shape, values, indices)

    def close(self) -> None:
        assert self._sink is not None
        self._sink.close()

    def abort(self) -> None:
        self._sink = None


def key_names(by: Sequence[Selection], schema: pa.Schema) -> frozenset[str]:
    """The --by columns, which the terminal table keeps in view whatever its width."""
    from cumtool.columns import resolve
    from cumtool.errors import CumtoolError

    keys: list[str] = []
    for selection in by:
        try:
            keys.extend(schema.names[i] for i in resolve(selection, schema.names, "output"))
        except CumtoolError:  # the plan has said what is wrong with it already
            continue
    return frozenset(keys)
