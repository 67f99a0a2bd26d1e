"""cumcount: the running count of present values."""

from __future__ import annotations

from typing import TYPE_CHECKING

from cumtool.ops.decl import Op, numpy_on_first_use
from cumtool.ops.spec import StatKernel

if TYPE_CHECKING:
    import numpy as np

    from cumtool.ops.spec import ScanSpec, States

else:
    np = numpy_on_first_use(globals())

class CumCount(StatKernel):
    name = "cumcount"
    missing_before_first = False  # nothing before: a count of 0
    complex_ok = True

    def state_dtype(self, spec: ScanSpec) -> np.dtype:
        return np.dtype([("n", np.int64)])

    def out_dtype(self, in_dtype: np.dtype, cast_given: bool) -> np.dtype:
        return np.dtype(np.int64)

    def states(self, spec: ScanSpec, x: np.ndarray, present: np.ndarray | None,
               start: np.ndarray, count: np.ndarray) -> States:
        from cumtool import stats

        states = stats.blank(self.state_dtype(spec), x.shape)
        states["n"] = count
        return states

    def output(self, spec: ScanSpec, states: States) -> np.ndarray:
        return states["n"].copy()


OPS = (Op(
    "cumcount",
    summary="Running count: out[i] = the number of non-missing values in x[0..i].",
    short="Running count of the non-missing values in x[0..i]",
    example="cumtool cumcount sample_data/daily_sales.csv -c revenue --keep",
    decimals="count", stat=True, kernel=CumCount()),)
