"""Running statistics (SEMANTICS.md, "Running statistics"): cumcount, cummean, cumvar,
cumstd, ewma, diff and --compensated.

Expected values come from pandas (ewm, expanding().var), polars (cum_count), numpy, and
plain Python loops of the contract's formulas written here, never from cumtool itself;
batches, groups and runs are checked to give the same bits as one scan.
"""

from __future__ import annotations

import csv
import io
import math
from pathlib import Path

import numpy as np
import pandas as pd
import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import cumtool
from cumtool.errors import DataError, UsageError
from tests.helpers import npy_bytes, ok

NEW_OPS = ("cumcount", "cummean", "cumvar", "cumstd", "ewma", "diff")
EWMA = ("--alpha", "0.35")  # the parameter ewma needs, for runs about something else


# References: the contract's formulas as plain Python loops -----------------------------------

def welford(values: list[float | None], ddof: int = 1) -> tuple[list[float | None], ...]:
    """(var, std) after each value; None (missing) is skipped and stays None."""
    n, m, m2 = 0, 0.0, 0.0
    var: list[float | None] = []
    for x in values:
        if x is None:
            var.append(None)
            continue
        n += 1
        d = x - m
        m += d / n
        m2 += d * (x - m)
        var.append(m2 / (n - ddof) if n > ddof else math.nan)
    std = [None if v is None else math.sqrt(v) if not math.isnan(v) else math.nan
           for v in var]
    return var, std


def neumaier(values: list[float]) -> list[float]:
    s, c, out = 0.0, 0.0, []
    for x in values:
        t = s + x
        if not math.isfinite(t):
            c = 0.0
            out.append(t)
        else:
            c += (s - t) + x if abs(s) >= abs(x) else (x - t) + s
            out.append(t + c)
        s = t
    return out


def ewma_loop(values: list[float], com: float, adjust: bool = True) -> list[float]:
    alpha = 1.0 / (1.0 + com)
    f, new = 1.0 - alpha, (1.0 if adjust else alpha)
    y, w, out = values[0], 1.0, [values[0]]
    for x in values[1:]:
        w *= f
        if y != x:
            y = (w * y + new * x) / (w + new)
        w = w + new if adjust else 1.0
        out.append(y)
    return out


def bits(values: np.ndarray) -> np.ndarray:
    """float64 values as their bit patterns, so NaN == NaN and -0.0 != 0.0."""
    return np.ascontiguousarray(values, dtype=np.float64).view(np.int64)


def read_csv(text: str) -> dict[str, list[str]]:
    rows = list(csv.reader(io.StringIO(text)))
    return {name: [r[i] for r in rows[1:]] for i, name in enumerate(rows[0])}


def floats(cells: list[str]) -> list[float | None]:
    return [None if c == "" else float(c) for c in cells]


SERIES = np.random.default_rng(15).normal(50, 20, 400).round(2)
MISSING_AT = {3, 4, 17, 100, 399}


def series_csv(values: np.ndarray = SERIES, missing: set[int] = MISSING_AT) -> str:
    """A CSV of a label column (not scanned: text) and x; a missing x is an empty cell."""
    cells = ["" if i in missing else repr(float(v)) for i, v in enumerate(values)]
    return "label,x\n" + "".join(f"r{i},{cell}\n" for i, cell in enumerate(cells))


# ewma: pandas bit for bit -------------------------------------------------------------------

EWMA_PARAMETERS = [
    pytest.param("alpha", 0.9, id="alpha0.9"),
    pytest.param("alpha", 0.35, id="alpha0.35"),
    pytest.param("alpha", 1.0, id="alpha1"),
    pytest.param("alpha", 0.001, id="alpha0.001"),
    pytest.param("span", 5.0, id="span5"),
    pytest.param("span", 1.5, id="span1.5"),
    pytest.param("com", 2.5, id="com2.5"),
    pytest.param("com", 0.0, id="com0"),
    pytest.param("halflife", 3.3, id="halflife3.3"),
    pytest.param("halflife", 0.7, id="halflife0.7"),
]


@pytest.mark.parametrize("adjust", [pytest.param(True, id="adjust"),
                                    pytest.param(False, id="no-adjust")])
@pytest.mark.parametrize(("name", "value"), EWMA_PARAMETERS)
@pytest.mark.parametrize("batch_rows", ["7", "1000"])
def test_ewma_is_pandas_bit_for_bit(invoke, name, value, adjust, batch_rows):
    flags = ["--no-adjust"] if not adjust else []
    result = ok(invoke("ewma", f"--{name}", str(value), *flags, "--batch-rows", batch_rows,
                       input=series_csv()))
    got = floats(read_csv(result.stdout)["x"])
    series = pd.Series([np.nan if i in MISSING_AT else v for i, v in enumerate(SERIES)])
    want = series.ewm(**{name: value}, adjust=adjust, ignore_na=True).mean().to_numpy()
    present = [i for i in range(len(SERIES)) if i not in MISSING_AT]
    assert all(got[i] is None for i in MISSING_AT)  # missing cells stay missing
    assert np.array_equal(bits(np.array([got[i] for i in present])), bits(want[present]))


