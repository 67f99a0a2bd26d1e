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


def scan(data: Any, op: str, axis: int | str = 0, dtype: str | None = None,
         **options: Any) -> Any:
    """Scan an array or an Arrow table with the CLI's rules; see README "Python API".

    Options: overflow="error"|"wrap", skipna, indices, reverse, exclusive, and for tables
    by, reset, columns, keep (full description: cumtool.api.scan)."""
    from cumtool.api import scan as _scan

    return _scan(data, op, axis=axis, dtype=dtype, **options)
