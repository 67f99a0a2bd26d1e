"""Running statistics: cumcount, cummean, cumvar, cumstd, ewma, diff, and Neumaier's
compensated running sum (`--compensated`), as SEMANTICS.md's "Running statistics" defines
them, down to the order of the float operations.

Each op's `StatKernel` is in its op module (cumtool/ops/): the fields of its carried state
(a numpy record per line, so blocks.Carry and grouped.GroupCarry hold it as they hold a
running value), its dtypes, how a block's states follow from the carried one, and what is
output from a state. Everything around it (casting, --skipna, --exclusive, missing cells,
the carry) is done once, here in `scan_block`, with the helpers the kernels share (the
running sum, the sequential recurrences in C or Python, the states by field).

Where an op's next state depends on the rounded previous one (Welford, ewma), there is no
exact vectorised form: the recurrence runs in C (cumtool/_ext/_sequential.c, built at install
where a compiler is found), or else over Python floats (IEEE binary64, bit for bit numpy's
float64 arithmetic) one line at a time, or over the lines of a wide block (many --by
groups) one row at a time with numpy. All three give the same bits.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import numpy as np

from cumtool import native
from cumtool.blocks import ScanResult, cast_input
from cumtool.errors import DataError, UsageError
from cumtool.ops.spec import States, StatKernel

if TYPE_CHECKING:
    from cumtool.blocks import Carry
    from cumtool.ops.spec import ScanSpec

_ROWS_LOOP_LINES = 128  # wider blocks (many groups) loop over rows, vectorised across lines

# What the kernels share ----------------------------------------------------------------------

def records(dtype: np.dtype, shape: tuple[int, ...]) -> np.ndarray:
    return np.zeros(shape, dtype=dtype)


class _Fields(States):
    """A block's states by field; a field no step has set is zeros, made when first read
    (most kernels set every field: zeroing them all first cost a pass over each)."""

    def __init__(self, dtype: np.dtype, shape: tuple[int, ...]) -> None:
        super().__init__()
        self._dtype, self._shape = dtype, shape

    def __missing__(self, name: str) -> np.ndarray:
        value = self[name] = np.zeros(self._shape, dtype=self._dtype[name])
        return value


def blank(dtype: np.dtype, shape: tuple[int, ...]) -> States:
    return _Fields(dtype, shape)


def by_count(count: np.ndarray, function: Callable[[np.ndarray], np.ndarray]
              ) -> np.ndarray:
    """function(count), computed once a row where every line has the same running count
    (scan_block then makes it one column, broadcast), else cell by cell."""
    if count.ndim > 1 and not any(count.strides[1:]):
        column = count[(slice(None),) + (slice(0, 1),) * (count.ndim - 1)]
        return np.broadcast_to(function(column), count.shape)
    return function(count)


def as_float64(x: np.ndarray) -> np.ndarray:
    return x.astype(np.float64, copy=False)


def running_sum(spec: ScanSpec, x: np.ndarray, present: np.ndarray | None,
                 start: np.ndarray, states: States) -> None:
    """states['s'] (and 'c' with --compensated): the running sum of x from the carried one,
    left to right in x's dtype, skipped cells adding nothing. The plain sum is numpy's
    sequential accumulate; Neumaier's s is that same sum, and its correction c is the
    running sum of each step's rounding error, so both vectorise exactly (in C, where it
    is built, both run in one loop)."""
    compensated = spec.param("compensated")
    if compensated and native.SEQUENTIAL is not None and x.dtype == np.float64:
        block, mask, flat = as_lines(x, present, start)
        sums, c = np.empty(block.shape), np.empty(block.shape)
        native.SEQUENTIAL.neumaier(block, mask, column_of(flat, "s"), column_of(flat, "c"), sums, c)
        states["s"], states["c"] = sums.reshape(x.shape), c.reshape(x.shape)
        return
    if not compensated:  # in C, row by row, for a float64 block where it is built
        by_rows = native.accumulate_rows(False, x if present is None else
                                         np.where(present, x, 0.0), start["s"])
        if by_rows is not None:
            states["s"] = by_rows
            return
    terms = x.copy() if present is None else np.where(present, x, x.dtype.type(0))
    with np.errstate(over="ignore", invalid="ignore"):
        sums = terms.copy()
        sums[:1] += start["s"][np.newaxis]
        np.add.accumulate(sums, axis=0, out=sums)
        states["s"] = sums
        if not compensated:
            return
        before = np.concatenate([start["s"][np.newaxis].astype(x.dtype), sums[:-1]])
        error = np.where(np.abs(before) >= np.abs(terms), (before - sums) + terms,
                         (terms - sums) + before)
        finite = np.isfinite(sums)
        error[~finite] = 0
        error[:1] += start["c"][np.newaxis]
        np.add.accumulate(error, axis=0, out=error)
        # A sum that is not finite resets c to 0, and stays not finite from there on.
        error[~finite] = 0
        states["c"] = error


def compensated_total(states: States) -> np.ndarray:
    """Neumaier's result s + c, or s itself where the sum is not finite."""
    s = states["s"]
    with np.errstate(over="ignore", invalid="ignore"):
        return np.where(np.isfinite(s), s + states["c"], s)