@pytest.mark.parametrize(("name", "value"), EWMA_PARAMETERS)
def test_ewma_api_on_arrays_is_pandas_and_the_contract_loop(name, value):
    data = np.random.default_rng(3).standard_normal((300, 3)) * 1e3
    for adjust in (True, False):
        got = cumtool.scan(data, "ewma", **{name: value}, adjust=adjust)
        want = pd.DataFrame(data).ewm(**{name: value}, adjust=adjust,
                                      ignore_na=True).mean().to_numpy()
        assert np.array_equal(bits(got), bits(want))
    com = {"com": lambda: value, "span": lambda: (value - 1) / 2,
           "alpha": lambda: (1 - value) / value}.get(name, lambda: None)()
    if com is not None:
        for adjust in (True, False):
            want = ewma_loop(data[:, 0].tolist(), com, adjust)
            got = cumtool.scan(data[:, 0], "ewma", com=com, adjust=adjust)
            assert np.array_equal(bits(got), bits(np.array(want)))


def test_ewma_of_a_constant_series_is_the_constant_exactly():
    for value in (0.1, -3.7, 1e300):
        data = np.full(1000, value)
        for adjust in (True, False):
            got = cumtool.scan(data, "ewma", alpha=0.35, adjust=adjust)
            assert np.array_equal(bits(got), bits(data))


def test_ewma_many_groups_give_what_each_group_gives_alone():
    """Many --by groups take the row-at-a-time path across groups; the bits agree."""
    rng = np.random.default_rng(8)
    keys = rng.integers(0, 400, 3000)
    values = rng.standard_normal(3000)
    table = pa.table({"k": keys, "x": values})
    for op, options in (("ewma", {"span": 4.0}), ("cumvar", {}), ("cumstd", {"ddof": 0})):
        out = cumtool.scan(table, op, by="k", columns=["x"], **options)
        got = out.column("x").to_numpy()
        for key in (0, 17, 399):
            mine = keys == key
            alone = cumtool.scan(values[mine], op, **options)
            assert np.array_equal(bits(got[mine]), bits(alone)), (op, key)


def test_ewma_nan_spreads_and_skipna_skips_it(invoke):
    result = ok(invoke("ewma", "--alpha", "0.5", input="x\n1\nnan\n3\n"))
    assert read_csv(result.stdout)["x"] == ["1.0", "NaN", "NaN"]
    result = ok(invoke("ewma", "--alpha", "0.5", "--skipna", input="x\n1\nnan\n3\n"))
    assert read_csv(result.stdout)["x"] == ["1.0", "NaN", repr((0.5 * 1 + 3) / 1.5)]


# cumvar, cumstd: the Welford loop bit for bit, pandas within 1e-9 ----------------------------

@pytest.mark.parametrize("ddof", [0, 1, 2])
@pytest.mark.parametrize("batch_rows", ["1", "5", "1000"])
def test_cumvar_and_cumstd_are_the_welford_loop(invoke, ddof, batch_rows):
    result = ok(invoke("cumvar,cumstd", "--ddof", str(ddof), "--batch-rows", batch_rows,
                       input=series_csv()))
    got = read_csv(result.stdout)
    values = [None if i in MISSING_AT else float(v) for i, v in enumerate(SERIES)]
    var, std = welford(values, ddof)
    for name, want in (("x_cumvar", var), ("x_cumstd", std)):
        cells = floats(got[name])
        assert [c is None for c in cells] == [w is None for w in want]
        pairs = [(c, w) for c, w in zip(cells, want, strict=True) if c is not None]
        assert np.array_equal(bits(np.array([c for c, _ in pairs])),
                              bits(np.array([w for _, w in pairs])))
    series = pd.Series([np.nan if v is None else v for v in values])
    pandas = series.expanding().var(ddof=ddof).to_numpy()
    present = np.array([v is not None for v in values])
    mine = np.array([np.nan if v is None else v for v in floats(got["x_cumvar"])])
    both = present & ~np.isnan(pandas)
    assert np.allclose(mine[both], pandas[both], rtol=1e-9, atol=0)


def test_cumvar_follows_the_formula_where_pandas_compensates():
    data = np.array([-2.8, 1.4, -3.6])
    got = cumtool.scan(data, "cumvar")
    want = welford(data.tolist())[0]
    assert np.array_equal(bits(got), bits(np.array(want)))
    pandas = pd.Series(data).expanding().var().to_numpy()
    assert np.allclose(got[1:], pandas[1:], rtol=1e-9)


