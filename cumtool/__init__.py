"""cumtool: running totals and other cumulative operations on data files.

The Python API is the engine the command line uses: `cumtool.scan` on arrays, and
`cumtool.engine.run(Request(...))` for files.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from cumtool.errors import (
    CumtoolError,
    DataError,
    FormatError,
    OutputError,
    ScanOverflowError,
    UsageError,
)

if TYPE_CHECKING:
    from cumtool.api import scan


def __getattr__(name: str) -> Any:
    """`cumtool.__version__`, read from the installed package's metadata when asked for
    (importlib.metadata costs tens of milliseconds at every start-up otherwise), and
    `cumtool.scan`, cumtool.api's own (its signature and help made from the declared
    options), imported when first asked for: `import cumtool` loads no numpy. So are
    the modules the docs reach through it (`cumtool.engine.run`, `cumtool.columns`)."""
    if name == "scan":
        from cumtool.api import scan

        return scan
    if name in _SUBMODULES:
        import importlib

        return importlib.import_module(f"cumtool.{name}")
    if name == "__version__":
        from importlib.metadata import PackageNotFoundError, version

        try:
            return version("cumtool")
        except PackageNotFoundError:  # a source tree that is not installed
            return "0+unknown"
    raise AttributeError(f"module 'cumtool' has no attribute {name!r}")

# Modules of the API as docs/api.md names them after a plain `import cumtool`.
_SUBMODULES = frozenset({"engine", "columns"})

__all__ = [
    "CumtoolError", "DataError", "FormatError", "OutputError", "ScanOverflowError",
    "UsageError", "__version__", "scan",
]


def __dir__() -> list[str]:
    """The lazy names too, for dir() and help(cumtool)."""
    return sorted({*globals(), "__version__", "scan"})
