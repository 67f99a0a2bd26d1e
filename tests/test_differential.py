"""Issue 35's differential harness: the same job on every path gives the same bytes, or a
refusal by name.

A job is an input table (TABLES), an op (cumtool.ops' registry) and a setting: a general
option (cumtool/options.py) or an op's own (cumtool.ops.OPTIONS) with a value, derived
from the declarations: an on/off flag and a flag of choices (each choice) by themselves,
any other with VALUES' values, so a new option gets a setting or fails
`test_every_option_has_a_setting`. Each job runs on every path a user can take to it:

- `small`: the reference, a file under 1 MiB read whole (fast.try_small: fast._Job on one
  worker); `render`: the same through the small path's reference renderer
  (tests/small_reference.py) in the pipeline's place;
- `large`: the same file taken as a large one (small.SMALL_BYTES lowered in-process), read
  in blocks of a few bytes and rows: the compiled pipeline, or fast._Job where it does not
  fit; `twin`: the same with the pipeline off (its Python twin); `threads1`, `threads3`:
  the large path with `--threads 1` and `--threads 3` (the small path runs on one worker
  whatever --threads says, so the large path is where threads can differ);
- `batch7`: `--batch-rows 7`, the streaming runner (runner.scan_batches), batch by batch;
- `stdin`: standard input (`-`), in-process as the other tests feed it; `pipe`: through a
  real pipe, a process each (slow);
- `file`: `-o out.csv`; `dir`: `-o out/` (the dataset path);
- `api`: `cumtool.scan(...)`, for settings the API has keywords for: its table's values
  and dtypes against the CLI's Arrow IPC output of the same job, its error as the CLI
  words it;
- `dask`: `--engine dask` with tiny partitions (slow: a cluster).
`test_each_path_runs_where_it_says` holds the knobs to those paths. A path is not run
with a setting that gives the path's own option (PATH_FLAGS).

Each path must give the reference's exit status, message and output (on success), or
refuse the run by name: exit status 2 and one `Error:` line naming an option the job
gives. Outputs are compared byte for byte, except Parquet and Arrow IPC, compared by
schema and values: "Parquet writes one row group per batch" (tests/test_batch_equivalence.py),
and an Arrow IPC file a record batch per batch, so their layout follows the path's
batches by design. Failed runs are compared by status and message only: "after a failure,
how much already reached standard output depends on the writer thread" (test_wide._same).
The input's and output's names, which differ by path, are compared as `<input>` and
`<output>`.

The quick part runs every setting with cumsum on the mixed table and every op plain on
every table. Marked slow: the mixed table with every op and setting, the other tables
with an op of each kind (KINDS), every setting paired with each of COMPOSERS, and Dask.
"""

from __future__ import annotations

import contextlib
import io
import math
import os
import re
import subprocess
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import small_reference
from click.testing import CliRunner

import cumtool
from cumtool.cli import main
from cumtool.errors import CumtoolError
from cumtool.formats.csv import fast, small
from cumtool.ops import OPS, OPS_OF_OPTION, OPTIONS, REGISTRY
from cumtool.ops.decl import Option
from cumtool.options import FLAGS

# The tables ---------------------------------------------------------------------------------

_MIXED_ROWS = [
    # id, name (a --by key; NA is missing), x (floats: 1.50 keeps its text where not
    # scanned; nan, N/A), y (ints: missing, NA, -999 for --na), day (--time),
    # flag (--reset), code (leading zeros: text), note (non-ASCII, a quoted comma)
    "1,Oslo,1.50,3,2024-01-01,0,007,café",
    "2,Lima,2.25,NA,2024-01-15,0,008,plain",
    "3,Oslo,nan,,2024-02-01,1,009,",
    "4,Kyiv,-0.5,-999,2024-02-29,0,010,x",
    "",  # a blank line: not a row, so rows and lines differ from here on
    "5,NA,1e3,7,2024-03-31,0,011,\"a, b\"",
    "6,Lima,,2,2024-04-01,1,012,z",
    "7,Oslo,N/A,5,2024-04-02,0,013,y",
    "8,Kyiv,0.125,-4,2024-06-30,0,014,w",
    "9,Lima,3,11,2024-07-01,0,015,v",
    "10,Oslo,-2.75,NA,2024-09-30,1,016,u",
    "11,,4.5,6,2024-10-01,0,017,t",
    "12,Kyiv,0.1,-999,2024-12-31,0,018,s",
    "13,Oslo,7,8,2025-01-01,0,019,r",
    "14,Lima,inf,1,2025-03-01,1,020,q",
    "15,Kyiv,1.25,,2025-04-01,0,021,p",
    "16,Oslo,-1,3,2025-05-01,0,022,o",
]
_MIXED_HEADER = "id,name,x,y,day,flag,code,note"

