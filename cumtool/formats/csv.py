"""Delimited text (CSV, TSV, plain or compressed) in and out.

Reading: the input is cut into chunks of whole records (a newline outside quotes ends a
record) and each chunk is parsed by polars with one fixed schema, inferred from the first
10,000 rows. Memory is bounded by the chunk size whatever the file size, files, pipes and
compressed streams take the same path, and a chunk is parsed as soon as its bytes have
arrived, so `producer | cumtool cumsum - | head` shows rows before the producer ends.
Only numeric-looking columns get a numeric type; everything else stays text and passes
through unchanged.

Writing: polars' CSV writer, which prints floats as the shortest text that reads back to
the same value.
"""

from __future__ import annotations

import csv as pycsv
import io
import os
import select
from collections.abc import Collection, Iterator
from typing import IO

import numpy as np
import polars as pl
import pyarrow as pa

from cumtool.errors import FormatError, UsageError
from cumtool.formats import CsvOptions, unreadable

INFER_ROWS = 10_000
CHUNK_BYTES = 8 << 20
_SAMPLE_BYTES = 1 << 20
_BOM = b"\xef\xbb\xbf"
_INT_TYPES = (pl.Int64, pl.Int32, pl.Int16, pl.Int8)


class _Chunker:
    """Cuts a byte stream into chunks that end on a record boundary."""

    def __init__(self, stream: IO[bytes], chunk_bytes: int) -> None:
        self._stream = stream
        self._chunk_bytes = chunk_bytes
        self._pending = b""
        self._eof = False
        self._read1 = getattr(stream, "read1", None)
        try:
            self._fd: int | None = stream.fileno()
        except (OSError, AttributeError, ValueError, io.UnsupportedOperation):
            self._fd = None
        self.bytes_read = 0

    def _more_is_ready(self) -> bool:
        """Whether more input is available without blocking (a pipe with a slow producer
        should not hold back rows already here)."""
        if self._fd is None:
            return True
        try:
            ready, _, _ = select.select([self._fd], [], [], 0)
        except (OSError, ValueError):
            return True
        return bool(ready)

    def _read(self, size: int) -> bytes:
        data = self._read1(size) if self._read1 is not None else self._stream.read(size)
        self.bytes_read += len(data)
        return bytes(data)

    def take(self, minimum: int) -> bytes:
        """Read until at least `minimum` bytes are pending (or the input pauses or ends),
        and return the longest prefix of whole records."""
        parts = [self._pending]
        size = len(self._pending)
        while not self._eof and (size < minimum):
            data = self._read(max(minimum - size, 64 * 1024))
            if not data:
                self._eof = True
                break
            parts.append(data)
            size += len(data)
            if size > 0 and not self._more_is_ready() and b"\n" in data:
                break
        buffer = b"".join(parts)
        if self._eof:
            self._pending = b""
            return buffer
        cut = _record_end(buffer)
        if cut == 0:
            # No complete record yet (a very long line): read on.
            self._pending = buffer
            return self.take(len(buffer) + minimum) if not self._eof else self._flush()
        self._pending = buffer[cut:]
        return buffer[:cut]

    def _flush(self) -> bytes:
        buffer, self._pending = self._pending, b""
        return buffer

    def chunks(self) -> Iterator[bytes]:
        while True:
            chunk = self.take(self._chunk_bytes)
            if chunk:
                yield chunk
            if self._eof and not self._pending:
                return


def _first_records(buffer: bytes, count: int) -> bytes:
    """About the first `count` lines of `buffer`, cut at a record boundary."""
    end = -1
    for _ in range(count):
        end = buffer.find(b"\n", end + 1)
        if end < 0:
            return buffer
    cut = _record_end(buffer[: end + 1])
    return buffer[:cut] if cut else buffer


