"""`cumtool.scan`, the Python API, with the table options: reverse, exclusive, by, reset,
columns, keep, indices, skipna, dtype and overflow, on numpy arrays and Arrow tables.

Expected values come from numpy flips, pandas groupby, and the reference loop `ref_scan`
of tests/test_table_options.py (plain Python, one element at a time). For Arrow tables the
API must also give exactly what the command line writes for the same table as Parquet.
"""

from __future__ import annotations

import io
from decimal import Decimal
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from helpers import along_axis
from test_table_options import (
    COLUMNS,
    FLAG,
    INT64_MAX,
    INT64_MIN,
    OPS,
    PRICE,
    QTY,
    REGION,
    STORE,
    _numpy_scan,
    assert_cells,
    keys_of,
    ref_scan,
)

import cumtool
from cumtool.errors import DataError, ScanOverflowError, UsageError

EXTREMES = ("cummax", "cummin")


def _data(op: str, shape: tuple[int, ...], seed: int = 5) -> np.ndarray:
    rng = np.random.default_rng(seed)
    if op in ("cumprod", "logcumsumexp"):
        return rng.choice([0.5, -1.5, 2.0, 1.25], size=shape)
    return rng.integers(-3, 4, size=shape).astype(np.int64)


def _assert_values(got: np.ndarray, expected: np.ndarray, op: str) -> None:
    assert got.dtype == expected.dtype
    assert got.shape == expected.shape
    if op == "logcumsumexp":
        np.testing.assert_allclose(got, expected, rtol=1e-13)
    else:
        np.testing.assert_array_equal(got, expected)


def _loop_along(array: np.ndarray, axis: int, **options: Any) -> tuple[np.ndarray, np.ndarray]:
    """ref_scan on every line along `axis`: (values as float or int, indices with -1)."""
    def line(values: list[Any]) -> tuple[list[Any], list[int]]:
        line_values, line_indices = ref_scan(values, **options)
        return line_values, [-1 if p is None else p for p in line_indices]

    values, indices = along_axis(array, axis, line, object, np.int64)
    return values, indices


# numpy arrays: reverse and exclusive ------------------------------------------------------


@pytest.mark.parametrize("flags", [
    pytest.param({"reverse": True}, id="reverse"),
    pytest.param({"exclusive": True}, id="exclusive"),
    pytest.param({"reverse": True, "exclusive": True}, id="reverse-exclusive"),
])
@pytest.mark.parametrize(("shape", "axis"), [
    pytest.param((7,), 0, id="1d"),
    pytest.param((4, 5), 0, id="2d-axis0"),
    pytest.param((4, 5), 1, id="2d-axis1"),
    pytest.param((3, 4, 5), 1, id="3d-axis1"),
    pytest.param((3, 4, 5), -1, id="3d-axis-1"),
])
@pytest.mark.parametrize("op", [pytest.param(op, id=op) for op in OPS])
def test_array_reverse_and_exclusive_equal_numpy_flips(op, shape, axis, flags):
    array = _data(op, shape)
    got = cumtool.scan(array, op, axis=axis, **flags)
    expected = _numpy_scan(array, op, axis % array.ndim, flags.get("reverse", False),
                           flags.get("exclusive", False))
    _assert_values(got, expected, op)


@pytest.mark.parametrize("flags", [
    pytest.param({}, id="plain"),
    pytest.param({"reverse": True}, id="reverse"),
    pytest.param({"exclusive": True}, id="exclusive"),
    pytest.param({"reverse": True, "exclusive": True}, id="reverse-exclusive"),
])
@pytest.mark.parametrize("axis", [pytest.param(a, id=f"axis{a}") for a in (0, 1, 2)])
@pytest.mark.parametrize("op", [pytest.param(op, id=op) for op in EXTREMES])
def test_array_indices_with_reverse_and_exclusive(op, axis, flags):
    array = np.array([[[3, 1, 3], [2, 2, 0]], [[1, 3, 3], [0, 2, 2]],
                      [[3, 3, 1], [2, 0, 2]]], dtype=np.int64)
    values, indices = cumtool.scan(array, op, axis=axis, indices=True, **flags)
    expected_values, expected_indices = _loop_along(array, axis, op=op, **flags)
    assert values.dtype == np.int64 and indices.dtype == np.int64
    assert values.tolist() == expected_values.tolist()
    np.testing.assert_array_equal(indices, expected_indices)


def test_array_exclusive_identity_index_is_minus_one():
    values, indices = cumtool.scan(np.array([3, 5, 5]), "cummax", exclusive=True,
                                   indices=True)
    assert values.tolist() == [INT64_MIN, 3, 5]
    assert indices.tolist() == [-1, 0, 1]


@pytest.mark.parametrize("op", [pytest.param(op, id=op) for op in OPS])
def test_array_exclusive_with_skipna_keeps_nan_in_place(op):
    data = [1.5, np.nan, 2.0, np.nan, 0.5]
    options: dict[str, Any] = {"exclusive": True, "skipna": True, "reverse": True}
    if op in EXTREMES:
        values, indices = cumtool.scan(np.array(data), op, indices=True, **options)
    else:
        values, indices = cumtool.scan(np.array(data), op, **options), None
    expected, positions = ref_scan(data, op, **options)
    assert_cells(values.tolist(), expected, approx=op == "logcumsumexp")
    if indices is not None:
        assert indices.tolist() == [-1 if p is None else p for p in positions]


