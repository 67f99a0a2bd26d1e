"""ewma: the exponentially weighted running mean, as pandas' ewm(...).mean(). Its decay
is given one of four ways (--alpha, --span, --com, --halflife); the scan takes the centre
of mass, and whether the weights are adjusted."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from cumtool.errors import UsageError, option
from cumtool.ops.decl import Op, Option

# Listed in --help in this order.
OPTIONS = (
    Option("--no-adjust", keyword="adjust", default=True, negates=True,
           help="ewma: the recursive form y = (1 - alpha) y + alpha x (pandas "
                "adjust=False) instead of the adjusted weights."),
    Option("--halflife", type=float, metavar="H",
           help="ewma: half-life in rows, H > 0: alpha = 1 - exp(log(0.5) / H)."),
    Option("--com", type=float, metavar="C",
           help="ewma: centre of mass, C >= 0: alpha = 1 / (1 + C)."),
    Option("--span", type=float, metavar="S", help="ewma: span, S >= 1: alpha = 2 / (S + 1)."),
    Option("--alpha", type=float, metavar="A",
           help="ewma: smoothing factor, 0 < A <= 1 (give one of --alpha, --span, --com, "
                "--halflife)."),
)
EWMA_PARAMETERS = ("com", "span", "halflife", "alpha")


def center_of_mass(com: float | None = None, span: float | None = None,
                   halflife: float | None = None, alpha: float | None = None) -> float:
    """ewma's centre of mass from exactly one of its four parameters, in float64 as pandas'
    get_center_of_mass computes it (exp and log are numpy's); UsageError names the option."""
    given = {name: value for name, value in zip(
        EWMA_PARAMETERS, (com, span, halflife, alpha), strict=True) if value is not None}
    if not given:
        raise UsageError(f"ewma needs one of {option('alpha')}, {option('span')}, "
                         f"{option('com')} or {option('halflife')}")
    if len(given) > 1:
        first, second = list(given)[:2]
        raise UsageError(f"give one of {option('alpha')}, {option('span')}, {option('com')}, "
                         f"{option('halflife')}, not both {option(first)} and "
                         f"{option(second)}")
    name, value = next(iter(given.items()))
    value = float(value)
    ranges = {"com": (value >= 0, "C >= 0"), "span": (value >= 1, "S >= 1"),
              "halflife": (value > 0, "H > 0"), "alpha": (0 < value <= 1, "0 < A <= 1")}
    inside, rule = ranges[name]
    if not inside or math.isnan(value):
        raise UsageError(f"{option(name, _number(value))} is out of range: it needs {rule}")
    if name == "com":
        return value
    if name == "span":
        return (value - 1) / 2
    if name == "halflife":
        import numpy as np  # numpy's exp and log, as pandas: not for `cumtool --help`

        decay = 1 - np.exp(np.log(0.5) / value)
        return float(1 / decay - 1)
    return (1 - value) / value


def _number(value: float) -> str:
    return str(int(value)) if value.is_integer() else repr(value)


def params(given: Mapping[str, Any]) -> dict[str, Any]:
    return {"com": center_of_mass(*(given[name] for name in EWMA_PARAMETERS)),
            "adjust": bool(given["adjust"])}


OPS = (Op(
    "ewma",
    summary="Exponentially weighted running mean, as pandas' ewm(...).mean(): give one "
            "of --alpha, --span, --com, --halflife.",
    short="Exponentially weighted running mean, as pandas' ewm",
    example="cumtool ewma sample_data/prices.csv -c close --span 3 --keep",
    options=OPTIONS, params=params, stat=True),)
