#!/usr/bin/env python
"""Scenario `jsonl`: JSON Lines, 1M rows x 8 columns (issue 25): cumtool against polars
lazy, reading (JSON Lines -> CSV), writing (CSV -> JSON Lines) and both (JSON Lines ->
JSON Lines), every command measured side by side in one interleaved run. The JSON Lines
input is the wide CSV data (6 float64 columns with two decimals, 2 int64) written by
polars' NDJSON writer, made here next to it.

    python benchmarks/scenario_jsonl.py               # 1M rows, 5 runs of each command
    python benchmarks/scenario_jsonl.py --runs 9 --output jsonl.md

It runs on its own, or in bench.py as `--only jsonl` (`run(bench)` is the scenario).
"""

from __future__ import annotations

import argparse
import compileall
import datetime as dt
import shutil
import statistics
import sys
import time
from pathlib import Path

import numpy as np
from common import (
    DATA,
    MIB,
    REPO,
    WIDE_COLUMNS,
    Bench,
    Command,
    Cumtool,
    Datasets,
    Scenario,
    close_enough,
    log,
    python_script,
    report,
)

ROWS = 1_000_000  # the size (fewer when the run's --rows are fewer)
LIMIT = 1.5  # the goal: at most 1.5x polars lazy, reading and writing

POLARS_NDJSON_TO_CSV = """
    import sys, polars as pl
    pl.scan_ndjson(sys.argv[1]).select(pl.all().cum_sum()).sink_csv(sys.argv[2])
"""
POLARS_CSV_TO_NDJSON = """
    import sys, polars as pl
    pl.scan_csv(sys.argv[1]).select(pl.all().cum_sum()).sink_ndjson(sys.argv[2])
"""
POLARS_NDJSON_TO_NDJSON = """
    import sys, polars as pl
    pl.scan_ndjson(sys.argv[1]).select(pl.all().cum_sum()).sink_ndjson(sys.argv[2])
"""

# (label, input format, output format); cumtool and polars for each.
PAIRS = [("read", "jsonl", "csv"), ("write", "csv", "jsonl"), ("both", "jsonl", "jsonl")]
POLARS = {"read": POLARS_NDJSON_TO_CSV, "write": POLARS_CSV_TO_NDJSON,
          "both": POLARS_NDJSON_TO_NDJSON}


def as_jsonl(csv: Path) -> Path:
    """The CSV data as JSON Lines, remade when the CSV is newer."""
    import polars as pl

    path = DATA / (csv.stem + ".jsonl")
    if path.exists() and path.stat().st_mtime >= csv.stat().st_mtime:
        return path
    log(f"making {path.name} ...")
    partial = path.with_name(path.name + ".partial")
    pl.scan_csv(csv).sink_ndjson(partial)
    partial.replace(path)
    return path


def last_row(path: Path) -> tuple[int, np.ndarray]:
    import polars as pl

    frame = pl.read_ndjson(path) if path.suffix == ".jsonl" else pl.read_csv(path)
    row = frame.tail(1).select(WIDE_COLUMNS).cast(pl.Float64).row(0)
    return frame.height, np.array(row, dtype=np.float64)


