"""The 2-core proxies of issue "Every core", side by side in one run: cumtool on the
2M x 8 CSV at --threads 1, 2, 3, 8 and 16, and polars lazy at POLARS_MAX_THREADS 1, 2
and 16, each the best of --runs by CPU. Printed per run: wall, user+sys CPU, voluntary
and involuntary context switches per MB of input, peak RSS, and the ratios the issue
sets goals for (CPU at 16 threads over CPU at 2; context switches per MB at 16).

    python benchmarks/cores_proxy.py [--rows 2000000] [--runs 3] [--baseline CHECKOUT]
                                     [--gil-runs 5] [--only-gil]

--baseline runs another checkout (with its C built in place) beside this one, its
thread count set as before --threads existed: by patching cumtool.native.CORES.

On a 2-core machine more threads cannot run faster; what they can do is cost more, in
hand-offs (context switches) and in CPU. A design that scales keeps both flat.

Then the GIL-held CPU a MB (the issue's goal: <= 0.2 ms a MB at --threads 16), at
--threads 16 and 2, CSV -> CSV (-o and stdout), Parquet -> Parquet, JSON Lines -> CSV,
each against a head of the same file (HEAD_ROWS rows: start-up, judging, the first
chunk), so that what is left is what grows with the input, per MB of the difference:

- counter (CSV only): the user CPU of every Python thread (RUSAGE_THREAD at its end, the
  main thread's at exit), the least of --gil-runs. Only Python threads take the GIL and
  the CSV pipeline's pool is C threads that never do, so this bounds the GIL-held CPU from
  above (it also counts what those threads do with the GIL let go). For Parquet and JSON
  Lines pyarrow's work on Python threads lets the GIL go, so the bound says little there.
- py-spy (skipped, with a line saying so, where it is not installed): `py-spy record
  --gil` at 1 kHz records only the thread holding the GIL; samples ÷ rate = GIL-held
  seconds, the median of --gil-runs. It is wall time, not CPU: a thread preempted while
  it holds the GIL counts, so a loaded machine inflates it. Import frames are left out: on
  this VM py-spy replays start-up stacks by the thousand when it falls behind (13,728
  samples of one import in a 0.5 s run). Samples with no Python frame at all are shown
  apart: no thread's Python code can be named for them."""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
DATA = HERE / "data"


HEAD_ROWS = 20_000


def make(rows: int, suffix: str = "csv", head: int | None = None) -> Path:
    """The rows x 8 table (6 floats rounded to 6 places, 2 ints) as CSV, Parquet
    (pq.write_table's defaults: row groups of 2^20 rows) or JSON Lines; with `head`, its
    first `head` rows only."""
    name = f"cores-{rows}" if head is None else f"cores-{rows}-head{head}"
    path = DATA / f"{name}.{suffix}"
    if path.exists():
        return path
    import numpy as np
    import pyarrow as pa

    DATA.mkdir(exist_ok=True)
    rng = np.random.default_rng(0)
    columns = {f"c{i}": np.round(rng.standard_normal(rows), 6) for i in range(6)}
    columns["i0"] = rng.integers(-1000, 1000, rows)
    columns["i1"] = rng.integers(0, 100, rows)
    table = pa.table(columns)
    if head is not None:
        table = table.slice(0, head)
    if suffix == "csv":
        import pyarrow.csv as pacsv

        pacsv.write_csv(table, path)
    elif suffix == "parquet":
        import pyarrow.parquet as pq

        pq.write_table(table, path)
    else:
        import polars as pl

        pl.DataFrame(table).write_ndjson(path)
    return path


# Run in place of `python -m cumtool`: each Python thread's user CPU summed at its end,
# the main thread's at exit, printed last on standard error.
_COUNTED = """
import atexit, resource, sys, threading
used = []
run = threading.Thread.run
def counted(self):
    try:
        run(self)
    finally:
        used.append(resource.getrusage(resource.RUSAGE_THREAD).ru_utime)
threading.Thread.run = counted
atexit.register(lambda: print("python-threads-user", sum(used)
                + resource.getrusage(resource.RUSAGE_THREAD).ru_utime, file=sys.stderr))
sys.argv[0] = "cumtool"
from cumtool.launch import main
main()
"""


