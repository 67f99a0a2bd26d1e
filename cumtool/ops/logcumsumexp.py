"""logcumsumexp: the running log-sum-exp."""

from __future__ import annotations

from typing import TYPE_CHECKING

from cumtool.errors import UsageError, option
from cumtool.ops.decl import Op, numpy_on_first_use
from cumtool.ops.spec import Accumulator

if TYPE_CHECKING:
    import numpy as np
else:
    np = numpy_on_first_use(globals())


class LogSumExp(Accumulator):
    """In float64 for integers, else the next wider float (complex: torch's complex
    log-add-exp, step by step, in kernels.py)."""

    ufunc = "logaddexp"

    def identity(self, dtype: np.dtype) -> np.generic:
        return dtype.type(-np.inf)

    def dtypes(self, op: str, in_dtype: np.dtype, cast_given: bool, what: str
               ) -> tuple[np.dtype, np.dtype]:
        from cumtool.ops.spec import wider_float

        if cast_given and in_dtype.kind not in "fc":
            raise UsageError(f"logcumsumexp needs a floating or complex {option('dtype')}, "
                             f"not {in_dtype}")
        if in_dtype.kind in "biu":
            return np.dtype(np.float64), np.dtype(np.float64)
        return wider_float(in_dtype), in_dtype


OPS = (Op(
    "logcumsumexp",
    summary="Running log-sum-exp: out[i] = log(exp(x[0]) + ... + exp(x[i])), computed "
            "stably.",
    short="Running log(exp(x[0]) + ... + exp(x[i])), computed stably",
    example="cumtool logcumsumexp sample_data/logcumsumexp_zeros.csv", decimals="float64",
    accumulator=LogSumExp()),)