def test_array_reverse_overflow_reports_the_input_index():
    array = np.array([[1, 2**62], [1, 2**62], [1, 5]])
    with pytest.raises(ScanOverflowError) as caught:
        cumtool.scan(array, "cumsum", reverse=True)
    assert caught.value.position == (0, 1)
    wrapped = cumtool.scan(array, "cumsum", reverse=True, overflow="wrap")
    assert wrapped[0, 1] == (2**63 + 5) - 2**64


# numpy arrays: by= and reset= ---------------------------------------------------------------


@pytest.mark.parametrize("op", [pytest.param(op, id=op) for op in ("cumsum", "cumprod",
                                                                   "cummax", "cummin")])
def test_array_by_equals_pandas_groupby(op):
    rng = np.random.default_rng(2)
    keys = rng.choice(["a", "b", "c"], size=40)
    values = rng.integers(-2, 3, size=(40, 3))
    got = cumtool.scan(values, op, by=keys)
    frame = pd.DataFrame(values, columns=["x", "y", "z"]).assign(k=keys)
    expected = getattr(frame.groupby("k", sort=False)[["x", "y", "z"]], op)().to_numpy()
    assert got.dtype == np.int64
    np.testing.assert_array_equal(got, expected)


@pytest.mark.parametrize("options", [
    pytest.param({}, id="plain"),
    pytest.param({"reverse": True}, id="reverse"),
    pytest.param({"exclusive": True}, id="exclusive"),
    pytest.param({"reverse": True, "exclusive": True}, id="reverse-exclusive"),
    pytest.param({"reverse": True, "exclusive": True, "skipna": True}, id="all-skipna"),
])
@pytest.mark.parametrize("op", [pytest.param(op, id=op) for op in OPS])
def test_array_by_and_reset_equal_the_reference(op, options):
    keys = np.array([1, 2, 1, 1, 2, 3, 1, 2, 3, 3, 1])
    flags = np.array([0, 0, 0, 1, 0, 0, 0, 1, 0, 1, 0], dtype=bool)
    data = [1.5, -0.5, 2.0, np.nan, 1.0, 0.5, -2.0, 3.0, np.nan, 1.25, 0.75]
    extra = {"indices": True} if op in EXTREMES else {}
    got = cumtool.scan(np.array(data), op, by=keys, reset=flags, **options, **extra)
    values, indices = got if extra else (got, None)
    expected, positions = ref_scan(data, op, keys=[(k,) for k in keys.tolist()],
                                   resets=flags.tolist(), **options)
    assert values.dtype == np.float64
    assert_cells(values.tolist(), expected, approx=op == "logcumsumexp")
    if indices is not None:
        assert indices.tolist() == [-1 if p is None else p for p in positions]


def test_array_by_takes_several_key_columns_and_missing_keys():
    values = np.array([1, 2, 3, 4, 5, 6])
    keys = [["a", 1], ["a", 2], [None, 1], ["a", 1], [None, 1], ["a", 2]]
    assert cumtool.scan(values, "cumsum", by=np.array(keys, dtype=object)).tolist() == [
        1, 2, 3, 5, 8, 8]
    assert cumtool.scan(values, "cumsum", by=["x", None, "x", None, "", ""]).tolist() == [
        1, 2, 4, 6, 5, 11]


def test_array_by_float_keys_keep_nan_apart():
    values = np.arange(1, 7)
    keys = np.array([0.5, np.nan, 0.5, np.nan, 1.5, np.nan])
    assert cumtool.scan(values, "cumsum", by=keys).tolist() == [1, 2, 4, 6, 5, 12]


def test_array_reset_alone_on_2d():
    array = np.array([[1, 10], [2, 20], [3, 30], [4, 40]])
    got = cumtool.scan(array, "cumsum", reset=[0, 0, 1, 0])
    assert got.tolist() == [[1, 10], [3, 30], [3, 30], [7, 70]]
    got = cumtool.scan(array, "cumsum", reset=[0, 0, 1, 0], reverse=True)
    assert got.tolist() == [[3, 30], [2, 20], [7, 70], [4, 40]]


def test_array_by_keeps_the_dtype_rules():
    int8 = np.array([100, 100, 1], dtype=np.int8)
    assert cumtool.scan(int8, "cumsum", by=[1, 2, 1]).dtype == np.int64
    assert cumtool.scan(int8, "cummax", by=[1, 2, 1]).dtype == np.int8
    assert cumtool.scan(int8, "logcumsumexp", by=[1, 2, 1]).dtype == np.float64
    small = np.array([1, 2, 3], dtype=np.int8)
    assert cumtool.scan(small, "cumsum", by=[1, 1, 1], dtype="int8").dtype == np.int8
    assert cumtool.scan(small, "cumsum", dtype="int8").dtype == np.int8
    halves = np.array([1.5, 2.5, 3.5])
    assert cumtool.scan(halves, "cumsum", by=[0, 0, 0], dtype="int32").tolist() == [1, 3, 6]
    with pytest.raises(ScanOverflowError):
        cumtool.scan(int8, "cumsum", by=[1, 1, 1], dtype="int8")
    assert cumtool.scan(int8, "cumsum", by=[1, 1, 1], dtype="int8",
                        overflow="wrap").tolist() == [100, -56, -55]


