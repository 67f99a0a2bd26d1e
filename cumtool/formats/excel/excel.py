"""Spreadsheets in (.xlsx, .xlsm, .xls, .ods) with fastexcel, the `excel` extra: Rust's
calamine, which hands the sheet over as Arrow. fastexcel is imported only here, when a
spreadsheet is read.

A spreadsheet stores every number as a float and every date as a date-time, so three
types are put back as the sheet shows them: a column of whole numbers is int64, a column
of date-times that are all at midnight is a date column, and one whose date-times all
fall on Excel's day 0 (1899-12-31) holds times of day. Text stays text (a code
`007` typed as text is `007`); an empty cell is a missing cell.
"""

from __future__ import annotations

import datetime
import re
from collections.abc import Collection, Iterator, Mapping
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from cumtool.errors import DataError, FormatError, extra_missing
from cumtool.formats import SourceBase
from cumtool.notes import Quiet, note

MAX_BATCH_ROWS = 1 << 16
_EXACT_FLOAT = float(1 << 53)
# The names fastexcel gives where it does not take a header cell's text as it is: an empty
# cell, a date or a flag (`__UNNAMED__3`), a name met before (`b_1`).
_RENAMED = re.compile(r"__UNNAMED__\d+|.*_\d+")


def _fastexcel() -> Any:
    try:
        import fastexcel
    except ImportError:
        raise extra_missing("reading spreadsheets", "excel") from None
    import logging

    # Its warnings ("falling back to string" for an empty column) would be stray lines on
    # standard error: what it reads is reported by cumtool's own messages.
    logging.getLogger("fastexcel").setLevel(logging.ERROR)
    return fastexcel


def _choose(names: list[str], sheet: str | None, name: str, request: Quiet) -> int:
    """The 0-based index of the sheet asked for. A sheet's exact name wins over a number
    (a sheet may be called `2024`)."""
    if sheet is None:
        if len(names) > 1:
            others = ", ".join(repr(n) for n in names[1:6]) + (", ..." if len(names) > 6
                                                                else "")
            note(request, f"{name} has {len(names)} sheets; reading the first, "
                          f"{names[0]!r} (the others: {others}; choose one with --sheet)")
        return 0
    if sheet in names:
        return names.index(sheet)
    text = sheet.strip()
    if text.isdigit():
        number = int(text)
        if 1 <= number <= len(names):
            return number - 1
        raise DataError(f"{name}: --sheet {sheet}: it has {len(names)} sheet"
                        f"{'s' if len(names) != 1 else ''} ({_listing(names)})")
    raise DataError(f"{name}: no sheet named {sheet!r}; its sheets: {_listing(names)}")


def _listing(names: list[str]) -> str:
    shown = ", ".join(repr(n) for n in names[:10])
    return shown + (f", ... ({len(names)} in all)" if len(names) > 10 else "")


class SpreadsheetSource(SourceBase):
    """One sheet of a workbook (a path, or the bytes of one read from a pipe)."""

    def __init__(self, workbook: str | bytes, name: str, sheet: str | None, *,
                 header: bool, request: Quiet) -> None:
        fastexcel = _fastexcel()
        self.name = name
        try:
            reader = fastexcel.read_excel(workbook)
            names = list(reader.sheet_names)
            if not names:
                raise FormatError(f"{name}: the workbook has no sheets")
            index = _choose(names, sheet, name, request)
            self.sheet = names[index]
            loaded = reader.load_sheet(index, header_row=0 if header else None)
            table = pa.Table.from_batches([loaded.to_arrow()])
            if header:
                table = table.rename_columns(_header(reader, index, table.column_names))
        except fastexcel.FastExcelError as error:
            reason = str(error).split("\n", 1)[0]
            raise FormatError(f"{name}: cannot read as a spreadsheet: {reason}") from None
        if not header:  # columns 1, 2, ... as for a CSV without a header
            table = table.rename_columns([str(i + 1) for i in range(table.num_columns)])
        self._table = _as_shown(table)
        self.num_rows = self._table.num_rows

    @property
    def schema(self) -> pa.Schema:
        return self._table.schema

    def batches(self, parse: Mapping[int, pa.DataType] | None = None,
                unused: Collection[int] = ()) -> Iterator[pa.RecordBatch]:
        """The sheet in slices; its columns are typed (nothing to parse)."""
        yield from self._table.to_batches(max_chunksize=MAX_BATCH_ROWS)


def _header(reader: Any, index: int, names: list[str]) -> list[str]:
    """The header row's cells as the sheet shows them, as a CSV's header is kept: fastexcel
    names an empty cell `__UNNAMED__0` (so a pandas index, under an empty name, would be
    scanned), a repeated name `b_1`, and a date or a flag `__UNNAMED__N`."""
    if not any(_RENAMED.fullmatch(name) for name in names):
        return names  # as the cells are: the sheet is not read a second time
    first = reader.load_sheet(index, header_row=None, n_rows=1).to_arrow()
    if first.num_columns != len(names) or first.num_rows != 1:
        return names  # not the row fastexcel named the columns from: keep its names
    return [_header_text(first.column(i)[0].as_py()) for i in range(first.num_columns)]


def _header_text(value: object) -> str:
    """A header cell as text: a whole number without `.0` (a year, 2024), a flag as the
    sheet writes it (TRUE), a date-time at midnight as its date."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    if isinstance(value, float):
        return str(int(value)) if value.is_integer() and abs(value) <= _EXACT_FLOAT else repr(value)
    if isinstance(value, datetime.datetime):
        return (value.date().isoformat() if value.time() == datetime.time()
                else value.isoformat())
    return str(value)


def _as_shown(table: pa.Table) -> pa.Table:
    """Whole-number columns as int64 and midnight date-times as dates; fields nullable
    (a result may be missing where its input was not)."""
    columns = []
    fields = []
    for field, column in zip(table.schema, table.columns, strict=True):
        column = column.combine_chunks() if column.num_chunks != 1 else column.chunk(0)
        if pa.types.is_floating(column.type) and _whole(column):
            column = column.cast(pa.int64())
        elif pa.types.is_timestamp(column.type) and _midnight(column):
            column = column.cast(pa.date32())
        elif pa.types.is_timestamp(column.type) and _day_zero(column):
            column = column.cast(pa.time64("us"))  # times of day: Excel's day 0 and a time
        columns.append(column)
        fields.append(pa.field(field.name, column.type))
    return pa.Table.from_arrays(columns, schema=pa.schema(fields))


def _whole(column: pa.Array) -> bool:
    present = column.drop_null()
    if len(present) == 0:
        return False
    values = np.asarray(present.to_numpy(zero_copy_only=False), dtype=np.float64)
    return bool(np.all(np.isfinite(values)) and np.all(values == np.round(values))
                and np.all(np.abs(values) <= _EXACT_FLOAT))


def _day_zero(column: pa.Array) -> bool:
    """Every date-time on 1899-12-31, the day Excel counts from: cells holding a time."""
    present = column.drop_null()
    if len(present) == 0:
        return False
    zero = pa.scalar(datetime.date(1899, 12, 31), pa.date32())
    return bool(pc.all(pc.equal(present.cast(pa.date32()), zero)).as_py())


def _midnight(column: pa.Array) -> bool:
    present = column.drop_null()
    if len(present) == 0:
        return False
    return bool(pc.all(pc.equal(present.cast(pa.date32()).cast(present.type), present)).as_py())