def _record_end(buffer: bytes) -> int:
    """Length of the longest prefix of `buffer` made of whole records: up to a newline
    that is outside quotes (an even number of quote characters before it)."""
    end = buffer.rfind(b"\n")
    if end < 0:
        return 0
    if buffer.find(b'"', 0, end) < 0:
        return end + 1
    quotes = buffer.count(b'"', 0, end)
    while quotes % 2:
        previous = buffer.rfind(b"\n", 0, end)
        if previous < 0:
            return 0
        quotes -= buffer.count(b'"', previous, end)
        end = previous
    return end + 1


def _polars_message(error: Exception) -> str:
    return " ".join(str(error).split("\n\n", 1)[0].split())


def _with_float_words(first_rows: pl.DataFrame) -> pl.Schema:
    """polars infers a float column only from "NaN", "inf" and "-inf"; a text column whose
    cells all read as floats and include "nan", "Inf", "INF", "infinity" (as numpy and R
    write them) is a float column too. Wide integers without such a word stay text."""
    schema = dict(first_rows.schema)
    for name, dtype in first_rows.schema.items():
        if dtype != pl.String:
            continue
        try:
            floats = first_rows.get_column(name).drop_nulls().cast(pl.Float64, strict=True)
        except pl.exceptions.PolarsError:
            continue
        if floats.len() and not floats.is_finite().all():
            schema[name] = pl.Float64()
    return pl.Schema(schema)


def _numeric_schema(
    sample: pl.Schema, names: list[str], float_columns: Collection[str] | None
) -> dict[str, pl.DataType]:
    """The parse schema. With --dtype float, integer columns to be scanned are read as
    floats directly (the same values as reading then casting), so a float met after the
    first rows is no error. Otherwise integers too wide for int64 are read as text:
    nothing is silently rounded. Other non-numeric columns are text."""
    schema: dict[str, pl.DataType] = {}
    for column, dtype in zip(names, sample.values(), strict=True):
        float_wide_ints = float_columns is not None and (
            float_columns == "all" or column in float_columns)
        if float_wide_ints and dtype.is_numeric():
            schema[column] = pl.Float64()
        elif dtype in _INT_TYPES:
            schema[column] = pl.Int64()
        elif dtype.is_integer():
            schema[column] = pl.Float64() if float_wide_ints else pl.String()
        elif dtype.is_float():
            schema[column] = pl.Float64()
        elif dtype == pl.Boolean:
            schema[column] = pl.Boolean()
        else:
            schema[column] = pl.String()
    return schema