def test_cumvar_is_nan_while_the_count_is_at_most_ddof():
    got = cumtool.scan(np.array([1.0, 2.0, 4.0]), "cumvar", ddof=2)
    assert np.isnan(got[:2]).all() and got[2] == welford([1.0, 2.0, 4.0], 2)[0][2]
    assert cumtool.scan(np.array([5.0]), "cumstd", ddof=0).tolist() == [0.0]


# cumcount, cummean -------------------------------------------------------------------------

def test_cumcount_is_polars_cum_count_where_cells_are_present(invoke):
    result = ok(invoke("cumcount", "--batch-rows", "3", input=series_csv()))
    got = read_csv(result.stdout)["x"]
    series = pl.Series([None if i in MISSING_AT else v for i, v in enumerate(SERIES)])
    want = series.cum_count().to_list()
    for i, cell in enumerate(got):
        assert cell == ("" if i in MISSING_AT else str(want[i]))


def test_cumcount_is_int64_on_every_input_dtype():
    for dtype in (np.int8, np.uint64, np.float16, np.bool_, np.complex64):
        got = cumtool.scan(np.ones(4, dtype=dtype), "cumcount")
        assert got.dtype == np.int64 and got.tolist() == [1, 2, 3, 4]


@pytest.mark.parametrize("batch_rows", ["1", "4", "1000"])
def test_cummean_is_the_running_float64_sum_over_the_count(invoke, batch_rows):
    result = ok(invoke("cummean", "--batch-rows", batch_rows, input=series_csv()))
    got = floats(read_csv(result.stdout)["x"])
    present = np.array([i not in MISSING_AT for i in range(len(SERIES))])
    sums = np.add.accumulate(np.where(present, SERIES, 0.0))  # from +0.0, left to right
    want = sums / np.cumsum(present)
    assert np.array_equal(bits(np.array([g for g in got if g is not None])),
                          bits(want[present]))
    assert [g is None for g in got] == list(~present)


def test_cummean_dtypes():
    half = np.array([1, 2, 2], dtype=np.float16)
    got = cumtool.scan(half, "cummean")
    assert got.dtype == np.float32
    assert got.tolist() == (np.cumsum(half.astype(np.float64)) / [1, 2, 3]).astype(
        np.float32).tolist()
    ints = np.array([1, 2, 4], dtype=np.int32)
    assert cumtool.scan(ints, "cummean").dtype == np.float64
    assert cumtool.scan(ints, "cummean", dtype="float32").dtype == np.float32
    with pytest.raises(DataError, match="not defined for complex"):
        cumtool.scan(np.ones(2, np.complex128), "cummean")


# --compensated ------------------------------------------------------------------------------

ILL = [1e16, 1.0, -1e16, 3.14159, 1e-3, 2.0**60, -(2.0**60), 0.1, 0.2, 0.3]


def test_compensated_cumsum_is_the_reference_loop_and_closer_to_fsum():
    data = np.array(ILL * 30)
    got = cumtool.scan(data, "cumsum", compensated=True)
    assert np.array_equal(bits(got), bits(np.array(neumaier(data.tolist()))))
    plain = cumtool.scan(data, "cumsum")
    exact = np.array([math.fsum(data[:i + 1]) for i in range(data.size)])
    assert np.abs(got - exact).sum() < np.abs(plain - exact).sum() / 1e6
    assert plain[-1] != exact[-1]


def test_compensated_cummean_divides_the_compensated_sum():
    data = np.array(ILL)
    got = cumtool.scan(data, "cummean", compensated=True)
    want = np.array(neumaier(ILL)) / np.arange(1, len(ILL) + 1)
    assert np.array_equal(bits(got), bits(want))


@pytest.mark.parametrize(("data", "want"), [
    pytest.param([1e308, 1e308, -1e308, 1.0], [1e308, math.inf, math.inf, math.inf],
                 id="overflow-to-inf"),
    pytest.param([1.0, math.inf, -5.0], [1.0, math.inf, math.inf], id="inf"),
    pytest.param([math.inf, -math.inf, 1.0], [math.inf, math.nan, math.nan], id="inf-minus-inf"),
    pytest.param([2.0, math.nan, 1.0], [2.0, math.nan, math.nan], id="nan"),
])
def test_compensated_infinity_rule(data, want):
    got = cumtool.scan(np.array(data), "cumsum", compensated=True)
    assert np.array_equal(got, np.array(want), equal_nan=True)
    assert np.array_equal(bits(got), bits(np.array(neumaier(data))))


