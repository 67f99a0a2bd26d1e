"""The behaviour contract (SEMANTICS.md), rule by rule, on the kernels and `cumtool.scan`.

Expected values come from two independent places: literal numbers from the contract (each
one checked against torch 2.13 on the CPU by hand), and the small reference loops below,
which walk the input one element at a time with Python scalars and the contract's rules
(wide accumulator, rounded once per element; last tie and latest NaN win; torch's
log-add-exp). Nothing here calls cumtool to compute an expectation.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
import pytest
from helpers import along_axis, int_fits, log_add_exp, wrap_int

import cumtool
from cumtool import kernels
from cumtool.errors import DataError, ScanOverflowError, UsageError

OPS = ("cumsum", "cumprod", "cummax", "cummin", "logcumsumexp")
INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1

F16, F32, F64 = np.dtype("float16"), np.dtype("float32"), np.dtype("float64")
C64, C128 = np.dtype("complex64"), np.dtype("complex128")
I64 = np.dtype("int64")


# Reference loops ---------------------------------------------------------------------


class RefOverflow(Exception):
    def __init__(self, position: int) -> None:
        super().__init__(position)
        self.position = position


def ref_int_scan(values: Sequence[int], op: str, out: np.dtype = I64,
                 overflow: str = "error") -> np.ndarray:
    """cumsum/cumprod of integers with exact Python ints; overflow is an error at the first
    element whose running value does not fit `out` (a uint64 of 2**63 or more counts as
    not fitting int64), else two's-complement wrap-around."""
    acc = 0 if op == "cumsum" else 1
    result = []
    for i, x in enumerate(values):
        x = int(x)
        if overflow == "error" and not int_fits(x, I64):
            raise RefOverflow(i)
        acc = acc + x if op == "cumsum" else acc * x
        if overflow == "error" and not int_fits(acc, out):
            raise RefOverflow(i)
        result.append(wrap_int(acc, out))
    return np.array(result, dtype=out)


def ref_float_scan(values: Sequence[Any], op: str, dtype: np.dtype) -> np.ndarray:
    """cumsum/cumprod of floats or complex: accumulate wide, round once per element.
    float16 -> float32 scalars; float32/float64 -> Python float; complex -> Python complex."""
    dtype = np.dtype(dtype)
    acc: Any
    if dtype == F16:
        acc = np.float32(0.0 if op == "cumsum" else 1.0)
        convert: Any = np.float32
    elif dtype.kind == "c":
        acc = complex(0.0 if op == "cumsum" else 1.0)
        convert = complex
    else:
        acc = 0.0 if op == "cumsum" else 1.0
        convert = float
    result = []
    for x in values:
        term = convert(dtype.type(x))
        acc = acc + term if op == "cumsum" else acc * term
        result.append(acc)
    with np.errstate(over="ignore"):
        return np.array(result, dtype=np.complex128 if dtype.kind == "c" else np.float64
                        ).astype(dtype) if result else np.array([], dtype)


def ref_logcumsumexp(values: Sequence[float], out: np.dtype) -> np.ndarray:
    acc = -math.inf
    result = []
    for x in values:
        acc = log_add_exp(float(x), acc)
        result.append(acc)
    return np.array(result, dtype=np.float64).astype(out)


def ref_extreme(values: Sequence[Any], op: str) -> tuple[list[Any], list[int]]:
    """cummax/cummin: a NaN wins and stays (the latest NaN's index); ties take the later
    position."""
    best: Any = None
    best_index = -1
    out, indices = [], []
    for i, x in enumerate(values):
        x_nan = isinstance(x, float) and math.isnan(x)
        best_nan = isinstance(best, float) and math.isnan(best)
        if best is None or x_nan or (
            not best_nan and (x >= best if op == "cummax" else x <= best)
        ):
            best, best_index = x, i
        out.append(best)
        indices.append(best_index)
    return out, indices


# Assertions ----------------------------------------------------------------------------


def assert_exact(got: Any, expected: Any, dtype: Any) -> None:
    """Same dtype, shape and values; NaN equals NaN, and the sign of every zero matters."""
    got = np.asarray(got)
    dtype = np.dtype(dtype)
    want = expected if isinstance(expected, np.ndarray) else np.array(expected, dtype=dtype)
    assert got.dtype == dtype, f"dtype {got.dtype}, expected {dtype}"
    assert want.dtype == dtype
    assert got.shape == want.shape
    np.testing.assert_array_equal(got, want, strict=True)
    if dtype.kind in "fc":
        for part in ("real", "imag") if dtype.kind == "c" else ("real",):
            g, w = getattr(got, part), getattr(want, part)
            both = ~np.isnan(g) & ~np.isnan(w)
            assert np.array_equal(np.signbit(g[both]), np.signbit(w[both])), "signed zero"


# Output dtype table ----------------------------------------------------------------------

INT_DTYPES = ("int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64")
FLOAT_DTYPES = ("float16", "float32", "float64")
COMPLEX_DTYPES = ("complex64", "complex128")

# SEMANTICS.md "Output dtype (no --dtype given)", written out cell by cell.
OUTPUT_DTYPE = {
    **{(op, d): "int64" for op in ("cumsum", "cumprod") for d in ("bool", *INT_DTYPES)},
    **{(op, d): d for op in ("cummax", "cummin") for d in ("bool", *INT_DTYPES)},
    **{("logcumsumexp", d): "float64" for d in ("bool", *INT_DTYPES)},
    **{(op, d): d for op in OPS for d in FLOAT_DTYPES},
    **{(op, d): d for op in ("cumsum", "cumprod", "logcumsumexp") for d in COMPLEX_DTYPES},
}

