"""The optional C extensions: `_sequential` (float recurrences, grouped scans, the key
table of --by), `_csvtext` (the CSV format's loops over cells and its compiled
pipeline), `_numtext` (number text to and from float64 without the GIL, on the vendored
yyjson core and ffc.h) and `_jsonl` (the JSON Lines reader's typed block parser). Each
has a Python twin that runs where no compiler was found and that the tests compare with
it bit for bit; cumtool/native.py, cumtool/numtext.py, formats/csv/small.py and
formats/jsonl/jsonl.py choose between them. Kept in a package of their own, below
everything: they import nothing of cumtool.

`load` is the one switch between C and Python for every extension: with
CUMTOOL_PURE_PYTHON=1 in the environment, every caller runs the Python twin (the tests run
both, tests/test_twins.py)."""

from __future__ import annotations

import importlib
import os
from types import ModuleType

PURE_VARIABLE = "CUMTOOL_PURE_PYTHON"


def load(name: str) -> ModuleType | None:
    """The compiled extension `name` (`_csvtext`, ...), or None where it was not built
    (no C compiler at install time) or CUMTOOL_PURE_PYTHON asks for the Python twins."""
    if os.environ.get(PURE_VARIABLE, "") not in ("", "0"):
        return None
    try:
        return importlib.import_module(f"{__name__}.{name}")
    except ImportError:
        return None
