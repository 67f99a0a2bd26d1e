"""CSV cells: where records and fields of delimited text start and end (a newline or a
delimiter inside quotes does not count), which quotes RFC 4180 allows, and how a text
cell becomes a number, a date or true/false. The narrow reader (formats/csv/csv.py) and the
wide one (formats/csv/wide.py) share these rules, and the messages that name a cell."""

from __future__ import annotations

import bisect
import functools

import numpy as np
import polars as pl
import pyarrow as pa

from cumtool.errors import FormatError, LateDecimal
from cumtool.formats import row_text
from cumtool.formats.csv import dialect
from cumtool.numtext import INT_TEXT


def check_quotes(name: str, chunk: bytes, delimiter: str, rows_before: int,
                  header: bool = False, lines_before: int = 0) -> None:
    """Refuse a quote that RFC 4180 does not allow: one that opens a quoted field
    anywhere but at the start of a field, or closes one anywhere but at its end. polars
    would pair two such stray quotes into one field and silently drop the rows between."""
    if chunk.find(b'"') < 0:
        return
    data = np.frombuffer(chunk, dtype=np.uint8)
    quotes = np.flatnonzero(data == ord('"'))
    bounds = np.frombuffer(b"\n\r" + delimiter.encode(), dtype=np.uint8)
    before = np.where(quotes > 0, data[np.maximum(quotes - 1, 0)], ord("\n"))
    after = np.where(quotes < data.shape[0] - 1,
                     data[np.minimum(quotes + 1, data.shape[0] - 1)], ord("\n"))
    opening = np.arange(quotes.shape[0]) % 2 == 0  # quote state alternates, from outside
    previous_adjacent = np.zeros(quotes.shape[0], dtype=bool)
    previous_adjacent[1:] = quotes[1:] == quotes[:-1] + 1
    next_adjacent = np.zeros(quotes.shape[0], dtype=bool)
    next_adjacent[:-1] = quotes[:-1] + 1 == quotes[1:]
    # An escaped quote ("") closes and reopens: allowed right after/before its twin.
    bad_open = opening & ~np.isin(before, bounds) & ~previous_adjacent
    bad_close = ~opening & ~np.isin(after, bounds) & ~next_adjacent
    bad = np.flatnonzero(bad_open | bad_close)
    if bad.shape[0]:
        at = int(quotes[bad[0]])
        line, _field = place(chunk, at, delimiter)
        start = chunk.rfind(b"\n", 0, at) + 1
        text = chunk[start:start + 60].split(b"\n", 1)[0].decode("utf-8", "replace")
        row = rows_before + line + (0 if header else 1)
        physical = lines_before + chunk.count(b"\n", 0, at) + 1
        where = ("in the header" if header and line == 0
                 else f"near {row_text(row, physical)}")
        raise FormatError(
            f"{name}: a quote inside an unquoted field, {where} ({text!r}); quote the "
            "whole field (\"a \"\"b\"\" c\") as CSV requires"
            f"{_other_delimiter(chunk, delimiter) if header else ''}"
        )
    if quotes.shape[0] % 2:  # the input ends inside quotes: its last quote opened them
        at = int(quotes[-1])
        line, _field = place(chunk, at, delimiter)
        row = rows_before + line + (0 if header else 1)
        where = ("the header" if header and line == 0
                 else row_text(row, lines_before + chunk.count(b"\n", 0, at) + 1))
        raise FormatError(f"{name}: cannot read as csv: {where}: a quote that is never closed")


def _other_delimiter(chunk: bytes, delimiter: str) -> str:
    """For a quote error in a file whose header holds no `delimiter`: the delimiter it
    holds instead (a `;` export's `"1.234,50"` is a quoted field, not a stray quote)."""
    from cumtool.columns import delimiter_hint

    header = chunk.split(b"\n", 1)[0].decode("utf-8", "replace")
    if delimiter in header:
        return ""
    return delimiter_hint(header)


def layout(chunk: bytes, delimiter: str) -> tuple[np.ndarray, np.ndarray]:
    """The field count of each record of `chunk` and whether it is a blank line, found
    with vectorised byte searches (a newline or delimiter inside quotes does not count)."""
    if not chunk:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=bool)
    data = np.frombuffer(chunk, dtype=np.uint8)
    newlines = np.flatnonzero(data == ord("\n"))
    delimiters = np.flatnonzero(data == ord(delimiter))
    quotes = np.flatnonzero(data == ord('"'))
    if quotes.shape[0]:
        newlines = newlines[dialect.outside_quotes(quotes, newlines)]
        delimiters = delimiters[dialect.outside_quotes(quotes, delimiters)]
    ends = newlines
    if not ends.shape[0] or ends[-1] != data.shape[0] - 1:  # a last record without newline
        ends = np.append(ends, data.shape[0])
    starts = np.concatenate(([0], newlines + 1))[: ends.shape[0]]
    fields = np.diff(np.searchsorted(delimiters, ends), prepend=0) + 1
    length = ends - starts
    carriage = data[np.clip(ends - 1, 0, data.shape[0] - 1)] == ord("\r")
    blank = (length == 0) | ((length == 1) & carriage)
    return fields, blank


