"""What every benchmark scenario shares: the data (made from a fixed seed, reused while
the manifest matches), the commands of cumtool and of its peers, running them as separate
processes with interleaved timed runs and peak RSS, checking their outputs, and the
Markdown report. Each scenario is a module `scenario_<name>.py` with a `run(bench)`;
`bench.py` is the entry point that runs them."""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import json
import os
import platform
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
DATA = HERE / "data"
OUT = DATA / "out"

SEED = 20240603
GENERATOR_VERSION = 1  # bump when the data recipe changes, so old files are remade
CHUNK_ROWS = 1_000_000
FLOAT_COLUMNS = [f"f{i}" for i in range(6)]
INT_COLUMNS = ["i0", "i1"]
WIDE_COLUMNS = FLOAT_COLUMNS + INT_COLUMNS
SMALL_ROWS = 10_000
OPS = ("cumsum", "cumprod", "cummax", "cummin", "logcumsumexp")
MIB = 1024 * 1024


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def cell(text: str) -> str:
    """Text for a Markdown table cell: a `|` (a pipeline's label) would end the cell, even
    inside backticks."""
    return text.replace("|", "\\|")


# Data ----------------------------------------------------------------------------------

def wide_chunks(rows: int, seed: int) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """(floats, ints) blocks of the wide table: 6 float64 columns of normal(0, 100) values
    with two decimals (about 7 characters in CSV) and 2 int64 columns in [-1000, 1000]."""
    rng = np.random.default_rng(seed)
    done = 0
    while done < rows:
        n = min(CHUNK_ROWS, rows - done)
        floats = np.round(rng.normal(0.0, 100.0, (n, len(FLOAT_COLUMNS))), 2)
        ints = rng.integers(-1000, 1001, (n, len(INT_COLUMNS)), dtype=np.int64)
        yield floats, ints
        done += n


def keyed_chunks(rows: int, groups: int, seed: int) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """(key, value) blocks: an int64 key with `groups` distinct values in random order,
    and a float64 value of normal(0, 100) with two decimals."""
    rng = np.random.default_rng(seed)
    done = 0
    while done < rows:
        n = min(CHUNK_ROWS, rows - done)
        if done == 0:  # every group appears: the first `groups` rows are a permutation
            keys = rng.integers(0, groups, n, dtype=np.int64)
            first = min(groups, n)
            keys[:first] = rng.permutation(groups)[:first]
        else:
            keys = rng.integers(0, groups, n, dtype=np.int64)
        values = np.round(rng.normal(0.0, 100.0, n), 2)
        yield keys, values
        done += n


class Reference:
    """What a correct cumulative scan must end on, computed while the data are made:
    exact column sums (the values are whole cents, so integer sums are exact), and the
    column maxima and minima."""

    def __init__(self) -> None:
        self.cents = np.zeros(len(WIDE_COLUMNS), dtype=np.int64)
        self.maxima = np.full(len(WIDE_COLUMNS), -np.inf)
        self.minima = np.full(len(WIDE_COLUMNS), np.inf)
        self.rows = 0

    def add(self, floats: np.ndarray, ints: np.ndarray) -> None:
        block = np.hstack([floats, ints.astype(np.float64)])
        cents = np.hstack([np.rint(floats * 100).astype(np.int64), ints * 100])
        self.cents += cents.sum(axis=0)
        self.maxima = np.maximum(self.maxima, block.max(axis=0))
        self.minima = np.minimum(self.minima, block.min(axis=0))
        self.rows += block.shape[0]

    def as_json(self) -> dict[str, Any]:
        return {"rows": self.rows, "sums": [int(c) / 100 for c in self.cents],
                "maxima": self.maxima.tolist(), "minima": self.minima.tolist()}


def _write_wide_csv(path: Path, rows: int, seed: int) -> dict[str, Any]:
    import polars as pl

    reference = Reference()
    with open(path, "wb") as stream:
        for i, (floats, ints) in enumerate(wide_chunks(rows, seed)):
            frame = pl.DataFrame(
                {**{c: floats[:, j] for j, c in enumerate(FLOAT_COLUMNS)},
                 **{c: ints[:, j] for j, c in enumerate(INT_COLUMNS)}})
            frame.write_csv(stream, include_header=i == 0)
            reference.add(floats, ints)
    return reference.as_json()