def test_compensated_integer_cumsum_is_unchanged_and_float32_rounds_once(invoke):
    ints = np.array([2**62, 2**62 - 1, -(2**62)], dtype=np.int64)
    assert cumtool.scan(ints, "cumsum", compensated=True).tolist() == np.cumsum(ints).tolist()
    small = np.array([0.1] * 10, dtype=np.float32)
    got = cumtool.scan(small, "cumsum", compensated=True)
    assert got.dtype == np.float32
    assert got.tolist() == np.array(neumaier(small.astype(np.float64).tolist()),
                                    dtype=np.float32).tolist()
    complex_data = np.array(ILL) + 1j * np.array(ILL[::-1])
    got_complex = cumtool.scan(complex_data, "cumsum", compensated=True)
    assert np.array_equal(got_complex.real, neumaier(ILL))
    assert np.array_equal(got_complex.imag, neumaier(ILL[::-1]))


def test_compensated_in_a_table_with_missing_cells_and_batches(invoke):
    text = "label,x\n" + "".join(f"r,{'' if i % 7 == 3 else repr(ILL[i % len(ILL)])}\n"
                                 for i in range(60))
    result = ok(invoke("cumsum", "--compensated", "--batch-rows", "2", input=text))
    got = floats(read_csv(result.stdout)["x"])
    present = [ILL[i % len(ILL)] for i in range(60) if i % 7 != 3]
    assert [g for g in got if g is not None] == neumaier(present)


# diff -----------------------------------------------------------------------------------------

@settings(max_examples=60, deadline=None)
@given(values=st.lists(st.integers(-(2**40), 2**40), max_size=40),
       split=st.integers(1, 9))
def test_cumsum_of_diff_gives_the_integers_back(values, split):
    data = np.array(values, dtype=np.int64)
    whole = cumtool.scan(data, "diff")
    assert whole.dtype == np.int64
    assert np.cumsum(whole).tolist() == values
    table = pa.table({"x": data})
    batches = pa.Table.from_batches(table.to_batches(max_chunksize=split), schema=table.schema)
    diffs = cumtool.scan(batches, "diff")
    assert diffs.column("x").to_pylist() == whole.tolist()
    assert cumtool.scan(diffs, "cumsum").column("x").to_pylist() == values
    assert cumtool.scan(cumtool.scan(data, "diff", reverse=True), "cumsum",
                        reverse=True).tolist() == values


def test_diff_examples_of_the_contract(invoke):
    assert floats(read_csv(ok(invoke("diff", input="x\n1\nnan\n3\n")).stdout)["x"])[:1] == [1.0]
    got = read_csv(ok(invoke("diff", input="x\n1\nnan\n3\n")).stdout)["x"]
    assert got == ["1.0", "NaN", "NaN"]
    got = read_csv(ok(invoke("diff", "--skipna", input="x\n1\nnan\n3\n")).stdout)["x"]
    assert got == ["1.0", "NaN", "2.0"]
    got = read_csv(ok(invoke("diff", "-c", "x", input="k,x\na,5\nb,\nc,9\nd,4\n")).stdout)["x"]
    assert got == ["5", "", "4", "-5"]  # p is the previous non-missing cell
    got = read_csv(ok(invoke("diff", "--reverse", "-c", "x",
                             input="k,x\na,5\nb,\nc,9\nd,4\n")).stdout)["x"]
    assert got == ["-4", "", "5", "4"]  # p is the next one


def test_diff_int64_overflow_is_an_error_unless_wrap(invoke):
    text = f"x\n{-(2**63)}\n{2**63 - 1}\n"
    result = invoke("diff", input=text)
    assert result.exit_code == 1
    assert result.stderr.startswith(
        "Error: standard input: column 'x', row 2 (line 3): diff overflows int64")
    assert "--overflow wrap" in result.stderr
    result = ok(invoke("diff", "--overflow", "wrap", input=text))
    assert read_csv(result.stdout)["x"] == [str(-(2**63)), "-1"]
    with pytest.raises(DataError, match="diff overflows int64") as caught:
        cumtool.scan(np.array([-(2**63), 5], dtype=np.int64), "diff")
    assert caught.value.position == (1,)


def test_diff_dtypes_and_a_narrow_dtype_that_overflows():
    assert cumtool.scan(np.array([1, 5], dtype=np.int32), "diff").dtype == np.int64
    assert cumtool.scan(np.array([1, 5], dtype=np.float32), "diff").dtype == np.float32
    assert cumtool.scan(np.array([True, False]), "diff").tolist() == [1, -1]
    assert cumtool.scan(np.array([100, -100]), "diff", dtype="int8",
                        overflow="wrap").tolist() == [100, 56]
    with pytest.raises(DataError, match="does not fit int8"):
        cumtool.scan(np.array([100, -100]), "diff", dtype="int8")
    z = np.array([1 + 2j, 3 - 1j], dtype=np.complex64)
    assert cumtool.scan(z, "diff").tolist() == [1 + 2j, 2 - 3j]


