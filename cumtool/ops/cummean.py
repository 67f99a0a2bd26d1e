"""cummean: the running mean, its sum in float64 (Neumaier's with --compensated)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from cumtool.ops.cumsum import COMPENSATED, compensated
from cumtool.ops.decl import Op, numpy_on_first_use
from cumtool.ops.spec import StatKernel

if TYPE_CHECKING:
    import numpy as np

    from cumtool.ops.spec import ScanSpec, States

else:
    np = numpy_on_first_use(globals())

class CumMean(StatKernel):
    name = "cummean"

    def state_dtype(self, spec: ScanSpec) -> np.dtype:
        return np.dtype([("n", np.int64), ("s", np.float64), ("c", np.float64)])

    def out_dtype(self, in_dtype: np.dtype, cast_given: bool) -> np.dtype:
        narrow = in_dtype in (np.float16, np.float32)
        return np.dtype(np.float32 if narrow else np.float64)

    def states(self, spec: ScanSpec, x: np.ndarray, present: np.ndarray | None,
               start: np.ndarray, count: np.ndarray) -> States:
        from cumtool import stats

        states = stats.blank(self.state_dtype(spec), x.shape)
        states["n"] = count
        stats.running_sum(spec, stats.as_float64(x), present, start, states)
        return states

    def output(self, spec: ScanSpec, states: States) -> np.ndarray:
        from cumtool import stats

        total = stats.compensated_total(states) if spec.param("compensated") else states["s"]
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            return (total / states["n"]).astype(spec.out_dtype)


OPS = (Op(
    "cummean",
    summary="Running mean: out[i] = (x[0] + ... + x[i]) / cumcount, the sum in float64.",
    short="Running mean: the running sum (float64) / cumcount",
    example="cumtool cummean sample_data/daily_sales.csv -c units --by store --keep",
    options=(COMPENSATED,), params=compensated,
    parameters={"compensated": False}, decimals="float64", stat=True, kernel=CumMean()),)
