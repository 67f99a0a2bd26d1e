"""Scenario `text`: a CSV shaped like a real export (dates, quoted store names with commas,
codes with leading zeros, flags, and four number columns), 2M rows: cumtool, which scans
the numbers and writes every other cell back as it read it, against polars lazy and
eager given the same four columns to sum.

polars reads `code` as an integer, so its output drops the leading zeros (00042 -> 42)
and writes `flag` in its own spelling: it does less than cumtool to the text, and is timed
as the peer all the same. The check is that cumtool's unscanned cells are the input's.
"""

from __future__ import annotations

import csv
import itertools
from pathlib import Path
from typing import Any

import numpy as np
from common import (
    CHUNK_ROWS,
    MIB,
    SEED,
    Bench,
    Command,
    Scenario,
    python_script,
)

NUMBERS = ["units", "revenue", "qty", "price"]
POLARS_LAZY_TEXT = """
    import sys, polars as pl
    columns = sys.argv[3].split(",")
    pl.scan_csv(sys.argv[1]).with_columns(pl.col(columns).cum_sum()).sink_csv(sys.argv[2])
"""
POLARS_EAGER_TEXT = """
    import sys, polars as pl
    columns = sys.argv[3].split(",")
    pl.read_csv(sys.argv[1]).with_columns(pl.col(columns).cum_sum()).write_csv(sys.argv[2])
"""


def _write_text_csv(path: Path, rows: int, seed: int) -> dict[str, Any]:
    import polars as pl

    rng = np.random.default_rng(seed)
    stores = np.array(["Riverside", "Harbor Mall, Unit 4", "Downtown"])
    with open(path, "wb") as stream:
        for i, start in enumerate(range(0, rows, CHUNK_ROWS)):
            n = min(CHUNK_ROWS, rows - start)
            frame = pl.DataFrame({
                "date": np.full(n, "2024-03-01"),
                "store": stores[rng.integers(0, 3, n)],
                "code": np.char.zfill(rng.integers(0, 99_999, n).astype(str), 5),
                "units": rng.integers(0, 100, n),
                "revenue": np.round(rng.normal(0.0, 100.0, n), 2),
                "qty": rng.integers(0, 1000, n),
                "price": np.round(rng.random(n) * 50, 2),
                "flag": np.array(["TRUE", "FALSE"])[rng.integers(0, 2, n)],
            })
            frame.write_csv(stream, include_header=i == 0)
    return {"rows": rows}


def run(bench: Bench) -> None:
    rows = bench.data.rows
    source = bench.data._make(f"text-{rows}.csv", {"kind": "text", "rows": rows, "seed": SEED},
                              lambda p: _write_text_csv(p, rows, SEED))
    out = bench.out
    columns = ",".join(NUMBERS)
    commands = [
        Command("cumtool", bench.cumtool("cumsum", source, out("text-cumtool.csv")),
                out("text-cumtool.csv")),
        Command("polars lazy", python_script(POLARS_LAZY_TEXT, source,
                                             out("text-polars-lazy.csv"), columns),
                out("text-polars-lazy.csv")),
        Command("polars eager", python_script(POLARS_EAGER_TEXT, source,
                                              out("text-polars-eager.csv"), columns),
                out("text-polars-eager.csv")),
    ]
    scenario = Scenario("text", f"CSV -> CSV, {bench.rows_label()} rows of an export: 4 "
                        "number columns summed, 4 text columns (quoted names, codes with "
                        "leading zeros, flags) passed through", commands, "cumtool")
    bench.execute(scenario)
    scenario.notes.append(f"input {source.stat().st_size / MIB:.0f} MiB")
    if scenario.command("cumtool").ok:
        with open(source, newline="") as a, open(out("text-cumtool.csv"), newline="") as b:
            pairs = itertools.islice(zip(csv.reader(a), csv.reader(b), strict=True), 200_000)
            same = all(x[:3] + x[-1:] == y[:3] + y[-1:] for x, y in pairs)
        scenario.checks.append("cumtool's unscanned cells equal the input's (first 200k rows)"
                               if same else "**MISMATCH** cumtool changed an unscanned cell")
    bench.ratio_goal(f"export-shaped CSV {bench.rows_label()}: cumtool ÷ polars lazy",
                     scenario, "cumtool", "polars lazy", 1.0)
