"""cumcount: the running count of present values."""

from __future__ import annotations

from cumtool.ops.decl import Op

OPS = (Op(
    "cumcount",
    summary="Running count: out[i] = the number of non-missing values in x[0..i].",
    short="Running count of the non-missing values in x[0..i]",
    example="cumtool cumcount sample_data/daily_sales.csv -c revenue --keep",
    stat=True),)
