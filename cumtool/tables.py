"""The scan plan of a table: which columns are scanned, how, and what the output holds.

`TablePlan.apply` turns each input batch (in scan order) into an output batch, carrying
running state per column (and per group with `--by`/`--reset`). Decimal columns are
scanned exactly as scaled int64 integers and written back as decimals.
"""

from __future__ import annotations

import collections
import dataclasses
import threading
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa

from cumtool import distinct, kernels
from cumtool.choices import AXIS_NAMES
from cumtool.columnar import (
    arrow_column,
    column_to_numpy,
    decimal_to_float,
    empty_text_missing,
    int64_to_decimal,
    json_values_text,
    numpy_dtype,
)
from cumtool.columns import Selection, listing, resolve, select
from cumtool.errors import DataError, ScanOverflowError, UsageError, option
from cumtool.formats import CULPRIT, HOLDS, MOSTLY, ColumnHint, holds_json_text
from cumtool.kernels import overflow_hint
from cumtool.ops import INDEXED, REGISTRY


def table_axis(text: str) -> int:
    key = str(text).strip().lower()
    if key in AXIS_NAMES:
        return AXIS_NAMES[key]
    try:
        number = int(key)
    except ValueError:
        number = None
    if number is not None and -2 <= number <= 1:
        return number % 2
    raise UsageError(
        f"{option('axis')} {text!r} is not valid for a table; use rows (index, 0) or "
        "columns (1, -1)"
    )


def _pandas_index(schema: pa.Schema) -> set[str]:
    """The columns pandas stored its index in (Parquet written by DataFrame.to_parquet)."""
    import json

    text = (schema.metadata or {}).get(b"pandas")
    if not text:
        return set()
    try:
        names = json.loads(text).get("index_columns", [])
    except (ValueError, AttributeError):
        return set()
    return {name for name in names if isinstance(name, str)}


def is_temporal(arrow_type: pa.DataType) -> bool:
    """Dates and timestamps: cummax and cummin give the latest (earliest) so far."""
    return bool(pa.types.is_date(arrow_type) or pa.types.is_timestamp(arrow_type))


def _storage(arrow_type: pa.DataType) -> pa.DataType:
    return pa.int32() if pa.types.is_date32(arrow_type) else pa.int64()


def stored_hint(arrow_type: pa.DataType, holds: bytes | None = None,
                culprit: bytes | None = None, mostly: bool = False) -> ColumnHint:
    """What a typed column (Parquet, Arrow) is: numbers are scanned by default; flags,
    dates and text are not. `holds`: a reader's words for what text stands for
    (formats.HOLDS); `culprit`: where its first value that is not a number stands
    (formats.CULPRIT); `mostly`: its first rows hold numbers (formats.MOSTLY)."""
    if culprit is not None and holds is None and pa.types.is_string(arrow_type):
        return ColumnHint(None, False, str(arrow_type), culprit=culprit.decode(),
                          mostly_numbers=mostly)
    if holds is not None:
        return ColumnHint(None, False, holds.decode())
    if pa.types.is_boolean(arrow_type):
        return ColumnHint(None, False, "bool")
    if is_temporal(arrow_type):
        return ColumnHint(None, False, "date")
    if numpy_dtype(arrow_type) is not None:
        return ColumnHint(None, True, "number")
    return ColumnHint(None, False, str(arrow_type))


@dataclass(frozen=True)
class TableOptions:
    """The table-only options of a run."""

    columns: tuple[Selection, ...] = ()  # -c, each given; a negated one excludes
    exclude: tuple[Selection, ...] = ()
    by: tuple[Selection, ...] = ()
    reset: Selection | None = None
    keep: bool = False
    reverse: bool = False  # the engine replays rows backwards; across columns, done here
    only_scanned: bool = False  # write the scanned columns (and their results) only
    typed_output: bool = False  # Parquet, .npy: numbers read as text are written as numbers
    # Cell texts that mean a missing cell in a text column a distinct-values op compares
    # (a CSV's --na list; the reader already made them missing in number columns).
    text_na: frozenset[str] = frozenset()
    # A plan of some of a table's columns (the wide path's groups): the first one's place
    # in the table, and the names the whole header repeats, for messages to number.
    first_column: int = 0
    repeated: frozenset[str] | None = None
    # --period (cumtool.periods.Period) and --time COL: each row's calendar period of
    # COL is a key of its group, as a --by column is.
    period: Any = None
    time: Selection | None = None
    share: bool = False  # --share: results are running values over their group's final
    times: Selection | None = None  # ewma --times COL: the weights decay with its times
    several: str | None = None  # several ops ("cumsum,cummax"), which add results as --keep


def _unscannable(names: Sequence[str], hints: Sequence[ColumnHint],
                 stored: Sequence[pa.DataType], op: str, compares: bool, what: str,
                 repeated: Collection[str]) -> Callable[[int, list[str]], str]:
    """The message for a -c column the op cannot scan, given the columns it can."""
    def message(position: int, numeric: list[str]) -> str:
        name = names[position]
        label = f"{name!r} (column {position + 1})" if name in repeated else repr(name)
        if compares:
            held = hints[position].parse_as or stored[position]
            return (f"{what}: column {label} holds {held}, which {op} cannot compare; "
                    f"columns it can scan: {listing(numeric)}")
        kind = hints[position].kind
        holds = _BIG_NUMBERS.get(kind, kind)
        culprit = hints[position].culprit
        holds = f": {culprit}" if culprit else f" ({holds})"
        if op in REGISTRY and not REGISTRY[op].dates:  # dates are cummax's and cummin's
            dated = {names[i] for i in range(len(names))
                     if is_temporal(hints[i].parse_as or stored[i])}
            numeric = [n for n in numeric if n not in dated]
            return (f"{what}: column {label} is not numeric{holds}; numeric columns: "
                    f"{listing(numeric)}")
        return (f"{what}: column {label} is not numeric nor a date (YYYY-MM-DD){holds}; "
                f"columns {op} can scan: {listing(numeric)}")

    return message


# Numbers read as their text, by default (formats.HOLDS), and how to scan them.
_BIG_NUMBERS = {
    "bigint": f"integers beyond int64; pass {option('dtype', 'float64')} to scan them as "
              "floats",
    "bigfloat": f"integers beyond 2**53 among floats, which float64 does not hold exactly; "
                f"pass {option('dtype', 'float64')} to scan them as the nearest floats",
}


