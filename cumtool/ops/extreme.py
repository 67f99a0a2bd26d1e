"""cummax and cummin: the running extremes, and the position each came from (--indices)."""

from __future__ import annotations

from cumtool.ops.decl import Op, Option

INDICES = Option(
    "--indices", default=False,
    help="Also output the position each value came from (a <name>_index column, or a "
         ".npz with values and indices).")

OPS = (
    Op("cummax",
       summary="Running maximum: out[i] = max(x[0..i]); a NaN wins and stays.",
       short="Running maximum: max(x[0..i]); a NaN wins and stays",
       example="cumtool cummax sample_data/daily_sales.csv -c revenue --indices",
       options=(INDICES,)),
    Op("cummin",
       summary="Running minimum: out[i] = min(x[0..i]); a NaN wins and stays.",
       short="Running minimum: min(x[0..i]); a NaN wins and stays",
       example="cumtool cummin sample_data/daily_sales.csv -o lows.parquet",
       options=(INDICES,)),
)