def _python_user_cpu(args: list[str], runs: int) -> float:
    best = float("inf")
    for _ in range(runs):
        done = subprocess.run([sys.executable, "-c", _COUNTED, *args], stdout=subprocess.DEVNULL,
                              stderr=subprocess.PIPE, text=True, cwd=DATA, check=False,
                              env={**os.environ, "PYTHONPATH": str(HERE.parent)})
        last = done.stderr.strip().splitlines()[-1:] or [""]
        if done.returncode or not last[0].startswith("python-threads-user"):
            sys.exit(f"failed: cumtool {' '.join(args)}\n{done.stderr[-500:]}")
        best = min(best, float(last[0].split()[1]))
    return best


GIL_RATE = 1000


def _gil_seconds(py_spy: str, args: list[str], runs: int) -> tuple[float, float]:
    """The medians over `runs` of py-spy's GIL-holding samples ÷ rate: those with Python
    frames (start-up's imports left out, see the module's doc), and those with none."""
    counts: list[int] = []
    frameless: list[int] = []
    with tempfile.TemporaryDirectory() as folder:
        raw = Path(folder) / "gil.txt"
        for _ in range(runs):
            done = subprocess.run(
                [py_spy, "record", "--gil", "-r", str(GIL_RATE), "-f", "raw", "-o", str(raw),
                 "--", sys.executable, "-m", "cumtool", *args],
                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, cwd=DATA,
                check=False, env={**os.environ, "PYTHONPATH": str(HERE.parent)})
            if done.returncode or not raw.exists():
                sys.exit(f"py-spy failed: cumtool {' '.join(args)}\n{done.stderr[-500:]}")
            samples = empty = 0
            for line in raw.read_text().splitlines():
                stack, _, count = line.rpartition(" ")
                if not stack:
                    empty += int(count)
                elif "_find_and_load" not in stack:
                    samples += int(count)
            counts.append(samples)
            frameless.append(empty)
    return statistics.median(counts) / GIL_RATE, statistics.median(frameless) / GIL_RATE


def gil(rows: int, runs: int) -> None:
    """The GIL-held CPU a MB of input (see the module's doc)."""
    py_spy = shutil.which("py-spy")
    out = DATA / "out"
    out.mkdir(exist_ok=True)
    cases = [("CSV -> CSV, -o", "csv", ["-o", str(out / "gil.csv")]),
             ("CSV -> CSV, stdout", "csv", ["--to", "csv"]),
             ("Parquet -> Parquet, -o", "parquet", ["-o", str(out / "gil.parquet")]),
             ("JSON Lines -> CSV, stdout", "jsonl", ["--to", "csv"])]
    print(f"\nGIL-held CPU a MB of input, {rows:,} rows against their first {HEAD_ROWS:,}")
    if py_spy is None:
        print("(py-spy is not installed: its column is skipped; `pip install py-spy`)")
    print("| case | threads | MB | Python threads' user CPU ms / MB (counter, CSV) | "
          "py-spy GIL ms / MB | py-spy GIL s, whole; head | no frame ms / MB |")
    print("|---|---|---|---|---|---|---|")
    for what, suffix, output in cases:
        whole, head = make(rows, suffix), make(rows, suffix, HEAD_ROWS)
        mb = (whole.stat().st_size - head.stat().st_size) / 1e6
        for threads in (16, 2):
            def args(path: Path, threads: int = threads, output: list[str] = output) -> list[str]:
                return ["cumsum", str(path), "-q", "--threads", str(threads), *output]

            counter = "-"
            if suffix == "csv":
                used = _python_user_cpu(args(whole), runs) - _python_user_cpu(args(head), runs)
                counter = f"{max(used, 0.0) * 1000 / mb:.3f}"
            sampled = seconds = frameless = "-"
            if py_spy is not None:
                held, empty = _gil_seconds(py_spy, args(whole), runs)
                held_head, empty_head = _gil_seconds(py_spy, args(head), runs)
                sampled = f"{max(held - held_head, 0.0) * 1000 / mb:.3f}"
                seconds = f"{held:.3f}; {held_head:.3f}"
                frameless = f"{max(empty - empty_head, 0.0) * 1000 / mb:.3f}"
            print(f"| {what} | {threads} | {mb:.0f} | {counter} | {sampled} | {seconds} | "
                  f"{frameless} |", flush=True)


