"""Delimited text (CSV, TSV, plain or compressed) in and out.

Reading: polars' streaming scanner for plain files (the fastest reader we measured), and
pyarrow's incremental reader for standard input and compressed streams, whose column types
are inferred the same way, by polars, from the first megabyte. Only numeric-looking columns
get a numeric type; everything else is kept as text so it passes through unchanged.
Writing: polars' CSV writer, which prints floats as the shortest text that reads back to
the same value.
"""

from __future__ import annotations

import io
from collections.abc import Iterator
from typing import IO

import numpy as np
import polars as pl
import pyarrow as pa
import pyarrow.csv as pacsv

from cumtool.errors import FormatError
from cumtool.formats import CsvOptions, PrefixedStream, unreadable

INFER_ROWS = 10_000
_PEEK_BYTES = 1 << 20
_NUMERIC_POLARS = (pl.Int64, pl.Float64, pl.Boolean)


def _polars_error(name: str, error: Exception) -> FormatError:
    text = str(error).split("\n\n", 1)[0]
    if isinstance(error, pl.exceptions.NoDataError) or "empty" in text.lower():
        return FormatError(f"{name}: the file is empty (no header, no rows)")
    return unreadable(name, "csv", text)


def _column_names(count: int) -> list[str]:
    return [str(i) for i in range(count)]


def _text_overrides(schema: pl.Schema, float_wide_ints: bool) -> dict[str, pl.DataType]:
    """Integers too wide for int64 are read as text (or floats if --dtype asks for floats):
    nothing is silently rounded."""
    overrides: dict[str, pl.DataType] = {}
    for column, dtype in schema.items():
        if dtype.is_integer() and dtype not in (pl.Int64, pl.Int32, pl.Int16, pl.Int8):
            overrides[column] = pl.Float64() if float_wide_ints else pl.String()
        elif dtype not in _NUMERIC_POLARS and not dtype.is_numeric():
            overrides[column] = pl.String()
    return overrides


class CsvFileSource:
    """A plain (uncompressed) delimited file, scanned in batches by polars."""

    def __init__(
        self, path: str, name: str, options: CsvOptions, batch_rows: int,
        float_wide_ints: bool = False,
    ) -> None:
        self.name = name
        self._batch_rows = batch_rows
        scan_args = dict(
            separator=options.delimiter, has_header=options.header,
            infer_schema_length=INFER_ROWS, try_parse_dates=False, raise_if_empty=True,
        )
        try:
            lazy = pl.scan_csv(path, **scan_args)  # type: ignore[arg-type]
            overrides = _text_overrides(lazy.collect_schema(), float_wide_ints)
            if overrides:
                lazy = pl.scan_csv(path, schema_overrides=overrides, **scan_args)  # type: ignore[arg-type]
            if not options.header:
                names = lazy.collect_schema().names()
                lazy = lazy.rename(dict(zip(names, _column_names(len(names)), strict=True)))
            self._lazy = lazy
            self._schema = pl.DataFrame(schema=lazy.collect_schema()).to_arrow().schema
        except pl.exceptions.PolarsError as error:
            raise _polars_error(name, error) from None

    @property
    def schema(self) -> pa.Schema:
        return self._schema

    def batches(self) -> Iterator[pa.RecordBatch]:
        try:
            for frame in self._lazy.collect_batches(chunk_size=self._batch_rows):
                yield from frame.to_arrow().to_batches()
        except pl.exceptions.PolarsError as error:
            raise _polars_error(self.name, error) from None