def test_array_by_overflow_reports_the_array_index():
    array = np.array([[1, 1], [1, 2**62], [1, 2**62], [3, 3]])
    with pytest.raises(ScanOverflowError) as caught:
        cumtool.scan(array, "cumsum", by=[1, 2, 2, 1])
    assert caught.value.position == (2, 1)
    assert str(caught.value).startswith("cumsum overflows int64")
    with pytest.raises(ScanOverflowError) as caught:
        cumtool.scan(array[:, 1], "cumsum", by=[1, 2, 2, 1], reverse=True)
    assert caught.value.position == (1,)


def test_array_by_on_an_empty_array():
    got = cumtool.scan(np.zeros((0, 3), dtype=np.int32), "cummax", by=np.zeros(0),
                       indices=True)
    assert got[0].shape == (0, 3) and got[0].dtype == np.int32
    assert got[1].shape == (0, 3) and got[1].dtype == np.int64


@pytest.mark.parametrize(("call", "message"), [
    pytest.param(lambda: cumtool.scan(np.ones(3), "cumsum", by=[1, 2]),
                 "by= has 2 entries, the array 3 along axis 0", id="by-length"),
    pytest.param(lambda: cumtool.scan(np.ones(3), "cumsum", reset=[1, 0]),
                 "reset= needs 3 flags, one per row", id="reset-length"),
    pytest.param(lambda: cumtool.scan(np.ones((2, 2, 2)), "cumsum", by=[1, 2]),
                 "by= and reset= on arrays need a 1-D or 2-D array and axis 0", id="3d"),
    pytest.param(lambda: cumtool.scan(np.ones((2, 2)), "cumsum", axis=1, by=[1, 2]),
                 "by= and reset= on arrays need a 1-D or 2-D array and axis 0", id="axis1"),
    pytest.param(lambda: cumtool.scan(np.ones(2, dtype=complex), "cumsum", by=[1, 2]),
                 "by= and reset= cannot scan complex values", id="complex"),
    pytest.param(lambda: cumtool.scan(np.ones(2), "cumsum", columns=["a"]),
                 "columns=, exclude= and keep= are for Arrow tables", id="columns"),
    pytest.param(lambda: cumtool.scan(np.ones(2), "cumsum", keep=True),
                 "columns=, exclude= and keep= are for Arrow tables", id="keep"),
])
def test_array_option_errors_are_usage_errors(call, message):
    with pytest.raises(UsageError) as caught:
        call()
    assert str(caught.value) == message


# Arrow tables -----------------------------------------------------------------------------


def _table() -> pa.Table:
    return pa.table({
        "region": pa.array(REGION, pa.string()), "store": pa.array(STORE, pa.int64()),
        "flag": pa.array(FLAG, pa.int64()), "qty": pa.array(QTY, pa.int64()),
        "price": pa.array(PRICE, pa.float64()),
    })


def _cli_parquet(invoke: Any, tmp_path: Any, table: pa.Table, op: str,
                 *args: str) -> pa.Table:
    source = tmp_path / "in.parquet"
    pq.write_table(table, source)
    result = invoke(op, str(source), *args, "--batch-rows", "3", "--to", "parquet")
    assert result.exit_code == 0, result.stderr
    return pq.read_table(io.BytesIO(result.stdout_bytes))


def _assert_same_table(got: pa.Table, expected: pa.Table) -> None:
    assert got.schema == expected.schema
    for name in expected.column_names:
        assert_cells(got.column(name).to_pylist(), expected.column(name).to_pylist(),
                     what=name)


# (id, keyword arguments of cumtool.scan, the same as CLI options)
TABLE_CASES = [
    ("by", {"by": "region"}, ["--by", "region"]),
    ("by-list-reset-reverse", {"by": ["region", "store"], "reset": "flag", "reverse": True},
     ["--by", "region,store", "--reset", "flag", "--reverse"]),
    ("by-exclusive-skipna", {"by": "store", "exclusive": True, "skipna": True},
     ["--by", "store", "--exclusive", "--skipna"]),
    ("columns-keep-reverse-exclusive",
     {"columns": ["price", "qty"], "keep": True, "reverse": True, "exclusive": True},
     ["--columns", "price,qty", "--keep", "--reverse", "--exclusive"]),
    ("axis-columns-reverse", {"axis": "columns", "columns": ["qty", "price"],
                              "reverse": True, "exclusive": True},
     ["--axis", "columns", "--columns", "qty,price", "--reverse", "--exclusive"]),
]


@pytest.mark.parametrize(("kwargs", "args"),
                         [pytest.param(k, a, id=name) for name, k, a in TABLE_CASES])
