"""cumprod: the running product."""

from __future__ import annotations

from typing import TYPE_CHECKING

from cumtool.ops.cumsum import exact_dtypes
from cumtool.ops.decl import Op
from cumtool.ops.spec import Accumulator

if TYPE_CHECKING:
    import numpy as np


class Product(Accumulator):
    ufunc = "multiply"
    native = "product"

    def identity(self, dtype: np.dtype) -> np.generic:
        return dtype.type(1)

    def dtypes(self, op: str, in_dtype: np.dtype, cast_given: bool, what: str
               ) -> tuple[np.dtype, np.dtype]:
        return exact_dtypes(in_dtype, cast_given)


OPS = (Op(
    "cumprod",
    summary="Running product: out[i] = x[0] * ... * x[i].",
    short="Running product: out[i] = x[0] * x[1] * ... * x[i]",
    example="cumtool cumprod sample_data/cumprod_growth.csv", decimals="float64",
    accumulator=Product()),)
