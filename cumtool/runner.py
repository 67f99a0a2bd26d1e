"""The table run: reader -> batches -> plan (scan kernels with carried state) -> writer.

`run_table` drives one table source (one file, or several inputs as one ChainSource) to
one output; `run_engine` drives a format's own engine (the CSV format's compiled
pipeline and its Python twin, formats/csv/fast.py) through the same loop, and hands the
run to `run_table` where that engine is unsure; `scan_batches` is the loop they share
with `cumtool.scan`, the wide path and -o DIR/ (datasets.py); `rebatch`,
`table_progress` and `discarding` serve the other drivers.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Generator, Iterable, Iterator
from typing import IO, TYPE_CHECKING, Any, Protocol

from cumtool.commit import Commit, check_stop
from cumtool.errors import CumtoolError, DataError, ScanOverflowError, UsageError, option
from cumtool.formats import FileKind, Handover, TableSink, TableSource, group_rows
from cumtool.formats.registry import DELIMITED, TYPED_OUTPUTS, format_named
from cumtool.output import open_output, staged_output
from cumtool.pipeline import (
    BackgroundSink,
    Progress,
    Regrouped,
    ReversingSink,
    drain,
    prefetch,
    reversed_batches,
)
from cumtool.request import Request
from cumtool.sinks import table_sink
from cumtool.view import View

if TYPE_CHECKING:  # pyarrow loads only when a table is read or written
    import numpy as np
    import pyarrow as pa

    from cumtool.state import Resume
    from cumtool.tables import TableOptions


def table_options(request: Request, out: FileKind, text_input: bool = False
                  ) -> TableOptions:
    """What the table plan takes from the request, for every engine and driver. A
    chart's --x column is drawn as it is: never scanned, whatever -c says. From a text
    input (CSV, TSV), the missing-cell markers apply to text columns cumnunique reads."""
    from cumtool.tables import TableOptions

    exclude = request.exclude
    if request.x is not None and request.x not in exclude:
        exclude = (*exclude, request.x)
    return TableOptions(columns=request.columns, exclude=exclude, by=request.by,
                        reset=request.reset, keep=request.keep, reverse=request.reverse,
                        only_scanned=request.only_scanned,
                        typed_output=out.format in TYPED_OUTPUTS,
                        text_na=text_markers(request, text_input),
                        period=request.period_of(), time=request.time, share=request.share,
                        times=_times(request))


def text_markers(request: Request, text_input: bool) -> frozenset[str]:
    """The cell texts that are missing cells in the text columns cumnunique compares: a
    delimited text input's --na markers (its reader has made them missing in number
    columns already); none for typed inputs."""
    from cumtool.formats import DEFAULT_NA

    if not text_input:
        return frozenset()
    return frozenset(request.na if request.na is not None else DEFAULT_NA)


def _times(request: Request) -> Any:
    """ewma --times COL, as a column selection (None: not given)."""
    given = request.params.get("times")
    if given is None:
        return None
    from cumtool.columns import parse

    return parse(str(given), "--times")


@contextlib.contextmanager
def discarding(commit: Commit) -> Iterator[None]:
    """A failed run's files are removed, never put in place."""
    try:
        yield
    except BaseException:
        commit.discard()
        raise


# Tables --------------------------------------------------------------------------------

def rebatch(batches: Iterator[pa.RecordBatch], rows: int | None) -> Iterator[pa.RecordBatch]:
    """Slices batches to at most `rows` rows (zero-copy); None passes them through."""
    for batch in batches:
        if rows is None or batch.num_rows <= rows:
            yield batch
            continue
        for start in range(0, batch.num_rows, rows):
            yield batch.slice(start, rows)


