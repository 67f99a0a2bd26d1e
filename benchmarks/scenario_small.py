"""Scenario `small`: A 10k-row CSV, where start-up dominates: cumtool against polars
scripts and Miller.
"""

from __future__ import annotations

import numpy as np
from common import (
    POLARS_EAGER_CSV,
    POLARS_LAZY_CSV,
    SMALL_ROWS,
    Bench,
    Command,
    Scenario,
    check_last_rows,
    miller_rsum,
    python_script,
)


def run(bench: Bench) -> None:
    source = bench.data.wide("csv", SMALL_ROWS)
    out = bench.out
    commands = [
        Command("cumtool", bench.cumtool("cumsum", source, out("small-cumtool.csv")),
                out("small-cumtool.csv")),
        Command("polars script (eager)", python_script(
            POLARS_EAGER_CSV, source, out("small-polars-eager.csv")),
                out("small-polars-eager.csv")),
        Command("polars script (lazy)", python_script(
            POLARS_LAZY_CSV, source, out("small-polars-lazy.csv")),
                out("small-polars-lazy.csv")),
    ]
    scenario = Scenario("small", f"Small CSV -> CSV, {SMALL_ROWS // 1000}k rows x 8, "
                        "end to end (start-up dominates)", commands, "cumtool")
    if bench.mlr:
        commands.append(miller_rsum(bench.mlr, source, out("small-miller.csv")))
    else:
        scenario.notes.append("Miller (`mlr`) is not on PATH: skipped.")
    bench.execute(scenario)
    reference = bench.data.reference(source)
    if check_last_rows(scenario, reference["rows"], {"*": np.array(reference["sums"])}):
        scenario.checks.append(f"every output has {reference['rows']} rows and ends on "
                               "the exact column sums (relative 1e-9)")
    best = scenario.best(["polars script (eager)", "polars script (lazy)"])
    bench.ratio_goal(f"CSV {SMALL_ROWS // 1000}k rows: cumtool ÷ {best or 'polars script'}",
                     scenario, "cumtool", best, 0.8)