SMALL = [2, 0, 3, 1, 3]
SMALL_BOOL = [True, False, True, True, False]
SMALL_COMPLEX = [2 + 1j, 0.5 - 1j, 3 + 0j, 1 - 2j, -1 + 0.25j]


def _small(dtype: str) -> list[Any]:
    if dtype == "bool":
        return SMALL_BOOL
    if dtype.startswith("complex"):
        return SMALL_COMPLEX
    return SMALL


def _expected_small(op: str, dtype: str) -> np.ndarray:
    values = _small(dtype)
    out = np.dtype(OUTPUT_DTYPE[op, dtype])
    source = np.dtype(dtype)
    if op in ("cummax", "cummin"):
        return np.array(ref_extreme(values, op)[0], dtype=out)
    if op == "logcumsumexp":
        if source.kind == "c":
            raise AssertionError("complex logcumsumexp is checked separately")
        return ref_logcumsumexp([float(source.type(v)) for v in values], out)
    if source.kind in "biu":
        return ref_int_scan([int(v) for v in values], op)
    return ref_float_scan(values, op, source)


@pytest.mark.parametrize(
    ("op", "dtype"),
    [pytest.param(op, d, id=f"{op}-{d}") for (op, d) in OUTPUT_DTYPE
     if not (op == "logcumsumexp" and d.startswith("complex"))],
)
def test_output_dtype_and_values_for_each_input_dtype(op, dtype):
    data = np.array(_small(dtype), dtype=dtype)
    assert_exact(cumtool.scan(data, op), _expected_small(op, dtype), OUTPUT_DTYPE[op, dtype])


@pytest.mark.parametrize("dtype", [pytest.param(d, id=d) for d in COMPLEX_DTYPES])
def test_complex_logcumsumexp_keeps_dtype_and_is_log_of_summed_exps(dtype):
    data = np.array(SMALL_COMPLEX, dtype=dtype)
    got = cumtool.scan(data, "logcumsumexp")
    assert got.dtype == np.dtype(dtype)
    import cmath

    running = 0j
    for i, z in enumerate(data.tolist()):
        running += cmath.exp(z)
        # compare exp of the result: the log's imaginary part is only defined mod 2*pi
        assert cmath.isclose(cmath.exp(complex(got[i])), running, rel_tol=1e-5)


@pytest.mark.parametrize("op", ["cummax", "cummin"])
@pytest.mark.parametrize("dtype", [pytest.param(d, id=d) for d in COMPLEX_DTYPES])
def test_cummax_cummin_refuse_complex(op, dtype):
    with pytest.raises(DataError, match=f"{op} is not defined for complex"):
        cumtool.scan(np.array([1 + 1j, 2], dtype=dtype), op)


@pytest.mark.parametrize("op", ["cummax", "cummin"])
def test_cummax_cummin_refuse_a_complex_cast(op):
    with pytest.raises(UsageError, match="not defined for complex"):
        cumtool.scan(np.array([1.0, 2.0]), op, dtype="complex64")


@pytest.mark.parametrize("dtype", ["uint16", "uint32", "uint64"])
@pytest.mark.parametrize("op", ["cummax", "cummin"])
def test_cummax_cummin_accept_wide_unsigned_and_keep_their_range(op, dtype):
    top = int(np.iinfo(dtype).max)
    values = [5, top, 0, top - 1, top, 1]
    expected, indices = ref_extreme(values, op)
    got, got_indices = cumtool.scan(np.array(values, dtype=dtype), op, indices=True)
    assert_exact(got, np.array(expected, dtype=dtype), dtype)
    assert_exact(got_indices, indices, "int64")


# --dtype: cast, then scan --------------------------------------------------------------

CAST_CASES = [
    pytest.param([1.5, 2.5, 3.5], "float64", "cumsum", "int32", [1, 3, 6], "int32",
                 id="cumsum-halves-int32"),
    pytest.param([1.5, 2.5, 3.5], "float64", "cumsum", "int64", [1, 3, 6], "int64",
                 id="cumsum-halves-int64"),
    pytest.param([-1.9, 2.9, -0.5], "float64", "cumsum", "int16", [-1, 1, 1], "int16",
                 id="cumsum-truncates-toward-zero"),
    pytest.param([1.7, -2.7, 3.0], "float64", "cummax", "int32", [1, 1, 3], "int32",
                 id="cummax-int32"),
    pytest.param([1.7, -2.7, 3.0], "float64", "cummin", "int8", [1, -2, -2], "int8",
                 id="cummin-int8"),
    pytest.param([1, 2, 3], "int32", "cumprod", "float32", [1.0, 2.0, 6.0], "float32",
                 id="cumprod-int32-to-float32"),
    pytest.param([2, 3, 4], "int64", "cumprod", "uint8", [2, 6, 24], "uint8",
                 id="cumprod-uint8"),
    pytest.param([True, True, False], "bool", "cumsum", "int8", [1, 2, 2], "int8",
                 id="cumsum-bool-int8"),
    pytest.param([0.1, 0.2, 0.3], "float64", "cumsum", "float16",
                 ref_float_scan([0.1, 0.2, 0.3], "cumsum", F16), "float16",
                 id="cumsum-float16"),
    pytest.param([1, 2], "int64", "cumsum", "complex64", [1 + 0j, 3 + 0j], "complex64",
                 id="cumsum-complex64"),
    pytest.param([0, 0, 0], "int64", "logcumsumexp", "float32",
                 ref_logcumsumexp([0.0, 0.0, 0.0], F32), "float32",
                 id="logcumsumexp-float32"),
    pytest.param([1 + 3j, 2 - 1j], "complex128", "cumsum", "float64", [1.0, 3.0], "float64",
                 id="complex-to-real-keeps-real-part"),
]


