"""cumtool: running totals and other cumulative operations on data files.

The Python API is the engine the command line uses: `cumtool.scan` on arrays, and
`cumtool.engine.run(Request(...))` for files.
"""

from __future__ import annotations

from typing import Any

from cumtool.errors import (
    CumtoolError,
    DataError,
    FormatError,
    OutputError,
    ScanOverflowError,
    UsageError,
)


def __getattr__(name: str) -> Any:
    """`cumtool.__version__`, read from the installed package's metadata when asked for
    (importlib.metadata costs tens of milliseconds at every start-up otherwise)."""
    if name == "__version__":
        from importlib.metadata import PackageNotFoundError, version

        try:
            return version("cumtool")
        except PackageNotFoundError:  # a source tree that is not installed
            return "0+unknown"
    raise AttributeError(f"module 'cumtool' has no attribute {name!r}")

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
