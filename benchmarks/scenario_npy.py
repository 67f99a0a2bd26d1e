"""Scenario `npy`: .npy -> .npy: cumtool against a numpy script, with `cp` as the floor."""

from __future__ import annotations

import numpy as np
from common import (
    NUMPY_NPY,
    Bench,
    Command,
    Scenario,
    check_last_rows,
    python_script,
)


def run(bench: Bench) -> None:
    source = bench.data.wide("npy")
    out = bench.out
    commands = [
        Command("cumtool", bench.cumtool("cumsum", source, out("npy-cumtool.npy")),
                out("npy-cumtool.npy")),
        Command("numpy script", python_script(NUMPY_NPY, source, out("npy-numpy.npy")),
                out("npy-numpy.npy")),
        Command("cp (floor)", ["cp", str(source), str(out("npy-cp.npy"))],
                out("npy-cp.npy")),
    ]
    scenario = Scenario("npy", f".npy -> .npy, {bench.rows_label()} x 8 float64, cumsum "
                        "along axis 0", commands, "cumtool")
    bench.execute(scenario)
    reference = bench.data.reference(source)
    if check_last_rows(scenario, reference["rows"], {"*": np.array(reference["sums"])}):
        scenario.checks.append(f"every output has {reference['rows']} rows and ends on "
                               "the exact column sums (relative 1e-9)")
    bench.ratio_goal(f".npy {bench.rows_label()} x 8: cumtool ÷ numpy script", scenario,
                     "cumtool", "numpy script", 1.2)
