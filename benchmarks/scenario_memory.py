"""Scenario `memory`: Peak memory of cumtool at 2M against 10M CSV rows (only with --memory
or --only memory).
"""

from __future__ import annotations

import numpy as np
from common import (
    POLARS_LAZY_CSV,
    Bench,
    Command,
    Goal,
    Scenario,
    close_enough,
    last_row,
    python_script,
)


def run(bench: Bench) -> None:
    small_rows, big_rows = bench.data.rows, 5 * bench.data.rows
    sources = {rows: bench.data.wide("csv", rows) for rows in (small_rows, big_rows)}
    commands = [
        Command(f"cumtool, {bench.rows_label(rows)} rows",
                bench.cumtool("cumsum", path, bench.out(f"mem-{rows}.csv")),
                bench.out(f"mem-{rows}.csv"))
        for rows, path in sources.items()
    ]
    # The speed goal holds at 10M rows too: polars lazy on the same file, side by side.
    commands.append(Command(f"polars lazy, {bench.rows_label(big_rows)} rows",
                            python_script(POLARS_LAZY_CSV, sources[big_rows],
                                          bench.out("mem-polars.csv")),
                            bench.out("mem-polars.csv")))
    scenario = Scenario("memory", f"Peak memory, cumtool CSV -> CSV, "
                        f"{bench.rows_label(small_rows)} against "
                        f"{bench.rows_label(big_rows)} rows x 8", commands,
                        commands[0].label, ratio_header="this ÷ smaller", invert=True)
    scenario.notes.append("the ratio columns here are of wall time; the memory goals "
                          "(see Goals) are on the peak RSS column")
    bench.execute(scenario)
    for rows, command in zip(sources, commands[:2], strict=True):
        reference = bench.data.reference(sources[rows])
        if command.ok:
            got_rows, row = last_row(command.output)
            if got_rows == rows and close_enough(row, np.array(reference["sums"])):
                scenario.checks.append(f"{command.label}: {rows} rows, ends on the exact "
                                       "column sums")
            else:
                scenario.checks.append(f"**MISMATCH** {command.label}: {got_rows} rows, "
                                       f"last row {row}")
    small, big = (scenario.peak_mib(c.label) for c in commands[:2])
    label = bench.rows_label(big_rows)
    bench.goals.append(Goal(f"peak RSS, CSV -> CSV {label} rows", big, 256.0, unit=" MiB"))
    bench.goals.append(Goal(
        f"peak RSS {label} ÷ peak RSS {bench.rows_label(small_rows)}",
        big / small if big is not None and small else None, 1.2))
    bench.ratio_goal(f"CSV -> CSV {label} x 8, -o: cumtool ÷ polars lazy", scenario,
                     commands[1].label, commands[2].label, 1.0)