def _write_wide_parquet(path: Path, rows: int, seed: int) -> dict[str, Any]:
    import pyarrow as pa
    import pyarrow.parquet as pq

    reference = Reference()
    schema = pa.schema([(c, pa.float64()) for c in FLOAT_COLUMNS]
                       + [(c, pa.int64()) for c in INT_COLUMNS])
    with pq.ParquetWriter(path, schema) as writer:
        for floats, ints in wide_chunks(rows, seed):
            arrays = [pa.array(floats[:, j]) for j in range(floats.shape[1])]
            arrays += [pa.array(ints[:, j]) for j in range(ints.shape[1])]
            writer.write_table(pa.Table.from_arrays(arrays, schema=schema))
            reference.add(floats, ints)
    return reference.as_json()


def _write_wide_npy(path: Path, rows: int, seed: int) -> dict[str, Any]:
    reference = Reference()
    array = np.lib.format.open_memmap(path, mode="w+", dtype=np.float64,
                                      shape=(rows, len(WIDE_COLUMNS)))
    start = 0
    for floats, ints in wide_chunks(rows, seed):
        n = floats.shape[0]
        array[start:start + n, :len(FLOAT_COLUMNS)] = floats
        array[start:start + n, len(FLOAT_COLUMNS):] = ints
        reference.add(floats, ints)
        start += n
    array.flush()
    del array
    return reference.as_json()


def _write_keyed_csv(path: Path, rows: int, groups: int, seed: int) -> dict[str, Any]:
    import polars as pl

    with open(path, "wb") as stream:
        for i, (keys, values) in enumerate(keyed_chunks(rows, groups, seed)):
            pl.DataFrame({"key": keys, "value": values}).write_csv(
                stream, include_header=i == 0)
    return {"rows": rows, "groups": groups}


@dataclass
class Datasets:
    rows: int
    keyed_groups: int
    manifest: dict[str, Any] = field(default_factory=dict)

    def _make(self, name: str, recipe: dict[str, Any],
              writer: Callable[[Path], dict[str, Any]]) -> Path:
        """Make DATA/name unless a file made by the same recipe is already there."""
        path = DATA / name
        known = self.manifest.get(name)
        if (known and known.get("recipe") == recipe and path.exists()
                and path.stat().st_size == known.get("bytes")):
            return path
        log(f"making {path.relative_to(REPO)} ...")
        started = time.perf_counter()
        partial = path.with_name(path.name + ".partial")
        info = writer(partial)
        partial.replace(path)
        self.manifest[name] = {"recipe": recipe, "bytes": path.stat().st_size, **info}
        self._save()
        log(f"  {path.stat().st_size / MIB:.0f} MiB in {time.perf_counter() - started:.1f} s")
        return path

    def _save(self) -> None:
        (DATA / "manifest.json").write_text(json.dumps(self.manifest, indent=1) + "\n")

    def load(self) -> None:
        DATA.mkdir(parents=True, exist_ok=True)
        OUT.mkdir(parents=True, exist_ok=True)
        with contextlib.suppress(OSError, ValueError):
            self.manifest = json.loads((DATA / "manifest.json").read_text())

    def wide(self, fmt: str, rows: int | None = None) -> Path:
        rows = rows or self.rows
        seed = SEED + rows
        recipe = {"kind": "wide", "format": fmt, "rows": rows, "seed": seed,
                  "version": GENERATOR_VERSION}
        writers = {"csv": _write_wide_csv, "parquet": _write_wide_parquet,
                   "npy": _write_wide_npy}
        return self._make(f"wide-{rows}.{fmt}", recipe,
                          lambda p: writers[fmt](p, rows, seed))

    def keyed(self) -> Path:
        rows, groups, seed = self.rows, self.keyed_groups, SEED + 7 * self.rows
        recipe = {"kind": "keyed", "rows": rows, "groups": groups, "seed": seed,
                  "version": GENERATOR_VERSION}
        return self._make(f"keyed-{rows}-{groups}.csv", recipe,
                          lambda p: _write_keyed_csv(p, rows, groups, seed))

    def reference(self, path: Path) -> dict[str, Any]:
        return dict(self.manifest[path.name])


# Running -------------------------------------------------------------------------------

@dataclass
class Command:
    label: str
    argv: list[str]
    output: Path
    stdout_to_output: bool = False  # the tool writes to standard output (Miller)
    walls: list[float] = field(default_factory=list)
    rss: list[int] = field(default_factory=list)  # bytes
    cpu: list[float] = field(default_factory=list)  # user + system seconds
    error: str | None = None

    @property
    def ok(self) -> bool:
        return self.error is None and bool(self.walls)