@pytest.mark.parametrize(("data", "source", "op", "cast", "expected", "out"), CAST_CASES)
def test_dtype_casts_first_then_scans(data, source, op, cast, expected, out):
    got = cumtool.scan(np.array(data, dtype=source), op, dtype=cast)
    assert_exact(got, expected if isinstance(expected, np.ndarray)
                 else np.array(expected, dtype=out), out)


def test_int8_cast_overflow_is_an_error_by_default():
    with pytest.raises(ScanOverflowError) as caught:
        cumtool.scan(np.array([100, 100, 100]), "cumsum", dtype="int8")
    assert caught.value.position == (1,)
    assert "int8" in str(caught.value)


def test_int8_cast_overflow_wraps_with_overflow_wrap():
    got = cumtool.scan(np.array([100, 100, 100]), "cumsum", dtype="int8", overflow="wrap")
    assert_exact(got, [100, -56, 44], "int8")


@pytest.mark.parametrize(
    ("data", "cast", "position"),
    [
        pytest.param([1.0, np.nan, 2.0], "int32", (1,), id="nan-to-int"),
        pytest.param([np.inf], "int64", (0,), id="inf-to-int"),
        pytest.param([1.0, 2.0, 300.0], "int8", (2,), id="out-of-range-float"),
        pytest.param([5, 256], "uint8", (1,), id="out-of-range-int"),
        pytest.param([-1], "uint8", (0,), id="negative-to-unsigned"),
    ],
)
def test_a_cast_that_cannot_represent_a_value_is_an_error(data, cast, position):
    with pytest.raises(ScanOverflowError) as caught:
        cumtool.scan(np.array(data), "cummax", dtype=cast)
    assert caught.value.position == position


@pytest.mark.parametrize("op", ["cumsum", "cummax"])
def test_float_two_to_the_63_does_not_fit_int64(op):
    """2**63 rounds int64's max up in float64; it must still be an overflow, not -2**63."""
    with pytest.raises(ScanOverflowError) as caught:
        cumtool.scan(np.array([1.0, 2.0**63]), op, dtype="int64")
    assert str(caught.value) == ("value 9.223372036854776e+18 does not fit int64; use "
                                 "overflow='wrap' for wrap-around")
    assert caught.value.position == (1,)
    assert_exact(cumtool.scan(np.array([-(2.0**63)]), op, dtype="int64"), [INT64_MIN], "int64")


def test_narrowing_float_cast_gives_inf():
    """A finite value beyond a narrower float's range becomes +-inf, as in torch and IEEE,
    not an error."""
    assert_exact(cumtool.scan(np.array([1e300, 1.0]), "cumsum", dtype="float32"),
                 [np.inf, np.inf], "float32")
    assert_exact(cumtool.scan(np.array([-1e300, 1e5, 3.0]), "cummax", dtype="float16"),
                 [-np.inf, np.inf, np.inf], "float16")


@pytest.mark.parametrize("op", ["cumsum", "cumprod"])
def test_integer_cast_of_an_integer_wraps_with_overflow_wrap(op):
    # torch's cast is two's complement: 300 -> 44, -1 -> 255 in uint8
    got = cumtool.scan(np.array([300, -1, 2]), op, dtype="uint8", overflow="wrap")
    expected = ref_int_scan([44, 255, 2], op, np.dtype("uint8"), overflow="wrap")
    assert_exact(got, expected, "uint8")


def test_logcumsumexp_refuses_an_integer_cast():
    with pytest.raises(UsageError, match="logcumsumexp needs a floating or complex"):
        cumtool.scan(np.array([1.0, 2.0]), "logcumsumexp", dtype="int32")


ACCEPTED_NAMES = [
    ("int8", "int8"), ("int16", "int16"), ("int32", "int32"), ("int64", "int64"),
    ("uint8", "uint8"), ("float16", "float16"), ("float32", "float32"),
    ("float64", "float64"), ("complex64", "complex64"), ("complex128", "complex128"),
    ("torch.int32", "int32"), ("torch.float16", "float16"), ("torch.complex64", "complex64"),
    ("long", "int64"), ("torch.int", "int32"), ("half", "float16"),
    ("torch.float", "float32"), ("double", "float64"), ("torch.long", "int64"),
    ("torch.double", "float64"),
]


@pytest.mark.parametrize(("name", "widths"), [("float", "float32 or float64"),
                                              ("int", "int32 or int64"),
                                              ("FLOAT", "float32 or float64")])
def test_float_and_int_are_refused_as_ambiguous(invoke, name, widths):
    result = invoke("cumsum", "--dtype", name, input="x\n1\n")
    assert result.exit_code == 2
    assert result.stderr == (f"Error: --dtype {name!r} is ambiguous: torch reads it as "
                             f"{widths.split(' or ')[0]}, numpy and pandas as "
                             f"{widths.split(' or ')[1]}; give the width: {widths}\n")


@pytest.mark.parametrize(("name", "dtype"), [pytest.param(n, d, id=n) for n, d in ACCEPTED_NAMES])
def test_accepted_dtype_names(name, dtype):
    assert kernels.parse_dtype(name) == np.dtype(dtype)
    got = cumtool.scan(np.array([1, 2, 3], dtype=np.int8), "cumsum", dtype=name)
    assert got.dtype == np.dtype(dtype)
    np.testing.assert_array_equal(got, np.array([1, 3, 6]))


@pytest.mark.parametrize("name", ["bool", "uint16", "uint32", "uint64", "bfloat16",
                                  "torch.bfloat16", "torch.bool", "decimal"])
def test_refused_dtype_names_list_the_accepted_ones(name):
    with pytest.raises(UsageError) as caught:
        cumtool.scan(np.array([1, 2]), "cumsum", dtype=name)
    message = str(caught.value)
    assert repr(name) in message
    for accepted in ("int8", "int16", "int32", "int64", "uint8", "float16", "float32",
                     "float64", "complex64", "complex128"):
        assert accepted in message