def sequential(x: np.ndarray, present: np.ndarray | None, start: np.ndarray,
                count: np.ndarray, field: str,
                line_loop: Callable[[list[float], float, int], list[float]],
                rows_step: Callable[[np.ndarray, np.ndarray, np.ndarray], np.ndarray]
                ) -> np.ndarray:
    """One float64 state field after each element, by a recurrence over each line's
    present values in order; a skipped cell keeps the state before it.

    Narrow blocks: per line, the present values as Python floats through `line_loop`
    (given the line's starting value and count). Wide blocks (many --by groups): one numpy
    step per row across all lines, `rows_step(x_row, value_before, count_before)`."""
    rows = x.shape[0]
    lines = int(np.prod(x.shape[1:], dtype=np.int64))
    flat_x = x.reshape(rows, lines)
    flat_present = None if present is None else present.reshape(rows, lines)
    flat_start = start.reshape(lines)
    out = np.empty((rows, lines), dtype=np.float64)
    if lines > _ROWS_LOOP_LINES:
        current = flat_start[field].astype(np.float64)
        before = flat_start["n"].copy()
        counts = count.reshape(rows, lines)
        for row in range(rows):
            step = rows_step(flat_x[row], current, before)
            current = step if flat_present is None else np.where(flat_present[row], step,
                                                                 current)
            out[row] = current
            before = counts[row]
        return out.reshape(x.shape)
    positions = np.arange(rows)
    for line in range(lines):
        column = flat_x[:, line]
        taken = None if flat_present is None else flat_present[:, line]
        values = column if taken is None else column[taken]
        begin = float(flat_start[field][line])
        computed = line_loop(values.tolist(), begin, int(flat_start["n"][line]))
        if taken is None:
            out[:, line] = computed
            continue
        # A skipped cell keeps the state of the last present one before it (or the start).
        last = np.maximum.accumulate(np.where(taken, positions, -1))
        order = np.cumsum(taken) - 1
        full = np.asarray(computed, dtype=np.float64)
        picked = full[order[np.maximum(last, 0)]] if full.size else np.zeros(rows)
        out[:, line] = np.where(last >= 0, picked, begin)
    return out.reshape(x.shape)


def as_lines(x: np.ndarray, present: np.ndarray | None,
              start: np.ndarray) -> tuple[np.ndarray, np.ndarray | None, np.ndarray]:
    """x and present as the (rows, lines) blocks the C loops take, and the flat start."""
    flat = start.reshape(-1)
    shape = (x.shape[0], flat.shape[0])
    return x.reshape(shape), None if present is None else present.reshape(shape), flat


def column_of(flat: np.ndarray, name: str, dtype: type = np.float64) -> np.ndarray:
    return np.ascontiguousarray(flat[name], dtype=dtype)