def dialect_hint(first_line: str, comment: str | None, ragged: bool, short: bool) -> str:
    """For a row of the wrong width: the option that reads such a file, where the file's
    first line starts as a comment (a `# Data source ...` line before the header) or the
    row is short."""
    if comment is None and first_line[:1] in ("#", "%"):
        mark = first_line[:1]
        return (f"; its first line starts with {mark!r}: give --comment '{mark}' to skip "
                "such lines")
    if short and not ragged:
        return "; give --ragged to fill short rows with missing cells"
    return ""


class RowLines:
    """Where the rows read so far start in the file, for messages: a span per chunk, with
    its first row (from 0) and the line that row starts on; and each row's line when the
    rows of a chunk are not a line each (blank lines, newlines in quotes), for the last
    KEPT chunks only (before them such a row's line is no longer known)."""

    KEPT = 16

    def __init__(self) -> None:
        self._first_rows: list[int] = []
        self._spans: list[tuple[int, np.ndarray | None]] = []

    def add(self, first_row: int, first_line: int, lines: np.ndarray | None) -> None:
        if lines is not None and len(self._spans) >= self.KEPT:
            old, kept = self._spans[-self.KEPT]
            if kept is not None:
                self._spans[-self.KEPT] = (old, np.zeros(0, np.int64))
        self._first_rows.append(first_row)
        self._spans.append((first_line, lines))

    def saved(self) -> tuple[list[int], list[tuple[int, np.ndarray | None]]]:
        """What restore() takes back to (a chunk read on trial)."""
        return list(self._first_rows), list(self._spans)

    def restore(self, saved: tuple[list[int], list[tuple[int, np.ndarray | None]]]) -> None:
        self._first_rows, self._spans = list(saved[0]), list(saved[1])

    def line(self, row: int) -> int | None:
        """The line row `row` (from 0) starts on, if known."""
        k = bisect.bisect_right(self._first_rows, row) - 1
        if k < 0:
            return None
        first_line, lines = self._spans[k]
        offset = row - self._first_rows[k]
        if lines is None:
            return first_line + offset
        return int(lines[offset]) if offset < lines.shape[0] else None


def record_lines(chunk: bytes, delimiter: str) -> np.ndarray:
    """For each record of `chunk` that is not a blank line: how many line ends come
    before its first byte in `chunk` (newlines in quotes and blank lines count)."""
    if not chunk:
        return np.zeros(0, dtype=np.int64)
    data = np.frombuffer(chunk, dtype=np.uint8)
    newlines = np.flatnonzero(data == ord("\n"))
    outside = dialect.record_ends(data)
    _fields, blank = layout(chunk, delimiter)
    starts = np.concatenate(([0], outside + 1))[: blank.shape[0]]
    return np.searchsorted(newlines, starts)[~blank]


def count_records(chunk: bytes, delimiter: str, limit: int | None = None) -> int:
    """How many records of `chunk` (blank lines aside) end within its first `limit`
    bytes (all: None): a record ends at its newline outside quotes, the last one without
    one at the end of the chunk. Without quotes or blank lines, a count of newlines."""
    if limit is not None and len(chunk) > limit:
        cut = chunk[:limit]
        _fields, blank = layout(cut, delimiter)
        whole = int(np.count_nonzero(~blank))
        if not (cut.endswith(b"\n") and cut.count(b'"') % 2 == 0) and not blank[-1]:
            whole -= 1  # the last record goes on past the limit
        return whole
    if (b'"' not in chunk and b"\n\n" not in chunk and b"\n\r\n" not in chunk
            and not chunk.startswith((b"\n", b"\r\n"))):
        newlines = int(np.count_nonzero(np.frombuffer(chunk, dtype=np.uint8) == ord("\n")))
        return newlines + (0 if not chunk or chunk.endswith(b"\n") else 1)
    _fields, blank = layout(chunk, delimiter)
    return int(np.count_nonzero(~blank))


