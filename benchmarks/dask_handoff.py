"""How long one link of a chain of carries takes to pass between two Dask workers, by
the ways `distributed` offers: the time per link of a chain of P links that alternate
between two workers, each link doing nothing but hand a carry of about half a kilobyte
on (so the times are the hand-off alone, not a fold).

    python benchmarks/dask_handoff.py --links 200 --runs 3

- futures: a task per link, depending on the link before it (what --engine dask
  submits): the scheduler learns a link is done, then starts the next on the other worker,
  which fetches the carry from the first;
- futures, busy: the same while both workers' one thread is busy with other tasks (a
  link waits for the task before it to end), with and without `priority` on the links;
- actor: an Actor on each worker; the client calls them in turn (each call a message to
  the worker, no task, no scheduling);
- queue: two long-lived tasks that pass the carry through a distributed.Queue (which
  lives on the scheduler: two messages a link).
"""

from __future__ import annotations

import argparse
import os
import time
from typing import Any

CARRY = bytes(512)


def link(carry: bytes, *_after: Any) -> bytes:
    return carry


def busy(seconds: float) -> None:
    time.sleep(seconds)  # a worker's thread held, as by a partition's scan


class Relay:
    """An actor: hands the carry back (its worker's own thread for actors)."""

    def step(self, carry: bytes) -> bytes:
        return carry


def futures_chain(client: Any, workers: list[str], links: int, priority: int = 0,
                  load: float = 0.0) -> float:
    """Seconds per link of a chain of tasks on alternating workers."""
    start = time.perf_counter()
    if load:  # each worker kept busy with tasks of `load` seconds the whole time
        filler = [client.submit(busy, load, workers=[w], pure=False)
                  for _ in range(int(links * 0.004 / load) + 4) for w in workers]
    carry: Any = CARRY
    for k in range(links):
        carry = client.submit(link, carry, k, workers=[workers[k % 2]], pure=False,
                              priority=priority)
    carry.result()
    seconds = (time.perf_counter() - start) / links
    if load:
        client.cancel(filler)
    return seconds


def actor_chain(client: Any, workers: list[str], links: int) -> float:
    actors = [client.submit(Relay, workers=[w], actor=True).result() for w in workers]
    start = time.perf_counter()
    carry = CARRY
    for k in range(links):
        carry = actors[k % 2].step(carry).result()
    return (time.perf_counter() - start) / links


def relay(name: str, inbox: str, outbox: str, links: int, first: bool) -> int:
    """A long-lived task: takes each carry from its inbox and puts it in its outbox."""
    from distributed import Queue

    get, put = Queue(inbox), Queue(outbox)
    if first:
        put.put(CARRY)
    for _ in range(links // 2):
        carry = get.get()
        put.put(carry)
    return links


def queue_chain(client: Any, workers: list[str], links: int) -> float:
    from distributed import Queue

    a, b = Queue("handoff-a"), Queue("handoff-b")
    start = time.perf_counter()
    tasks = [client.submit(relay, "a", "handoff-a", "handoff-b", links, True,
                           workers=[workers[0]], pure=False),
             client.submit(relay, "b", "handoff-b", "handoff-a", links, False,
                           workers=[workers[1]], pure=False)]
    client.gather(tasks)
    seconds = (time.perf_counter() - start) / links
    del a, b
    return seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--links", type=int, default=200)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    os.environ.setdefault("DASK_LOGGING__DISTRIBUTED", "critical")
    from distributed import Client, LocalCluster

    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                      dashboard_address=None) as cluster, Client(cluster) as client:
        client.wait_for_workers(2)
        workers = sorted(client.scheduler_info()["workers"])
        ways = {
            "futures": lambda: futures_chain(client, workers, args.links),
            "futures, busy (20 ms tasks)": lambda: futures_chain(
                client, workers, args.links, load=0.02),
            "futures with priority, busy (20 ms tasks)": lambda: futures_chain(
                client, workers, args.links, priority=10, load=0.02),
            "actor calls from the client": lambda: actor_chain(client, workers, args.links),
            "queue between two long-lived tasks": lambda: queue_chain(
                client, workers, args.links),
        }
        print("| hand-off | ms per link |\n|---|---:|")
        for name, way in ways.items():
            way()  # warm
            seconds = min(way() for _ in range(args.runs))
            print(f"| {name} | {1000 * seconds:.2f} |")


if __name__ == "__main__":
    main()
