"""Running statistics: cumcount, cummean, cumvar, cumstd, ewma, diff, and Neumaier's
compensated running sum (`--compensated`), as SEMANTICS.md's "Running statistics" defines
them, down to the order of the float operations.

Each op is one `StatKernel` here: the fields of its carried state (a numpy record per
line, so kernels.Carry and groups.GroupCarry hold it as they hold a running value), how a
block's states follow from the carried one, and what is output from a state. Everything
around it (casting, --skipna, --exclusive, missing cells, the carry) is done once, in
`scan_block`, so a new op is one new class and one line in KERNELS.

Where an op's next state depends on the rounded previous one (Welford, ewma), there is no
exact vectorised form: the recurrence runs in C (cumtool/_ext/_sequential.c, built at install
where a compiler is found), or else over Python floats (IEEE binary64, bit for bit numpy's
float64 arithmetic) one line at a time, or over the lines of a wide block (many --by
groups) one row at a time with numpy. All three give the same bits.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, ClassVar

import numpy as np

from cumtool import native
from cumtool.errors import DataError, ScanOverflowError, UsageError

if TYPE_CHECKING:
    from cumtool.kernels import Carry, ScanResult, ScanSpec

_INT64 = np.dtype(np.int64)
_FLOAT64 = np.dtype(np.float64)
_ROWS_LOOP_LINES = 128  # wider blocks (many groups) loop over rows, vectorised across lines

# The kernels -------------------------------------------------------------------------------

class StatKernel:
    """One op: its state, how a block's states follow from the carried one, its output."""

    name: ClassVar[str]
    # --exclusive: where nothing comes before (count 0), the output is a missing cell
    missing_before_first: ClassVar[bool] = True

    def state_dtype(self, spec: ScanSpec) -> np.dtype:
        raise NotImplementedError

    def out_dtype(self, in_dtype: np.dtype, cast_given: bool) -> np.dtype:
        return _FLOAT64

    def states(self, spec: ScanSpec, x: np.ndarray, present: np.ndarray | None,
               start: np.ndarray, count: np.ndarray) -> States:
        """The state after each element (an array shaped like x per field); `count` is
        the running number of present values, already computed."""
        raise NotImplementedError

    def output(self, spec: ScanSpec, states: States) -> np.ndarray:
        raise NotImplementedError


# A block's states: one contiguous array per field of the state (a record array would
# make every pass over a field strided, and the statistics several times slower).
States = dict[str, np.ndarray]


def _records(dtype: np.dtype, shape: tuple[int, ...]) -> np.ndarray:
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


def _blank(dtype: np.dtype, shape: tuple[int, ...]) -> States:
    return _Fields(dtype, shape)


def _by_count(count: np.ndarray, function: Callable[[np.ndarray], np.ndarray]
              ) -> np.ndarray:
    """function(count), computed once a row where every line has the same running count
    (scan_block then makes it one column, broadcast), else cell by cell."""
    if count.ndim > 1 and not any(count.strides[1:]):
        column = count[(slice(None),) + (slice(0, 1),) * (count.ndim - 1)]
        return np.broadcast_to(function(column), count.shape)
    return function(count)


def _as_float64(x: np.ndarray) -> np.ndarray:
    return x.astype(np.float64, copy=False)


class CumCount(StatKernel):
    name = "cumcount"
    missing_before_first = False  # nothing before: a count of 0

    def state_dtype(self, spec: ScanSpec) -> np.dtype:
        return np.dtype([("n", np.int64)])

    def out_dtype(self, in_dtype: np.dtype, cast_given: bool) -> np.dtype:
        return _INT64

    def states(self, spec: ScanSpec, x: np.ndarray, present: np.ndarray | None,
               start: np.ndarray, count: np.ndarray) -> States:
        states = _blank(self.state_dtype(spec), x.shape)
        states["n"] = count
        return states

    def output(self, spec: ScanSpec, states: States) -> np.ndarray:
        return states["n"].copy()


def _running_sum(spec: ScanSpec, x: np.ndarray, present: np.ndarray | None,
                 start: np.ndarray, states: States) -> None:
    """states['s'] (and 'c' with --compensated): the running sum of x from the carried one,
    left to right in x's dtype, skipped cells adding nothing. The plain sum is numpy's
    sequential accumulate; Neumaier's s is that same sum, and its correction c is the
    running sum of each step's rounding error, so both vectorise exactly (in C, where it
    is built, both run in one loop)."""
    if spec.compensated and native.SEQUENTIAL is not None and x.dtype == np.float64:
        block, mask, flat = _as_lines(x, present, start)
        sums, c = np.empty(block.shape), np.empty(block.shape)
        native.SEQUENTIAL.neumaier(block, mask, _field(flat, "s"), _field(flat, "c"), sums, c)
        states["s"], states["c"] = sums.reshape(x.shape), c.reshape(x.shape)
        return
    if not spec.compensated:  # in C, row by row, for a float64 block where it is built
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
        if not spec.compensated:
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