TABLES: dict[str, bytes] = {
    "mixed": "\n".join([_MIXED_HEADER, *_MIXED_ROWS, ""]).encode(),
    # Quoted cells holding the delimiter, quotes and line ends; a quoted number; no line
    # end after the last row.
    "quoted": (b'id,name,x,y\n1,"a,b",1.5,2\n2,"two\nlines",2.25,\n3,"say ""hi""",-1,4\n'
               b'4,plain,"5",6\n5,"",0.5,NA\n6,"x,""y""",3,1\n7,"multi\nline\ncell",1,2\n'
               b'8,c,2,3\n9,"d",4,\n10,"e\n",-3,5\n11,f,8,7\n12,"g,h",0.25,-1'),
    # CRLF line ends, a quoted CRLF inside a cell.
    "crlf": ("\r\n".join([_MIXED_HEADER, *_MIXED_ROWS[:8], '17,"Oslo\r\nWest",2,2,'
                          '2024-08-01,0,023,n', *_MIXED_ROWS[8:], ""])).encode(),
    # Comment lines and short rows: errors without --comment and --ragged.
    "comments": (b"id,name,x,y\n# a comment\n1,a,1.5,2\n2,b,2.5\n3,c,,4\n# more, with a comma\n"
                 b"4,d,4,5\n5,e,-1\n6,f,2,2\n7,g,3,1\n8,h,0.5,9\n"),
    # Integers that overflow int64 (cumsum, cumprod) and the narrower dtypes.
    "overflow": (b"id,name,x,y\n1,a,9223372036854775000,100\n2,b,1000,-100\n3,c,5,300\n"
                 b"4,d,-7,200\n5,e,3,-2\n6,f,1,400\n7,g,2,100\n8,h,9,-3\n9,i,4,2\n"),
}

# The settings -------------------------------------------------------------------------------

# Values of the options whose values cannot be made from their declaration (a column, a
# path, a list of markers), by Request field; several where one value would miss a case.
# "{state}" becomes a state file of the path's own.
VALUES: dict[str, list[str]] = {
    "axis": ["columns"],
    "state": ["{state}"], "run_id": ["r1"], "wait": ["1.5"],
    "filename_column": ["file"], "sheet": ["1"],
    "columns": ["x", "name", "2-3", "!id"], "exclude": ["y"],
    "delimiter": [",", ";"], "out_delimiter": [";", "|"],
    "na": ["NA,-999", "nan,Oslo"], "na_rep": ["X"],
    "encoding": ["latin-1"], "out_encoding": ["latin-1", "ascii"],
    "comment": ["#"],
    "by": ["name", "name,flag"], "reset": ["flag"], "time": ["day"], "year_start": ["04-01"],
    "x": ["day"], "x_format": ["%Y-%m-%d"], "width": ["30"], "height": ["8"],
    "table_rows": ["4", "all"], "precision": ["3"],
    "max_record_size": ["1M", "20"],
    "scheduler": ["tcp://127.0.0.1:9"],
    "threads": ["1", "3"], "batch_rows": ["1", "7"],
    # The ops' own.
    "ddof": ["0", "3"], "halflife": ["2"], "times": ["day"], "com": ["1.5"], "span": ["3"],
    "alpha": ["0.5", "1"],
}
# Paths of their own, not settings.
PATH_OPTIONS = ("output", "engine")
# Options that mean something only beside others: each runs alone (a refusal, or nothing
# to do, on every path alike) and with these.
COMPANIONS: dict[str, tuple[str, ...]] = {
    "run_id": ("--state", "{state}"), "wait": ("--state", "{state}"),
    "growing": ("--state", "{state}", "--run-id", "r1"),
    "time": ("--period", "month"), "period": ("--time", "day"),
    "year_start": ("--period", "year", "--time", "day"),
    "x": ("--to", "chart"), "x_format": ("--to", "chart", "--x", "day"),
    "width": ("--to", "chart"), "height": ("--to", "chart"),
    "table_rows": ("--to", "table"), "precision": ("--to", "table"),
    "times": ("--halflife", "2 days"),
}
# What an op needs to run at all (ewma: one of its four parameters), unless the setting
# gives one of these.
BASE: dict[str, tuple[str, ...]] = {"ewma": ("--alpha", "0.5")}
_EWMA_PARAMETERS = ("--alpha", "--span", "--com", "--halflife")
# Options that change what every other one meets (groups, order, which cells are values,
# which columns are written): the slow part pairs each with every other setting.
COMPOSERS = ("--by", "--reverse", "--exclusive", "--keep", "--skipna", "--only-scanned",
             "--na")