# Precision: accumulate wide, round once per element -----------------------------------


def test_float32_cumsum_of_ten_million_tenths_ends_at_a_million():
    data = np.full(10_000_000, 0.1, dtype=np.float32)
    got = cumtool.scan(data, "cumsum")
    assert got.dtype == F32
    assert got[-1] == np.float32(1_000_000.0)
    # numpy's float32 running sum drifts: this is what the wide accumulator prevents
    assert np.cumsum(data[:1_000_000])[-1] != np.float32(100_000.0)
    assert got[999_999] == np.float32(100_000.0)


@pytest.mark.parametrize(
    ("data", "dtype", "op", "expected"),
    [
        pytest.param([3e38, 3e38, -3e38], "float32", "cumsum", [3e38, np.inf, 3e38],
                     id="float32-sum-through-inf"),
        pytest.param([2048, 1, 1, 1, 1], "float16", "cumsum", [2048, 2048, 2050, 2052, 2052],
                     id="float16-sum-of-ones"),
        pytest.param([1e30, 1e30, 1e-30], "float32", "cumprod", [1e30, np.inf, 1e30],
                     id="float32-product-through-inf"),
        pytest.param([3e38, 3e38, -3e38], "complex64", "cumsum", [3e38, np.inf, 3e38],
                     id="complex64-sum-through-inf"),
        pytest.param([1e16, 1, 1], "float64", "cumsum", [1e16, 1e16, 1e16],
                     id="float64-left-to-right"),
    ],
)
def test_wide_accumulation_rounds_once_per_element(data, dtype, op, expected):
    assert_exact(cumtool.scan(np.array(data, dtype=dtype), op), expected, dtype)


@pytest.mark.parametrize("dtype", ["float16", "float32", "float64"])
@pytest.mark.parametrize("op", ["cumsum", "cumprod"])
def test_float_scans_match_the_wide_reference_loop(op, dtype):
    rng = np.random.default_rng(7)
    data = rng.standard_normal(300)
    if op == "cumprod":
        data = 1 + data / 20
    data = data.astype(dtype)
    assert_exact(cumtool.scan(data, op), ref_float_scan(data.tolist(), op, np.dtype(dtype)),
                 dtype)


@pytest.mark.parametrize("dtype", ["complex64", "complex128"])
@pytest.mark.parametrize("op", ["cumsum", "cumprod"])
def test_complex_sum_and_product_match_the_reference_loop(op, dtype):
    rng = np.random.default_rng(8)
    data = (rng.standard_normal(40) + 1j * rng.standard_normal(40)) / (4 if op == "cumsum"
                                                                        else 1.2)
    data = data.astype(dtype)
    got = cumtool.scan(data, op)
    expected = ref_float_scan(data.tolist(), op, np.dtype(dtype))
    assert got.dtype == np.dtype(dtype)
    if dtype == "complex64" or op == "cumsum":
        assert_exact(got, expected, dtype)
    else:  # complex128 products may differ in the last bit (fused multiply-add)
        np.testing.assert_allclose(got, expected, rtol=1e-14)


# +0.0 start and 0-d arrays -------------------------------------------------------------


@pytest.mark.parametrize("dtype", ["float16", "float32", "float64"])
def test_cumsum_starts_from_positive_zero(dtype):
    got = cumtool.scan(np.array([-0.0, -0.0, 1.0], dtype=dtype), "cumsum")
    assert_exact(got, [0.0, 0.0, 1.0], dtype)
    assert not np.signbit(got).any()


def test_logcumsumexp_starts_from_positive_zero():
    got = cumtool.scan(np.array([-0.0, -0.0]), "logcumsumexp")
    assert_exact(got, [0.0, math.log(2)], "float64")


def test_cumprod_keeps_a_negative_zero():
    assert_exact(cumtool.scan(np.array([-0.0, -0.0]), "cumprod"), [-0.0, 0.0], "float64")


@pytest.mark.parametrize("op", OPS)
def test_zero_d_float_array_is_returned_unchanged(op):
    got = cumtool.scan(np.array(-0.0, dtype=np.float32), op)
    assert_exact(got, np.array(-0.0, dtype=np.float32), "float32")


@pytest.mark.parametrize(
    ("op", "out"),
    [("cumsum", "int64"), ("cumprod", "int64"), ("cummax", "int8"), ("cummin", "int8"),
     ("logcumsumexp", "float64")],
)
def test_zero_d_int_array_keeps_its_value_in_the_output_dtype(op, out):
    got = cumtool.scan(np.array(-7, dtype=np.int8), op)
    assert_exact(got, np.array(-7, dtype=out), out)


@pytest.mark.parametrize("op", ["cummax", "cummin"])
def test_zero_d_indices_are_zero(op):
    values, indices = cumtool.scan(np.array(np.nan), op, indices=True)
    assert_exact(values, np.array(np.nan), "float64")
    assert_exact(indices, np.array(0), "int64")


def test_zero_d_with_a_cast():
    assert_exact(cumtool.scan(np.array(2.75), "cumsum", dtype="int32"), np.array(2, np.int32),
                 "int32")


# NaN, infinities, ties ------------------------------------------------------------------


@pytest.mark.parametrize("op", ["cumsum", "cumprod", "logcumsumexp"])
@pytest.mark.parametrize("dtype", ["float16", "float32", "float64"])
def test_nan_spreads_to_every_later_element(op, dtype):
    got = cumtool.scan(np.array([2.0, np.nan, 3.0, -np.inf, np.inf], dtype=dtype), op)
    assert got.dtype == np.dtype(dtype)
    assert not np.isnan(got[0])
    assert np.isnan(got[1:]).all()


