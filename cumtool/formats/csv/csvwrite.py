"""Writing delimited text: CsvSink, through which the narrow and the wide paths write, and
CompressingSink, which puts a compressor (.csv.gz) between a sink and its stream.

polars' CSV writer writes the numbers (the shortest text that reads back to the same
value); text cells are quoted by cumtool, and only where the output needs it. A batch of
int and float64 columns alone is written by the compiled pipeline's C loop instead
(`_csvtext.assemble`: the same bytes, tests/test_csvwrite.py), and polars is not loaded
for it (0.1-0.2 s of a run's start-up). That loop releases the GIL: a run's sink (given
`threads`) makes several batches' text at once, a few batches ahead, on as many threads
(pipeline.RenderedAhead), and writes them in order: the same bytes at every thread count."""

from __future__ import annotations

import contextlib
import io
from types import ModuleType
from typing import IO, TYPE_CHECKING, Any, Literal

import numpy as np
import pyarrow as pa

from cumtool._ext import load
from cumtool.columnar import as_int64_or_float64, column_to_numpy, validity
from cumtool.errors import UsageError
from cumtool.formats.csv import dialect
from cumtool.native import ahead_workers
from cumtool.output import DiscardableStream
from cumtool.pipeline import RenderedAhead, drain

if TYPE_CHECKING:
    import polars as pl

    from cumtool.formats import CsvWriteOptions

TEXT: ModuleType | None = load("_csvtext")  # None: the Python twin (cumtool._ext)
BY_C = True  # number batches by _csvtext.assemble where built (tests turn it off)
WRITE_AHEAD = 8  # number batches' text made at once, at most (a batch ~4 MB of text)
_NO_CELLS = np.empty(0, dtype=np.int64)


def polars_compatible(batch: pa.RecordBatch) -> pa.RecordBatch:
    """polars has no float16 and no decimal256 (precision over 38: BigQuery's BIGNUMERIC),
    and takes no zone that is a fixed offset (+05:30, as pandas writes a
    datetime.timezone): print those as their own text instead, float16 as its shortest, a
    decimal with its scale's digits, a timestamp as polars prints one with a zone (its
    wall clock, then +0530)."""
    if not any(_as_text(field.type) for field in batch.schema):
        return batch
    columns = []
    for column in batch.columns:
        if pa.types.is_float16(column.type):
            from cumtool.columnar import column_to_numpy

            values, valid = column_to_numpy(column)
            text = [np.format_float_positional(v, unique=True, trim="0") for v in values]
            column = pa.array(text, mask=None if valid is None else ~valid)
        elif pa.types.is_decimal256(column.type):
            column = column.cast(pa.string())  # as polars writes a decimal: 1.50
        elif _as_text(column.type):
            column = _offset_stamps_text(column)
        columns.append(column)
    return pa.RecordBatch.from_arrays(columns, names=batch.schema.names)


def _as_text(kind: pa.DataType) -> bool:
    """A number or a time that polars_compatible writes as text (not quoted as text is)."""
    from cumtool.columnar import fixed_offset

    return pa.types.is_float16(kind) or pa.types.is_decimal256(kind) or (
        pa.types.is_timestamp(kind) and fixed_offset(kind.tz) is not None)


# polars' text of a time with a zone, by unit (it holds seconds as milliseconds).
_STAMP_FORMATS = {"s": "%Y-%m-%dT%H:%M:%S%.3f", "ms": "%Y-%m-%dT%H:%M:%S%.3f",
                  "us": "%Y-%m-%dT%H:%M:%S%.6f", "ns": "%Y-%m-%dT%H:%M:%S%.9f"}


def _offset_stamps_text(column: pa.Array) -> pa.Array:
    import polars as pl

    from cumtool.columnar import fixed_offset, local_stamps

    offset = fixed_offset(column.type.tz)
    assert offset is not None
    local, missing = local_stamps(column, offset)
    sign = "-" if offset < 0 else "+"
    zone = f"{sign}{abs(offset) // 3600:02d}{abs(offset) % 3600 // 60:02d}"
    clock = pa.array(local, type=pa.timestamp(column.type.unit),
                     mask=missing)
    text = pl.Series(clock).dt.to_string(_STAMP_FORMATS[column.type.unit]) + zone
    return text.to_arrow()