# Peak RSS cannot be read with os.wait4 on a child of this process: Linux starts a forked
# child's high-water mark at its parent's resident size and keeps it across exec, so every
# child would report at least this (large) process's memory. The measured command is
# therefore started by a small, freshly exec'd launcher: GNU time if present, else a
# minimal Python that forks, execs the command and reads os.wait4's ru_maxrss.
LAUNCHER = """
import os, sys
pid = os.fork()
if pid == 0:
    try:
        os.execvp(sys.argv[2], sys.argv[2:])
    except OSError as error:
        os.write(2, f"cannot run {sys.argv[2]}: {error}\\n".encode())
        os._exit(127)
_, status, usage = os.wait4(pid, 0)
with open(sys.argv[1], "w") as report:
    peak = usage.ru_maxrss * (1 if sys.platform == "darwin" else 1024)
    report.write(f"{peak} {usage.ru_utime + usage.ru_stime}\\n")
code = os.waitstatus_to_exitcode(status)
sys.exit(code if code >= 0 else 128 - code)
"""


def _gnu_time() -> str | None:
    path = "/usr/bin/time"
    if not os.access(path, os.X_OK):
        return None
    probe = subprocess.run([path, "--version"], capture_output=True, text=True)
    return path if "GNU" in probe.stdout + probe.stderr else None


GNU_TIME = _gnu_time()
RSS_METHOD = (
    "peak RSS is %M of GNU time (/usr/bin/time), which starts each command" if GNU_TIME else
    "peak RSS is os.wait4's ru_maxrss, read by a small launcher process that starts "
    "each command")


# `taskset -c CPUS` before every command (bench.py --pin): every row of the report pinned.
PIN: list[str] = []
# The CPU of the "1 core" rows that some scenarios add beside their unpinned ones (see
# one_core): both in one interleaved run, so one report shows how each command scales.
ONE_CORE_CPU = "0"


def _measured(argv: list[str], report: Path) -> list[str]:
    argv = [*PIN, *argv]
    if GNU_TIME:
        return [GNU_TIME, "-f", "%M %U %S", "-o", str(report), *argv]
    return [sys.executable, "-I", "-S", "-c", textwrap.dedent(LAUNCHER), str(report), *argv]


def _usage(report: Path) -> tuple[int, float]:
    """(peak RSS bytes, CPU seconds) from the launcher's report."""
    fields = report.read_text().strip().splitlines()[-1].split()
    if GNU_TIME:  # KiB, user seconds, system seconds
        return int(fields[0]) * 1024, float(fields[1]) + float(fields[2])
    return int(fields[0]), float(fields[1])


def run_once(command: Command) -> tuple[float, int, float]:
    """Run the command once; returns (wall seconds, peak RSS bytes, CPU seconds) or raises
    RuntimeError with the end of its standard error."""
    command.output.unlink(missing_ok=True)
    os.sync()
    with tempfile.TemporaryDirectory() as scratch, tempfile.TemporaryFile() as errors, \
            contextlib.ExitStack() as stack:
        report = Path(scratch) / "rss"
        stdout: Any = subprocess.DEVNULL
        if command.stdout_to_output:
            stdout = stack.enter_context(open(command.output, "wb"))
        argv = _measured(command.argv, report)
        started = time.perf_counter()
        status = subprocess.run(argv, stdin=subprocess.DEVNULL, stdout=stdout,
                                stderr=errors).returncode
        wall = time.perf_counter() - started
        if status != 0:
            errors.seek(0)
            tail = errors.read().decode(errors="replace").strip().splitlines()[-3:]
            raise RuntimeError(f"exit {status}: {' | '.join(tail)[:300]}")
        if not command.output.exists():
            raise RuntimeError(f"exit 0 but no output file {command.output}")
        return (wall, *_usage(report))


def run_interleaved(commands: list[Command], runs: int, warmup: int) -> None:
    for round_number in range(-warmup, runs):
        timed = round_number >= 0
        shift = round_number % len(commands)
        order = commands[shift:] + commands[:shift]
        log(f"  {'run ' + str(round_number + 1) if timed else 'warm-up'}/{runs}: "
            + ", ".join(c.label for c in order if c.error is None))
        for command in order:
            if command.error is not None:
                continue
            try:
                wall, rss, cpu = run_once(command)
            except RuntimeError as error:
                command.error = str(error)
                log(f"    {command.label} FAILED: {error}")
                continue
            if timed:
                command.walls.append(wall)
                command.rss.append(rss)
                command.cpu.append(cpu)


