"""The streaming engine: reader -> batches -> scan kernel with carried state -> writer.

`run(Request)` is what the CLI calls; `cumtool.scan` is the in-memory entry point. Tables
(CSV, TSV, Parquet) flow as Arrow record batches, arrays (.npy) as numpy blocks along
axis 0; either can be written in any output format through small adapters.
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import IO, TYPE_CHECKING, Any

import numpy as np

from cumtool import kernels
from cumtool.errors import DataError, FormatError, ScanOverflowError, UsageError
from cumtool.formats import (
    INPUT_FORMATS,
    OUTPUT_FORMATS,
    CsvOptions,
    FileKind,
    check_format_name,
    kind_from_magic,
    kind_from_name,
    peekable,
)
from cumtool.kernels import overflow_hint
from cumtool.output import open_output
from cumtool.pipeline import (
    BackgroundSink,
    Progress,
    ReversingArraySink,
    ReversingSink,
    prefetch,
    return_freed_batches_to_the_os,
    reversed_batches,
)

if TYPE_CHECKING:  # pyarrow and polars load only when a table is read or written
    import pyarrow as pa

DEFAULT_BATCH_ROWS = 1 << 17
ARRAY_AXES = {"rows": 0, "index": 0, "columns": 1}
BLOCK_BYTES = 8 << 20
SNIFF_BYTES = 1 << 16  # enough for the first line of almost any table


@dataclass
class Request:
    """One cumtool run, as plain data (the CLI builds it from its options)."""

    op: str
    input: str = "-"
    output: str | None = None  # None or "-": standard output
    from_format: str | None = None
    to_format: str | None = None
    axis: str = "rows"
    dtype: str | None = None
    columns: list[str] | None = None
    delimiter: str | None = None
    header: bool = True
    indices: bool = False
    overflow: kernels.Overflow = "error"
    skipna: bool = False
    batch_rows: int | None = None  # None: sized for speed; tests use tiny batches
    stdout_is_terminal: bool = False
    progress: bool = False  # a progress bar on stderr for long runs (the CLI: stderr is a tty)
    by: list[str] | None = None
    reset: str | None = None
    reverse: bool = False
    exclusive: bool = False
    keep: bool = False
    decimal: bool = False
    extra: dict[str, Any] = field(default_factory=dict)


def run(request: Request) -> None:
    """Read, scan and write as `request` says; raises CumtoolError subclasses on failure."""
    return_freed_batches_to_the_os()
    dtype = kernels.parse_dtype(request.dtype) if request.dtype is not None else None
    if request.indices and request.op not in ("cummax", "cummin"):
        raise UsageError(f"--indices is only for cummax and cummin, not {request.op}")
    if request.batch_rows is not None and request.batch_rows < 1:
        raise UsageError("--batch-rows must be at least 1")
    with contextlib.ExitStack() as stack:
        source, kind = _open_source(request, dtype, stack)
        out_format = _output_format(request, kind)
        if out_format.compression and out_format.format not in ("csv", "tsv"):
            raise UsageError(
                f"{request.output}: {out_format.compression} compression is for csv and tsv "
                f"output only, not {out_format.format}; leave the compression suffix off")
        if hasattr(source, "blocks"):  # an array source
            _run_array(request, dtype, source, out_format, stack)
        else:
            _run_table(request, dtype, source, out_format, stack)


# Input ---------------------------------------------------------------------------------

def _open_source(
    request: Request, dtype: np.dtype | None, stack: contextlib.ExitStack
) -> tuple[Any, FileKind]:
    path: str | None = None
    if request.input == "-":
        name = "standard input"
        stream: IO[bytes] = peekable(_stdin())
        # The first line, as far as it has arrived, tells tsv from csv.
        sniff = stream.peek(SNIFF_BYTES)[:SNIFF_BYTES]  # type: ignore[attr-defined]
        head = sniff[:8]
        kind = kind_from_magic(sniff)
    else:
        path = request.input
        name = path
        if not os.path.exists(path):
            raise DataError(f"{path}: no such file")
        if os.path.isdir(path):
            raise DataError(f"{path}: is a directory, not a file")
        try:
            stream = stack.enter_context(open(path, "rb"))
            sniff = stream.read(SNIFF_BYTES)
            head = sniff[:8]
            stream.seek(0)
        except OSError as error:
            raise DataError(f"{path}: cannot read: {error.strerror or error}") from None
        kind = kind_from_name(path) or kind_from_magic(sniff)
        sniffed = kind_from_magic(head)
        if sniffed.format in ("npy", "parquet") and sniffed.format != kind.format and (
                sniffed.format == "npy" or _has_parquet_footer(stream)):
            kind = sniffed  # a binary format is known by its bytes, whatever the name says
        if kind.compression is None and head.startswith(b"\x1f\x8b"):
            kind = FileKind(kind.format, "gzip")
    if kind.compression == "gzip" and (path is None or kind_from_name(path) is None):
        # Unnamed gzip (standard input, no extension): look inside for tsv, npy, parquet.
        kind = FileKind(_sniff_gzip(stream, seekable=path is not None).format, "gzip")
    if request.from_format:
        fmt = check_format_name(request.from_format, INPUT_FORMATS, "--from")
        kind = FileKind(fmt, kind.compression)
    if kind.format == "npy" and (head.startswith(b"PK") or name.lower().endswith(".npz")):
        raise FormatError(f"{name}: .npz input is not supported; give a .npy file")
    compressed = kind.compression
    if compressed and kind.format != "csv" and kind.format != "tsv":
        import pyarrow as pa

        stream = pa.CompressedInputStream(pa.PythonFile(stream, mode="r"), compressed)
        path = None
    # With a float --dtype, CSV integers to be scanned are read as floats straight away.
    float_columns = None if dtype is None or dtype.kind not in "fc" else (
        request.columns or "all")
    # Each format's module (and its library: polars, pyarrow) loads only when used.
    if kind.format in ("csv", "tsv"):
        from cumtool.formats.csv import CsvSource, file_size

        options = _csv_options(request, kind.format)
        decimal_columns = (request.columns or "all") if request.decimal else None
        return CsvSource(stream, name, options, compression=compressed,
                         float_columns=float_columns, decimal_columns=decimal_columns,
                         total_bytes=file_size(stream)), kind
    if kind.format == "parquet":
        from cumtool.formats.parquet import ParquetSource

        return ParquetSource(path if path else stream, name, _batch_rows(request)), kind
    from cumtool.formats.npy import NpySource

    return NpySource(stream, name, path), kind


def _stdin() -> IO[bytes]:
    """Standard input as a stream of our own: when a run stops early (`| head`, an error)
    the reader thread may still be blocked reading it, and must not then hold the lock of
    sys.stdin, which Python takes at exit (it would abort: "could not acquire lock")."""
    if sys.stdin is None:  # started with standard input closed (`<&-`)
        raise DataError("standard input is closed; give an INPUT file")
    try:
        return open(sys.stdin.fileno(), "rb", closefd=False)
    except (AttributeError, OSError, ValueError):  # not a real file (tests, embedding)
        return sys.stdin.buffer


def _has_parquet_footer(stream: IO[bytes]) -> bool:
    try:
        size = stream.seek(0, 2)
        stream.seek(max(size - 4, 0))
        return stream.read(4) == b"PAR1"
    except OSError:
        return False
    finally:
        stream.seek(0)


def _sniff_gzip(stream: IO[bytes], seekable: bool) -> FileKind:
    """What a gzip stream holds, from the decompressed start of its first bytes."""
    import zlib

    if seekable:
        data = stream.read(1 << 16)
        stream.seek(0)
    else:
        data = stream.peek(1 << 16)  # type: ignore[attr-defined]
    try:
        inner = zlib.decompressobj(16 + zlib.MAX_WBITS).decompress(data, 1 << 16)
    except zlib.error:
        return FileKind("csv")
    return kind_from_magic(inner)


def _csv_options(request: Request, fmt: str) -> CsvOptions:
    delimiter = request.delimiter if request.delimiter is not None else (
        "\t" if fmt == "tsv" else ",")
    delimiter = {"\\t": "\t", "tab": "\t"}.get(delimiter, delimiter)
    if len(delimiter) != 1 or delimiter in "\r\n\"":
        raise UsageError(f"--delimiter {request.delimiter!r} must be one character (use '\\t' "
                         "for tab)")
    return CsvOptions(delimiter=delimiter, header=request.header)


def _batch_rows(request: Request) -> int:
    return request.batch_rows or DEFAULT_BATCH_ROWS


def _output_format(request: Request, kind: FileKind) -> FileKind:
    if request.to_format:
        fmt = check_format_name(request.to_format, OUTPUT_FORMATS, "--to")
        named = kind_from_name(request.output) if request.output not in (None, "-") else None
        return FileKind(fmt, named.compression if named else None)
    if request.output in (None, "-"):
        return FileKind("table") if request.stdout_is_terminal else FileKind(kind.format)
    named = kind_from_name(request.output)
    if named is None:
        raise UsageError(
            f"cannot tell the output format from {request.output!r}; add --to "
            f"({', '.join(OUTPUT_FORMATS)}) or use a known extension (.csv, .tsv, .csv.gz, "
            ".parquet, .npy)"
        )
    return named


# Tables --------------------------------------------------------------------------------

def _rebatch(batches: Iterator[pa.RecordBatch], rows: int | None) -> Iterator[pa.RecordBatch]:
    """Slices batches to at most `rows` rows (zero-copy); None passes them through."""
    for batch in batches:
        if rows is None or batch.num_rows <= rows:
            yield batch
            continue
        for start in range(0, batch.num_rows, rows):
            yield batch.slice(start, rows)


def _run_table(request: Request, dtype: np.dtype | None, source: Any, out: FileKind,
               stack: contextlib.ExitStack) -> None:
    from cumtool.tables import TableOptions, TablePlan

    options = TableOptions(columns=request.columns, by=request.by, reset=request.reset,
                           keep=request.keep, reverse=request.reverse)
    plan = TablePlan(request.op, request.axis, dtype, source.schema, source.name, options,
                     **_scan_options(request))
    caption = f"{request.op} along rows" if plan.axis == 0 else f"{request.op} along columns"
    if out.format == "npy" and request.indices:
        raise UsageError("--indices with .npy output needs .npy input; write csv or parquet")
    progress = _table_progress(request, source)
    with open_output(request.output) as stream, contextlib.closing(progress):
        sink = _table_sink(request, out, stream, plan.schema, f"{caption} of {source.name}")
        if out.format != "table":
            sink = BackgroundSink(sink)
        batches = _rebatch(prefetch(source.batches()), request.batch_rows)
        if request.reverse and plan.axis == 0:
            # Scan from the last row up: spool the input, replay it backwards, and put
            # the results back in input order through a second spool.
            plan.reverse_total, batches = reversed_batches(batches, stack)
            sink = ReversingSink(sink, stack)
        with _aborting(sink):
            for batch in batches:
                sink.write(plan.apply(batch))
                progress.update(getattr(source, "bytes_read", plan.rows_done))
            sink.close()


def _scan_options(request: Request) -> dict[str, Any]:
    return dict(overflow=request.overflow, skipna=request.skipna, indices=request.indices,
                exclusive=request.exclusive)



def _table_progress(request: Request, source: Any) -> Progress:
    total_bytes = getattr(source, "total_bytes", None)
    if total_bytes:
        return Progress(request.progress, total_bytes, "bytes", source.name)
    return Progress(request.progress, getattr(source, "num_rows", None), "rows", source.name)


def _table_sink(request: Request, out: FileKind, stream: IO[bytes], schema: pa.Schema,
                caption: str) -> Any:
    # Each writer's module (and its library) loads only when used.
    if out.format in ("csv", "tsv"):
        from cumtool.formats.csv import CsvSink

        options = _csv_options(
            Request(op=request.op, delimiter=request.delimiter, header=request.header),
            out.format)
        return _CompressingSink(CsvSink, stream, out.compression, schema, options)
    if out.format == "parquet":
        from cumtool.formats.parquet import ParquetSink

        return ParquetSink(stream, schema)
    if out.format == "table":
        from cumtool.formats.pretty import PrettySink

        return PrettySink(stream, caption, console=_terminal_console(request), schema=schema)
    from cumtool.formats.npy import NpyTableSink

    return _TableToNpy(NpyTableSink, stream, schema)


class _CompressingSink:
    """Wraps a sink's stream in a compressor (for .csv.gz) and closes both in order."""

    def __init__(self, sink_type: Any, stream: IO[bytes], compression: str | None,
                 *args: Any) -> None:
        self._compressor = None
        if compression is not None:
            import pyarrow as pa

            self._compressor = pa.CompressedOutputStream(stream, compression)
            stream = self._compressor
        self._sink = sink_type(stream, *args)

    def write(self, batch: pa.RecordBatch) -> None:
        self._sink.write(batch)

    def close(self) -> None:
        self._sink.close()
        if self._compressor is not None:
            self._compressor.close()