class CsvSource:
    """Delimited text from any binary stream, in batches of whole records."""

    def __init__(
        self, stream: IO[bytes], name: str, options: CsvOptions, *,
        compression: str | None = None, float_columns: Collection[str] | None = None,
        decimal_columns: Collection[str] | None = None,
        chunk_bytes: int = CHUNK_BYTES, total_bytes: int | None = None,
    ) -> None:
        self.name = name
        self.total_bytes = total_bytes
        self._options = options
        if compression:
            stream = pa.CompressedInputStream(pa.PythonFile(stream, mode="r"), compression)
        self._chunker = _Chunker(stream, chunk_bytes)
        try:
            sample = self._chunker.take(_SAMPLE_BYTES)
            # A first row longer than the sample: read on until a whole row follows the
            # header, or the types would be inferred from the header alone.
            while sample.count(b"\n") < 2 and (more := self._chunker.take(_SAMPLE_BYTES)):
                sample += more
        except (OSError, pa.ArrowException) as error:
            raise unreadable(name, f"{compression}-compressed csv" if compression else "csv",
                             error) from None
        sample = sample.removeprefix(_BOM)
        if not sample.strip():
            raise FormatError(f"{name}: the file is empty (no header, no rows)")
        if b"\0" in sample.split(b"\n", 1)[0]:
            # Binary data, not text (polars would panic on a NUL in a column name).
            raise FormatError(f"{name}: cannot read as csv: the first line holds a NUL byte "
                              "(a binary file?)")
        self._first = sample
        _check_quotes(name, sample, options.delimiter, 0, header=options.header)
        try:
            first_rows = pl.read_csv(
                # Only the rows the types are inferred from: polars parses past n_rows, so
                # a bad cell further on would fail here, unlocated, instead of in batches().
                _first_records(sample, INFER_ROWS + 1), separator=options.delimiter,
                has_header=options.header, infer_schema_length=INFER_ROWS, n_rows=INFER_ROWS,
                try_parse_dates=False,
            )
            inferred = _with_float_words(first_rows)
            if first_rows.height == 0:
                if options.header and any(
                        True for _ in _records(sample, options.delimiter, skip_header=True)):
                    # polars reads no rows after a header with a stray quote (d"y,a):
                    # never an empty result for a file that has rows.
                    raise FormatError(f"{name}: cannot read as csv: the rows after the "
                                      "header cannot be read (a stray quote in it?)")
                # A header without rows: empty int64 columns, so the result is an empty
                # table with the same header rather than "no numeric columns".
                inferred = pl.Schema({column: pl.Int64() for column in inferred.names()})
        except pl.exceptions.PolarsError as error:
            raise _ragged_row(name, sample, options) or unreadable(
                name, "csv", _polars_message(error)) from None
        self.column_names = (list(inferred.names()) if options.header
                             else [str(i) for i in range(len(inferred))])
        if any("\0" in column for column in self.column_names):
            # polars panics exporting a name with a NUL (the header need not be line 1).
            raise FormatError(f"{name}: cannot read as csv: a column name holds a NUL byte "
                              "(a binary file?)")
        if options.header:
            # polars renames a repeated name (a, a_duplicated_0): that would change the
            # user's header behind their back.
            header = next(_records(sample, options.delimiter, skip_header=False), [])
            for column in header:
                if header.count(column) > 1:
                    raise FormatError(f"{name}: column name {column!r} appears more than "
                                      "once in the header; cumtool needs unique names")
        self._parse_schema = _numeric_schema(inferred, self.column_names, float_columns)
        self._decimal_scales = self._decimal_scales_of(first_rows, decimal_columns)
        for column in self._decimal_scales:
            self._parse_schema[column] = pl.String()
        self._schema = self._arrow_schema()
        self.rows_read = 0

    def _decimal_scales_of(self, first_rows: pl.DataFrame,
                           wanted: Collection[str] | None) -> dict[str, int]:
        """--decimal: float columns become decimals with as many places as their cells
        have at most (in the first rows; a later cell with more is an error)."""
        if wanted is None:
            return {}
        chosen = [
            (column, polars_name)
            for column, polars_name in zip(self.column_names, first_rows.columns, strict=True)
            if first_rows.schema[polars_name] == pl.Float64
            and (wanted == "all" or column in wanted)
        ]
        if not chosen:
            return {}
        # The places as written: polars' float text of 19.90 would be 19.9, hiding one.
        exact = pl.read_csv(self._first, separator=self._options.delimiter,
                            has_header=self._options.header, infer_schema=False,
                            n_rows=INFER_ROWS)
        scales = {}
        for column, polars_name in chosen:
            places = (exact.get_column(polars_name).drop_nulls()
                      .str.extract(r"\.(\d+)").str.len_chars().max())
            scales[column] = int(places) if isinstance(places, int) else 0
        return scales

    def _arrow_schema(self) -> pa.Schema:
        base = pl.DataFrame(
            schema=dict(zip(self.column_names, self._parse_schema.values(), strict=True))
        ).to_arrow().schema
        for column, scale in self._decimal_scales.items():
            base = base.set(base.get_field_index(column),
                            pa.field(column, pa.decimal128(38, scale)))
        return base

    def _decimals(self, table: pa.Table) -> pa.Table:
        for column, scale in self._decimal_scales.items():
            index = table.schema.get_field_index(column)
            try:
                exact = table.column(index).cast(pa.decimal128(38, scale))
            except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as error:
                raise FormatError(
                    f"{self.name}: column {column!r}, in rows {self.rows_read + 1} to "
                    f"{self.rows_read + table.num_rows}: not a decimal with at most {scale} "
                    f"places, as the first rows ({error})"
                ) from None
            table = table.set_column(index, column, exact)
        return table

    @property
    def schema(self) -> pa.Schema:
        return self._schema

    @property
    def bytes_read(self) -> int:
        return self._chunker.bytes_read

    def batches(self) -> Iterator[pa.RecordBatch]:
        first = True
        try:
            chunks = self._chunker.chunks()
            for chunk in _prepend(self._first, chunks):
                # One batch per chunk: polars parses in pieces per thread, and many small
                # batches cost more per-batch overhead downstream than one copy here.
                frame = self._parse(chunk, header=first and self._options.header).rechunk()
                first = False
                table = self._decimals(frame.to_arrow()) if self._decimal_scales else (
                    frame.to_arrow())
                self.rows_read += frame.height
                yield from table.to_batches()
        except (OSError, pa.ArrowException) as error:
            raise unreadable(self.name, "csv", error) from None

    def _parse(self, chunk: bytes, header: bool) -> pl.DataFrame:
        if not header:  # the first chunk was checked before its types were inferred
            _check_quotes(self.name, chunk, self._options.delimiter, self.rows_read)
        schema = dict(zip(self.column_names, self._parse_schema.values(), strict=True))
        try:
            frame = pl.read_csv(
                chunk, separator=self._options.delimiter, has_header=header,
                schema=schema if not header else None,
                schema_overrides=list(self._parse_schema.values()) if header else None,
                infer_schema=not header, try_parse_dates=False, raise_if_empty=False,
            )
        except pl.exceptions.PolarsError as error:
            raise self._locate(chunk, header, error) from None
        if header:
            frame.columns = self.column_names
        return frame

    def _locate(self, chunk: bytes, header: bool, error: Exception) -> FormatError:
        """Name the row and column of a parse failure (the slow path: only on error)."""
        width = len(self.column_names)
        ragged = _ragged_row(self.name, chunk, self._options, header, width, self.rows_read)
        if ragged is not None:
            return ragged
        row = self.rows_read
        for record in _records(chunk, self._options.delimiter, skip_header=header):
            row += 1
            for column, cell, dtype in zip(self.column_names, record,
                                           self._parse_schema.values(), strict=True):
                if cell and not _parses_as(cell, dtype):
                    return FormatError(
                        f"{self.name}: row {row}, column {column!r}: {cell[:40]!r} is not "
                        f"{_type_name(dtype)} like the first rows; pass --dtype float64 "
                        "if the column holds floats"
                    )
        return unreadable(self.name, "csv", _polars_message(error))