@dataclass(frozen=True)
class Setting:
    id: str
    args: tuple[str, ...]
    declared: tuple[Option, ...]  # the options it gives
    ops: tuple[str, ...] = OPS  # the ops it is for (an op's option: the ops declaring it)

    def fits(self, op: str) -> tuple[str, ...]:
        """The args of this setting for `op` (with what the op needs to run)."""
        base = BASE.get(op, ())
        if base and any(flag in self.args for flag in _EWMA_PARAMETERS):
            base = ()
        return (*self.args, *base)


def _values(declared: Option) -> list[str] | None:
    """The values a setting gives `declared` (as typed), [] for an on/off flag; None
    where there is none to give (a new option without an entry in VALUES)."""
    if declared.is_flag:
        return []
    if declared.name in VALUES:
        return VALUES[declared.name]
    if declared.choices:
        return [c for c in declared.choices if c != declared.default]
    return None


def _declared() -> list[Option]:
    """Every option a user gives a value: the general flags and the ops' own."""
    return [o for o in FLAGS if o.name not in PATH_OPTIONS] + list(OPTIONS.values())


def _settings() -> list[Setting]:
    settings = [Setting("plain", (), ())]
    for declared in _declared():
        values = _values(declared)
        if values is None:
            continue
        ops = OPS_OF_OPTION.get(declared.flag, OPS) if declared.flag in OPTIONS else OPS
        flag = declared.flag
        for args in ([flag],) if declared.is_flag else ([flag, v] for v in values):
            name = "=".join(a.lstrip("-") for a in args)
            settings.append(Setting(name, tuple(args), (declared,), ops))
            if declared.name in COMPANIONS:
                settings.append(Setting(name + "+", (*args, *COMPANIONS[declared.name]),
                                        (declared,), ops))
    return settings


SETTINGS = _settings()
_BY_ID = {s.id: s for s in SETTINGS}
assert len(_BY_ID) == len(SETTINGS)


def _pairs() -> list[Setting]:
    """Each composer's first setting with every other setting of a general option."""
    firsts: dict[str, Setting] = {}
    for setting in SETTINGS:
        if setting.declared and setting.declared[0].flag in COMPOSERS:
            firsts.setdefault(setting.declared[0].flag, setting)
    return [Setting(f"{first.id}&{other.id}", (*first.args, *other.args),
                    (*first.declared, *other.declared))
            for first in firsts.values() for other in SETTINGS
            if other.declared and other.declared != first.declared and other.ops == OPS]


PAIRS = _pairs()

# The paths ----------------------------------------------------------------------------------

REPO = Path(__file__).resolve().parent.parent

# The input on every path but standard input, named with words as long as those of
# "standard input": a chart's caption names the input, and the lines it wraps to take
# the plot's height.
INPUT = "readings 1.csv"
assert [len(w) for w in INPUT.split()] == [len("standard"), len("input")]
# Either name, as a message or a caption names it (wrapped at its space, or not).
_NAMES = re.compile(rb"(readings|standard)\s+(1\.csv|input)")


