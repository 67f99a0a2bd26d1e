#!/usr/bin/env python
"""Where every CPU second of a CSV -> CSV run goes (issue 12), read from a sampling
profiler, written as Markdown.

    pip install py-spy
    python benchmarks/profile_csv.py                       # 2M x 8 from benchmarks/data
    python benchmarks/profile_csv.py --output benchmarks/PROFILE.md

Two views of one input:
1. py-spy samples the whole process (`--threads`), interpreter start and imports
   included, at 250 Hz; samples are grouped by thread and by the cumtool stage they fall
   in (imports, opening, reading/parsing, scanning, writing, waiting), and the top
   functions by own time are listed.
2. The same stages run one after another in this process, each timed with
   time.process_time(), so their CPU seconds add up without threads overlapping.
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import io
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

# A sample belongs to the first stage whose marker appears in its stack (outermost first
# is not enough: reading happens inside the engine's frames too).
STAGES = [
    ("waiting for another thread", ("Condition.wait", "Queue.get", "Queue.put",
                                   "_wait_for_tstate_lock", "lock.acquire")),
    ("imports", ("_find_and_load",)),
    ("reading and parsing (polars read_csv, record cutting, checks)",
     ("CsvSource.batches", "Chunker", "_strings", "_check_quotes", "_layout")),
    ("scanning (numpy kernels, Arrow <-> numpy)", ("TablePlan.apply",)),
    ("writing (polars write_csv, output stream)", ("CsvSink", "BackgroundSink._work",
                                                   "_GuardedStream")),
    ("opening and judging columns", ("open_source", "make_plan", "judge_columns")),
]


def stage_of(frames: list[str]) -> str:
    for stage, markers in STAGES:
        if any(marker in frame for frame in frames for marker in markers):
            return stage
    return "other (interpreter start and exit, click, native threads)"


def sampled(source: Path, rate: int) -> list[str]:
    py_spy = shutil.which("py-spy")
    if py_spy is None:
        return ["py-spy is not installed (`pip install py-spy`): the sampled view is left "
                "out."]
    with tempfile.TemporaryDirectory() as tmp:
        raw = Path(tmp) / "profile.txt"
        out = Path(tmp) / "out.csv"
        subprocess.run([py_spy, "record", "--rate", str(rate), "--threads",
                        "--format", "raw", "--output", str(raw), "--", sys.executable,
                        "-m", "cumtool", "cumsum", str(source), "-o", str(out)],
                       check=True, capture_output=True)
        lines = raw.read_text().splitlines()
    total = 0
    by_stage: collections.Counter[str] = collections.Counter()
    by_thread: collections.Counter[str] = collections.Counter()
    own: collections.Counter[str] = collections.Counter()
    for line in lines:
        stack, _, count = line.rpartition(" ")
        samples = int(count)
        frames = stack.split(";")
        total += samples
        thread = frames[0].split(":", 1)[-1].strip() or "unnamed"
        by_thread["MainThread" if "MainThread" in thread else thread.split("(")[0].strip()
                  or "other threads"] += samples
        by_stage[stage_of(frames)] += samples
        own[frames[-1] if len(frames) > 1 else "(no Python frame)"] += samples
    report = [f"{total} samples at {rate} Hz: {total / rate:.2f} thread-seconds. A thread "
              "waiting in native code (the GIL, a lock, a read) is sampled too, so the shares "
              "say where threads spend their time, not CPU; the stage table below is CPU.",
              "", "| stage | share of samples |", "|---|---:|"]
    report += [f"| {stage} | {n / total:.1%} |" for stage, n in by_stage.most_common()]
    report += ["", "| thread | share of samples |", "|---|---:|"]
    report += [f"| {thread} | {n / total:.1%} |" for thread, n in by_thread.most_common()]
    report += ["", "Top functions by own samples:", "", "| function | share |", "|---|---:|"]
    report += [f"| `{name.replace('|', '/')}` | {n / total:.1%} |"
               for name, n in own.most_common(15)]
    return report


def stepwise(source: Path) -> list[str]:
    """The stages of the engine run one after another, each with its CPU seconds."""
    started = time.process_time()
    from cumtool.formats import FileKind
    from cumtool.request import Request
    from cumtool.sinks import table_sink
    from cumtool.sources import open_source
    from cumtool.tables import TableOptions, make_plan
    from cumtool.view import View

    imported = time.process_time()
    request = Request(op="cumsum", input=str(source))
    with contextlib.ExitStack() as stack:
        table, _kind = open_source(request, None, stack)
        plan = make_plan("cumsum", "rows", None, table.schema, table.name, TableOptions(),
                         table.hints)
        opened = time.process_time()
        batches = list(table.batches(plan.parse, plan.text_unused))
        read = time.process_time()
        results = [plan.apply(batch) for batch in batches]
        scanned = time.process_time()
        view = View("cumsum", "rows", table.name, (), frozenset(), None, None)
        sink = table_sink(request, FileKind("csv", None), io.BytesIO(), plan.schema, view,
                          table.name)
        for result in results:
            sink.write(result)
        sink.close()
        written = time.process_time()
    rows = sum(batch.num_rows for batch in batches)
    steps = [("import cumtool's modules (numpy is loaded already)", imported - started),
             ("open, sniff, judge columns, plan (imports polars and pyarrow)",
              opened - imported),
             (f"read and parse {len(batches)} batches", read - opened),
             ("scan", scanned - read),
             ("write (format CSV)", written - scanned)]
    report = [f"{rows:,} rows in {len(batches)} batches, stages run one after another:", "",
              "| stage | CPU seconds |", "|---|---:|"]
    report += [f"| {name} | {seconds:.3f} |" for name, seconds in steps]
    report.append(f"| total | {sum(s for _, s in steps):.3f} |")
    return report


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--input", type=Path, default=None,
                        help="CSV to profile (default: the benchmarks' 2M x 8 file)")
    parser.add_argument("--rate", type=int, default=250)
    parser.add_argument("--output", type=Path, default=None)
    args = parser.parse_args()
    source = args.input
    if source is None:
        from common import Datasets

        data = Datasets(rows=2_000_000, keyed_groups=100_000)
        data.load()
        source = data.wide("csv")
    lines = [f"# Profile: cumtool cumsum, CSV -> CSV ({source.name})", "",
             f"Made by `python benchmarks/profile_csv.py` on "
             f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}.", "",
             "## Sampled (py-spy, the whole process, all threads)", "",
             *sampled(source, args.rate), "", "## Stage by stage (one thread)", "",
             *stepwise(source), ""]
    text = "\n".join(lines)
    print(text)
    if args.output:
        args.output.write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