@pytest.mark.parametrize("op", ["cumsum", "cumprod", "logcumsumexp"])
def test_nan_first_spreads(op):
    got = cumtool.scan(np.array([np.nan, 1.0, 2.0]), op)
    assert np.isnan(got).all()


@pytest.mark.parametrize(
    ("op", "data", "values", "indices"),
    [
        pytest.param("cummax", [1, np.nan, 3, np.nan, 2], [1, np.nan, np.nan, np.nan, np.nan],
                     [0, 1, 1, 3, 3], id="cummax-nan"),
        pytest.param("cummin", [1, np.nan, 3, np.nan, 2], [1, np.nan, np.nan, np.nan, np.nan],
                     [0, 1, 1, 3, 3], id="cummin-nan"),
        pytest.param("cummax", [np.nan, 1], [np.nan, np.nan], [0, 0], id="cummax-nan-first"),
        pytest.param("cummax", [1, 3, 3, 2, 3], [1, 3, 3, 3, 3], [0, 1, 2, 2, 4],
                     id="cummax-ties"),
        pytest.param("cummin", [3, 1, 1, 2, 1], [3, 1, 1, 1, 1], [0, 1, 2, 2, 4],
                     id="cummin-ties"),
        pytest.param("cummax", [-np.inf, -np.inf], [-np.inf, -np.inf], [0, 1],
                     id="cummax-minus-inf-ties"),
        pytest.param("cummin", [np.inf, np.inf], [np.inf, np.inf], [0, 1],
                     id="cummin-inf-ties"),
        pytest.param("cummax", [0.0, -0.0], [0.0, -0.0], [0, 1], id="cummax-signed-zero-tie"),
    ],
)
def test_cummax_cummin_nan_and_tie_rules(op, data, values, indices):
    got, got_indices = cumtool.scan(np.array(data, dtype=np.float64), op, indices=True)
    ref_values, ref_indices = ref_extreme([float(x) for x in data], op)
    assert ref_indices == indices  # the contract's numbers and the reference loop agree
    assert_exact(got, np.array(ref_values), "float64")
    assert_exact(got, values, "float64")
    assert_exact(got_indices, indices, "int64")


@pytest.mark.parametrize("op", ["cummax", "cummin"])
@pytest.mark.parametrize("how", ["plain", "indices", "by", "float32", "batches"])
def test_each_later_nan_takes_over_with_its_own_bits(op, how, tmp_path):
    """torch's loop takes every NaN as it comes (`out = curr_elem`), so the running value
    holds the latest NaN, sign and payload, as its index says; numpy's accumulate kept
    the first, and only a block holding a zero (re-read) or --indices gave torch's."""
    data = np.array([2.0, np.nan, 1.0, -np.nan, 3.0], dtype="float32" if how == "float32"
                    else "float64")
    if how == "batches":  # a file read in batches of 2 rows: the carry holds the NaN
        import pyarrow as pa
        import pyarrow.parquet as pq

        pq.write_table(pa.table({"x": data}), tmp_path / "in.parquet")
        import subprocess
        import sys

        subprocess.run([sys.executable, "-m", "cumtool", op, str(tmp_path / "in.parquet"),
                        "--batch-rows", "2", "-o", str(tmp_path / "out.parquet")], check=True)
        got = pq.read_table(tmp_path / "out.parquet")["x"].to_numpy()
    elif how == "by":
        got = cumtool.scan(data, op, by=[0, 1, 0, 1, 1])  # 2, 1 | nan, -nan, 3
    else:
        got = cumtool.scan(data, op, indices=how == "indices")
        if how == "indices":
            got, places = got
            assert places.tolist() == [0, 1, 1, 3, 3]
    signs = np.signbit(got).tolist()
    assert np.isnan(got).tolist() == [False, True, how != "by", True, True]
    assert signs == [False, False, False, True, True]


@pytest.mark.parametrize(
    ("op", "data", "dtype", "indices"),
    [
        pytest.param("cummax", [1, 3, 3, 2, 3], "int64", [0, 1, 2, 2, 4], id="int64"),
        pytest.param("cummax", [INT64_MIN, INT64_MIN], "int64", [0, 1], id="int64-min-ties"),
        pytest.param("cummax", [False, False, True, False], "bool", [0, 1, 2, 2], id="bool-max"),
        pytest.param("cummin", [True, True, False, True], "bool", [0, 1, 2, 2], id="bool-min"),
        pytest.param("cummin", [7, 7, 9, 7], "uint8", [0, 1, 1, 3], id="uint8-min"),
    ],
)
def test_integer_and_bool_ties_take_the_last_index(op, data, dtype, indices):
    got, got_indices = cumtool.scan(np.array(data, dtype=dtype), op, indices=True)
    ref_values, ref_indices = ref_extreme(data, op)
    assert ref_indices == indices
    assert_exact(got, np.array(ref_values, dtype=dtype), dtype)
    assert_exact(got_indices, indices, "int64")