def _terminal_console(request: Request) -> Any:
    if request.output in (None, "-") and request.stdout_is_terminal:
        from rich.console import Console

        return Console(highlight=False)
    return None


class _TableToNpy:
    """A table written as a 2-D .npy: every column must be numeric and complete."""

    def __init__(self, sink_type: Any, stream: IO[bytes], schema: pa.Schema) -> None:
        import pyarrow as pa

        from cumtool.tables import numpy_dtype

        dtypes = []
        for f in schema:
            # A decimal's numpy dtype is its scaled int64 (for scans); .npy gets its value.
            dtype = np.dtype(np.float64) if pa.types.is_decimal(f.type) else numpy_dtype(f.type)
            if dtype is None:
                raise UsageError(
                    f".npy output holds numbers only, but column {f.name!r} is {f.type}; "
                    "write csv or parquet instead"
                )
            dtypes.append(dtype)
        self._sink = sink_type(stream, schema.names, np.result_type(*dtypes))

    def write(self, batch: pa.RecordBatch) -> None:
        import pyarrow as pa

        from cumtool.tables import column_to_numpy, decimal_to_float

        columns = []
        for name, column in zip(batch.schema.names, batch.columns, strict=True):
            if pa.types.is_decimal(column.type):
                column = decimal_to_float(column)
            values, valid = column_to_numpy(column)
            if valid is not None:
                row = int(np.flatnonzero(~valid)[0]) + 1
                raise DataError(f"column {name!r} has a missing cell (row {row} of a batch), "
                                "which .npy cannot hold; write csv or parquet instead")
            columns.append(values)
        if columns:
            self._sink.write_rows(np.column_stack(columns))

    def close(self) -> None:
        self._sink.close()


