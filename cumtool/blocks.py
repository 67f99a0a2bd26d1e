"""What every scan of a block shares, whichever module scans it (kernels.py's
accumulating ops, stats.py's running statistics, groups.py's runs): the carried state
between blocks, a block's result, the cast to the scan's input dtype with its overflow
checks, and where in a block a problem is first found."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from cumtool.errors import ScanOverflowError
from cumtool.ops.spec import ScanSpec

_INT64 = np.dtype(np.int64)


@dataclass
class Carry:
    """Running state between blocks, one entry per independent line."""

    value: np.ndarray
    index: np.ndarray
    offset: int = 0  # positions already scanned along the axis
    # --exclusive: lines whose running value overflowed at their last element so far; it
    # is an error only if the line goes on (the value is output at the next element).
    pending: np.ndarray | None = None


def initial_carry(spec: ScanSpec, line_shape: tuple[int, ...] = ()) -> Carry:
    value = np.full(line_shape, spec.identity, dtype=spec.state_dtype)
    return Carry(value, np.full(line_shape, -1, dtype=np.int64))


@dataclass
class ScanResult:
    values: np.ndarray  # out_dtype, same shape as the block
    indices: np.ndarray | None  # int64 positions for cummax/cummin --indices; -1 where skipped
    skipped: np.ndarray | None  # cells that did not enter the scan (missing, or NaN with skipna)
    # output cells that are missing though their input is not: a statistic of nothing
    # (--exclusive at the start), cumcount at a NaN skipped by --skipna
    missing: np.ndarray | None = None


def cast_input(spec: ScanSpec, block: np.ndarray, valid: np.ndarray | None) -> np.ndarray:
    """Cast to the scan's input dtype: an explicit --dtype may truncate fractions, but a
    value that cannot be represented (NaN/inf to int, out of range) is an error unless
    --overflow wrap."""
    block = np.asarray(block)
    if not block.dtype.isnative:
        block = block.astype(block.dtype.newbyteorder("="))
    target = spec.in_dtype
    if block.dtype == target:
        return block
    src = block.dtype
    if target.kind in "iu" and src.kind in "fc":
        real = block.real if src.kind == "c" else block
        unrepresentable = ~np.isfinite(real)
        bad = unrepresentable.copy()
        if spec.overflow == "error":
            info = np.iinfo(target)
            # In float64, against exact powers of two: int64's max rounds up to 2**63.
            with np.errstate(invalid="ignore"):
                whole = np.trunc(real.astype(np.float64))
            bad |= (whole < float(info.min)) | (whole >= float(int(info.max) + 1))
        if valid is not None:
            bad &= valid
        if bad.any():  # the first bad cell, whichever its fault: so in any batch
            pos = first_position(bad)
            what = "cannot be cast to" if unrepresentable[pos] else "does not fit"
            raise ScanOverflowError(f"value {block[pos]} {what} {target}", pos)
        with np.errstate(invalid="ignore"):
            return real.astype(target)
    if target.kind in "iu" and src.kind in "iub" and spec.overflow == "error":
        info = np.iinfo(target)
        if src.kind != "b" and (
            int(block.min(initial=0)) < info.min or int(block.max(initial=0)) > info.max
        ):
            bad = (block < info.min) | (block > info.max)
            _raise_if_any(bad, valid, block, f"does not fit {target}")
    if target.kind == "f" and src.kind in "fc" and target.itemsize < src.itemsize:
        # IEEE and torch: a finite value beyond the narrower type's range becomes +-inf.
        real = block.real if src.kind == "c" else block
        with np.errstate(over="ignore"):
            return real.astype(target)
    if src.kind == "c" and target.kind != "c":
        return block.real.astype(target)
    with np.errstate(over="ignore"):  # a big integer cast to float16 is inf, as in torch
        return block.astype(target)


def _raise_if_any(bad: np.ndarray, valid: np.ndarray | None, block: np.ndarray, what: str) -> None:
    if valid is not None:
        bad &= valid
    if bad.any():
        pos = first_position(bad)
        raise ScanOverflowError(f"value {block[pos]} {what}", pos)


def first_position(mask: np.ndarray) -> tuple[int, ...]:
    """Position of the first True in scan order: smallest index along axis 0, then line."""
    flat = np.flatnonzero(mask.reshape(mask.shape[0], -1).any(axis=1))
    row = int(flat[0])
    line = np.flatnonzero(mask[row].reshape(-1))[0] if mask.ndim > 1 else 0
    rest = np.unravel_index(int(line), mask.shape[1:]) if mask.ndim > 1 else ()
    return (row, *(int(i) for i in rest))


def to_acc(spec: ScanSpec, x: np.ndarray, skip: np.ndarray | None) -> np.ndarray:
    """A fresh accumulator-dtype copy of x with skipped cells set to the identity."""
    if spec.acc_dtype == _INT64 and x.dtype == np.uint64:
        if spec.overflow == "error":
            big = x > np.iinfo(np.int64).max
            if skip is not None:
                big &= ~skip
            if big.any():
                pos = first_position(big)
                raise ScanOverflowError(f"value {x[pos]} overflows int64", pos)
        acc = x.view(np.int64).copy()  # two's complement, as torch's cast
    else:
        acc = x.astype(spec.acc_dtype, copy=True)
    if skip is not None:
        acc[skip] = spec.identity
    return acc
