"""cumsum: the running sum; and --compensated, Neumaier's sum, which cummean takes too."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from cumtool.ops.decl import Op, Option

COMPENSATED = Option(
    "--compensated", default=False,
    help="cumsum of floats, cummean: Neumaier's compensated sum, which does not drift "
         "(slower).")


def compensated(given: Mapping[str, Any]) -> dict[str, Any]:
    return {"compensated": bool(given["compensated"])}


OPS = (Op(
    "cumsum",
    summary="Running sum: out[i] = x[0] + ... + x[i].",
    short="Running sum: out[i] = x[0] + x[1] + ... + x[i]",
    example="cumtool cumsum sample_data/daily_sales.csv -c units,revenue",
    options=(COMPENSATED,), params=compensated),)