class CsvSink:
    """Writes record batches as delimited text: the header as the input had it, numbers
    by polars, text cells as they were read, quoted only where the output needs it."""

    def __init__(self, stream: IO[bytes], schema: pa.Schema, options: CsvWriteOptions,
                 source_name: str = "the input", threads: int = 1) -> None:
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
        # A cell needs quotes when it holds the delimiter, a quote or a line end; an empty
        # cell too when it is a row's only one (an empty line would read as no row).
        self._needs_quotes = rf'[\x{{{ord(options.delimiter):X}}}"\r\n]'
        self._single = len(schema) == 1
        self._null = self._null_text()
        # Number batches' text made on `threads` threads (at most the cores; --threads
        # by the caller), written in order; one thread: each written at once.
        self._ahead = RenderedAhead(stream, ahead_workers(threads, WRITE_AHEAD),
                                    "cumtool-csv-write")

    def set_single(self, alone: bool) -> None:
        """Whether this sink's one column is a row's only cell (the wide path renders a
        group of columns at a time: one of many is not alone)."""
        self._single = alone and len(self._schema) == 1
        self._null = self._null_text()

    def _null_text(self) -> str:
        """How a missing number is written: --na-rep, quoted where the output needs it (a
        delimiter in it would add a field); else empty, or "" as a row's only cell."""
        return self.quote(self._options.na_rep) if self._options.na_rep or self._single else ""

    def quote(self, text: str) -> str:
        """A cell as the output needs it: quoted if it holds the delimiter, a quote or a
        line end, or if it is empty and a row's only cell."""
        return dialect.quote(text, self._options.delimiter, self._single)

    def write(self, batch: pa.RecordBatch) -> None:
        if self._header_due:
            header = self._options.delimiter.join(self.quote(n) for n in self._schema.names)
            self._stream.write(self._encode((header + "\n").encode()))
            self._header_due = False
        if not batch.num_rows:
            return
        plan = self._number_plan(batch)
        if plan is not None:
            rows, single = batch.num_rows, self._single
            self._ahead.put_into(lambda into: self._assemble(rows, plan, single, into))
            return
        self._ahead.drain()  # the batches before this one first
        import polars as pl

        names = [f"c{i}" for i in range(batch.num_columns)]
        frame = pl.from_arrow(pa.RecordBatch.from_arrays(
            polars_compatible(batch).columns, names=names))
        assert isinstance(frame, pl.DataFrame)
        # Render to memory, then write ourselves: polars turns any exception raised by a
        # Python stream's write() into a bare OSError, which would hide a broken pipe
        # (`| head`) and the OutputError of a full disk behind a traceback.
        rendered = io.BytesIO()
        if self._options.na_rep or self._single:
            # A missing cell written as text of its own, or a lone one: empty text must
            # not read as that text, nor as a blank line; so text is quoted here.
            # float16 comes as text (polars_compatible) but is a number: a missing one
            # is --na-rep, as in any other scanned column.
            halves = {f"c{i}" for i, field in enumerate(batch.schema)
                      if _as_text(field.type)}
            text = [n for n, dtype in frame.schema.items() if n not in halves and (
                dtype in (pl.String, pl.Categorical) or isinstance(dtype, pl.Enum))]
            if text:
                frame = self._quote_columns(frame, text)
            quoting: Literal["never", "necessary"] = "never"
        else:
            # An empty cell read from text is null and written empty; polars quotes the
            # rest where needed (a delimiter, a quote, a line end; "" stays "").
            quoting = "necessary"
        frame.write_csv(rendered, separator=self._options.delimiter, include_header=False,
                        null_value=self._null, quote_style=quoting,
                        decimal_comma=self._options.decimal_comma)
        self._stream.write(self._encode(rendered.getbuffer()))

    def _number_plan(self, batch: pa.RecordBatch) -> list[Any] | None:
        """A batch of int and float64 columns as _csvtext.assemble takes it, to write its
        lines as polars writes them (numpy work, with the GIL: done before the text is made
        on another thread); None for any other batch (or --decimal-comma)."""
        if TEXT is None or not BY_C or self._options.decimal_comma:
            return None
        null = self._null.encode()
        plan = []
        for column in batch.columns:
            kind = column.type
            if not (pa.types.is_integer(kind) or pa.types.is_float64(kind)):
                return None  # float32 and float16 have digits of their own
            values = as_int64_or_float64(column_to_numpy(column)[0])
            if values is None:
                return None
            present = validity(column)
            plan.append((np.ascontiguousarray(values),
                         None if present is None else np.ascontiguousarray(~present), null))
        return plan

    def _assemble(self, rows: int, plan: list[Any], single: bool,
                  into: bytearray) -> bytes | int:
        """A number batch's lines (without the GIL): written into `into` (their size), or
        bytes in --encoding's."""
        assert TEXT is not None
        made: bytes | int = TEXT.assemble(b"", _NO_CELLS, _NO_CELLS,
                                          np.empty(0, dtype=np.uint8), rows, rows, plan,
                                          self._options.delimiter, True, single, into)
        if self._options.encoding is None:
            return made
        text = memoryview(into)[:made] if isinstance(made, int) else made
        return bytes(self._encode(text))

    def _quote_columns(self, frame: pl.DataFrame, text: list[str]) -> pl.DataFrame:
        """The text columns quoted where needed, stacked into one column for a single
        polars expression: one expression per column cost about 18 kB and 0.1 ms each
        (20,000 text columns: 360 MB, now 30 MB)."""
        import polars as pl

        rows = frame.height
        stacked = pl.concat([frame.get_column(n).cast(pl.String) for n in text], rechunk=True)
        quoted = pl.DataFrame({"t": stacked}).select(self._quoted(pl.col("t"))).to_series()
        position = {name: k for k, name in enumerate(text)}
        return pl.DataFrame([
            quoted.slice(position[n] * rows, rows).alias(n) if n in position
            else frame.get_column(n) for n in frame.columns])

    def _encode(self, text: bytes | memoryview) -> bytes | memoryview:
        """UTF-8 as rendered, or --encoding's: cells read in it come out byte for byte."""
        if self._options.encoding is None:
            return text  # a view: no copy of the rendered text
        try:
            return bytes(text).decode("utf-8").encode(self._options.encoding)
        except UnicodeEncodeError as error:
            if error.encoding != "charmap":
                raise
            # cp1252's codec (a character map) names itself "charmap": name it as given
            raise UnicodeEncodeError(self._options.encoding, error.object, error.start,
                                     error.end, error.reason) from None

    def _quoted(self, cells: pl.Expr) -> pl.Expr:
        import polars as pl

        cells = cells.fill_null("")  # an empty cell: --na-rep is for scanned columns
        quoted = pl.lit('"') + cells.str.replace_all('"', '""', literal=True) + pl.lit('"')
        needs = cells.str.contains(self._needs_quotes)
        if self._single:
            needs = needs | (cells == "")
        return pl.when(needs).then(quoted).otherwise(cells)

    def close(self) -> None:
        self._ahead.close()  # the stream is the run's: it is not closed here
        if self._header_due:
            self.write(pa.RecordBatch.from_pylist([], schema=self._schema))

    def drain(self) -> None:
        """Write the text made ahead (a failed run's rows before the failure)."""
        self._ahead.drain()

    def abort(self) -> None:
        self._ahead.abort()


