"""--engine dask against one process and against dask.dataframe's own cumsum, and what the
chain of carries costs per partition (issue 11, item 6).

    pip install -e '.[dask,bench]'
    python benchmarks/dask_chain.py                       # 40 files x 500k rows x 8 columns
    python benchmarks/dask_chain.py --files 8 --rows 100000 --output benchmarks/DASK.md

The data is made here from a fixed seed (benchmarks/data/dask/, not committed). Timings
are wall-clock seconds of the run itself, best of --runs; a cluster's start-up is
reported apart. Outputs are one Parquet file per input file.

Rows:
- local: one process, the files in order, the plan's carried state from file to file
  (what the local engine does with several inputs);
- cumtool --engine dask, on a LocalCluster of 1 and 2 worker processes;
- dask.dataframe: read_parquet(files).cumsum().to_parquet(), and how many of its values
  differ (bit for bit) from the sequential result;
- the chain: runs over P tiny files (a row each), whose time is nearly all scheduler
  overhead, and the fold (carry only) and full-scan times of one file, to project the
  chain's limit at 100 workers.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import re
import shutil
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from cumtool import distributed as dask_engine  # noqa: E402
from cumtool.request import Request  # noqa: E402

DATA = HERE / "data" / "dask"
COLUMNS = [f"f{i}" for i in range(6)] + ["i0", "i1"]


def make_files(files: int, rows: int) -> list[str]:
    folder = DATA / f"{files}x{rows}"
    names = [str(folder / f"part-{k:03d}.parquet") for k in range(files)]
    if all(os.path.exists(n) for n in names):
        return names
    folder.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(20261123)
    for name in names:
        data = {c: rng.normal(0, 1e3, rows) for c in COLUMNS[:6]}
        data.update({c: rng.integers(-1000, 1000, rows) for c in COLUMNS[6:]})
        pq.write_table(pa.table(data), name)
    return names


def best(runs: int, action: Callable[[], None], before: Callable[[], None] = lambda: None
         ) -> float:
    times = []
    for _ in range(runs):
        before()
        start = time.perf_counter()
        action()
        times.append(time.perf_counter() - start)
    return min(times)


def fresh(folder: Path) -> Callable[[], None]:
    def clear() -> None:
        shutil.rmtree(folder, ignore_errors=True)
        folder.mkdir(parents=True)
    return clear


def local_run(names: list[str], out: Path, op: str = "cumsum") -> None:
    """One process: each file read, scanned from the carried state, and written."""
    from cumtool.formats.parquet.parquet import ParquetSink

    job = dask_engine._job(Request(op, names[0]), str(out))
    plan = job.plan
    for name in names:
        table = pq.read_table(name)
        with open(out / os.path.basename(name), "wb") as stream:
            sink = ParquetSink(stream, plan.schema)
            for batch in table.to_batches():
                sink.write(plan.apply(batch))
            sink.close()


def dask_run(names: list[str], out: Path, address: str) -> None:
    dask_engine.run_paths(Request("cumsum", engine="dask", scheduler=address), names,
                          output_dir=str(out))


def dataframe_run(names: list[str], out: Path) -> None:
    import dask.dataframe as dd

    dd.read_parquet(names).cumsum().to_parquet(str(out), write_index=False)


def _in_order(folder: Path) -> list[str]:
    """The folder's Parquet files in natural order: dask.dataframe writes part.0 ...
    part.39, which sort as text puts part.10 before part.2."""
    def key(path: Path) -> list[object]:
        return [int(t) if t.isdigit() else t for t in re.split(r"(\d+)", path.name)]
    return [str(p) for p in sorted(folder.glob("*.parquet"), key=key)]


def differing(sequential: Path, other: Path, columns: list[str]) -> tuple[int, int, float]:
    """Values of `other` that differ bit for bit from `sequential`, of all; the largest
    relative difference."""
    want = pq.read_table(_in_order(sequential)).select(columns)
    got = pq.read_table(_in_order(other)).select(columns)
    differ = total = 0
    worst = 0.0
    for column in columns:
        a = want.column(column).to_numpy()
        b = got.column(column).to_numpy()
        same = a.view(np.uint64) == b.view(np.uint64) if a.dtype.kind == "f" else a == b
        differ += int(np.count_nonzero(~same))
        total += a.shape[0]
        if a.dtype.kind == "f":
            with np.errstate(divide="ignore", invalid="ignore"):
                relative = np.abs(a - b) / np.maximum(np.abs(a), 1e-300)
            worst = max(worst, float(np.nanmax(relative)))
    return differ, total, worst


@contextlib.contextmanager
def cluster(workers: int):  # type: ignore[no-untyped-def]
    from distributed import Client, LocalCluster

    start = time.perf_counter()
    with LocalCluster(n_workers=workers, threads_per_worker=1, processes=True,
                      **dask_engine.QUIET_CLUSTER) as local, Client(local) as client:
        client.wait_for_workers(workers)
        yield local.scheduler_address, time.perf_counter() - start, client


def chain_times(address: str, counts: list[int], runs: int) -> list[tuple[int, float]]:
    """Runs over P one-row files into one output: the time per partition is the
    scheduler's, read/fold/scan of one row being nothing."""
    folder = DATA / "tiny"
    folder.mkdir(parents=True, exist_ok=True)
    results = []
    for count in counts:
        names = []
        for k in range(count):
            name = folder / f"t-{k:05d}.parquet"
            if not name.exists():
                pq.write_table(pa.table({"x": [float(k) + 0.5]}), name)
            names.append(str(name))
        out = DATA / "tiny-out.csv"
        seconds = best(runs, lambda names=names, out=out: dask_engine.run_paths(
            Request("cumsum", output=str(out), engine="dask", scheduler=address), names))
        results.append((count, seconds))
    return results


