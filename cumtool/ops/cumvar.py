"""cumvar and cumstd: the running variance (Welford, float64) and its square root."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from cumtool.errors import UsageError, option
from cumtool.ops.decl import Op, Option

DDOF = Option(
    "--ddof", type=int, metavar="N",
    help="cumvar, cumstd: delta degrees of freedom, divide by count - N (N >= 0) "
         "[default: 1]")


def params(given: Mapping[str, Any]) -> dict[str, Any]:
    ddof = 1 if given["ddof"] is None else given["ddof"]
    if ddof < 0:
        raise UsageError(f"{option('ddof', str(ddof))} is out of range: it needs N >= 0")
    return {"ddof": int(ddof)}


OPS = (
    Op("cumvar",
       summary="Running variance (Welford, float64): out[i] = var(x[0..i]) with --ddof "
               "(default 1); NaN while the count is at most ddof.",
       short="Running variance (Welford, float64; --ddof, default 1)",
       example="cumtool cumvar sample_data/daily_sales.csv -c revenue --ddof 0",
       options=(DDOF,), params=params, stat=True),
    Op("cumstd",
       summary="Running standard deviation: the square root of cumvar (Welford, float64, "
               "--ddof, default 1).",
       short="Running standard deviation: the square root of cumvar",
       example="cumtool cumstd sample_data/daily_sales.csv -c units --by store --keep",
       options=(DDOF,), params=params, stat=True),
)