@pytest.mark.parametrize("op", [pytest.param(op, id=op) for op in OPS])
def test_table_results_equal_the_cli(invoke, tmp_path, op, kwargs, args):
    extra: dict[str, Any] = {"indices": True} if op in EXTREMES else {}
    got = cumtool.scan(_table(), op, **kwargs, **extra)
    expected = _cli_parquet(invoke, tmp_path, _table(), op, *args,
                            *(["--indices"] if extra else []))
    assert isinstance(got, pa.Table)
    _assert_same_table(got, expected)


@pytest.mark.parametrize("op", [pytest.param(op, id=op) for op in OPS])
def test_table_by_reset_reverse_equals_the_reference(op):
    extra: dict[str, Any] = {"indices": True} if op in EXTREMES else {}
    got = cumtool.scan(_table(), op, by="region", reset="flag", reverse=True,
                       exclusive=True, **extra)
    assert got.column("region").to_pylist() == REGION
    assert got.column("flag").to_pylist() == FLAG
    for name, integer in (("qty", True), ("price", False)):
        values, positions = ref_scan(COLUMNS[name], op, keys=keys_of(["region"]),
                                     resets=FLAG, reverse=True, exclusive=True,
                                     integer=integer)
        if op == "logcumsumexp":
            values = [None if v is None else float(v) for v in values]
        assert_cells(got.column(name).to_pylist(), values, approx=op == "logcumsumexp",
                     what=name)
        if extra:
            assert got.column(f"{name}_index").to_pylist() == positions


def test_table_default_columns_skip_keys_and_reset_but_scan_other_numbers():
    got = cumtool.scan(_table(), "cumsum", by="region", reset="flag")
    assert got.column("flag").to_pylist() == FLAG
    expected_store, _ = ref_scan(STORE, "cumsum", keys=keys_of(["region"]), resets=FLAG)
    assert got.column("store").to_pylist() == expected_store


def test_record_batch_gives_a_table():
    batch = pa.record_batch({"k": ["a", "b", "a"], "x": [1, 2, 3]})
    got = cumtool.scan(batch, "cumsum", by="k")
    assert isinstance(got, pa.Table)
    assert got.to_pydict() == {"k": ["a", "b", "a"], "x": [1, 2, 4]}


def test_table_keep_and_index_names():
    table = pa.table({"a": [3, 1, 2]})
    kept = cumtool.scan(table, "cummin", keep=True, indices=True)
    assert kept.column_names == ["a", "a_cummin", "a_cummin_index"]
    in_place = cumtool.scan(table, "cummin", indices=True)
    assert in_place.column_names == ["a", "a_index"]
    assert in_place.column("a_index").to_pylist() == [0, 1, 1]


def test_table_exclusive_identity_index_is_null():
    got = cumtool.scan(pa.table({"a": [3, 5, None, 1]}), "cummax", exclusive=True,
                       indices=True)
    assert got.column("a").to_pylist() == [INT64_MIN, 3, None, 5]
    assert got.column("a_index").to_pylist() == [None, 0, None, 1]
    got = cumtool.scan(pa.table({"a": [3.0, 5.0]}), "cummin", exclusive=True)
    assert got.column("a").to_pylist() == [float("inf"), 3.0]
    got = cumtool.scan(pa.table({"a": [3, 5]}), "cummin", exclusive=True)
    assert got.column("a").to_pylist() == [INT64_MAX, 3]


def test_table_decimal_stays_exact_with_by_and_reverse():
    amounts = [Decimal("19.99"), Decimal("0.01"), None, Decimal("0.10"), Decimal("-0.05")]
    table = pa.table({"k": ["a", "b", "a", "a", "b"],
                      "amount": pa.array(amounts, pa.decimal128(12, 2))})
    got = cumtool.scan(table, "cumsum", by="k", reverse=True)
    assert got.schema.field("amount").type == pa.decimal128(38, 2)
    assert got.column("amount").to_pylist() == [Decimal("20.09"), Decimal("-0.04"), None,
                                                Decimal("0.10"), Decimal("-0.05")]
    as_float = cumtool.scan(table, "cumprod", by="k")
    assert as_float.schema.field("amount").type == pa.float64()
    assert as_float.column("amount").to_pylist() == [19.99, 0.01, None, 19.99 * 0.1,
                                                     0.01 * -0.05]


@pytest.mark.parametrize(("kwargs", "error", "message"), [
    pytest.param({"by": "nope"}, DataError,
                 "the table: no column 'nope'; columns: k, r, x", id="by-unknown"),
    pytest.param({"reset": "k"}, DataError,
                 "the table: reset= column 'k' must be boolean or numeric, not string",
                 id="reset-text"),
    pytest.param({"by": "k", "axis": "columns"}, UsageError,
                 "by= and reset= work down the rows; they cannot be used with "
                 "axis='columns'", id="by-across"),
    pytest.param({"keep": True, "columns": ["nope"]}, DataError,
                 "the table: no column 'nope'; columns: k, r, x", id="columns-unknown"),
])
def test_table_option_errors(kwargs, error, message):
    table = pa.table({"k": ["a", "b"], "r": [0, 1], "x": [1, 2]})
    with pytest.raises(error) as caught:
        cumtool.scan(table, "cumsum", **kwargs)
    assert str(caught.value) == message


