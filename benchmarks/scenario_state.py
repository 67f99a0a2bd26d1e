"""Scenario `state`: what `--state` costs (the fingerprint of the input, the lock, the
commit of output and state together, and the state itself) against the same run without
it, on the 2M x 8 CSV and on the keyed CSV with --by (whose state holds every group twice:
after the run, and from before it, for a retry). Each timed --state run after the first is
a retry of the same run, which does the same work as a new one.
"""

from __future__ import annotations

from common import Bench, Command, Scenario


def run(bench: Bench) -> None:
    out = bench.out
    wide = bench.data.wide("csv")
    keyed = bench.data.keyed()
    state = out("bench.state")
    by_state = out("bench-by.state")
    for path in (state, by_state):
        path.unlink(missing_ok=True)
    commands = [
        Command("cumtool", bench.cumtool("cumsum", wide, out("state-none.csv")),
                out("state-none.csv")),
        Command("cumtool --state", bench.cumtool("cumsum", wide, out("state-with.csv"),
                                                 "--state", str(state)),
                out("state-with.csv")),
    ]
    scenario = Scenario("state", f"--state against none, CSV -> CSV, {bench.rows_label()} "
                        "rows x 8", commands, "cumtool")
    bench.execute(scenario)
    _same_bytes(scenario, commands)
    bench.ratio_goal("--state: cumtool --state ÷ cumtool (2M x 8 CSV)", scenario,
                     "cumtool --state", "cumtool", 1.05)
    grouped = [
        Command("cumtool --by key", bench.cumtool(
            "cumsum", keyed, out("state-by-none.csv"), "-c", "value", "--by", "key"),
                out("state-by-none.csv")),
        Command("cumtool --by key --state", bench.cumtool(
            "cumsum", keyed, out("state-by-with.csv"), "-c", "value", "--by", "key",
            "--state", str(by_state)), out("state-by-with.csv")),
    ]
    scenario = Scenario("state-by", f"--state with --by key ({bench.data.keyed_groups:,} "
                        f"groups) against none, {bench.rows_label()} rows", grouped,
                        "cumtool --by key")
    bench.execute(scenario)
    _same_bytes(scenario, grouped)
    bench.ratio_goal("--state with --by: cumtool --state ÷ cumtool (100k groups)", scenario,
                     "cumtool --by key --state", "cumtool --by key", 1.05)


def _same_bytes(scenario: Scenario, commands: list[Command]) -> None:
    first, second = (c.output.read_bytes() for c in commands)
    if first == second:
        scenario.checks.append("the outputs with and without --state are the same bytes")
    else:
        scenario.notes.append("FAIL: the outputs with and without --state differ")
