"""On its own: cumtool's compiled CSV pipeline (cumtool/formats/csv/fast.py) against polars lazy,
CSV -> CSV cumsum of the wide table (6 float64, 2 int64 columns), side by side in one
interleaved run: to a file (-o, which fsyncs), to standard output, through a pipe
(`cat file | ... | tail -n 1`), and each on 1 core and on 2 (taskset), with the streaming
path (`--batch-rows`, which the fast path leaves to it) beside them. Prints medians of
wall and CPU seconds (user + system of the whole command, pipes included), peak RSS, and
the ratios to polars lazy.

    python benchmarks/fastcsv_bench.py [--rows 2000000] [--runs 5] [--cores 1,2]
"""

from __future__ import annotations

import argparse
import os
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from common import _write_wide_csv  # the bench's own data recipe

ROOT = Path(__file__).resolve().parent.parent
POLARS_FILE = ("import sys, polars as pl; pl.scan_csv(sys.argv[1]).select(pl.all().cum_sum())"
               ".sink_csv(sys.argv[2])")
POLARS_STDOUT = ("import sys, polars as pl; pl.scan_csv(sys.argv[1]).select(pl.all().cum_sum())"
                 ".sink_csv(sys.stdout.buffer)")
POLARS_PIPE = ("import sys, polars as pl; pl.read_csv(sys.stdin.buffer).select("
               "pl.all().cum_sum()).write_csv(sys.stdout.buffer)")


def commands(source: Path, out: Path) -> dict[str, str]:
    py = shlex.quote(sys.executable)
    cumtool = f"{py} -m cumtool cumsum"
    src = shlex.quote(str(source))
    return {
        "cumtool -o": f"{cumtool} {src} -o {out}/cumtool.csv",
        "cumtool stdout": f"{cumtool} {src} > {out}/cumtool-stdout.csv",
        "streaming stdout": f"{cumtool} {src} --batch-rows 65536 > {out}/streaming.csv",
        "polars lazy": f"{py} -c {shlex.quote(POLARS_FILE)} {src} {out}/polars.csv",
        "polars lazy stdout": f"{py} -c {shlex.quote(POLARS_STDOUT)} {src} "
                              f"> {out}/polars-stdout.csv",
        "cumtool pipe": f"cat {src} | {cumtool} - | tail -n 1 > {out}/cumtool-pipe.txt",
        "polars pipe": f"cat {src} | {py} -c {shlex.quote(POLARS_PIPE)} | tail -n 1 "
                       f"> {out}/polars-pipe.txt",
    }


def run_once(command: str, cores: str) -> tuple[float, float, int]:
    """Wall seconds, CPU seconds (every process of the command) and peak RSS in KiB."""
    argv = ["taskset", "-c", cores, "sh", "-c", command]
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    start = time.perf_counter()
    child = subprocess.Popen(argv, env=env)
    _pid, status, usage = os.wait4(child.pid, 0)
    wall = time.perf_counter() - start
    child.returncode = os.waitstatus_to_exitcode(status)
    if child.returncode:
        raise SystemExit(f"failed ({child.returncode}): {command}")
    return wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=2_000_000)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--cores", default="1,2", help="core counts to run on (taskset)")
    parser.add_argument("--only", default="", help="comma-separated command names")
    args = parser.parse_args()
    data = Path(tempfile.gettempdir()) / f"cumtool-fastcsv-{args.rows}.csv"
    if not data.exists():
        _write_wide_csv(data, args.rows, 1)
    out = Path(tempfile.mkdtemp(prefix="cumtool-fastcsv-out-"))
    every = commands(data, out)
    wanted = [n for n in every if not args.only or n in args.only.split(",")]
    cpus = sorted(os.sched_getaffinity(0))
    settings = [(n, ",".join(str(c) for c in cpus[:int(k)])) for n in wanted
                for k in args.cores.split(",")]
    times: dict[tuple[str, str], list[tuple[float, float, int]]] = {s: [] for s in settings}
    for name, cores in settings:  # warm-up
        run_once(every[name], cores)
    for round_ in range(args.runs):
        shift = round_ % len(settings)
        for name, cores in settings[shift:] + settings[:shift]:
            times[name, cores].append(run_once(every[name], cores))
    if (out / "cumtool-stdout.csv").exists() and (out / "polars-stdout.csv").exists():
        same = (out / "cumtool-stdout.csv").read_bytes() == (out / "polars-stdout.csv").read_bytes()
        print(f"cumtool's stdout {'equals' if same else 'DIFFERS FROM'} polars' byte for byte")
    print(f"\n{args.rows:,} rows x 8, {data.stat().st_size / 2**20:.0f} MiB, medians of "
          f"{args.runs}, load {os.getloadavg()[0]:.1f}\n")
    print("| command | cores | wall s | CPU s | RSS MiB | wall ÷ polars | CPU ÷ polars |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    peer = {"cumtool -o": "polars lazy", "cumtool stdout": "polars lazy stdout",
            "streaming stdout": "polars lazy stdout", "cumtool pipe": "polars pipe"}
    for name, cores in settings:
        runs = times[name, cores]
        wall = statistics.median(r[0] for r in runs)
        cpu = statistics.median(r[1] for r in runs)
        rss = max(r[2] for r in runs) / 1024
        ratio = ""
        other = peer.get(name)
        if other and (other, cores) in times:
            theirs = times[other, cores]
            ratio = (f"{wall / statistics.median(r[0] for r in theirs):.2f}x | "
                     f"{cpu / statistics.median(r[1] for r in theirs):.2f}x")
        else:
            ratio = " | "
        print(f"| {name} | {len(cores.split(','))} | {wall:.2f} | {cpu:.2f} | {rss:.0f} | "
              f"{ratio} |")
    shutil.rmtree(out, ignore_errors=True)


if __name__ == "__main__":
    main()
