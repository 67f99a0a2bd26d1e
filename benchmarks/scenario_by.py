"""Scenario `by`: `cumsum --by key` against polars' `cum_sum().over(key)`, lazy and eager,
side by side in one run: 1M and 2M rows with 100k groups (issue 25's goal, at most 1.0x
polars' over), then 1M rows with 10 and with 1M groups (--quick: the bench's rows only).
Each table also runs `cumsum` without --by on the same file: what --by adds to it. The
goal's cases run cumtool and polars on one core too (`taskset -c 0`, in the same run), and
report wall and CPU ratios on two cores and on one. cumtool's output is checked against
both polars' value for value, and its keys against the input's row for row: rows keep
their original order."""

from __future__ import annotations

from pathlib import Path

from common import (
    GENERATOR_VERSION,
    POLARS_OVER_EAGER,
    POLARS_OVER_LAZY,
    SEED,
    Bench,
    Command,
    Goal,
    Scenario,
    _write_keyed_csv,
    compare_outputs,
    core_scaling,
    log,
    python_script,
    read_table,
    with_one_core,
)

GOAL = 1.0  # issue 25: --by at most as slow as polars' over
PEERS = ["polars over, lazy", "polars over, eager"]


def keyed(bench: Bench, rows: int, groups: int) -> Path:
    """A keyed CSV of `rows` rows and `groups` groups, by the recipe of Datasets.keyed (the
    same file where rows and groups are the same)."""
    seed = SEED + 7 * rows
    recipe = {"kind": "keyed", "rows": rows, "groups": groups, "seed": seed,
              "version": GENERATOR_VERSION}
    return bench.data._make(f"keyed-{rows}-{groups}.csv", recipe,
                            lambda p: _write_keyed_csv(p, rows, groups, seed))


def run(bench: Bench) -> None:
    if not bench.cumtool.has_by:
        bench.notes.append("`--by` scenario skipped: `cumtool cumsum --help` has no --by "
                           "option yet.")
        bench.goals.append(Goal("--by: cumtool ÷ polars over", None, GOAL,
                                note="cumtool has no --by yet"))
        log("--by: skipped (cumtool cumsum has no --by option yet)")
        return
    if bench.args.quick:
        cases = [(bench.data.rows, bench.data.keyed_groups, True)]
    else:
        cases = [(1_000_000, 100_000, True), (2_000_000, 100_000, True),
                 (1_000_000, 10, False), (1_000_000, 1_000_000, False)]
    for rows, groups, goal in cases:
        _case(bench, rows, groups, goal)


def _case(bench: Bench, rows: int, groups: int, goal: bool) -> None:
    source = keyed(bench, rows, groups)
    label = f"{bench.rows_label(rows)}-{groups}"
    out = bench.out
    commands = [
        Command("cumtool --by key", bench.cumtool(
            "cumsum", source, out(f"by-{label}-cumtool.csv"), "-c", "value", "--by", "key"),
                out(f"by-{label}-cumtool.csv")),
        Command("polars over, lazy", python_script(POLARS_OVER_LAZY, source,
                                                   out(f"by-{label}-polars-lazy.csv")),
                out(f"by-{label}-polars-lazy.csv")),
        Command("polars over, eager", python_script(POLARS_OVER_EAGER, source,
                                                    out(f"by-{label}-polars-eager.csv")),
                out(f"by-{label}-polars-eager.csv")),
        Command("cumtool without --by", bench.cumtool(
            "cumsum", source, out(f"by-{label}-plain.csv"), "-c", "value"),
                out(f"by-{label}-plain.csv")),
    ]
    if goal:
        commands += with_one_core(commands[:3])
    scenario = Scenario(f"by-{label}", f"cumsum --by key, CSV -> CSV, "
                        f"{bench.rows_label(rows)} rows, {groups:,} groups", commands,
                        "cumtool --by key")
    bench.execute(scenario)
    for peer in commands[1:3]:
        if commands[0].ok and peer.ok:
            differs = compare_outputs(commands[0].output, peer.output, ["key", "value"])
            scenario.checks.append(
                f"cumtool's output equals {peer.label}'s value for value (relative 1e-9)"
                if not differs else f"**MISMATCH** cumtool against {peer.label}: {differs}")
    scenario.checks += [check_order(source, command.output) for command in commands
                        if command.ok and command.label.startswith("cumtool --by")]
    scenario.notes.append("`cumtool without --by` is a running total of the whole column "
                          "(a different result): the cost of reading and writing the file, "
                          "and of start-up, that --by shares.")
    scenario.tables += core_scaling(scenario, [("cumtool --by key", peer) for peer in PEERS])
    best = scenario.best(PEERS)
    text = (f"--by {bench.rows_label(rows)} rows, {groups:,} groups: cumtool ÷ "
            f"{best or 'polars over'}")
    if goal:
        bench.ratio_goal(text, scenario, "cumtool --by key", best, GOAL)
    elif best is not None:
        wall = scenario.ratio("cumtool --by key", best)
        cpu = scenario.ratio("cumtool --by key", best, of="cpu")
        shown = f"wall {wall:.2f}x" + ("" if cpu is None else f", CPU {cpu:.2f}x")
        scenario.notes.append(f"{text}: {shown} (medians; no goal)")


def check_order(source: Path, output: Path) -> str:
    """Whether the output's key column is the input's, row for row: --by keeps the rows in
    their original order (polars' over does too, so comparing with it alone would not
    catch both reordering alike)."""
    keys_in, keys_out = read_table(source)["key"], read_table(output)["key"]
    if keys_in.len() == keys_out.len() and keys_in.equals(keys_out):
        return f"{output.name}: the keys are the input's, row for row (original order)"
    return f"**MISMATCH** {output.name}: its key column is not the input's, row for row"