def one_core(command: Command) -> Command | None:
    """The same command under `taskset -c 0`, as its own row (label and output suffixed
    ", 1 core") of the same interleaved run: beside the unpinned row, how the command scales
    from one core to two, measured in the same minutes. Every process it starts (a
    pipeline's too) inherits the pinning. None when taskset is missing, or when --pin
    pins every row already (a second taskset would override it)."""
    if PIN or shutil.which("taskset") is None:
        return None
    output = command.output.with_name(f"{command.output.stem}-1core{command.output.suffix}")
    argv = [output if str(arg) == str(command.output) else arg for arg in command.argv]
    return Command(f"{command.label}, 1 core", ["taskset", "-c", ONE_CORE_CPU, *map(str, argv)],
                   output, stdout_to_output=command.stdout_to_output)


def with_one_core(commands: Sequence[Command]) -> list[Command]:
    """one_core of each command that has one."""
    return [pinned for pinned in map(one_core, commands) if pinned is not None]


def core_scaling(scenario: Scenario, pairs: Sequence[tuple[str, str]]) -> list[str]:
    """Markdown: each pair's ratio (first ÷ second) in wall and CPU seconds, on two cores
    (the unpinned rows) and on one (their one_core rows), then each command's wall and CPU
    on one core ÷ on two: how much a second core gives it (medians; empty without the
    one-core rows)."""
    def pick(label: str) -> str | None:
        pinned = f"{label}, 1 core"
        return pinned if any(c.label == pinned for c in scenario.commands) else None

    def x(ratio: float | None) -> str:
        return "" if ratio is None else f"{ratio:.2f}x"

    if not any(pick(label) for pair in pairs for label in pair):
        return []
    lines = ["| ratio (medians) | wall, 2 cores | wall, 1 core | CPU, 2 cores | CPU, 1 core |",
             "|---|---:|---:|---:|---:|"]
    for mine, theirs in pairs:
        one = (pick(mine), pick(theirs))
        cells = []
        for of in ("median", "cpu"):
            cells.append(x(scenario.ratio(mine, theirs, of=of)))
            cells.append(x(scenario.ratio(*one, of=of)) if all(one) else "")
        lines.append(f"| {cell(mine)} ÷ {cell(theirs)} | {cells[0]} | {cells[1]} | {cells[2]} | "
                     f"{cells[3]} |")
    lines += ["", "| command | wall, 1 core ÷ 2 cores | CPU, 1 core ÷ 2 cores |",
              "|---|---:|---:|"]
    seen = []
    for label in (label for pair in pairs for label in pair):
        pinned = pick(label)
        if pinned is None or label in seen:
            continue
        seen.append(label)
        lines.append(f"| {cell(label)} | {x(scenario.ratio(pinned, label))} | "
                     f"{x(scenario.ratio(pinned, label, of='cpu'))} |")
    return lines


# Commands ------------------------------------------------------------------------------

def miller_rsum(mlr: str, source: Path, output: Path) -> Command:
    """Miller's running sum of the wide table's columns (it writes to standard output,
    keeping the input columns and appending `<name>_rsum` ones)."""
    return Command("Miller step -a rsum",
                   [mlr, "--icsv", "--ocsv", "step", "-a", "rsum", "-f",
                    ",".join(WIDE_COLUMNS), str(source)], output, stdout_to_output=True)


def python_script(code: str, *args: str | Path) -> list[str]:
    return [sys.executable, "-c", textwrap.dedent(code).strip(), *map(str, args)]


