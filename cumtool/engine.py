"""The streaming engine: reader -> batches -> scan kernel with carried state -> writer.

`run(Request)` is what the CLI calls; `cumtool.scan` is the in-memory entry point. Tables
(CSV, TSV, Parquet) flow as Arrow record batches, arrays (.npy) as numpy blocks along
axis 0. Readers are chosen in sources.py, writers in sinks.py, the table plan lives in
tables.py and the kernels in kernels.py; this module drives the flow between them.
"""

from __future__ import annotations

import contextlib
import dataclasses
import importlib
import io
from collections.abc import Iterator
from typing import IO, TYPE_CHECKING, Any

import numpy as np

from cumtool import kernels, native
from cumtool.choices import AXIS_NAMES
from cumtool.errors import DataError, LateDecimal, ScanOverflowError, UsageError, option
from cumtool.formats import ArraySink, FileKind
from cumtool.formats.registry import DELIMITED, ENGINES
from cumtool.kernels import overflow_hint
from cumtool.ops import INDEXED
from cumtool.output import open_output
from cumtool.pipeline import (
    BackgroundSink,
    Progress,
    ReversingArraySink,
    prefetch,
    spooled_blocks,
)
from cumtool.request import Request
from cumtool.runner import discarding, run_table, write_all
from cumtool.sinks import array_sink
from cumtool.sources import open_source
from cumtool.view import View

if TYPE_CHECKING:  # pyarrow and polars load only when a table is read or written

    pass

BLOCK_BYTES = 8 << 20


def run(request: Request) -> None:
    """Read, scan and write as `request` says; raises CumtoolError subclasses on failure."""
    request.check()  # every option and combination, before any I/O
    with native.threads(request.threads):
        _run_with_reruns(request)


def _run_with_reruns(request: Request) -> None:
    while True:
        try:
            if request.engine == "dask":  # dask loads only here
                from cumtool import distributed

                return distributed.run(request)
            return _run(request)
        except LateDecimal as late:
            # A decimal after the judged rows of an integer column: where the output is a
            # file (staged, so nothing of this run is left) and the input a file that can
            # be read again, the scan runs again with that column read as float64.
            if not _can_rerun(request, late.column):
                raise
            from cumtool.notes import note

            note(request, f"{late.where}; scanning the input again with that column read "
                          "as float64")
            request = dataclasses.replace(request, widen=(*request.widen, late.column))


def _can_rerun(request: Request, column: int) -> bool:
    """Whether a run stopped by a late decimal in `column` can run again from the start:
    its output a file (not standard output, a FIFO or a device) and its input one regular
    file, no --state (whose runs carry on where the last one stopped), and no --dtype or
    --decimal (which fix the types asked for)."""
    import os
    import stat

    from cumtool import inputs, remote
    from cumtool.output import staged_output

    if (column in request.widen or request.state is not None or request.dtype is not None
            or request.decimal or not staged_output(request.output) or request.input == "-"
            or request.inputs or inputs.is_dataset((request.input,))
            or inputs.per_input_output(request.output)
            or remote.is_url(request.input)):
        return False
    try:  # the output is new or a file (staged_output): the input must be a file too
        return stat.S_ISREG(os.stat(request.input).st_mode)
    except FileNotFoundError:
        return True  # gone since it was read: the rerun's read says so
    except (OSError, ValueError):
        return False