def _compensated_total(states: States) -> np.ndarray:
    """Neumaier's result s + c, or s itself where the sum is not finite."""
    s = states["s"]
    with np.errstate(over="ignore", invalid="ignore"):
        return np.where(np.isfinite(s), s + states["c"], s)


class CompensatedSum(StatKernel):
    """cumsum of floats with --compensated: Neumaier's sum in the accumulator dtype."""

    name = "cumsum"
    missing_before_first = False  # nothing before: the sum 0

    def state_dtype(self, spec: ScanSpec) -> np.dtype:
        return np.dtype([("n", np.int64), ("s", spec.acc_dtype), ("c", spec.acc_dtype)])

    def states(self, spec: ScanSpec, x: np.ndarray, present: np.ndarray | None,
               start: np.ndarray, count: np.ndarray) -> States:
        states = _blank(self.state_dtype(spec), x.shape)
        states["n"] = count
        acc = x.astype(spec.acc_dtype, copy=False)
        if acc.dtype.kind == "c":  # componentwise: complex addition is
            for part in ("real", "imag"):
                parts = _blank(np.dtype([("s", acc.real.dtype), ("c", acc.real.dtype)]),
                               x.shape)
                begin = _records(np.dtype([("s", acc.real.dtype), ("c", acc.real.dtype)]),
                                 start.shape)
                begin["s"], begin["c"] = getattr(start["s"], part), getattr(start["c"], part)
                _running_sum(spec, np.ascontiguousarray(getattr(acc, part)), present, begin,
                             parts)
                for field in ("s", "c"):
                    setattr(states[field], part, parts[field])
        else:
            _running_sum(spec, acc, present, start, states)
        return states

    def output(self, spec: ScanSpec, states: States) -> np.ndarray:
        if spec.acc_dtype.kind == "c":
            total = states["s"].copy()
            for part in ("real", "imag"):
                parts = {"s": getattr(states["s"], part), "c": getattr(states["c"], part)}
                setattr(total, part, _compensated_total(parts))
        else:
            total = _compensated_total(states)
        with np.errstate(over="ignore"):
            return total.astype(spec.out_dtype, copy=False)  # total is new: no copy


class CumMean(StatKernel):
    name = "cummean"

    def state_dtype(self, spec: ScanSpec) -> np.dtype:
        return np.dtype([("n", np.int64), ("s", np.float64), ("c", np.float64)])

    def out_dtype(self, in_dtype: np.dtype, cast_given: bool) -> np.dtype:
        return np.dtype(np.float32) if in_dtype in (np.float16, np.float32) else _FLOAT64

    def states(self, spec: ScanSpec, x: np.ndarray, present: np.ndarray | None,
               start: np.ndarray, count: np.ndarray) -> States:
        states = _blank(self.state_dtype(spec), x.shape)
        states["n"] = count
        _running_sum(spec, _as_float64(x), present, start, states)
        return states

    def output(self, spec: ScanSpec, states: States) -> np.ndarray:
        total = _compensated_total(states) if spec.compensated else states["s"]
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            return (total / states["n"]).astype(spec.out_dtype)


