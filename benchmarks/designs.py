"""Designs tried for issue 12 (speed round two), timed side by side with cumtool as it is
and with polars lazy, so a later round can re-measure them instead of re-building them.

    python benchmarks/designs.py --output benchmarks/DESIGNS.md

Each design is cumtool with one stage swapped for polars' streaming engine, monkeypatched
in this file only (the package is untouched):

- csv sink: CsvSink hands its frames to one `sink_csv` per run, fed through
  `register_io_source` on a thread, so polars formats on its own threads.
- parquet sink: the same with `sink_parquet` in place of pyarrow's ParquetWriter.
- bound: no cumtool at all. polars reads (`collect_batches`) and writes (`sink_csv`), and
  numpy scans in between with a carried row. It skips every check cumtool makes (ragged
  rows, quotes, NUL bytes, markers, text kept as text), so it is a floor for any design
  that keeps Python between polars' reader and writer, not a candidate.
"""

from __future__ import annotations

import argparse
import datetime
from pathlib import Path

from common import (
    POLARS_LAZY_CSV,
    POLARS_LAZY_PARQUET,
    Command,
    Cumtool,
    Datasets,
    Scenario,
    code_state,
    compare_outputs,
    log,
    machine_lines,
    python_script,
    run_interleaved,
)

HERE = Path(__file__).resolve().parent

# Run by `python -c VARIANT NAME SOURCE OUTPUT` (see variant()): cumtool with a stage swapped.
VARIANT = """
import queue, sys, threading
import polars as pl, pyarrow as pa
from polars.io.plugins import register_io_source

_DONE = object()


def feed(frames: queue.Queue, schema: pl.Schema) -> pl.LazyFrame:
    def source(*_ignored):
        while (frame := frames.get()) is not _DONE:
            yield frame
    return register_io_source(source, schema=schema)


def csv_sink() -> None:
    from cumtool.formats.csv import csvwrite

    class PolarsCsvSink(csvwrite.CsvSink):
        def write(self, batch):
            if self._header_due:
                names = self._options.delimiter.join(self._quote(n) for n in self._schema.names)
                self._stream.write((names + "\\n").encode())
                self._header_due = False
            if not batch.num_rows:
                return
            frame = pl.from_arrow(pa.RecordBatch.from_arrays(
                csvwrite.polars_compatible(batch).columns,
                names=[f"c{i}" for i in range(batch.num_columns)]))
            if not hasattr(self, "_frames"):
                self._frames = queue.Queue(maxsize=2)
                lazy = feed(self._frames, frame.schema)
                self._writer = threading.Thread(target=lambda: lazy.sink_csv(
                    self._stream, include_header=False, separator=self._options.delimiter,
                    null_value=self._null, quote_style="necessary"))
                self._writer.start()
            self._frames.put(frame)

        def close(self):
            if hasattr(self, "_frames"):
                self._frames.put(_DONE)
                self._writer.join()
            else:
                super().close()

    csvwrite.CsvSink = PolarsCsvSink


def parquet_sink() -> None:
    from cumtool.formats.parquet import parquet

    class PolarsParquetSink:
        def __init__(self, stream, schema):
            self._stream, self._schema = stream, pl.from_arrow(schema.empty_table()).schema
            self._frames = queue.Queue(maxsize=2)
            lazy = feed(self._frames, self._schema)
            self._writer = threading.Thread(target=lambda: lazy.sink_parquet(
                self._stream, compression="snappy"))
            self._writer.start()

        def write(self, batch):
            self._frames.put(pl.from_arrow(batch))

        def close(self):
            self._frames.put(_DONE)
            self._writer.join()

        def abort(self):
            self.close()

    parquet.ParquetSink = PolarsParquetSink


def bound(source: str, output: str) -> None:
    import numpy as np

    lazy = pl.scan_csv(source)
    schema = lazy.collect_schema()

    def scanned(*_ignored):
        carry = np.zeros(len(schema))
        for frame in lazy.collect_batches(chunk_size=65536):
            block = frame.to_numpy().astype(np.float64)
            block[0] += carry
            np.cumsum(block, axis=0, out=block)
            carry = block[-1].copy()
            yield pl.DataFrame(block, schema={n: pl.Float64 for n in schema})

    register_io_source(scanned, schema={n: pl.Float64 for n in schema}).sink_csv(output)


variant, source, output = sys.argv[1:4]
if variant == "bound":
    bound(source, output)
    sys.exit(0)
{"csv-sink": csv_sink, "parquet-sink": parquet_sink}[variant]()
from cumtool.cli import main
sys.argv = ["cumtool", "cumsum", source, "-o", output]
main()
"""


