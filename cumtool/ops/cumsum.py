"""cumsum: the running sum; and --compensated, Neumaier's sum, which cummean takes too."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from cumtool.ops.decl import Op, Option, numpy_on_first_use
from cumtool.ops.spec import Accumulator, StatKernel

if TYPE_CHECKING:
    import numpy as np

    from cumtool.ops.spec import ScanSpec, States

else:
    np = numpy_on_first_use(globals())

COMPENSATED = Option(
    "--compensated", default=False,
    help="cumsum of floats, cummean: Neumaier's compensated sum, which does not drift "
         "(slower).")


def compensated(given: Mapping[str, Any]) -> dict[str, Any]:
    return {"compensated": bool(given["compensated"])}


def exact_dtypes(in_dtype: np.dtype, cast_given: bool) -> tuple[np.dtype, np.dtype]:
    """cumsum's and cumprod's dtypes: integers (and bool) accumulate in int64 and are
    output so (or in the --dtype given); floats and complex in the next wider float."""
    from cumtool.ops.spec import wider_float

    if in_dtype.kind in "biu":
        return np.dtype(np.int64), in_dtype if cast_given else np.dtype(np.int64)
    return wider_float(in_dtype), in_dtype


class Sum(Accumulator):
    ufunc = "add"
    native = "sum"

    def identity(self, dtype: np.dtype) -> np.generic:
        return dtype.type(0)

    def dtypes(self, op: str, in_dtype: np.dtype, cast_given: bool, what: str
               ) -> tuple[np.dtype, np.dtype]:
        return exact_dtypes(in_dtype, cast_given)


def _fit(params: dict[str, Any], acc_dtype: np.dtype) -> dict[str, Any]:
    """Integer cumsum is exact: only sums taken in floats are compensated."""
    return {**params, "compensated": params["compensated"] and acc_dtype.kind in "fc"}


class CompensatedSum(StatKernel):
    """cumsum of floats with --compensated: Neumaier's sum in the accumulator dtype."""

    name = "cumsum"
    missing_before_first = False  # nothing before: the sum 0

    def state_dtype(self, spec: ScanSpec) -> np.dtype:
        return np.dtype([("n", np.int64), ("s", spec.acc_dtype), ("c", spec.acc_dtype)])

    def states(self, spec: ScanSpec, x: np.ndarray, present: np.ndarray | None,
               start: np.ndarray, count: np.ndarray) -> States:
        from cumtool import stats

        states = stats.blank(self.state_dtype(spec), x.shape)
        states["n"] = count
        acc = x.astype(spec.acc_dtype, copy=False)
        if acc.dtype.kind == "c":  # componentwise: complex addition is
            for part in ("real", "imag"):
                parts = stats.blank(np.dtype([("s", acc.real.dtype), ("c", acc.real.dtype)]),
                               x.shape)
                begin = stats.records(np.dtype([("s", acc.real.dtype), ("c", acc.real.dtype)]),
                                 start.shape)
                begin["s"], begin["c"] = getattr(start["s"], part), getattr(start["c"], part)
                stats.running_sum(spec, np.ascontiguousarray(getattr(acc, part)), present, begin,
                             parts)
                for field in ("s", "c"):
                    setattr(states[field], part, parts[field])
        else:
            stats.running_sum(spec, acc, present, start, states)
        return states

    def output(self, spec: ScanSpec, states: States) -> np.ndarray:
        from cumtool import stats

        if spec.acc_dtype.kind == "c":
            total = states["s"].copy()
            for part in ("real", "imag"):
                parts = {"s": getattr(states["s"], part), "c": getattr(states["c"], part)}
                setattr(total, part, stats.compensated_total(parts))
        else:
            total = stats.compensated_total(states)
        with np.errstate(over="ignore"):
            return total.astype(spec.out_dtype, copy=False)  # total is new: no copy


OPS = (Op(
    "cumsum",
    summary="Running sum: out[i] = x[0] + ... + x[i].",
    short="Running sum: out[i] = x[0] + x[1] + ... + x[i]",
    example="cumtool cumsum sample_data/daily_sales.csv -c units,revenue",
    options=(COMPENSATED,), params=compensated, parameters={"compensated": False},
    accumulator=Sum(), kernel=CompensatedSum(),
    kernel_when=lambda params: params["compensated"], fit=_fit),)