@dataclass
class Outcome:
    """What a run gave: its exit status and standard error (the input's name made
    `<input>`), and its output's content when it succeeded."""

    code: int
    stderr: str
    output: Any = None


@dataclass
class Job:
    table: str
    op: str
    setting: Setting
    folder: Path
    runner: CliRunner
    scheduler: str | None = None

    @property
    def args(self) -> tuple[str, ...]:
        return self.setting.fits(self.op)

    def given(self, path: str) -> tuple[str, ...]:
        return tuple(a.replace("{state}", f"{path}.state.json") for a in self.args)

    @property
    def to(self) -> str | None:
        args = self.args
        return args[args.index("--to") + 1] if "--to" in args else None


_TYPED = ("parquet", "arrow", "arrows")


def _content(data: bytes, to: str | None) -> Any:
    """Parquet and Arrow IPC by schema and values; every other output by its bytes."""
    if to not in _TYPED:
        return data
    if to == "parquet":
        table = pq.read_table(io.BytesIO(data))
    elif to == "arrow":
        table = pa.ipc.open_file(pa.BufferReader(data)).read_all()
    else:
        table = pa.ipc.open_stream(pa.BufferReader(data)).read_all()
    return _values_of(table)


def _values_of(table: pa.Table) -> tuple[str, list[Any]]:
    """A table's schema (names, types, metadata aside) and values, NaN equal to NaN."""
    def cell(value: Any) -> Any:
        return "nan" if isinstance(value, float) and math.isnan(value) else value

    schema = ", ".join(f"{f.name}: {f.type}" for f in table.schema)
    return schema, [[cell(v) for v in column.to_pylist()] for column in table.columns]


def _cli(job: Job, path: str, argv: list[str], input: bytes | None = None,
         written: Path | None = None) -> Outcome:
    """Run the command line in-process (`written`: the output file or folder -o names)."""
    result = job.runner.invoke(main, argv, input=input, catch_exceptions=False)
    return _outcome(job, path, argv, input is not None, result.exit_code,
                    result.stdout_bytes, result.stderr, written)


def _outcome(job: Job, path: str, argv: list[str], stdin: bool, code: int, stdout: bytes,
             stderr: str, written: Path | None = None) -> Outcome:
    """A run's outcome; the input and the output as messages name them become `<input>`
    and `<output>` (each path names its own)."""
    if written is not None:
        files = sorted(p for p in written.rglob("*") if p.is_file()) if written.is_dir() else (
            [written] if written.exists() else [])
        if code == 0:
            assert len(files) == 1, (path, files)
            stdout = files[0].read_bytes()
        else:  # "nothing is written" (SEMANTICS.md): no output, not even a part of one
            assert not files, (path, files, stderr)
        stderr = stderr.replace(str(written / INPUT) if written.suffix == "" else
                                str(written), "<output>")
    said = _NAMES.sub(b"<input>", stderr.replace("standard output", "<output>").encode())
    output = None
    if code == 0:
        if stdin and "--filename-column" in argv:
            # The column holds "each row's input path as given": '-' for standard input.
            stdout = stdout.replace(b"\n-,", b"\n" + INPUT.encode() + b",")
        output = _content(stdout if job.to in _TYPED else _NAMES.sub(b"<input>", stdout),
                          job.to)
    return Outcome(code, said.decode(), output)


