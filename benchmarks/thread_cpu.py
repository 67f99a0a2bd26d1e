"""cumtool with phase timers and each thread's CPU, printed to standard error at exit:

    PYTHONPATH=CHECKOUT python benchmarks/thread_cpu.py cumsum in.jsonl -q --to csv > /dev/null
    PYTHONPATH=CHECKOUT python benchmarks/thread_cpu.py --overlap-cores=2 cumsum ...

--overlap-cores=N (first) sets the JSON Lines reader's OVERLAP_CORES: pass 1 read behind
a run started with the first block's types from N cores (4 unless said; a 2-core machine
shows the overlap with 2).

The JSON Lines source's two passes (parse and spool; batches back) are marked with the wall
time and the main thread's CPU; every thread's CPU is summed by name (pools by prefix). A
thread that runs alone through a pass (the main thread, cumtool-reader, -writer, -spool) is
the serial part of that pass; a pool's CPU divides among its threads."""

from __future__ import annotations

import atexit
import collections
import resource
import sys
import threading
import time
from collections.abc import Iterator
from typing import Any

START = time.perf_counter()
MARKS: list[tuple[str, float, float]] = []
THREAD_CPU: collections.Counter[str] = collections.Counter()


def mark(what: str) -> None:
    MARKS.append((what, time.perf_counter() - START, time.thread_time()))


def _counted(run: Any) -> Any:
    def counted(self: threading.Thread) -> None:
        try:
            run(self)
        finally:
            name = self.name.rsplit("_", 1)[0] if "_" in self.name else self.name
            THREAD_CPU[name] += time.thread_time()

    return counted


def report() -> None:
    mine = resource.getrusage(resource.RUSAGE_THREAD)
    whole = resource.getrusage(resource.RUSAGE_SELF)
    mark("exit")
    lines = [f"{what}: {at:.3f}s (main cpu {cpu:.3f})" for what, at, cpu in MARKS]
    lines.append(f"main thread cpu {mine.ru_utime + mine.ru_stime:.3f} (u {mine.ru_utime:.3f} "
                 f"s {mine.ru_stime:.3f}); process cpu {whole.ru_utime + whole.ru_stime:.3f}; "
                 f"vcs {whole.ru_nvcsw} ivcs {whole.ru_nivcsw}")
    lines.append("threads: " + " ".join(f"{k}={v:.3f}" for k, v in sorted(THREAD_CPU.items())))
    print("\n".join(lines), file=sys.stderr)


def main() -> None:
    threading.Thread.run = _counted(threading.Thread.run)  # type: ignore[method-assign]
    from cumtool.formats.jsonl import jsonl

    if sys.argv[1:2] and sys.argv[1].startswith("--overlap-cores="):
        overlap = sys.argv.pop(1).split("=", 1)[1]
        if hasattr(jsonl, "OVERLAP_CORES"):  # (absent from older checkouts)
            jsonl.OVERLAP_CORES = int(overlap)  # type: ignore[attr-defined]
    source = jsonl.JsonlSource
    init, batches = source.__init__, source.batches

    def timed_init(self: Any, *args: Any, **kwargs: Any) -> None:
        mark("pass1 start")
        init(self, *args, **kwargs)
        mark("pass1 end")

    def timed_batches(self: Any, *args: Any, **kwargs: Any) -> Iterator[Any]:
        first = True
        for batch in batches(self, *args, **kwargs):
            if first:
                mark("first batch")
                first = False
            yield batch
        mark("last batch")

    # Where pass 1 reads behind a run started with a provisional schema (runner.run_table),
    # the source's constructor returns after the first block: pass 1 ends on its own
    # thread, and the batches come from _provisional_batches before it has.
    read_behind = getattr(source, "_read_behind", None)  # (absent from older checkouts)
    provisional_batches = getattr(source, "_provisional_batches", None)

    def timed_read_behind(self: Any, *args: Any, **kwargs: Any) -> None:
        assert read_behind is not None
        read_behind(self, *args, **kwargs)
        mark("pass1 end, read behind (cpu: its thread's)")

    def timed_provisional(self: Any, *args: Any, **kwargs: Any) -> Iterator[Any]:
        first = True
        assert provisional_batches is not None
        for batch in provisional_batches(self, *args, **kwargs):
            if first:
                mark("first batch, provisional")
                first = False
            yield batch
        mark("last batch, provisional")

    from cumtool import runner

    held = getattr(runner, "_Held", None)
    if held is not None:  # the output held back until the input's schema was known
        copy = held._copy

        def timed_copy(self: Any) -> None:
            mark("held output copied out: start (cpu: its thread's)")
            copy(self)
            mark("held output copied out: end")

        held._copy = timed_copy

    source.__init__ = timed_init  # type: ignore[method-assign]
    source.batches = timed_batches  # type: ignore[method-assign]
    if read_behind is not None and provisional_batches is not None:
        source._read_behind = timed_read_behind  # type: ignore[method-assign]
        source._provisional_batches = timed_provisional  # type: ignore[method-assign]
    atexit.register(report)
    sys.argv = ["cumtool", *sys.argv[1:]]
    from cumtool.launch import main as cumtool_main

    cumtool_main()


if __name__ == "__main__":
    main()