def test_diff_of_a_decimal_column_stays_decimal(invoke):
    result = ok(invoke("diff", "--decimal", input="x\n19.99\n20.00\n25.10\n"))
    assert read_csv(result.stdout)["x"] == ["19.99", "0.01", "5.10"]
    result = ok(invoke("cumcount,cummean", "--decimal", input="x\n19.99\n20.00\n"))
    got = read_csv(result.stdout)
    # cummean of decimals computes in float64
    assert got["x_cumcount"] == ["1", "2"]
    assert got["x_cummean"] == ["19.99", repr((19.99 + 20.0) / 2)]


# Batches, groups and runs give the same bits ------------------------------------------------

OP_OPTIONS = {"cumcount": {}, "cummean": {}, "cumvar": {}, "cumstd": {"ddof": 0},
              "ewma": {"alpha": 0.35}, "diff": {}}


@settings(max_examples=25, deadline=None)
@given(values=st.lists(st.one_of(st.none(), st.floats(-1e6, 1e6, width=32)), max_size=30),
       batch=st.integers(1, 8), op=st.sampled_from(NEW_OPS),
       keys=st.lists(st.integers(0, 2), min_size=30, max_size=30),
       resets=st.lists(st.booleans(), min_size=30, max_size=30))
def test_any_split_into_batches_groups_or_runs_gives_the_same_bits(values, batch, op, keys,
                                                                   resets):
    n = len(values)
    column = pa.array(values, pa.float64())
    table = pa.table({"k": pa.array(keys[:n], pa.int64()),
                      "r": pa.array(resets[:n], pa.bool_()), "x": column})
    options = OP_OPTIONS[op]
    whole = cumtool.scan(table, op, columns=["x"], **options)
    split = pa.Table.from_batches(table.to_batches(max_chunksize=batch), schema=table.schema)
    batched = cumtool.scan(split, op, columns=["x"], **options)
    assert cells(whole) == cells(batched)
    grouped = cumtool.scan(table, op, columns=["x"], by="k", reset="r", **options)
    grouped_batched = cumtool.scan(split, op, columns=["x"], by="k", reset="r", **options)
    assert cells(grouped) == cells(grouped_batched)
    # each run on its own: a group's rows from one reset to the next
    out = cells(grouped)
    run_of: dict[int, int] = {}
    labels = []
    for i in range(n):
        if resets[i] or keys[i] not in run_of:
            run_of[keys[i]] = i
        labels.append((keys[i], run_of[keys[i]]))
    for label in set(labels):
        rows = [i for i in range(n) if labels[i] == label]
        alone = cumtool.scan(pa.table({"x": column.take(rows)}), op, **options)
        assert cells(alone) == [out[i] for i in rows]


def cells(table: pa.Table) -> list[int | None]:
    """Column x's cells as bit patterns (NaN equals NaN), None where missing."""
    column = table.column("x")
    values = column.fill_null(0).to_numpy()
    patterns = values.astype(values.dtype, copy=True).view(np.int64)  # float64 or int64
    return [None if not column[i].is_valid else int(patterns[i]) for i in range(len(column))]


# Formats, axes, lists --------------------------------------------------------------------------

@pytest.mark.parametrize("op", NEW_OPS)
def test_every_format_in_and_out(invoke, tmp_path, op):
    extra = EWMA if op == "ewma" else ()
    data = np.array([[1.5, 2.0], [4.0, -1.0], [0.5, 8.0], [3.0, 3.0]])
    want = cumtool.scan(data, op, **OP_OPTIONS[op] if op != "cumstd" else {})
    if op == "ewma":
        want = cumtool.scan(data, op, alpha=0.35)
    text = "a,b\n" + "".join(f"{r[0]},{r[1]}\n" for r in data)
    (tmp_path / "in.csv").write_text(text)
    (tmp_path / "in.tsv").write_text(text.replace(",", "\t"))
    pq.write_table(pa.table({"a": data[:, 0], "b": data[:, 1]}), tmp_path / "in.parquet")
    (tmp_path / "in.npy").write_bytes(npy_bytes(data))
    for name in ("in.csv", "in.tsv", "in.parquet", "in.npy"):
        out = tmp_path / f"out-{name}.parquet"
        if name.endswith(".npy"):
            out = tmp_path / "out.npy"
        ok(invoke(op, str(tmp_path / name), *extra, "-o", str(out)))
        if name.endswith(".npy"):
            got = np.load(out)
        else:
            got_table = pq.read_table(out)
            got = np.column_stack([got_table.column("a").to_numpy(),
                                   got_table.column("b").to_numpy()])
        assert got.dtype == want.dtype, name
        assert np.array_equal(got, want, equal_nan=True), name
    shown = ok(invoke(op, str(tmp_path / "in.csv"), *extra, "--to", "table"))
    assert "a" in shown.stdout


