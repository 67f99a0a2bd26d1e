"""The table run: reader -> batches -> plan (scan kernels with carried state) -> writer.

`run_table` drives one table source (one file, or several inputs as one ChainSource) to
one output; `scan_batches` is the loop it shares with `cumtool.scan`; `rebatch`,
`table_progress` and `discarding` serve the other drivers (-o DIR/ in datasets.py).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterable, Iterator
from typing import IO, TYPE_CHECKING, Any, Protocol

from cumtool.commit import Commit, check_stop
from cumtool.errors import UsageError, option
from cumtool.formats import FileKind, TableSink, TableSource
from cumtool.formats.registry import TYPED_OUTPUTS
from cumtool.output import open_output
from cumtool.pipeline import (
    BackgroundSink,
    Progress,
    ReversingSink,
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
    (cumtool.notes.left_out), for a table plan of delimited text: every driver of a
    table says them (run_table, and -o DIR/'s in datasets.py)."""
    from cumtool.tables import MultiPlan

    if text_input and not request.widen:  # a rerun said it the first time
        from cumtool.notes import left_out

        single = plan.plans[0] if isinstance(plan, MultiPlan) else plan
        left_out(request, single.names, single.hints, single.scanned,
                 {*single.by, *([single.reset] if single.reset is not None else [])})


def run_table(request: Request, dtype: np.dtype | None, source: Any, out: FileKind,
               stack: contextlib.ExitStack, resume: Resume | None = None,
               text_input: bool = False, finals: list[Any] | None = None) -> None:
    """`text_input`: the input is delimited text (CSV, TSV), whose --na markers are
    missing cells in text columns too. `finals`: --share's second pass, the final value
    of each group, column and op that share_finals found."""
    from cumtool import state
    from cumtool.tables import make_plan

    plan = make_plan(request.op, request.axis, dtype, source.schema, source.name,
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
    view = View(request.op, "rows" if plan.axis == 0 else "columns", source.name,
                tuple(plan.names[i] for i in plan.selected),
                frozenset(plan.schema.names) - passing, request.table_rows, request.precision)
    request.check_table_output(out.format)
    progress = table_progress(request, source)
    reverse = request.reverse and plan.axis == 0
    commit = resume.commit if resume is not None else None
    with open_output(request.output, commit) as stream, contextlib.closing(progress):
        sink = table_writer(request, out, stream, plan.schema, view, source.name)

        def read() -> Iterator[pa.RecordBatch]:
            # Closed with the run, so a failure stops the reader thread at once.
            reader = stack.enter_context(
                contextlib.closing(prefetch(source.batches(plan.parse, plan.text_unused))))
            return rebatch(reader, request.batch_rows)

        scan_batches(plan, read, sink, reverse, stack,
                     lambda: progress.update(_done(source, plan)))
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
            result = plan.apply(batch)
            del batch  # not held while the next is read (wide batches are large)
            yield result

    write_all(sink, results(), done)


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
    except BaseException:
        sink.abort()
        raise


def table_writer(request: Request, out: FileKind, stream: IO[bytes], schema: pa.Schema,
                 view: View | None, name: str, output: str | None = None) -> TableSink:
    """The output format's writer, fed by a background thread that overlaps writing
    with the scan; the terminal table only gathers rows (it prints on close). `output`:
    the output as messages name it (default: --output)."""
    sink = table_sink(request, out, stream, schema, view, name, output)
    return sink if out.format == "table" else BackgroundSink(sink)



def table_progress(request: Request, source: TableSource) -> Progress:
    """Text is measured in bytes of the file as stored (compressed), the rest in rows."""
    if source.bytes_read is not None:
        total = source.total_bytes or None  # a pipe's size is no total
        return Progress(request.progress, total, "bytes", source.name)
    return Progress(request.progress, source.num_rows, "rows", source.name)


def _done(source: TableSource, plan: Any) -> int:
    """How far the run is, in table_progress's measure."""
    read = source.bytes_read
    return plan.rows_done if read is None else read
