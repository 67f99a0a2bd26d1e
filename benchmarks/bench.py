#!/usr/bin/env python
"""Benchmarks for cumtool against the tools people would otherwise reach for (issue 3).

    python benchmarks/bench.py                     # full size: 2M rows, 5 runs each
    python benchmarks/bench.py --quick             # 200k rows, 3 runs: a fast check
    python benchmarks/bench.py --only csv,npy      # some scenarios only
    python benchmarks/bench.py --memory            # also the 10M-row peak-memory check
    python benchmarks/bench.py --big               # also 10M rows against polars (issue 25)
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

This file is the entry point; common.py holds what the scenarios share (data, running,
checking, the report) and each scenario is its own module, scenario_<name>.py, with a
`run(bench)`. One run still prints every scenario's table and every goal's ratio.
"""

from __future__ import annotations

import argparse
import compileall
import datetime as dt
import shutil
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import scenario_arrow
import scenario_big
import scenario_by
import scenario_csv
import scenario_jsonl
import scenario_memory
import scenario_npy
import scenario_ops
import scenario_parquet
import scenario_pipe
import scenario_small
import scenario_state
import scenario_stats
import scenario_text
import scenario_tiny
from common import PIN, REPO, SMALL_ROWS, Bench, Cumtool, Datasets, log, report

# In the order they run and report.
SCENARIOS: dict[str, Callable[[Bench], None]] = {
    "csv": scenario_csv.run,
    "pipe": scenario_pipe.run,
    "text": scenario_text.run,
    "parquet": scenario_parquet.run,
    "arrow": scenario_arrow.run,
    "npy": scenario_npy.run,
    "small": scenario_small.run,
    "tiny": scenario_tiny.run,
    "ops": scenario_ops.run,
    "stats": scenario_stats.run,
    "by": scenario_by.run,
    "memory": scenario_memory.run,
    "big": scenario_big.run,
    "state": scenario_state.run,
    "jsonl": scenario_jsonl.run,
}


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
                             "a 464 MiB input, at full size)")
    parser.add_argument("--big", action="store_true",
                        help="also CSV -> CSV at 10M rows against polars lazy, on 2 cores "
                             "and 1, with peak RSS at 2M and 10M (a 464 MiB input, 1.2 GiB "
                             "outputs; about 8 minutes at 3 runs on 2 cores)")
    parser.add_argument("--pin", default=None, metavar="CPUS",
                        help="run every command under `taskset -c CPUS` (e.g. 1); the "
                             "scenarios that add their own 1-core rows (taskset -c 0) then "
                             "leave them out")
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
    if args.only is None:
        optional = {"memory": args.memory, "big": args.big}
        wanted = tuple(s for s in wanted if optional.get(s, True))
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
    # Every scenario runs cumtool compiled, as an installed package is (pip writes the .pyc
    # files): a checkout run with PYTHONDONTWRITEBYTECODE=1 would compile every module at
    # every start (0.1-0.2 s of CPU), which the peers' installed modules never pay.
    compileall.compile_dir(REPO / "cumtool", quiet=1)
    if args.pin is not None:
        PIN[:] = ["taskset", "-c", args.pin]
        bench.notes.append(f"every command ran under `taskset -c {args.pin}`")
    for name in args.scenarios:
        SCENARIOS[name](bench)
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
