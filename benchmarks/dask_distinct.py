"""cumnunique on Dask, one 500,000 x 8 partition of all-distinct values (floats, text):
the worker's summary, its pickle round trip (one pickle stream, and as Dask's comms send
it: protocol 5, its buffers out of band), the client's apply (values all new, then all
seen) and the carry sent with the scan, pickled and unpickled. CPU ms, best of 3.
Then the client's apply in a run: STEADY partitions of new values one after the other
(text made new by a prefix, floats scaled by 1 + k/2**20), its mean and its largest per
partition (merges of the union's runs fall on some of them), and one of them again (all
seen) against the union of them all.

    python benchmarks/dask_distinct.py floats text [--steady 16]
"""

from __future__ import annotations

import copy
import pickle
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from cumtool import distributed as engine  # noqa: E402
from cumtool.columns import parse  # noqa: E402
from cumtool.request import Request  # noqa: E402

ROWS = 500_000
DATA = HERE / "data" / "dask"


def make(kind: str) -> str:
    name = DATA / f"distinct-{kind}.parquet"
    if name.exists():
        return str(name)
    DATA.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(7)
    if kind == "floats":
        data: dict[str, Any] = {f"f{c}": rng.normal(0, 1, ROWS) for c in range(8)}
    else:
        data = {f"s{c}": pa.array([f"v{c}-{v:x}" for v in rng.permutation(ROWS * 4)[:ROWS]])
                for c in range(8)}
    pq.write_table(pa.table(data), name)
    return str(name)


def cpu_ms(action: Callable[[], Any], runs: int = 3) -> float:
    best = float("inf")
    for _ in range(runs):
        start = time.process_time()
        action()
        best = min(best, time.process_time() - start)
    return best * 1000


def measure(kind: str) -> None:
    name = make(kind)
    columns = () if kind == "floats" else (parse(",".join(f"s{c}" for c in range(8)), "-c"),)
    job = engine._job(Request("cumnunique", name, columns=columns), None)
    part = engine.Partition(name, name, "parquet")
    table = engine.read_partition(job, part)
    summary = engine.summarize_partition(job, part, table)
    assert summary is not None
    blob = pickle.dumps(summary)
    new, seen, sent = [], [], []
    for _ in range(3):
        state = copy.deepcopy(engine.state_of(job.plan))
        start = time.process_time()
        _, after = engine._advanced(job, part, state, summary)
        new.append(time.process_time() - start)
        assert after is not None
        start = time.process_time()
        before, _ = engine._advanced(job, part, after, summary)
        seen.append(time.process_time() - start)
        start = time.process_time()
        pickle.loads(pickle.dumps(before))
        sent.append(time.process_time() - start)
    buffers: list[Any] = []
    head = pickle.dumps(summary, protocol=5, buffer_callback=buffers.append)

    def out_of_band() -> None:
        pickle.dumps(summary, protocol=5, buffer_callback=[].append)

    print(f"{kind}: summary {cpu_ms(lambda: engine.summarize_partition(job, part, table)):.0f}"
          f" ms; summary pickled {cpu_ms(lambda: pickle.dumps(summary)):.0f} ms, unpickled "
          f"{cpu_ms(lambda: pickle.loads(blob)):.0f} ms ({len(blob) / 1e6:.1f} MB), out of "
          f"band {cpu_ms(out_of_band):.1f}"
          f" and {cpu_ms(lambda: pickle.loads(head, buffers=buffers)):.1f} ms; apply, "
          f"all new {min(new) * 1000:.1f} ms, all seen {min(seen) * 1000:.1f} ms; carry sent "
          f"(all seen) pickled and unpickled {min(sent) * 1000:.0f} ms", flush=True)


def steady(kind: str, count: int) -> None:
    """The client's apply over `count` partitions of new values, in order."""
    import pyarrow.compute as pc

    name = make(kind)
    columns = () if kind == "floats" else (parse(",".join(f"s{c}" for c in range(8)), "-c"),)
    job = engine._job(Request("cumnunique", name, columns=columns), None)
    part = engine.Partition(name, name, "parquet")
    table = engine.read_partition(job, part)
    summaries = []
    for k in range(count):
        new = pa.table({column: pc.multiply(table[column], 1 + k * 2**-20) if kind == "floats"
                        else pc.binary_join_element_wise(f"{k}:", table[column], "")
                        for column in table.column_names})
        summaries.append(engine.summarize_partition(job, part, new))
    state = copy.deepcopy(engine.state_of(job.plan))
    times = []
    for summary in summaries:
        start = time.process_time()
        _, after = engine._advanced(job, part, state, summary)
        times.append(time.process_time() - start)
        assert after is not None
        state = after
    start = time.process_time()
    engine._advanced(job, part, state, summaries[count // 2])
    again = time.process_time() - start
    print(f"{kind}, {count} partitions in a run: apply, all new, mean "
          f"{sum(times) / count * 1000:.0f} ms, largest {max(times) * 1000:.0f} ms; one "
          f"partition again (all seen) {again * 1000:.0f} ms", flush=True)


if __name__ == "__main__":
    args = sys.argv[1:]
    runs = 16
    if "--steady" in args:
        at = args.index("--steady")
        runs = int(args[at + 1])
        del args[at:at + 2]
    for each in args or ["floats", "text"]:
        measure(each)
    for each in args or ["floats", "text"]:
        steady(each, runs)