@pytest.mark.parametrize("op", NEW_OPS)
def test_nd_arrays_on_any_axis_are_lines_scanned_alone(op):
    cube = np.random.default_rng(5).integers(-50, 50, (3, 4, 5)).astype(np.float64)
    options = OP_OPTIONS[op]
    for axis in (0, 1, 2, -1):
        got = cumtool.scan(cube, op, axis=axis, **options)
        moved = np.moveaxis(cube, axis, 0)
        for index in np.ndindex(moved.shape[1:]):
            line = moved[(slice(None), *index)]
            alone = cumtool.scan(line, op, **options)
            mine = np.moveaxis(got, axis, 0)[(slice(None), *index)]
            assert np.array_equal(bits(mine), bits(alone)), (axis, index)


def test_axis_columns_runs_across_each_row(invoke):
    result = ok(invoke("cummean", "--axis", "columns", input="a,b,c\n1,2,6\n4,,1\n"))
    got = read_csv(result.stdout)
    assert (got["a"], got["b"], got["c"]) == (["1.0", "4.0"], ["1.5", ""], ["3.0", "2.5"])


def test_a_list_appends_each_op_per_column_in_order(invoke):
    result = ok(invoke("cumsum,cummean,cumstd", "-c", "x,y",
                       input="k,x,y\na,1,2.5\nb,3,\na,5,0.5\n"))
    got = read_csv(result.stdout)
    assert list(got) == ["k", "x", "y", "x_cumsum", "x_cummean", "x_cumstd", "y_cumsum",
                         "y_cummean", "y_cumstd"]
    assert got["x_cummean"] == ["1.0", "2.0", "3.0"]
    assert got["x_cumstd"] == ["NaN", repr(math.sqrt(2.0)), "2.0"]
    assert got["y_cummean"] == ["2.5", "", "1.5"]


def test_a_list_of_ops_on_an_array_writes_a_npz(invoke, tmp_path):
    data = np.array([[1.0, 2.0], [3.0, 5.0], [6.0, 4.0]])
    source = tmp_path / "in.npy"
    source.write_bytes(npy_bytes(data))
    ok(invoke("cumcount,ewma,diff", str(source), "--span", "3", "-o", str(tmp_path / "o.npz")))
    with np.load(tmp_path / "o.npz") as archive:
        assert archive.files == ["cumcount", "ewma", "diff"]
        assert archive["diff"].tolist() == [[1.0, 2.0], [2.0, 3.0], [3.0, -1.0]]
        assert np.array_equal(archive["ewma"], cumtool.scan(data, "ewma", span=3))


ZERO_D_DIFF = ("diff needs at least one dimension, and {} is a 0-d array (a single value); "
               "numpy's and torch's diff refuse it too")


@pytest.mark.parametrize(("op", "output"), [("diff", "out.npy"), ("cumsum,diff", "out.npz"),
                                            ("diff", "out.csv")])
def test_diff_of_a_0_d_array_is_a_usage_error(invoke, tmp_path, monkeypatch, op, output):
    monkeypatch.chdir(tmp_path)
    Path("scalar.npy").write_bytes(npy_bytes(np.array(5.0)))
    result = invoke(op, "scalar.npy", "-o", output)
    assert result.exit_code == 2
    assert result.stderr == f"Error: {ZERO_D_DIFF.format('scalar.npy')}\n"
    assert result.stdout_bytes == b""
    assert not Path(output).exists()
    piped = invoke(op, "-", "--from", "npy", "-o", output, input=npy_bytes(np.array(5)))
    assert (piped.exit_code, piped.stderr) == (
        2, f"Error: {ZERO_D_DIFF.format('standard input')}\n")
    # The other ops return a 0-d array unchanged (cumsum in its output dtype).
    ok(invoke("cumsum,cumcount", "scalar.npy", "-o", "kept.npz"))
    with np.load("kept.npz") as archive:
        assert (archive["cumsum"].shape, archive["cumsum"].dtype) == ((), np.float64)
        assert archive["cumsum"] == 5.0 and archive["cumcount"] == 1


# --exclusive, --reverse ------------------------------------------------------------------------

def test_exclusive_is_the_statistic_of_the_elements_before(invoke):
    text = "k,x\na,4\nb,\nc,2\nd,6\n"
    got = {}
    for op in ("cumcount", "cummean", "cumvar", "ewma"):
        extra = EWMA if op == "ewma" else ()
        got[op] = read_csv(ok(invoke(op, "--exclusive", "-c", "x", *extra,
                                     input=text)).stdout)["x"]
    assert got["cumcount"] == ["0", "", "1", "2"]
    assert got["cummean"] == ["", "", "4.0", "3.0"]  # nothing before: missing
    assert got["cumvar"] == ["", "", "NaN", "2.0"]
    assert got["ewma"][:2] == ["", ""] and got["ewma"][2] == "4.0"
    array = cumtool.scan(np.array([4.0, 2.0]), "cummean", exclusive=True)
    assert np.isnan(array[0]) and array[1] == 4.0  # an array holds NaN for missing


