"""How --engine dask scales, per op: the parallel work and the serial link of one
500,000 x 8 float64 Parquet partition, measured, and the projected speed-up at 16 and 100
workers, min(workers, (work + link) / link). Also whole runs on a LocalCluster against one
process (LocalClusters of 1 and 2 worker processes; more where the machine has the
cores).

    python benchmarks/dask_scaling.py --output scaling.md   # a section of benchmarks/DASK.md

Per op:
- work: what a worker does for a partition in parallel with the others: read it, scan it
  from its carry and write it (Parquet), plus its summary where the op has one;
- link: what must happen one partition after the other. An op whose carry needs the one
  before it (float sums, products, log-sum-exps, means, variances, ewma): the fold of the
  carry over the partition (in C: carries.fold for cumsum, cumprod and logcumsumexp,
  carries.fold_stats for cummean, cumvar and ewma) plus the hand-off of the carry to the
  next partition's worker (a call of that worker's Folder actor, measured on the
  cluster). An op with a summary (cummax, cummin, cumcount, integer cumsum with
  --exclusive too, cumnunique):
  no chain, only the client's application of a summary to the carry;
- before: the link as it was, the plan's whole scan as the fold plus a task per link
  (the hand-off measured here as a chain of tasks).

The data is made from a fixed seed under benchmarks/data/dask/ (not committed).
"""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from cumtool import distributed as engine  # noqa: E402
from cumtool.request import Request  # noqa: E402

DATA = HERE / "data" / "dask"
OPS = ["cumsum", "cumprod", "logcumsumexp", "cummax", "cummin", "cumcount", "cummean",
       "cummean --compensated", "cumvar", "ewma", "cumsum (int64)",
       "cumsum --exclusive (int64)", "cumnunique", "cumnunique (int64)", "cumnunique (text)"]


def make_files(files: int, rows: int, integers: bool = False, text: bool = False
               ) -> list[str]:
    kind = "t" if text else "i" if integers else "f"
    folder = DATA / f"{kind}{files}x{rows}"
    names = [str(folder / f"part-{k:03d}.parquet") for k in range(files)]
    if all(os.path.exists(n) for n in names):
        return names
    folder.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(20261128)
    for name in names:
        if text:  # every value distinct: cumnunique's worst case
            data = {f"s{c}": pa.array([f"v{c}-{v:x}" for v in rng.permutation(4 * rows)[:rows]])
                    for c in range(8)}
        elif integers:
            data = {f"i{c}": rng.integers(-1000, 1000, rows) for c in range(8)}
        else:  # near 1, so that cumprod stays finite and logcumsumexp is not flat
            data = {f"f{c}": rng.normal(0, 1e-3, rows) + (1.0 if c % 2 else 0.0)
                    for c in range(8)}
        pq.write_table(pa.table(data), name)
    return names


def best(runs: int, action: Callable[[], Any]) -> float:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        action()
        times.append(time.perf_counter() - start)
    return min(times)


def _op(label: str) -> str:
    return label.split(" ")[0]


def old_fold(job: engine.Job, part: engine.Partition, table: pa.Table,
             state: list[dict[str, Any]]) -> None:
    """The fold before: the plan's whole scan of every batch, its output thrown away."""
    plan = engine._plan_with(job, part, state)
    for batch in table.to_batches():
        for one in plan.op_plans():
            one.results(batch)


def partition_times(label: str, name: str, runs: int) -> dict[str, float]:
    """Seconds of each step of one partition, in this process."""
    from cumtool import carries
    from cumtool.columns import parse

    params: dict[str, Any] = {"alpha": 0.1} if _op(label) == "ewma" else {}
    if "--compensated" in label:
        params["compensated"] = True
    columns = (parse(",".join(f"s{c}" for c in range(8)), "-c"),) if "text" in label else ()
    job = engine._job(Request(_op(label), name, params=params, columns=columns,
                              exclusive="--exclusive" in label), None)
    part = engine.Partition(name, name, "parquet")
    state = engine.state_of(job.plan)
    table = engine.read_partition(job, part)
    times = {"read": best(runs, lambda: engine.read_partition(job, part))}

    def scan_write() -> None:
        sink = io.BytesIO()
        pq.write_table(engine.scan_partition(job, part, table, state), sink)

    times["scan + write"] = best(runs, scan_write)
    times["old fold"] = best(runs, lambda: old_fold(job, part, table, state))
    if carries.summarized(job.plan.op_plans()):
        summaries = engine.summarize_partition(job, part, table)
        assert summaries is not None
        times["summary"] = best(runs, lambda: engine.summarize_partition(job, part, table))
        times["apply"] = best(runs * 20, lambda: engine._advanced(job, part, state,
                                                                  summaries))
    else:
        times["fold"] = best(runs, lambda: engine.fold_partition(job, part, table, state))
    return times


@contextlib.contextmanager
def cluster(workers: int) -> Iterator[tuple[str, Any]]:
    from distributed import Client, LocalCluster

    with LocalCluster(n_workers=workers, threads_per_worker=1, processes=True,
                      **engine.QUIET_CLUSTER) as local, Client(local) as client:
        client.wait_for_workers(workers)
        yield local.scheduler_address, client


