"""cumnunique: the running count of distinct values (tables; cumtool/distinct.py scans it)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from cumtool.errors import UsageError
from cumtool.ops.decl import Op, numpy_on_first_use
from cumtool.ops.spec import StatKernel

if TYPE_CHECKING:
    import numpy as np

    from cumtool.ops.spec import ScanSpec, States

else:
    np = numpy_on_first_use(globals())


class CumNunique(StatKernel):
    """Its dtypes and its refusal of arrays: its carried state is the set of values seen,
    which no fixed record holds, so tables.py scans it with cumtool/distinct.py."""

    name = "cumnunique"
    missing_before_first = False  # nothing before: 0 distinct values
    complex_ok = True

    def state_dtype(self, spec: ScanSpec) -> np.dtype:
        return np.dtype([("n", np.int64)])

    def out_dtype(self, in_dtype: np.dtype, cast_given: bool) -> np.dtype:
        return np.dtype(np.int64)

    def states(self, spec: ScanSpec, x: np.ndarray, present: np.ndarray | None,
               start: np.ndarray, count: np.ndarray) -> States:
        raise UsageError("cumnunique counts the distinct values of a table's columns, down "
                         "the rows; it does not scan arrays (.npy) or across columns")

    def output(self, spec: ScanSpec, states: States) -> np.ndarray:
        raise NotImplementedError


OPS = (Op(
    "cumnunique",
    summary="Running count of distinct values: out[i] = the number of distinct non-missing "
            "values in x[0..i]. Any column type: numbers, and text, booleans and dates "
            "named with -c (text compared as written, decimals by value, every NaN one "
            "value, -0.0 equal to 0.0). Memory grows with the number of distinct values "
            "(per group with --by), which --state saves.",
    short="Running count of the distinct values in x[0..i]",
    example="cumtool cumnunique sample_data/daily_sales.csv -c store,units --keep",
    decimals="count", stat=True, kernel=CumNunique(), distinct=True),)