def step_times(name: str, runs: int) -> dict[str, float]:
    """One file's read, fold (carry only) and full scan, in this process, per op."""
    times: dict[str, float] = {}
    job = dask_engine._job(Request("cumsum", name), None)
    part = dask_engine.Partition(name, name, "parquet")
    times["read"] = best(runs, lambda: dask_engine.read_partition(job, part))
    table = dask_engine.read_partition(job, part)
    for op in ("cumsum", "cummax", "logcumsumexp"):
        opjob = dask_engine._job(Request(op, name), None)
        state = dask_engine.state_of(opjob.plan)
        times[f"fold {op}"] = best(runs, lambda j=opjob, s=state: dask_engine.fold_partition(
            j, part, table, s))
        times[f"scan {op}"] = best(runs, lambda j=opjob, s=state: dask_engine.scan_partition(
            j, part, table, s))
    sink_out = DATA / "one.parquet"

    def write() -> None:
        pq.write_table(dask_engine.scan_partition(job, part, table, state_of_job), sink_out)

    state_of_job = dask_engine.state_of(job.plan)
    times["scan + write cumsum"] = best(runs, write)
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--files", type=int, default=40)
    parser.add_argument("--rows", type=int, default=500_000)
    parser.add_argument("--runs", type=int, default=2)
    parser.add_argument("--chain", default="10,40,160,640",
                        help="numbers of one-row partitions for the chain's overhead")
    parser.add_argument("--output", default=None, help="write the Markdown report here")
    args = parser.parse_args()
    os.environ.setdefault("DASK_LOGGING__DISTRIBUTED", "critical")
    names = make_files(args.files, args.rows)
    lines = [f"# --engine dask: {args.files} Parquet files x {args.rows:,} rows x 8 columns",
             "", f"Machine: {os.cpu_count()} cores (shared); best of {args.runs} runs; "
             "seconds of the run, cluster start-up apart.", ""]
    outs = {key: DATA / f"out-{key}" for key in ("local", "dask1", "dask2", "dataframe")}
    rows = []
    seconds = best(args.runs, lambda: local_run(names, outs["local"]), fresh(outs["local"]))
    rows.append(("cumtool, one process (local engine)", seconds, "-", "0 (the reference)"))
    for workers in (1, 2):
        key = f"dask{workers}"
        with cluster(workers) as (address, startup, _client):
            seconds = best(args.runs, lambda a=address, k=key: dask_run(names, outs[k], a),
                           fresh(outs[key]))
        differ, total, _worst = differing(outs["local"], outs[key], COLUMNS)
        rows.append((f"cumtool --engine dask, {workers} worker(s)", seconds, f"{startup:.2f}",
                     f"{differ:,} of {total:,}"))
    with cluster(2) as (address, startup, _client):
        seconds = best(args.runs, lambda: dataframe_run(names, outs["dataframe"]),
                       fresh(outs["dataframe"]))
    differ, total, worst = differing(outs["local"], outs["dataframe"], COLUMNS)
    rows.append(("dask.dataframe cumsum, 2 workers", seconds, f"{startup:.2f}",
                 f"{differ:,} of {total:,} (largest relative difference {worst:.2g})"))
    lines += ["| run | seconds | cluster start-up | values differing from sequential |",
              "|---|---:|---:|---|"]
    lines += [f"| {r[0]} | {r[1]:.2f} | {r[2]} | {r[3]} |" for r in rows]
    steps = step_times(names[0], args.runs)
    lines += ["", f"## One file ({args.rows:,} rows x 8 columns), in one process", "",
              "| step | milliseconds |", "|---|---:|"]
    lines += [f"| {step} | {1000 * s:.1f} |" for step, s in steps.items()]
    counts = [int(c) for c in args.chain.split(",")]
    with cluster(2) as (address, _startup, _client):
        chain = chain_times(address, counts, args.runs)
    lines += ["", "## The chain: P one-row partitions, 2 workers", "",
              "| partitions | seconds | ms per partition |", "|---:|---:|---:|"]
    lines += [f"| {p} | {s:.2f} | {1000 * s / p:.1f} |" for p, s in chain]
    if len(chain) >= 2:
        (p0, s0), (p1, s1) = chain[0], chain[-1]
        slope = (s1 - s0) / (p1 - p0)
        lines += ["", f"Marginal cost per partition (from {p0} to {p1}): "
                  f"{1000 * slope:.1f} ms (three tasks, one of them a chain link)."]
    report = "\n".join(lines) + "\n"
    print(report)
    if args.output:
        Path(args.output).write_text(report)


if __name__ == "__main__":
    main()
