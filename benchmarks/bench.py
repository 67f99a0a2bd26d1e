#!/usr/bin/env python
"""Benchmarks for cumtool against the tools people would otherwise reach for (issue 3).

    python benchmarks/bench.py                     # full size: 2M rows, 5 runs each
    python benchmarks/bench.py --quick             # 200k rows, 3 runs: a fast check
    python benchmarks/bench.py --only csv,npy      # some scenarios only
    python benchmarks/bench.py --memory            # also the 10M-row peak-memory check
    python benchmarks/bench.py --output benchmarks/RESULTS.md

Every command runs as its own process, end to end (interpreter start, imports, reading,
scanning, writing), exactly as a user would type it. The runs are interleaved: a warm-up
run of every command (not timed), then run 1 of every command, run 2 of every command, and
so on, with the order rotated each round, so that a slow minute of the machine falls on all
commands alike. Wall time is measured from spawning the process to reaping it; peak RSS is
the child's own ru_maxrss from os.wait4. Before each run the command's output file is
deleted and os.sync() flushes the previous run's writes, so no run pays for another's
write-back. Input files are in the page cache (they were just written or read), which is
the usual case for a file worked on interactively.

The data are made deterministically from a fixed seed into benchmarks/data/ (git-ignored)
and reused while they match benchmarks/data/manifest.json. After the runs, every output
is read back and checked against values computed here (exact column sums, numpy
accumulations), and cumtool's CSV output is compared value for value with polars', so a
broken or short-cut run cannot pass for a fast one.

The peers need `pip install -e '.[bench]'` (pandas, duckdb); Miller (`mlr`) is used when
it is on PATH and skipped, with a note, otherwise.
"""

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
SCENARIOS = ("csv", "parquet", "npy", "small", "ops", "by", "memory")
MIB = 1024 * 1024


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


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


def _measured(argv: list[str], report: Path) -> list[str]:
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


# Commands ------------------------------------------------------------------------------

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

    def command(self, label: str) -> Command:
        return next(c for c in self.commands if c.label == label)

    def median(self, label: str) -> float | None:
        command = self.command(label)
        return statistics.median(command.walls) if command.ok else None

    def fastest(self, label: str) -> float | None:
        command = self.command(label)
        return min(command.walls) if command.ok else None

    def ratio(self, numerator: str, denominator: str, of: str = "median") -> float | None:
        pick = self.median if of == "median" else self.fastest
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
                 f"peak RSS (MiB) | {self.ratio_header} | same, fastest runs |",
                 "|---|---:|---:|---:|---:|---:|---:|---:|"]
        for command in self.commands:
            if not command.ok:
                lines.append(f"| {command.label} | failed: {command.error} | | | | | | |")
                continue
            pair = ((command.label, self.baseline) if self.invert
                    else (self.baseline, command.label))
            ratios = [self.ratio(*pair, of=of) for of in ("median", "fastest")]
            shown = ["" if r is None else f"{r:.2f}x" for r in ratios]
            lines.append(
                f"| {command.label} | {statistics.median(command.walls):.3f} | "
                f"{min(command.walls):.3f} | {max(command.walls):.3f} | "
                f"{statistics.median(command.cpu):.2f} | "
                f"{max(command.rss) / MIB:.0f} | {shown[0]} | {shown[1]} |")
        lines.append("")
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


