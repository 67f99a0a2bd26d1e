"""Scenario `memory`: Peak memory of cumtool at 2M against 10M CSV rows (only with --memory
or --only memory).
"""

from __future__ import annotations

import numpy as np
from common import (
    Bench,
    Command,
    Goal,
    Scenario,
    close_enough,
    last_row,
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
    scenario = Scenario("memory", f"Peak memory, cumtool CSV -> CSV, "
                        f"{bench.rows_label(small_rows)} against "
                        f"{bench.rows_label(big_rows)} rows x 8", commands,
                        commands[0].label, ratio_header="this ÷ smaller", invert=True)
    scenario.notes.append("the ratio columns here are of wall time; the memory goals "
                          "(see Goals) are on the peak RSS column")
    bench.execute(scenario)
    for rows, command in zip(sources, commands, strict=True):
        reference = bench.data.reference(sources[rows])
        if command.ok:
            got_rows, row = last_row(command.output)
            if got_rows == rows and close_enough(row, np.array(reference["sums"])):
                scenario.checks.append(f"{command.label}: {rows} rows, ends on the exact "
                                       "column sums")
            else:
                scenario.checks.append(f"**MISMATCH** {command.label}: {got_rows} rows, "
                                       f"last row {row}")
    small, big = (scenario.peak_mib(c.label) for c in commands)
    label = bench.rows_label(big_rows)
    bench.goals.append(Goal(f"peak RSS, CSV -> CSV {label} rows", big, 256.0, unit=" MiB"))
    bench.goals.append(Goal(
        f"peak RSS {label} ÷ peak RSS {bench.rows_label(small_rows)}",
        big / small if big is not None and small else None, 1.2))