def test_reverse_scans_from_the_end(invoke):
    got = read_csv(ok(invoke("cumcount,cummean", "--reverse", "-c", "x",
                             input="k,x\na,1\nb,2\nc,\nd,6\n")).stdout)
    assert got["x_cumcount"] == ["3", "2", "", "1"]
    assert got["x_cummean"] == ["3.0", "4.0", "", "6.0"]


def test_skipna_cumcount_writes_nan_cells_missing(invoke):
    got = read_csv(ok(invoke("cumcount", "--skipna", input="x\n1\nnan\n3\n")).stdout)["x"]
    assert got == ["1", "", "2"]
    got = read_csv(ok(invoke("cummean", "--skipna", input="x\n1\nnan\n3\n")).stdout)["x"]
    assert got == ["1.0", "NaN", "2.0"]


# Edge cases ----------------------------------------------------------------------------------

@pytest.mark.parametrize("op", NEW_OPS)
def test_edge_cases(invoke, op):
    extra = EWMA if op == "ewma" else ()
    empty = ok(invoke(op, *extra, input="x\n"))
    assert empty.stdout == "x\n"
    all_missing = ok(invoke(op, *extra, "-c", "x", input="x,y\n,1\n,2\n"))
    assert read_csv(all_missing.stdout)["x"] == ["", ""]
    one = ok(invoke(op, *extra, input="x\n7.5\n"))
    want_one = {"cumcount": "1", "cummean": "7.5", "cumvar": "NaN", "cumstd": "NaN",
                "ewma": "7.5", "diff": "7.5"}[op]
    assert read_csv(one.stdout)["x"] == [want_one]
    infinite = cumtool.scan(np.array([1.0, np.inf, 2.0, -np.inf]), op, **OP_OPTIONS[op])
    want_inf = {
        "cumcount": [1, 2, 3, 4],
        "cummean": [1.0, np.inf, np.inf, np.nan],
        "cumvar": [np.nan, np.nan, np.nan, np.nan],
        "cumstd": [0.0, np.nan, np.nan, np.nan],
        "ewma": [1.0, np.inf, np.inf, np.nan],
        "diff": [1.0, np.inf, -np.inf, -np.inf],
    }[op]
    assert np.array_equal(infinite, np.array(want_inf, dtype=infinite.dtype), equal_nan=True)
    if op == "diff":  # as numpy's and torch's diff: see the test below
        with pytest.raises(UsageError, match=r"^diff needs at least one dimension, and the "
                           r"input is a 0-d array \(a single value\)"):
            cumtool.scan(np.float64(3.0), op)
        return
    zero_d = cumtool.scan(np.float64(3.0), op, **OP_OPTIONS[op])
    want_zero_d = {"cumcount": 1, "cummean": 3.0, "cumvar": np.nan, "cumstd": 0.0,
                   "ewma": 3.0}[op]
    assert (zero_d.shape, zero_d.dtype) == ((), np.dtype("int64" if op == "cumcount"
                                                          else "float64"))
    assert np.array_equal(zero_d, want_zero_d, equal_nan=True)


def test_dates_are_refused_by_the_statistics(invoke):
    table = pa.table({"d": pa.array([0, 1], pa.date32())})
    with pytest.raises(UsageError, match="not defined for dates"):
        cumtool.scan(table, "cummean", columns=["d"])


# Usage errors -------------------------------------------------------------------------------

@pytest.mark.parametrize(("args", "message"), [
    pytest.param(("ewma", "--alpha", "0"), "--alpha 0 is out of range", id="alpha-0"),
    pytest.param(("ewma", "--alpha", "1.5"), "--alpha 1.5 is out of range", id="alpha-big"),
    pytest.param(("ewma", "--span", "0.5"), "--span 0.5 is out of range", id="span"),
    pytest.param(("ewma", "--com", "-1"), "--com -1 is out of range", id="com"),
    pytest.param(("ewma", "--halflife", "0"), "--halflife 0 is out of range", id="halflife"),
    pytest.param(("ewma", "--span", "3", "--alpha", "0.5"),
                 "not both --span and --alpha", id="span-and-alpha"),
    pytest.param(("ewma",), "ewma needs one of --alpha, --span, --com or --halflife",
                 id="ewma-without-parameter"),
    pytest.param(("cumvar", "--ddof", "-1"), "--ddof -1 is out of range", id="ddof"),
    pytest.param(("cumsum", "--alpha", "0.5"), "No such option '--alpha'", id="alpha-no-ewma"),
    pytest.param(("cummean", "--ddof", "1"), "No such option '--ddof'", id="ddof-no-cumvar"),
    pytest.param(("cummean", "--indices"), "No such option '--indices'", id="indices-cummean"),
    pytest.param(("cumvar", "--compensated"), "No such option '--compensated'",
                 id="compensated-cumvar"),
    pytest.param(("ewma", "--alpha", "0.5", "--ddof", "0"), "No such option '--ddof'",
                 id="ddof-ewma"),
    pytest.param(("diff", "--exclusive"), "--exclusive means nothing for diff",
                 id="diff-exclusive"),
    pytest.param(("cumsum,diff", "--exclusive"), "--exclusive means nothing for diff",
                 id="list-diff-exclusive"),
])
def test_usage_errors_name_the_option(invoke, tmp_path, args, message):
    result = invoke(*args, str(tmp_path / "never-read.csv"))
    assert result.exit_code == 2, result.stderr
    assert result.stderr.startswith("Error: ")
    assert message in result.stderr
    assert "Traceback" not in result.stderr


