"""The streaming engine: reader -> batches -> scan kernel with carried state -> writer.

`run(Request)` is what the CLI calls; `cumtool.scan` is the in-memory entry point. Tables
(CSV, TSV, Parquet) flow as Arrow record batches, arrays (.npy) as numpy blocks along
axis 0. Readers are chosen in sources.py, writers in sinks.py, the table plan lives in
tables.py and the kernels in kernels.py; this module drives the flow between them.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

import numpy as np

from cumtool import kernels
from cumtool.choices import AXIS_NAMES
from cumtool.errors import DataError, ScanOverflowError, UsageError
from cumtool.formats import (
    ArraySink,
    FileKind,
    TableSink,
    kind_from_name,
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
    spooled_blocks,
)
from cumtool.request import Request
from cumtool.sinks import array_sink, table_sink
from cumtool.sources import open_source
from cumtool.view import View

if TYPE_CHECKING:  # pyarrow and polars load only when a table is read or written
    import pyarrow as pa

BLOCK_BYTES = 8 << 20


def run(request: Request) -> None:
    """Read, scan and write as `request` says; raises CumtoolError subclasses on failure."""
    return_freed_batches_to_the_os()
    request.check()  # every option and combination, before any I/O
    dtype = kernels.parse_dtype(request.dtype) if request.dtype is not None else None
    with contextlib.ExitStack() as stack:
        source, kind = open_source(request, dtype, stack)
        out_format = _output_format(request, kind)
        if hasattr(source, "blocks"):  # an array source
            _run_array(request, dtype, source, out_format, stack)
        else:
            _run_table(request, dtype, source, out_format, stack)


def _output_format(request: Request, kind: FileKind) -> FileKind:
    """--to, else -o's extension, else a table on a terminal or the input's format (the
    names were checked by Request.check)."""
    named = kind_from_name(request.output) if request.output not in (None, "-") else None
    if request.to_format:
        return FileKind(request.to_format.lower(), named.compression if named else None)
    if named is not None:
        return named
    return FileKind("table") if request.stdout_is_terminal else FileKind(kind.format)


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
    from cumtool.tables import TableOptions, make_plan

    options = TableOptions(columns=request.columns, exclude=request.exclude, by=request.by,
                           reset=request.reset, keep=request.keep, reverse=request.reverse,
                           only_scanned=request.only_scanned,
                           typed_output=out.format in ("parquet", "npy"))
    plan = make_plan(request.op, request.axis, dtype, source.schema, source.name, options,
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

        def read() -> Iterator[pa.RecordBatch]:
            # Closed with the run, so a failure stops the reader thread at once.
            reader = stack.enter_context(
                contextlib.closing(prefetch(source.batches(plan.parse, plan.text_unused))))
            return _rebatch(reader, request.batch_rows)

        scan_batches(plan, read, sink, reverse, stack,
                     lambda: progress.update(getattr(source, "bytes_read", plan.rows_done)))


def scan_batches(plan: Any, read: Callable[[], Iterator[pa.RecordBatch]], sink: TableSink,
                 reverse: bool, stack: contextlib.ExitStack,
                 done: Callable[[], None] = lambda: None) -> None:
    """The table flow that files and cumtool.scan share: batches -> plan -> sink, which
    is aborted on any failure. --reverse scans from the last row up: the input is spooled
    and replayed backwards, and the results go back into input order through a second
    spool. `done` follows each batch (the progress bar)."""
    if reverse:
        sink = ReversingSink(sink, stack)
    with _aborting(sink):
        batches = read()
        if reverse:
            plan.reverse_total, batches = reversed_batches(batches, stack)
        for batch in batches:
            sink.write(plan.apply(batch))
            done()
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
    for option, given in request.table_only().items():
        if given:
            raise UsageError(f"{option} works on tables (CSV, TSV, Parquet), and "
                             f"{source.name} is an array")
    if len(request.ops) > 1:
        raise UsageError(f"several ops in one pass work on tables (CSV, TSV, Parquet), and "
                         f"{source.name} is an array; run one op at a time")
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
