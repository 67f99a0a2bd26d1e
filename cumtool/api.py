"""`cumtool.scan`: the engine's kernels on in-memory data, for Python users."""

from __future__ import annotations

from typing import Any

import numpy as np

from cumtool import kernels
from cumtool.engine import _array_index, resolve_array_axis
from cumtool.errors import DataError, ScanOverflowError


def scan(data: Any, op: str, axis: int | str = 0, dtype: str | None = None, *,
         overflow: str = "error", skipna: bool = False, indices: bool = False) -> Any:
    """Scan `data` (anything numpy.asarray accepts) along `axis` with the CLI's rules.

    Returns the result array, or `(values, indices)` with `indices=True` (cummax/cummin).
    Raises cumtool.UsageError for bad arguments and cumtool.DataError (ScanOverflowError)
    for data that cannot be scanned, e.g. integer overflow without overflow="wrap".
    """
    array = np.asarray(data)
    if array.dtype.hasobject:
        raise DataError("cumtool.scan needs a numeric array, not Python objects")
    cast = kernels.parse_dtype(dtype) if dtype is not None else None
    spec = kernels.make_spec(op, array.dtype, cast, overflow=overflow,  # type: ignore[arg-type]
                             skipna=skipna, indices=indices, what="the array")
    axis_number = resolve_array_axis(str(axis), array.ndim)
    try:
        result = kernels.scan_array(spec, array, axis_number)
    except ScanOverflowError as error:
        # The kernel counts along the scanned axis first; report the input's own index.
        index = _array_index(error.position, axis_number, 0) if array.ndim else ()
        raise ScanOverflowError(str(error), index) from None
    return (result.values, result.indices) if indices else result.values