def test_options_of_some_ops_are_accepted_in_a_list_that_has_one(invoke):
    result = ok(invoke("cumsum,ewma", "--alpha", "0.5", "--compensated",
                       input="x\n1\n3\n"))
    assert read_csv(result.stdout)["x_ewma"] == ["1.0", repr((0.5 * 1 + 3) / 1.5)]
    result = ok(invoke("cumvar,cummax", "--ddof", "0", "--indices", input="x\n1\n3\n"))
    assert list(read_csv(result.stdout)) == ["x", "x_cumvar", "x_cummax", "x_cummax_index"]


@pytest.mark.parametrize(("op", "options", "message"), [
    pytest.param("cumsum", {"alpha": 0.5}, "alpha= is only for ewma", id="alpha"),
    pytest.param("cummean", {"indices": True}, "indices= is only for cummax and cummin",
                 id="indices"),
    pytest.param("cumvar", {"ddof": -2}, r"ddof=-2 is out of range", id="ddof"),
    pytest.param("ewma", {}, "ewma needs one of alpha=", id="ewma"),
    pytest.param("diff", {"exclusive": True}, "exclusive= means nothing for diff", id="diff"),
    pytest.param("cummean", {"compensated": True, "adjust": False},
                 "--no-adjust is only for ewma", id="adjust"),
])
def test_the_api_refuses_the_same(op, options, message):
    with pytest.raises(UsageError, match=message):
        cumtool.scan(np.array([1.0, 2.0]), op, **options)


@settings(max_examples=20, deadline=None)
@given(cells=st.lists(st.one_of(st.just(""), st.just("nan"),
                                st.floats(-1e3, 1e3, allow_nan=False).map(repr),
                                st.integers(-99, 99).map(str)), max_size=25),
       batch=st.integers(1, 6), op=st.sampled_from(NEW_OPS),
       flags=st.sampled_from([(), ("--skipna",), ("--reverse",), ("--by", "k"),
                              ("--reset", "r")]))
def test_tiny_batch_rows_give_the_same_bytes_on_the_command_line(cells, batch, op, flags):
    from click.testing import CliRunner

    from cumtool.cli import main

    text = "k,r,x\n" + "".join(f"{i % 3},{int(i % 5 == 0)},{c}\n" for i, c in enumerate(cells))
    extra = [*(EWMA if op == "ewma" else ()), *flags]
    runner = CliRunner()

    def run(rows: str) -> bytes:
        result = runner.invoke(main, [op, "-c", "x", *extra, "--batch-rows", rows],
                               input=text, catch_exceptions=False)
        assert result.exit_code == 0, result.stderr
        return result.stdout_bytes

    assert run(str(batch)) == run("100000")


@pytest.mark.parametrize("op", ["cumsum", *NEW_OPS])
def test_a_header_only_table_by_groups_gives_a_header_only_table(invoke, op):
    extra = EWMA if op == "ewma" else ()
    result = ok(invoke(op, "-c", "x", "--by", "k", *extra, input="k,r,x\n"))
    assert result.stdout == "k,r,x\n"


@pytest.mark.parametrize(("op", "expected"), [
    (["cummean"], "x\nNaN\n\"\"\nNaN\n1.0\n"),
    (["cumvar"], "x\nNaN\n\"\"\nNaN\nNaN\n"),
    (["ewma", "--alpha", "0.5"], "x\nNaN\n\"\"\nNaN\n1.0\n"),
    (["cumsum"], "x\nNaN\n0.0\nNaN\n1.0\n"),
])
def test_a_skipped_nan_stays_nan_with_exclusive_where_nothing_came_before(invoke, op,
                                                                           expected):
    # The first row has nothing before it (a missing cell with --exclusive), but it is a
    # NaN skipped by --skipna, kept in place as NaN: it was written as a missing cell.
    result = invoke(*op, "--skipna", "--exclusive", "-", input="x\nnan\n1\nnan\n2\n")
    assert result.exit_code == 0, result.stderr
    assert result.stdout == expected