def _sequential(x: np.ndarray, present: np.ndarray | None, start: np.ndarray,
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


def _as_lines(x: np.ndarray, present: np.ndarray | None,
              start: np.ndarray) -> tuple[np.ndarray, np.ndarray | None, np.ndarray]:
    """x and present as the (rows, lines) blocks the C loops take, and the flat start."""
    flat = start.reshape(-1)
    shape = (x.shape[0], flat.shape[0])
    return x.reshape(shape), None if present is None else present.reshape(shape), flat


def _field(flat: np.ndarray, name: str, dtype: type = np.float64) -> np.ndarray:
    return np.ascontiguousarray(flat[name], dtype=dtype)


def _native(x: np.ndarray, present: np.ndarray | None, start: np.ndarray, field: str,
            loop: Callable[..., None], *weights: object) -> np.ndarray:
    """What `_sequential` computes, by the C loop `loop` of cumtool._ext._sequential:
    loop(x, present, start value, start count, *weights, out) on (rows, lines) blocks."""
    block, mask, flat = _as_lines(x, present, start)
    out = np.empty(block.shape, dtype=np.float64)
    loop(block, mask, _field(flat, field), _field(flat, "n", np.int64), *weights, out)
    return out.reshape(x.shape)


def _before(start: np.ndarray, after: np.ndarray) -> np.ndarray:
    """The value before each element: the carried one, then each element's predecessor."""
    return np.concatenate([start[np.newaxis], after[:-1]])


def _welford_means(values: list[float], m: float, n: int) -> list[float]:
    means: list[float] = []
    keep = means.append
    for x in values:
        n += 1
        m += (x - m) / n
        keep(m)
    return means


def _welford_means_rows(x: np.ndarray, m: np.ndarray, before: np.ndarray) -> np.ndarray:
    result: np.ndarray = m + (x - m) / (before + 1)
    return result


class CumVar(StatKernel):
    """Welford, the contract's n += 1; d = x - m; m += d / n; M2 += d * (x - m), step by
    step. In C both run in one loop. Without it only the mean needs a loop: the M2 terms
    d * (x - m) are then summed left to right by numpy's accumulate, the same additions."""

    name = "cumvar"

    def state_dtype(self, spec: ScanSpec) -> np.dtype:
        return np.dtype([("n", np.int64), ("m", np.float64), ("m2", np.float64)])

    def states(self, spec: ScanSpec, x: np.ndarray, present: np.ndarray | None,
               start: np.ndarray, count: np.ndarray) -> States:
        states = _blank(self.state_dtype(spec), x.shape)
        states["n"] = count
        x = _as_float64(x)
        with np.errstate(all="ignore"):
            if native.SEQUENTIAL is not None:
                block, mask, flat = _as_lines(x, present, start)
                means, m2 = np.empty(block.shape), np.empty(block.shape)
                native.SEQUENTIAL.welford(block, mask, _field(flat, "m"),
                                          _field(flat, "n", np.int64), _field(flat, "m2"),
                                          means, m2)
                states["m"] = means.reshape(x.shape)
                states["m2"] = m2.reshape(x.shape)
                return states
            means = _sequential(x, present, start, count, "m", _welford_means,
                                _welford_means_rows)
            terms = (x - _before(start["m"], means)) * (x - means)
            if present is not None:
                terms[~present] = 0.0  # M2 + 0.0 is M2: M2 is never -0.0 (from +0.0)
            terms[:1] += start["m2"][np.newaxis]
            np.add.accumulate(terms, axis=0, out=terms)
        states["m"] = means
        states["m2"] = terms
        return states

    def output(self, spec: ScanSpec, states: States) -> np.ndarray:
        n = states["n"]
        with np.errstate(divide="ignore", invalid="ignore"):
            var = states["m2"] / _by_count(n, lambda c: c - spec.ddof)
        var[_by_count(n, lambda c: c <= spec.ddof)] = np.nan
        return var


class CumStd(CumVar):
    name = "cumstd"

    def output(self, spec: ScanSpec, states: States) -> np.ndarray:
        with np.errstate(invalid="ignore"):
            return np.sqrt(super().output(spec, states))


class _EwmaWeights:
    """ewma's weights depend on the count only: w_old after the first value is 1, then
    w = w * f + w_new (adjusted) or 1. Kept per (com, adjust), grown on demand; the
    adjusted sequence reaches a fixed point in float64, after which it is constant."""

    def __init__(self, decay: float, new: float, adjust: bool) -> None:
        self.decay, self.new = decay, new
        self.after = np.ones(1, dtype=np.float64)  # after[c - 1]: w_old after c values
        self.settled = not adjust

    def upto(self, count: int) -> np.ndarray:
        """w_old after 1..count values, or fewer once settled: the last is then the
        value for every later count (memory stays bounded on long inputs)."""
        have = self.after.shape[0]
        if count > have and not self.settled:
            want = max(count, 2 * have)  # grown geometrically: few copies on long inputs
            w = float(self.after[-1])
            grown: list[float] = []
            while not self.settled and have + len(grown) < want:
                following = w * self.decay + self.new
                self.settled = following == w
                w = following
                grown.append(w)
            self.after = np.concatenate([self.after, np.asarray(grown, dtype=np.float64)])
        return self.after[:count]


_EWMA_WEIGHTS: dict[tuple[float, bool], _EwmaWeights] = {}


def _ewma_weights(spec: ScanSpec) -> _EwmaWeights:
    """pandas: alpha = 1 / (1 + com), f = 1 - alpha, w_new = 1 (adjusted) or alpha."""
    assert spec.com is not None
    key = (spec.com, spec.adjust)
    if key not in _EWMA_WEIGHTS:
        alpha = 1.0 / (1.0 + spec.com)
        _EWMA_WEIGHTS[key] = _EwmaWeights(1.0 - alpha, 1.0 if spec.adjust else alpha,
                                          spec.adjust)
    return _EWMA_WEIGHTS[key]


class Ewma(StatKernel):
    """y = x[first]; then w_old *= f; if y != x: y = (w_old y + w_new x) / (w_old + w_new).
    w_old follows from the count alone (_EwmaWeights), so only y needs the loop."""

    name = "ewma"

    def state_dtype(self, spec: ScanSpec) -> np.dtype:
        return np.dtype([("n", np.int64), ("y", np.float64), ("w", np.float64)])

    def states(self, spec: ScanSpec, x: np.ndarray, present: np.ndarray | None,
               start: np.ndarray, count: np.ndarray) -> States:
        states = _blank(self.state_dtype(spec), x.shape)
        states["n"] = count
        weights = _ewma_weights(spec)
        new = weights.new
        after = weights.upto(int(count.max(initial=1)) + 1)
        x = _as_float64(x)
        with np.errstate(all="ignore"):
            # At a value with c values before it: the decayed old weight, and the sum.
            old_by_count = np.concatenate([[np.nan], after * weights.decay])
            total_by_count = old_by_count + new
            last = old_by_count.shape[0] - 1

            def old(before: np.ndarray) -> np.ndarray:
                return old_by_count[np.minimum(before, last)]

            def total(before: np.ndarray) -> np.ndarray:
                return total_by_count[np.minimum(before, last)]

            def line_loop(values: list[float], y: float, n: int) -> list[float]:
                means: list[float] = []
                keep = means.append
                if n == 0 and values:  # the first value starts the mean
                    y = values[0]
                    keep(y)
                    values = values[1:]
                    n = 1
                # Until the weights settle (count `last`), each count has its own;
                # from there on they are constants, and the loop is shorter.
                varying = max(0, min(len(values), last - n))
                before = np.arange(n, n + varying)
                olds = old(before).tolist()
                totals = total(before).tolist()
                for value, w, t in zip(values[:varying], olds, totals, strict=True):
                    if y != value:
                        y = (w * y + new * value) / t
                    keep(y)
                w, t = float(old_by_count[last]), float(total_by_count[last])
                for value in values[varying:]:
                    if y != value:
                        y = (w * y + new * value) / t
                    keep(y)
                return means

            def rows_step(x: np.ndarray, y: np.ndarray, before: np.ndarray) -> np.ndarray:
                mixed = np.where(y != x, (old(before) * y + new * x) / total(before), y)
                return np.where(before == 0, x, mixed)

            if native.SEQUENTIAL is not None:
                states["y"] = _native(x, present, start, "y", native.SEQUENTIAL.ewma_means,
                                      old_by_count, total_by_count, new)
            else:
                states["y"] = _sequential(x, present, start, count, "y", line_loop,
                                          rows_step)
        states["w"] = _by_count(count, lambda c: np.where(
            c > 0, after[np.minimum(c, after.shape[0]) - 1], 0.0))
        return states

    def output(self, spec: ScanSpec, states: States) -> np.ndarray:
        return states["y"].copy()


class Diff(StatKernel):
    """out = x - the previous present value (x itself at the first): cumsum's inverse."""

    name = "diff"
    missing_before_first = False  # refused with --exclusive anyway

    def state_dtype(self, spec: ScanSpec) -> np.dtype:
        return np.dtype([("n", np.int64), ("last", spec.acc_dtype), ("out", spec.acc_dtype)])

    def out_dtype(self, in_dtype: np.dtype, cast_given: bool) -> np.dtype:
        if in_dtype.kind in "biu":
            return in_dtype if cast_given else _INT64
        return in_dtype

    def states(self, spec: ScanSpec, x: np.ndarray, present: np.ndarray | None,
               start: np.ndarray, count: np.ndarray) -> States:
        from cumtool.kernels import first_position, to_acc

        states = _blank(self.state_dtype(spec), x.shape)
        states["n"] = count
        if present is None and x.dtype == spec.acc_dtype and spec.acc_dtype.kind == "f":
            states["last"] = x  # read, never written: no copy
            states["out"] = _float_diff(x, start)
            return states
        # Cells under missing ones are unspecified: zeros, which cannot fail the cast.
        values = to_acc(spec, x if present is None else np.where(present, x, 0), None)
        # The last present value up to each row (the carried one before the first).
        if present is None:
            last = values
        else:
            rows = np.arange(x.shape[0]).reshape((-1,) + (1,) * (x.ndim - 1))
            at = np.maximum.accumulate(np.where(present, rows, -1), axis=0)
            last = np.where(at >= 0, np.take_along_axis(values, np.maximum(at, 0), axis=0),
                            start["last"][np.newaxis])
        previous = np.concatenate([start["last"][np.newaxis], last[:-1]])
        had = np.concatenate([start["n"][np.newaxis], count[:-1]]) > 0
        with np.errstate(over="ignore", invalid="ignore"):
            out = np.where(had, values - previous, values)
        if spec.acc_dtype.kind == "i" and spec.overflow == "error":
            # Two's complement: a - b overflowed when a and b differ in sign and the
            # result's sign is not a's.
            bad = had & (((values ^ previous) & (values ^ out)) < 0)
            if present is not None:
                bad &= present
            if bad.any():
                pos = first_position(bad)
                raise ScanOverflowError(
                    f"diff overflows int64 ({values[pos]} - {previous[pos]})", pos)
        if spec.out_dtype.kind in "iu" and spec.out_dtype != _INT64 and spec.overflow == "error":
            info = np.iinfo(spec.out_dtype)
            bad = (out < info.min) | (out > info.max)
            if present is not None:
                bad &= present
            if bad.any():
                pos = first_position(bad)
                raise ScanOverflowError(
                    f"diff gives {out[pos]}, which does not fit {spec.out_dtype}", pos)
        states["last"] = last
        states["out"] = out
        return states

    def output(self, spec: ScanSpec, states: States) -> np.ndarray:
        with np.errstate(over="ignore"):
            return states["out"].astype(spec.out_dtype)


def _float_diff(x: np.ndarray, start: np.ndarray) -> np.ndarray:
    """Diff.states' out for floats with no cell missing, in one pass: each value less the
    one before, the first less the carried last value (x itself where none was carried)."""
    out = np.empty(x.shape, dtype=x.dtype)
    with np.errstate(over="ignore", invalid="ignore"):
        np.subtract(x[1:], x[:-1], out=out[1:])
        out[:1] = np.where(start["n"] > 0, x[:1] - start["last"][np.newaxis], x[:1])
    return out


KERNELS: dict[str, StatKernel] = {kernel.name: kernel for kernel in (
    CumCount(), CumMean(), CumVar(), CumStd(), Ewma(), Diff())}
_COMPENSATED_SUM = CompensatedSum()


def kernel_of(spec: ScanSpec) -> StatKernel | None:
    """The kernel here that scans `spec`, or None for kernels.py's own ops."""
    if spec.op == "cumsum":
        return _COMPENSATED_SUM if spec.compensated else None
    return KERNELS.get(spec.op)


# Specs and scanning ------------------------------------------------------------------------

def make_spec(op: str, source_dtype: np.dtype, in_dtype: np.dtype, cast_given: bool,
              what: str) -> tuple[np.dtype, np.dtype]:
    """(accumulator dtype, output dtype) of a statistics op; raises for complex input where
    the op is not defined for it."""
    kind = in_dtype.kind
    if kind == "c" and op not in ("cumcount", "diff"):
        message = f"{op} is not defined for complex values ({what} is {in_dtype})"
        raise (UsageError if cast_given else DataError)(message)
    kernel = KERNELS[op]
    out = kernel.out_dtype(in_dtype, cast_given)
    acc = _INT64 if kind in "biu" else in_dtype if op == "diff" else _FLOAT64
    return acc, out


def start_state(spec: ScanSpec) -> np.void:
    """The state before any value: count 0, sums and means +0.0."""
    kernel = kernel_of(spec)
    assert kernel is not None
    start = np.zeros(1, dtype=kernel.state_dtype(spec))[0]
    assert isinstance(start, np.void)
    return start


def scan_block(spec: ScanSpec, block: np.ndarray, valid: np.ndarray | None,
               carry: Carry) -> ScanResult:
    """kernels.scan_block for the ops here: the same casting, skipping and carry."""
    from cumtool.kernels import ScanResult, cast_input

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
        before = _blank(kernel.state_dtype(spec), x.shape)
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