def measure(argv: list[str], env: dict[str, str], runs: int) -> tuple[float, ...]:
    best: tuple[float, ...] | None = None
    for _ in range(runs):
        # run outside any checkout: `python -c` puts the working directory first on the
        # path, which would import the checkout there whatever PYTHONPATH says
        done = subprocess.run(["/usr/bin/time", "-f", "%e %U %S %w %c %M", *argv],
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                              env={**os.environ, **env}, check=False, cwd=DATA)
        if done.returncode:
            sys.exit(f"failed: {' '.join(argv)}\n{done.stderr[-500:]}")
        wall, user, system, voluntary, involuntary, rss = done.stderr.split()[-6:]
        row = (float(wall), float(user) + float(system), int(voluntary), int(involuntary),
               int(rss) / 1024)
        best = row if best is None or row[1] < best[1] else best
    assert best is not None
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=2_000_000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--baseline", default=None, metavar="CHECKOUT")
    parser.add_argument("--gil-runs", type=int, default=5, help="runs a GIL figure")
    parser.add_argument("--only-gil", action="store_true", help="the GIL step alone")
    args = parser.parse_args()
    if args.only_gil:
        gil(args.rows, args.gil_runs)
        return
    path = make(args.rows)
    mb = path.stat().st_size / 1e6
    print(f"{path.name}: {mb:.0f} MB, {os.cpu_count()} cores, best of {args.runs} by CPU")
    print("| command | threads | wall s | CPU s | vol. switches / MB | invol. / MB | RSS MiB |")
    print("|---|---|---|---|---|---|---|")
    cpu = {}
    switches = {}
    for threads in (1, 2, 3, 8, 16):
        argv = [sys.executable, "-m", "cumtool", "cumsum", str(path), "-q", "--to", "csv",
                "--threads", str(threads)]
        wall, used, voluntary, involuntary, rss = measure(
            argv, {"PYTHONPATH": str(HERE.parent)}, args.runs)
        cpu[threads], switches[threads] = used, voluntary / mb
        print(f"| cumtool | {threads} | {wall:.2f} | {used:.2f} | {voluntary / mb:.2f} | "
              f"{involuntary / mb:.2f} | {rss:.0f} |")
        if args.baseline:
            code = ("import sys, cumtool.native as n; n.CORES = int(sys.argv.pop(1)); "
                    "from cumtool.launch import main; sys.argv[0] = 'cumtool'; main()")
            argv = [sys.executable, "-c", code, str(threads), "cumsum", str(path), "-q",
                    "--to", "csv"]
            wall, used, voluntary, involuntary, rss = measure(
                argv, {"PYTHONPATH": args.baseline}, args.runs)
            print(f"| cumtool before | {threads} | {wall:.2f} | {used:.2f} | "
                  f"{voluntary / mb:.2f} | {involuntary / mb:.2f} | {rss:.0f} |")
    code = ("import polars as pl, sys; pl.scan_csv(sys.argv[1]).select(pl.all().cum_sum())"
            ".sink_csv('/dev/null')")
    for threads in (1, 2, 16):
        wall, used, voluntary, involuntary, rss = measure(
            [sys.executable, "-c", code, str(path)], {"POLARS_MAX_THREADS": str(threads)},
            args.runs)
        print(f"| polars lazy | {threads} | {wall:.2f} | {used:.2f} | {voluntary / mb:.2f} | "
              f"{involuntary / mb:.2f} | {rss:.0f} |")
    print(f"\ncumtool CPU at 16 threads / at 2: {cpu[16] / cpu[2]:.2f}x (goal <= 1.05x); "
          f"voluntary switches per MB at 16: {switches[16]:.1f} (goal <= 3)")
    gil(args.rows, args.gil_runs)


if __name__ == "__main__":
    main()