POLARS_LAZY_CSV = """
    import sys, polars as pl
    pl.scan_csv(sys.argv[1]).select(pl.all().cum_sum()).sink_csv(sys.argv[2])
"""
POLARS_EAGER_CSV = """
    import sys, polars as pl
    pl.read_csv(sys.argv[1]).select(pl.all().cum_sum()).write_csv(sys.argv[2])
"""
PYARROW_CSV = """
    import sys, numpy as np, pyarrow as pa, pyarrow.csv as pacsv
    table = pacsv.read_csv(sys.argv[1])
    columns = [pa.array(np.cumsum(c.to_numpy())) for c in table.columns]
    pacsv.write_csv(pa.table(columns, names=table.column_names), sys.argv[2])
"""
PANDAS_CSV = """
    import sys, pandas as pd
    pd.read_csv(sys.argv[1], engine="pyarrow").cumsum().to_csv(sys.argv[2], index=False)
"""
DUCKDB = """
    import sys, duckdb
    source, target, fmt = sys.argv[1:4]
    con = duckdb.connect()
    reader = "read_csv" if fmt == "csv" else "read_parquet"
    con.execute(f"CREATE TABLE t AS SELECT * FROM {reader}(?)", [source])
    names = [row[0] for row in con.execute("DESCRIBE t").fetchall()]
    scans = ", ".join(f'SUM("{n}") OVER (ORDER BY rowid ROWS UNBOUNDED PRECEDING) AS "{n}"'
                      for n in names)
    options = "FORMAT csv, HEADER" if fmt == "csv" else "FORMAT parquet"
    con.execute(f"COPY (SELECT {scans} FROM t ORDER BY rowid) TO '{target}' ({options})")
"""
POLARS_LAZY_PARQUET = """
    import sys, polars as pl
    lazy = pl.scan_parquet(sys.argv[1]).select(pl.all().cum_sum())
    if len(sys.argv) > 3:
        lazy.sink_parquet(sys.argv[2], compression=sys.argv[3])
    else:
        lazy.sink_parquet(sys.argv[2])
"""
PYARROW_PARQUET = """
    import sys, numpy as np, pyarrow as pa, pyarrow.parquet as pq
    table = pq.read_table(sys.argv[1])
    columns = [pa.array(np.cumsum(c.to_numpy())) for c in table.columns]
    pq.write_table(pa.table(columns, names=table.column_names), sys.argv[2])
"""
NUMPY_NPY = """
    import sys, numpy as np
    np.save(sys.argv[2], np.cumsum(np.load(sys.argv[1]), axis=0))
"""
POLARS_OVER_LAZY = """
    import sys, polars as pl
    (pl.scan_csv(sys.argv[1]).with_columns(pl.col("value").cum_sum().over("key"))
     .sink_csv(sys.argv[2]))
"""
POLARS_OVER_EAGER = """
    import sys, polars as pl
    (pl.read_csv(sys.argv[1]).with_columns(pl.col("value").cum_sum().over("key"))
     .write_csv(sys.argv[2]))
"""


@dataclass
class Cumtool:
    argv: list[str]
    help_text: str

    @classmethod
    def find(cls) -> Cumtool:
        script = Path(sys.executable).with_name("cumtool")
        if script.exists():
            argv = [str(script)]
        elif shutil.which("cumtool"):
            argv = [str(shutil.which("cumtool"))]
        else:
            argv = [sys.executable, "-m", "cumtool"]
        result = subprocess.run([*argv, "cumsum", "--help"], capture_output=True, text=True)
        if result.returncode != 0:
            sys.exit(f"`{' '.join(argv)} cumsum --help` failed: {result.stderr.strip()}")
        return cls(argv, result.stdout)

    @property
    def has_quiet(self) -> bool:
        return bool(re.search(r"(?m)^\s*-q\b|--quiet\b", self.help_text))

    @property
    def has_by(self) -> bool:
        return bool(re.search(r"--by\b", self.help_text))

    def __call__(self, op: str, source: Path, output: Path, *extra: str) -> list[str]:
        quiet = ["-q"] if self.has_quiet else []
        return [*self.argv, op, str(source), "-o", str(output), *extra, *quiet]


# Results -------------------------------------------------------------------------------

@dataclass
class Goal:
    text: str
    measured: float | None
    limit: float
    unit: str = "x"
    note: str = ""
    fastest: float | None = None  # the same ratio taken of each command's fastest run
    cpu: float | None = None  # the same ratio taken of median CPU seconds (user + system)

    @property
    def verdict(self) -> str:
        if self.measured is None:
            return "not measured"
        return "PASS" if self.measured <= self.limit else "FAIL"


