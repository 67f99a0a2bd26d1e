"""cummax and cummin: the running extremes, and the position each came from (--indices)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from cumtool.errors import DataError, UsageError
from cumtool.ops.decl import Op, Option, numpy_on_first_use
from cumtool.ops.spec import Accumulator

if TYPE_CHECKING:
    import numpy as np
else:
    np = numpy_on_first_use(globals())

INDICES = Option(
    "--indices", default=False, small="hands over",  # the small path writes no positions
    help="Also output the position each value came from (a <name>_index column, or a "
         ".npz with values and indices).")

class Extreme(Accumulator):
    """The running maximum (or minimum) in the input's own dtype; kernels.py also keeps
    the position it came from (--indices), and a NaN wins."""

    def __init__(self, high: bool) -> None:
        self.high = high  # cummin: starts from the highest value
        self.ufunc = "minimum" if high else "maximum"  # type: ignore[misc]
        self.takes_over = "less_equal" if high else "greater_equal"  # type: ignore[misc]
    zero_d_unchanged = False

    def identity(self, dtype: np.dtype) -> np.generic:
        if dtype.kind == "b":
            return np.bool_(self.high)
        if dtype.kind in "iu":
            info = np.iinfo(dtype)
            return dtype.type(info.max if self.high else info.min)
        return dtype.type(np.inf if self.high else -np.inf)

    def dtypes(self, op: str, in_dtype: np.dtype, cast_given: bool, what: str
               ) -> tuple[np.dtype, np.dtype]:
        if in_dtype.kind == "c":
            message = f"{op} is not defined for complex values ({what} is {in_dtype})"
            raise (UsageError if cast_given else DataError)(message)
        return in_dtype, in_dtype


OPS = (
    Op("cummax",
       summary="Running maximum: out[i] = max(x[0..i]); a NaN wins and stays.",
       short="Running maximum: max(x[0..i]); a NaN wins and stays",
       example="cumtool cummax sample_data/daily_sales.csv -c revenue --indices",
       options=(INDICES,), dates=True, accumulator=Extreme(high=False)),
    Op("cummin",
       summary="Running minimum: out[i] = min(x[0..i]); a NaN wins and stays.",
       short="Running minimum: min(x[0..i]); a NaN wins and stays",
       example="cumtool cummin sample_data/daily_sales.csv -o lows.parquet",
       options=(INDICES,), dates=True, accumulator=Extreme(high=True)),
)