@contextlib.contextmanager
def _large() -> Iterator[None]:
    """The file taken as a large one, in blocks of a few bytes and rows (as
    tests/test_fastcsv.py's run_both)."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(small, "SMALL_BYTES", -1)
        patch.setattr(fast, "CHUNK_ROWS", 3)
        patch.setattr(fast, "CHUNK_BYTES", 7)
        patch.setattr(fast, "PIPELINE_CHUNK_BYTES", 7)
        yield


def _small(job: Job) -> Outcome:
    return _cli(job, "small", [job.op, INPUT, *job.given("small")])


def _large_path(job: Job) -> Outcome:
    with _large():
        return _cli(job, "large", [job.op, INPUT, *job.given("large")])


def _twin(job: Job) -> Outcome:
    with _large(), pytest.MonkeyPatch.context() as patch:
        patch.setattr(fast, "COMPILED", False)
        return _cli(job, "twin", [job.op, INPUT, *job.given("twin")])


def _reference(request: Any, data: bytes) -> bytes | None:
    """small_reference.render as fast.render_whole answers: None where it hands over."""
    try:
        return small_reference.render(request, data)
    except (small.Handover, CumtoolError):
        return None


def _render(job: Job) -> Outcome:
    """The small file through the small path's reference renderer, the one this path
    had before it ran fast._Job on one worker (the oracle issue 35 keeps it as)."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(fast, "render_whole", _reference)
        return _cli(job, "render", [job.op, INPUT, *job.given("render")])


def _threads(count: int) -> Callable[[Job], Outcome]:
    def run(job: Job) -> Outcome:
        with _large():
            return _cli(job, f"threads{count}",
                        [job.op, INPUT, *job.given(f"threads{count}"), "--threads",
                         str(count)])
    return run


def _batch7(job: Job) -> Outcome:
    return _cli(job, "batch7", [job.op, INPUT, *job.given("batch7"), "--batch-rows", "7"])


def _stdin(job: Job) -> Outcome:
    return _cli(job, "stdin", [job.op, "-", *job.given("stdin")],
                input=TABLES[job.table])


def _pipe(job: Job) -> Outcome:
    """Standard input through a real pipe, in a process of its own (the in-process runs
    read a buffer in memory): this checkout's cumtool, not an installed one."""
    argv = [job.op, "-", *job.given("pipe")]
    done = subprocess.run([sys.executable, "-m", "cumtool", *argv], input=TABLES[job.table],
                          capture_output=True, cwd=job.folder, timeout=120,
                          env={**os.environ, "PYTHONPATH": str(REPO)})
    return _outcome(job, "pipe", argv, True, done.returncode, done.stdout,
                    done.stderr.decode())


def _file(job: Job) -> Outcome:
    out = job.folder / "out.csv"
    return _cli(job, "file", [job.op, INPUT, *job.given("file"), "-o", str(out)],
                written=out)


def _dir(job: Job) -> Outcome:
    out = job.folder / "out"
    return _cli(job, "dir", [job.op, INPUT, *job.given("dir"), "-o", f"{out}{os.sep}"],
                written=out)


def _dask(job: Job) -> Outcome:
    assert job.scheduler is not None
    return _cli(job, "dask", [job.op, INPUT, *job.given("dask"), "--engine", "dask",
                              "--scheduler", job.scheduler])


def _api_keywords(job: Job) -> dict[str, Any] | None:
    """The job's options as cumtool.scan's keywords; None where one has none (the API
    reads files with the CLI's defaults: no --na, --delimiter, ... keywords)."""
    keywords: dict[str, Any] = {}
    args = list(job.args)
    by_flag = {f: o for o in _declared() for f in (o.flag, *o.aliases)}
    while args:
        flag = args.pop(0)
        declared = by_flag[flag]
        if not (declared.api or declared.flag in OPTIONS):
            return None
        if declared.is_flag:
            keywords[declared.name] = not declared.default if declared.negates else True
            continue
        text = args.pop(0)
        if declared.multiple:
            # A selection's syntax (ranges, !COLS, 1-based positions) is the command
            # line's; the API takes names.
            if any(c in text for c in "-!") or text.isdigit():
                return None
            keywords[declared.name] = text.split(",")
        elif declared.complete == "columns":  # a column: the API takes its name
            keywords[declared.name] = text
        elif declared.parse is not None:  # --halflife: rows as a number, else a duration
            keywords[declared.name] = declared.parse(text)
        else:
            keywords[declared.name] = {int: int, float: float}.get(declared.type, str)(text)
    return keywords


