"""cumnunique: the running count of distinct values (tables; cumtool/distinct.py scans it)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from cumtool.errors import UsageError
from cumtool.ops.cumcount import CumCount
from cumtool.ops.decl import Op, numpy_on_first_use

if TYPE_CHECKING:
    import numpy as np

    from cumtool.ops.spec import ScanSpec, States

else:
    np = numpy_on_first_use(globals())


class CumNunique(CumCount):
    """Its dtypes (a count's: int64) and its refusal of arrays: its carried state is the
    set of values seen, which no fixed record holds, so tables.py scans it with
    cumtool/distinct.py."""

    name = "cumnunique"

    def states(self, spec: ScanSpec, x: np.ndarray, present: np.ndarray | None,
               start: np.ndarray, count: np.ndarray) -> States:
        raise UsageError("cumnunique counts the distinct values of a table's columns, down "
                         "the rows; it does not scan arrays (.npy) or across columns")


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