@pytest.mark.parametrize("op", ["cummax", "cummin"])
@pytest.mark.parametrize("dtype", ["float16", "float32", "float64", "int16", "uint8"])
def test_cummax_cummin_match_the_reference_loop(op, dtype):
    rng = np.random.default_rng(3)
    data = rng.integers(0, 12, 200).astype(dtype)  # small range: many ties
    if dtype.startswith("float"):
        data[rng.integers(0, 200, 6)] = np.nan
    values, indices = cumtool.scan(data, op, indices=True)
    ref_values, ref_indices = ref_extreme(data.tolist(), op)
    assert_exact(values, np.array(ref_values, dtype=dtype), dtype)
    assert_exact(indices, ref_indices, "int64")


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        pytest.param([-np.inf, -np.inf, -np.inf], [-np.inf, -np.inf, -np.inf], id="all-minus-inf"),
        pytest.param([-np.inf, 0.0, -np.inf], [-np.inf, 0.0, 0.0], id="minus-inf-identity"),
        pytest.param([1.0, np.inf, 2.0, -np.inf], [1.0, np.inf, np.inf, np.inf],
                     id="plus-inf-stays"),
        pytest.param([np.inf, np.inf], [np.inf, np.inf], id="inf-plus-inf"),
        pytest.param([np.inf, np.nan, 1.0], [np.inf, np.nan, np.nan], id="nan-after-inf"),
        pytest.param([0.0, 0.0, 0.0], [0.0, math.log(2), math.log1p(0.5) + math.log(2)],
                     id="zeros"),
        pytest.param([1000.0, 1000.0], [1000.0, 1000.0 + math.log(2)], id="large-no-overflow"),
    ],
)
def test_logcumsumexp_special_values(data, expected):
    got = cumtool.scan(np.array(data), "logcumsumexp")
    assert_exact(got, ref_logcumsumexp(data, F64), "float64")
    assert_exact(got, expected, "float64")


def test_logcumsumexp_of_zeros_is_log_n():
    got = cumtool.scan(np.zeros(3), "logcumsumexp")
    assert got[0] == 0.0
    assert got[1] == math.log(2)
    assert math.isclose(got[2], math.log(3), rel_tol=3e-16)  # torch: one ulp below log(3)
    got32 = cumtool.scan(np.zeros(3, dtype=np.float32), "logcumsumexp")
    assert_exact(got32, np.array([0.0, math.log(2), math.log(3)], dtype=np.float32), "float32")


def test_logcumsumexp_of_large_float32_stays_finite():
    got = cumtool.scan(np.array([88, 89, 90], dtype=np.float32), "logcumsumexp")
    assert np.isfinite(got).all()
    assert_exact(got, ref_logcumsumexp([88.0, 89.0, 90.0], F32), "float32")
    # log(e^88 + e^89 + e^90) = 90 + log(1 + e^-1 + e^-2)
    assert math.isclose(float(got[2]), 90 + math.log(1 + math.exp(-1) + math.exp(-2)),
                        rel_tol=1e-7)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_logcumsumexp_matches_the_reference_loop(dtype):
    rng = np.random.default_rng(11)
    data = (rng.standard_normal(300) * 30).astype(dtype)
    assert_exact(cumtool.scan(data, "logcumsumexp"),
                 ref_logcumsumexp(data.tolist(), np.dtype(dtype)), dtype)


@pytest.mark.parametrize("dtype", ["bool", "int8", "int64", "uint64"])
def test_logcumsumexp_of_integers_is_float64(dtype):
    data = [1, 0, 1, 1] if dtype == "bool" else [0, 3, 1, 2]
    got = cumtool.scan(np.array(data, dtype=dtype), "logcumsumexp")
    assert_exact(got, ref_logcumsumexp([float(x) for x in data], F64), "float64")


@pytest.mark.parametrize(
    ("data", "dtype", "expected", "out"),
    [
        pytest.param([3, 0, 5, 2], "int64", [3, 0, 0, 0], "int64", id="int"),
        pytest.param([3, 0, 5, 2], "float64", [3, 0, 0, 0], "float64", id="float"),
        pytest.param([3.0, 0.0, np.inf], "float64", [3.0, 0.0, np.nan], "float64",
                     id="zero-times-inf-is-nan"),
        pytest.param([-2.0, 0.0, 5.0], "float32", [-2.0, -0.0, -0.0], "float32",
                     id="negative-zero"),
        pytest.param([-1, 2, -4], "int64", [-1, -2, 8], "int64", id="signs"),
    ],
)
def test_cumprod_zeros(data, dtype, expected, out):
    assert_exact(cumtool.scan(np.array(data, dtype=dtype), "cumprod"), expected, out)


# Empty input ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("op", "dtype"),
    [pytest.param(op, d, id=f"{op}-{d}") for (op, d) in OUTPUT_DTYPE],
)
def test_empty_input_gives_empty_output_of_the_output_dtype(op, dtype):
    got = cumtool.scan(np.array([], dtype=dtype), op)
    assert got.shape == (0,)
    assert got.dtype == np.dtype(OUTPUT_DTYPE[op, dtype])


@pytest.mark.parametrize(("shape", "axis"), [((0, 3), 0), ((0, 3), 1), ((3, 0), 1),
                                             ((3, 0), 0), ((2, 0, 4), -1)])
def test_empty_multidimensional_input(shape, axis):
    got = cumtool.scan(np.empty(shape, dtype=np.int32), "cumsum", axis=axis)
    assert got.shape == shape
    assert got.dtype == I64
    values, indices = cumtool.scan(np.empty(shape, dtype=np.float32), "cummax", axis=axis,
                                   indices=True)
    assert (values.shape, values.dtype) == (shape, F32)
    assert (indices.shape, indices.dtype) == (shape, I64)


def test_empty_input_with_a_cast():
    got = cumtool.scan(np.array([], dtype=np.float64), "cumsum", dtype="int16")
    assert (got.shape, got.dtype) == ((0,), np.dtype("int16"))


# Integer overflow ------------------------------------------------------------------------