def _api(job: Job) -> tuple[Outcome, Outcome] | None:
    """cumtool.scan's table and the CLI's Arrow IPC output of the same job (None where
    the API has no keyword for an option the job gives)."""
    keywords = _api_keywords(job)
    if keywords is None:
        return None
    reference = _cli(job, "arrow", [job.op, INPUT, *job.given("arrow"), "--to", "arrow"])
    if reference.code == 0:
        reference.output = _content(reference.output, "arrow")
    try:
        table = cumtool.scan(INPUT, job.op, **keywords)
    except CumtoolError as error:
        message = f"Error: {error.cli_message()}\n".replace(INPUT, "<input>")
        return reference, Outcome(error.exit_code, message)
    return reference, Outcome(0, "", _values_of(table))


PATHS: dict[str, Callable[[Job], Outcome]] = {
    "render": _render, "large": _large_path, "twin": _twin, "threads1": _threads(1),
    "threads3": _threads(3), "batch7": _batch7, "stdin": _stdin, "file": _file, "dir": _dir,
}
# The options a path gives itself: a setting that gives one too is not run on that path
# (the path's own value would replace the setting's).
PATH_FLAGS = {"threads1": ("--threads",), "threads3": ("--threads",),
              "batch7": ("--batch-rows",), "file": ("--output", "-o"), "dir": ("--output", "-o"),
              "dask": ("--engine", "--scheduler")}


def _refusal(job: Job, path: str, outcome: Outcome) -> bool:
    """Exit status 2 and one `Error:` line naming an option the job gives."""
    lines = outcome.stderr.splitlines()
    if outcome.code != 2 or len(lines) != 1 or not lines[0].startswith("Error: "):
        return False
    named = [a for a in job.args if a.startswith("-")] + list(PATH_FLAGS.get(path, ()))
    return any(flag in lines[0] for flag in named)


def _agree(job: Job, path: str, reference: Outcome, outcome: Outcome) -> str | None:
    """None where `outcome` is the reference's (or a refusal by name), else what differs."""
    if (outcome.code, outcome.stderr) == (reference.code, reference.stderr):
        if outcome.code != 0 or outcome.output == reference.output:
            return None
        return f"{path}: other output:\n  {outcome.output!r}\n  not {reference.output!r}"
    if _refusal(job, path, outcome):
        return None
    return (f"{path}: exit {outcome.code} {outcome.stderr!r}, not exit {reference.code} "
            f"{reference.stderr!r}")


def run_job(job: Job, paths: tuple[str, ...]) -> list[str]:
    """Every path's disagreement with the reference (the small path), as lines."""
    (job.folder / INPUT).write_bytes(TABLES[job.table])
    reference = _small(job)
    problems = []
    for path in paths:
        if path == "api":
            both = _api(job)
            if both is not None:
                problem = _agree(job, "api", *both)
                if problem:
                    problems.append(problem)
            continue
        if set(PATH_FLAGS.get(path, ())) & set(job.args):
            continue
        outcome = {**PATHS, "pipe": _pipe, "dask": _dask}[path](job)
        problem = _agree(job, path, reference, outcome)
        if problem:
            problems.append(problem)
    return problems


LOCAL = (*PATHS, "api")


def _check(table: str, op: str, setting: Setting, folder: Path, paths: tuple[str, ...],
           scheduler: str | None = None) -> None:
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(folder)  # the input is INPUT on every path, as messages name it
        job = Job(table, op, setting, folder, CliRunner(), scheduler)
        problems = run_job(job, paths)
    assert not problems, (f"cumtool {op} {INPUT} {' '.join(job.args)} on {table}:\n"
                          + "\n".join(problems))


# The jobs -----------------------------------------------------------------------------------


def _job_id(table: str, op: str, setting: Setting) -> str:
    return f"{table}-{op}-{setting.id}"


def _job(table: str, op: str, setting: Setting) -> Any:
    return pytest.param(table, op, setting, id=_job_id(table, op, setting))


# Every setting with cumsum (an op's own: its first op) on the mixed table; every op
# plain on every table.
QUICK = ([_job("mixed", "cumsum" if "cumsum" in s.ops else s.ops[0], s) for s in SETTINGS]
         + [_job(t, op, _BY_ID["plain"]) for t in TABLES for op in OPS
            if (t, op) != ("mixed", "cumsum")])
_QUICK_IDS = {p.id for p in QUICK}