# Scenarios -----------------------------------------------------------------------------

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

    # CSV -> CSV ----------------------------------------------------------------------
    def csv(self) -> None:
        source = self.data.wide("csv")
        out = self.out
        commands = [
            Command("cumtool", self.cumtool("cumsum", source, out("csv-cumtool.csv")),
                    out("csv-cumtool.csv")),
            Command("polars lazy", python_script(POLARS_LAZY_CSV, source,
                                                 out("csv-polars-lazy.csv")),
                    out("csv-polars-lazy.csv")),
            Command("polars eager", python_script(POLARS_EAGER_CSV, source,
                                                  out("csv-polars-eager.csv")),
                    out("csv-polars-eager.csv")),
            Command("pyarrow + numpy", python_script(PYARROW_CSV, source,
                                                     out("csv-pyarrow.csv")),
                    out("csv-pyarrow.csv")),
            Command("duckdb", python_script(DUCKDB, source, out("csv-duckdb.csv"), "csv"),
                    out("csv-duckdb.csv")),
            Command("pandas (pyarrow reader)", python_script(PANDAS_CSV, source,
                                                             out("csv-pandas.csv")),
                    out("csv-pandas.csv")),
        ]
        scenario = Scenario("csv", f"CSV -> CSV, {self.rows_label()} rows x 8 columns, "
                            "cumsum down every column", commands, "cumtool")
        if self.mlr:
            commands.append(Command(
                "Miller step -a rsum",
                [self.mlr, "--icsv", "--ocsv", "step", "-a", "rsum", "-f",
                 ",".join(WIDE_COLUMNS), str(source)],
                out("csv-miller.csv"), stdout_to_output=True))
            scenario.notes.append("Miller keeps the input columns and appends "
                                  "`<name>_rsum` ones, so it writes twice the columns.")
        else:
            scenario.notes.append("Miller (`mlr`) is not on PATH: skipped.")
        self.execute(scenario)
        scenario.notes.append(f"input {source.stat().st_size / MIB:.0f} MiB; cumtool's "
                              f"output {self._size('csv-cumtool.csv')}")
        reference = self.data.reference(source)
        good = check_last_rows(scenario, reference["rows"], {"*": np.array(reference["sums"])})
        if scenario.command("cumtool").ok and scenario.command("polars lazy").ok:
            differs = compare_outputs(scenario.command("cumtool").output,
                                      scenario.command("polars lazy").output, WIDE_COLUMNS)
            scenario.checks.append(
                "cumtool's output equals polars lazy's value for value (relative 1e-9)"
                if not differs else f"**MISMATCH** cumtool against polars lazy: {differs}")
            good &= not differs
        if good:
            scenario.checks.append(f"every output has {reference['rows']} rows and ends on "
                                   "the exact column sums (relative 1e-9)")
        self.ratio_goal(f"CSV -> CSV {self.rows_label()} x 8: cumtool ÷ polars lazy",
                        scenario, "cumtool", "polars lazy", 1.0)

    def ratio_goal(self, text: str, scenario: Scenario, numerator: str,
                   denominator: str | None, limit: float) -> None:
        """A goal on the ratio of two commands' medians (and, for reading noisy runs, of
        their fastest runs too)."""
        if denominator is None:
            self.goals.append(Goal(text, None, limit))
            return
        self.goals.append(Goal(text, scenario.ratio(numerator, denominator), limit,
                               fastest=scenario.ratio(numerator, denominator, of="fastest")))

    def _size(self, name: str) -> str:
        path = self.out(name)
        return f"{path.stat().st_size / MIB:.0f} MiB" if path.exists() else "not written"

    # Parquet -> Parquet ----------------------------------------------------------------
    def parquet(self) -> None:
        source = self.data.wide("parquet")
        out = self.out
        commands = [
            Command("cumtool", self.cumtool("cumsum", source, out("pq-cumtool.parquet")),
                    out("pq-cumtool.parquet")),
            Command("polars lazy", python_script(POLARS_LAZY_PARQUET, source,
                                                 out("pq-polars-lazy.parquet")),
                    out("pq-polars-lazy.parquet")),
            Command("polars lazy, snappy", python_script(
                POLARS_LAZY_PARQUET, source, out("pq-polars-snappy.parquet"), "snappy"),
                    out("pq-polars-snappy.parquet")),
            Command("pyarrow + numpy", python_script(PYARROW_PARQUET, source,
                                                     out("pq-pyarrow.parquet")),
                    out("pq-pyarrow.parquet")),
            Command("duckdb", python_script(DUCKDB, source, out("pq-duckdb.parquet"),
                                            "parquet"),
                    out("pq-duckdb.parquet")),
        ]
        scenario = Scenario("parquet", f"Parquet -> Parquet, {self.rows_label()} rows x 8 "
                            "columns, cumsum", commands, "cumtool")
        scenario.notes.append(
            "polars writes zstd by default; cumtool, pyarrow and duckdb write snappy. The "
            "row `polars lazy, snappy` asks polars for snappy too, and the goal is taken "
            "against the faster of the two polars rows.")
        self.execute(scenario)
        reference = self.data.reference(source)
        if check_last_rows(scenario, reference["rows"], {"*": np.array(reference["sums"])}):
            scenario.checks.append(f"every output has {reference['rows']} rows and ends on "
                                   "the exact column sums (relative 1e-9)")
        best = scenario.best(["polars lazy", "polars lazy, snappy"])
        self.ratio_goal(
            f"Parquet -> Parquet {self.rows_label()} x 8: cumtool ÷ {best or 'polars lazy'}",
            scenario, "cumtool", best, 1.0)

    # .npy -> .npy ----------------------------------------------------------------------
    def npy(self) -> None:
        source = self.data.wide("npy")
        out = self.out
        commands = [
            Command("cumtool", self.cumtool("cumsum", source, out("npy-cumtool.npy")),
                    out("npy-cumtool.npy")),
            Command("numpy script", python_script(NUMPY_NPY, source, out("npy-numpy.npy")),
                    out("npy-numpy.npy")),
            Command("cp (floor)", ["cp", str(source), str(out("npy-cp.npy"))],
                    out("npy-cp.npy")),
        ]
        scenario = Scenario("npy", f".npy -> .npy, {self.rows_label()} x 8 float64, cumsum "
                            "along axis 0", commands, "cumtool")
        self.execute(scenario)
        reference = self.data.reference(source)
        if check_last_rows(scenario, reference["rows"], {"*": np.array(reference["sums"])}):
            scenario.checks.append(f"every output has {reference['rows']} rows and ends on "
                                   "the exact column sums (relative 1e-9)")
        self.ratio_goal(f".npy {self.rows_label()} x 8: cumtool ÷ numpy script", scenario,
                        "cumtool", "numpy script", 1.2)

    # Small CSV -------------------------------------------------------------------------
    def small(self) -> None:
        source = self.data.wide("csv", SMALL_ROWS)
        out = self.out
        commands = [
            Command("cumtool", self.cumtool("cumsum", source, out("small-cumtool.csv")),
                    out("small-cumtool.csv")),
            Command("polars script (eager)", python_script(
                POLARS_EAGER_CSV, source, out("small-polars-eager.csv")),
                    out("small-polars-eager.csv")),
            Command("polars script (lazy)", python_script(
                POLARS_LAZY_CSV, source, out("small-polars-lazy.csv")),
                    out("small-polars-lazy.csv")),
        ]
        scenario = Scenario("small", f"Small CSV -> CSV, {SMALL_ROWS // 1000}k rows x 8, "
                            "end to end (start-up dominates)", commands, "cumtool")
        if self.mlr:
            commands.append(Command(
                "Miller step -a rsum",
                [self.mlr, "--icsv", "--ocsv", "step", "-a", "rsum", "-f",
                 ",".join(WIDE_COLUMNS), str(source)],
                out("small-miller.csv"), stdout_to_output=True))
        else:
            scenario.notes.append("Miller (`mlr`) is not on PATH: skipped.")
        self.execute(scenario)
        reference = self.data.reference(source)
        if check_last_rows(scenario, reference["rows"], {"*": np.array(reference["sums"])}):
            scenario.checks.append(f"every output has {reference['rows']} rows and ends on "
                                   "the exact column sums (relative 1e-9)")
        best = scenario.best(["polars script (eager)", "polars script (lazy)"])
        self.ratio_goal(f"CSV {SMALL_ROWS // 1000}k rows: cumtool ÷ {best or 'polars script'}",
                        scenario, "cumtool", best, 0.8)

    # Other operations --------------------------------------------------------------------
    def ops(self) -> None:
        for fmt in ("csv", "npy"):
            source = self.data.wide(fmt)
            commands = []
            for op in OPS:
                output = self.out(f"ops-{op}.{fmt}")
                # The int64 columns overflow in a product of 2M integers, which cumtool
                # refuses by default: wrap around as torch does, for the timing.
                extra = ["--overflow", "wrap"] if op == "cumprod" and fmt == "csv" else []
                label = f"cumtool {op}{' --overflow wrap' if extra else ''}"
                commands.append(Command(label, self.cumtool(op, source, output, *extra),
                                        output))
            scenario = Scenario(
                f"ops-{fmt}", f"Every operation, {fmt.upper() if fmt == 'csv' else '.npy'} "
                f"{self.rows_label()} x 8, cumtool only", commands, "cumtool cumsum",
                ratio_header="this ÷ cumsum", invert=True)
            if fmt == "csv":
                scenario.notes.append(
                    "On CSV most of the time goes to parsing and printing text, so an op "
                    "that prints shorter numbers is faster: cummax and cummin print input "
                    "values (two decimals), and cumprod of these values saturates to ±inf "
                    "and then NaN within a few hundred rows (the integer columns wrap to 0), "
                    "while cumsum and logcumsumexp print full-precision floats.")
            else:
                scenario.notes.append(
                    "cumprod of these values saturates to ±inf and then NaN within a few "
                    "hundred rows; .npy output is binary, so every op writes the same bytes.")
            self.execute(scenario)
            self._check_ops(scenario, source, fmt)
            for command in commands[1:]:
                self.ratio_goal(f"{command.label.removeprefix('cumtool ')} ÷ cumsum, "
                                f"{fmt} {self.rows_label()} x 8", scenario, command.label,
                                "cumtool cumsum", 1.3)

    def _check_ops(self, scenario: Scenario, source: Path, fmt: str) -> None:
        matrix = np.load(self.data.wide("npy"), mmap_mode="r")
        floats = np.asarray(matrix, dtype=np.float64)
        wanted: dict[str, np.ndarray] = {
            "cumsum": np.array(self.data.reference(source)["sums"]),
            "cummax": floats.max(axis=0),
            "cummin": floats.min(axis=0),
            "logcumsumexp": np.logaddexp.accumulate(floats, axis=0)[-1],
        }
        product = np.multiply.accumulate(floats, axis=0)[-1]
        if fmt == "csv":  # the int columns stay int64 and wrap around
            with np.errstate(over="ignore"):
                wrapped = np.multiply.accumulate(
                    floats[:, len(FLOAT_COLUMNS):].astype(np.int64), axis=0)[-1]
            product[len(FLOAT_COLUMNS):] = wrapped
        wanted["cumprod"] = product
        expected = {c.label: wanted[c.label.split()[1]] for c in scenario.commands}
        if check_last_rows(scenario, floats.shape[0], expected):
            scenario.checks.append(
                f"every output has {floats.shape[0]} rows and ends where numpy's sequential "
                "accumulation (or the exact sum, max, min) ends (relative 1e-9)")

    # --by --------------------------------------------------------------------------------
    def by(self) -> None:
        if not self.cumtool.has_by:
            self.notes.append("`--by` scenario skipped: `cumtool cumsum --help` has no --by "
                              "option yet.")
            self.goals.append(Goal("--by: cumtool ÷ polars over", None, 2.0,
                                   note="cumtool has no --by yet"))
            log("--by: skipped (cumtool cumsum has no --by option yet)")
            return
        source = self.data.keyed()
        out = self.out
        commands = [
            Command("cumtool --by key", self.cumtool(
                "cumsum", source, out("by-cumtool.csv"), "-c", "value", "--by", "key"),
                    out("by-cumtool.csv")),
            Command("polars over, lazy", python_script(POLARS_OVER_LAZY, source,
                                                       out("by-polars-lazy.csv")),
                    out("by-polars-lazy.csv")),
            Command("polars over, eager", python_script(POLARS_OVER_EAGER, source,
                                                        out("by-polars-eager.csv")),
                    out("by-polars-eager.csv")),
        ]
        scenario = Scenario("by", f"cumsum --by key, CSV -> CSV, {self.rows_label()} rows, "
                            f"{self.data.keyed_groups:,} groups", commands, "cumtool --by key")
        self.execute(scenario)
        for peer in commands[1:]:
            if commands[0].ok and peer.ok:
                differs = compare_outputs(commands[0].output, peer.output, ["key", "value"])
                scenario.checks.append(
                    f"cumtool's output equals {peer.label}'s value for value (relative 1e-9)"
                    if not differs else f"**MISMATCH** cumtool against {peer.label}: {differs}")
        best = scenario.best(["polars over, lazy", "polars over, eager"])
        self.ratio_goal(f"--by {self.rows_label()} rows: cumtool ÷ {best or 'polars over'}",
                        scenario, "cumtool --by key", best, 2.0)

    # Memory scaling --------------------------------------------------------------------
    def memory(self) -> None:
        small_rows, big_rows = self.data.rows, 5 * self.data.rows
        sources = {rows: self.data.wide("csv", rows) for rows in (small_rows, big_rows)}
        commands = [
            Command(f"cumtool, {self.rows_label(rows)} rows",
                    self.cumtool("cumsum", path, self.out(f"mem-{rows}.csv")),
                    self.out(f"mem-{rows}.csv"))
            for rows, path in sources.items()
        ]
        scenario = Scenario("memory", f"Peak memory, cumtool CSV -> CSV, "
                            f"{self.rows_label(small_rows)} against "
                            f"{self.rows_label(big_rows)} rows x 8", commands,
                            commands[0].label, ratio_header="this ÷ smaller", invert=True)
        scenario.notes.append("the ratio columns here are of wall time; the memory goals "
                              "(see Goals) are on the peak RSS column")
        self.execute(scenario)
        for rows, command in zip(sources, commands, strict=True):
            reference = self.data.reference(sources[rows])
            if command.ok:
                got_rows, row = last_row(command.output)
                if got_rows == rows and close_enough(row, np.array(reference["sums"])):
                    scenario.checks.append(f"{command.label}: {rows} rows, ends on the exact "
                                           "column sums")
                else:
                    scenario.checks.append(f"**MISMATCH** {command.label}: {got_rows} rows, "
                                           f"last row {row}")
        small, big = (scenario.peak_mib(c.label) for c in commands)
        label = self.rows_label(big_rows)
        self.goals.append(Goal(f"peak RSS, CSV -> CSV {label} rows", big, 256.0, unit=" MiB"))
        self.goals.append(Goal(
            f"peak RSS {label} ÷ peak RSS {self.rows_label(small_rows)}",
            big / small if big is not None and small else None, 1.2))


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
    """The commit, and a fingerprint of cumtool's sources as they are on disk (they may
    hold uncommitted work)."""
    import hashlib

    commit = subprocess.run(["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"],
                            capture_output=True, text=True).stdout.strip() or "unknown"
    digest = hashlib.sha256()
    for path in sorted((REPO / "cumtool").rglob("*.py")):
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
             "## Goals (issue 3)", "",
             "The verdict uses medians; the fastest-run ratio is shown because other work on "
             "a shared machine slows some runs more than others.", "",
             "| goal | measured (medians) | fastest runs | limit | result |",
             "|---|---:|---:|---:|---|"]
    for goal in bench.goals:
        measured = "" if goal.measured is None else (
            f"{goal.measured:.0f}{goal.unit}" if goal.unit.strip() == "MiB"
            else f"{goal.measured:.2f}{goal.unit}")
        limit = (f"≤ {goal.limit:.0f}{goal.unit}" if goal.unit.strip() == "MiB"
                 else f"≤ {goal.limit:g}{goal.unit}")
        verdict = goal.verdict + (f" ({goal.note})" if goal.note else "")
        fastest = "" if goal.fastest is None else f"{goal.fastest:.2f}x"
        lines.append(f"| {goal.text} | {measured} | {fastest} | {limit} | {verdict} |")
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
        if scenario.key.startswith("ops") or scenario.key == "memory":
            continue
        own = scenario.peak_mib(scenario.baseline)
        peers = [f"{c.label} {scenario.peak_mib(c.label):.0f}" for c in scenario.commands
                 if c.label != scenario.baseline and c.ok]
        if own is not None:
            lines.append(f"- {scenario.title}: cumtool {own:.0f}; {', '.join(peers)}")
    if not any(s.key == "memory" for s in bench.scenarios):
        lines.append("- the 10M-row memory check did not run (it needs --memory)")
    return lines


