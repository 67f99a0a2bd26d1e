"""diff: the difference from the previous value, cumsum's inverse."""

from __future__ import annotations

from typing import TYPE_CHECKING

from cumtool.errors import ScanOverflowError
from cumtool.ops.decl import Op, numpy_on_first_use
from cumtool.ops.spec import StatKernel

if TYPE_CHECKING:
    import numpy as np

    from cumtool.ops.spec import ScanSpec, States

else:
    np = numpy_on_first_use(globals())

class Diff(StatKernel):
    """out = x - the previous present value (x itself at the first): cumsum's inverse."""

    name = "diff"
    missing_before_first = False  # refused with --exclusive anyway
    complex_ok = True

    def acc_dtype(self, in_dtype: np.dtype) -> np.dtype:
        return np.dtype(np.int64) if in_dtype.kind in "biu" else in_dtype

    def state_dtype(self, spec: ScanSpec) -> np.dtype:
        return np.dtype([("n", np.int64), ("last", spec.acc_dtype), ("out", spec.acc_dtype)])

    def out_dtype(self, in_dtype: np.dtype, cast_given: bool) -> np.dtype:
        if in_dtype.kind in "biu":
            return in_dtype if cast_given else np.dtype(np.int64)
        return in_dtype

    def states(self, spec: ScanSpec, x: np.ndarray, present: np.ndarray | None,
               start: np.ndarray, count: np.ndarray) -> States:
        from cumtool import stats
        from cumtool.blocks import first_position, to_acc

        states = stats.blank(self.state_dtype(spec), x.shape)
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
        if (spec.out_dtype.kind in "iu" and spec.out_dtype != np.dtype(np.int64)
                and spec.overflow == "error"):
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


OPS = (Op(
    "diff",
    summary="Difference from the previous value (the first value itself): the inverse of "
            "cumsum.",
    short="Difference from the previous value: cumsum's inverse",
    example="cumtool diff sample_data/cumulative_cases.csv -c cases --by region --keep",
    exclusive=False, needs_dimension=True, stat=True, kernel=Diff()),)