# What -c scans that no default does (tables.md): flags, codes and, for the ops that
# compare, dates and times.
_NAMED_ONLY = {"bool": "booleans", "code": "codes with leading zeros", "date": "dates"}
_DATES_TAKE = ("cummax", "cummin")


def _nothing_to_scan_hint(names: Sequence[str], hints: Sequence[ColumnHint], op: str = "",
                          compares: bool = False) -> Callable[[], str]:
    """Where no column is left to scan: how to scan one of integers beyond int64 (an id
    by default, but the user may mean a count; the -c error says the same), one that
    looks numeric but was left out (what notes.left_out says where another is scanned),
    or one that only -c scans (booleans, codes, and dates where the op takes them)."""
    def named_only() -> str:
        for name, column in zip(names, hints, strict=True):
            if column.kind in _NAMED_ONLY and (
                    column.kind != "date" or compares or op in _DATES_TAKE):
                return (f"; column {name!r} holds {_NAMED_ONLY[column.kind]}, scanned only "
                        f"where named: {option('columns', name)}")
        return ""

    def hint() -> str:
        for name, column in zip(names, hints, strict=True):
            if column.kind in _BIG_NUMBERS:
                held, how = _BIG_NUMBERS[column.kind].split("; ", 1)
                return f"; column {name!r} holds {held}: {how}"
        for name, column in zip(names, hints, strict=True):
            # As the note says of such a column where another one is scanned.
            if column.comma_decimal:
                return (f"; column {name!r} holds numbers with a decimal comma "
                        f"({column.culprit}): pass --decimal-comma")
            if column.formatted:
                return (f"; column {name!r} holds numbers as a spreadsheet formats them "
                        f"({column.culprit}): export them as plain numbers (1234.5)")
            if column.mostly_numbers:
                how = ("its text cells missing (--na)" if column.kind == "text" else
                       "its values that are not numbers null")
                return (f"; column {name!r} holds numbers, but {column.culprit}: to scan it, "
                        f"name it with -c, {how}")
        return named_only()

    return hint


def _in_decimals(raw: str, scale: int) -> str:
    """An int64 overflow's message (kernels: `cumsum overflows int64 (adding N)`) of a
    decimal column, held as int64 counts of 10**-scale: in its decimals' words and value."""
    import decimal
    import re

    def value(found: re.Match[str]) -> str:
        number = decimal.Decimal(int(found.group(2))).scaleb(-scale)
        return f"({found.group(1)} {number:f})"

    raw = re.sub(r"\((adding|multiplying by) (-?[0-9]+)\)", value, raw)
    return raw.replace("overflows int64", "overflows the 64 bits a decimal is held in")


def scanned_columns(names: Sequence[str], hints: Sequence[ColumnHint],
                    stored: Sequence[pa.DataType], columns: Sequence[Selection],
                    exclude: Sequence[Selection], what: str, *, op: str = "",
                    compares: bool = False, structural: Collection[int] = (),
                    index: Collection[str] = (), repeated: Collection[str] | None = None
                    ) -> list[int]:
    """columns.select for a table: a column is scannable when its hint's type (or its
    stored type) is numeric or a date (`compares`: any type cumnunique compares)."""
    if repeated is None:
        repeated = {n for n, count in collections.Counter(names).items() if count > 1}

    def scannable(position: int) -> bool:
        held = hints[position].parse_as or stored[position]
        if compares:  # values compared as they are: numbers, and text, flags, dates
            return distinct.comparable(held)
        return numpy_dtype(held) is not None or is_temporal(held)

    return select(names, [hint.by_default for hint in hints], columns, exclude, what,
                  scannable=scannable,
                  unscannable=_unscannable(names, hints, stored, op, compares, what, repeated),
                  structural=structural, index=index,
                  none_hint=_nothing_to_scan_hint(names, hints, op, compares))


