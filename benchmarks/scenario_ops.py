"""Scenario `ops`: Every operation against cumsum, on CSV and on .npy: cumtool only."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from common import (
    FLOAT_COLUMNS,
    OPS,
    Bench,
    Command,
    Scenario,
    check_last_rows,
)


def run(bench: Bench) -> None:
    for fmt in ("csv", "npy"):
        source = bench.data.wide(fmt)
        commands = []
        for op in OPS:
            output = bench.out(f"ops-{op}.{fmt}")
            # The int64 columns overflow in a product of 2M integers, which cumtool
            # refuses by default: wrap around as torch does, for the timing.
            extra = ["--overflow", "wrap"] if op == "cumprod" and fmt == "csv" else []
            label = f"cumtool {op}{' --overflow wrap' if extra else ''}"
            commands.append(Command(label, bench.cumtool(op, source, output, *extra),
                                    output))
        scenario = Scenario(
            f"ops-{fmt}", f"Every operation, {fmt.upper() if fmt == 'csv' else '.npy'} "
            f"{bench.rows_label()} x 8, cumtool only", commands, "cumtool cumsum",
            ratio_header="this ÷ cumsum", invert=True)
        if fmt == "csv":
            scenario.notes.append(
                "On CSV most of the time goes to parsing and printing text, so an op "
                "that prints shorter numbers is faster: cummax and cummin print input "
                "values (two decimals), and cumprod of these values saturates to ±inf "
                "and then NaN within a few hundred rows (the integer columns wrap to 0), "
                "while cumsum and logcumsumexp print full-precision floats.")
        else:
            scenario.notes.append(
                "cumprod of these values saturates to ±inf and then NaN within a few "
                "hundred rows; .npy output is binary, so every op writes the same bytes.")
        bench.execute(scenario)
        _check(bench, scenario, source, fmt)
        for command in commands[1:]:
            bench.ratio_goal(f"{command.label.removeprefix('cumtool ')} ÷ cumsum, "
                             f"{fmt} {bench.rows_label()} x 8", scenario, command.label,
                             "cumtool cumsum", 1.3)


def _check(bench: Bench, scenario: Scenario, source: Path, fmt: str) -> None:
    matrix = np.load(bench.data.wide("npy"), mmap_mode="r")
    floats = np.asarray(matrix, dtype=np.float64)
    wanted: dict[str, np.ndarray] = {
        "cumsum": np.array(bench.data.reference(source)["sums"]),
        "cummax": floats.max(axis=0),
        "cummin": floats.min(axis=0),
        "logcumsumexp": np.logaddexp.accumulate(floats, axis=0)[-1],
    }
    product = np.multiply.accumulate(floats, axis=0)[-1]
    if fmt == "csv":  # the int columns stay int64 and wrap around
        with np.errstate(over="ignore"):
            wrapped = np.multiply.accumulate(
                floats[:, len(FLOAT_COLUMNS):].astype(np.int64), axis=0)[-1]
        product[len(FLOAT_COLUMNS):] = wrapped
    wanted["cumprod"] = product
    expected = {c.label: wanted[c.label.split()[1]] for c in scenario.commands}
    if check_last_rows(scenario, floats.shape[0], expected):
        scenario.checks.append(
            f"every output has {floats.shape[0]} rows and ends where numpy's sequential "
            "accumulation (or the exact sum, max, min) ends (relative 1e-9)")
