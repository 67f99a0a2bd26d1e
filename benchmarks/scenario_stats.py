"""Scenario `stats`: the running statistics (issue 15) against cumsum, on the 2M x 8 CSV
and .npy: cumtool only. Goals: each op at most 1.5x cumsum's time, ewma at most 2x."""

from __future__ import annotations

import numpy as np
from common import Bench, Command, Scenario, check_last_rows

# (label, op, extra options); cumsum first: every ratio is taken against it
RUNS = [
    ("cumtool cumsum", "cumsum", []),
    ("cumtool cumcount", "cumcount", []),
    ("cumtool cummean", "cummean", []),
    ("cumtool cumvar", "cumvar", []),
    ("cumtool cumstd", "cumstd", []),
    ("cumtool ewma --alpha 0.35", "ewma", ["--alpha", "0.35"]),
    ("cumtool diff", "diff", []),
    ("cumtool cumsum --compensated", "cumsum", ["--compensated"]),
]
EWMA_GOAL = 2.0
GOAL = 1.5


def run(bench: Bench) -> None:
    for fmt in ("csv", "npy"):
        source = bench.data.wide(fmt)
        commands = []
        for label, op, extra in RUNS:
            slug = label.removeprefix("cumtool ").replace(" ", "").replace("-", "")
            output = bench.out(f"stats-{slug}.{fmt}")
            commands.append(Command(label, bench.cumtool(op, source, output, *extra), output))
        scenario = Scenario(
            f"stats-{fmt}", f"Running statistics, {fmt.upper() if fmt == 'csv' else '.npy'} "
            f"{bench.rows_label()} x 8, against cumsum", commands, "cumtool cumsum",
            ratio_header="this ÷ cumsum", invert=True)
        scenario.notes.append(
            "cumvar, cumstd, ewma and --compensated have no exact vectorised form (each "
            "value depends on the rounded one before): they run as C loops row by row "
            "(cumtool/_ext/_sequential.c; a Python loop over floats where it is not built); "
            "everything else is numpy.")
        if fmt == "csv":
            scenario.notes.append(
                "On CSV, printing dominates: cumcount and diff print short numbers, the "
                "float statistics print 17 significant digits.")
        bench.execute(scenario)
        _check(bench, scenario, fmt)
        for label, op, _ in RUNS[1:]:
            bench.ratio_goal(f"{label.removeprefix('cumtool ')} ÷ cumsum, {fmt} "
                             f"{bench.rows_label()} x 8", scenario, label, "cumtool cumsum",
                             EWMA_GOAL if op == "ewma" else GOAL)


def _check(bench: Bench, scenario: Scenario, fmt: str) -> None:
    import pandas as pd

    matrix = np.asarray(np.load(bench.data.wide("npy"), mmap_mode="r"), dtype=np.float64)
    rows = matrix.shape[0]
    sums = np.array(bench.data.reference(bench.data.wide(fmt))["sums"])
    wanted: dict[str, np.ndarray] = {
        "cumtool cumsum": sums,
        "cumtool cumsum --compensated": sums,
        "cumtool cumcount": np.full(matrix.shape[1], float(rows)),
        "cumtool cummean": sums / rows,
        "cumtool cumvar": matrix.var(axis=0, ddof=1),
        "cumtool cumstd": matrix.std(axis=0, ddof=1),
        "cumtool diff": matrix[-1] - matrix[-2],
        "cumtool ewma --alpha 0.35": pd.DataFrame(matrix).ewm(
            alpha=0.35, ignore_na=True).mean().to_numpy()[-1],
    }
    if check_last_rows(scenario, rows, wanted):
        scenario.checks.append(
            f"every output has {rows} rows and ends where numpy's (or pandas' ewm) "
            "statistics of the whole columns end (relative 1e-9)")