# Arrays --------------------------------------------------------------------------------

def resolve_array_axis(text: str, ndim: int) -> int:
    key = str(text).strip().lower()
    number: int | None
    if key in ARRAY_AXES:
        number = ARRAY_AXES[key]
    else:
        try:
            number = int(key)
        except ValueError:
            number = None
    low, high = (-1, 0) if ndim == 0 else (-ndim, ndim - 1)
    if number is None or not low <= number <= high:
        names = "rows" if ndim <= 1 else "rows, columns"
        raise UsageError(
            f"--axis {text!r} is out of range for a {ndim}-d array; valid: {names}, or an "
            f"integer from {low} to {high}"
        )
    return number % max(ndim, 1)


def _run_array(request: Request, dtype: np.dtype | None, source: Any, out: FileKind,
               stack: contextlib.ExitStack) -> None:
    shape: tuple[int, ...] = source.shape
    axis = resolve_array_axis(request.axis, len(shape))
    for option, given in (("--by", request.by), ("--reset", request.reset),
                          ("--keep", request.keep), ("--columns", request.columns)):
        if given:
            raise UsageError(f"{option} works on tables (CSV, TSV, Parquet), and "
                             f"{source.name} is an array")
    spec = kernels.make_spec(request.op, source.dtype, dtype, what=source.name,
                             **_scan_options(request))
    row_bytes = int(np.prod(shape[1:], dtype=np.int64)) * source.dtype.itemsize if shape else 1
    rows = request.batch_rows or max(1, BLOCK_BYTES // max(row_bytes, 1))
    progress = Progress(request.progress, shape[0] if shape else None, "rows", source.name)
    with open_output(request.output) as stream, contextlib.closing(progress):
        sink = _array_sink(request, out, stream, shape, spec,
                           f"{request.op} along axis {axis} of {source.name}")
        if out.format != "table":
            sink = BackgroundSink(sink)
        if request.reverse and axis == 0 and shape:
            sink = ReversingArraySink(sink, stack)
        carry = kernels.initial_carry(spec, shape[1:]) if shape else None
        with _aborting(sink):
            _scan_array_blocks(request, source, spec, axis, rows, carry, sink, progress)


def _scan_array_blocks(request: Request, source: Any, spec: kernels.ScanSpec, axis: int,
                       rows: int, carry: kernels.Carry | None, sink: Any,
                       progress: Progress) -> None:
    start = 0
    backwards = request.reverse and axis == 0 and bool(source.shape)
    blocks = source.reversed_blocks(rows) if backwards else source.blocks(rows)
    for block in prefetch(blocks):
        try:
            if block.ndim == 0:
                result = kernels.scan_array(spec, block)
            elif axis == 0:
                assert carry is not None
                result = kernels.scan_block(spec, block, None, carry)
                if backwards:
                    result = _back_in_input_order(result, source.shape[0])
            else:
                result = kernels.scan_array(spec, block, axis, reverse=request.reverse)
        except ScanOverflowError as error:
            index = _array_index(error.position, axis, start)
            if backwards:
                index = (source.shape[0] - 1 - index[0], *index[1:])
            raise DataError(f"{source.name}: at index {index}: {error}"
                            f"{overflow_hint(request.overflow)}") from None
        sink.write(result.values, result.indices)
        start += block.shape[0] if block.ndim else 1
        progress.update(start)
    sink.close()


@contextlib.contextmanager
def _aborting(sink: Any) -> Iterator[None]:
    """On failure, let a sink release its writer before the output file is discarded."""
    try:
        yield
    except BaseException:
        abort = getattr(sink, "abort", None)
        if abort is not None:
            abort()
        raise


def _back_in_input_order(result: kernels.ScanResult, total: int) -> kernels.ScanResult:
    """A block scanned backwards (rows flipped), flipped back; indices as input rows."""
    indices = None
    if result.indices is not None:
        indices = np.where(result.indices >= 0, total - 1 - result.indices, -1)[::-1]
    skipped = None if result.skipped is None else result.skipped[::-1]
    return kernels.ScanResult(result.values[::-1], indices, skipped)


def _array_index(position: tuple[int, ...], axis: int, start: int) -> tuple[int, ...]:
    """The position of a block's scan (axis moved to the front) in the whole array."""
    index = list(position[1:])
    index.insert(axis, position[0])
    if index:
        index[0] += start
    return tuple(index)


def _array_sink(request: Request, out: FileKind, stream: IO[bytes], shape: tuple[int, ...],
                spec: kernels.ScanSpec, caption: str) -> Any:
    from cumtool.formats.npy import NpySink

    if out.format == "npy":
        if out.compression:
            raise UsageError("compressed .npy output is not supported; write .npy")
        if request.indices and str(request.output).lower().endswith(".npy"):
            raise UsageError(f"--indices writes values and indices as a .npz archive; name "
                             f"the output .npz, not {request.output}")
        return NpySink(stream, shape, spec.out_dtype, request.indices)
    if out.format == "table":
        from cumtool.formats.pretty import PrettySink

        return _ArrayToPretty(PrettySink(stream, caption, console=_terminal_console(request)),
                              shape)
    if len(shape) > 2:
        raise UsageError(f"a {len(shape)}-d array cannot be written as {out.format}; "
                         "write .npy or use --to table")
    if spec.out_dtype.kind == "c":
        raise UsageError(f"complex values cannot be written as {out.format}; write .npy")
    import pyarrow as pa

    names = [str(i) for i in range(shape[1] if len(shape) == 2 else 1)]
    fields = []
    for name in names:
        fields.append(pa.field(name, pa.from_numpy_dtype(spec.out_dtype)))
        if request.indices:
            fields.append(pa.field(f"{name}_index", pa.int64()))
    schema = pa.schema(fields)
    sink = _table_sink(request, out, stream, schema, caption)
    return _ArrayToTable(sink, schema)


class _ArrayToTable:
    """1-D and 2-D array blocks as table batches: columns named 0, 1, ..."""

    def __init__(self, sink: Any, schema: pa.Schema) -> None:
        self._sink = sink
        self._schema = schema

    def write(self, values: np.ndarray, indices: np.ndarray | None) -> None:
        import pyarrow as pa

        from cumtool.tables import arrow_column

        # Explicit width: reshape(n, -1) cannot infer it for an empty block.
        width = int(np.prod(values.shape[1:], dtype=np.int64))
        values = values.reshape(values.shape[0] if values.ndim else 1, width)
        if indices is not None:
            indices = indices.reshape(values.shape)
        arrays = []
        for i in range(values.shape[1]):
            arrays.append(arrow_column(values[:, i], None))
            if indices is not None:
                arrays.append(arrow_column(indices[:, i], None))
        self._sink.write(pa.RecordBatch.from_arrays(arrays, schema=self._schema))

    def close(self) -> None:
        self._sink.close()


class _ArrayToPretty:
    def __init__(self, sink: Any, shape: tuple[int, ...]) -> None:
        self._sink = sink
        self._shape = shape

    def write(self, values: np.ndarray, indices: np.ndarray | None) -> None:
        self._sink.write_array(self._shape, values, indices)

    def close(self) -> None:
        self._sink.close()