def native_loop(x: np.ndarray, present: np.ndarray | None, start: np.ndarray, field: str,
            loop: Callable[..., None], *weights: object) -> np.ndarray:
    """What `_sequential` computes, by the C loop `loop` of cumtool._ext._sequential:
    loop(x, present, start value, start count, *weights, out) on (rows, lines) blocks."""
    block, mask, flat = as_lines(x, present, start)
    out = np.empty(block.shape, dtype=np.float64)
    loop(block, mask, column_of(flat, field), column_of(flat, "n", np.int64), *weights, out)
    return out.reshape(x.shape)


def before(start: np.ndarray, after: np.ndarray) -> np.ndarray:
    """The value before each element: the carried one, then each element's predecessor."""
    return np.concatenate([start[np.newaxis], after[:-1]])


def kernel_of(spec: ScanSpec) -> StatKernel | None:
    """The kernel of its op module that scans `spec` (cumtool.ops), or None for
    kernels.py's own ops (cumsum scans here with --compensated only)."""
    return spec.kernel if isinstance(spec.kernel, StatKernel) else None


# Specs and scanning ------------------------------------------------------------------------

def make_spec(op: str, kernel: StatKernel, in_dtype: np.dtype, cast_given: bool,
              what: str) -> tuple[np.dtype, np.dtype]:
    """(accumulator dtype, output dtype) of a statistics op, as its kernel declares them;
    raises for complex input where the op is not defined for it."""
    if in_dtype.kind == "c" and not kernel.complex_ok:
        message = f"{op} is not defined for complex values ({what} is {in_dtype})"
        raise (UsageError if cast_given else DataError)(message)
    return kernel.acc_dtype(in_dtype), kernel.out_dtype(in_dtype, cast_given)


def scan_block(spec: ScanSpec, block: np.ndarray, valid: np.ndarray | None,
               carry: Carry) -> ScanResult:
    """kernels.scan_block for the ops here: the same casting, skipping and carry."""
    kernel = kernel_of(spec)
    assert kernel is not None
    x = cast_input(spec, block, valid)
    skip = None if valid is None else ~valid
    nan_skipped = None
    if spec.skipna and x.dtype.kind in "fc":
        nan_skipped = np.isnan(x)
        if nan_skipped.any():
            skip = nan_skipped if skip is None else skip | nan_skipped
        else:
            nan_skipped = None
    rows = x.shape[0]
    carry.offset += rows
    if x.size == 0:
        return ScanResult(np.empty(x.shape, spec.out_dtype), None, skip)
    present = None if skip is None else ~skip
    start = carry.value
    if present is None:  # the carried count plus the row's number
        steps = np.arange(1, rows + 1, dtype=np.int64).reshape((rows,) + (1,) * (x.ndim - 1))
        counts = start["n"]
        if (counts == counts.flat[0]).all():  # one column for every line (read-only)
            count = np.broadcast_to(steps + counts.flat[0], x.shape)
        else:
            count = steps + counts
    else:
        count = present.astype(np.int64)
        count[:1] += start["n"][np.newaxis]
        np.add.accumulate(count, axis=0, out=count)
    states = kernel.states(spec, x, present, start, count)
    last = np.zeros(start.shape, dtype=start.dtype)  # a field never set stays 0
    for name, values in states.items():
        last[name] = values[-1]
    carry.value = last
    missing = None
    if spec.exclusive:  # the state before each element: the carried one first
        before = blank(kernel.state_dtype(spec), x.shape)
        before.update((name, np.concatenate([start[name][np.newaxis], values[:-1]]))
                      for name, values in states.items())
        states = before
        if kernel.missing_before_first:
            nothing = states["n"] == 0
            missing = nothing if nothing.any() else None
    values = kernel.output(spec, states)
    if missing is not None:
        values[missing] = np.nan
    if nan_skipped is not None:
        if values.dtype.kind in "fc":
            # NaN skipped by --skipna stays NaN in place, as for cumsum: with --exclusive
            # too, where nothing came before it (not a missing cell).
            values[nan_skipped] = x[nan_skipped]
            if missing is not None:
                missing = missing & ~nan_skipped
                missing = missing if missing.any() else None
        else:  # cumcount: int64 holds no NaN, so a table writes the cell missing
            missing = nan_skipped if missing is None else missing | nan_skipped
    return ScanResult(values, None, skip, missing)
