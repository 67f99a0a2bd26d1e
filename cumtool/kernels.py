"""The scan kernels: ops, dtype rules and the carried running state.

Every scan runs along axis 0 of a block. A long input is a sequence of blocks; the `Carry`
holds the running value (in the wide accumulator dtype), the running index of
cummax/cummin and how many positions came before. The carried value is folded into the
block's first element *before* accumulating, so the result is bit-identical to one scan
over the whole input, however it is split (SEMANTICS.md, difference 4).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

import numpy as np

from cumtool.blocks import (
    Carry,
    ScanResult,
    cast_input,
    first_position,
    initial_carry,
    to_acc,
)
from cumtool.choices import DTYPE_NAMES, dtype_name
from cumtool.errors import DataError, ScanOverflowError, UsageError, option
from cumtool.ops import OPS, PARAMETERS, REGISTRY
from cumtool.ops.spec import Overflow, ScanSpec

# Where they were before cumtool/ops/spec.py and cumtool/blocks.py.
__all__ = ["Carry", "Overflow", "ScanResult", "ScanSpec", "cast_input", "first_position",
           "initial_carry", "to_acc"]
# --dtype names (numpy's, torch's) live in choices.py, which the CLI imports without numpy.
_ACCEPTED_DTYPES = {name: np.dtype(name) for name in DTYPE_NAMES}

_INT64 = np.dtype(np.int64)
_FLOAT64 = np.dtype(np.float64)
_WIDER_FLOAT: dict[np.dtype, np.dtype] = {
    np.dtype(np.float16): np.dtype(np.float32),
    np.dtype(np.float32): _FLOAT64,
    _FLOAT64: _FLOAT64,
    np.dtype(np.complex64): np.dtype(np.complex128),
    np.dtype(np.complex128): np.dtype(np.complex128),
}


def overflow_hint(overflow: str, error: ScanOverflowError) -> str:
    """The advice that ends an integer-overflow error message: the error's own, where
    wrapping is no help."""
    if error.hint is not None:
        return error.hint
    return f"; use {option('overflow', 'wrap')} for wrap-around" if overflow == "error" else ""


def parse_dtype(name: str) -> np.dtype:
    """Turn a `--dtype` value (numpy or torch spelling) into a numpy dtype."""
    return _ACCEPTED_DTYPES[dtype_name(name)]



def is_scannable(dtype: np.dtype) -> bool:
    """Whether cumtool can scan values of this dtype at all (bool, ints, floats, complex)."""
    return (dtype.kind in "biu" and dtype.itemsize <= 8) or dtype.newbyteorder("=") in _WIDER_FLOAT


def make_spec(
    op: str,
    source_dtype: np.dtype,
    dtype: np.dtype | None = None,
    *,
    overflow: Overflow = "error",
    skipna: bool = False,
    indices: bool = False,
    exclusive: bool = False,
    what: str = "the input",
    **params: Any,
) -> ScanSpec:
    """Apply SEMANTICS.md's dtype table; `what` names the data in error messages.
    `params` are the ops' parameters (ops.scan_params); each op keeps those it declares
    (its Op.parameters, the others at their defaults), so one set of parameters can make
    the specs of a list of ops."""
    unknown = sorted(set(params) - PARAMETERS)
    if unknown:
        raise TypeError(f"make_spec() got an unexpected keyword argument {unknown[0]!r}")
    spec = _make_spec(op, source_dtype, dtype, overflow, skipna, indices, what)
    declared = REGISTRY[op]
    values = {name: params.get(name, default) for name, default in declared.parameters.items()}
    if declared.fit is not None:
        values = declared.fit(values, spec.acc_dtype)
    extra: dict[str, object] = {}
    if values:
        extra["params"] = tuple(sorted(values.items()))
    if exclusive:
        extra["exclusive"] = True
    if declared.stat or (declared.kernel_when is not None and declared.kernel_when(values)):
        extra["kernel"] = declared.kernel  # scanned by stats.py
    else:
        extra["kernel"] = declared.accumulator  # accumulated here
    return dataclasses.replace(spec, **extra) if extra else spec  # type: ignore[arg-type]


def _make_spec(
    op: str, source_dtype: np.dtype, dtype: np.dtype | None, overflow: Overflow,
    skipna: bool, indices: bool, what: str,
) -> ScanSpec:
    if op not in OPS:
        raise UsageError(f"unknown operation {op!r}; choose from {', '.join(OPS)}")
    source_dtype = np.dtype(source_dtype).newbyteorder("=")
    if not is_scannable(source_dtype):
        raise DataError(f"{what} has dtype {source_dtype}, which cumtool cannot scan")
    in_dtype = source_dtype if dtype is None else np.dtype(dtype)
    declared = REGISTRY[op]
    if declared.stat:
        from cumtool import stats

        assert declared.kernel is not None
        acc, out = stats.make_spec(op, declared.kernel, in_dtype, dtype is not None, what)
    else:
        assert declared.accumulator is not None, f"{op} declares no way to scan"
        acc, out = declared.accumulator.dtypes(op, in_dtype, dtype is not None, what)
    return ScanSpec(op, source_dtype, in_dtype, acc, out, overflow, skipna, indices)


def scan_block(
    spec: ScanSpec, block: np.ndarray, valid: np.ndarray | None, carry: Carry,
    positions: np.ndarray | None = None,
) -> ScanResult:
    """Scan `block` along axis 0, continuing from `carry` (updated in place).

    `valid` marks present cells (None: all present); missing cells are skipped and the
    running value carries over them. `positions` (same shape as the block) are the
    indices that cummax/cummin report, when they are not simply the carry's offset
    onwards (grouped scans). Raises ScanOverflowError with the position (in the block)
    of the first integer result that does not fit.
    """
    if spec.is_stat:
        from cumtool import stats

        return stats.scan_block(spec, block, valid, carry)
    before = (carry.value.copy(), carry.index.copy()) if spec.exclusive else None
    return _scan_inclusive(spec, block, valid, carry, positions, before)


def _shift_exclusive(spec: ScanSpec, values: np.ndarray, indices: np.ndarray | None,
                     value_before: np.ndarray, index_before: np.ndarray) -> None:
    """out[i] = the running value before element i: the inclusive scan moved down by one,
    with the running value from before the block (the identity at the start) first."""
    with np.errstate(over="ignore", invalid="ignore"):
        first = value_before.astype(spec.out_dtype)
    values[1:] = values[:-1].copy()
    values[0] = first
    if indices is not None:
        indices[1:] = indices[:-1].copy()
        indices[0] = index_before


def _scan_inclusive(
    spec: ScanSpec, block: np.ndarray, valid: np.ndarray | None, carry: Carry,
    positions: np.ndarray | None, before: tuple[np.ndarray, np.ndarray] | None = None,
) -> ScanResult:
    x = cast_input(spec, block, valid)
    skip = None if valid is None else ~valid
    if spec.skipna and x.dtype.kind in "fc":
        nan = np.isnan(x)
        if nan.any():
            skip = nan if skip is None else skip | nan
    n = x.shape[0]
    if x.size == 0:  # no rows, or rows of no cells (a shape like (10**18, 0))
        carry.offset += n
        empty = np.empty(x.shape, spec.out_dtype)
        return ScanResult(empty, np.empty(x.shape, np.int64) if spec.indices else None, skip)
    if spec.accumulator.takes_over is not None:
        values, indices = _scan_extreme(spec, x, skip, carry, positions)
    elif spec.accumulator.ufunc == "logaddexp" and spec.acc_dtype.kind == "c":
        values, indices = _scan_complex_logcumsumexp(spec, x, skip, carry), None
    else:
        values, indices = _scan_accumulate(spec, x, skip, carry), None
    if before is not None:
        # --exclusive: shift first; a skipped cell's NaN and -1 below are its own, and
        # must not move onto the next cell (which reports the running value before it).
        _shift_exclusive(spec, values, indices, *before)
    carry.offset += n
    if skip is not None and spec.skipna and x.dtype.kind in "fc":
        # NaN skipped by --skipna stays NaN in place, like a missing cell stays missing.
        nan_cells = skip & np.isnan(x)
        values[nan_cells] = x[nan_cells]
    if indices is not None and skip is not None:
        indices[skip] = -1
    return ScanResult(values, indices, skip)


def _scan_accumulate(
    spec: ScanSpec, x: np.ndarray, skip: np.ndarray | None, carry: Carry
) -> np.ndarray:
    ufunc = getattr(np, spec.accumulator.ufunc)
    summed = _native_int64(spec, x, skip, carry.value)
    if summed is not None:  # checked in C where --overflow error asks
        carry.value = summed[-1].copy()
        return summed
    by_rows = _native_rows(spec, x, skip, carry.value)
    acc = by_rows if by_rows is not None else to_acc(spec, x, skip)
    exact_check = spec.acc_dtype == _INT64 and spec.overflow == "error"
    terms = acc.copy() if exact_check and not _sum_cannot_overflow(spec, acc, carry) else None
    if by_rows is None and (spec.accumulator.ufunc != "logaddexp"
                            or not _native_logaddexp(acc, carry.value)):
        with np.errstate(over="ignore", invalid="ignore"):
            ufunc(carry.value[np.newaxis], acc[:1], out=acc[:1])
            ufunc.accumulate(acc, axis=0, out=acc)
    # Two checks, one error: the first running value at fault in scan order, whichever
    # check finds it (an int16 result leaves its range long before int64 overflows; which
    # one a block found first must not depend on where --batch-rows cut the block).
    wrapped, int64_message = (None, None) if terms is None else _int64_overflows(
        spec, terms, acc, carry.value)
    bad = wrapped
    if spec.out_dtype.kind in "iu" and spec.out_dtype != _INT64 and spec.overflow == "error":
        info = np.iinfo(spec.out_dtype)
        if acc.size and (int(acc.min()) < info.min or int(acc.max()) > info.max):
            # acc is exact up to a line's first int64 overflow (which `wrapped` marks);
            # what it holds past that comes later in the line and cannot be first.
            outside = (acc < info.min) | (acc > info.max)
            if skip is not None:
                outside &= ~skip
            bad = outside if bad is None else bad | outside
    if spec.exclusive:
        _raise_exclusive(spec, bad, skip, carry, x.shape)
    elif bad is not None and bad.any():
        pos = first_position(bad)
        if wrapped is not None and wrapped[pos]:
            assert int64_message is not None
            raise ScanOverflowError(int64_message(pos), pos)
        raise ScanOverflowError(
            f"{spec.op} reaches {acc[pos]}, which does not fit {spec.out_dtype}", pos)
    carry.value = acc[-1].copy()
    with np.errstate(over="ignore"):
        return acc.astype(spec.out_dtype, copy=False)


def _native_rows(spec: ScanSpec, x: np.ndarray, skip: np.ndarray | None,
                 start: np.ndarray) -> np.ndarray | None:
    """A float64 cumsum or cumprod of a block in C, row by row, where it is built
    (numpy's accumulate down axis 0 walks a C-order block once per line, and reads each
    running value back from memory); None where it does not apply."""
    native_loop = spec.accumulator.native
    if native_loop not in ("sum", "product") or spec.acc_dtype != np.float64:
        return None  # x's dtype and shape: native checks them
    from cumtool import native

    if native.SEQUENTIAL is None:
        return None
    # skipped cells (missing, or NaN with --skipna) as the identity first, as below
    return native.accumulate_rows(native_loop == "product",
                                  x if skip is None else to_acc(spec, x, skip), start)


def _native_int64(spec: ScanSpec, x: np.ndarray, skip: np.ndarray | None,
                  start: np.ndarray) -> np.ndarray | None:
    """An int64 column's cumsum in C, where it is built and nothing else is asked of the
    sum (no --exclusive, int64 out): None where it does not apply, or where the sum
    overflows int64 with --overflow error (the way below names it)."""
    if (spec.accumulator.native != "sum" or spec.exclusive or x.dtype != _INT64
            or spec.acc_dtype != _INT64 or spec.out_dtype != _INT64):
        return None  # x's shape: native checks it
    from cumtool import native

    if native.SEQUENTIAL is None:
        return None
    # skipped (missing) cells as the identity first, as below
    step = native.COLUMN_SUM_CHECKED if spec.overflow == "error" else native.COLUMN_SUM
    return native.scan_column(step, x if skip is None else to_acc(spec, x, skip), start)


def _native_logaddexp(acc: np.ndarray, start: np.ndarray) -> bool:
    """logcumsumexp's accumulate in C, over the cores, where it is built (imported here:
    only this op needs it)."""
    from cumtool import native

    with np.errstate(over="ignore", invalid="ignore"):
        return native.logaddexp_accumulate(acc, start)


def _sum_cannot_overflow(spec: ScanSpec, acc: np.ndarray, carry: Carry) -> bool:
    """A cheap bound that rules out int64 overflow for most data without an exact check."""
    if acc.size == 0:
        return True
    biggest = max(abs(int(acc.min())), abs(int(acc.max())))
    carried = float(np.abs(carry.value.astype(np.float64)).max()) if carry.value.size else 0.0
    if spec.accumulator.ufunc == "add":
        # Floats give a bound with ample slack: 2**62 is far from int64's edge.
        return carried + float(biggest) * acc.shape[0] < 2.0**62
    return biggest <= 1 and carried < 2.0**62


def _raise_exclusive(spec: ScanSpec, bad: np.ndarray | None, skip: np.ndarray | None,
                     carry: Carry, shape: tuple[int, ...]) -> None:
    """--exclusive: a running value is output at its line's next present element, so an
    overflow is an error there, the first such element in scan order: this block's own,
    or one of a line whose value overflowed in an earlier block (carry.pending). A line
    whose value overflowed at its last element so far is pending. The message is the
    same whichever block the overflowed value came from (no value, nor term, is kept)."""
    waiting = carry.pending is not None and bool(carry.pending.any())
    if (bad is None or not bad.any()) and not waiting:
        return
    present = np.ones(shape, dtype=bool) if skip is None else ~skip
    out = np.zeros(shape, dtype=bool)
    if waiting:
        out |= present & carry.pending
    if bad is not None:
        hit = np.asarray(bad.any(axis=0))
        rows = np.arange(bad.shape[0]).reshape((-1,) + (1,) * (bad.ndim - 1))
        after = present & (rows > np.argmax(bad, axis=0)) & hit
        out |= after
        left = hit & ~np.asarray(after.any(axis=0))  # output in a later block, if any
        carry.pending = left if carry.pending is None else carry.pending | left
    if out.any():
        pos = first_position(out)
        raise ScanOverflowError(f"{spec.op} overflows {spec.out_dtype}", pos)


def _int64_overflows(
    spec: ScanSpec, terms: np.ndarray, acc: np.ndarray, carried: np.ndarray
) -> tuple[np.ndarray | None, Callable[[tuple[int, ...]], str]]:
    """Where the exact running value left int64 (acc has wrapped there), and the message."""
    prev = np.concatenate([carried[np.newaxis], acc[:-1]])
    if spec.accumulator.ufunc == "add":
        # Two's-complement rule: adding two same-sign numbers gave the other sign.
        bad = ((prev ^ acc) & (terms ^ acc)) < 0
        return (bad if bad.any() else None), (
            lambda pos: f"cumsum overflows int64 (adding {terms[pos]})")
    # cumprod: a float64 shadow product is far from 2**63 except near a true overflow;
    # candidates near or past the limit are checked exactly with Python integers, up to
    # the first overflow of each line (later values of a line are past caring).
    with np.errstate(over="ignore", invalid="ignore"):
        shadow = terms.astype(np.float64)
        shadow[:1] *= carried.astype(np.float64)[np.newaxis]
        np.multiply.accumulate(shadow, axis=0, out=shadow)
        near = ~(np.abs(shadow) < 2.0**63 * (1 - 1e-9))
    def message(pos: tuple[int, ...]) -> str:
        return f"cumprod overflows int64 (multiplying by {terms[pos]})"

    if not near.any():
        return None, message
    lines_prev = prev.reshape(prev.shape[0], -1)
    lines_terms = terms.reshape(terms.shape[0], -1)
    bad = np.zeros(lines_prev.shape, dtype=bool)
    done: set[int] = set()
    for row, line in zip(*np.nonzero(near.reshape(near.shape[0], -1)), strict=True):
        if int(line) in done:
            continue
        exact = int(lines_prev[row, line]) * int(lines_terms[row, line])
        if not -(2**63) <= exact < 2**63:
            bad[row, line] = True
            done.add(int(line))
    return (bad.reshape(acc.shape) if bad.any() else None), message


def _scan_extreme(
    spec: ScanSpec, x: np.ndarray, skip: np.ndarray | None, carry: Carry,
    positions: np.ndarray | None,
) -> tuple[np.ndarray, np.ndarray | None]:
    """cummax/cummin: a NaN wins and stays; ties and NaNs take the latest index."""
    if not spec.indices and skip is None and x.dtype == spec.acc_dtype:
        from cumtool import native

        # a column in C, where it is built: the same values as below
        step = native.COLUMN_MIN if spec.accumulator.ufunc == "minimum" else native.COLUMN_MAX
        values = native.scan_column(step, x, carry.value)
        if values is not None:
            carry.value = values[-1].copy()
            return values, None
    ufunc = getattr(np, spec.accumulator.ufunc)
    values = to_acc(spec, x, skip)
    ufunc(carry.value[np.newaxis], values[:1], out=values[:1])
    ufunc.accumulate(values, axis=0, out=values)
    indices = None
    # numpy's maximum/minimum pick either zero when -0.0 ties 0.0 (float16 the first, the
    # others by platform) and keep the first NaN; torch keeps the last tied element and
    # takes each NaN as it comes (its sign and payload), so those are re-read below.
    zero_ties = x.dtype.kind == "f" and values.size > 0 and (
        not values.all() or bool(np.isnan(values[-1]).any()))
    if spec.indices or zero_ties:
        prev = np.concatenate([carry.value[np.newaxis], values[:-1]])
        compare = getattr(np, str(spec.accumulator.takes_over))
        with np.errstate(invalid="ignore"):
            record = compare(x, prev)
        if x.dtype.kind == "f":
            record |= np.isnan(x)
        if skip is not None:
            record &= ~skip
        if positions is None:
            positions = np.arange(carry.offset, carry.offset + x.shape[0], dtype=np.int64)
            positions = positions.reshape((-1,) + (1,) * (x.ndim - 1))
        indices = np.where(record, positions, np.int64(-1))
        np.maximum(carry.index[np.newaxis], indices[:1], out=indices[:1])
        np.maximum.accumulate(indices, axis=0, out=indices)
        carry.index = indices[-1].copy()
        if zero_ties:
            # Rows of this block (not `positions`, which --by makes input rows).
            rows = np.arange(x.shape[0], dtype=np.int64).reshape((-1,) + (1,) * (x.ndim - 1))
            local = np.maximum.accumulate(np.where(record, rows, np.int64(-1)), axis=0)
            picked = np.take_along_axis(x, np.maximum(local, 0), axis=0)
            values = np.where(local >= 0, picked, carry.value[np.newaxis])
        if not spec.indices:
            indices = None
    carry.value = values[-1].copy()
    return values, indices


def _scan_complex_logcumsumexp(
    spec: ScanSpec, x: np.ndarray, skip: np.ndarray | None, carry: Carry
) -> np.ndarray:
    """torch's complex log-add-exp, step by step along the axis, vectorised across lines."""
    acc = to_acc(spec, x, skip)
    running = carry.value.copy()
    with np.errstate(all="ignore"):
        for i in range(acc.shape[0]):
            running = _complex_log_add_exp(acc[i], running)
            acc[i] = running
    carry.value = np.asarray(running).copy()
    return acc.astype(spec.out_dtype)


