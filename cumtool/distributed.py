"""`--engine dask`: the table scan over partitions on a Dask cluster, bit for bit the
result of the local engine.

An input is cut into partitions as its format declares in the format registry (its
`Partitioning`: a Parquet file by row groups, a CSV/TSV file by byte ranges that end on
record boundaries, the other tables whole, by their own reader), a list of files file by
file; the workers read a partition with the format's reader for one. Partition k is
scanned from exactly the state the local engine has before it (the plan's carried state,
`_STATE`: the kernels' Carry objects, a few hundred bytes), found one of two ways
(cumtool/carries.py):

- without a chain, where every scanned column has a summary (integer cumsum, --exclusive
  too, cummax and cummin, cumcount, cumnunique): `read[k]` and `summary[k]` run in
  parallel, the client applies the summaries in order (microseconds each) and submits
  `write[k] = scan(read[k], state[k])` as soon as state[k] is known
  (`_summarized_results`);
- along a chain otherwise: `read[k]` runs on worker k mod W, `write[k]` from state[k]
  beside it, and the client has that worker's `Folder` actor fold state[k] over the
  partition into state[k+1] (no task per link; `_chained_results`).

Reads run at most L = 2 x workers partitions ahead of the scans. An error is the first
in input order: a partition's scan, from the exact state, raises it, and the outputs are
taken in order.

Not supported, and refused by `engines.check_dask` when the request
is checked: --by and --reset (the state grows with the groups), --reverse (the chain
would run backwards), --axis columns (rows are independent: nothing to chain), arrays
(.npy) and standard input.

Dask and distributed are imported only here, and only when the engine is asked for.
"""

from __future__ import annotations

import contextlib
import copy
import dataclasses
import os
import posixpath
import re
import uuid
from collections.abc import Generator, Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from cumtool import remote
from cumtool.engines import not_for_dask
from cumtool.errors import (
    CumtoolError,
    DataError,
    LateDecimal,
    UsageError,
    extra_missing,
    option,
)
from cumtool.formats import FileKind, Partitioning, SourceBase
from cumtool.formats.partitioning import Partition, Splitting
from cumtool.formats.registry import DELIMITED, PARTITIONINGS, format_named, kind_from_name
from cumtool.inputs import InputFile, relative_outputs

if TYPE_CHECKING:
    import pyarrow as pa

    from cumtool.request import Request
    from cumtool.staging import Staging

CONNECT_TIMEOUT = "10s"  # how long to retry a --scheduler that does not answer
PARTITION_BYTES = 64 << 20  # a partition's size on disk, about (CSV bytes, Parquet row groups)
LOOKAHEAD_PER_WORKER = 2
SCHEDULER_VARIABLE = "DASK_SCHEDULER_ADDRESS"
_STATE = ("carries", "rows_done")  # what a TablePlan changes as it scans (no --by, --reset)
# No dashboard, and the scheduler's HTTP routes on a free port, not a warning that 8787
# is taken by another cluster.
QUIET_CLUSTER: dict[str, Any] = {
    "dashboard_address": None,
    "scheduler_kwargs": {"dashboard": False, "dashboard_address": ":0"}}


# Partitions ----------------------------------------------------------------------------

@dataclass(frozen=True)
class Job:
    """What every task needs: the request and the plan in its initial state."""

    request: Request
    plan: Any
    schema: pa.Schema  # of the first input: every other one must match it
    first_name: str
    out: FileKind  # the output's format (of each output, with one per input)
    kind: FileKind  # the first input's format
    batch_rows: int | None


def _location(path: str) -> str:
    """Workers run elsewhere (another directory, another machine): a local path is made
    absolute here, in the client."""
    if remote.is_url(path):
        return path
    return os.path.abspath(path)


def split_file(client: Any, request: Request, name: str, kind: FileKind) -> list[Partition]:
    """A file cut into partitions as its format declares (cumtool.formats.Partitioning):
    the client splits it, asking the workers for what it needs to look at (a CSV's
    byte ranges' quote layout)."""
    def gather(func: Any, calls: list[tuple[Any, ...]]) -> list[Any]:
        return client.gather([client.submit(func, *args, pure=False) for args in calls])

    return _partitioning(name, kind.format).split(Splitting(
        name, _location(name), kind, request, PARTITION_BYTES, gather))


def _partitioning(name: str, fmt: str) -> Partitioning:
    """How the registry says `fmt` is read in partitions; an array, or a format Dask does
    not read, is refused by name."""
    found = PARTITIONINGS.get(fmt)
    if found is None:
        raise UsageError(not_for_dask(name, fmt))
    return found



