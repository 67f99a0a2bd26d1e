"""Scenario `parquet`: Parquet -> Parquet: cumtool against polars (zstd and snappy),
pyarrow + numpy and duckdb; and cumtool against polars (snappy) on one core (`taskset`),
to see how each scales from one core to two.
"""

from __future__ import annotations

import shutil
import statistics

import numpy as np
from common import (
    DUCKDB,
    POLARS_LAZY_PARQUET,
    PYARROW_PARQUET,
    Bench,
    Command,
    Scenario,
    check_last_rows,
    python_script,
)

ONE_CORE = ["taskset", "-c", "0"]


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
    pinned = shutil.which("taskset") is not None
    if pinned:
        commands += [
            Command("cumtool, 1 core", ONE_CORE + bench.cumtool(
                "cumsum", source, out("pq-cumtool-1.parquet")), out("pq-cumtool-1.parquet")),
            Command("polars lazy, snappy, 1 core", ONE_CORE + python_script(
                POLARS_LAZY_PARQUET, source, out("pq-polars-snappy-1.parquet"), "snappy"),
                out("pq-polars-snappy-1.parquet")),
        ]
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
    if pinned:
        scenario.notes.append(_scaling(scenario))
    best = scenario.best(["polars lazy", "polars lazy, snappy"])
    bench.ratio_goal(
        f"Parquet -> Parquet {bench.rows_label()} x 8: cumtool ÷ {best or 'polars lazy'}",
        scenario, "cumtool", best, 1.0)


def _scaling(scenario: Scenario) -> str:
    """cumtool ÷ polars (snappy) in CPU and in wall time on two cores and on one, and each
    tool's speed-up from one core to two (medians): what a machine with more cores gains."""
    def cpu(label: str) -> float:
        return statistics.median(scenario.command(label).cpu)

    pairs = {"2 cores": ("cumtool", "polars lazy, snappy"),
             "1 core": ("cumtool, 1 core", "polars lazy, snappy, 1 core")}
    parts = []
    for cores, (mine, theirs) in pairs.items():
        wall, mine_cpu = scenario.ratio(mine, theirs), None
        if scenario.command(mine).ok and scenario.command(theirs).ok:
            mine_cpu = cpu(mine) / cpu(theirs)
        parts.append(f"{cores}: wall {_x(wall)}, CPU {_x(mine_cpu)}")
    speedups = [f"{tool} {_x(scenario.ratio(one, two))}" for tool, one, two in (
        ("cumtool", "cumtool, 1 core", "cumtool"),
        ("polars", "polars lazy, snappy, 1 core", "polars lazy, snappy"))]
    return ("cumtool ÷ polars lazy, snappy (medians): " + "; ".join(parts)
            + ". Wall on 1 core ÷ wall on 2 cores: " + ", ".join(speedups) + ".")


def _x(ratio: float | None) -> str:
    return "n/a" if ratio is None else f"{ratio:.2f}x"