def note_left_out(request: Request, plan: Any, text_input: bool) -> None:
    """The notes of columns of numbers the default selection left out for a text cell
    (cumtool.notes.left_out), for a table plan of delimited text, or of JSON Lines (whose
    hints say mostly_numbers; other typed inputs' never do, and load no notes): every
    driver of a table says them (run_table, and -o DIR/'s in datasets.py)."""
    from cumtool.tables import MultiPlan

    single = plan.plans[0] if isinstance(plan, MultiPlan) else plan
    if not text_input and not any(hint.mostly_numbers for hint in single.hints):
        return  # (nor its module loaded)
    if not request.widen:  # a rerun said it the first time
        from cumtool.notes import left_out

        left_out(request, single.names, single.hints, single.scanned,
                 {*single.by, *([single.reset] if single.reset is not None else [])})


def run_table(request: Request, dtype: np.dtype | None, source: Any, out: FileKind,
               stack: contextlib.ExitStack, resume: Resume | None = None,
               text_input: bool = False, finals: list[Any] | None = None) -> None:
    """`text_input`: the input is delimited text (CSV, TSV), whose --na markers are
    missing cells in text columns too. `finals`: --share's second pass, the final value
    of each group, column and op that share_finals found.

    Where the source learns its schema from the whole input first (JSON Lines), the run
    starts with the schema of its first lines (`source.provisional()`) while the rest is
    read, its output held back until the whole input's schema is known: kept where it is
    the same, else dropped unwritten and the run made again (`_speculate`)."""
    if (resume is None and finals is None and not request.reverse and not request.progress
            and out.format != "table"):
        provisional = source.provisional()
        if provisional is not None and _speculate(request, dtype, source, provisional, out,
                                                  text_input):
            return
    _run_table(request, dtype, source, source.schema, source.batches, out, stack, resume,
               text_input, finals)


def _speculate(request: Request, dtype: np.dtype | None, source: Any, provisional: Any,
               out: FileKind, text_input: bool) -> bool:
    """The run with the provisional schema; True once done. False (nothing written, the
    input read to its end) where the whole input's schema is another, or anything failed
    before the output was let go: the run is then made as if this had not been, so that
    its output and any error are the same. Pass 1's own failure is raised as it would be
    without (it comes first)."""
    held: _Speculative | None = None
    staged = staged_output(request.output)

    def hold(stream: IO[bytes]) -> IO[bytes]:
        nonlocal held
        if staged:  # nothing is seen before the run ends well
            return stream
        point = getattr(stream, "rewind_point", lambda: None)()
        held = (_Held(stream, provisional.outcome) if point is None
                else _InPlace(stream, provisional.outcome, point))
        return held  # type: ignore[return-value]

    try:
        with contextlib.ExitStack() as own:  # its reader thread ends before any rerun
            _run_table(request, dtype, source, provisional.schema, provisional.batches, out,
                       own, None, text_input, None, hold)
    except Exception:
        if held is not None and held.released:
            raise  # output was written, as it would have been without
        if held is not None:
            held.drop()
        _ = source.schema  # waits for the input's end; raises its failure
        return False
    except BaseException:  # a stop signal: the reading thread stops too
        provisional.stop()
        if held is not None and not held.released:
            with contextlib.suppress(Exception):
                held.drop()
        raise
    return True


# Output held in memory while the schema may change; the rest is held in a temporary
# file, copied out in pieces of SPILL_BYTES. In memory it costs no CPU (the writers hand
# over bytes objects); in the file, a copy in and one out on the ordered writer's thread
# (2M x 8 JSON Lines, 185 MB out: that thread's CPU 0.03 s -> 0.13-0.20 s, the process's
# +0.1-0.15 s). Memory wins: with 256 MiB held, 2M x 8 JSON Lines -> CSV peaked at 507
# MiB on 16 cores (276 without the overlap) and 391-412 on 2 (forced); with 16 MiB, 229-237
# on 2 (benchmarks/RESULTS-jsonl.md, session 7).
HOLD_BYTES = 16 << 20
SPILL_BYTES = 4 << 20