def handoffs(client: Any, name: str, links: int) -> tuple[float, float]:
    """Seconds per link of a chain over a one-row partition on alternating workers (the
    carry of 8 columns handed on; the fold of one row is nothing): through the workers'
    Folder actors (now), and as a task per link (before)."""
    tiny = DATA / "one-row.parquet"
    pq.write_table(pq.read_table(name).slice(0, 1), tiny)
    job = engine._job(Request("cumsum", str(tiny)), None)
    part = engine.Partition(str(tiny), str(tiny), "parquet")
    shared = client.scatter(job, broadcast=True, hash=False)
    workers = sorted(client.scheduler_info()["workers"])
    reads = [client.submit(engine.read_partition, shared, part, workers=[w], pure=False)
             for w in workers]
    actors = [client.submit(engine.Folder, shared, workers=[w], actor=True).result()
              for w in workers]
    client.gather(reads)

    def by_actors() -> None:
        state = engine.state_of(job.plan)
        for k in range(links):
            state = actors[k % 2].fold(reads[k % 2].key, part, state).result()
            assert state is not None, "the read is not on the actor's worker"

    def by_tasks() -> None:
        state: Any = engine.state_of(job.plan)
        for k in range(links):
            state = client.submit(engine.fold_partition, shared, part, reads[k % 2], state,
                                  workers=[workers[k % 2]], pure=False)
        state.result()

    by_actors()
    by_tasks()
    return best(3, by_actors) / links, best(3, by_tasks) / links


def whole_runs(names: list[str], ops: list[str], runs: int, workers: int
               ) -> list[tuple[str, float, float]]:
    """Seconds of one process and of --engine dask, per op, files to a folder."""
    out = DATA / "out"
    rows = []
    with cluster(workers) as (address, _client):
        for op in ops:
            local = best(runs, lambda op=op: _local(op, names, out))
            dask = best(runs, lambda op=op: _dask(op, names, out, address))
            rows.append((op, local, dask))
    return rows


def _dask(op: str, names: list[str], out: Path, address: str) -> None:
    import shutil

    shutil.rmtree(out / "dask", ignore_errors=True)
    engine.run_paths(Request(op, names[0], engine="dask", scheduler=address), names,
                     output_dir=str(out / "dask"))


def _local(op: str, names: list[str], out: Path) -> None:
    """One process: the local engine over the files, one output each."""
    import shutil
    import subprocess

    shutil.rmtree(out / "local", ignore_errors=True)
    subprocess.run([sys.executable, "-m", "cumtool", op, *names, "-o", str(out / "local") + "/"],
                   check=True, capture_output=True,
                   env={**os.environ, "PYTHONPATH": str(HERE.parent)})


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=500_000)
    parser.add_argument("--files", type=int, default=8, help="for the whole runs")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--links", type=int, default=200)
    parser.add_argument("--output", default=None, help="write the Markdown report here")
    args = parser.parse_args()
    os.environ.setdefault("DASK_LOGGING__DISTRIBUTED", "critical")
    floats = make_files(args.files, args.rows)
    integers = make_files(1, args.rows, integers=True)
    text = make_files(1, args.rows, text=True)
    with cluster(2) as (_address, client):
        handoff, handoff_before = handoffs(client, floats[0], args.links)
    table = []
    for label in OPS:
        name = integers[0] if "int64" in label else text[0] if "text" in label else floats[0]
        t = partition_times(label, name, args.runs)
        work = t["read"] + t["scan + write"] + t.get("summary", 0.0)
        link = t["apply"] if "apply" in t else t["fold"] + handoff
        before = t["old fold"] + handoff_before
        table.append((label, t, work, link, before))
        print(label, {k: round(v * 1000, 2) for k, v in t.items()}, flush=True)
    load = os.getloadavg()[0]
    lines = [f"## How it scales, per {args.rows:,} x 8 float64 partition (milliseconds)",
             "", f"Machine: {os.cpu_count()} cores, shared (load average {load:.1f} while "
             f"measured); best of {args.runs}. Made by `python benchmarks/dask_scaling.py`.",
             "",
             "| op | read | summary | scan + write | work | fold (before) | fold | hand-off | "
             "link (before) | link | speed-up at 16 | at 100 | at 100 (before) |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]

    def ms(seconds: float) -> str:
        return f"{1000 * seconds:.3f}" if seconds < 0.001 else f"{1000 * seconds:.1f}"

    def speedup(workers: int, work: float, link: float) -> str:
        return f"{min(workers, (work + link) / link):.0f}x"

    for label, t, work, link, before in table:
        summarized = "apply" in t
        lines.append(
            f"| {label} | {ms(t['read'])} | {ms(t['summary']) if summarized else '-'} | "
            f"{ms(t['scan + write'])} | {ms(work)} | {ms(t['old fold'])} | "
            f"{'none: ' + ms(t['apply']) + ' to apply' if summarized else ms(t['fold'])} | "
            f"{'-' if summarized else ms(handoff)} | {ms(before)} | {ms(link)} | "
            f"{speedup(16, work, link)} | {speedup(100, work, link)} | "
            f"{speedup(100, t['read'] + t['scan + write'], before)} |")
    lines += ["", f"Hand-off of a carry between two workers (LocalCluster, 2 worker "
              f"processes, {args.links} links): {ms(handoff)} ms by the workers' Folder "
              f"actors, {ms(handoff_before)} ms as a task per link (before).", ""]
    ops = ["cumsum", "cummax", "cummean"]
    one, two = (whole_runs(floats, ops, max(1, args.runs - 1), workers) for workers in (1, 2))
    lines += [f"### Whole runs: {args.files} files x {args.rows:,} x 8 float64, 1 and 2 workers",
              "", "| op | one process (s) | --engine dask, 1 worker (s) | 2 workers (s) |",
              "|---|---:|---:|---:|"]
    lines += [f"| {op} | {min(local, local2):.2f} | {dask1:.2f} | {dask2:.2f} |"
              for (op, local, dask1), (_, local2, dask2) in zip(one, two, strict=True)]
    report = "\n".join(lines) + "\n"
    print(report)
    if args.output:
        Path(args.output).write_text(report)


if __name__ == "__main__":
    main()