@dataclass
class Scenario:
    key: str
    title: str
    commands: list[Command]
    baseline: str  # the label every ratio is taken against (cumtool's own row)
    ratio_header: str = "cumtool ÷ this"
    invert: bool = False  # ratio = this ÷ baseline (ops table) instead of baseline ÷ this
    notes: list[str] = field(default_factory=list)
    checks: list[str] = field(default_factory=list)
    tables: list[str] = field(default_factory=list)  # Markdown printed after the main table

    def command(self, label: str) -> Command:
        return next(c for c in self.commands if c.label == label)

    def median(self, label: str) -> float | None:
        command = self.command(label)
        return statistics.median(command.walls) if command.ok else None

    def fastest(self, label: str) -> float | None:
        command = self.command(label)
        return min(command.walls) if command.ok else None

    def cpu(self, label: str) -> float | None:
        command = self.command(label)
        return statistics.median(command.cpu) if command.ok else None

    def ratio(self, numerator: str, denominator: str, of: str = "median") -> float | None:
        """Of median walls, of fastest walls, or (`of="cpu"`) of median CPU seconds."""
        pick = {"median": self.median, "fastest": self.fastest, "cpu": self.cpu}[of]
        top, bottom = pick(numerator), pick(denominator)
        if top is None or bottom is None or bottom == 0:
            return None
        return top / bottom

    def best(self, labels: Sequence[str]) -> str | None:
        """The fastest of some peers (by median), or None if none ran."""
        ran = [label for label in labels if self.median(label) is not None]
        return min(ran, key=lambda label: self.median(label) or 0.0) if ran else None

    def peak_mib(self, label: str) -> float | None:
        command = self.command(label)
        return max(command.rss) / MIB if command.ok else None

    def markdown(self) -> list[str]:
        lines = [f"### {self.title}", "",
                 f"| command | median wall (s) | min (s) | max (s) | median CPU (s) | "
                 f"peak RSS (MiB) | {self.ratio_header} | same, fastest runs | "
                 "same, CPU |",
                 "|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
        for command in self.commands:
            if not command.ok:
                lines.append(f"| {cell(command.label)} | failed: {cell(command.error or '')} "
                             "| | | | | | | |")
                continue
            pair = ((command.label, self.baseline) if self.invert
                    else (self.baseline, command.label))
            ratios = [self.ratio(*pair, of=of) for of in ("median", "fastest", "cpu")]
            shown = ["" if r is None else f"{r:.2f}x" for r in ratios]
            lines.append(
                f"| {cell(command.label)} | {statistics.median(command.walls):.3f} | "
                f"{min(command.walls):.3f} | {max(command.walls):.3f} | "
                f"{statistics.median(command.cpu):.2f} | "
                f"{max(command.rss) / MIB:.0f} | {shown[0]} | {shown[1]} | {shown[2]} |")
        lines.append("")
        if self.tables:
            lines += [*self.tables, ""]
        lines += [f"- {note}" for note in self.notes]
        lines += [f"- check: {check}" for check in self.checks]
        if self.notes or self.checks:
            lines.append("")
        return lines


# Verification --------------------------------------------------------------------------

def read_table(path: Path) -> Any:
    """An output file as a polars DataFrame (CSV and Parquet) or a numpy array (.npy)."""
    import polars as pl

    if path.suffix == ".npy":
        return np.load(path, mmap_mode="r")
    if path.suffix == ".parquet":
        return pl.read_parquet(path)
    return pl.read_csv(path, infer_schema_length=10_000)


def _result_columns(frame: Any, columns: Sequence[str]) -> np.ndarray:
    """The scanned columns as float64, taking Miller's `<name>_rsum` where it added one."""
    picked = []
    for name in columns:
        actual = f"{name}_rsum" if f"{name}_rsum" in frame.columns else name
        picked.append(frame[actual].cast(float).to_numpy())
    return np.column_stack(picked)


def last_row(path: Path) -> tuple[int, np.ndarray]:
    """(rows, last row as float64) of a wide output file."""
    table = read_table(path)
    if isinstance(table, np.ndarray):
        return table.shape[0], np.asarray(table[-1], dtype=np.float64)
    values = _result_columns(table.tail(1), WIDE_COLUMNS)
    return table.height, values[-1]


def close_enough(got: np.ndarray, want: np.ndarray, rtol: float = 1e-9) -> bool:
    got = np.asarray(got, dtype=np.float64)
    want = np.asarray(want, dtype=np.float64)
    return bool(np.allclose(got, want, rtol=rtol, atol=1e-9, equal_nan=True))


def check_last_rows(scenario: Scenario, expected_rows: int,
                    expected: dict[str, np.ndarray]) -> bool:
    """Checks every successful command's output: row count and last row. `expected`
    maps a label (or "*" for all) to the wanted last row."""
    all_good = True
    for command in scenario.commands:
        if not command.ok or command.label == "cp (floor)":
            continue
        want = expected.get(command.label, expected.get("*"))
        if want is None:
            continue
        try:
            rows, row = last_row(command.output)
        except Exception as error:  # any unreadable output is a failed check
            scenario.checks.append(f"{command.label}: output unreadable: {error}")
            all_good = False
            continue
        good = rows == expected_rows and close_enough(row, want)
        all_good &= good
        if not good:
            scenario.checks.append(
                f"**MISMATCH** {command.label}: {rows} rows, last row "
                f"{np.array2string(row, precision=6)}; want {expected_rows} rows, "
                f"{np.array2string(np.asarray(want, dtype=np.float64), precision=6)}")
    return all_good


def compare_outputs(first: Path, second: Path, columns: Sequence[str]) -> str:
    """'' if two outputs hold the same values (relative 1e-9), else what differs."""
    a, b = read_table(first), read_table(second)
    if a.height != b.height:
        return f"{a.height} rows against {b.height}"
    left, right = _result_columns(a, columns), _result_columns(b, columns)
    bad = ~np.isclose(left, right, rtol=1e-9, atol=1e-9, equal_nan=True)
    if bad.any():
        row, column = np.argwhere(bad)[0]
        return (f"{int(bad.sum())} values differ; first at row {row + 1}, column "
                f"{columns[column]}: {left[row, column]!r} against {right[row, column]!r}")
    return ""


# The benchmark run -----------------------------------------------------------------------

@dataclass
class Bench:
    args: argparse.Namespace
    data: Datasets
    cumtool: Cumtool
    mlr: str | None
    scenarios: list[Scenario] = field(default_factory=list)
    goals: list[Goal] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    load_start: float = field(default_factory=lambda: _load())
    code_start: str = field(default_factory=lambda: code_state())

    @property
    def runs(self) -> int:
        return int(self.args.runs)

    def out(self, name: str) -> Path:
        return OUT / name

    def execute(self, scenario: Scenario) -> Scenario:
        log(f"{scenario.title}:")
        run_interleaved(scenario.commands, self.runs, self.args.warmup)
        self.scenarios.append(scenario)
        return scenario

    def rows_label(self, rows: int | None = None) -> str:
        rows = rows or self.data.rows
        return f"{rows / 1e6:g}M" if rows >= 1_000_000 else f"{rows // 1000}k"

    def ratio_goal(self, text: str, scenario: Scenario, numerator: str,
                   denominator: str | None, limit: float) -> None:
        """A goal on the ratio of two commands' medians (and, for reading noisy runs, of
        their fastest runs too)."""
        if denominator is None:
            self.goals.append(Goal(text, None, limit))
            return
        self.goals.append(Goal(text, scenario.ratio(numerator, denominator), limit,
                               fastest=scenario.ratio(numerator, denominator, of="fastest"),
                               cpu=scenario.ratio(numerator, denominator, of="cpu")))

    def size(self, name: str) -> str:
        path = self.out(name)
        return f"{path.stat().st_size / MIB:.0f} MiB" if path.exists() else "not written"


# Report --------------------------------------------------------------------------------

def _first(path: str, key: str) -> str | None:
    with contextlib.suppress(OSError):
        for line in Path(path).read_text().splitlines():
            if line.startswith(key):
                return line.split(":", 1)[1].strip()
    return None


def _load() -> float:
    return os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")


def _version(package: str) -> str:
    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return "not installed"


def code_state() -> str:
    """The commit, and a fingerprint of cumtool's sources (Python and C) as they are on
    disk (they may hold uncommitted work)."""
    import hashlib

    commit = subprocess.run(["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"],
                            capture_output=True, text=True).stdout.strip() or "unknown"
    digest = hashlib.sha256()
    for path in sorted([*(REPO / "cumtool").rglob("*.py"), *(REPO / "cumtool").rglob("*.c")]):
        digest.update(str(path.relative_to(REPO)).encode() + b"\0" + path.read_bytes())
    dirty = subprocess.run(["git", "-C", str(REPO), "status", "--porcelain", "cumtool"],
                           capture_output=True, text=True).stdout.strip()
    return (f"commit {commit}{' with uncommitted changes in cumtool/' if dirty else ''}, "
            f"sources sha256 {digest.hexdigest()[:12]}")


def machine_lines(mlr: str | None) -> list[str]:
    cpu = _first("/proc/cpuinfo", "model name") or platform.processor() or "unknown"
    memory = _first("/proc/meminfo", "MemTotal")
    ram = f"{int(memory.split()[0]) / MIB:.1f} GiB" if memory else "unknown"
    usable = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None
    cores = f"{os.cpu_count()} logical CPUs" + (f" ({usable} usable)" if usable else "")
    miller = "not installed"
    if mlr:
        miller = subprocess.run([mlr, "--version"], capture_output=True,
                                text=True).stdout.strip()
    return [
        f"- CPU: {cpu}, {cores}",
        f"- RAM: {ram}; OS: {platform.platform()}",
        f"- Python {platform.python_version()}; numpy {_version('numpy')}, pyarrow "
        f"{_version('pyarrow')}, polars {_version('polars')}, pandas {_version('pandas')}, "
        f"duckdb {_version('duckdb')}; Miller: {miller}",
    ]


def code_lines(bench: Bench) -> list[str]:
    now = code_state()
    if now == bench.code_start:
        return [f"- cumtool {_version('cumtool')}: {now}"]
    if now.split("sources")[1] == bench.code_start.split("sources")[1]:
        # A commit of docs or tests during the run: the measured code is the same.
        return [f"- cumtool {_version('cumtool')}: {bench.code_start} at the start, "
                f"{now.split(',')[0]} at the end (the same sources)"]
    return [f"- cumtool {_version('cumtool')}: {bench.code_start} at the start; **its sources "
            f"changed during the run**: {now} at the end, so rows may mix both versions"]


def report(bench: Bench, argv: Sequence[str], started: dt.datetime, seconds: float) -> str:
    args = bench.args
    lines = ["# cumtool benchmarks", "",
             f"Made by `python benchmarks/bench.py{' ' if argv else ''}{' '.join(argv)}` on "
             f"{started:%Y-%m-%d %H:%M} UTC in {seconds / 60:.1f} min.", "",
             "## Machine", "", *machine_lines(bench.mlr), *code_lines(bench),
             f"- load average (1 min) {bench.load_start:.2f} at the start, "
             f"{_load():.2f} at the end (other work on the machine adds noise)", "",
             "## Method", "",
             f"Each command runs as its own process, end to end, {args.runs} timed runs after "
             f"{args.warmup} warm-up run(s), interleaved round-robin (order rotated each "
             f"round). Wall time is from spawn to exit; {RSS_METHOD} (MiB = 2^20 bytes). "
             "Outputs are deleted and os.sync() is called "
             "before each run; inputs are in the page cache. Ratios are of medians. Every "
             "output is read back and checked (see the checks under each table).", "",
             "## Goals (issues 3, 12, 15 and 25)", "",
             "The verdict uses medians; the fastest-run ratio is shown because other work on "
             "a shared machine slows some runs more than others, and the ratio of median CPU "
             "seconds (user + system, every process of the command) because it moves less "
             "with the machine's load.", "",
             "| goal | measured (medians) | fastest runs | CPU | limit | result |",
             "|---|---:|---:|---:|---:|---|"]
    for goal in bench.goals:
        measured = "" if goal.measured is None else (
            f"{goal.measured:.0f}{goal.unit}" if goal.unit.strip() == "MiB"
            else f"{goal.measured:.2f}{goal.unit}")
        limit = (f"≤ {goal.limit:.0f}{goal.unit}" if goal.unit.strip() == "MiB"
                 else f"≤ {goal.limit:g}{goal.unit}")
        verdict = goal.verdict + (f" ({goal.note})" if goal.note else "")
        fastest = "" if goal.fastest is None else f"{goal.fastest:.2f}x"
        cpu = "" if goal.cpu is None else f"{goal.cpu:.2f}x"
        lines.append(f"| {cell(goal.text)} | {measured} | {fastest} | {cpu} | {limit} | "
                     f"{cell(verdict)} |")
    lines += ["", *rss_lines(bench), ""]
    if bench.notes:
        lines += [f"- {note}" for note in bench.notes] + [""]
    lines += ["## Results", ""]
    for scenario in bench.scenarios:
        lines += scenario.markdown()
    return "\n".join(lines).rstrip() + "\n"


def rss_lines(bench: Bench) -> list[str]:
    lines = ["Peak RSS (MiB), cumtool first, then each peer:", ""]
    for scenario in bench.scenarios:
        if scenario.key.startswith("ops") or scenario.key in ("memory", "big"):
            continue
        own = scenario.peak_mib(scenario.baseline)
        peers = [f"{c.label} {scenario.peak_mib(c.label):.0f}" for c in scenario.commands
                 if c.label != scenario.baseline and c.ok]
        if own is not None:
            lines.append(f"- {scenario.title}: cumtool {own:.0f}; {', '.join(peers)}")
    if not any(s.key in ("memory", "big") for s in bench.scenarios):
        lines.append("- the 10M-row memory checks did not run (they need --memory or --big)")
    return lines
