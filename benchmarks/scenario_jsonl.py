#!/usr/bin/env python
"""Scenario `jsonl`: JSON Lines, 2M rows x 8 columns (issues 25 and 34): cumtool against
polars lazy, reading (JSON Lines -> CSV), writing (CSV -> JSON Lines) and both (JSON Lines
-> JSON Lines), every command measured side by side in one interleaved run, at each
`--threads` count (cumtool's --threads N, polars' POLARS_MAX_THREADS=N). The JSON Lines
input is the wide CSV data (6 float64 columns with two decimals, 2 int64) written by
polars' NDJSON writer, made here next to it.

    python benchmarks/scenario_jsonl.py               # 2M rows, 5 runs, --threads 1 and 2
    python benchmarks/scenario_jsonl.py --runs 9 --output jsonl.md
    python benchmarks/scenario_jsonl.py --baseline /path/to/other/checkout --proxies

--baseline runs another checkout (its C built in place) beside this one ("cumtool
before"). --proxies adds the 2-core proxies of issue 34: each tool's best run (by CPU) of
reading and of both at 1, 2 and 16 threads, written to /dev/null: CPU at 16 threads over
CPU at 2, and voluntary context switches per MB of input.

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

ROWS = 2_000_000  # issue 34's size (fewer when the run's --rows are fewer)
LIMIT = 1.0  # issue 34's goal: JSON Lines read, and JSON Lines -> JSON Lines, <= polars
WRITE_LIMIT = 1.5  # issue 25's, for writing (CSV -> JSON Lines: the CSV pipeline's)

# argv: input, output, threads (POLARS_MAX_THREADS is read when polars loads)
POLARS_NDJSON_TO_CSV = """
    import os, sys
    os.environ["POLARS_MAX_THREADS"] = sys.argv[3]
    import polars as pl
    pl.scan_ndjson(sys.argv[1]).select(pl.all().cum_sum()).sink_csv(sys.argv[2])
"""
POLARS_CSV_TO_NDJSON = """
    import os, sys
    os.environ["POLARS_MAX_THREADS"] = sys.argv[3]
    import polars as pl
    pl.scan_csv(sys.argv[1]).select(pl.all().cum_sum()).sink_ndjson(sys.argv[2])
"""
POLARS_NDJSON_TO_NDJSON = """
    import os, sys
    os.environ["POLARS_MAX_THREADS"] = sys.argv[3]
    import polars as pl
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
    baseline = getattr(bench.args, "baseline", None)
    if baseline:
        compileall.compile_dir(Path(baseline) / "cumtool", quiet=1)
    rows = min(bench.data.rows, ROWS)
    csv = bench.data.wide("csv", rows)
    jsonl = as_jsonl(csv)
    sources = {"csv": csv, "jsonl": jsonl}
    out = bench.out
    threads = getattr(bench.args, "threads", None) or [1, 2]
    commands = []
    for count in threads:
        for label, source, target in PAIRS:
            mine = out(f"jsonl-{label}-{count}-cumtool.{target}")
            theirs = out(f"jsonl-{label}-{count}-polars.{target}")
            commands.append(Command(f"cumtool {label} ({source} -> {target}), {count} thr.",
                                    bench.cumtool("cumsum", sources[source], mine,
                                                  "--threads", str(count)), mine))
            if baseline:
                before = out(f"jsonl-{label}-{count}-before.{target}")
                commands.append(Command(
                    f"cumtool before {label} ({source} -> {target}), {count} thr.",
                    ["env", f"PYTHONPATH={baseline}", sys.executable, "-m", "cumtool",
                     "cumsum", str(sources[source]), "-o", str(before), "--threads",
                     str(count)], before))
            commands.append(Command(f"polars lazy {label} ({source} -> {target}), {count} "
                                    "thr.", python_script(POLARS[label], sources[source],
                                                          theirs, count), theirs))
    size = bench.rows_label(rows)
    scenario = Scenario("jsonl", f"JSON Lines, {size} rows x 8 columns, cumsum: reading, "
                        "writing and both against polars lazy", commands,
                        f"cumtool both (jsonl -> jsonl), {threads[0]} thr.")
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
    for count in threads:
        outputs = {c.label: c.output for c in scenario.commands if c.ok
                   and c.label.startswith("cumtool ") and c.label.endswith(f", {count} thr.")}
        for label, source, target in PAIRS:
            mine = f"cumtool {label} ({source} -> {target}), {count} thr."
            first = f"cumtool {label} ({source} -> {target}), {threads[0]} thr."
            if count != threads[0] and mine in outputs and scenario.command(first).ok:
                same = outputs[mine].read_bytes() == \
                    scenario.command(first).output.read_bytes()
                verdict = "the same bytes" if same else "**MISMATCH**: other bytes"
                scenario.checks.append(f"{mine}: {verdict} as at {threads[0]} thread(s)")
    for count in threads:
        for kind, source, target in PAIRS:
            mine = f"cumtool {kind} ({source} -> {target}), {count} thr."
            theirs = f"polars lazy {kind} ({source} -> {target}), {count} thr."
            ratio = scenario.ratio(mine, theirs)
            fastest = scenario.ratio(mine, theirs, of="fastest")
            shown = "not measured" if ratio is None else f"{ratio:.2f}x"
            if fastest is not None:
                shown += f" (fastest runs {fastest:.2f}x)"
            cpu = cpu_ratio(scenario, mine, theirs)
            if cpu is not None:
                shown += f"; CPU {cpu:.2f}x"
            scenario.notes.append(f"{kind}, {source} -> {target}, {count} thread(s): cumtool "
                                  f"÷ polars lazy, wall {shown}")
            if baseline:
                before = scenario.ratio(f"cumtool before {kind} ({source} -> {target}), "
                                        f"{count} thr.", theirs)
                before_cpu = cpu_ratio(scenario, f"cumtool before {kind} ({source} -> "
                                       f"{target}), {count} thr.", theirs)
                if before is not None and before_cpu is not None:
                    scenario.notes.append(f"  before ({baseline}): wall {before:.2f}x; CPU "
                                          f"{before_cpu:.2f}x")
            bench.ratio_goal(f"JSON Lines {kind} ({source} -> {target}) {size} x 8, {count} "
                             "thread(s): cumtool ÷ polars lazy", scenario, mine, theirs,
                             WRITE_LIMIT if kind == "write" else LIMIT)
    if getattr(bench.args, "proxies", False):
        scenario.tables.append(proxies(jsonl, max(3, bench.runs), baseline))