def _kinds() -> tuple[str, ...]:
    """An op of each way the ops are scanned (kernels' accumulators, stats.py's records,
    distinct.py's sets): the first of each in the registry."""
    kinds: dict[str, str] = {}
    for name, op in REGISTRY.items():
        kinds.setdefault("distinct" if op.distinct else "stat" if op.stat else "accumulator",
                         name)
    return tuple(kinds.values())


KINDS = _kinds()
# The mixed table with every op and setting; the others with an op of each kind.
FULL = [_job(t, op, s) for t in TABLES for s in SETTINGS for op in s.ops
        if (t == "mixed" or op in KINDS or op == s.ops[0])
        and _job_id(t, op, s) not in _QUICK_IDS]
PAIRED = [_job("mixed", "cumsum", s) for s in PAIRS]
# Standard input through a real pipe (a process each): every op plain on every table.
PIPED = [p for p in QUICK if p.values[2] is _BY_ID["plain"]]
# Dask: the quick part's jobs (a cluster's round trips make each run slower).
DASK = QUICK


@pytest.mark.parametrize(("table", "op", "setting"), QUICK)
def test_every_path_agrees(table: str, op: str, setting: Setting, tmp_path: Path) -> None:
    _check(table, op, setting, tmp_path, LOCAL)


@pytest.mark.slow
@pytest.mark.parametrize(("table", "op", "setting"), FULL)
def test_every_path_agrees_on_the_full_matrix(table: str, op: str, setting: Setting,
                                              tmp_path: Path) -> None:
    _check(table, op, setting, tmp_path, LOCAL)


@pytest.mark.slow
@pytest.mark.parametrize(("table", "op", "setting"), PAIRED)
def test_every_path_agrees_on_pairs(table: str, op: str, setting: Setting,
                                    tmp_path: Path) -> None:
    _check(table, op, setting, tmp_path, LOCAL)


@pytest.mark.slow
@pytest.mark.parametrize(("table", "op", "setting"), PIPED)
def test_a_real_pipe_agrees(table: str, op: str, setting: Setting, tmp_path: Path) -> None:
    _check(table, op, setting, tmp_path, ("pipe",))


@pytest.mark.slow
@pytest.mark.parametrize(("table", "op", "setting"), DASK)
def test_dask_agrees(table: str, op: str, setting: Setting, tmp_path: Path, scheduler: str,
                     tiny_partitions: None) -> None:
    pytest.importorskip("distributed")
    _check(table, op, setting, tmp_path, ("dask",), scheduler)


@pytest.mark.slow
def test_dask_folds_each_logcumsumexp_column_in_its_own_dtype(
        invoke: Callable[..., Any], write_file: Callable[..., Path], scheduler: str,
        tiny_partitions: None, monkeypatch: pytest.MonkeyPatch) -> None:
    """`printf 'a,x\\n1,1.5\\n2,2.25\\n3,-1\\n4,5\\n' > q.csv; cumtool logcumsumexp q.csv
    --engine dask` with partitions of 16 bytes: x's 2.25 was folded as 2 (row 3 gave
    2.349..., not 2.662...)."""
    pytest.importorskip("distributed")
    from cumtool import distributed

    monkeypatch.setattr(distributed, "PARTITION_BYTES", 16)
    path = write_file("q.csv", "a,x\n1,1.5\n2,2.25\n3,-1\n4,5\n")
    local = invoke("logcumsumexp", str(path))
    assert local.stdout_bytes.splitlines()[3] == b"3.4076059644443806,2.6628648361805505"
    dask = invoke("logcumsumexp", str(path), "--engine", "dask", "--scheduler", scheduler)
    assert (dask.exit_code, dask.stdout_bytes) == (0, local.stdout_bytes), dask.stderr


@pytest.mark.slow
def test_dask_notes_a_column_left_out_as_the_local_engine(
        invoke: Callable[..., Any], write_file: Callable[..., Path], scheduler: str,
        tiny_partitions: None) -> None:
    pytest.importorskip("distributed")
    path = write_file("n.csv", "x,y\n" + "".join(f"{k},{k}\n" for k in range(9)) + "9,-\n")
    local = invoke("cumsum", str(path))
    assert local.stderr.startswith("note: column 'y' is not scanned")
    dask = invoke("cumsum", str(path), "--engine", "dask", "--scheduler", scheduler)
    assert (dask.exit_code, dask.stderr) == (0, local.stderr)