# The tasks ---------------------------------------------------------------------------

@dataclass
class _ReadFailed:
    """A partition that could not be read. The error is raised by the chain, which knows
    how many rows came before (a CSV reader counts rows from its partition's start)."""

    error: CumtoolError


def read_partition(job: Job, part: Partition, *_after: Any) -> pa.Table | _ReadFailed:
    """read[k]; `_after` are the tasks it waits for (the lookahead), unused."""
    try:
        return _read(job, part)
    except CumtoolError as error:
        return _ReadFailed(error)


def _read(job: Job, part: Partition) -> pa.Table:
    """A partition read by its format's reader (cumtool.formats.Partitioning.open): text
    converted as the plan says (from the first input's columns), typed columns matched
    to the first input's types."""
    import pyarrow as pa

    plan = job.plan
    with contextlib.ExitStack() as stack:
        source = _open_partition(job, part, stack).table()
        if source.hints is None:  # typed: the stored types are the columns' own
            batches = list(source.batches())
            return _matching(job, part, pa.Table.from_batches(
                batches, schema=batches[0].schema if batches else source.schema))
        names = source.schema.names
        if part.first_of_file and names != job.schema.names:
            raise DataError(f"{part.name}: its columns ({', '.join(names)}) "
                            f"differ from those of {job.first_name} "
                            f"({', '.join(job.schema.names)})")
        batches = list(source.batches(plan.parse, plan.text_unused))
    schema = batches[0].schema if batches else plan.input_schema
    return pa.Table.from_batches(batches, schema=schema)


def _open_partition(job: Job, part: Partition, stack: contextlib.ExitStack) -> SourceBase:
    """The reader of one partition, as its format declares (Partitioning.open)."""
    def whole() -> SourceBase:
        """The file's reader as the local engine opens it (cumtool.sources: its format by
        --from, name or first bytes, its compression), messages naming it as given."""
        from cumtool import kernels
        from cumtool.sources import open_source

        request = job.request
        dtype = kernels.parse_dtype(request.dtype) if request.dtype is not None else None
        source, _kind = open_source(dataclasses.replace(request, input=part.location,
                                                        inputs=()), dtype, stack,
                                    name=part.name)
        return source

    return _partitioning(part.name, part.format).open(part, job.request, stack, whole)


def _matching(job: Job, part: Partition, table: pa.Table) -> pa.Table:
    """`table` in the first input's schema; a column that is all nulls of type null (an
    empty file's text column) takes the first input's type."""
    import pyarrow as pa

    expected = job.schema
    if table.schema.equals(expected):
        return table
    same = table.schema.names == expected.names and all(
        got.type == want.type or pa.types.is_null(got.type)
        for got, want in zip(table.schema, expected, strict=True))
    if not same:
        raise DataError(f"{part.name}: its columns ({_fields(table.schema)}) differ from "
                        f"those of {job.first_name} ({_fields(expected)})")
    return table.cast(expected)


def _fields(schema: pa.Schema) -> str:
    return ", ".join(f"{f.name}: {f.type}" for f in schema)


def _located(error: CumtoolError, part: Partition, rows_before: int,
             has_header: bool) -> CumtoolError:
    """A reader's error with its row counted from the file's start, not the partition's."""
    if part.first_of_file or not rows_before:
        return error
    # A late decimal keeps its hint and column: the local engine's rerun needs them.
    text = error.where if isinstance(error, LateDecimal) else error.raw
    prefix = f"{part.name}: "
    if not text.startswith(prefix):
        return error
    rest = re.sub(r"\brow (\d+)", lambda m: f"row {int(m.group(1)) + rows_before}",
                  text[len(prefix):], count=1)
    shift = _lines_before(part)
    # The partition's lines count from its own text: the header record put before it (if
    # any), then its bytes. In the file, they come after every line before `start`.
    rest = re.sub(r"\(line (\d+)\)",
                  lambda m: "" if shift is None else
                  f"(line {int(m.group(1)) - _lines(part.header) + shift})",
                  rest, count=1).replace(" ,", ",").replace(" :", ":")
    if not has_header:  # its first record stood in as the header of the partition
        rest = rest.replace("like the header", "like the first row")
    if isinstance(error, LateDecimal):
        return LateDecimal(prefix + rest, error.hint, error.column)
    return type(error)(prefix + rest)


def _lines(data: bytes) -> int:
    """Line ends in `data` (LF, or lone CR in an old Mac file)."""
    return data.count(b"\n") or data.count(b"\r")


