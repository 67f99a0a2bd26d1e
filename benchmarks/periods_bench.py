"""Issue 36's speed goals: `cumsum --period month --time date` at most 1.3x, and
`cumsum --share` at most 2.2x, the time of plain `cumsum` of the same columns, on a
CSV of 2M rows (date, store, units, revenue: dates over three years, 50 stores).

    python benchmarks/periods_bench.py                 # 2M rows, medians of 3
    python benchmarks/periods_bench.py --rows 200000 --runs 5 --output RESULTS.md

Each command runs as its own process (`python -m cumtool`, as the CLI runs), the runs
interleaved (plain, period, share, plain, ...), so that a noisy neighbour slows all of
them alike; the medians and their ratios to plain cumsum are printed as a Markdown table.
The outputs are checked: the period run against a month-by-month reference made with
polars, the share run's last value per column (1.0).
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent
GOALS = {"--period month --time date": 1.3, "--share": 2.2}


def make_csv(path: Path, rows: int, seed: int = 36) -> None:
    rng = np.random.default_rng(seed)
    first = np.datetime64("2022-01-01")
    days = first + np.sort(rng.integers(0, 3 * 365, rows)).astype("timedelta64[D]")
    stores = rng.integers(0, 50, rows)
    units = rng.integers(0, 100, rows)
    revenue = np.round(rng.uniform(0, 500, rows), 2)
    with open(path, "w", encoding="utf-8") as out:
        out.write("date,store,units,revenue\n")
        step = 200_000
        for start in range(0, rows, step):
            part = slice(start, start + step)
            out.write("".join(
                f"{d},s{s},{u},{r}\n" for d, s, u, r in zip(
                    days[part].astype(str).tolist(), stores[part].tolist(),
                    units[part].tolist(), revenue[part].tolist(), strict=True)))


def timed(argv: list[str]) -> tuple[float, float]:
    """Wall seconds, and CPU seconds (user + system) of the process and its threads."""
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run(argv, check=True, env=env, stdout=subprocess.DEVNULL)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu


def check(source: Path, period_out: Path, share_out: Path) -> None:
    import polars as pl

    frame = pl.read_csv(source, try_parse_dates=True)
    want = frame.with_columns(
        pl.col("units", "revenue").cum_sum().over(pl.col("date").dt.truncate("1mo")))
    got = pl.read_csv(period_out)
    assert got["units"].to_list() == want["units"].to_list(), "period: units differ"
    ok = np.allclose(got["revenue"].to_numpy(), want["revenue"].to_numpy(), rtol=1e-9)
    assert ok, "period: revenue differs"
    shares = pl.read_csv(share_out)
    assert shares["units"][-1] == 1.0 and shares["revenue"][-1] == 1.0, "share: last != 1"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=2_000_000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--output", type=Path, default=None, help="also write the table here")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="cumtool-periods-") as tmp:
        folder = Path(tmp)
        source = folder / "sales.csv"
        make_csv(source, args.rows)
        cumtool = [sys.executable, "-m", "cumtool", "cumsum", str(source), "-q",
                   "-c", "units,revenue"]
        runs = {
            "plain cumsum": [*cumtool, "-o", str(folder / "plain.csv")],
            "--period month --time date": [*cumtool, "--period", "month", "--time", "date",
                                           "-o", str(folder / "period.csv")],
            "--share": [*cumtool, "--share", "-o", str(folder / "share.csv")],
        }
        times: dict[str, list[float]] = {name: [] for name in runs}
        cpus: dict[str, list[float]] = {name: [] for name in runs}
        for _ in range(args.runs):
            for name, argv in runs.items():
                wall, cpu = timed(argv)
                times[name].append(wall)
                cpus[name].append(cpu)
        check(source, folder / "period.csv", folder / "share.csv")
    base = statistics.median(times["plain cumsum"])
    cpu_base = statistics.median(cpus["plain cumsum"])
    load = os.getloadavg()[0]
    lines = [f"# --period and --share: {args.rows:,} rows, medians of {args.runs}", "",
             f"Made {dt.date.today()} by `python benchmarks/periods_bench.py --rows "
             f"{args.rows} --runs {args.runs}` ({os.cpu_count()} cores, shared; load "
             f"average {load:.1f} at the end). Wall seconds, and CPU seconds (user + "
             "system, every thread), which a busy machine disturbs less.", "",
             "| run | median wall s | runs (s) | x plain | median CPU s | x plain | goal |",
             "|---|---:|---|---:|---:|---:|---:|"]
    for name, seconds in times.items():
        median = statistics.median(seconds)
        cpu = statistics.median(cpus[name])
        goal = GOALS.get(name)
        lines.append(f"| {name} | {median:.2f} | {', '.join(f'{s:.2f}' for s in seconds)} | "
                     f"{median / base:.2f} | {cpu:.2f} | {cpu / cpu_base:.2f} | "
                     f"{'-' if goal is None else f'<= {goal}'} |")
    text = "\n".join(lines) + "\n"
    print(text)
    if args.output is not None:
        args.output.write_text(text, encoding="utf-8")


if __name__ == "__main__":
    main()