def flip_result(result: ScanResult, axis: int, length: int | None = None) -> ScanResult:
    """Put a scan of flipped input back in input order, indices as input positions.
    `length` is the whole input's along `axis`, when the result is one block of it."""
    indices = None
    if result.indices is not None:
        last = (result.indices.shape[axis] if length is None else length) - 1
        indices = np.flip(np.where(result.indices >= 0, last - result.indices, -1), axis)
    skipped = None if result.skipped is None else np.flip(result.skipped, axis)
    missing = None if result.missing is None else np.flip(result.missing, axis)
    return ScanResult(np.flip(result.values, axis), indices, skipped, missing)


def _complex_log_add_exp(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    x = np.asarray(x)
    y = np.asarray(y)
    y_nan = np.isnan(y.real) | np.isnan(y.imag)
    x_nan = np.isnan(x.real) | np.isnan(x.imag)
    x_smaller = x.real < y.real
    low = np.where(y_nan, y, np.where(x_nan, x, np.where(x_smaller, x, y)))
    high = np.where(y_nan, y, np.where(x_nan, x, np.where(x_smaller, y, x)))
    general = np.log1p(np.exp(low - high)) + high
    both_inf = ~np.isfinite(low.real) & (low.real == high.real)
    pos_inf = np.log(np.exp(low) + np.exp(high))
    result = np.where(both_inf, np.where(low.real < 0, low, pos_inf), general)
    nan = np.isnan(low.real) | np.isnan(low.imag)
    return np.where(nan, np.complex128(complex(np.nan, np.nan)), result)


def refuse_zero_d(ops: list[str], ndim: int, what: str) -> None:
    """diff of a 0-d array is a usage error, as numpy's and torch's diff raise; the other
    ops return a 0-d array unchanged."""
    from cumtool.ops import REGISTRY

    refused = [op for op in ops if REGISTRY[op].needs_dimension]
    if ndim == 0 and refused:
        raise UsageError(f"{refused[0]} needs at least one dimension, and {what} is a 0-d "
                         f"array (a single value); numpy's and torch's {refused[0]} refuse "
                         "it too")


def scan_array(
    spec: ScanSpec, array: np.ndarray, axis: int = 0, valid: np.ndarray | None = None,
    reverse: bool = False,
) -> ScanResult:
    """Scan a whole in-memory array along `axis` (the engine streams; this is the simple
    path). With `reverse`, out[i] covers x[i..n-1]; indices still count in input order."""
    array = np.asarray(array)
    if reverse and array.ndim:
        flipped = scan_array(spec, np.flip(array, axis), axis,
                             None if valid is None else np.flip(valid, axis))
        return flip_result(flipped, axis)
    if array.ndim == 0:
        refuse_zero_d([spec.op], 0, "the input")
        # A 0-d array is returned unchanged (in the output dtype), as torch does.
        one = scan_block(spec, array.reshape(1), None, initial_carry(spec))
        values = one.values.reshape(())
        if not spec.is_stat and spec.accumulator.zero_d_unchanged and not spec.exclusive:
            values = cast_input(spec, array, None).astype(spec.out_dtype).reshape(())
        indices = None if one.indices is None else one.indices.reshape(())
        return ScanResult(values, indices, None)
    moved = np.moveaxis(array, axis, 0)
    moved_valid = None if valid is None else np.moveaxis(valid, axis, 0)
    result = scan_block(spec, moved, moved_valid, initial_carry(spec, moved.shape[1:]))
    values = np.moveaxis(result.values, 0, axis)
    indices = None if result.indices is None else np.moveaxis(result.indices, 0, axis)
    skipped = None if result.skipped is None else np.moveaxis(result.skipped, 0, axis)
    missing = None if result.missing is None else np.moveaxis(result.missing, 0, axis)
    return ScanResult(values, indices, skipped, missing)