def _records(chunk: bytes, delimiter: str, skip_header: bool) -> Iterator[list[str]]:
    text = chunk.decode("utf-8", errors="replace")
    # Only used to locate an error: a cell of any size (polars has no field limit), and
    # a line the csv module cannot split ends the search rather than the program.
    pycsv.field_size_limit(max(len(text), 131072))
    reader = pycsv.reader(io.StringIO(text, newline=""), delimiter=delimiter)
    try:
        if skip_header:
            next(reader, None)
        for record in reader:
            if record:
                yield record
    except pycsv.Error:
        return


def _ragged_row(name: str, chunk: bytes, options: CsvOptions, header: bool = True,
                width: int | None = None, rows_before: int = 0) -> FormatError | None:
    """The error for the first record whose field count differs from the header's."""
    records = _records(chunk, options.delimiter, skip_header=False)
    if width is None:
        first = next(records, None)
        if first is None:
            return None
        width = len(first)
        header = False if options.header else header
        if not options.header:
            rows_before += 1
    elif header:
        next(records, None)
    for row, record in enumerate(records, start=rows_before + 1):
        if len(record) != width:
            return FormatError(f"{name}: row {row} has {len(record)} fields, expected {width}")
    return None


def _check_quotes(name: str, chunk: bytes, delimiter: str, rows_before: int,
                  header: bool = False) -> None:
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
        line = chunk.count(b"\n", 0, at)
        start = chunk.rfind(b"\n", 0, at) + 1
        text = chunk[start:start + 60].split(b"\n", 1)[0].decode("utf-8", "replace")
        where = ("in the header" if header and line == 0
                 else f"near row {rows_before + line + (0 if header else 1)}")
        raise FormatError(
            f"{name}: a quote inside an unquoted field, {where} ({text!r}); quote the "
            "whole field (\"a \"\"b\"\" c\") as CSV requires"
        )


