"""logcumsumexp: the running log-sum-exp."""

from __future__ import annotations

from cumtool.ops.decl import Op

OPS = (Op(
    "logcumsumexp",
    summary="Running log-sum-exp: out[i] = log(exp(x[0]) + ... + exp(x[i])), computed "
            "stably.",
    short="Running log(exp(x[0]) + ... + exp(x[i])), computed stably",
    example="cumtool logcumsumexp sample_data/logcumsumexp_zeros.csv"),)
