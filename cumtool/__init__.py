"""cumtool: running totals and other cumulative operations on data files.

The Python API is the engine the command line uses: `cumtool.scan` on arrays, and
`cumtool.engine.run(Request(...))` for files.
"""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version
from typing import Any

from cumtool.errors import (
    CumtoolError,
    DataError,
    FormatError,
    OutputError,
    ScanOverflowError,
    UsageError,
)

try:
    __version__ = version("cumtool")
except PackageNotFoundError:  # running from a source tree that is not installed
    __version__ = "0+unknown"

__all__ = [
    "CumtoolError", "DataError", "FormatError", "OutputError", "ScanOverflowError",
    "UsageError", "__version__", "scan",
]


def scan(data: Any, op: str, axis: int = 0, dtype: str | None = None, *,
         overflow: str = "error", skipna: bool = False, indices: bool = False) -> Any:
    """Scan a numpy array along `axis`; see README "Python API"."""
    from cumtool.api import scan as _scan

    return _scan(data, op, axis=axis, dtype=dtype, overflow=overflow, skipna=skipna,
                 indices=indices)

