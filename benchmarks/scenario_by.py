"""Scenario `by`: `cumsum --by key` against polars' `cum_sum().over(key)`, lazy and eager."""

from __future__ import annotations

from common import (
    POLARS_OVER_EAGER,
    POLARS_OVER_LAZY,
    Bench,
    Command,
    Goal,
    Scenario,
    compare_outputs,
    log,
    python_script,
)


def run(bench: Bench) -> None:
    if not bench.cumtool.has_by:
        bench.notes.append("`--by` scenario skipped: `cumtool cumsum --help` has no --by "
                           "option yet.")
        bench.goals.append(Goal("--by: cumtool ÷ polars over", None, 2.0,
                                note="cumtool has no --by yet"))
        log("--by: skipped (cumtool cumsum has no --by option yet)")
        return
    source = bench.data.keyed()
    out = bench.out
    commands = [
        Command("cumtool --by key", bench.cumtool(
            "cumsum", source, out("by-cumtool.csv"), "-c", "value", "--by", "key"),
                out("by-cumtool.csv")),
        Command("polars over, lazy", python_script(POLARS_OVER_LAZY, source,
                                                   out("by-polars-lazy.csv")),
                out("by-polars-lazy.csv")),
        Command("polars over, eager", python_script(POLARS_OVER_EAGER, source,
                                                    out("by-polars-eager.csv")),
                out("by-polars-eager.csv")),
    ]
    scenario = Scenario("by", f"cumsum --by key, CSV -> CSV, {bench.rows_label()} rows, "
                        f"{bench.data.keyed_groups:,} groups", commands, "cumtool --by key")
    bench.execute(scenario)
    for peer in commands[1:]:
        if commands[0].ok and peer.ok:
            differs = compare_outputs(commands[0].output, peer.output, ["key", "value"])
            scenario.checks.append(
                f"cumtool's output equals {peer.label}'s value for value (relative 1e-9)"
                if not differs else f"**MISMATCH** cumtool against {peer.label}: {differs}")
    best = scenario.best(["polars over, lazy", "polars over, eager"])
    bench.ratio_goal(f"--by {bench.rows_label()} rows: cumtool ÷ {best or 'polars over'}",
                     scenario, "cumtool --by key", best, 2.0)
