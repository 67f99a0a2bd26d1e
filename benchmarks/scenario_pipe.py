"""Scenario `pipe`: `cat file | cumtool cumsum - | tail -n 1` (issue 25), 1M rows x 8
columns of CSV through a pipe, against the same pipe through a polars script that reads
standard input and writes standard output (lazy: scan_csv -> sink_csv; eager: read_csv ->
write_csv), and against `cat file | tail -n 1` alone (the pipe's floor). Every row is one
`bash -c` pipeline with pipefail, started by the bench's launcher, so wall, CPU seconds
(user + system) and peak RSS cover the whole pipeline: bash, cat, the tool and tail alike
on every side (peak RSS is the largest single process's). Each row runs on one core
(`taskset -c 0`) too, in the same interleaved run.

polars cannot scan a pipe lazily: `scan_csv("/dev/stdin")` fails (it maps the file:
"No such device"), and `scan_csv(sys.stdin.buffer)` reads the whole input into memory
before its streaming engine starts (its peak RSS grows with the input: 190 MiB at 1M rows,
270 MiB at 2M). It is still the fastest correct polars variant tried, so it is the lazy
row; `sink_csv(sys.stdout.buffer)` and `sink_csv("/dev/stdout")` were within the noise of
each other.
"""

from __future__ import annotations

import shlex
from pathlib import Path

import numpy as np
from common import (
    MIB,
    WIDE_COLUMNS,
    Bench,
    Command,
    Scenario,
    close_enough,
    core_scaling,
    python_script,
    with_one_core,
)

ROWS = 1_000_000  # the size (fewer when the run's --rows are fewer)
GOAL = 1.0  # as CSV -> CSV: at most polars' time
PEERS = ["polars lazy", "polars eager"]
FLOOR = "cat | tail (floor)"

POLARS_LAZY_STDIN = """
    import sys, polars as pl
    pl.scan_csv(sys.stdin.buffer).select(pl.all().cum_sum()).sink_csv(sys.stdout.buffer)
"""
POLARS_EAGER_STDIN = """
    import sys, polars as pl
    pl.read_csv(sys.stdin.buffer).select(pl.all().cum_sum()).write_csv(sys.stdout.buffer)
"""


def pipeline(source: Path, middle: list[str] | None) -> list[str]:
    """`cat source | middle | tail -n 1` as one bash command, failing if any stage fails
    (plain sh has no pipefail: a crashed tool would leave tail an earlier line)."""
    stages = [shlex.join(["cat", str(source)])]
    if middle is not None:
        stages.append(shlex.join(middle))
    stages.append("tail -n 1")
    return ["bash", "-c", "set -o pipefail; " + " | ".join(stages)]


def run(bench: Bench) -> None:
    rows = min(bench.data.rows, ROWS)
    source = bench.data.wide("csv", rows)
    out = bench.out
    tools = {
        "cumtool": [*bench.cumtool.argv, "cumsum", "-"],
        "polars lazy": python_script(POLARS_LAZY_STDIN),
        "polars eager": python_script(POLARS_EAGER_STDIN),
    }
    commands = [Command(label, pipeline(source, argv), out(f"pipe-{slug(label)}.txt"),
                        stdout_to_output=True) for label, argv in tools.items()]
    commands.append(Command(FLOOR, pipeline(source, None), out("pipe-floor.txt"),
                            stdout_to_output=True))
    commands += with_one_core(commands)
    label = bench.rows_label(rows)
    scenario = Scenario("pipe", f"`cat file | TOOL | tail -n 1`, CSV {label} rows x 8 "
                        "columns, cumsum", commands, "cumtool")
    bench.execute(scenario)
    scenario.notes.append(
        f"input {source.stat().st_size / MIB:.0f} MiB; every row is the whole pipeline "
        "(bash, cat, the tool, tail); the CPU column adds all its processes; peak RSS is "
        "the largest one's")
    scenario.notes.append(
        "polars lazy reads all of standard input before it streams (scan_csv of a pipe "
        "cannot map it): its peak RSS grows with the input")
    check(bench, scenario, source)
    pairs = [("cumtool", peer) for peer in PEERS]
    scenario.tables += core_scaling(scenario, pairs)
    if not any(c.label.endswith(", 1 core") for c in commands):
        scenario.notes.append("no 1-core rows: --pin pins every row, or taskset is missing")
    best = scenario.best(PEERS)
    bench.ratio_goal(f"pipe `cat | cumsum - | tail -n 1`, CSV {label} x 8: cumtool ÷ "
                     f"{best or 'polars'}", scenario, "cumtool", best, GOAL)
    one_core = [f"{peer}, 1 core" for peer in PEERS]
    best_one = scenario.best([p for p in one_core if p in {c.label for c in commands}])
    if best_one is not None:
        bench.ratio_goal(f"the same on 1 core: cumtool ÷ {best_one.removesuffix(', 1 core')}",
                         scenario, "cumtool, 1 core", best_one, GOAL)


def slug(label: str) -> str:
    return "-".join(part for part in "".join(
        c if c.isalnum() else " " for c in label).split())


def last_line(path: Path) -> tuple[bytes, np.ndarray | None]:
    """The output's one line, and its cells as float64 (None if they are not 8 numbers)."""
    text = path.read_bytes()
    line = text.rstrip(b"\n")
    try:
        cells = np.array([float(cell) for cell in line.split(b",")], dtype=np.float64)
    except ValueError:
        return line, None
    return line, cells if cells.shape == (len(WIDE_COLUMNS),) else None


def check(bench: Bench, scenario: Scenario, source: Path) -> None:
    """Every tool's last line is the exact column sums, and cumtool's is polars' own."""
    want = np.array(bench.data.reference(source)["sums"], dtype=np.float64)
    lines = {}
    good = True
    for command in scenario.commands:
        if not command.ok or command.label.startswith(FLOOR):
            continue
        line, cells = last_line(command.output)
        lines[command.label] = line
        if cells is None or not close_enough(cells, want):
            good = False
            scenario.checks.append(f"**MISMATCH** {command.label}: last line {line[:200]!r}; "
                                   f"want {np.array2string(want, precision=6)}")
    floor = scenario.command(FLOOR)
    if floor.ok:
        source_last = source.read_bytes()[-4096:].rstrip(b"\n").rsplit(b"\n", 1)[-1]
        if floor.output.read_bytes().rstrip(b"\n") != source_last:
            good = False
            scenario.checks.append(f"**MISMATCH** {FLOOR}: not the input's last line")
    if good:
        scenario.checks.append("every tool's last line holds the exact column sums "
                               "(relative 1e-9)")
    mine = lines.get("cumtool")
    if mine is not None:
        others = [label for label in lines if label != "cumtool"]
        differ = [label for label in others if lines[label] != mine]
        scenario.checks.append(
            f"cumtool's last line is byte for byte that of {', '.join(others)}" if not differ
            else "cumtool's last line is not byte for byte that of "
                 + "; ".join(f"{label}'s: {lines[label]!r}" for label in differ)
                 + f" (cumtool's: {mine!r})")