class CompressingSink:
    """Wraps a sink's stream in a compressor (for .csv.gz) and closes both in order."""

    def __init__(self, sink_type: Any, stream: IO[bytes], compression: str | None,
                 *args: Any) -> None:
        self._compressor: Any = None
        self._out: DiscardableStream | None = None
        if compression is not None:
            import pyarrow as pa

            self._out = DiscardableStream(stream)
            self._compressor = pa.CompressedOutputStream(self._out, compression)
            stream = self._compressor
        try:
            self._sink = sink_type(stream, *args)
        except BaseException:
            self.abort()
            raise

    def write(self, batch: pa.RecordBatch) -> None:
        self._sink.write(batch)

    def close(self) -> None:
        self._sink.close()
        if self._compressor is not None:
            self._compressor.close()

    def drain(self) -> None:
        drain(self._sink)

    def abort(self) -> None:
        # text made ahead is dropped, not written (a writer that failed to start, or
        # one that makes none, has nothing to drop)
        abort = getattr(getattr(self, "_sink", None), "abort", None)
        if abort is not None:
            abort()
        # The compressor must be closed now, its trailer dropped, or it writes into a
        # closed file when collected.
        if self._compressor is not None and self._out is not None:
            import pyarrow as pa

            self._out.discard()
            with contextlib.suppress(pa.ArrowException, OSError, ValueError):
                self._compressor.close()