class TablePlan:
    """Which columns are scanned and how; turns each input batch into an output batch.

    Columns are known by position, so a header may repeat a name or leave one empty.
    `parse` maps the positions whose text the reader must convert (CSV) to their type; the
    reader appends the converted columns after the input's own, in that order, so the
    text stays as it was for --keep. `input_schema` is what batches hold, `schema` what
    the output holds."""

    def __init__(self, op: str, axis: str, dtype: np.dtype | None, schema: pa.Schema,
                 name: str, options: TableOptions, hints: list[ColumnHint] | None = None,
                 **scan: Any) -> None:
        self.op = op
        self.name = name
        self.overflow: str = scan.get("overflow", "error")
        self.axis = table_axis(axis)
        self.options = options
        self.reverse_total: int | None = None  # set for --reverse: rows in the whole input
        self.names = schema.names
        # Names repeated in the header: messages number them (those of the whole header,
        # for a plan of some of its columns).
        self.repeated = (set(options.repeated) if options.repeated is not None else
                         {n for n, count in collections.Counter(self.names).items() if count > 1})
        self.hints = hints or [stored_hint(f.type, (f.metadata or {}).get(HOLDS),
                                           (f.metadata or {}).get(CULPRIT),
                                           (f.metadata or {}).get(MOSTLY) == b"1")
                               for f in schema]
        # JSON Lines columns of mixed kinds, held as each value's JSON text.
        self.json_text = {i for i, f in enumerate(schema) if holds_json_text(f)}
        # cumnunique compares values: any column named with -c, down the rows (distinct.py)
        self.distinct = REGISTRY[op].distinct
        if self.distinct and self.axis == 1:
            raise UsageError(f"{op} counts distinct values down the rows; it cannot be used "
                             f"with {option('axis', 'columns')}")
        if self.axis == 1 and (options.by or options.reset):
            raise UsageError(f"{option('by')} and {option('reset')} work down the rows; they "
                             f"cannot be used with {option('axis', 'columns')}")
        if self.axis == 1 and options.period is not None:
            raise UsageError(f"{option('period')} makes groups of rows; it cannot be used "
                             f"with {option('axis', 'columns')}")
        if dtype is not None and dtype.kind == "c":
            raise UsageError(f"{option('dtype', str(dtype))} gives complex values, which a "
                             f"table cannot hold; use {option('dtype')} with a real type, or "
                             "an array")
        self.by = self._resolve(options.by)
        self.reset = self._reset_position(options.reset, schema)
        self.time = self._time_position(options, schema)
        self.times_at = self._times_position(options)
        self.selected = self._select(schema)
        if self.time is not None and self.time in self.selected:
            raise UsageError(f"column {self.label(self.time)} is the {option('time')} "
                             "column: it tells each row's period and is not scanned; "
                             f"leave it out of {option('columns')}")
        self.scanned = frozenset(self.selected)  # membership tests stay O(1) on wide files
        parsed = [*self.selected, *([self.reset] if self.reset is not None else [])]
        self.parse = {i: t for i in parsed if (t := self.hints[i].parse_as) is not None}
        self.shown: dict[int, int] = {}  # columns written from their converted copy
        self.empty_to_null: set[int] = set()
        if options.typed_output and hints is not None:
            self._type_passed_through()
        self.width = len(schema)
        self.data_at = {i: self.width + k for k, i in enumerate(self.parse)}
        self.shown = {i: self.data_at[i] for i in self.shown}
        # Text a reader need not hand over: replaced by results or converted copies, or
        # not written at all (keys for --by are grouped by their text).
        written = set(range(self.width)) if not options.only_scanned else set(self.selected)
        keys = {*self.by, *(i for i in (self.time, self.times_at) if i is not None)}
        self.text_unused = frozenset(
            i for i in range(self.width) if i not in keys and (
                i not in written or i in self.shown
                or (i in self.scanned and not options.keep
                    and not (self.distinct and i not in self.data_at))))
        # A text reader hands unused text over as a column of nulls (pa.null(): no memory).
        given = [f.with_type(pa.null()) if hints is not None and i in self.text_unused else f
                 for i, f in enumerate(schema)]
        # A reader's words for messages are not written out (formats.CULPRIT, MOSTLY)
        given = [f.with_metadata({k: v for k, v in f.metadata.items()
                                  if k not in (CULPRIT, MOSTLY)})
                 if f.metadata and CULPRIT in f.metadata else f for f in given]
        self.input_schema = pa.schema(
            [*given, *(pa.field(self.names[i], t) for i, t in self.parse.items())],
            metadata=schema.metadata)
        types = {i: self._data_field(i).type for i in self.selected}
        self.decimal_scale = {i: t.scale for i, t in types.items() if pa.types.is_decimal(t)}
        self.temporal = {i: t for i, t in types.items() if is_temporal(t)}
        self._check_temporal(dtype)
        self.specs = self._specs(dtype, scan)
        self.carries: dict[int, Any] = {
            i: distinct.DistinctCarry(1) if self.distinct else kernels.initial_carry(s)
            for i, s in self.specs.items()}
        self.timed = {i for i, s in self.specs.items() if _timed(s)}
        if self.timed:
            from cumtool.ops.ewma import TimedCarry

            if self.times_at is None:
                raise UsageError(f"{option('times')} needs a table read whole, not a file "
                                 "read column group by column group; select fewer columns "
                                 "first (e.g. with xsv select or cut)")
            if scan.get("exclusive"):
                raise UsageError(f"{option('times')} with {option('exclusive')} is not "
                                 "supported: each mean is that of the rows up to its own")
            self.carries.update({i: TimedCarry(1) for i in self.timed})
        self.batch_times: np.ndarray | None = None
        self.group_keys: Any = None
        self.group_carries: dict[int, Any] = {}
        if self.by or self.reset is not None or self.time is not None:
            from cumtool import grouped, groups  # loaded only for grouped scans

            derived = self._period_key if self.time is not None else None
            self.group_keys = (groups.GroupKeys(self.by, empty_is_missing=hints is not None,
                                                derived=derived, json_text=self.json_text)
                               if self.by or derived is not None else None)
            self.group_carries = {
                i: distinct.DistinctCarry() if self.distinct else grouped.GroupCarry(s)
                for i, s in self.specs.items()}
            if self.timed:
                from cumtool.ops.ewma import TimedCarry

                self.group_carries.update({i: TimedCarry() for i in self.timed})
        self.pending_resets = np.zeros(0, dtype=bool)
        # --share: the first pass keeps each group's last running value per column
        # (`finals`, tracking); the second divides by those (`finals` given, not tracking).
        self.finals: dict[int, np.ndarray] = {}
        self.tracking = False
        self.rows_done = 0
        self.rows_before = 0  # rows of earlier runs (--state): positions count on from them
        # The file and row within it of an input row (from 1), for messages (several
        # inputs), and the line of the file it starts on where the reader knows it (CSV).
        self.where: Callable[[int], tuple[str, int] | tuple[str, int, int]] | None = None
        self.schema = pa.schema(self._fields(), metadata=schema.metadata)

    # Which columns ---------------------------------------------------------------------

    def _resolve(self, selections: tuple[Selection, ...]) -> list[int]:
        chosen: list[int] = []
        for selection in selections:
            chosen.extend(resolve(selection, self.names, self.name))
        return list(dict.fromkeys(chosen))

    def _type_passed_through(self) -> None:
        """Parquet and .npy hold types: a column of numbers, flags or dates read from text
        is written as such, scanned or not; codes and text stay text (an empty cell null)."""
        for i, hint in enumerate(self.hints):
            typed = {"int": pa.int64(), "float": hint.parse_as, "bool": pa.bool_(),
                     "date": pa.date32()}.get(hint.kind)
            if typed is None:
                self.empty_to_null.add(i)
                continue
            if i not in self.parse:
                self.parse[i] = typed
            if self.parse[i] == typed:
                self.shown[i] = i

    def _data_field(self, position: int) -> pa.Field:
        """The field a column is scanned from: its converted copy, if it was parsed."""
        return self.input_schema.field(self.data_at.get(position, position))

    def label(self, position: int) -> str:
        """A column as messages name it (with its position when its name repeats)."""
        name = self.names[position]
        if name in self.repeated:
            return f"{name!r} (column {self.options.first_column + position + 1})"
        return repr(name)

    def _reset_position(self, selection: Selection | None, schema: pa.Schema) -> int | None:
        if selection is None:
            return None
        positions = resolve(selection, self.names, self.name)
        if len(positions) != 1:
            raise UsageError(f"{option('reset')} takes one column, not {len(positions)} "
                             f"({selection})")
        position = positions[0]
        arrow_type = self.hints[position].parse_as or schema.field(position).type
        if not (pa.types.is_boolean(arrow_type) or numpy_dtype(arrow_type) is not None):
            raise DataError(f"{self.name}: {option('reset')} column {self.label(position)} must be "
                            f"boolean or numeric, not {self.hints[position].kind}")
        return position

    def _time_position(self, options: TableOptions, schema: pa.Schema) -> int | None:
        """--time's column: one, of dates, timestamps or text (checked per cell)."""
        if options.time is None or options.period is None:
            return None
        from cumtool import periods

        positions = resolve(options.time, self.names, self.name)
        if len(positions) != 1:
            raise UsageError(f"{option('time')} takes one column, not {len(positions)} "
                             f"({options.time})")
        position = positions[0]
        stored = schema.field(position).type
        if self.hints[position].kind == "empty" or pa.types.is_null(stored):
            raise DataError(f"{self.name}: {option('time')} column {self.label(position)} "
                            "is empty: it holds no dates to tell the periods by")
        kind = self.hints[position].kind
        if kind in ("int", "float", "bigint", "bool") or not periods.time_type_ok(stored):
            held = kind if kind in ("int", "float", "bigint", "bool") else stored
            raise DataError(f"{self.name}: {option('time')} column {self.label(position)} "
                            f"holds {held}, not dates or times (a date or timestamp "
                            "column, or ISO text such as 2024-03-01)")
        return position

    def _times_position(self, options: TableOptions) -> int | None:
        """ewma --times's column."""
        if options.times is None:
            return None
        positions = resolve(options.times, self.names, self.name)
        if len(positions) != 1:
            raise UsageError(f"{option('times')} takes one column, not {len(positions)} "
                             f"({options.times})")
        if self.axis != 0 or options.reverse:
            raise UsageError(f"{option('times')} decays the weights down the rows in time "
                             f"order; it cannot be used with "
                             + (option("reverse") if options.reverse
                                else option("axis", "columns")))
        return positions[0]

    def _bad_time(self, position: int, what: str) -> Callable[..., DataError]:
        def bad(row: int, cell: str, why: str | None = None) -> DataError:
            name, where = self._place(self._input_row(self.rows_done + row))
            return DataError(f"{name}: column {self.label(position)}, {where}: {cell!r} "
                             + (why or f"is not a date or time as {option(what)} reads "
                                       "them (ISO 8601: 2024-03-01, 2024-03-01T09:30, "
                                       "2024-03-01 09:30:00+02:00)"))
        return bad

    def _times(self, batch: pa.RecordBatch) -> np.ndarray:
        """ewma --times: each row's time in nanoseconds; a row without one is an error."""
        from cumtool import periods

        assert self.times_at is not None
        bad = self._bad_time(self.times_at, "times")
        values, missing = periods.instants(self._time_cells(batch, self.times_at),
                                           self.options.text_na, bad)
        if missing is not None:
            row = int(np.argmax(missing))
            name, where = self._place(self._input_row(self.rows_done + row))
            raise DataError(f"{name}: column {self.label(self.times_at)}, {where}: no time, "
                            f"and {option('times')} needs one on every row")
        return values

    def _period_key(self, batch: pa.RecordBatch) -> pa.Array:
        """The period of each row of a batch (cumtool.periods), a key of its group."""
        from cumtool import periods

        assert self.time is not None
        bad = self._bad_time(self.time, "time")
        return periods.key_column(self.options.period, self._time_cells(batch, self.time),
                                  self.options.text_na, bad)

    def _time_cells(self, batch: pa.RecordBatch, position: int) -> pa.Array:
        """A time column's cells; JSON text (a JSON Lines column of mixed kinds) as the
        strings it holds, the other values as their JSON, which is no time."""
        column = batch.column(position)
        return column if position not in self.json_text else json_values_text(column)

    def _select(self, schema: pa.Schema) -> list[int]:
        structural = {*self.by, *(i for i in (self.reset, self.time, self.times_at)
                                  if i is not None)}
        return scanned_columns(
            self.names, self.hints, [f.type for f in schema], self.options.columns,
            self.options.exclude, self.name, op=self.op, compares=self.distinct,
            structural=structural, index=_pandas_index(schema), repeated=self.repeated)

    def _check_temporal(self, dtype: np.dtype | None) -> None:
        for position in self.temporal:
            if not REGISTRY[self.op].dates and not self.distinct:
                dated = " and ".join(name for name, op in REGISTRY.items() if op.dates)
                raise UsageError(f"{self.name}: {self.op} is not defined for dates and "
                                 f"times (column {self.label(position)}); {dated} are")
            if dtype is not None or self.axis == 1:
                raise UsageError(f"{self.name}: column {self.label(position)} holds dates: "
                                 f"scan it down the rows, without {option('dtype')}")

    def _specs(self, dtype: np.dtype | None,
               scan: dict[str, Any]) -> dict[int, kernels.ScanSpec]:
        def source(position: int) -> np.dtype:
            if position in self.temporal:
                return np.dtype(np.int32 if pa.types.is_date32(self.temporal[position])
                                else np.int64)
            if position in self.decimal_scale and (
                    self.axis == 1 or dtype is not None
                    or REGISTRY[self.op].decimals == "float64"):
                return np.dtype(np.float64)  # decimals compute in float64 for these
            found = numpy_dtype(self._data_field(position).type)
            if found is None and self.distinct:
                return np.dtype(object)  # text, compared as written
            assert found is not None
            return found

        def spec_of(position: int) -> kernels.ScanSpec:
            what = f"column {self.label(position)}"
            held = source(position)
            if held.kind != "O":
                return kernels.make_spec(self.op, held, dtype, what=what, **scan)
            if dtype is not None:
                raise UsageError(f"{what} holds {self.hints[position].kind}, which {self.op} "
                                 f"compares as written: leave {option('dtype')} out")
            spec = kernels.make_spec(self.op, np.dtype(np.int64), what=what, **scan)
            return dataclasses.replace(spec, source_dtype=held, in_dtype=held)

        if self.axis == 0:
            return {i: spec_of(i) for i in self.selected}
        common = np.result_type(*(source(i) for i in self.selected))
        spec = kernels.make_spec(self.op, common, dtype, what="the selected columns", **scan)
        return {i: spec for i in self.selected}

    def _is_decimal_out(self, position: int) -> bool:
        return (position in self.decimal_scale and REGISTRY[self.op].decimals != "count"
                and self.specs[position].source_dtype.kind == "i")

    def result_fields(self, position: int, name: str) -> list[pa.Field]:
        """The output fields of a scanned column's result, named `name`."""
        spec = self.specs[position]
        out_type: pa.DataType
        if self.options.share:
            out_type = pa.float64()
        elif self._is_decimal_out(position):
            out_type = pa.decimal128(38, self.decimal_scale[position])
        elif position in self.temporal and not self.distinct:
            out_type = self.temporal[position]
        else:
            out_type = pa.from_numpy_dtype(spec.out_dtype)
        # How the input wrote a missing cell (JSON Lines: `null`, or an absent key) is
        # how its results write theirs: missing stays missing.
        written = (self.input_schema.field(position).metadata or {}).get(b"cumtool.json.missing")
        fields = [pa.field(name, out_type,
                           metadata={b"cumtool.json.missing": written} if written else None)]
        if spec.indices:
            fields.append(pa.field(f"{name}_index", pa.int64()))
        return fields

    def op_plans(self) -> list[TablePlan]:
        """The plans that carry state, one per op: this one (MultiPlan: one per op)."""
        return [self]

    def kept_fields(self) -> list[pa.Field]:
        """With --keep: the input's columns as they are written (all, or the scanned)."""
        return [self.input_schema.field(self.shown.get(i, i)) for i in range(self.width)
                if not self.options.only_scanned or i in self.scanned]

    def _fields(self) -> list[pa.Field]:
        if not self.options.keep:
            fields: list[pa.Field] = []
            taken = {name for j, name in enumerate(self.names)  # the columns written
                     if not self.options.only_scanned or j in self.scanned}
            for i in range(self.width):
                f = self.input_schema.field(self.shown.get(i, i))
                if i in self.scanned:
                    added = self.result_fields(i, f.name)
                    # The result takes its column's place; an index column is added.
                    clash = next((a.name for a in added[1:] if a.name in taken), None)
                    if clash is not None:
                        raise DataError(f"{self.name}: {option('indices')} would add "
                                        f"column {clash!r}, which the input already has")
                    fields.extend(added)
                elif not self.options.only_scanned:
                    fields.append(f)
            return fields
        fields = self.kept_fields()
        taken = set(self.names)
        for i in self.selected:
            added = self.result_fields(i, f"{self.names[i]}_{self.op}")
            clash = next((f.name for f in added if f.name in taken), None)
            if clash is not None:  # named by what adds it, which the user may not think of
                adder = (option("indices") if clash != added[0].name
                         else f"several ops ({self.options.several})" if self.options.several
                         else option("keep"))
                raise DataError(f"{self.name}: {adder} would add column {clash!r}, which "
                                "the input already has")
            fields.extend(added)
        return fields

    # Scanning --------------------------------------------------------------------------

    def apply(self, batch: pa.RecordBatch) -> pa.RecordBatch:
        try:
            results = self.results(batch)
        except ScanOverflowError as error:
            if error.before is not None:  # the rows before the overflow, as output
                rows, before = error.before
                error.before = self._output(batch.slice(0, rows), before)
            raise
        return self._output(batch, results)

    def _output(self, batch: pa.RecordBatch,
                results: dict[int, tuple[pa.Array, pa.Array | None]]) -> pa.RecordBatch:
        arrays: list[pa.Array] = []
        if self.options.keep:
            arrays = self.kept_arrays(batch)
            for i in self.selected:
                arrays.extend(a for a in results[i] if a is not None)
        else:
            for i in range(self.width):
                if i in results:
                    arrays.extend(a for a in results[i] if a is not None)
                elif not self.options.only_scanned:
                    arrays.append(self._passed_through(batch, i))
        return pa.RecordBatch.from_arrays(arrays, schema=self.schema)

    def kept_arrays(self, batch: pa.RecordBatch) -> list[pa.Array]:
        """The columns of kept_fields(), from a batch."""
        return [self._passed_through(batch, i) for i in range(self.width)
                if not self.options.only_scanned or i in self.scanned]

    def results(self, batch: pa.RecordBatch) -> dict[int, tuple[pa.Array, pa.Array | None]]:
        """Each scanned column's result (and index) for a batch, in scan order."""
        if self.axis == 0:
            runs = self._runs(batch)
            if self.timed:
                self.batch_times = self._times(batch)
            results = {}
            overflows = []
            for i, outcome in zip(self.selected, _each_column(
                    lambda i: self.scan_column(i, batch.column(self.data_at.get(i, i)), runs),
                    self.selected, batch.num_rows), strict=True):
                if isinstance(outcome, ScanOverflowError):
                    overflows.append(outcome)
                else:
                    results[i] = outcome
            if overflows:  # the first the scan meets, then the leftmost column
                first = min(overflows, key=self._scan_order)
                if not self.options.reverse and not self.options.share:
                    first.before = self._before_overflow(batch, first, results, runs)
                raise first
            if self.options.share:
                results = self._shares(results, runs, batch)
        else:
            results = self._scan_across(batch)
        self.rows_done += batch.num_rows
        return results

    def _before_overflow(self, batch: pa.RecordBatch, error: ScanOverflowError,
                         results: dict[int, tuple[pa.Array, pa.Array | None]],
                         runs: Any) -> Any:
        """The results of a batch's rows before the overflow `error` (with their count):
        the other columns' cut short, and each column that overflowed scanned again up
        to there, in its groups (a scan that overflows leaves its carry as it was). None
        where that fails: then only the batches before are written."""
        rows = error.batch_row
        if not rows:
            return None
        before = _first_rows(results, rows)
        try:
            for i in self.selected:
                if i not in results:
                    data = batch.column(self.data_at.get(i, i)).slice(0, rows)
                    before[i] = self.scan_column(i, data,
                                                 None if runs is None else runs.prefix(rows))
        except Exception:  # the overflow is the error to report
            return None
        return rows, before

    def _shares(self, results: dict[int, tuple[pa.Array, pa.Array | None]], runs: Any,
                batch: pa.RecordBatch) -> dict[int, tuple[pa.Array, pa.Array | None]]:
        """--share. The first pass (`tracking`) keeps each group's last running value in
        scan order; the second divides each running value by its group's, in float64.
        A missing result stays missing, and so does every share of a group whose final
        value is 0 (no share of nothing)."""
        from cumtool import periods

        ids = runs.ids if runs is not None else np.zeros(batch.num_rows, dtype=np.int64)
        count = self.group_keys.count if self.group_keys is not None else 1
        out = {}
        for i, (result, _) in results.items():
            if pa.types.is_decimal(result.type):
                result = decimal_to_float(result)
            values, valid = column_to_numpy(result)
            if self.tracking:
                present = valid
                if self.specs[i].skipna and self.specs[i].source_dtype.kind == "f":
                    data, _ = column_to_numpy(batch.column(self.data_at.get(i, i)))
                    present = periods.scanned_rows(valid, data)
                self.finals[i] = periods.track_finals(self.finals.get(i), count, ids,
                                                      values, present)
                out[i] = (result, None)
                continue
            finals = self.finals[i] = periods.grown(self.finals.get(i), count)
            share, missing = periods.shares(finals, ids, values, valid)
            out[i] = (arrow_column(share, missing), None)
        return out

    def _passed_through(self, batch: pa.RecordBatch, position: int) -> pa.Array:
        column = batch.column(self.shown.get(position, position))
        if position in self.empty_to_null:
            column = empty_text_missing(column)
        return column

    def _runs(self, batch: pa.RecordBatch) -> Any:
        if self.group_keys is None and self.reset is None:
            return None
        n = batch.num_rows
        group_ids = (self._group_ids(batch) if self.group_keys is not None
                     else np.zeros(n, dtype=np.int64))
        count = self.group_keys.count if self.group_keys is not None else 1
        resets = None
        if self.reset is not None:
            values, valid = column_to_numpy(batch.column(self.data_at.get(self.reset,
                                                                          self.reset)))
            resets = values != 0
            if valid is not None:
                resets &= valid
            if self.reverse_total is not None:
                resets = self._reverse_resets(group_ids, resets, count)
        for carry in self.group_carries.values():
            carry.grow(count)
        from cumtool import grouped

        return grouped.BatchGroups(group_ids, resets)

    def _group_ids(self, batch: pa.RecordBatch) -> np.ndarray:
        from cumtool import groups

        assert self.group_keys is not None
        try:
            return self.group_keys.ids(batch)
        except groups.KeysChanged as changed:
            keys = [self.label(p) for p in self.group_keys.positions]
            what = (keys[changed.index] if changed.index < len(keys)
                    else f"{option('period')}'s key")
            raise DataError(
                f"{option('by')} column {what} holds {_polars_type(changed.now)} values, "
                f"but the keys {option('state')} saved are {_polars_type(changed.saved)}: "
                "give the runs that go on inputs of one format (a CSV's keys are text), "
                "or start a new state file") from None

    def _reverse_resets(self, group_ids: np.ndarray, resets: np.ndarray,
                        count: int) -> np.ndarray:
        """Runs start at a reset row in input order; scanning backwards, a run therefore
        starts at the row of the same group that follows a reset row in scan order."""
        if self.pending_resets.shape[0] < count:
            self.pending_resets = np.concatenate(
                [self.pending_resets, np.zeros(count - self.pending_resets.shape[0], bool)])
        order = np.argsort(group_ids, kind="stable")
        sorted_groups = group_ids[order]
        sorted_resets = resets[order]
        starts = np.ones(order.shape[0], dtype=bool)
        starts[1:] = sorted_groups[1:] != sorted_groups[:-1]
        shifted = np.empty_like(sorted_resets)
        shifted[1:] = sorted_resets[:-1]
        shifted[starts] = self.pending_resets[sorted_groups[starts]]
        ends = np.ones(order.shape[0], dtype=bool)
        ends[:-1] = starts[1:]
        self.pending_resets[sorted_groups[ends]] = sorted_resets[ends]
        out = np.empty_like(resets)
        out[order] = shifted
        return out

    def _input_row(self, scan_row: int) -> int:
        """1-based input row of a 0-based row in scan order."""
        return self.reverse_total - scan_row if self.reverse_total is not None else scan_row + 1

    def _place(self, row: int) -> tuple[str, str]:
        """The file of input row `row` (from 1), and the row within it as messages name
        it: `row 2`, or `row 2 (line 3)` where the line is known."""
        if self.where is None:
            return self.name, f"row {row - self.rows_before}"
        name, row, *line = self.where(row)
        return name, f"row {row}" if not line else f"row {row} (line {line[0]})"

    def _scan_order(self, error: ScanOverflowError) -> tuple[int, int]:
        """Where the scan meets an error of _overflow's: its row in scan order (from the
        last row with --reverse, as the batches come), then its column. By file order
        alone, a reversed batch named its first row's error, which the batches of another
        size meet later or not at all."""
        row, column = error.position
        return (-row if self.options.reverse else row), column

    def _overflow(self, column: int, scan_row: int,
                  error: ScanOverflowError) -> ScanOverflowError:
        # position: the input row (from 0) and the column's place among the scanned ones
        name, row = self._place(self._input_row(scan_row))
        raw = error.raw
        if column in self.decimal_scale:  # scanned as int64 counts of its last place
            raw = _in_decimals(raw, self.decimal_scale[column])
        return ScanOverflowError(
            f"{name}: column {self.label(column)}, {row}: "
            f"{raw}{overflow_hint(self.overflow, error)}",
            (self._input_row(scan_row) - 1, self.selected.index(column)))

    def scan_column(self, column: int, data: pa.Array,
                    runs: Any) -> tuple[pa.Array, pa.Array | None]:
        """One scanned column of a batch down its rows, with its carried state (`runs`:
        --by or --reset's groups of rows, or None): its results and their indices."""
        spec = self.specs[column]
        try:
            if column in self.decimal_scale and spec.source_dtype.kind == "f":
                data = decimal_to_float(data)
            elif column in self.temporal:
                data = data.view(_storage(data.type))
            if self.distinct:
                carry = self.carries[column] if runs is None else self.group_carries[column]
                # JSON text's `null` is a missing cell (a string "null" is '"null"').
                text_na = (self.options.text_na | {"null"} if column in self.json_text
                           else self.options.text_na)
                counts, missing = distinct.scan(spec, data, carry, runs, text_na)
                return arrow_column(counts, missing), None
            values, valid = column_to_numpy(data)
            if column in self.timed:
                return self._timed_means(column, values, valid, runs), None
            if runs is None:
                result = kernels.scan_block(spec, values, valid, self.carries[column])
            else:
                result = self._scan_runs(column, values, valid, runs)
        except ScanOverflowError as error:
            found = self._overflow(column, self.rows_done + error.position[0], error)
            found.batch_row = error.position[0]
            raise found from None
        missing = _missing_out(valid, result.missing)
        indices = None
        if result.indices is not None:
            # -1: a skipped cell, or the identity (--exclusive): no position, a null.
            indices = arrow_column(self._input_positions(result.indices), result.indices < 0)
        if self._is_decimal_out(column):
            out_type = pa.decimal128(38, self.decimal_scale[column])
            return int64_to_decimal(result.values, missing, out_type), indices
        if column in self.temporal:
            # --exclusive puts the identity (the lowest or highest integer) first: no date.
            identity = result.values == spec.identity
            missing = identity if missing is None else missing | identity
            return arrow_column(result.values, missing).view(self.temporal[column]), indices
        return arrow_column(result.values, missing), indices

    def _timed_means(self, column: int, values: np.ndarray, valid: np.ndarray | None,
                     runs: Any) -> pa.Array:
        """ewma --times (cumtool.ops.ewma.timed_means), each group on from its carry."""
        from cumtool.ops.ewma import timed_means

        assert self.batch_times is not None
        n = values.shape[0]
        groups = runs.ids if runs is not None else np.zeros(n, dtype=np.int64)
        carry = self.carries[column] if runs is None else self.group_carries[column]
        if runs is not None and runs.resets is not None and runs.resets.any():
            raise UsageError(f"{option('times')} with {option('reset')} is not supported: "
                             f"use {option('by')} to start the means afresh")
        present = np.ones(n, dtype=bool) if valid is None else valid
        spec = self.specs[column]
        if values.dtype != spec.in_dtype:  # --dtype: cast first, as every scan does
            values = values.astype(spec.in_dtype)
        means = timed_means(spec, values.astype(np.float64, copy=False),
                            present, self.batch_times, groups, carry)
        return arrow_column(means, None if valid is None else ~valid)

    def _scan_runs(self, column: int, values: np.ndarray, valid: np.ndarray | None,
                   runs: Any) -> kernels.ScanResult:
        """A grouped scan of a batch. Runs are scanned bucket by bucket, so the overflow
        that one reports need not be the first in file order: then the shortest prefix of
        the batch that overflows is found by bisection (from the same carried state, which
        a failed scan leaves as it was), and its last row is the one reported."""
        from cumtool import grouped

        spec = self.specs[column]
        carry = self.group_carries[column]
        positions = (np.arange(self.rows_done, self.rows_done + values.shape[0])
                     if spec.indices else None)
        try:
            return grouped.scan_runs(spec, values, valid, runs, carry, positions)
        except ScanOverflowError as error:
            first, reported = 0, error  # the prefix [0, error row] overflows
            high = error.position[0]
            while first < high:
                middle = (first + high) // 2
                prefix = slice(0, middle + 1)
                try:
                    grouped.scan_runs(spec, values[prefix],
                                     None if valid is None else valid[prefix],
                                     runs.prefix(middle + 1), carry.copy(),
                                     None if positions is None else positions[prefix])
                except ScanOverflowError as earlier:
                    high, reported = middle, earlier
                else:
                    first = middle + 1
            raise ScanOverflowError(reported.raw, (high,)) from None

    def _input_positions(self, indices: np.ndarray) -> np.ndarray:
        if self.reverse_total is None:
            return indices
        return np.where(indices >= 0, self.reverse_total - 1 - indices, -1)

    def _scan_across(self, batch: pa.RecordBatch) -> dict[int, tuple[pa.Array, pa.Array | None]]:
        spec = self.specs[self.selected[0]]
        pairs = []
        for column in self.selected:
            data = batch.column(self.data_at.get(column, column))
            if column in self.decimal_scale:
                data = decimal_to_float(data)
            pairs.append(column_to_numpy(data))
        block = np.stack([values.astype(spec.source_dtype, copy=False) for values, _ in pairs])
        valid = None
        if any(v is not None for _, v in pairs):
            valid = np.stack([np.ones(batch.num_rows, bool) if v is None else v
                              for _, v in pairs])
        carry = kernels.initial_carry(spec, (batch.num_rows,))
        flip = self.options.reverse
        try:
            if flip:
                block = block[::-1]
                valid = None if valid is None else valid[::-1]
            result = kernels.scan_block(spec, block, valid, carry)
            if flip:
                result = kernels.flip_result(result, 0)
                valid = None if valid is None else valid[::-1]
        except ScanOverflowError as error:
            at_column, at_row = error.position[0], error.position[1]
            if flip:
                at_column = len(self.selected) - 1 - at_column
            row = self._input_row(self.rows_done + at_row)
            name, row_in_file = self._place(row)
            raise ScanOverflowError(
                f"{name}: {row_in_file}, column {self.label(self.selected[at_column])}: "
                f"{error.raw}{overflow_hint(self.overflow, error)}", (row - 1, at_column)) from None
        out: dict[int, tuple[pa.Array, pa.Array | None]] = {}
        for i, column in enumerate(self.selected):
            missing = _missing_out(None if valid is None else valid[i],
                                   None if result.missing is None else result.missing[i])
            indices = None
            if result.indices is not None:
                indices = arrow_column(result.indices[i], result.indices[i] < 0)
            out[column] = (arrow_column(result.values[i], missing), indices)
        return out