def _lines_before(part: Partition) -> int | None:
    """Line ends in the file before the partition's first byte; None where it cannot be
    read again cheaply (a URL, a compressed file): the message then names no line rather
    than a wrong one."""
    if part.compression is not None or "://" in part.location:
        return None
    try:
        with open(part.location, "rb") as stream:
            counted, left = 0, part.start
            while left > 0:
                chunk = stream.read(min(left, 1 << 20))
                if not chunk:
                    break
                counted += _lines(chunk)
                left -= len(chunk)
        return counted
    except OSError:
        return None


def _plan_with(job: Job, part: Partition, state: list[dict[str, Any]]) -> Any:
    """The job's plan (shared by every task of a worker: copied, never changed) in the
    carried `state`. Messages name the partition's file, count its rows, and name the
    line a row starts on (CSV), as the local engine's do."""
    from cumtool.tables import MultiPlan

    plan = copy.copy(job.plan)
    if isinstance(plan, MultiPlan):  # each op's plan carries its own state: copied too
        plan.plans = [copy.copy(p) for p in plan.plans]
    plans = plan.op_plans()
    for one, values in zip(plans, state, strict=True):
        for name in _STATE:
            setattr(one, name, copy.deepcopy(values[name]))
        if one.distinct:  # a distinct count's carry as the client sent it (no chain)
            from cumtool import carries

            one.carries = {column: carries.opened(carry)
                           if isinstance(carry, carries.SentDistinct) else carry
                           for column, carry in one.carries.items()}
        one.name = part.name
        if part.first_of_file:
            one.rows_done = 0
        one.where = _locator(job, part, one.rows_done)
    return plan


def _locator(job: Job, part: Partition, rows_before: int) -> Any:
    """A plan's `where` for a partition whose first row is the file's row rows_before + 1:
    (file, row) and, for CSV, the line the row starts on. The line is found only when a
    message asks for it, by reading the partition again: nothing is kept for it."""
    def where(row: int) -> tuple[str, int] | tuple[str, int, int]:
        line = _line_of(job, part, row - rows_before - 1)
        return (part.name, row) if line is None else (part.name, row, line)

    return where


def _line_of(job: Job, part: Partition, local_row: int) -> int | None:
    """The line of the file on which the partition's row `local_row` (from 0) starts;
    None for Parquet, and where the file cannot be read again cheaply."""
    if not format_named(part.format).delimited:
        return None
    shift = 0 if part.start == 0 else _lines_before(part)  # a whole .csv.gz starts at 0
    if shift is None:
        return None
    try:
        with contextlib.ExitStack() as stack:
            source: Any = _open_partition(job, part, stack)
            read = 0
            # Cells cut, none converted nor kept: only where each row starts is wanted.
            for batch in source.batches({}, range(len(source.column_names))):
                read += batch.num_rows
                if read > local_row:
                    break
            line = source.row_line(local_row)
    except CumtoolError:
        return None
    # The partition's lines count from its own text: the header record put before it (if
    # any), then its bytes; in the file they come after every line before its start.
    return None if line is None else line - _lines(part.header) + shift


def state_of(plan: Any) -> list[dict[str, Any]]:
    return [{name: getattr(one, name) for name in _STATE} for one in plan.op_plans()]


def _raise_read(job: Job, part: Partition, read: Any, state: list[dict[str, Any]]) -> None:
    if isinstance(read, _ReadFailed):
        rows_before = 0 if part.first_of_file else int(state[0]["rows_done"])
        raise _located(read.error, part, rows_before, job.request.header) from None


def _batches(job: Job, table: pa.Table) -> list[pa.RecordBatch]:
    return table.to_batches(max_chunksize=job.batch_rows)