def place(chunk: bytes, at: int, delimiter: str) -> tuple[int, int]:
    """Where byte `at` of `chunk` stands, for a message: how many records before its own,
    blank lines aside, and its field in that record (from 0). A newline or a delimiter
    inside quotes does not count."""
    # The layout of the records up to and with byte `at` (a NUL, a quote, a byte that is
    # not text: never a line end), so its own record is the last, cut after it.
    fields, blank = layout(chunk[:at + 1], delimiter)
    return int(np.count_nonzero(~blank[:-1])), int(fields[-1]) - 1


@functools.lru_cache(maxsize=64)
def _markers_parse(markers: tuple[str, ...], arrow_type: pa.DataType) -> bool:
    return bool(convert(pl.Series(markers, dtype=pl.String).str.strip_chars(), arrow_type)
                .is_not_null().any())


def markers_parse(markers: list[str], arrow_type: pa.DataType) -> bool:
    """Whether a missing marker is also a value of `arrow_type` (`--na 0`, `nan` in a float
    column). Then every cell must be checked against the markers: a batch whose cells all
    parse cannot be taken as parsed, or `0` would be a number in one batch and missing in
    the next."""
    return _markers_parse(tuple(markers), arrow_type)


def convert(cells: pl.Series, arrow_type: pa.DataType) -> pl.Series:
    """Text cells as `arrow_type`; null where a cell does not parse (or is null)."""
    if pa.types.is_boolean(arrow_type):
        lowered = cells.str.to_lowercase()
        return pl.select(pl.when(lowered == "true").then(True)
                         .when(lowered == "false").then(False)).to_series()
    if pa.types.is_date32(arrow_type):
        return cells.str.to_date("%Y-%m-%d", strict=False)
    if pa.types.is_decimal(arrow_type):
        # polars rounds extra places away; a decimal must hold the cell exactly.
        scale = arrow_type.scale
        places = r"\.?" if scale == 0 else rf"(\.[0-9]{{0,{scale}}})?"
        exact = cells.str.contains(rf"^[+-]?([0-9]+{places}|\.[0-9]{{1,{scale}}})$")
        fits = pl.select(pl.when(exact).then(cells)).to_series()
        return fits.cast(pl.Decimal(38, scale), strict=False)
    if pa.types.is_integer(arrow_type):
        return cells.cast(pl.Int64, strict=False)
    return cells.cast(pl.Float64, strict=False)


def type_name(arrow_type: pa.DataType) -> str:
    if pa.types.is_decimal(arrow_type):
        return f"a decimal with at most {arrow_type.scale} places"
    if pa.types.is_integer(arrow_type):
        return "an integer"
    if pa.types.is_boolean(arrow_type):
        return "true or false"
    if pa.types.is_date32(arrow_type):
        return "a date (YYYY-MM-DD)"
    return "a number"


def comma_decimals(cells: pl.Series) -> pl.Series:
    """Cells of numbers written 1,5 (--decimal-comma) as the parsers read them, 1.5; a
    cell with a point (1.500, a thousands separator?) becomes text no parser reads, so
    that the careful parse names it rather than read it as 1.5 (the judged rows take no
    point either: numtext.cell_kinds)."""
    return pl.select(pl.when(cells.str.contains(".", literal=True)).then(pl.lit("\x00"))
                     .otherwise(cells.str.replace(",", ".", literal=True))).to_series()


def surprise(name: str, where: str, names: list[str], column: int, text: str,
             arrow_type: pa.DataType, na_values: tuple[str, ...],
             decimal_comma: bool = False) -> FormatError:
    """The error for a cell after the judged rows that is not of its column's type (`text`:
    the cell, spaces stripped), with a hint that works: a decimal in an integer column
    asks for float64; any other text can be made a missing cell with --na, whose list
    replaces the default one, so the hint gives the whole list."""
    from cumtool.notes import na_option

    cell = f"{name}: {where}, column {names[column]!r}: {text[:40]!r}"
    message = f"{cell} is not {type_name(arrow_type)} like the first rows"
    if decimal_comma and "." in text:
        return FormatError(f"{message}: with --decimal-comma a number is written 1,5, and "
                           "a point is part of none")
    if pa.types.is_integer(arrow_type) and convert(
            pl.Series([text], dtype=pl.String), pa.float64()).is_not_null().all():
        hint = "; pass --dtype float64 if the column holds floats"
        if INT_TEXT.fullmatch(text):  # beyond int64: an id, not to be rounded
            return FormatError(f"{cell} is an integer beyond int64, unlike the first rows; "
                               "pass --dtype float64 to scan the column as floats")
        return LateDecimal(message, hint, column)
    na = na_option(na_values, [text])
    if na is None:
        return FormatError(message)
    return FormatError(f"{message}; if {text[:40]!r} means a missing cell, pass {na}")