def _timed(spec: kernels.ScanSpec) -> bool:
    """Whether a column's scan is ewma with --times."""
    if spec.op != "ewma":
        return False
    return any(key == "halflife_ns" and value is not None for key, value in spec.params)


def _missing_out(valid: np.ndarray | None, missing: np.ndarray | None) -> np.ndarray | None:
    """The result cells written missing: those of missing input, and those the scan says
    (a statistic of nothing)."""
    if valid is None:
        return missing
    return ~valid if missing is None else ~valid | missing


class MultiPlan:
    """Several ops in one pass (`cumsum,cummax`): one TablePlan per op over the same
    columns, each with its own carried state. The input's columns are kept, and after
    them come the results of each scanned column, op by op: x_cumsum, x_cummax,
    y_cumsum..."""

    def __init__(self, ops: list[str], axis: str, dtype: np.dtype | None, schema: pa.Schema,
                 name: str, options: TableOptions, hints: list[ColumnHint] | None = None,
                 **scan: Any) -> None:
        kept = dataclasses.replace(options, keep=True, several=",".join(ops))
        indices = scan.pop("indices", False)
        self.plans = [TablePlan(op, axis, dtype, schema, name, kept, hints,
                                indices=indices and op in INDEXED, **scan)
                      for op in ops]
        first = self.plans[0]
        self.axis, self.names, self.selected = first.axis, first.names, first.selected
        self.parse, self.text_unused = first.parse, first.text_unused
        fields = first.kept_fields()
        for i in self.selected:
            for plan in self.plans:
                fields.extend(plan.result_fields(i, f"{self.names[i]}_{plan.op}"))
        self.schema = pa.schema(fields, metadata=schema.metadata)

    def op_plans(self) -> list[TablePlan]:
        return self.plans

    @property
    def rows_done(self) -> int:
        return self.plans[0].rows_done

    @property
    def reverse_total(self) -> int | None:
        return self.plans[0].reverse_total

    @reverse_total.setter
    def reverse_total(self, rows: int | None) -> None:
        for plan in self.plans:
            plan.reverse_total = rows

    def apply(self, batch: pa.RecordBatch) -> pa.RecordBatch:
        results: list[dict[int, tuple[pa.Array, pa.Array | None]]] = []
        for plan in self.plans:
            try:
                results.append(plan.results(batch))
            except ScanOverflowError as error:
                if error.before is not None:  # the rows before the overflow, as output
                    rows, before = error.before
                    error.before = self._before(batch, rows, results, before)
                raise
        return self._output(batch, results)

    def _before(self, batch: pa.RecordBatch, rows: int,
                done: list[dict[int, tuple[pa.Array, pa.Array | None]]],
                before: dict[int, tuple[pa.Array, pa.Array | None]]) -> Any:
        """The output of a batch's rows before an overflow in the plan after `done`: the
        earlier plans' results cut short, the later plans' scanned up to there. None where
        that fails (then only the batches before are written)."""
        head = batch.slice(0, rows)
        try:
            results = [_first_rows(each, rows) for each in done]
            results.append(before)
            results.extend(plan.results(head) for plan in self.plans[len(results):])
            return self._output(head, results)
        except Exception:  # the overflow is the error to report
            return None

    def _output(self, batch: pa.RecordBatch,
                results: list[dict[int, tuple[pa.Array, pa.Array | None]]]) -> pa.RecordBatch:
        arrays = self.plans[0].kept_arrays(batch)
        for i in self.selected:
            for result in results:
                arrays.extend(a for a in result[i] if a is not None)
        return pa.RecordBatch.from_arrays(arrays, schema=self.schema)