def test_table_overflow_names_the_row_in_input_order():
    table = pa.table({"k": ["a", "b", "b", "a"], "x": [1, 2**62, 2**62, 1]})
    with pytest.raises(ScanOverflowError) as caught:
        cumtool.scan(table, "cumsum", by="k", reverse=True)
    assert str(caught.value).startswith("the table: column 'x', row 2: cumsum overflows")
    got = cumtool.scan(table, "cumsum", by="k", reverse=True, overflow="wrap")
    assert got.column("x").to_pylist() == [2, 2**63 - 2**64, 2**62, 1]


# Errors carry their place and are worded for Python ----------------------------------------

def test_api_overflow_errors_name_keywords_not_flags():
    with pytest.raises(ScanOverflowError) as caught:
        cumtool.scan(np.array([2**62, 2**62], dtype=np.int64), "cumsum")
    assert str(caught.value) == ("cumsum overflows int64 (adding 4611686018427387904); use "
                                 "overflow='wrap' for wrap-around")
    assert caught.value.position == (1,)
    with pytest.raises(UsageError, match=r"^dtype= 'float' is ambiguous"):
        cumtool.scan(np.ones(2), "cumsum", dtype="float")


def test_api_table_overflow_across_columns_is_a_scan_overflow_error():
    table = pa.table({"a": [1, 2], "b": [2**63 - 1, 0]})
    with pytest.raises(ScanOverflowError) as caught:
        cumtool.scan(table, "cumsum", axis="columns")
    assert caught.value.position == (0, 1)  # row 1 (from 0), the second scanned column
    assert str(caught.value).startswith("the table: row 1, column 'b': cumsum overflows int64")
    assert str(caught.value).endswith("; use overflow='wrap' for wrap-around")


def test_cli_words_the_same_errors_with_flags(invoke):
    result = invoke("cumsum", "--by", "k", "--axis", "columns", input="k,x\na,1\n")
    assert result.stderr == ("Error: --by and --reset work down the rows; they cannot be used "
                             "with --axis columns\n")


# Arguments checked as Click checks them on the command line -------------------------------

@pytest.mark.parametrize("overflow", ["ERROR", "Wrap", "clip", "", None])
def test_an_unknown_overflow_is_refused_not_taken_for_wrap(overflow) -> None:
    # Anything but "error" used to wrap: 2**62 + 2**62 came back negative.
    with pytest.raises(cumtool.UsageError, match="overflow= must be 'error' or 'wrap'"):
        cumtool.scan(np.array([2**62, 2**62]), "cumsum", overflow=overflow)


@pytest.mark.parametrize(("dtype", "expected"), [
    (np.float32, np.float32), (float, np.float64), (np.dtype("int16"), np.int16),
    ("torch.float32", np.float32),
])
def test_dtype_may_be_given_as_numpy_takes_it(dtype, expected) -> None:
    result = cumtool.scan([1.0, 2.0, 4.0], "cumsum", dtype=dtype)
    assert result.dtype == expected
    assert result.tolist() == [1, 3, 7]


@pytest.mark.parametrize(("arguments", "message"), [
    ({"op": ["cumsum"]}, "op= must be a string"),
    ({"op": "cumsum", "dtype": [1]}, r"dtype= \[1\] is not a dtype"),
    ({"op": "cumsum", "dtype": bool}, "dtype= 'bool' is not supported"),
    ({"op": "cumvar", "ddof": 0.5}, "ddof= must be an integer, not 0.5"),
    ({"op": "cumvar", "ddof": "1"}, "ddof= must be an integer, not '1'"),
    ({"op": "cumvar", "ddof": True}, "ddof= must be an integer, not True"),
    ({"op": "ewma", "alpha": "0.5"}, "alpha= must be a number, not '0.5'"),
], ids=["op-list", "dtype-list", "dtype-bool", "ddof-float", "ddof-text", "ddof-bool",
        "alpha-text"])
def test_bad_arguments_are_usage_errors(arguments, message) -> None:
    with pytest.raises(cumtool.UsageError, match=message):
        cumtool.scan([1.0, 2.0, 4.0], **arguments)


def test_a_ragged_list_is_a_data_error() -> None:
    with pytest.raises(cumtool.DataError, match="needs a rectangular array"):
        cumtool.scan([[1, 2], [3]], "cumsum")


@pytest.mark.parametrize("op", ["cumsum", "cumsum,cummax"])
def test_a_files_overflow_names_its_line_as_the_cli(invoke, tmp_path, op):
    """A CSV's row is named with the line it starts on, as on the command line ("row 3
    (line 6)": a blank line and a newline in quotes come before it); a table in memory
    has rows only."""
    path = tmp_path / "o.csv"
    path.write_text('x,note\n1,"two\nlines"\n\n2,n\n9223372036854775807,n\n')
    with pytest.raises(ScanOverflowError) as caught:
        cumtool.scan(str(path), op, columns=["x"])
    assert str(caught.value) == (f"{path}: column 'x', row 3 (line 6): cumsum overflows int64 "
                                 "(adding 9223372036854775807); use overflow='wrap' for "
                                 "wrap-around")
    cli = invoke(op, str(path), "-c", "x")
    assert cli.stderr == ("Error: " + str(caught.value).replace("overflow='wrap'",
                                                                "--overflow wrap") + "\n")


