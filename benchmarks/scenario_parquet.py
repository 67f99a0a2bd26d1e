"""Scenario `parquet`: Parquet -> Parquet: cumtool against polars (zstd and snappy),
pyarrow + numpy and duckdb; and cumtool against polars (snappy) on one core (`taskset`),
to see how each scales from one core to two.
"""

from __future__ import annotations

import numpy as np
from common import (
    DUCKDB,
    POLARS_LAZY_PARQUET,
    PYARROW_PARQUET,
    Bench,
    Command,
    Scenario,
    check_last_rows,
    core_scaling,
    python_script,
    with_one_core,
)


def run(bench: Bench) -> None:
    source = bench.data.wide("parquet")
    out = bench.out
    polars_snappy = python_script(POLARS_LAZY_PARQUET, source, out("pq-polars-snappy.parquet"),
                                  "snappy")
    commands = [
        Command("cumtool", bench.cumtool("cumsum", source, out("pq-cumtool.parquet")),
                out("pq-cumtool.parquet")),
        Command("polars lazy", python_script(POLARS_LAZY_PARQUET, source,
                                             out("pq-polars-lazy.parquet")),
                out("pq-polars-lazy.parquet")),
        Command("polars lazy, snappy", polars_snappy, out("pq-polars-snappy.parquet")),
        Command("pyarrow + numpy", python_script(PYARROW_PARQUET, source,
                                                 out("pq-pyarrow.parquet")),
                out("pq-pyarrow.parquet")),
        Command("duckdb", python_script(DUCKDB, source, out("pq-duckdb.parquet"),
                                        "parquet"),
                out("pq-duckdb.parquet")),
    ]
    commands += with_one_core([commands[0], commands[2]])
    scenario = Scenario("parquet", f"Parquet -> Parquet, {bench.rows_label()} rows x 8 "
                        "columns, cumsum", commands, "cumtool")
    scenario.notes.append(
        "polars writes zstd by default; cumtool, pyarrow and duckdb write snappy. The "
        "row `polars lazy, snappy` asks polars for snappy too, and the goal is taken "
        "against the faster of the two polars rows.")
    bench.execute(scenario)
    reference = bench.data.reference(source)
    if check_last_rows(scenario, reference["rows"], {"*": np.array(reference["sums"])}):
        scenario.checks.append(f"every output has {reference['rows']} rows and ends on "
                               "the exact column sums (relative 1e-9)")
    scenario.tables += core_scaling(scenario, [("cumtool", "polars lazy, snappy")])
    best = scenario.best(["polars lazy", "polars lazy, snappy"])
    bench.ratio_goal(
        f"Parquet -> Parquet {bench.rows_label()} x 8: cumtool ÷ {best or 'polars lazy'}",
        scenario, "cumtool", best, 1.0)