# The harness itself -------------------------------------------------------------------------


def test_each_path_runs_where_it_says(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The knobs still send a plain job where each path is meant to go, so that no path
    compares the reference with itself: the small file on fast._Job's compiled pipeline
    (one worker), `render` on the reference renderer, the large paths on the compiled pipeline or
    (`twin`) on its Python twin, `--batch-rows` on the streaming runner (run_table) and
    `-o DIR/` on datasets' driver, each through runner.scan_batches."""
    from cumtool import runner

    went: list[str] = []

    def spy(name: str, function: Callable[..., Any]) -> Any:
        def spied(*args: Any, **keywords: Any) -> Any:
            went.append(name)
            return function(*args, **keywords)
        return spied

    def spy_generator(name: str, function: Callable[..., Iterator[Any]]) -> Any:
        def spied(*args: Any, **keywords: Any) -> Iterator[Any]:
            went.append(name)
            yield from function(*args, **keywords)
        return spied

    monkeypatch.setattr(fast._Job, "pieces", spy_generator("job", fast._Job.pieces))
    monkeypatch.setattr(fast._Job, "_run_compiled",
                        spy_generator("compiled", fast._Job._run_compiled))
    monkeypatch.setattr(small_reference, "render", spy("render", small_reference.render))
    monkeypatch.setattr(fast, "render_whole", spy("whole", fast.render_whole))
    monkeypatch.setattr(runner, "scan_batches", spy("loop", runner.scan_batches))
    from cumtool import engine

    table = spy("runner", runner.run_table)
    monkeypatch.setattr(runner, "run_table", table)
    monkeypatch.setattr(engine, "run_table", table)  # engine's own name for it
    monkeypatch.chdir(tmp_path)
    (tmp_path / INPUT).write_bytes(TABLES["mixed"])
    job = Job("mixed", "cumsum", _BY_ID["plain"], tmp_path, CliRunner())
    where = {}
    for path, run in {"small": _small, **PATHS}.items():
        went.clear()
        assert run(job).code == 0, path
        where[path] = tuple(dict.fromkeys(went))
    # Every path but the reference renderer runs the one loop (runner.scan_batches): the
    # CSV engine's pieces through it, the streaming runner's batches through it.
    assert where == {
        "small": ("whole", "loop", "job", "compiled"), "render": ("render",),
        "large": ("job", "compiled", "loop"), "twin": ("job", "loop"),
        "threads1": ("job", "compiled", "loop"), "threads3": ("job", "compiled", "loop"),
        "batch7": ("runner", "loop"), "stdin": ("whole", "loop", "job", "compiled"),
        "file": ("whole", "loop", "job", "compiled"), "dir": ("loop",)}


def test_every_option_has_a_setting() -> None:
    """A new option is covered: an on/off flag and a flag of choices by themselves, any
    other once VALUES gives it a value (and COMPANIONS what it needs beside it)."""
    missing = [o.flag for o in _declared() if _values(o) is None]
    assert not missing, f"give {missing} values in VALUES"
    covered = {s.declared[0].name for s in SETTINGS if s.declared}
    assert covered == {o.name for o in _declared()}
    names = {o.name for o in _declared()}
    assert set(VALUES) <= names, f"no such option: {sorted(set(VALUES) - names)}"
    assert set(COMPANIONS) <= names, f"no such option: {sorted(set(COMPANIONS) - names)}"


def test_every_op_runs_on_the_mixed_table(tmp_path: Path) -> None:
    """The base each op gets (BASE) makes its plain run succeed, so its jobs compare
    results, not one usage error."""
    (tmp_path / INPUT).write_bytes(TABLES["mixed"])
    for op in OPS:
        result = CliRunner().invoke(main, [op, str(tmp_path / INPUT), *BASE.get(op, ())],
                                    catch_exceptions=False)
        assert result.exit_code == 0, (op, result.stderr)