def test_a_files_other_columns_come_back_typed_as_the_cli_writes_arrow(invoke, tmp_path):
    """A table is a typed output: the columns not scanned hold numbers and dates as the
    CLI's Arrow IPC and Parquet outputs hold them, not their text (codes stay text)."""
    path = tmp_path / "t.csv"
    path.write_text("n,price,day,code,name\n1,1.50,2024-01-01,007,a\n2,,2024-02-29,008,b\n")
    table = cumtool.scan(str(path), "cumsum", columns=["n"])
    assert [str(t) for t in table.schema.types] == ["int64", "double", "date32[day]",
                                                   "large_string", "large_string"]
    assert table.column("price").to_pylist() == [1.5, None]
    cli = invoke("cumsum", str(path), "-c", "n", "--to", "arrow")
    assert table.equals(pa.ipc.open_file(pa.BufferReader(cli.stdout_bytes)).read_all())


@pytest.mark.parametrize(("keywords", "flags"), [
    ({"period": "day"}, ["--period", "day"]),
    ({"time": "x"}, ["--time", "x"]),
    ({"year_start": "04-01"}, ["--year-start", "04-01"]),
    ({"share": True, "op": "cummax"}, ["--share"]),
    ({"exclusive": True, "op": "diff"}, ["--exclusive"]),
    ({"times": "x", "alpha": 0.5, "op": "ewma"}, ["--times", "x", "--alpha", "0.5"]),
], ids=["period", "time", "year-start", "share", "exclusive", "times"])
def test_a_files_usage_errors_come_before_its_data_errors_as_on_the_cli(invoke, tmp_path,
                                                                        keywords, flags):
    """The command line refuses a misuse before it reads the input; so does the API (it
    read the file first, and said the data error of a short row instead), in the same
    words."""
    path = tmp_path / "short.csv"
    path.write_text("x,y\n1\n")
    op = keywords.pop("op", "cumsum")
    with pytest.raises(UsageError) as caught:
        cumtool.scan(str(path), op, **keywords)
    cli = invoke(op, str(path), *flags)
    assert cli.exit_code == 2
    assert cli.stderr == f"Error: {caught.value.cli_message()}\n"


def test_a_files_share_overflow_names_its_line_as_the_cli(invoke, tmp_path):
    """--share's first pass, which finds the final values, names the row's line too."""
    path = tmp_path / "o.csv"
    path.write_text("x\n\n9223372036854775807\n1\n")
    with pytest.raises(ScanOverflowError) as caught:
        cumtool.scan(str(path), "cumsum", share=True)
    assert str(caught.value).startswith(f"{path}: column 'x', row 2 (line 4): ")
    cli = invoke("cumsum", str(path), "--share")
    assert cli.stderr == f"Error: {caught.value.cli_message()}\n"


def test_the_modules_api_md_names_are_reached_from_a_plain_import(tmp_path):
    """`cumtool.engine.run(...)` after `import cumtool` alone, as docs/api.md writes it
    (a fresh interpreter: in this one another test has imported them already)."""
    import subprocess
    import sys

    (tmp_path / "in.csv").write_text("a\n1\n2\n")
    code = ("import cumtool; cumtool.engine.run(cumtool.engine.Request(op='cumsum', "
            "input='in.csv', output='out.csv')); print(cumtool.columns.parse.__name__)")
    done = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True,
                          text=True, check=False)
    assert (done.returncode, done.stdout, done.stderr) == (0, "parse\n", "")
    assert (tmp_path / "out.csv").read_text() == "a\n1\n3\n"


def test_a_dask_dataframe_is_scanned_as_the_pandas_frame_it_computes_to():
    """numpy.asarray made it one float array: NaN spread, integers became floats."""
    import dask.dataframe as dd
    import pandas as pd

    frame = pd.DataFrame({"a": [1, 2, 3, 4, 5], "b": [0.5, None, 1.5, 2.0, float("inf")]})
    result = cumtool.scan(dd.from_pandas(frame, npartitions=3), "cumsum")
    assert isinstance(result, pd.DataFrame)
    assert result.equals(cumtool.scan(frame, "cumsum"))
    assert result["a"].tolist() == [1, 3, 6, 10, 15]
    column = cumtool.scan(dd.from_pandas(frame, npartitions=2)["a"], "cumsum")
    assert column.tolist() == [1, 3, 6, 10, 15]


def test_a_closed_file_object_is_a_usage_error():
    """It was the file's bare ValueError, not one of cumtool's errors."""
    import io

    from cumtool.errors import UsageError

    given = io.BytesIO(b"a\n1\n")
    given.close()
    with pytest.raises(UsageError, match=r"^the file object given is closed: give it open, "
                                         r"or its path$"):
        cumtool.scan(given, "cumsum")