class _Speculative:
    """The output of a run with a provisional schema, let go (`released`) once the
    input's schema is known (`outcome`, Provisional.outcome) to be that one, else Widened:
    _speculate then drops it (`drop`) and makes the run again."""

    def __init__(self, stream: IO[bytes], outcome: Callable[[bool], bool | None]) -> None:
        self._stream = stream
        self._outcome = outcome
        self.released = False

    def _decide(self, wait: bool) -> None:
        from cumtool.formats import Widened

        same = self._outcome(wait)
        if same is None:
            return
        if not same:
            raise Widened()  # _speculate drops the output, as on any failure before
        self._release()
        self.released = True

    def _release(self) -> None:
        """What the schema being known lets go."""

    def drop(self) -> None:
        raise NotImplementedError

    def flush(self) -> None:
        if not self.released:
            self._decide(True)
        self._stream.flush()


class _Held(_Speculative):
    """The output held back until the input's schema is known, then written where it is
    the same, else dropped. Beyond HOLD_BYTES it is held in a temporary file; where that
    cannot be written (a full disk), the write waits for the outcome instead."""

    def __init__(self, stream: IO[bytes], outcome: Callable[[bool], bool | None]) -> None:
        super().__init__(stream, outcome)
        self._held: list[bytes] = []
        self._size = 0
        self._spill: IO[bytes] | None = None
        self._spilled = 0  # bytes in the temporary file, whole writes only

    def _release(self) -> None:
        for data in self._held:
            self._stream.write(data)
        self._held.clear()
        if self._spill is not None:
            self._copy()
        self._close()

    def _copy(self) -> None:
        """The temporary file's bytes to the stream: by the kernel where the stream is a
        regular file's (os.sendfile), else read back and written a piece at a time."""
        import os

        from cumtool.errors import OutputError

        assert self._spill is not None
        spill = self._spill.fileno()
        total = self._spilled

        def send(fd: int, _writeback: int) -> int:
            done = 0
            while done < total:
                sent = os.sendfile(fd, spill, done, total - done)
                if sent <= 0:
                    return done if done else -1
                done += sent
            return done

        direct = getattr(self._stream, "write_directly", None)
        done = direct(send) if direct is not None and total else None
        done = max(done or 0, 0)
        while done < total:
            try:
                data = os.pread(spill, min(SPILL_BYTES, total - done), done)
            except OSError as error:
                raise OutputError(f"cannot read back the output held in $TMPDIR: "
                                  f"{error.strerror or error}") from None
            if not data:
                raise OutputError("cannot read back the output held in $TMPDIR: it is "
                                  "shorter than written")
            self._stream.write(data)
            done += len(data)

    def _close(self) -> None:
        if self._spill is not None:
            self._spill.close()
            self._spill = None

    def _hold(self, data: bytes | bytearray | memoryview, size: int) -> bool:
        """Hold `data`: in memory, else in the temporary file; False where it cannot be."""
        if self._spill is None and self._size + size <= HOLD_BYTES:
            self._held.append(bytes(data))  # the caller may reuse its buffer
            self._size += size
            return True
        import os
        import tempfile

        try:
            if self._spill is None:
                self._spill = tempfile.TemporaryFile(prefix="cumtool-held-", buffering=0)
            view = memoryview(data).cast("B")
            fd = self._spill.fileno()
            while view:
                view = view[os.pwrite(fd, view, self._spilled + size - view.nbytes):]
        except OSError:
            return False  # what was written of it is beyond _spilled: never copied
        self._spilled += size
        return True

    def write(self, data: bytes | bytearray | memoryview) -> int:
        size = memoryview(data).nbytes
        if not self.released:
            self._decide(False)
        if not self.released and not self._hold(data, size):
            self._decide(True)
        if self.released:
            return self._stream.write(data)
        return size

    def drop(self) -> None:
        """What is held is let go unwritten (the run is dropped)."""
        self._held.clear()
        self._close()


class _InPlace(_Speculative):
    """_Held's stand-in where the output is standard output redirected to a regular file
    at its end (`point`, _GuardedStream.rewind_point): the provisional run's output is
    written there as it comes, neither held nor copied out after pass 1 (at 16 cores that
    copy was the serial tail: 0.09-0.18 s of 2M x 8, benchmarks/RESULTS-cores.md). Where
    the run is dropped (`drop`), the file is cut back to `point`, as it was before."""

    def __init__(self, stream: IO[bytes], outcome: Callable[[bool], bool | None],
                 point: int) -> None:
        super().__init__(stream, outcome)
        self._point = point

    def write(self, data: bytes | bytearray | memoryview) -> int:
        if not self.released:
            self._decide(False)
        return self._stream.write(data)

    def drop(self) -> None:
        self._stream.rewind(self._point)  # type: ignore[attr-defined]


