"""The streaming engine: reader -> batches -> scan kernel with carried state -> writer.

`run(Request)` is what the CLI calls; `cumtool.scan` is the in-memory entry point. Tables
(CSV, TSV, Parquet) flow as Arrow record batches, arrays (.npy) as numpy blocks along
axis 0. Readers are chosen in sources.py, writers in sinks.py, the table plan lives in
tables.py and the kernels in kernels.py; this module drives the flow between them.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from cumtool import kernels
from cumtool.columns import Selection
from cumtool.errors import DataError, ScanOverflowError, UsageError
from cumtool.formats import (
    OUTPUT_FORMATS,
    ArraySink,
    FileKind,
    TableSink,
    check_format_name,
    kind_from_name,
)
from cumtool.formats.records import size_option
from cumtool.kernels import AXIS_NAMES, overflow_hint
from cumtool.output import open_output
from cumtool.pipeline import (
    BackgroundSink,
    Progress,
    ReversingArraySink,
    ReversingSink,
    prefetch,
    return_freed_batches_to_the_os,
    reversed_batches,
    spooled_blocks,
)
from cumtool.sinks import array_sink, table_sink, write_options
from cumtool.sources import open_source, read_options
from cumtool.view import View

if TYPE_CHECKING:  # pyarrow and polars load only when a table is read or written
    import pyarrow as pa

BLOCK_BYTES = 8 << 20


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
    columns: tuple[Selection, ...] = ()  # -c, as given (cumtool.columns.parse)
    delimiter: str | None = None
    header: bool = True
    indices: bool = False
    overflow: kernels.Overflow = "error"
    skipna: bool = False
    batch_rows: int | None = None  # None: sized for speed; tests use tiny batches
    stdout_is_terminal: bool = False
    progress: bool = False  # a progress bar on stderr for long runs (the CLI: stderr is a tty)
    by: tuple[Selection, ...] = ()
    reset: Selection | None = None
    reverse: bool = False
    exclusive: bool = False
    keep: bool = False
    decimal: bool = False
    exclude: tuple[Selection, ...] = ()
    only_scanned: bool = False
    na: tuple[str, ...] | None = None  # missing-cell markers (None: SEMANTICS.md's list)
    na_rep: str = ""
    out_delimiter: str | None = None
    decimal_comma: bool = False
    encoding: str | None = None  # of CSV/TSV input and output (None: UTF-8)
    table_rows: int | None = 20  # the terminal table: rows shown (first and last half); None: all
    precision: int = 6  # the terminal table: significant digits of floats
    max_record_size: int | None = None  # bytes in one CSV/TSV record (None: 32 MiB)


def run(request: Request) -> None:
    """Read, scan and write as `request` says; raises CumtoolError subclasses on failure."""
    return_freed_batches_to_the_os()
    dtype = kernels.parse_dtype(request.dtype) if request.dtype is not None else None
    if request.indices and request.op not in ("cummax", "cummin"):
        raise UsageError(f"--indices is only for cummax and cummin, not {request.op}")
    if request.batch_rows is not None and request.batch_rows < 1:
        raise UsageError("--batch-rows must be at least 1")
    size_option(request.max_record_size, "--max-record-size")
    read_options(request, "csv")  # the delimiters and their combinations, before any I/O
    write_options(request, "csv")
    with contextlib.ExitStack() as stack:
        source, kind = open_source(request, dtype, stack)
        out_format = _output_format(request, kind)
        if out_format.compression and out_format.format not in ("csv", "tsv"):
            raise UsageError(
                f"{request.output}: {out_format.compression} compression is for csv and tsv "
                f"output only, not {out_format.format}; leave the compression suffix off")
        if hasattr(source, "blocks"):  # an array source
            _run_array(request, dtype, source, out_format, stack)
        else:
            _run_table(request, dtype, source, out_format, stack)


def _output_format(request: Request, kind: FileKind) -> FileKind:
    out = _named_output_format(request, kind)
    if out.format in ("parquet", "npy") and request.output in (None, "-") \
            and request.stdout_is_terminal:
        # As gzip and zstd refuse to write compressed data to a terminal.
        raise UsageError(f"{out.format} output is binary; write it with -o FILE or pipe it")
    return out


def _named_output_format(request: Request, kind: FileKind) -> FileKind:
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

    options = TableOptions(columns=request.columns, exclude=request.exclude, by=request.by,
                           reset=request.reset, keep=request.keep, reverse=request.reverse,
                           only_scanned=request.only_scanned,
                           typed_output=out.format in ("parquet", "npy"))
    plan = TablePlan(request.op, request.axis, dtype, source.schema, source.name, options,
                     getattr(source, "hints", None), **_scan_options(request))
    # The table view shows the scanned columns and their results before the others.
    scanned = set(plan.selected)
    passing = {name for i, name in enumerate(plan.names) if i not in scanned}
    view = View(request.op, "rows" if plan.axis == 0 else "columns", source.name,
                tuple(plan.names[i] for i in plan.selected),
                frozenset(plan.schema.names) - passing, request.table_rows, request.precision)
    if out.format == "npy" and request.indices:
        raise UsageError("--indices with .npy output needs .npy input; write csv or parquet")
    progress = _table_progress(request, source)
    reverse = request.reverse and plan.axis == 0
    with open_output(request.output) as stream, contextlib.closing(progress):
        sink: TableSink = table_sink(request, out, stream, plan.schema, view, source.name)
        if out.format != "table":
            sink = BackgroundSink(sink)
        if reverse:
            sink = ReversingSink(sink, stack)
        with _aborting(sink):
            # Closed with the run, so a failure stops the reader thread at once.
            reader = stack.enter_context(
                contextlib.closing(prefetch(source.batches(plan.parse))))
            batches = _rebatch(reader, request.batch_rows)
            if reverse:
                # Scan from the last row up: spool the input, replay it backwards, and put
                # the results back in input order through a second spool.
                plan.reverse_total, batches = reversed_batches(batches, stack)
            for batch in batches:
                sink.write(plan.apply(batch))
                progress.update(getattr(source, "bytes_read", plan.rows_done))
            sink.close()


def _scan_options(request: Request) -> dict[str, Any]:
    return dict(overflow=request.overflow, skipna=request.skipna, indices=request.indices,
                exclusive=request.exclusive)



def _table_progress(request: Request, source: Any) -> Progress:
    if hasattr(source, "bytes_read"):  # text: bytes of the file as stored (compressed)
        total = getattr(source, "total_bytes", None) or None  # a pipe's size is no total
        return Progress(request.progress, total, "bytes", source.name)
    return Progress(request.progress, getattr(source, "num_rows", None), "rows", source.name)


# Arrays --------------------------------------------------------------------------------

def resolve_array_axis(text: str, ndim: int) -> int:
    key = str(text).strip().lower()
    number: int | None
    if key in AXIS_NAMES:
        number = AXIS_NAMES[key]
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
                          ("--keep", request.keep), ("--columns", request.columns),
                          ("--exclude", request.exclude),
                          ("--only-scanned", request.only_scanned)):
        if given:
            raise UsageError(f"{option} works on tables (CSV, TSV, Parquet), and "
                             f"{source.name} is an array")
    spec = kernels.make_spec(request.op, source.dtype, dtype, what=source.name,
                             **_scan_options(request))
    row_bytes = int(np.prod(shape[1:], dtype=np.int64)) * source.dtype.itemsize if shape else 1
    rows = request.batch_rows or max(1, BLOCK_BYTES // max(row_bytes, 1))
    progress = Progress(request.progress, shape[0] if shape else None, "rows", source.name)
    with open_output(request.output) as stream, contextlib.closing(progress):
        view = View(request.op, f"axis {axis}", source.name, rows=request.table_rows,
                    precision=request.precision)
        sink: ArraySink = array_sink(request, out, stream, shape, spec, view, source.name)
        if out.format != "table":
            sink = BackgroundSink(sink)
        if request.reverse and axis == 0 and shape:
            sink = ReversingArraySink(sink, stack)
        with _aborting(sink):
            carry = kernels.initial_carry(spec, shape[1:]) if shape else None
            _scan_array_blocks(request, source, spec, axis, rows, carry, sink, progress)


def _scan_array_blocks(request: Request, source: Any, spec: kernels.ScanSpec, axis: int,
                       rows: int, carry: kernels.Carry | None, sink: ArraySink,
                       progress: Progress) -> None:
    start = 0
    backwards = request.reverse and axis == 0 and bool(source.shape)
    blocks = spooled_blocks(source.reversed_blocks(rows)) if backwards else source.blocks(rows)
    # Closed with the run, so a failure stops the reader thread at once.
    with contextlib.closing(prefetch(blocks)) as reader:
        for block in reader:
            try:
                if block.ndim == 0:
                    result = kernels.scan_array(spec, block)
                elif axis == 0:
                    assert carry is not None
                    result = kernels.scan_block(spec, block, None, carry)
                    if backwards:
                        result = kernels.flip_result(result, 0, source.shape[0])
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
def _aborting(sink: TableSink | ArraySink) -> Iterator[None]:
    """On failure, let a sink release its writer before the output file is discarded."""
    try:
        yield
    except BaseException:
        sink.abort()
        raise


def _array_index(position: tuple[int, ...], axis: int, start: int) -> tuple[int, ...]:
    """The position of a block's scan (axis moved to the front) in the whole array."""
    index = list(position[1:])
    index.insert(axis, position[0])
    if index:
        index[0] += start
    return tuple(index)