def fold_partition(job: Job, part: Partition, read: Any,
                   state: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """carry[k]: the state after partition k; builds no output. A float column's carry
    is folded in C (carries.fold), a mean's, variance's or ewma's too (carries.fold_stats);
    a column with a summary is advanced by it; any other
    is scanned, as is a partition whose scan fails (the fold then fails as the scan does)."""
    from cumtool import carries

    _raise_read(job, part, read, state)
    plan = _plan_with(job, part, state)
    for one in plan.op_plans():
        if not carries.plain(one):
            for batch in _batches(job, read):
                one.results(batch)
            continue
        scanned = []
        folds: dict[Any, list[int]] = {}  # columns folded together: one op, one --skipna
        stat_folds: dict[Any, list[int]] = {}  # and one set of parameters
        for column in one.selected:
            spec = one.specs[column]
            carry = one.carries[column]
            if carries.foldable(spec):
                folds.setdefault((spec.accumulator.ufunc, spec.skipna), []).append(column)
            elif carries.stat_foldable(spec):
                stat_folds.setdefault((spec.op, spec.skipna, spec.params), []).append(column)
            elif carries.summary_kind(spec) is None or not carries.advance(
                    spec, carry, carries.summarize(
                        spec, *carries.column_values(one, column, read)), read.num_rows):
                scanned.append(column)
        for columns in folds.values():
            # Batch by batch: a Parquet column comes in chunks, which would be copied
            # into one array; a batch's columns are each one array, and share its rows.
            for batch in read.to_batches():
                carries.fold([one.specs[column] for column in columns],
                             [carries.column_values(one, column, batch) for column in columns],
                             [one.carries[column] for column in columns])
        for columns in stat_folds.values():
            for batch in _batches(job, read):  # the scan's batches (carries.fold_stats)
                carries.fold_stats([one.specs[column] for column in columns],
                                   [carries.column_values(one, column, batch)
                                    for column in columns],
                                   [one.carries[column] for column in columns])
        if scanned:
            _scan_columns(job, one, read, scanned)
        else:
            one.rows_done += read.num_rows
    return state_of(plan)


def _scan_columns(job: Job, plan: Any, table: pa.Table, columns: list[int]) -> None:
    """Some of a plan's columns scanned, batch by batch, as TablePlan.results scans them:
    the first overflow in file order (then the leftmost column) is the one raised."""
    from cumtool.errors import ScanOverflowError

    for batch in _batches(job, table):
        overflows = []
        for column in columns:
            try:
                plan.scan_column(column, batch.column(plan.data_at.get(column, column)), None)
            except ScanOverflowError as error:
                overflows.append(error)
        if overflows:
            raise min(overflows, key=lambda error: error.position)
        plan.rows_done += batch.num_rows


@dataclass(frozen=True)
class Summaries:
    """A partition's summaries (carries.Summary), per op's plan and scanned column."""

    rows: int
    columns: list[dict[int, Any]]


def summarize_partition(job: Job, part: Partition, read: Any) -> Summaries | None:
    """summary[k], for a plan whose every column has one: what partition k does to any
    carried state. None where the partition's scan fails whatever the carry (a read, a
    cast): the client then scans up to it and no further, and its scan raises the error."""
    from cumtool import carries

    if isinstance(read, _ReadFailed):
        return None
    try:
        return Summaries(read.num_rows, [
            {column: carries.summarize_column(one, column, read) for column in one.selected}
            for one in job.plan.op_plans()])
    except CumtoolError:
        return None


def scan_partition(job: Job, part: Partition, read: Any,
                   state: list[dict[str, Any]]) -> pa.Table | str:
    """write[k]: partition k's output, from the state before it; the table itself, or
    written to the partition's own output (then its location is returned)."""
    import pyarrow as pa

    _raise_read(job, part, read, state)
    plan = _plan_with(job, part, state)
    results = [plan.apply(batch) for batch in _batches(job, read)]
    if part.output is None:
        return pa.Table.from_batches(results, schema=plan.schema)
    _write_file(job, part, plan.schema, results)
    return part.output


def _write_file(job: Job, part: Partition, schema: pa.Schema,
                batches: list[pa.RecordBatch]) -> None:
    from cumtool.output import open_output
    from cumtool.runner import write_all
    from cumtool.sinks import table_sink

    assert part.output is not None
    if not remote.is_url(part.output):
        os.makedirs(os.path.dirname(part.output), exist_ok=True)
    out = kind_from_name(part.output) or job.out
    with open_output(part.output) as stream:
        write_all(table_sink(job.request, out, stream, schema, None, part.name, part.target),
                  batches)


# The client --------------------------------------------------------------------------

@contextlib.contextmanager
def connect(request: Request) -> Iterator[Any]:
    """A client of --scheduler, else of DASK_SCHEDULER_ADDRESS, else of a LocalCluster
    with a worker process per core."""
    # A task's failure reaches the user as one error line: the workers (this process's
    # threads, or processes that inherit the variable) must not log it to stderr too.
    os.environ.setdefault("DASK_LOGGING__DISTRIBUTED", "critical")
    try:
        from distributed import Client, LocalCluster
    except ImportError:
        raise extra_missing(option("engine", "dask"), "dask") from None
    address = request.scheduler or os.environ.get(SCHEDULER_VARIABLE) or None
    if address:
        try:
            client = Client(address, timeout=CONNECT_TIMEOUT)
        except (OSError, TimeoutError, ValueError) as error:
            raise DataError(f"cannot reach the Dask scheduler at {address}: "
                            f"{' '.join(str(error).split())[:200]}") from None
        with client:
            yield client
        return
    import dask

    from cumtool import native

    workers = native.CORES  # --threads, CUMTOOL_THREADS, or the usable cores
    with contextlib.ExitStack() as stack:
        try:
            # No sampling profiler in the workers (handed their config by the nannies):
            # a command's run has no dashboard to show it, and it walks the frames of
            # the running task 100 times a second.
            with dask.config.set({"distributed.worker.profile.enabled": False}):
                cluster = stack.enter_context(LocalCluster(
                    n_workers=workers, threads_per_worker=1, processes=True,
                    **QUIET_CLUSTER))
        except (RuntimeError, OSError) as error:  # "Nanny failed to start": see the hint
            raise DataError(f"cannot start a local Dask cluster ({error}); worker processes "
                            "import the main module again, so a script must guard its "
                            "run with if __name__ == '__main__' (or pass --scheduler)"
                            ) from None
        yield stack.enter_context(Client(cluster))


def run(request: Request) -> None:
    """`cumtool OP INPUT... --engine dask`: the inputs (files, globs and folders, expanded
    as the local engine expands them, in natural order) cut into partitions; one output,
    or with `-o DIR/` one output per input."""
    from cumtool import inputs

    given = request.inputs or (request.input,)
    files = inputs.expand(given) if inputs.is_dataset(given) else None
    if files is not None and any(f.partition for f in files):
        raise UsageError(f"{option('engine', 'dask')} reads files as they are; the keys of a "
                         "hive-partitioned folder (year=2026/...) are columns only on the "
                         f"local engine ({option('engine', 'local')})")
    output_dir = request.output if inputs.per_input_output(request.output) else None
    run_paths(request, [request.input] if files is None else files, output_dir)


def run_paths(request: Request, given: Sequence[str | InputFile],
              output_dir: str | None = None) -> None:
    """The inputs, in the order given, as one stream: one output (-o or standard output),
    or with `output_dir` one output per input, named as the local engine names them
    (inputs.relative_outputs: a path given alone by its file name). Outputs are staged in
    a hidden folder and moved into place only when every partition succeeded (on an
    object store, a _SUCCESS marker follows them)."""
    files = [f if isinstance(f, InputFile) else InputFile(f, posixpath.basename(f))
             for f in given]
    inputs = [f.path for f in files]
    if not inputs:
        raise UsageError("no inputs to scan")
    request = dataclasses.replace(request, input=inputs[0])
    request.check()
    if output_dir is not None:
        from cumtool import staging

        with staging.stage(output_dir) as stage:
            with connect(request) as client:
                names = _run_to_folder(client, _job(request, output_dir), files, stage)
            # After the cluster is closed: once they are in place the run may end at once
            # (cumtool.commit.leave_when_committed).
            stage.put_in_place(names)
        return
    with connect(request) as client:
        job = _job(request, output_dir)
        parts: list[Partition] = []
        for name in inputs:
            parts.extend(split_file(client, request, name, _kind(request, name, job.kind)))
        _run_to_one_output(client, job, parts)


def _job(request: Request, output_dir: str | None) -> Job:
    """The plan, from the first input's schema (and, for CSV, its first rows), as the
    local engine makes it."""
    import numpy as np

    from cumtool import kernels
    from cumtool.runner import note_left_out, table_options
    from cumtool.sources import open_source
    from cumtool.tables import make_plan

    dtype: np.dtype | None = (kernels.parse_dtype(request.dtype)
                              if request.dtype is not None else None)
    with contextlib.ExitStack() as stack:
        source, kind = open_source(request, dtype, stack)
        if source.layout == "array":
            raise UsageError(not_for_dask(source.name, kind.format))
        table = source.table()
        out = (request if output_dir is None else dataclasses.replace(
            request, output=None, stdout_is_terminal=False)).output_format(kind)
        # A CSV's --na markers are missing cells in the text columns cumnunique compares.
        options = table_options(request, out, text_input=kind.format in DELIMITED)
        plan = make_plan(request.op, request.axis, dtype, table.schema, table.name, options,
                         table.hints, **request.scan_options())
        request.check_table_output(out.format)
        note_left_out(request, plan, kind.format in DELIMITED)  # as the local engine says
        if out.format == "jsonl":
            _check_null_or_absent(table.schema, table.name)
        return Job(request, plan, table.schema, table.name, out, kind, request.batch_rows)


def _check_null_or_absent(schema: pa.Schema, name: str) -> None:
    """JSON Lines to JSON Lines: a column whose missing cells are some an explicit null,
    some an absent key, is written back so row by row from what its reader saw, which
    stays in the worker's process; refused by name rather than written otherwise."""
    from cumtool.formats.jsonl.missing import EACH, FIELD_MISSING

    for field in schema:
        if (field.metadata or {}).get(FIELD_MISSING, b"").startswith(EACH):
            raise UsageError(f"{name}: column {field.name!r} holds both null and absent "
                             f"values, which {option('engine', 'dask')} cannot write back "
                             "to JSON Lines row by row; run it on the local engine "
                             f"({option('engine', 'local')}), or write another format")


def _kind(request: Request, name: str, first: FileKind) -> FileKind:
    """An input's format: --from, else as its name says, else the first input's."""
    named = kind_from_name(name)
    fmt = request.from_format.lower() if request.from_format else (
        named.format if named else first.format)
    return FileKind(fmt, named.compression if named else first.compression)


def _workers(client: Any) -> int:
    return max(1, len(client.scheduler_info().get("workers", {})))


def _cluster_failures() -> tuple[type[BaseException], ...]:
    from distributed import KilledWorker
    from distributed.client import FutureCancelledError

    return (OSError, RuntimeError, KilledWorker, FutureCancelledError)


def _taken(future: Any, part: Partition) -> Any:
    """A future's result. Any failure is one line (_worded)."""
    try:
        return future.result()
    except Exception as error:
        raise _worded(error, part) from None


def _worded(error: Exception, part: Partition) -> CumtoolError:
    """A failure as one line: cumtool's own as it is; a task's exception that is not
    cumtool's names the partition's file."""
    if isinstance(error, CumtoolError):
        return error
    if isinstance(error, _cluster_failures()):  # a lost worker, a closed connection
        return DataError(f"the Dask cluster failed: {type(error).__name__}: "
                         f"{' '.join(str(error).split())[:200]}")
    return DataError(f"{part.name}: a Dask task failed: {type(error).__name__}: "
                     f"{' '.join(str(error).split())[:200]}")


def _scan_results(client: Any, job: Job, parts: list[Partition]) -> Generator[Any, None, None]:
    """Each partition's output (or where it was written), in order: without a chain
    where every column has a summary, else along the chain of carries."""
    from cumtool import carries

    if carries.summarized(job.plan.op_plans()):
        return _summarized_results(client, job, parts)
    return _chained_results(client, job, parts)


class Folder:
    """An actor, one on each worker: folds the carry over a partition read on its worker.

    The client calls it with the state before the partition and gets the state after:
    one message each way, no task and no scheduling, which is the whole hand-off of a
    link (benchmarks/DASK.md measures it against a task per link and a Queue). It runs
    on the worker's thread for actors, so a link does not wait for a scan that holds the
    worker's task thread; the C fold releases the GIL."""

    def __init__(self, job: Job) -> None:
        from distributed import get_worker

        # The job is kept here: a broadcast copy in the worker's memory may be dropped
        # (the Active Memory Manager removes replicas that no task waits for).
        self.job = job
        self.worker = get_worker()  # (the actor's thread is not a task's: no get_worker)

    def fold(self, read_key: str, part: Partition,
             state: list[dict[str, Any]]) -> list[dict[str, Any]] | None:
        """The state after the partition; None where its read is not on this worker (the
        scheduler ran it elsewhere, its worker lost): the client then folds in a task."""
        data: Any = self.worker.data  # the read's result, kept by the client's future
        try:
            read = data[read_key]
        except KeyError:
            return None
        return fold_partition(self.job, part, read, state)


def _chained_results(client: Any, job: Job, parts: list[Partition]
                      ) -> Generator[Any, None, None]:
    """The chain of carries: partition k is read on worker k mod W (in parallel, up to L
    = 2 x W partitions ahead of the scans); a thread of the client walks the chain,
    submitting each partition's scan from the state before it, then having the reading
    worker's Folder fold the state over it. The scans' outputs are taken in order here.
    A fold that fails stops the chain: the partition's scan, from the same state, raises
    the error (the first in input order); should it not, the fold's error is raised."""
    import queue
    import threading

    from distributed import wait

    token = uuid.uuid4().hex[:12]
    shared = client.scatter(job, broadcast=True, hash=False)
    workers = sorted(client.scheduler_info().get("workers", {})) or [None]
    folders = [client.submit(Folder, shared, workers=None if w is None else [w], actor=True,
                             key=f"cumtool-folder-{i}-{token}")
               for i, w in enumerate(workers)]
    actors = [_taken(f, parts[0]) for f in folders]
    lookahead = LOOKAHEAD_PER_WORKER * len(workers)
    reads: list[Any] = []
    writes: queue.Queue[Any] = queue.Queue()  # write futures in order; then an end mark
    submitted: list[Any] = []  # the write futures, for the reads' lookahead
    stop = threading.Event()

    def read(k: int) -> None:
        after = (submitted[k - lookahead],) if k >= lookahead else ()
        worker = workers[k % len(workers)]
        reads.append(client.submit(read_partition, shared, parts[k], *after,
                                   workers=None if worker is None else [worker],
                                   allow_other_workers=True,
                                   key=f"cumtool-read-{k}-{token}"))

    def drive() -> None:
        state = state_of(job.plan)
        try:
            for k in range(min(lookahead, len(parts))):
                read(k)
            for k, part in enumerate(parts):
                if stop.is_set():  # the outputs are no longer taken
                    return
                # Where the read is: a copy of it elsewhere could be the one kept.
                worker = workers[k % len(workers)]
                write = client.submit(scan_partition, shared, part, reads[k], state,
                                      workers=None if worker is None else [worker],
                                      allow_other_workers=True,
                                      key=f"cumtool-write-{k}-{token}")
                submitted.append(write)
                writes.put(write)
                if k + lookahead < len(parts):
                    read(k + lookahead)
                submitted[k] = None
                if k + 1 == len(parts):
                    break
                while not reads[k].done():  # (done: where the fold finds it, or failed)
                    if stop.is_set():
                        return
                    with contextlib.suppress(TimeoutError):
                        wait(reads[k], timeout=1)
                        break
                try:
                    try:
                        after = actors[k % len(actors)].fold(reads[k].key, part,
                                                             state).result()
                    except _cluster_failures():  # the actor's worker is gone
                        after = None
                    if after is None:  # read elsewhere: a task where the read is
                        after = fold_in_a_task(client, shared, part, reads[k], state,
                                               f"cumtool-carry-{k}-{token}")
                    state = after
                except Exception as error:
                    writes.put(_worded(error, part))
                    return
                reads[k] = None
        except Exception as error:  # the cluster went away: taken in the main thread
            writes.put(_worded(error, parts[0]))
        finally:
            writes.put(None)

    driver = threading.Thread(target=drive, name="cumtool-chain", daemon=True)
    driver.start()
    try:
        for part in parts:
            write = writes.get()
            if not isinstance(write, (CumtoolError, type(None))):
                result = _taken(write, part)
                del write
                yield result
                del result
                continue
            # The chain stopped before this partition's scan: the fold of the one
            # before it failed, and that partition's scan did not.
            raise write or DataError(f"{part.name}: the chain of carries stopped")
    finally:
        stop.set()
        driver.join()
        reads.clear()
        submitted.clear()
        actors.clear()
        folders.clear()


def fold_in_a_task(client: Any, shared: Any, part: Partition, read: Any,
                   state: list[dict[str, Any]], key: str) -> list[dict[str, Any]]:
    """A link folded by a task, where a partition's read is not on the worker of the
    Folder that was to fold it."""
    return client.submit(fold_partition, shared, part, read, state, key=key).result()


def _summarized_results(client: Any, job: Job, parts: list[Partition]
                        ) -> Generator[Any, None, None]:
    """No chain: every partition is read and summarized in parallel; the client applies
    the summaries in order (microseconds a partition) and submits each partition's scan
    from its carry as soon as the summaries before it are in. Partition k is read once
    the scan of k - L is submitted, so the workers do not read far ahead of the scans,
    which the client takes in order (their outputs wait in the workers' memory till then).
    A summary that a carry takes out of range, or a partition that fails on its own, is
    the first error in input order: its scan, from the exact carry, raises it, and no
    later partition is scanned."""
    token = uuid.uuid4().hex[:12]
    shared = client.scatter(job, broadcast=True, hash=False)
    lookahead = LOOKAHEAD_PER_WORKER * _workers(client)
    reads: list[Any] = []
    summaries: list[Any] = []
    writes: list[Any] = []
    # A copy: a distinct count's carry is advanced in place (_advanced).
    state: list[dict[str, Any]] | None = copy.deepcopy(state_of(job.plan))
    stop: int | None = None  # the partition whose scan fails: none after it is scanned

    def read_more() -> None:
        while len(reads) < len(parts) and len(reads) < len(writes) + lookahead:
            k = len(reads)
            after = (writes[k - lookahead],) if k >= lookahead else ()
            reads.append(client.submit(read_partition, shared, parts[k], *after,
                                       key=f"cumtool-read-{k}-{token}"))
            summaries.append(client.submit(summarize_partition, shared, parts[k], reads[k],
                                           key=f"cumtool-summary-{k}-{token}"))

    def scan_next() -> None:
        nonlocal state, stop
        k = len(writes)
        read_more()
        summary = _taken(summaries[k], parts[k])
        summaries[k] = None
        assert state is not None  # no partition is scanned after `stop`
        before, state = ((state, None) if summary is None
                         else _advanced(job, parts[k], state, summary))
        writes.append(client.submit(scan_partition, shared, parts[k], reads[k], before,
                                    key=f"cumtool-write-{k}-{token}"))
        reads[k] = None
        if state is None:
            stop = k
        read_more()

    try:
        for k in range(len(parts)):
            while stop is None and len(writes) < min(len(parts), k + lookahead):
                scan_next()
            result = _taken(writes[k], parts[k])
            writes[k] = None
            if k == stop:  # a summary said its scan would fail, and it did not
                raise DataError(f"{parts[k].name}: the partition's summary and its scan "
                                "disagree; run it on the local engine")
            yield result
            del result
    finally:
        for held in (reads, summaries, writes):
            held.clear()


def _advanced(job: Job, part: Partition, state: list[dict[str, Any]],
              summaries: Summaries
              ) -> tuple[list[dict[str, Any]], list[dict[str, Any]] | None]:
    """The state a partition is scanned from, and the carried state after it (None where
    its scan fails), from the state before it and its summaries. A distinct count's carry
    (the union of the values seen, carries.DistinctUnion) is advanced in place and never
    sent: the partition is scanned from a carry of its own (carries.advance_distinct)."""
    from cumtool import carries

    before: list[dict[str, Any]] = []
    after: list[dict[str, Any]] | None = []
    plans = job.plan.op_plans()
    for one, values, columns in zip(plans, state, summaries.columns, strict=True):
        advanced = {}
        for column, summary in columns.items():
            if not isinstance(summary, carries.DistinctSummary):
                advanced[column] = carry = copy.deepcopy(values["carries"][column])
                if not carries.advance(one.specs[column], carry, summary, summaries.rows):
                    after = None  # no partition after this one is scanned
        if after is not None:
            after.append({**values, "carries": advanced,
                          "rows_done": summaries.rows + (0 if part.first_of_file
                                                         else values["rows_done"])})
    for k, (values, columns) in enumerate(zip(state, summaries.columns, strict=True)):
        scanned = dict(values["carries"])
        for column, summary in columns.items():
            if isinstance(summary, carries.DistinctSummary):
                union = values["carries"][column]
                if not isinstance(union, carries.DistinctUnion):  # the plan's first carry
                    union = carries.DistinctUnion(union)
                scanned[column] = carries.advance_distinct(union, summary)
                if after is not None:
                    after[k]["carries"][column] = union
        before.append({**values, "carries": scanned})
    return before, after


def _run_to_one_output(client: Any, job: Job, parts: list[Partition]) -> None:
    from cumtool.output import open_output
    from cumtool.runner import table_writer, write_all
    from cumtool.view import View

    request, plan = job.request, job.plan
    scanned = set(plan.selected)
    passing = {name for i, name in enumerate(plan.names) if i not in scanned}
    view = View(request.op, "rows", job.first_name,
                tuple(plan.names[i] for i in plan.selected),
                frozenset(plan.schema.names) - passing, request.table_rows, request.precision)
    # Closed here, not when collected: a writer's failure must not leave the chain's
    # thread and futures to outlive the client.
    with contextlib.closing(_scan_results(client, job, parts)) as results, \
            open_output(request.output) as stream:
        sink = table_writer(request, job.out, stream, plan.schema, view, job.first_name)
        write_all(sink, (batch for table in results for batch in table.to_batches()))


def _run_to_folder(client: Any, job: Job, files: list[InputFile], stage: Staging
                   ) -> list[str]:
    """One partition per input file, each written whole by its worker into the staging
    folder (cumtool.staging); the outputs' names under the folder, to be put in place
    once every file succeeded."""
    to_format = job.request.to_format
    names = relative_outputs(files, stage.given,
                             f".{to_format.lower()}" if to_format else None)
    parts = [_whole_file(job, f.path, stage.staged(relative), stage.target(relative))
             for f, relative in zip(files, names, strict=True)]
    for _written in _scan_results(client, job, parts):
        pass
    return names


def _whole_file(job: Job, name: str, output: str, target: str) -> Partition:
    """An input read whole by one task, its output written by that task."""
    kind = _kind(job.request, name, job.kind)
    _partitioning(name, kind.format)
    compression = kind.compression if kind_from_name(name) else None
    return Partition(name, _location(name), kind.format, compression, output=output,
                     target=target)