class CsvStreamSource:
    """Delimited text from a stream (standard input, or a compressed file), read
    incrementally so that a pipeline shows output before its producer ends."""

    def __init__(
        self, stream: IO[bytes], name: str, options: CsvOptions, compression: str | None,
        float_wide_ints: bool = False,
    ) -> None:
        self.name = name
        if compression:
            try:
                stream = pa.CompressedInputStream(pa.PythonFile(stream, mode="r"), compression)
            except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as error:
                raise unreadable(name, "csv", error) from None
        try:
            head = stream.read(_PEEK_BYTES)
            while head and not head.endswith(b"\n"):
                more = stream.read(64 * 1024)
                if not more:
                    break
                head += more
        except (OSError, pa.ArrowInvalid) as error:
            raise unreadable(name, f"{compression}-compressed csv", error) from None
        if not head.strip():
            raise FormatError(f"{name}: the file is empty (no header, no rows)")
        column_types, names = self._infer(head, options, float_wide_ints)
        self._schema = pa.schema([(column, column_types[column]) for column in names])
        read_options = pacsv.ReadOptions(
            block_size=1 << 22,
            column_names=None if options.header else names,
        )
        parse_options = pacsv.ParseOptions(delimiter=options.delimiter, newlines_in_values=True)
        convert_options = pacsv.ConvertOptions(
            column_types=column_types, strings_can_be_null=True, null_values=[""],
            quoted_strings_can_be_null=True, true_values=["true", "True", "TRUE"],
            false_values=["false", "False", "FALSE"],
        )
        try:
            self._reader = pacsv.open_csv(
                PrefixedStream(head, stream), read_options=read_options,
                parse_options=parse_options, convert_options=convert_options,
            )
        except (pa.ArrowInvalid, OSError) as error:
            raise unreadable(name, "csv", error) from None

    def _infer(
        self, head: bytes, options: CsvOptions, float_wide_ints: bool
    ) -> tuple[dict[str, pa.DataType], list[str]]:
        """Infer column types from the first block with polars, as for files."""
        complete = head[: head.rfind(b"\n") + 1] or head
        try:
            frame = pl.read_csv(
                io.BytesIO(complete), separator=options.delimiter, has_header=options.header,
                infer_schema_length=INFER_ROWS, n_rows=INFER_ROWS, try_parse_dates=False,
            )
        except pl.exceptions.PolarsError as error:
            raise _polars_error(self.name, error) from None
        schema = frame.schema
        overrides = _text_overrides(schema, float_wide_ints)
        names = list(schema.names()) if options.header else _column_names(len(schema))
        types: dict[str, pa.DataType] = {}
        for column, polars_name in zip(names, schema.names(), strict=True):
            dtype = overrides.get(polars_name, schema[polars_name])
            types[column] = {
                pl.Int64: pa.int64(), pl.Int32: pa.int64(), pl.Int16: pa.int64(),
                pl.Int8: pa.int64(), pl.Float64: pa.float64(), pl.Float32: pa.float64(),
                pl.Boolean: pa.bool_(),
            }.get(dtype, pa.large_string())  # type: ignore[call-overload]
        return types, names

    @property
    def schema(self) -> pa.Schema:
        return self._schema

    def batches(self) -> Iterator[pa.RecordBatch]:
        while True:
            try:
                batch = self._reader.read_next_batch()
            except StopIteration:
                return
            except (pa.ArrowInvalid, OSError) as error:
                raise unreadable(self.name, "csv", error) from None
            yield batch


class CsvSink:
    """Writes record batches as delimited text with polars, header first."""

    def __init__(self, stream: IO[bytes], schema: pa.Schema, options: CsvOptions) -> None:
        self._stream = stream
        self._schema = schema
        self._options = options
        self._header_due = options.header

    def write(self, batch: pa.RecordBatch) -> None:
        frame = pl.from_arrow(_polars_compatible(batch))
        assert isinstance(frame, pl.DataFrame)
        frame.write_csv(
            self._stream, separator=self._options.delimiter, include_header=self._header_due,
            null_value="",
        )
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
            values = column.to_numpy(zero_copy_only=False)
            text = [np.format_float_positional(v, unique=True, trim="0") for v in values]
            column = pa.array(text, mask=column.is_null().to_numpy(zero_copy_only=False))
        columns.append(column)
    return pa.RecordBatch.from_arrays(columns, names=batch.schema.names)
