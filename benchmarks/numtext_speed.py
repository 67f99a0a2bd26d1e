"""On its own: the speed of cumtool's number text (cumtool/_ext/_numtext.c) per value,
against CPython's float() and repr() and numpy's casts, and of the small path's float
writer (_csvtext.float_texts) against another build of it.

    python benchmarks/numtext_speed.py                     # ns/value, Markdown
    python benchmarks/numtext_speed.py --csvtext OLD.so    # float_texts: OLD.so against this one

One process, single-threaded; each number is the best of --repeat runs (other work on the
machine only slows runs down). Its last report is RESULTS-numtext.md.
"""

from __future__ import annotations

import argparse
import importlib.machinery
import importlib.util
import time
from collections.abc import Callable
from types import ModuleType
from typing import Any

import numpy as np

from cumtool import numtext


def best_ns(function: Callable[[], Any], count: int, repeat: int) -> float:
    """The fastest of `repeat` runs of function(), in ns per value."""
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        function()
        times.append(time.perf_counter() - start)
    return min(times) / count * 1e9


def datasets(count: int) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(25)
    patterns = rng.integers(0, 1 << 64, size=count, dtype=np.uint64).view(np.float64)
    return {
        # what the CSV benchmarks hold: two decimals, and their running sums
        "money (2 decimals)": np.round(rng.uniform(0, 1000, count), 2),
        "running sums of those": np.cumsum(np.round(rng.uniform(0, 1000, count), 2)),
        "random bit patterns": patterns[np.isfinite(patterns)],
    }


def load_extension(name: str, path: str) -> ModuleType:
    loader = importlib.machinery.ExtensionFileLoader(name, path)
    spec = importlib.util.spec_from_loader(name, loader)
    assert spec is not None
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    return module


def rows(native: ModuleType, label: str, values: np.ndarray, repeat: int) -> list[str]:
    """The format and parse rows of one data set."""
    n = len(values)
    listed = values.tolist()
    texts = [repr(v).encode() for v in listed]
    data, starts, ends = numtext.cells(texts)
    as_bytes = np.array(texts)
    out = np.empty(n)
    ok = np.empty(n, dtype=np.bool_)
    tenth = n // 10  # the Python twin is slow: a tenth, once
    c_format = best_ns(lambda: native.format_floats(values, None, b""), n, repeat)
    py_repr = best_ns(lambda: [repr(x) for x in listed], n, repeat)
    np_format = best_ns(lambda: values.astype(np.str_), n, repeat)
    twin_format = best_ns(lambda: numtext.format_floats_py(values[:tenth]), tenth, 1)
    c_parse = best_ns(lambda: native.parse_floats(data, starts, ends, out, ok), n, repeat)
    py_float = best_ns(lambda: [float(x) for x in texts], n, repeat)
    np_parse = best_ns(lambda: as_bytes.astype(np.float64), n, repeat)
    twin_parse = best_ns(lambda: numtext.parse_floats_py(data, starts[:tenth], ends[:tenth]),
                         tenth, 1)
    return [f"| {label} | format | {c_format:.0f} | {py_repr:.0f} (repr) "
            f"| {np_format:.0f} (astype(str)) | {twin_format:.0f} |",
            f"| {label} | parse | {c_parse:.0f} | {py_float:.0f} (float) "
            f"| {np_parse:.0f} (astype(float64)) | {twin_parse:.0f} |"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--count", type=int, default=200_000, help="values per data set")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--csvtext", metavar="SO", default=None,
                        help="another build of cumtool/_ext/_csvtext to time against")
    args = parser.parse_args()
    native = numtext.NATIVE
    if native is None:
        raise SystemExit("cumtool._ext._numtext is not built")
    count, repeat = args.count, args.repeat
    print("| values | task | _numtext (C) | CPython | numpy | Python twin |")
    print("|---|---|---:|---:|---:|---:|")
    for label, values in datasets(count).items():
        for row in rows(native, label, values, repeat):
            print(row)
    ints = np.random.default_rng(26).integers(-10**12, 10**12, size=count)
    int_texts = [str(i).encode() for i in ints.tolist()]
    data, starts, ends = numtext.cells(int_texts)
    values = np.empty(count, dtype=np.int64)
    status = np.empty(count, dtype=np.uint8)
    c_ints = best_ns(lambda: native.parse_ints(data, starts, ends, values, status), count,
                     repeat)
    py_ints = best_ns(lambda: [int(t) for t in int_texts], count, repeat)
    int_array = np.array(int_texts)
    np_ints = best_ns(lambda: int_array.astype(np.int64), count, repeat)
    print(f"| integers below 10^12 | parse | {c_ints:.0f} | {py_ints:.0f} (int) "
          f"| {np_ints:.0f} (astype(int64)) | |")
    if args.csvtext is not None:
        from cumtool._ext import _csvtext as new

        old = load_extension("_csvtext", args.csvtext)
        print("\n| values | float_texts, other build | float_texts, this build |")
        print("|---|---:|---:|")
        for label, values in datasets(count).items():
            n = len(values)
            before = best_ns(lambda v=values: old.float_texts(v, None, ""), n, repeat)
            after = best_ns(lambda v=values: new.float_texts(v, None, ""), n, repeat)
            assert old.float_texts(values, None, "") == new.float_texts(values, None, "")
            print(f"| {label} | {before:.0f} ns | {after:.0f} ns |")


if __name__ == "__main__":
    main()