def _run_table(request: Request, dtype: np.dtype | None, source: Any, schema: pa.Schema,
               batches: Callable[..., Iterator[pa.RecordBatch]], out: FileKind,
               stack: contextlib.ExitStack, resume: Resume | None, text_input: bool,
               finals: list[Any] | None,
               hold: Callable[[IO[bytes]], IO[bytes]] | None = None) -> None:
    """run_table with `schema` and `batches` (the source's, or provisional ones); `hold`
    wraps the output stream."""
    from cumtool import state
    from cumtool.tables import make_plan

    if resume is not None and not schema.names:
        # No column: JSON Lines with no new whole line (a quiet log, a writer caught
        # mid-line). Nothing is scanned or written, and the state stays as it was: a run
        # that scans no new row changes no state (its output, empty, is put in place).
        with open_output(request.output, resume.commit):
            pass
        resume.commit.apply()
        return
    plan = make_plan(request.op, request.axis, dtype, schema, source.name,
                     table_options(request, out, text_input), state.hints(source, resume),
                     **request.scan_options())
    if finals is not None:
        for each, found in zip(plan.op_plans(), finals, strict=True):
            each.finals = found
    note_left_out(request, plan, text_input)
    save_state = state.prepare(request, plan, source, resume)  # and positions in files
    # The table view shows the scanned columns and their results before the others.
    scanned = set(plan.selected)
    passing = {name for i, name in enumerate(plan.names) if i not in scanned}
    view = View(request.op, "rows" if plan.axis == 0 else "columns", source.shown_name,
                tuple(plan.names[i] for i in plan.selected),
                frozenset(plan.schema.names) - passing, request.table_rows, request.precision)
    request.check_table_output(out.format)
    progress = table_progress(request, source)
    reverse = request.reverse and plan.axis == 0
    commit = resume.commit if resume is not None else None
    with open_output(request.output, commit) as stream, contextlib.closing(progress):
        if hold is not None:
            stream = hold(stream)
        sink = table_writer(request, out, stream, plan.schema, view, source.name,
                            cut_by_time=source.cut_by_time)

        def read() -> Iterator[pa.RecordBatch]:
            # Closed with the run, so a failure stops the reader thread at once.
            reader = stack.enter_context(
                contextlib.closing(prefetch(batches(plan.parse, plan.text_unused))))
            return rebatch(reader, request.batch_rows)

        scan_batches(plan, read, sink, reverse, stack,
                     lambda: progress.update(_done(source, plan)))
        if hold is not None:
            stream.flush()  # what was held is written, or the run is dropped
    save_state()  # only once the output is complete; puts output and state in place


def share_finals(request: Request, dtype: np.dtype | None, source: Any, out: FileKind,
                 stack: contextlib.ExitStack, text_input: bool = False) -> list[Any]:
    """--share's first pass: the scan of the whole input, in the order and groups of the
    run (inclusive: --exclusive divides by the group's whole total too), keeping only
    each group's last running value, per op and column. Nothing is written."""
    import dataclasses

    from cumtool.tables import make_plan

    first = dataclasses.replace(request, exclusive=False)
    plan = make_plan(first.op, first.axis, dtype, source.schema, source.name,
                     table_options(first, out, text_input), source.hints,
                     **first.scan_options())
    locate = source.locator
    if locate is not None:  # errors name the file and row, as the second pass would
        for each in plan.op_plans():
            each.where = locate
    with contextlib.closing(prefetch(source.batches(plan.parse, plan.text_unused))) as reader:
        return track_finals(plan, rebatch(reader, request.batch_rows), request.reverse,
                            stack)