# Main ----------------------------------------------------------------------------------

def parse_args(argv: Sequence[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description="Benchmark cumtool against polars, pyarrow, duckdb, pandas, Miller and "
                    "numpy (issue 3).")
    parser.add_argument("--quick", action="store_true",
                        help="200k rows and 3 runs: a fast check that everything works")
    parser.add_argument("--runs", type=int, default=None,
                        help="timed runs per command (default 5, or 3 with --quick)")
    parser.add_argument("--warmup", type=int, default=1,
                        help="untimed runs per command first (default 1)")
    parser.add_argument("--rows", type=int, default=None,
                        help="rows of the big files (default 2,000,000, or 200,000 with "
                             "--quick)")
    parser.add_argument("--only", default=None, metavar="SCENARIO[,SCENARIO]",
                        help=f"run only these scenarios: {', '.join(SCENARIOS)}")
    parser.add_argument("--memory", action="store_true",
                        help="also the peak-memory check on a 5x larger CSV (10M rows, "
                             "about 640 MB, at full size)")
    parser.add_argument("--output", type=Path, default=None, metavar="FILE",
                        help="also write the Markdown report here (e.g. "
                             "benchmarks/RESULTS.md)")
    args = parser.parse_args(argv)
    args.runs = args.runs or (3 if args.quick else 5)
    args.rows = args.rows or (200_000 if args.quick else 2_000_000)
    if args.runs < 1 or args.warmup < 0 or args.rows < SMALL_ROWS:
        parser.error(f"--runs must be at least 1, --warmup at least 0 and --rows at least "
                     f"{SMALL_ROWS}")
    wanted = SCENARIOS if args.only is None else tuple(
        s.strip() for s in args.only.split(",") if s.strip())
    unknown = [s for s in wanted if s not in SCENARIOS]
    if unknown:
        parser.error(f"unknown scenario {', '.join(unknown)}; choose from "
                     f"{', '.join(SCENARIOS)}")
    if "memory" in wanted and args.only is None and not args.memory:
        wanted = tuple(s for s in wanted if s != "memory")
    args.scenarios = wanted
    return args


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    args = parse_args(argv)
    started = dt.datetime.now(dt.timezone.utc)
    clock = time.perf_counter()
    for module in ("polars", "pyarrow", "pandas", "duckdb"):
        try:
            __import__(module)
        except ImportError:
            sys.exit(f"{module} is missing: pip install -e '.[bench]'")
    data = Datasets(rows=args.rows, keyed_groups=min(100_000, args.rows // 20))
    data.load()
    bench = Bench(args, data, Cumtool.find(), shutil.which("mlr"))
    if not bench.mlr:
        bench.notes.append("Miller (`mlr`) is not on PATH: its rows are skipped.")
    if not bench.cumtool.has_quiet:
        bench.notes.append("`cumtool cumsum --help` has no -q: cumtool runs without it.")
    for name in args.scenarios:
        getattr(bench, name)()
    text = report(bench, argv, started, time.perf_counter() - clock)
    print(text)
    if args.output:
        args.output.write_text(text)
        log(f"wrote {args.output}")
    failed = [c.label for s in bench.scenarios for c in s.commands if not c.ok]
    mismatched = [check for s in bench.scenarios for check in s.checks if "MISMATCH" in check]
    if failed:
        log(f"failed commands: {', '.join(failed)}")
    if mismatched:
        log("wrong outputs:\n" + "\n".join(mismatched))
    return 1 if mismatched or failed else 0


if __name__ == "__main__":
    sys.exit(main())