def _run(request: Request) -> None:
    stdin = None
    for package, module in ENGINES:  # a format's own engine (CSV's: no polars, no pyarrow)
        engine = importlib.import_module(f"cumtool.formats.{package}.{module}")
        done, stdin = engine.run(request, stdin)
        if done:
            return
    dtype = kernels.parse_dtype(request.dtype) if request.dtype is not None else None
    with contextlib.ExitStack() as stack:
        from cumtool import datasets, state

        resume = state.begin(request, stack)  # --state: lock, recover, fingerprint
        if resume is not None:
            stack.enter_context(discarding(resume.commit))
            stdin = resume.stdin if resume.stdin is not None else stdin
        if datasets.is_dataset(request):  # several inputs, a glob, a directory, -o DIR/
            if request.share:
                raise UsageError(f"{option('share')} reads one input twice; give one file "
                                 "(concatenate several first), and one output")
            datasets.run(request, dtype, stack, resume)
            return
        span = state.span_of(resume, request.input)
        if span is not None and request.growing and span.end == 0:
            # A log with no whole line yet (its header being written): that line waits,
            # as state.begin's note says; nothing is written and the state stays as it
            # was (a run that scans nothing changes no state).
            return
        finals = None
        if request.share:  # a first pass finds each group's final value
            from cumtool.runner import share_finals

            stdin = _spooled(request, stdin, stack)
            source, kind = open_source(request, dtype, stack, _again(stdin), span)
            if source.layout != "table":
                from cumtool.formats.csv.wide import WIDE_COLUMNS

                raise UsageError(f"{option('share')} works on tables (CSV, TSV, Parquet) "
                                 "read as a whole; "
                                 + (f"{source.name} is an array" if source.layout == "array"
                                    else f"{source.name} is read column group by column "
                                         f"group: select at most {WIDE_COLUMNS:,} columns "
                                         "first (e.g. with xsv select or cut)"))
            finals = share_finals(request, dtype, source.table(),
                                  request.output_format(kind), stack,
                                  text_input=kind.format in DELIMITED)
            stdin = _again(stdin)
        source, kind = open_source(request, dtype, stack, stdin, span)
        out_format = request.output_format(kind)
        if source.layout == "wide":  # CSV too wide for whole-width batches
            from cumtool.widerun import run_wide

            run_wide(request, dtype, source, out_format, stack)
        elif source.layout == "array":
            _run_array(request, dtype, source.array(), out_format, stack)
        else:
            run_table(request, dtype, source.table(), out_format, stack, resume,
                      text_input=kind.format in DELIMITED, finals=finals)


def _spooled(request: Request, stdin: IO[bytes] | None, stack: contextlib.ExitStack
             ) -> IO[bytes] | None:
    """--share reads its input twice: standard input is copied to a temporary file
    first, a block at a time (memory stays bounded), and read back from there."""
    if request.input != "-":
        return None
    import shutil
    import tempfile

    from cumtool.sources import stdin_stream

    spool = stack.enter_context(tempfile.TemporaryFile(prefix="cumtool-share-"))
    try:
        shutil.copyfileobj(stdin if stdin is not None else stdin_stream(), spool, 1 << 20)
        spool.flush()
    except OSError as error:
        raise DataError(f"standard input: cannot keep it for {option('share')}'s second "
                        f"pass in a temporary file (TMPDIR): {error.strerror or error}"
                        ) from None
    return spool


def _again(spool: IO[bytes] | None) -> IO[bytes] | None:
    """The spooled standard input from its start (None: the input is a file)."""
    if spool is None:
        return None
    spool.seek(0)
    return io.BufferedReader(_Unclosed(spool))