def _first_rows(results: dict[int, tuple[pa.Array, pa.Array | None]],
                rows: int) -> dict[int, tuple[pa.Array, pa.Array | None]]:
    """A batch's results (and indices) of its first `rows` rows."""
    return {i: (result.slice(0, rows), None if index is None else index.slice(0, rows))
            for i, (result, index) in results.items()}


def make_plan(op: str, axis: str, dtype: np.dtype | None, schema: pa.Schema, name: str,
              options: TableOptions, hints: list[ColumnHint] | None = None,
              **scan: Any) -> TablePlan | MultiPlan:
    """The plan of one op, or of several in one pass (`cumsum,cummax`)."""
    ops = op.split(",")
    if len(ops) == 1:
        return TablePlan(op, axis, dtype, schema, name, options, hints, **scan)
    return MultiPlan(ops, axis, dtype, schema, name, options, hints, **scan)


# A batch's columns are scanned on a pool where it has at least this many rows: each
# column carries its own state, and the kernels (numpy's accumulate, the C loops) let the
# GIL go, so the one thread that reads and writes batches is not also the one that scans
# them all (benchmarks/RESULTS-parquet2.md: Parquet's batches of 2^17 rows). Shorter
# columns are not worth a hand-off where the cores are busy anyway (JSON Lines' 45,000
# rows of 8 numbers on 2 cores: 0.01-0.03 s more wall and CPU on 2M rows, 7.5 voluntary
# switches a MB instead of 4.5). From POOL_CORES usable cores (and threads) on, there are
# cores to spare and the one thread is the run's serial part: then from POOL_ROWS_SPARE
# rows (it takes 0.05-0.07 s of that thread's CPU off it on 2M x 8 JSON Lines,
# benchmarks/RESULTS-cores.md, session 9).
POOL_ROWS = 1 << 16
POOL_ROWS_SPARE = 1 << 15
POOL_CORES = 4
_POOLS: dict[int, Any] = {}
_POOL_LOCK = threading.Lock()