def run(bench: Bench) -> None:
    # Compiled as an installed package is (as scenario_tiny does): with
    # PYTHONDONTWRITEBYTECODE=1 a checkout compiles every module at every start.
    compileall.compile_dir(REPO / "cumtool", quiet=1)
    rows = min(bench.data.rows, ROWS)
    csv = bench.data.wide("csv", rows)
    jsonl = as_jsonl(csv)
    sources = {"csv": csv, "jsonl": jsonl}
    out = bench.out
    commands = []
    for label, source, target in PAIRS:
        mine, theirs = out(f"jsonl-{label}-cumtool.{target}"), out(f"jsonl-{label}-polars.{target}")
        commands.append(Command(f"cumtool {label} ({source} -> {target})",
                                bench.cumtool("cumsum", sources[source], mine), mine))
        commands.append(Command(f"polars lazy {label} ({source} -> {target})",
                                python_script(POLARS[label], sources[source], theirs), theirs))
    label = bench.rows_label(rows)
    scenario = Scenario("jsonl", f"JSON Lines, {label} rows x 8 columns, cumsum: reading, "
                        "writing and both against polars lazy", commands,
                        "cumtool both (jsonl -> jsonl)")
    bench.execute(scenario)
    scenario.notes.append(
        f"inputs: {jsonl.stat().st_size / MIB:.0f} MiB JSON Lines, "
        f"{csv.stat().st_size / MIB:.0f} MiB CSV (the same data)")
    reference = bench.data.reference(csv)
    want = np.array(reference["sums"], dtype=np.float64)
    good = True
    for command in scenario.commands:
        if not command.ok:
            continue
        got_rows, row = last_row(command.output)
        if got_rows != reference["rows"] or not close_enough(row, want):
            good = False
            scenario.checks.append(f"**MISMATCH** {command.label}: {got_rows} rows, last row "
                                   f"{np.array2string(row, precision=6)}")
    if good:
        scenario.checks.append(f"every output has {reference['rows']} rows and ends on the "
                               "exact column sums (relative 1e-9)")
    for kind, source, target in PAIRS:
        mine = f"cumtool {kind} ({source} -> {target})"
        theirs = f"polars lazy {kind} ({source} -> {target})"
        ratio = scenario.ratio(mine, theirs)
        fastest = scenario.ratio(mine, theirs, of="fastest")
        shown = "not measured" if ratio is None else f"{ratio:.2f}x"
        if fastest is not None:
            shown += f" (fastest runs {fastest:.2f}x)"
        cpu = cpu_ratio(scenario, mine, theirs)
        if cpu is not None:
            shown += f"; CPU {cpu:.2f}x"
        scenario.notes.append(f"{kind}, {source} -> {target}: cumtool ÷ polars lazy, wall "
                              f"{shown}")
        bench.ratio_goal(f"JSON Lines {kind} ({source} -> {target}) {label} x 8: cumtool ÷ "
                         "polars lazy", scenario, mine, theirs, LIMIT)


def cpu_ratio(scenario: Scenario, numerator: str, denominator: str) -> float | None:
    """The ratio of two commands' median CPU seconds (user + system): what a busy machine
    moves less than wall time, and what more cores do not lower."""
    top, bottom = scenario.command(numerator), scenario.command(denominator)
    if not (top.ok and bottom.ok and top.cpu and bottom.cpu):
        return None
    under = statistics.median(bottom.cpu)
    return statistics.median(top.cpu) / under if under else None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="cumtool against polars lazy on JSON Lines "
                                                 "(issue 25), side by side.")
    parser.add_argument("--runs", type=int, default=5, help="timed runs per command")
    parser.add_argument("--warmup", type=int, default=1, help="untimed runs per command")
    parser.add_argument("--rows", type=int, default=ROWS, help="rows (default 1,000,000)")
    parser.add_argument("--output", type=Path, default=None, help="also write the report")
    args = parser.parse_args(argv)
    args.quick = False
    started = dt.datetime.now(dt.timezone.utc)
    clock = time.perf_counter()
    data = Datasets(rows=args.rows, keyed_groups=max(1, args.rows // 20))
    data.load()
    bench = Bench(args, data, Cumtool.find(), shutil.which("mlr"))
    run(bench)
    text = report(bench, sys.argv[1:] if argv is None else argv, started,
                  time.perf_counter() - clock)
    print(text)
    if args.output:
        args.output.write_text(text)
    mismatched = [c for s in bench.scenarios for c in s.checks if "MISMATCH" in c]
    failed = [c.label for s in bench.scenarios for c in s.commands if not c.ok]
    return 1 if mismatched or failed else 0


if __name__ == "__main__":
    sys.exit(main())
