"""Scenario `csv`: CSV -> CSV, 2M rows x 8 columns: cumtool against polars (lazy and
eager), pyarrow + numpy, duckdb, pandas and Miller; cumtool (-o and to stdout) and polars
lazy on one core too (`taskset -c 0`, in the same run), to see how each scales from one
core to two.
"""

from __future__ import annotations

import numpy as np
from common import (
    DUCKDB,
    MIB,
    PANDAS_CSV,
    POLARS_EAGER_CSV,
    POLARS_LAZY_CSV,
    PYARROW_CSV,
    WIDE_COLUMNS,
    Bench,
    Command,
    Scenario,
    check_last_rows,
    compare_outputs,
    core_scaling,
    miller_rsum,
    python_script,
    with_one_core,
)


def run(bench: Bench) -> None:
    source = bench.data.wide("csv")
    out = bench.out
    commands = [
        Command("cumtool", bench.cumtool("cumsum", source, out("csv-cumtool.csv")),
                out("csv-cumtool.csv")),
        # To standard output, as in a pipe: no fsync (-o makes the file durable first).
        Command("cumtool to stdout", [*bench.cumtool.argv, "cumsum", str(source)],
                out("csv-cumtool-stdout.csv"), stdout_to_output=True),
        Command("polars lazy", python_script(POLARS_LAZY_CSV, source,
                                             out("csv-polars-lazy.csv")),
                out("csv-polars-lazy.csv")),
        Command("polars eager", python_script(POLARS_EAGER_CSV, source,
                                              out("csv-polars-eager.csv")),
                out("csv-polars-eager.csv")),
        Command("pyarrow + numpy", python_script(PYARROW_CSV, source,
                                                 out("csv-pyarrow.csv")),
                out("csv-pyarrow.csv")),
        Command("duckdb", python_script(DUCKDB, source, out("csv-duckdb.csv"), "csv"),
                out("csv-duckdb.csv")),
        Command("pandas (pyarrow reader)", python_script(PANDAS_CSV, source,
                                                         out("csv-pandas.csv")),
                out("csv-pandas.csv")),
    ]
    commands += with_one_core(commands[:3])
    scenario = Scenario("csv", f"CSV -> CSV, {bench.rows_label()} rows x 8 columns, "
                        "cumsum down every column", commands, "cumtool")
    if bench.mlr:
        commands.append(miller_rsum(bench.mlr, source, out("csv-miller.csv")))
        scenario.notes.append("Miller keeps the input columns and appends "
                              "`<name>_rsum` ones, so it writes twice the columns.")
    else:
        scenario.notes.append("Miller (`mlr`) is not on PATH: skipped.")
    bench.execute(scenario)
    scenario.notes.append(f"input {source.stat().st_size / MIB:.0f} MiB; cumtool's "
                          f"output {bench.size('csv-cumtool.csv')}")
    reference = bench.data.reference(source)
    good = check_last_rows(scenario, reference["rows"], {"*": np.array(reference["sums"])})
    if scenario.command("cumtool").ok and scenario.command("polars lazy").ok:
        differs = compare_outputs(scenario.command("cumtool").output,
                                  scenario.command("polars lazy").output, WIDE_COLUMNS)
        scenario.checks.append(
            "cumtool's output equals polars lazy's value for value (relative 1e-9)"
            if not differs else f"**MISMATCH** cumtool against polars lazy: {differs}")
        good &= not differs
    if good:
        scenario.checks.append(f"every output has {reference['rows']} rows and ends on "
                               "the exact column sums (relative 1e-9)")
    scenario.tables += core_scaling(scenario, [("cumtool", "polars lazy"),
                                               ("cumtool to stdout", "polars lazy")])
    bench.ratio_goal(f"CSV -> CSV {bench.rows_label()} x 8, -o: cumtool ÷ polars lazy",
                     scenario, "cumtool", "polars lazy", 1.0)
    bench.ratio_goal(f"CSV -> CSV {bench.rows_label()} x 8, stdout: cumtool ÷ polars lazy",
                     scenario, "cumtool to stdout", "polars lazy", 1.0)