def _each_column(scan: Callable[[int], Any], columns: Sequence[int], rows: int) -> list[Any]:
    """scan(i) of each column, in order: its result, or the ScanOverflowError it raised
    (any other failure propagates, the leftmost first)."""
    from cumtool import native

    workers = native.ahead_workers(native.CORES, min(len(columns), 8))
    spare = native.running_threads() >= POOL_CORES
    if workers < 2 or rows < (POOL_ROWS_SPARE if spare else POOL_ROWS):
        return [_outcome(scan, i) for i in columns]
    with _POOL_LOCK:  # cumtool.scan may be called from several threads at once
        pool = _POOLS.get(workers)  # one a size (--threads): a pool in use is never shut
        if pool is None:
            from concurrent.futures import ThreadPoolExecutor

            pool = _POOLS[workers] = ThreadPoolExecutor(max_workers=workers,
                                                        thread_name_prefix="cumtool-scan")
    # A task a run of neighbouring columns, one a thread: a table of many narrow columns
    # is not a hand-off a column, and each hand-off is a wake (context switches).
    size = -(-len(columns) // workers)
    futures = [pool.submit(_outcomes, scan, columns[at:at + size])
               for at in range(0, len(columns), size)]
    return [outcome for future in futures for outcome in future.result()]


def _outcomes(scan: Callable[[int], Any], columns: Sequence[int]) -> list[Any]:
    return [_outcome(scan, i) for i in columns]


def _outcome(scan: Callable[[int], Any], column: int) -> Any:
    try:
        return scan(column)
    except ScanOverflowError as error:
        return error


def _polars_type(name: str) -> str:
    """A key type as a message names it: text, not polars' String."""
    return {"String": "text", "Int64": "int64", "Float64": "float64", "Date": "date",
            "Boolean": "bool", "None": "no"}.get(name, name.lower())