OVERFLOW_CASES = [
    pytest.param("cumsum", [1, INT64_MAX - 1, 1, 1], "int64", None, 2, id="cumsum-int64-up"),
    pytest.param("cumsum", [-5, INT64_MIN + 5, -1], "int64", None, 2, id="cumsum-int64-down"),
    pytest.param("cumsum", [2**62, 2**62], "int64", None, 1, id="cumsum-2-62-twice"),
    pytest.param("cumprod", [2**32, 2**31, 2, 5], "int64", None, 1, id="cumprod-int64"),
    pytest.param("cumprod", [2**32, 2**30, 2, 5], "int64", None, 2, id="cumprod-int64-late"),
    pytest.param("cumprod", [-(2**32), 2**31, -1], "int64", None, 2,
                 id="cumprod-negation-of-min"),
    pytest.param("cumprod", [3] * 41, "int64", None, 39, id="cumprod-powers-of-three"),
    pytest.param("cumsum", [100, 27, 1], "int64", "int8", 2, id="cumsum-int8"),
    pytest.param("cumsum", [30000, 2767, 1], "int64", "int16", 2, id="cumsum-int16"),
    pytest.param("cumsum", [-(2**31), -1], "int64", "int32", 1, id="cumsum-int32-down"),
    pytest.param("cumprod", [200, 200], "int64", "int16", 1, id="cumprod-int16"),
    pytest.param("cumsum", [250, 5, 1], "int64", "uint8", 2, id="cumsum-uint8"),
    pytest.param("cumsum", [1, 2**63, 3], "uint64", None, 1, id="uint64-2-63"),
    pytest.param("cumsum", [2**64 - 1], "uint64", None, 0, id="uint64-max"),
    pytest.param("cumprod", [1, 2**63], "uint64", None, 1, id="uint64-cumprod"),
    pytest.param("cumsum", [2**62, 2**62], "uint64", None, 1, id="uint64-sum-of-small"),
]


@pytest.mark.parametrize(("op", "data", "dtype", "cast", "position"), OVERFLOW_CASES)
def test_integer_overflow_is_an_error_at_the_first_bad_position(op, data, dtype, cast,
                                                                position):
    out = np.dtype(cast) if cast else I64
    with pytest.raises(RefOverflow) as ref:
        ref_int_scan(data, op, out)
    assert ref.value.position == position
    with pytest.raises(ScanOverflowError) as caught:
        cumtool.scan(np.array(data, dtype=dtype), op, dtype=cast)
    assert caught.value.position == (position,)
    assert isinstance(caught.value, DataError)


@pytest.mark.parametrize(("op", "data", "dtype", "cast", "position"), OVERFLOW_CASES)
def test_overflow_wrap_is_twos_complement(op, data, dtype, cast, position):
    out = np.dtype(cast) if cast else I64
    got = cumtool.scan(np.array(data, dtype=dtype), op, dtype=cast, overflow="wrap")
    assert_exact(got, ref_int_scan(data, op, out, overflow="wrap"), out)


@pytest.mark.parametrize(
    ("op", "data", "expected"),
    [
        pytest.param("cumsum", [INT64_MAX - 1, 1], [INT64_MAX - 1, INT64_MAX], id="sum-to-max"),
        pytest.param("cumsum", [INT64_MIN + 1, -1], [INT64_MIN + 1, INT64_MIN], id="sum-to-min"),
        pytest.param("cumsum", [INT64_MAX, INT64_MIN], [INT64_MAX, -1], id="max-plus-min"),
        pytest.param("cumprod", [-(2**62), 2], [-(2**62), INT64_MIN], id="product-to-min"),
        pytest.param("cumprod", [2**31, 2**31 - 1, 2], [2**31, 2**62 - 2**31, 2**63 - 2**32],
                     id="product-near-max"),
        pytest.param("cumprod", [INT64_MIN, 1, -1, 0], None, id="min-times-minus-one"),
        pytest.param("cumprod", [2**40, 0, 2**40], [2**40, 0, 0], id="zero-stops-growth"),
    ],
)
def test_values_at_the_edge_of_int64_are_not_overflow(op, data, expected):
    if expected is None:  # INT64_MIN * -1 overflows: the reference says where
        with pytest.raises(ScanOverflowError) as caught:
            cumtool.scan(np.array(data, dtype=np.int64), op)
        assert caught.value.position == (2,)
        return
    assert_exact(cumtool.scan(np.array(data, dtype=np.int64), op), ref_int_scan(data, op),
                 "int64")
    assert_exact(cumtool.scan(np.array(data, dtype=np.int64), op), expected, "int64")


@pytest.mark.parametrize("op", ["cumsum", "cumprod"])
@pytest.mark.parametrize("dtype", ["int64", "int32", "int16", "int8"])
def test_random_wrap_matches_twos_complement(op, dtype):
    rng = np.random.default_rng(5)
    if op == "cumsum":
        data = rng.integers(-(2**62), 2**62, 300, dtype=np.int64)
    else:
        data = rng.integers(-(2**20), 2**20, 300, dtype=np.int64)
        data[data == 0] = 3
    got = cumtool.scan(data, op, dtype=None if dtype == "int64" else dtype, overflow="wrap")
    cast_values = [wrap_int(int(v), np.dtype(dtype)) for v in data]  # the cast wraps too
    assert_exact(got, ref_int_scan(cast_values, op, np.dtype(dtype), overflow="wrap"), dtype)


def test_overflow_position_in_a_2d_array_is_the_input_index():
    data = np.array([[0, 0, 0], [0, INT64_MAX, 1]], dtype=np.int64)
    with pytest.raises(ScanOverflowError) as caught:
        cumtool.scan(data, "cumsum", axis=1)
    assert caught.value.position == (1, 2)


def test_overflow_of_a_zero_d_array_has_an_empty_position():
    with pytest.raises(ScanOverflowError) as caught:
        cumtool.scan(np.array(2**63, dtype=np.uint64), "cumsum")
    assert caught.value.position == ()
    assert cumtool.scan(np.array(2**63, dtype=np.uint64), "cumsum", overflow="wrap") == INT64_MIN


def test_cummax_of_uint64_above_int64_is_fine():
    data = [1, 2**63, 3, 2**64 - 1]
    got = cumtool.scan(np.array(data, dtype=np.uint64), "cummax")
    assert_exact(got, np.array([1, 2**63, 2**63, 2**64 - 1], dtype=np.uint64), "uint64")


