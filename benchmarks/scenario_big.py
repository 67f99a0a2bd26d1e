"""Scenario `big`: CSV -> CSV at 10M rows x 8 columns (issue 25; only with --big or
--only big: the input is 464 MiB and every output 1.2 GiB): cumtool with -o and to
standard output against polars lazy (scan_csv -> sink_csv) to a file and to standard
output, in wall time, CPU seconds and peak RSS, each on two cores and on one
(`taskset -c 0`) in the same interleaved run; and cumtool at 2M rows beside it, for the
peak RSS goals (at most 256 MiB, and flat from 2M to 10M rows). With --quick: 5x and 1x
the bench's rows.

Note on -o: cumtool fsyncs the file it writes before it exits (a file -o names is
durable when cumtool returns) and polars' sink_csv does not, so the -o row pays the disk
write that polars leaves to the kernel's write-back after it exits; the rows to standard
output (a file here too, no fsync on either side) are the like-for-like pair.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
from common import (
    MIB,
    POLARS_LAZY_CSV,
    WIDE_COLUMNS,
    Bench,
    Command,
    Goal,
    Scenario,
    close_enough,
    compare_outputs,
    core_scaling,
    last_row,
    log,
    python_script,
    with_one_core,
)

BIG_ROWS, SMALL_ROWS = 10_000_000, 2_000_000
RSS_LIMIT = 256.0  # MiB, at 10M rows
FLAT_LIMIT = 1.2  # peak RSS at 10M ÷ at 2M: flat, within the allocator's noise
GOAL = 1.0

POLARS_LAZY_CSV_STDOUT = """
    import sys, polars as pl
    pl.scan_csv(sys.argv[1]).select(pl.all().cum_sum()).sink_csv(sys.stdout.buffer)
"""


def run(bench: Bench) -> None:
    if bench.args.quick:
        small_rows, big_rows = bench.data.rows, 5 * bench.data.rows
    else:
        small_rows, big_rows = SMALL_ROWS, BIG_ROWS
    small, big = bench.rows_label(small_rows), bench.rows_label(big_rows)
    sources = {rows: bench.data.wide("csv", rows) for rows in (small_rows, big_rows)}
    out = bench.out

    def cumtool(rows: int) -> list[Command]:
        label = bench.rows_label(rows)
        to_file, to_stdout = out(f"big-{label}-cumtool.csv"), out(f"big-{label}-stdout.csv")
        return [
            Command(f"cumtool -o, {label}", bench.cumtool("cumsum", sources[rows], to_file),
                    to_file),
            Command(f"cumtool to stdout, {label}",
                    [*bench.cumtool.argv, "cumsum", str(sources[rows])], to_stdout,
                    stdout_to_output=True),
        ]

    polars_file, polars_stdout = out(f"big-{big}-polars.csv"), out(f"big-{big}-polars-stdout.csv")
    timed = [
        *cumtool(big_rows),
        Command(f"polars lazy, {big}", python_script(POLARS_LAZY_CSV, sources[big_rows],
                                                     polars_file), polars_file),
        Command(f"polars lazy to stdout, {big}",
                python_script(POLARS_LAZY_CSV_STDOUT, sources[big_rows]), polars_stdout,
                stdout_to_output=True),
    ]
    commands = [*timed, *with_one_core(timed), *cumtool(small_rows)]
    scenario = Scenario("big", f"CSV -> CSV, {big} rows x 8 columns, cumsum, on 2 cores and "
                        f"on 1; cumtool's peak RSS at {small} against {big}", commands,
                        f"cumtool -o, {big}")
    bench.execute(scenario)
    scenario.notes.append(
        f"inputs {sources[big_rows].stat().st_size / MIB:.0f} MiB ({big}) and "
        f"{sources[small_rows].stat().st_size / MIB:.0f} MiB ({small}); outputs "
        f"{bench.size(f'big-{big}-cumtool.csv')} at {big}")
    scenario.notes.append(
        "-o fsyncs its file before cumtool exits and polars' sink_csv does not: the rows to "
        "standard output (no fsync on either side) are the like-for-like pair")
    check(bench, scenario, sources)
    pairs = [(f"cumtool -o, {big}", f"polars lazy, {big}"),
             (f"cumtool to stdout, {big}", f"polars lazy to stdout, {big}"),
             (f"cumtool to stdout, {big}", f"polars lazy, {big}")]
    scenario.tables += core_scaling(scenario, pairs)
    for mine, theirs in pairs[:2]:
        bench.ratio_goal(f"CSV -> CSV {big} x 8: {mine.split(',')[0]} ÷ "
                         f"{theirs.split(',')[0]}", scenario, mine, theirs, GOAL)
    for kind in ("-o", "to stdout"):
        peak_small = scenario.peak_mib(f"cumtool {kind}, {small}")
        peak_big = scenario.peak_mib(f"cumtool {kind}, {big}")
        bench.goals.append(Goal(f"peak RSS, CSV -> CSV {big} rows, cumtool {kind}", peak_big,
                                RSS_LIMIT, unit=" MiB"))
        bench.goals.append(Goal(
            f"peak RSS {big} ÷ {small}, cumtool {kind}",
            peak_big / peak_small if peak_big is not None and peak_small else None,
            FLAT_LIMIT, note="" if peak_small is None or peak_big is None
            else f"{peak_small:.0f} -> {peak_big:.0f} MiB"))
    # The outputs are 1.2 GiB each at 10M rows: kept only until they are checked.
    for command in commands:
        command.output.unlink(missing_ok=True)


def check(bench: Bench, scenario: Scenario, sources: dict[int, Path]) -> None:
    """Every output: its rows and a last row of the exact column sums; and cumtool's
    output at the big size against polars lazy's, value for value."""
    good = True
    for command in scenario.commands:
        if not command.ok:
            continue
        size = command.label.split(", ")[1]  # "cumtool -o, 10M[, 1 core]"
        rows = next(r for r in sources if bench.rows_label(r) == size)
        reference = bench.data.reference(sources[rows])
        log(f"  checking {command.label} ...")
        got_rows, row = last_row(command.output)
        if got_rows != reference["rows"] or not close_enough(row, np.array(reference["sums"])):
            good = False
            scenario.checks.append(
                f"**MISMATCH** {command.label}: {got_rows} rows, last row "
                f"{np.array2string(row, precision=6)}")
    if good:
        scenario.checks.append("every output has its input's rows and ends on the exact "
                               "column sums (relative 1e-9)")
    big = bench.rows_label(max(sources))
    mine, theirs = scenario.command(f"cumtool -o, {big}"), scenario.command(f"polars lazy, {big}")
    if mine.ok and theirs.ok:
        log("  comparing cumtool's output with polars' ...")
        differs = compare_outputs(mine.output, theirs.output, WIDE_COLUMNS)
        scenario.checks.append(
            f"cumtool's {big} output equals polars lazy's value for value (relative 1e-9)"
            if not differs else f"**MISMATCH** cumtool against polars lazy: {differs}")
