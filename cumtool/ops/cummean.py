"""cummean: the running mean, its sum in float64 (Neumaier's with --compensated)."""

from __future__ import annotations

from cumtool.ops.cumsum import COMPENSATED, compensated
from cumtool.ops.decl import Op

OPS = (Op(
    "cummean",
    summary="Running mean: out[i] = (x[0] + ... + x[i]) / cumcount, the sum in float64.",
    short="Running mean: the running sum (float64) / cumcount",
    example="cumtool cummean sample_data/daily_sales.csv -c units --by store --keep",
    options=(COMPENSATED,), params=compensated, stat=True),)