# Axes -------------------------------------------------------------------------------------


@pytest.mark.parametrize("op", ["cumsum", "cumprod", "cummax", "cummin"])
@pytest.mark.parametrize("axis", [0, 1, 2, -1, -2, -3])
def test_any_axis_of_a_3d_array(op, axis):
    rng = np.random.default_rng(9)
    data = rng.integers(-3, 4, (3, 4, 5)).astype(np.int32)
    got = cumtool.scan(data, op, axis=axis)
    (expected,) = along_axis(
        data, axis,
        lambda line: (ref_extreme(line, op)[0] if op in ("cummax", "cummin")
                      else ref_int_scan(line, op),),
        OUTPUT_DTYPE[op, "int32"])
    assert_exact(got, expected, OUTPUT_DTYPE[op, "int32"])


@pytest.mark.parametrize("axis", [2, -3, "5"])
def test_axis_out_of_range_names_the_valid_range(axis):
    with pytest.raises(UsageError, match=r"from -2 to 1"):
        cumtool.scan(np.zeros((2, 3)), "cumsum", axis=axis)


# --skipna and --indices ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("op", "data", "expected"),
    [
        pytest.param("cumsum", [1.0, np.nan, 2.0, np.nan], [1.0, np.nan, 3.0, np.nan],
                     id="cumsum"),
        pytest.param("cumprod", [np.nan, 2.0, np.nan, 3.0], [np.nan, 2.0, np.nan, 6.0],
                     id="cumprod"),
        pytest.param("logcumsumexp", [0.0, np.nan, 0.0], [0.0, np.nan, math.log(2)],
                     id="logcumsumexp"),
        pytest.param("cummax", [1.0, np.nan, 0.0, 5.0], [1.0, np.nan, 1.0, 5.0], id="cummax"),
        pytest.param("cummin", [1.0, np.nan, 0.0, 5.0], [1.0, np.nan, 0.0, 0.0], id="cummin"),
    ],
)
def test_skipna_skips_nan_and_keeps_it_in_place(op, data, expected):
    got = cumtool.scan(np.array(data), op, skipna=True)
    assert_exact(got, expected, "float64")
    without = cumtool.scan(np.array(data), op)
    first_nan = int(np.flatnonzero(np.isnan(data))[0])
    assert np.isnan(without[first_nan:]).all()


def test_skipna_float32_keeps_the_wide_carry():
    data = np.array([0.1, np.nan, 0.2, np.nan, 0.3], dtype=np.float32)
    got = cumtool.scan(data, "cumsum", skipna=True)
    partial = ref_float_scan([0.1, 0.2, 0.3], "cumsum", F32)
    expected = np.array([partial[0], np.nan, partial[1], np.nan, partial[2]], dtype=F32)
    assert_exact(got, expected, "float32")


def test_skipna_indices_mark_skipped_cells_with_minus_one():
    values, indices = cumtool.scan(np.array([1.0, np.nan, 0.5, 3.0]), "cummax", skipna=True,
                                   indices=True)
    assert_exact(values, [1.0, np.nan, 1.0, 3.0], "float64")
    assert_exact(indices, [0, -1, 0, 3], "int64")


def test_skipna_leaves_integers_alone():
    got = cumtool.scan(np.array([1, 2, 3], dtype=np.int16), "cumsum", skipna=True)
    assert_exact(got, [1, 3, 6], "int64")


@pytest.mark.parametrize("op", ["cummax", "cummin"])
def test_indices_along_a_column_axis(op):
    data = np.array([[1.0, 5.0, 5.0, 2.0], [4.0, 3.0, np.nan, 9.0]])
    values, indices = cumtool.scan(data, op, axis=1, indices=True)
    for row in range(2):
        ref_values, ref_indices = ref_extreme(data[row].tolist(), op)
        assert_exact(values[row], np.array(ref_values), "float64")
        assert_exact(indices[row], ref_indices, "int64")


def test_scan_without_indices_returns_only_values():
    got = cumtool.scan(np.array([3, 1, 2]), "cummax")
    assert_exact(got, [3, 3, 3], "int64")


def test_unknown_operation_is_a_usage_error():
    with pytest.raises(UsageError, match="cumsum, cumprod, cummax, cummin, logcumsumexp"):
        cumtool.scan(np.array([1]), "cumavg")


@pytest.mark.parametrize("dtype", ["float16", "float32", "float64"])
@pytest.mark.parametrize(
    ("op", "data"),
    [
        pytest.param("cummax", [0.0, -0.0, 0.0, -0.0], id="cummax"),
        pytest.param("cummin", [-0.0, 0.0, -0.0, 0.0], id="cummin"),
        pytest.param("cummax", [-1.0, -0.0, 0.0, -0.0, -2.0], id="cummax-from-below"),
        pytest.param("cummax", [-0.0, 0.0, -1.0, -0.0, 0.0], id="cummax-past-a-lower-value"),
        pytest.param("cummin", [0.0, -0.0, 1.0, 0.0, -0.0], id="cummin-past-a-higher-value"),
    ],
)
def test_signed_zero_ties_take_the_later_zero(op, data, dtype):
    """-0.0 == 0.0, so each is a tie and the later one wins, sign and all (as torch;
    numpy's float16 maximum kept the first, so cummax of float16 [-0.0, 0.0] gave -0.0)."""
    values, indices = cumtool.scan(np.array(data, dtype=dtype), op, indices=True)
    ref_values, ref_indices = ref_extreme(data, op)
    assert_exact(values, np.array(ref_values, dtype=dtype), dtype)
    assert_exact(indices, ref_indices, "int64")
    assert_exact(cumtool.scan(np.array(data, dtype=dtype), op), np.array(ref_values, dtype),
                 dtype)
