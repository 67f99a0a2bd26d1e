"""Property tests: cumtool agrees with the independent reference (tests/reference.py) on
random arrays of every dtype and rank, through `cumtool.scan` and through the engine on
.npy and Parquet files split into random small batches; outputs read back lose nothing.

Real results are compared bit for bit (NaN placement, infinities, the sign of zeros);
logcumsumexp and complex products go through transcendental functions or complex
multiplication whose last bit the contract does not pin down, so those are compared to
a few units in the last place, with special values still placed exactly.

More examples: CUMTOOL_HYPOTHESIS_PROFILE=cumtool-deep python -m pytest tests/test_properties.py
"""

from __future__ import annotations

import math
import os
import re
import tempfile
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from reference import (
    FLOAT_TO_INT_WRAP_LIMIT,
    OPS,
    Expected,
    ReferenceOverflow,
    Undefined,
    reference_scan,
)

import cumtool
from cumtool.engine import Request, run

# Hypothesis property tests against the reference: `-m 'not slow'` leaves them out.
pytestmark = pytest.mark.slow

settings.register_profile(
    "cumtool-fast", max_examples=100, deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
settings.register_profile(
    "cumtool-deep", max_examples=2000, deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
PROFILE = settings.get_profile(os.environ.get("CUMTOOL_HYPOTHESIS_PROFILE", "cumtool-fast"))

ARRAY_DTYPES = [np.dtype(name) for name in (
    "bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
    "float16", "float32", "float64", "complex64", "complex128",
)]
TABLE_DTYPES = [np.dtype(name) for name in (
    "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
    "float16", "float32", "float64",
)]
# --dtype spellings (numpy's and torch's) and what they mean.
CASTS = {
    "int8": "int8", "int16": "int16", "int32": "int32", "int64": "int64", "uint8": "uint8",
    "float16": "float16", "float32": "float32", "float64": "float64",
    "complex64": "complex64", "complex128": "complex128",
    "torch.int32": "int32", "long": "int64", "torch.int": "int32", "short": "int16",
    "half": "float16", "torch.float": "float32", "double": "float64",
    "torch.float64": "float64",
    "cfloat": "complex64", "cdouble": "complex128",
}
CAST_NAMES = sorted(CASTS)


# Strategies -----------------------------------------------------------------------------

def elements(dtype: np.dtype, op: str) -> st.SearchStrategy[Any]:
    """Values that hit the edges: extremes of every integer type (so sums and products
    overflow), NaN, +-inf, -0.0 and subnormals, and small values that tie and repeat."""
    if dtype.kind == "b":
        return st.booleans()
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        small = st.integers(max(int(info.min), -3), 3)
        return st.one_of(small, st.integers(int(info.min), int(info.max)),
                         st.sampled_from([int(info.min), int(info.max)]))
    if dtype.kind == "f":
        width = dtype.itemsize * 8
        return st.one_of(st.floats(width=width),
                         st.sampled_from([0.0, -0.0, 1.0, -1.0, math.inf, -math.inf, math.nan]))
    width = dtype.itemsize * 8
    if op == "cumsum":
        return st.complex_numbers(width=width, allow_nan=True, allow_infinity=True)
    # Products and log-sum-exp go through complex multiplication and exp/log, compared
    # with a tolerance: keep them finite and moderate so the tolerance means something.
    return st.complex_numbers(width=width, max_magnitude=20.0)


@st.composite
def array_cases(draw: st.DrawFn, max_rank: int = 4) -> dict[str, Any]:
    op = draw(st.sampled_from(OPS))
    dtype = draw(st.sampled_from(ARRAY_DTYPES))
    shape = draw(hnp.array_shapes(min_dims=0, max_dims=max_rank, min_side=0, max_side=4))
    data = draw(hnp.arrays(dtype, shape, elements=elements(dtype, op)))
    cast_name = draw(st.one_of(st.none(), st.sampled_from(CAST_NAMES)))
    ndim = max(data.ndim, 1)
    return dict(
        op=op, data=data, cast_name=cast_name,
        cast=None if cast_name is None else np.dtype(CASTS[cast_name]),
        axis=draw(st.integers(-ndim, ndim - 1)),
        overflow=draw(st.sampled_from(["error", "wrap"])),
        skipna=draw(st.booleans()),
        batch_rows=draw(st.integers(1, 5)),
    )


# Comparison ----------------------------------------------------------------------------

def float_to_int_wrap_undefined(case: dict[str, Any]) -> bool:
    """A float beyond 2**31 cast to an integer with wrap-around: C (and so torch) leaves
    the value undefined; the contract has nothing to say about it."""
    cast, data = case["cast"], case["data"]
    if case["overflow"] != "wrap" or cast is None or cast.kind not in "iu":
        return False
    if data.dtype.kind not in "fc":
        return False
    real = np.asarray(data.real if data.dtype.kind == "c" else data, np.float64)
    finite = real[np.isfinite(real)]
    return bool(np.any(np.abs(np.trunc(finite)) >= FLOAT_TO_INT_WRAP_LIMIT))


def expected_or_error(case: dict[str, Any], **extra: Any) -> Expected | Exception:
    try:
        return reference_scan(case["data"], case["op"], case["axis"], case["cast"],
                              overflow=case["overflow"], skipna=case["skipna"], **extra)
    except (ReferenceOverflow, Undefined) as error:
        return error


def assert_matches(op: str, got: np.ndarray, expected: np.ndarray,
                   skipped: np.ndarray | None = None, line_length: int = 1) -> None:
    """Bit for bit for real results; logcumsumexp and complex products to a few ulps."""
    got = np.asarray(got)
    assert got.dtype == expected.dtype, (got.dtype, expected.dtype)
    assert got.shape == expected.shape, (got.shape, expected.shape)
    if skipped is not None and skipped.any():  # missing cells: only their placement counts
        got = np.where(skipped, np.zeros((), got.dtype), got)
        expected = np.where(skipped, np.zeros((), expected.dtype), expected)
    kind = got.dtype.kind
    if kind not in "fc":
        assert np.array_equal(got, expected), f"\n got {got!r}\nwant {expected!r}"
        return
    parts = [(got, expected)] if kind == "f" else [(got.real, expected.real),
                                                    (got.imag, expected.imag)]
    exact = op in ("cumsum", "cummax", "cummin") or (op == "cumprod" and kind == "f")
    for g, e in parts:
        assert np.array_equal(np.isnan(g), np.isnan(e)), f"NaN at\n{g!r}\nwant\n{e!r}"
        if exact:
            assert np.array_equal(g, e, equal_nan=True), f"\n got {g!r}\nwant {e!r}"
            both_zero = (g == 0) & (e == 0)
            assert np.array_equal(np.signbit(g[both_zero]), np.signbit(e[both_zero])), \
                f"sign of zero:\n got {g!r}\nwant {e!r}"
            continue
        assert np.array_equal(np.isposinf(g), np.isposinf(e)), f"\n got {g!r}\nwant {e!r}"
        assert np.array_equal(np.isneginf(g), np.isneginf(e)), f"\n got {g!r}\nwant {e!r}"
        finite = np.isfinite(e)
        eps = float(np.finfo(got.dtype).eps)
        scale = float(np.max(np.abs(e[finite]), initial=1.0))
        np.testing.assert_allclose(
            g[finite], e[finite], rtol=4 * eps * (line_length + 2),
            atol=4 * eps * (line_length + 2) * scale)


def assert_result(case: dict[str, Any], expected: Expected, values: np.ndarray,
                  indices: np.ndarray | None) -> None:
    data = case["data"]
    length = data.shape[case["axis"]] if data.ndim else 1
    assert_matches(case["op"], values, expected.values, line_length=length)
    if case["op"] in ("cummax", "cummin"):
        assert indices is not None
        assert indices.dtype == np.int64
        assert np.array_equal(indices, expected.indices), f"\n got {indices}\nwant " \
                                                          f"{expected.indices}"


# cumtool.scan ---------------------------------------------------------------------------

@PROFILE
@given(array_cases())
def test_scan_matches_reference(case: dict[str, Any]) -> None:
    assume(not float_to_int_wrap_undefined(case))
    expected = expected_or_error(case)
    indices = case["op"] in ("cummax", "cummin")
    call = dict(axis=case["axis"], dtype=case["cast_name"], overflow=case["overflow"],
                skipna=case["skipna"], indices=indices)
    if isinstance(expected, ReferenceOverflow):
        with pytest.raises(cumtool.ScanOverflowError):
            cumtool.scan(case["data"], case["op"], **call)
        return
    if isinstance(expected, Undefined):
        with pytest.raises(cumtool.CumtoolError, match=r"not defined for complex|needs a "
                                                       r"floating or complex"):
            cumtool.scan(case["data"], case["op"], **call)
        return
    result = cumtool.scan(case["data"], case["op"], **call)
    values, positions = result if indices else (result, None)
    assert_result(case, expected, values, positions)


# The engine on .npy files, in small batches ------------------------------------------------

def run_npy(case: dict[str, Any], directory: Path) -> tuple[np.ndarray, np.ndarray | None]:
    source = directory / "in.npy"
    np.save(source, case["data"])
    indices = case["op"] in ("cummax", "cummin")
    target = directory / ("out.npz" if indices else "out.npy")
    run(Request(op=case["op"], input=str(source), output=str(target),
                axis=str(case["axis"]), dtype=case["cast_name"],
                overflow=case["overflow"], skipna=case["skipna"], indices=indices,
                batch_rows=case["batch_rows"]))
    if indices:
        with np.load(target) as archive:
            assert sorted(archive.files) == ["indices", "values"]
            return archive["values"], archive["indices"]
    return np.load(target), None


@PROFILE
@given(array_cases())
def test_engine_on_npy_files_matches_reference(case: dict[str, Any]) -> None:
    assume(not float_to_int_wrap_undefined(case))
    expected = expected_or_error(case)
    with tempfile.TemporaryDirectory() as name:
        directory = Path(name)
        if isinstance(expected, Exception):
            error = (cumtool.DataError if isinstance(expected, ReferenceOverflow)
                     else cumtool.CumtoolError)
            with pytest.raises(error):
                run_npy(case, directory)
            assert sorted(p.name for p in directory.iterdir()) == ["in.npy"]
            return
        values, positions = run_npy(case, directory)
        assert sorted(p.name for p in directory.iterdir())[0] == "in.npy"
    assert_result(case, expected, values, positions)


@PROFILE
@given(array_cases(max_rank=3), st.sampled_from(["cumsum", "cummax"]))
def test_batch_size_never_changes_a_result(case: dict[str, Any], op: str) -> None:
    """Difference 4: identical bits however the input is split."""
    case = dict(case, op=op, overflow="wrap", cast_name=None, cast=None)
    assume(case["data"].dtype.kind != "c" or op == "cumsum")
    with tempfile.TemporaryDirectory() as name:
        whole, whole_indices = run_npy(dict(case, batch_rows=10**6), Path(name))
    with tempfile.TemporaryDirectory() as name:
        split, split_indices = run_npy(case, Path(name))
    assert whole.dtype == split.dtype
    assert whole.tobytes() == split.tobytes()
    if whole_indices is not None:
        assert split_indices is not None
        assert np.array_equal(whole_indices, split_indices)


# The engine on Parquet tables with missing cells -----------------------------------------

@st.composite
def table_cases(draw: st.DrawFn) -> dict[str, Any]:
    op = draw(st.sampled_from(OPS))
    rows = draw(st.integers(0, 9))
    width = draw(st.integers(1, 3))
    dtypes = [draw(st.sampled_from(TABLE_DTYPES)) for _ in range(width)]
    columns = [draw(hnp.arrays(d, rows, elements=elements(d, op))) for d in dtypes]
    valid = [draw(hnp.arrays(np.bool_, rows, elements=st.booleans())) for _ in dtypes]
    cast_name = draw(st.one_of(st.none(), st.sampled_from(CAST_NAMES)))
    return dict(
        op=op, columns=columns, valid=valid, cast_name=cast_name,
        cast=None if cast_name is None else np.dtype(CASTS[cast_name]),
        axis=draw(st.sampled_from(["rows", "columns"])),
        overflow=draw(st.sampled_from(["error", "wrap"])),
        skipna=draw(st.booleans()),
        batch_rows=draw(st.integers(1, 4)),
        output=draw(st.sampled_from(["out.parquet", "out.csv"])),
    )


def table_expectations(case: dict[str, Any]) -> list[Expected] | Exception:
    """One Expected per column: down each column, or across the rows of the block of all
    columns promoted to numpy's result_type."""
    try:
        if case["axis"] == "rows":
            return [reference_scan(values, case["op"], 0, case["cast"],
                                   overflow=case["overflow"], skipna=case["skipna"],
                                   valid=valid)
                    for values, valid in zip(case["columns"], case["valid"], strict=True)]
        common = np.result_type(*[c.dtype for c in case["columns"]])
        block = np.stack([c.astype(common) for c in case["columns"]], axis=1)
        valid = np.stack(case["valid"], axis=1)
        whole = reference_scan(block, case["op"], 1, case["cast"], overflow=case["overflow"],
                               skipna=case["skipna"], valid=valid)
    except (ReferenceOverflow, Undefined) as error:
        return error
    return [Expected(whole.values[:, i],
                     None if whole.indices is None else whole.indices[:, i],
                     whole.skipped[:, i])
            for i in range(len(case["columns"]))]


def read_csv_output(path: Path, schema: dict[str, np.dtype]) -> dict[str, tuple[np.ndarray,
                                                                               np.ndarray]]:
    """Parse cumtool's CSV by hand: each cell must be the exact text of its value."""
    lines = path.read_text().splitlines()
    header = lines[0].split(",")
    assert header == list(schema)
    # A lone empty cell is written "" (an empty line would be a blank line, no row).
    cells = [line.split(",") if line != '""' else [""] for line in lines[1:]]
    out = {}
    for j, (name, dtype) in enumerate(schema.items()):
        texts = [row[j] for row in cells]
        missing = np.array([t == "" for t in texts], bool)
        if dtype.kind in "iu":
            assert all(re.fullmatch(r"-?\d+", t) for t in texts if t), texts
            values = np.array([int(t) if t else 0 for t in texts], dtype=dtype)
        else:
            values = np.array([dtype.type(t) if t else 0 for t in texts], dtype=dtype)
        out[name] = (values, missing)
    return out


@PROFILE
@given(table_cases())
def test_engine_on_parquet_tables_matches_reference(case: dict[str, Any]) -> None:
    names = [str(i) for i in range(len(case["columns"]))]
    common = np.result_type(*[c.dtype for c in case["columns"]])
    for values in case["columns"]:
        scanned = values if case["axis"] == "rows" else values.astype(common)
        assume(not float_to_int_wrap_undefined(dict(case, data=scanned)))
    source_table = pa.table({
        name: pa.array(values, mask=~valid)
        for name, values, valid in zip(names, case["columns"], case["valid"], strict=True)})
    expected = table_expectations(case)
    if case["cast"] is not None and case["cast"].kind == "c":
        expected = Undefined("a table cannot hold complex values")
    indices = case["op"] in ("cummax", "cummin")
    with tempfile.TemporaryDirectory() as name:
        directory = Path(name)
        pq.write_table(source_table, directory / "in.parquet")
        target = directory / case["output"]
        request = Request(op=case["op"], input=str(directory / "in.parquet"),
                          output=str(target), axis=case["axis"], dtype=case["cast_name"],
                          overflow=case["overflow"], skipna=case["skipna"], indices=indices,
                          batch_rows=case["batch_rows"])
        if isinstance(expected, Exception):
            with pytest.raises(cumtool.DataError if isinstance(expected, ReferenceOverflow)
                               else cumtool.CumtoolError):
                run(request)
            assert not target.exists()
            return
        run(request)
        out_schema: dict[str, np.dtype] = {}
        for column, exp in zip(names, expected, strict=True):
            out_schema[column] = exp.values.dtype
            if indices:
                out_schema[f"{column}_index"] = np.dtype(np.int64)
        if case["output"].endswith(".parquet"):
            table = pq.read_table(target)
            assert table.column_names == list(out_schema)
            got = {}
            for column in table.column_names:
                arrow = table.column(column)
                assert arrow.type == pa.from_numpy_dtype(out_schema[column]), column
                missing = arrow.is_null().to_numpy(zero_copy_only=False)
                filled = arrow.fill_null(pa.scalar(0, arrow.type)) if arrow.null_count else arrow
                got[column] = (filled.to_numpy(zero_copy_only=False), missing)
        else:
            got = read_csv_output(target, out_schema)
    for column, valid, exp in zip(names, case["valid"], expected, strict=True):
        values, missing = got[column]
        assert np.array_equal(missing, ~valid), (column, missing, valid)
        assert_matches(case["op"], values.astype(exp.values.dtype), exp.values,
                       skipped=~valid, line_length=max(len(valid), len(names)))
        if indices:
            positions, no_position = got[f"{column}_index"]
            assert exp.indices is not None
            assert np.array_equal(no_position, exp.indices == -1)
            assert np.array_equal(np.where(no_position, -1, positions), exp.indices)


# Outputs read back lose nothing ----------------------------------------------------------------

FLOAT_TYPES = [np.dtype(np.float16), np.dtype(np.float32), np.dtype(np.float64)]


@PROFILE
@given(st.sampled_from(FLOAT_TYPES).flatmap(
    lambda d: hnp.arrays(d, hnp.array_shapes(min_dims=1, max_dims=2, max_side=6),
                         elements=elements(d, "cummax"))),
       st.sampled_from(["cummax", "cumsum"]), st.integers(1, 4))
def test_csv_and_parquet_outputs_hold_the_exact_floats(data: np.ndarray, op: str,
                                                      batch_rows: int) -> None:
    """Floats are written as the shortest text that reads back to the same bits."""
    with tempfile.TemporaryDirectory() as name:
        directory = Path(name)
        np.save(directory / "in.npy", data)
        results = {}
        for output in ("out.npy", "out.csv", "out.parquet"):
            run(Request(op=op, input=str(directory / "in.npy"),
                        output=str(directory / output), batch_rows=batch_rows))
        exact = np.load(directory / "out.npy").reshape(data.shape[0], -1)
        names = {str(i): data.dtype for i in range(exact.shape[1])}
        results = read_csv_output(directory / "out.csv", names)
        table = pq.read_table(directory / "out.parquet")
    for i in range(exact.shape[1]):
        from_text, missing = results[str(i)]
        assert not missing.any()
        column = table.column(str(i)).to_numpy()
        assert column.dtype == from_text.dtype == exact.dtype == data.dtype
        for read_back in (from_text, column):
            assert np.array_equal(read_back, exact[:, i], equal_nan=True)
            number = ~np.isnan(read_back)  # a NaN's sign bit is not part of its value
            assert np.array_equal(np.signbit(read_back[number]),
                                  np.signbit(exact[:, i][number]))


@PROFILE
@given(st.lists(st.one_of(st.none(), st.integers(-(2**40), 2**40)), max_size=12),
       st.sampled_from(["cumsum", "cummax", "cummin", "cumprod"]), st.integers(1, 4))
def test_integer_column_with_missing_cells_stays_integer(cells: list[int | None], op: str,
                                                        batch_rows: int) -> None:
    """CSV in, CSV out, CSV in again: an integer column with empty cells never turns into
    floats (no '.0', no rounding), and the empty cells stay empty."""
    assume(any(c is not None for c in cells))
    # A missing cell of a one-column CSV is "": an empty line is a blank line, not a row.
    text = "n\n" + "".join(('""' if c is None else str(c)) + "\n" for c in cells)
    values = np.array([0 if c is None else c for c in cells], np.int64)
    valid = np.array([c is not None for c in cells], bool)
    with tempfile.TemporaryDirectory() as name:
        directory = Path(name)
        (directory / "in.csv").write_text(text)
        try:
            expected = reference_scan(values, op, valid=valid)
        except ReferenceOverflow:
            with pytest.raises(cumtool.DataError, match="overflow"):
                run(Request(op=op, input=str(directory / "in.csv"),
                            output=str(directory / "a.csv"), batch_rows=batch_rows))
            assert not (directory / "a.csv").exists()
            return
        run(Request(op=op, input=str(directory / "in.csv"), output=str(directory / "a.csv"),
                    batch_rows=batch_rows))
        got, missing = read_csv_output(directory / "a.csv", {"n": np.dtype(np.int64)})["n"]
        # Read back by cumtool itself: cummax of a running max changes nothing, and the
        # column is still int64 in the Parquet it writes.
        run(Request(op="cummax" if op != "cummin" else "cummin",
                    input=str(directory / "a.csv"), output=str(directory / "b.parquet"),
                    batch_rows=batch_rows))
        again = pq.read_table(directory / "b.parquet").column("n")
    assert np.array_equal(missing, ~valid)
    assert np.array_equal(got[valid], expected.values[valid])
    assert again.type == pa.int64()
    if op in ("cummax", "cummin"):
        assert again.to_pylist() == [None if m else int(v) for v, m in zip(got, missing,
                                                                           strict=True)]


@PROFILE
@given(hnp.arrays(np.float64, st.integers(1, 10), elements=st.floats(allow_nan=False)))
def test_csv_input_floats_are_read_exactly(data: np.ndarray) -> None:
    """Every float written with repr() is read back to the same double."""
    text = "x\n" + "".join(f"{float(v)!r}\n" for v in data)
    with tempfile.TemporaryDirectory() as name:
        directory = Path(name)
        (directory / "in.csv").write_text(text)
        run(Request(op="cummin", input=str(directory / "in.csv"),
                    output=str(directory / "out.parquet"), batch_rows=3))
        got = pq.read_table(directory / "out.parquet").column("x").to_numpy()
    assert_matches("cummin", got, reference_scan(data, "cummin").values)


# Fixed cases the properties rest on: the reference and the CSV parser checked by hand.
# Fixed edge cases of cumtool itself belong in the quick suite (test_semantics.py,
# test_table_options.py), not here: this whole module is marked slow.

@pytest.mark.parametrize(("data", "op", "cast", "want"), [
    pytest.param(np.array([2048, 1, 1, 1, 1], np.float16), "cumsum", None,
                 [2048, 2048, 2050, 2052, 2052], id="float16-accumulates-in-float32"),
    pytest.param(np.array([3e38, 3e38, -3e38], np.float32), "cumsum", None,
                 [3e38, np.inf, 3e38], id="float32-accumulates-in-float64"),
    pytest.param(np.array([-0.0, -0.0, 1.0]), "cumsum", None, [0.0, 0.0, 1.0],
                 id="cumsum-starts-at-plus-zero"),
    pytest.param(np.array([1.5, 2.5, 3.5]), "cumsum", "int32", [1, 3, 6],
                 id="cast-truncates-first"),
    pytest.param(np.array([100, 100, 100], np.int8), "cumsum", None, [100, 200, 300],
                 id="int8-sums-in-int64"),
    pytest.param(np.array([3, 0, 5, 2]), "cumprod", None, [3, 0, 0, 0], id="zero-product"),
    pytest.param(np.array([-np.inf, -np.inf]), "logcumsumexp", None, [-np.inf, -np.inf],
                 id="all-minus-inf"),
    pytest.param(np.array([1.0, np.inf, 5.0]), "logcumsumexp", None,
                 [1.0, np.inf, np.inf], id="plus-inf-stays"),
])
def test_reference_agrees_with_contract_examples(data: np.ndarray, op: str, cast: str | None,
                                                 want: list[float]) -> None:
    """The reference itself reproduces SEMANTICS.md's worked examples, and so does cumtool."""
    expected = reference_scan(data, op, dtype=cast)
    want_array = np.array(want, dtype=expected.values.dtype)
    assert_matches(op, expected.values, want_array)
    assert_matches(op, cumtool.scan(data, op, dtype=cast), want_array)


@pytest.mark.parametrize(("data", "op", "want"), [
    pytest.param([1, np.nan, 3, np.nan, 2], "cummax", [0, 1, 1, 3, 3], id="nan-latest"),
    pytest.param([1, 3, 3, 2, 3], "cummax", [0, 1, 2, 2, 4], id="ties-last"),
    pytest.param([-0.0, 0.0, -1.0], "cummax", [0, 1, 1], id="signed-zero-tie"),
])
def test_reference_indices_agree_with_contract(data: list[float], op: str,
                                               want: list[int]) -> None:
    expected = reference_scan(np.array(data), op)
    assert expected.indices is not None
    assert expected.indices.tolist() == want
    _, got = cumtool.scan(np.array(data), op, indices=True)
    assert got.tolist() == want


def test_hand_csv_parser(tmp_path: Path) -> None:
    """The CSV parser the properties above rely on reads cells as they are written."""
    path = tmp_path / "t.csv"
    path.write_text("a,b\n1,\n,2.5\n")
    parsed = read_csv_output(path, {"a": np.dtype(np.int64), "b": np.dtype(np.float64)})
    assert parsed["a"][0].tolist() == [1, 0] and parsed["a"][1].tolist() == [False, True]
    assert parsed["b"][0].tolist() == [0.0, 2.5] and parsed["b"][1].tolist() == [True, False]


@st.composite
def grouped_overflow_tables(draw: Any) -> tuple[str, list[tuple[str, int, int, int]]]:
    """Rows (key, reset, x, y) with values near int64's edge, so some group overflows."""
    n = draw(st.integers(2, 40))
    big = st.sampled_from([2**62, 2**61 + 7, -(2**62), 3, -5, 2**60])
    rows = [(draw(st.sampled_from("abc")), int(draw(st.integers(0, 9)) == 0), draw(big),
             draw(big)) for _ in range(n)]
    return "k,r,x,y\n" + "".join(f"{k},{r},{x},{y}\n" for k, r, x, y in rows), rows


def first_grouped_overflow(rows: list[tuple[str, int, int, int]], reset: bool
                           ) -> tuple[int, str] | None:
    """(row from 1, column) of the first running sum, in file order, that leaves int64."""
    totals: dict[tuple[str, str], int] = {}
    for number, (key, flag, x, y) in enumerate(rows, start=1):
        for column, value in (("x", x), ("y", y)):
            if reset and flag:
                totals[(key, column)] = 0
            total = totals.get((key, column), 0) + value
            if not -(2**63) <= total < 2**63:
                return number, column
            totals[(key, column)] = total
    return None


@pytest.mark.slow
@settings(max_examples=60, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(table=grouped_overflow_tables(), reset=st.booleans())
def test_grouped_overflow_names_the_first_row_in_file_order(invoke: Any, table: Any,
                                                          reset: bool) -> None:
    text, rows = table
    expected = first_grouped_overflow(rows, reset)
    options = ["--by", "k", *(["--reset", "r"] if reset else [])]
    for batch_rows in ("1", "2", "7", "100000"):
        result = invoke("cumsum", *options, "--batch-rows", batch_rows, input=text)
        if expected is None:
            assert result.exit_code == 0, result.stderr
            continue
        row, column = expected
        assert result.exit_code == 1, (batch_rows, result.stdout)
        assert result.stderr.startswith(
            f"Error: standard input: column '{column}', row {row} (line {row + 1}): cumsum "
            "overflows int64"), (
            batch_rows, result.stderr)