class _Unclosed(io.RawIOBase):
    """The spool as a stream whose closing leaves the spool open for the next pass."""

    def __init__(self, spool: IO[bytes]) -> None:
        self._spool = spool

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        data = self._spool.read(len(buffer))
        buffer[:len(data)] = data
        return len(data)


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
    from cumtool.options import refuse_unwritten

    refuse_unwritten(request.given(), out.format)
    shape: tuple[int, ...] = source.shape
    axis = resolve_array_axis(request.axis, len(shape))
    kernels.refuse_zero_d(request.ops, len(shape), source.name)
    scan = request.scan_options()
    indices = scan.pop("indices")
    specs = [kernels.make_spec(op, source.dtype, dtype, what=source.name, **scan,
                               indices=indices and op in INDEXED)
             for op in request.ops]
    if len(specs) > 1 and (out.format != "npy" or str(request.output).lower().endswith(".npy")):
        raise UsageError(f"several ops on an array write a .npz, one array per op; name the "
                         f"output .npz (or use --to npy into a pipe), not "
                         f"{request.output or out.format}")
    row_bytes = int(np.prod(shape[1:], dtype=np.int64)) * source.dtype.itemsize if shape else 1
    rows = request.batch_rows or max(1, BLOCK_BYTES // max(row_bytes, 1))
    progress = Progress(request.progress, shape[0] if shape else None, "rows", source.name)
    reverse = request.reverse and axis == 0 and bool(shape)
    with open_output(request.output) as stream, contextlib.closing(progress):
        if len(specs) == 1:
            view = View(request.op, f"axis {axis}", source.name, rows=request.table_rows,
                        precision=request.precision)
            sink: ArraySink = array_sink(request, out, stream, shape, specs[0], view,
                                         source.name)
            if out.format != "table":
                sink = BackgroundSink(sink)
            each: list[ArraySink] = [sink]
            container: Any = None
        else:
            from cumtool.formats.npy.npy import NpzOfOps

            container = NpzOfOps(stream, shape, [(s.op, s.out_dtype, s.indices) for s in specs])
            each = list(container.writers)
        if reverse:
            each = [ReversingArraySink(w, stack) for w in each]
        done = [0]  # rows scanned, for the progress bar
        write_all(_Together(each, container),
                  _array_results(request, source, specs, axis, rows, done),
                  lambda: progress.update(done[0]))


class _Together:
    """The sinks of the ops of one run (one, or several into a .npz container): a
    block's results, one per op, each to its sink; closed and aborted together, then
    their container."""

    def __init__(self, sinks: list[ArraySink], container: Any) -> None:
        self._sinks = sinks
        self._container = container

    def write(self, results: list[kernels.ScanResult]) -> None:
        for sink, result in zip(self._sinks, results, strict=True):
            sink.write(result.values, result.indices)

    def close(self) -> None:
        for sink in self._sinks:
            sink.close()
        if self._container is not None:
            self._container.close()

    def abort(self) -> None:
        for sink in self._sinks:
            sink.abort()
        if self._container is not None:
            self._container.abort()


def _array_results(request: Request, source: Any, specs: list[kernels.ScanSpec],
                   axis: int, rows: int, done: list[int]
                   ) -> Iterator[list[kernels.ScanResult]]:
    """The scan of the array block by block along axis 0, each op with its own carried
    state: each block's results, one per op, for runner.write_all (the loop every local
    run writes through). `done[0]`: the rows scanned so far."""
    shape = source.shape
    carries = [kernels.initial_carry(s, shape[1:]) if shape else None for s in specs]
    backwards = request.reverse and axis == 0 and bool(shape)
    blocks = spooled_blocks(source.reversed_blocks(rows)) if backwards else source.blocks(rows)
    # Closed with the run, so a failure stops the reader thread at once.
    with contextlib.closing(prefetch(blocks)) as reader:
        for block in reader:
            results = []
            for spec, carry in zip(specs, carries, strict=True):
                try:
                    if block.ndim == 0:
                        result = kernels.scan_array(spec, block)
                    elif axis == 0:
                        assert carry is not None
                        result = kernels.scan_block(spec, block, None, carry)
                        if backwards:
                            result = kernels.flip_result(result, 0, shape[0])
                    else:
                        result = kernels.scan_array(spec, block, axis, reverse=request.reverse)
                except ScanOverflowError as error:
                    index = array_index(error.position, axis, done[0])
                    if backwards:
                        index = (shape[0] - 1 - index[0], *index[1:])
                    raise DataError(f"{source.name}: at index {index}: {error.raw}"
                                    f"{overflow_hint(request.overflow, error)}") from None
                results.append(result)
            done[0] += block.shape[0] if block.ndim else 1
            yield results


def array_index(position: tuple[int, ...], axis: int, start: int) -> tuple[int, ...]:
    """The position of a block's scan (axis moved to the front) in the whole array."""
    index = list(position[1:])
    index.insert(axis, position[0])
    if index:
        index[0] += start
    return tuple(index)