def track_finals(plan: Any, batches: Iterator[pa.RecordBatch], reverse: bool,
                 stack: contextlib.ExitStack) -> list[Any]:
    """Scan `batches` with `plan` (made without --exclusive), keeping each group's last
    running value per op and column (TablePlan.finals), for --share's second pass."""
    if plan.axis != 0:
        raise UsageError(f"{option('share')} divides each running value by its column's "
                         f"final one, down the rows; it cannot be used with "
                         f"{option('axis', 'columns')}")
    plans = plan.op_plans()
    for each in plans:
        each.tracking = True
    if reverse:
        plan.reverse_total, batches = reversed_batches(batches, stack)
    for batch in batches:
        check_stop()
        for each in plans:
            each.results(batch)
    return [each.finals for each in plans]


def scan_batches(plan: Any, read: Callable[[], Iterator[pa.RecordBatch]], sink: TableSink,
                 reverse: bool, stack: contextlib.ExitStack,
                 done: Callable[[], None] = lambda: None) -> None:
    """The table flow that files, wide files (widerun: batches of records -> column
    groups -> rendered bytes) and cumtool.scan share: batches -> plan -> sink, which
    is aborted on any failure. --reverse scans from the last row up: the input is spooled
    and replayed backwards, and the results go back into input order through a second
    spool. `done` follows each batch (the progress bar)."""
    if reverse:
        sink = ReversingSink(sink, stack)

    def results() -> Iterator[pa.RecordBatch]:  # run inside write_all: its failures abort
        batches = read()
        if reverse:
            plan.reverse_total, batches = reversed_batches(batches, stack)
        for batch in batches:
            try:
                result = plan.apply(batch)
            except ScanOverflowError as error:
                if error.before is not None:  # the rows before it (TablePlan.apply), first
                    yield error.before
                raise
            del batch  # not held while the next is read (wide batches are large)
            yield result

    write_all(sink, results(), done)


class EngineRun(Protocol):
    """A format's own engine on one input (formats/csv/fast._Job), judged and planned
    from the input's head: the items it reads (`pieces`), the scan of each with the
    carried state (`apply`), and the writer of the scanned items to a stream (`sink`).
    Any of them raises Handover where the engine is unsure; `rows_scanned` says how far
    the scan got, in order."""

    rows_scanned: int

    def pieces(self) -> Generator[Any, None, None]: ...

    def apply(self, item: Any, /) -> Any: ...

    def sink(self, stream: IO[bytes]) -> Writer: ...

    def close(self) -> None: ...


def run_engine(request: Request, job: EngineRun,
               replay: Callable[[int], IO[bytes] | None]) -> tuple[bool, IO[bytes] | None]:
    """Run `job` (a format's own engine) to the output through scan_batches: (True, None)
    when done; else (False, standard input from its start, `replay(rows scanned)`, or
    None for a file) for run_table, which takes the run from the start. What the engine
    is unsure of before any output is written hands the run over as if the engine had
    never looked; later, a file output (staged) is dropped, and standard output is
    handed over with the bytes already written skipped (`rerun_skipping`), so that the
    output and any error are run_table's own."""
    items = job.pieces()
    with contextlib.closing(job), contextlib.closing(items):  # its pipeline, its pool
        try:
            first = next(items, None)  # the head: nothing is written yet
        except (Handover, CumtoolError):
            return False, replay(0)  # run_table takes it, or words the error
        sink: Any = None
        try:
            with open_output(request.output) as stream, contextlib.ExitStack() as stack:
                sink = job.sink(stream)
                head = () if first is None else (first,)
                scan_batches(job, lambda: _chained(head, items), sink, False, stack)
        except Handover:
            written = sink.written if sink is not None else 0
            if request.output in (None, "-") and written:
                rerun_skipping(request, written, replay(job.rows_scanned))
                return True, None
            # Nothing written yet, or the file output was dropped: as if never looked.
            return False, replay(job.rows_scanned)
    return True, None


def _chained(head: Iterable[Any], rest: Iterator[Any]) -> Iterator[Any]:
    yield from head
    yield from rest


