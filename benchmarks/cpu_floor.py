"""CPU accounting behind the CSV -> CSV goal of issue 12: what polars' own calls cost when
Python hands them chunks, against polars lazy's whole pipeline, and what start-up costs.

    python benchmarks/cpu_floor.py

One process, one thing at a time (process CPU seconds, all threads; best of --runs):

- polars lazy: scan_csv -> cum_sum -> sink_csv, the peer of the benchmark.
- polars read_csv + write_csv of the same file cut into cumtool's chunk size (what
  cumtool's reader and writer call per batch), with no scan, no checks and no threads of
  cumtool's own. If this alone costs about as much CPU as the whole lazy pipeline, then
  no design that calls them per batch from Python gets under polars lazy on 2 cores.

Then start-up, as separate processes (median wall of --runs): `import polars` (what the
peer's script pays) against the modules a cumtool CSV run imports.
"""

from __future__ import annotations

import argparse
import io
import resource
import statistics
import subprocess
import sys
import time

import polars as pl
from common import OUT, Datasets

CUMTOOL_IMPORTS = ("import numpy, polars, pyarrow, cumtool.cli, cumtool.engine, "
                   "cumtool.formats.csv.csv, cumtool.formats.csv.csvwrite, cumtool.kernels, "
                   "cumtool.sinks, cumtool.tables, cumtool.pipeline")


def cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def chunks_of(body: bytes, size: int) -> list[bytes]:
    """`body` cut after the last newline before each `size` bytes, as cumtool's Chunker."""
    chunks, start = [], 0
    while start < len(body):
        end = len(body) if start + size >= len(body) else body.rfind(b"\n", start,
                                                                      start + size) + 1
        chunks.append(body[start:end])
        start = end
    return chunks


def eager_calls(body: bytes, width: int, size: int) -> float:
    schema = {f"c{i}": pl.Float64() for i in range(width)}
    started = cpu()
    for chunk in chunks_of(body, size):
        frame = pl.read_csv(chunk, has_header=False, schema=schema)
        frame.write_csv(io.BytesIO(), include_header=False)
    return cpu() - started


def lazy_pipeline(source: str, output: str) -> float:
    started = cpu()
    pl.scan_csv(source).select(pl.all().cum_sum()).sink_csv(output)
    return cpu() - started


def start_up(code: str, runs: int) -> float:
    walls = []
    for _ in range(runs):
        started = time.perf_counter()
        subprocess.run([sys.executable, "-c", code], check=True)
        walls.append(time.perf_counter() - started)
    return statistics.median(walls)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    data = Datasets(rows=2_000_000, keyed_groups=100_000)
    data.load()
    source = data.wide("csv")
    header, body = source.read_bytes().split(b"\n", 1)
    width = header.count(b",") + 1
    # cumtool's chunks hold _CHUNK_CELLS cells (the reader sizes them from the first rows).
    from cumtool.formats.csv.csv import _CHUNK_CELLS

    chunk = int(len(body) / body.count(b"\n") * _CHUNK_CELLS / width)
    output = str(OUT / "cpu-floor.csv")
    lazy = min(lazy_pipeline(str(source), output) for _ in range(args.runs))
    eager = min(eager_calls(body, width, chunk) for _ in range(args.runs))
    print(f"# CPU floor, {source.name} ({len(body) >> 20} MiB), best of {args.runs}\n")
    print("| what | CPU seconds |\n|---|---:|")
    print(f"| polars lazy: scan_csv, cum_sum, sink_csv | {lazy:.3f} |")
    print(f"| polars read_csv + write_csv in {chunk / 2**20:.1f} MiB chunks, nothing else | "
          f"{eager:.3f} |")
    print("\n| start-up (separate processes) | median wall (s) |\n|---|---:|")
    print(f"| `import polars` | {start_up('import polars', args.runs):.3f} |")
    print(f"| cumtool's imports for a CSV run | {start_up(CUMTOOL_IMPORTS, args.runs):.3f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