def variant(name: str, source: Path, output: Path) -> list[str]:
    return python_script(VARIANT, name, source, output)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=2_000_000)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--warmup", type=int, default=1)
    parser.add_argument("--output", type=Path, default=None)
    args = parser.parse_args()
    data = Datasets(rows=args.rows, keyed_groups=min(100_000, args.rows // 20))
    data.load()
    cumtool = Cumtool.find()
    out = HERE / "data" / "out"
    rows = f"{args.rows / 1e6:g}M"
    csv, parquet = data.wide("csv"), data.wide("parquet")
    started = datetime.datetime.now(datetime.UTC)
    scenarios = [
        Scenario("csv", f"CSV -> CSV, {rows} x 8, cumsum: designs", [
            Command("cumtool", cumtool("cumsum", csv, out / "d-cumtool.csv"),
                    out / "d-cumtool.csv"),
            Command("cumtool, polars sink_csv writer", variant("csv-sink", csv,
                                                               out / "d-sink.csv"),
                    out / "d-sink.csv"),
            Command("bound: polars read + numpy + polars write, no checks",
                    variant("bound", csv, out / "d-bound.csv"), out / "d-bound.csv"),
            Command("polars lazy", python_script(POLARS_LAZY_CSV, csv, out / "d-polars.csv"),
                    out / "d-polars.csv"),
        ], "cumtool"),
        Scenario("parquet", f"Parquet -> Parquet, {rows} x 8, cumsum: designs", [
            Command("cumtool", cumtool("cumsum", parquet, out / "d-cumtool.parquet"),
                    out / "d-cumtool.parquet"),
            Command("cumtool, polars sink_parquet writer",
                    variant("parquet-sink", parquet, out / "d-sink.parquet"),
                    out / "d-sink.parquet"),
            Command("polars lazy, snappy",
                    python_script(POLARS_LAZY_PARQUET, parquet, out / "d-polars.parquet",
                                  "snappy"), out / "d-polars.parquet"),
        ], "cumtool"),
    ]
    for scenario in scenarios:
        log(f"{scenario.title}:")
        run_interleaved(scenario.commands, args.runs, args.warmup)
        first = scenario.commands[0]
        for other in scenario.commands[1:]:
            if first.ok and other.ok and scenario.key == "csv":
                differs = compare_outputs(first.output, other.output,
                                          [f"f{i}" for i in range(6)])
                scenario.checks.append(f"{other.label}: " + (
                    "values equal cumtool's (relative 1e-9)" if not differs
                    else f"**MISMATCH**: {differs}"))
    lines = ["# Designs tried for issue 12", "",
             f"Made by `python benchmarks/designs.py` on {started:%Y-%m-%d %H:%M} UTC, "
             f"{args.runs} timed runs after {args.warmup} warm-up, interleaved; ratios "
             "are cumtool's median ÷ each row's.", "", *machine_lines(None),
             f"- cumtool: {code_state()}", ""]
    for scenario in scenarios:
        lines += scenario.markdown()
    text = "\n".join(lines)
    print(text)
    if args.output:
        args.output.write_text(text)


if __name__ == "__main__":
    main()