def test_to_on_an_npy_path_is_the_usage_error_it_says(tmp_path):
    """It was an UnboundLocalError: a local import of UsageError in the same function."""
    path = tmp_path / "a.npy"
    np.save(path, np.arange(3))
    with pytest.raises(UsageError) as caught:
        cumtool.scan(str(path), "cumsum", to="pandas")
    assert str(caught.value) == f"to= is for tables; {path} is an array"
    assert cumtool.scan(str(path), "cumsum").tolist() == [0, 1, 3]


def test_a_csv_too_wide_for_the_api_is_the_usage_error_it_says(tmp_path):
    """The same UnboundLocalError, for a CSV of more columns than the API reads."""
    path = tmp_path / "wide.csv"
    path.write_text(",".join(f"c{i}" for i in range(9000)) + "\n" + ",".join("1" * 9000)
                    + "\n")
    with pytest.raises(UsageError, match=r"has too many columns for cumtool\.scan; use the "
                                         r"command line$"):
        cumtool.scan(str(path), "cumsum")


@pytest.mark.parametrize(("keywords", "message"), [
    ({"reverse": "false"}, "reverse= must be True or False, not 'false'"),
    ({"exclusive": "no"}, "exclusive= must be True or False, not 'no'"),
    ({"skipna": 1}, "skipna= must be True or False, not 1"),
    ({"indices": "no", "op": "cummax"}, "indices= must be True or False, not 'no'"),
    ({"keep": "no", "data": pa.table({"x": [1.0]})}, "keep= must be True or False, not 'no'"),
    ({"share": "no", "data": pa.table({"x": [1.0]})},
     "share= must be True or False, not 'no'"),
    ({"adjust": None, "op": "ewma", "alpha": 0.5}, "adjust= must be True or False, not None"),
    ({"compensated": "yes"}, "compensated= must be True or False, not 'yes'"),
])
def test_flags_take_true_or_false_only(keywords, message) -> None:
    """Any truthy value was taken as True ("false" reversed the scan) and adjust=None as
    False, where pandas refuses skipna="false"."""
    data = keywords.pop("data", [1.0, 2.0])
    with pytest.raises(UsageError) as caught:
        cumtool.scan(data, keywords.pop("op", "cumsum"), **keywords)
    assert str(caught.value) == message


def test_numpys_bools_are_flags() -> None:
    assert cumtool.scan([1.0, 2.0], "cumsum", reverse=np.True_).tolist() == [3.0, 2.0]
    assert cumtool.scan([1.0, 2.0], "cumsum", reverse=np.False_).tolist() == [1.0, 3.0]


def test_a_csv_of_numbers_with_missing_cells_does_not_import_pandas(tmp_path):
    """Judging a column with missing cells took their flags through Array.to_numpy, which
    imports pandas (0.2 s); api.md: pandas is imported only for objects of its own."""
    import subprocess
    import sys

    (tmp_path / "in.csv").write_text("a,b\n1,2\n,3\n3,\n")
    code = ("import sys, cumtool; t = cumtool.scan('in.csv', 'cumsum'); "
            "print(t.to_pydict(), 'pandas' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True,
                          text=True, check=False)
    assert (done.returncode, done.stderr) == (0, "")
    assert done.stdout == "{'a': [1, None, 4], 'b': [2, 5, None]} False\n"


def test_array_by_takes_byte_swapped_and_complex_keys():
    """A big-endian array (from a file written elsewhere) and complex keys were raw
    Arrow errors; a complex key is its two parts."""
    values = np.array([1.0, 2.0, 4.0], dtype=">f8")
    got = cumtool.scan(values, "cumsum", by=np.array([1, 2, 1], dtype=">i4"))
    assert got.tolist() == [1.0, 2.0, 5.0] and got.dtype == np.float64
    assert cumtool.scan(values, "cumsum", reset=[0, 1, 0]).tolist() == [1.0, 2.0, 6.0]
    keys = np.array([1 + 1j, 1 + 2j, 1 + 1j])
    assert cumtool.scan([1, 2, 4], "cumsum", by=keys).tolist() == [1, 2, 5]


@pytest.mark.parametrize("keywords, message", [
    ({"by": "k"}, "by= on an array is an array with one entry per position along axis 0; "
                  "a column's name ('k') is for tables"),
    ({"reset": "k"}, "reset= on an array is an array with one entry per position along "
                     "axis 0; a column's name ('k') is for tables"),
    ({"by": 5}, "by= has one key, the array 3 along axis 0"),
    ({"by": np.array([1, "a", 1], dtype=object)},
     "by= needs keys of one kind in each column (numbers, text, dates...): Could not "
     "convert 'a' with type str: tried to convert to int64"),
], ids=["by-name", "reset-name", "by-scalar", "by-mixed"])
def test_array_by_errors_name_the_keyword(keywords, message):
    """They were an IndexError and raw Arrow errors."""
    with pytest.raises(UsageError) as caught:
        cumtool.scan(np.array([1.0, 2.0, 4.0]), "cumsum", **keywords)
    assert str(caught.value) == message