def rerun_skipping(request: Request, skip: int, stdin: IO[bytes] | None) -> None:
    """run_table from the start, to standard output, without the first `skip` bytes:
    those a format's engine wrote, which are run_table's first bytes too."""
    import sys

    from cumtool import kernels, sources

    dtype = kernels.parse_dtype(request.dtype) if request.dtype is not None else None
    with contextlib.ExitStack() as stack:
        finals = None
        if request.share:  # a file (standard input with --share never comes here)
            first, kind = sources.open_source(request, dtype, stack, None, None)
            finals = share_finals(request, dtype, first.table(),
                                  request.output_format(kind), stack,
                                  text_input=kind.format in DELIMITED)
        source, kind = sources.open_source(request, dtype, stack, stdin, None)
        out = request.output_format(kind)
        saved = sys.stdout
        sys.stdout = _Stdout(_Skipping(saved.buffer, skip))
        try:
            run_table(request, dtype, source, out, stack, None,
                      text_input=kind.format in DELIMITED, finals=finals)
        finally:
            sys.stdout = saved


class _Skipping:
    """A binary stream that drops its first `skip` bytes."""

    def __init__(self, stream: IO[bytes], skip: int) -> None:
        self._stream = stream
        self._skip = skip

    def write(self, data: bytes | bytearray | memoryview) -> int:
        view = memoryview(data).cast("B")
        size = view.nbytes
        if self._skip:
            dropped = min(self._skip, size)
            view = view[dropped:]
            self._skip -= dropped
        if view.nbytes:
            self._stream.write(view)
        return size

    def flush(self) -> None:
        self._stream.flush()


class _Stdout:
    def __init__(self, buffer: _Skipping) -> None:
        self.buffer = buffer


class Writer(Protocol):
    """A sink of any kind: of batches, of rendered bytes (the wide path)."""

    def write(self, item: Any, /) -> None: ...

    def close(self) -> None: ...

    def abort(self) -> None: ...


def write_all(sink: Writer, items: Iterable[Any], done: Callable[[], None] = lambda: None
              ) -> None:
    """The one write loop of every driver: each item to the sink, a stop signal honoured
    between them, `done` after each; the sink closed at the end, or aborted (once) on
    any failure, which propagates."""
    try:
        for item in items:
            check_stop()
            sink.write(item)
            done()
        sink.close()
    except BaseException as error:
        if isinstance(error, DataError):
            _drain(sink)
        sink.abort()
        raise


def _drain(sink: Writer) -> None:
    """The rows scanned before a failure in the input or the scan written out, whatever
    the writing threads had got to, so that standard output holds the same rows at every
    thread count (a file output is dropped anyway). A failure to write them is not the
    run's to report: the data error is."""
    with contextlib.suppress(Exception):
        drain(sink)


def table_writer(request: Request, out: FileKind, stream: IO[bytes], schema: pa.Schema,
                 view: View | None, name: str, output: str | None = None,
                 cut_by_time: bool = False) -> TableSink:
    """The output format's writer, fed by a background thread that overlaps writing
    with the scan; the terminal table only gathers rows (it prints on close). `output`:
    the output as messages name it (default: --output). `cut_by_time`: the input's
    batches end where reads end (SourceBase.cut_by_time), so a format whose bytes follow
    its batches is written in fixed groups."""
    sink = table_sink(request, out, stream, schema, view, name, output)
    if out.format == "table":
        return sink
    if cut_by_time and format_named(out.format).grouped:
        sink = Regrouped(sink, group_rows(len(schema)))
    return BackgroundSink(sink)



def table_progress(request: Request, source: TableSource) -> Progress:
    """Text is measured in bytes of the file as stored (compressed), the rest in rows."""
    if source.bytes_read is not None:
        total = source.total_bytes or None  # a pipe's size is no total
        return Progress(request.progress, total, "bytes", source.name)
    # the rows are asked for only for a bar (a JSON Lines source counts them to its end)
    return Progress(request.progress, source.num_rows if request.progress else None, "rows",
                    source.name)


def _done(source: TableSource, plan: Any) -> int:
    """How far the run is, in table_progress's measure."""
    read = source.bytes_read
    return plan.rows_done if read is None else read
