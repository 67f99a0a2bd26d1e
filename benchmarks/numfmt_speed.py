"""format_floats of two builds of cumtool/_ext/_numtext.c side by side: ns per value,
the runs interleaved (old, new, new, old, ...) so that the machine's other work falls on
both alike; each row is the median over the rounds, and the median of the paired ratios.

    python benchmarks/numfmt_speed.py OLD.so NEW.so [--count N] [--rounds R]

Both builds must write the same bytes (checked first). Its report is RESULTS-numfmt.md.
"""

from __future__ import annotations

import argparse
import importlib.machinery
import importlib.util
import time
from types import ModuleType
from typing import Any

import numpy as np


def load(path: str) -> ModuleType:
    name = "cumtool._ext._numtext"
    loader = importlib.machinery.ExtensionFileLoader(name, path)
    spec = importlib.util.spec_from_loader(name, loader)
    assert spec is not None
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    return module


def datasets(count: int) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(25)
    patterns = rng.integers(0, 1 << 64, size=count, dtype=np.uint64).view(np.float64)
    return {
        "running sums of 2-decimal numbers": np.cumsum(np.round(rng.uniform(-100, 300, count),
                                                                2)),
        "2-decimal numbers (short)": np.round(rng.uniform(0, 1000, count), 2),
        "random bit patterns": patterns[np.isfinite(patterns)],
        "integers below 10^9 (as float)": rng.integers(0, 10**9, size=count).astype(np.float64),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("old")
    parser.add_argument("new")
    parser.add_argument("--count", type=int, default=1_000_000)
    parser.add_argument("--rounds", type=int, default=15)
    args = parser.parse_args()
    builds = {"old": load(args.old), "new": load(args.new)}
    print("| values | old ns/value | new ns/value | new/old (median of pairs) |")
    print("|---|---:|---:|---:|")
    for name, values in datasets(args.count).items():
        for json in (False, True):
            texts = {label: m.format_floats(values, None, b"", json)[0]
                     for label, m in builds.items()}
            assert texts["old"] == texts["new"], name
        times: dict[str, list[float]] = {"old": [], "new": []}
        for r in range(args.rounds):
            order = ("old", "new") if r % 2 == 0 else ("new", "old")
            for label in order:
                module: Any = builds[label]
                start = time.perf_counter()
                module.format_floats(values, None, b"")
                times[label].append((time.perf_counter() - start) / len(values) * 1e9)
        old, new = np.array(times["old"]), np.array(times["new"])
        print(f"| {name} | {np.median(old):.1f} | {np.median(new):.1f} "
              f"| {np.median(new / old):.2f} |")


if __name__ == "__main__":
    main()