def proxies(jsonl: Path, runs: int, baseline: str | None) -> str:
    """Issue 34's 2-core proxies on JSON Lines, as a Markdown table: each command's best
    run by CPU (of `runs`), its output to /dev/null."""
    from cores_proxy import measure

    mb = jsonl.stat().st_size / 1e6
    lines = [f"2-core proxies: {jsonl.name} ({mb:.0f} MB), output to /dev/null, the best of "
             f"{runs} runs by CPU.", "",
             "| command | threads | wall s | CPU s | vol. switches / MB | invol. / MB | "
             "RSS MiB |", "|---|---:|---:|---:|---:|---:|---:|"]
    checkouts = [("cumtool", str(REPO))] + ([("cumtool before", baseline)] if baseline else [])
    summary = []
    for target in ("csv", "jsonl"):
        for name, checkout in checkouts:
            cpu, switches = {}, {}
            for threads in (1, 2, 16):
                argv = [sys.executable, "-m", "cumtool", "cumsum", str(jsonl), "-q", "--to",
                        target, "--threads", str(threads)]
                wall, used, voluntary, involuntary, rss = measure(
                    argv, {"PYTHONPATH": checkout}, runs)
                cpu[threads], switches[threads] = used, voluntary / mb
                lines.append(f"| {name} jsonl -> {target} | {threads} | {wall:.2f} | "
                             f"{used:.2f} | {voluntary / mb:.2f} | {involuntary / mb:.2f} | "
                             f"{rss:.0f} |")
            summary.append(f"- {name} jsonl -> {target}: CPU at 16 threads ÷ at 2 "
                           f"{cpu[16] / cpu[2]:.2f}x (goal ≤ 1.05x); voluntary switches per "
                           f"MB at 16 threads {switches[16]:.2f} (goal ≤ 3)")
        sink = "sink_csv" if target == "csv" else "sink_ndjson"
        code = ("import polars as pl, sys; pl.scan_ndjson(sys.argv[1])"
                f".select(pl.all().cum_sum()).{sink}('/dev/null')")
        for threads in (1, 2, 16):
            wall, used, voluntary, involuntary, rss = measure(
                [sys.executable, "-c", code, str(jsonl)],
                {"POLARS_MAX_THREADS": str(threads)}, runs)
            lines.append(f"| polars lazy jsonl -> {target} | {threads} | {wall:.2f} | "
                         f"{used:.2f} | {voluntary / mb:.2f} | {involuntary / mb:.2f} | "
                         f"{rss:.0f} |")
    return "\n".join([*lines, "", *summary])


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
    parser.add_argument("--rows", type=int, default=ROWS, help="rows (default 2,000,000)")
    parser.add_argument("--threads", type=lambda text: [int(t) for t in text.split(",")],
                        default=[1, 2], help="thread counts, comma-separated (default 1,2)")
    parser.add_argument("--baseline", default=None, metavar="CHECKOUT",
                        help="another checkout, its C built in place, run beside this one")
    parser.add_argument("--proxies", action="store_true",
                        help="add the 2-core proxies (1, 2 and 16 threads)")
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