def _prepend(first: bytes, rest: Iterator[bytes]) -> Iterator[bytes]:
    yield first
    yield from rest


def _parses_as(cell: str, dtype: pl.DataType) -> bool:
    text = cell.strip()
    if dtype == pl.Int64:
        try:
            int(text)
        except ValueError:
            return False
        return -(2**63) <= int(text) < 2**63
    if dtype == pl.Float64:
        try:
            float(text)
        except ValueError:
            return False
        return True
    if dtype == pl.Boolean:
        return text.lower() in ("true", "false")
    return True


def _type_name(dtype: pl.DataType) -> str:
    return {pl.Int64: "an int64", pl.Float64: "a float64", pl.Boolean: "a boolean"}.get(
        dtype, str(dtype))  # type: ignore[call-overload]


def file_size(stream: IO[bytes]) -> int | None:
    try:
        return os.fstat(stream.fileno()).st_size
    except (OSError, AttributeError, ValueError, io.UnsupportedOperation):
        return None


class CsvSink:
    """Writes record batches as delimited text with polars, header first."""

    def __init__(self, stream: IO[bytes], schema: pa.Schema, options: CsvOptions,
                 source_name: str = "the input") -> None:
        for field in schema:
            if (pa.types.is_nested(field.type) or pa.types.is_binary(field.type)
                    or pa.types.is_large_binary(field.type)
                    or pa.types.is_fixed_size_binary(field.type)):
                raise UsageError(f"{source_name}: column {field.name!r} is {field.type}, "
                                 "which delimited text cannot hold; write parquet instead")
        self._stream = stream
        self._schema = schema
        self._options = options
        self._header_due = options.header

    def write(self, batch: pa.RecordBatch) -> None:
        frame = pl.from_arrow(_polars_compatible(batch))
        assert isinstance(frame, pl.DataFrame)
        if frame.columns != batch.schema.names:
            frame.columns = batch.schema.names  # polars names an empty name "column_1"
        # Render to memory, then write ourselves: polars turns any exception raised by a
        # Python stream's write() into a bare OSError, which would hide a broken pipe
        # (`| head`) and the OutputError of a full disk behind a traceback.
        text = io.BytesIO()
        frame.write_csv(
            text, separator=self._options.delimiter, include_header=self._header_due,
            null_value="",
        )
        self._stream.write(text.getbuffer())  # a view: no copy of the rendered text
        self._header_due = False

    def close(self) -> None:
        if self._header_due:
            self.write(pa.RecordBatch.from_pylist([], schema=self._schema))


def _polars_compatible(batch: pa.RecordBatch) -> pa.RecordBatch:
    """polars has no float16: print those as their own shortest text instead."""
    if not any(pa.types.is_float16(field.type) for field in batch.schema):
        return batch
    columns = []
    for column in batch.columns:
        if pa.types.is_float16(column.type):
            from cumtool.tables import column_to_numpy

            values, valid = column_to_numpy(column)
            text = [np.format_float_positional(v, unique=True, trim="0") for v in values]
            column = pa.array(text, mask=None if valid is None else ~valid)
        columns.append(column)
    return pa.RecordBatch.from_arrays(columns, names=batch.schema.names)
