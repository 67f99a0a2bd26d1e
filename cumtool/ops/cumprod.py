"""cumprod: the running product."""

from __future__ import annotations

from cumtool.ops.decl import Op

OPS = (Op(
    "cumprod",
    summary="Running product: out[i] = x[0] * ... * x[i].",
    short="Running product: out[i] = x[0] * x[1] * ... * x[i]",
    example="cumtool cumprod sample_data/cumprod_growth.csv"),)