def test_array_by_with_numeric_keys_does_not_import_pandas(tmp_path):
    """pa.table() of numpy arrays and ChunkedArray.to_numpy both import pandas."""
    import subprocess
    import sys

    code = ("import sys, cumtool; print(cumtool.scan([1.0, 2.0, 4.0], 'cumsum', "
            "by=[1, 2, 1]).tolist(), 'pandas' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True,
                          text=True, check=False)
    assert (done.returncode, done.stdout, done.stderr) == (0, "[1.0, 2.0, 5.0] False\n", "")


def test_a_pyarrow_array_keeps_its_missing_cells_and_its_kind():
    """It went through numpy.asarray: [1, None, 3] became [1., nan, nan]."""
    got = cumtool.scan(pa.chunked_array([[1, None], [3]]), "cumsum")
    assert isinstance(got, pa.ChunkedArray)
    assert got.type == pa.int64() and got.to_pylist() == [1, None, 4]
    got = cumtool.scan(pa.array([1, None, 3], pa.int32()), "cumsum")
    assert isinstance(got, pa.Array) and got.type == pa.int64()
    assert got.to_pylist() == [1, None, 4]
    values, indices = cumtool.scan(pa.array([1, 3, None, 2]), "cummax", indices=True)
    assert values.to_pylist() == [1, 3, None, 3] and indices.to_pylist() == [0, 1, None, 1]
    assert cumtool.scan(pa.array(["a", "b", "a"]), "cumnunique").to_pylist() == [1, 2, 2]
    by = cumtool.scan(pa.array([1, None, 3, 4]), "cumsum", by=[1, 2, 1, 2], reverse=True)
    assert by.to_pylist() == [4, None, 3, 4]
    with pytest.raises(ScanOverflowError) as caught:
        cumtool.scan(pa.array([2**62, 2**62]), "cumsum")
    assert caught.value.position == (1,)
    assert str(caught.value) == ("cumsum overflows int64 (adding 4611686018427387904); use "
                                 "overflow='wrap' for wrap-around")
    with pytest.raises(UsageError, match="columns=, exclude= and keep= are for Arrow tables"):
        cumtool.scan(pa.array([1]), "cumsum", keep=True)


@pytest.mark.parametrize("given", [lambda: io.StringIO("a\n1\n"),
                                   lambda: open(__file__, encoding="utf-8")],
                         ids=["stringio", "text-file"])
def test_a_text_mode_file_object_is_asked_for_in_binary_mode(given):
    """It was taken for an array of Python objects ("needs a numeric array")."""
    data = given()
    with data, pytest.raises(UsageError) as caught:
        cumtool.scan(data, "cumsum")
    assert str(caught.value) == ("the file object given is in text mode: open it in binary "
                                 "mode ('rb'), or give its path")


@pytest.mark.parametrize("axis, message", [
    ("foo", "axis='foo' is not an axis of a 2-d array; give 'rows', 'columns' or an integer "
            "from -2 to 1"),
    (5, "axis=5 is not an axis of a 2-d array; give 'rows', 'columns' or an integer from "
        "-2 to 1"),
    (1.0, "axis=1.0 is not an axis of a 2-d array; give 'rows', 'columns' or an integer "
          "from -2 to 1"),
    (None, "axis=None is not an axis of a 2-d array; give 'rows', 'columns' or an integer "
           "from -2 to 1"),
])
def test_an_arrays_bad_axis_is_worded_as_a_keyword(axis, message):
    """It said --axis, the command line's spelling, quoted numbers ('5'), and took 1.0,
    True and None for text (axis= '1.0' is not an axis ... of a .npy array)."""
    with pytest.raises(UsageError) as caught:
        cumtool.scan(np.ones((2, 2)), "cumsum", axis=axis)
    assert str(caught.value) == message


def test_a_request_with_a_mistyped_keyword_is_a_usage_error():
    """api.md: a misuse of engine.Request raises cumtool.UsageError; a mistyped keyword
    raised Python's plain TypeError. It is both now, as scan()'s is."""
    from cumtool.engine import Request

    with pytest.raises(cumtool.UsageError) as raised:
        Request(op="cumsum", input="in.csv", revrse=True)
    assert isinstance(raised.value, TypeError)
    assert str(raised.value) == ("Request() got an unexpected keyword argument 'revrse'; "
                                 "did you mean reverse=?")
    assert Request(op="cumsum", input="in.csv", reverse=True).reverse is True


@pytest.mark.parametrize("data", [np.array([1, 2, 3]), pa.array([1, 2, 3]),
                                  pa.chunked_array([[1, 2], [3]])],
                         ids=["numpy", "arrow", "chunked"])
def test_several_ops_on_an_array_are_refused_as_for_tables(data):
    """An Arrow array with several ops came back as the input itself (the one-column
    table's kept column), and with indices= raised a KeyError; a numpy array's message
    was 'unknown operation'."""
    for keywords in ({}, {"indices": True}):
        with pytest.raises(UsageError) as caught:
            cumtool.scan(data, "cumsum,cummax", **keywords)
        assert str(caught.value) == ("several ops (cumsum,cummax) are for tables; scan an "
                                     "array one op at a time")
