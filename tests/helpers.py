"""Helpers shared by several test files: bytes of a file format, the check that a run
succeeded quietly, two's-complement arithmetic, torch's log-add-exp, and a loop over the
1-D lines of an array. Nothing here imports cumtool: the references built on these stay
independent of the code they check."""

from __future__ import annotations

import io
import math
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
from click.testing import Result


def npy_bytes(array: np.ndarray, *, fortran: bool = False, allow_pickle: bool = True
              ) -> bytes:
    """The .npy file numpy writes for `array` (in Fortran order if `fortran`)."""
    buffer = io.BytesIO()
    np.save(buffer, np.asfortranarray(array) if fortran else array, allow_pickle=allow_pickle)
    return buffer.getvalue()


def parquet_bytes(table: pa.Table, **options: Any) -> bytes:
    """The Parquet file pyarrow writes for `table` (`options` go to pq.write_table)."""
    sink = io.BytesIO()
    pq.write_table(table, sink, **options)
    return sink.getvalue()


def ok(result: Result) -> Result:
    """The run succeeded and printed nothing on standard error."""
    assert result.exit_code == 0, result.stderr
    assert result.stderr == ""
    return result


def int_fits(value: int, dtype: np.dtype) -> bool:
    info = np.iinfo(dtype)
    return int(info.min) <= value <= int(info.max)


def wrap_int(value: int, dtype: np.dtype) -> int:
    """Two's complement: `value` modulo 2**bits, as the (signed or unsigned) dtype sees it."""
    bits = dtype.itemsize * 8
    value %= 1 << bits
    if dtype.kind == "i" and value >= 1 << (bits - 1):
        value -= 1 << bits
    return value


def log_add_exp(x: float, y: float) -> float:
    """torch's stable log(exp(x) + exp(y)) for reals (its _log_add_exp_helper): -inf is the
    identity, two equal infinities give themselves, a NaN spreads."""
    if math.isnan(x) or math.isnan(y):
        return math.nan
    low, high = min(x, y), max(x, y)
    if low == high and not math.isfinite(low):
        return x
    return math.log1p(math.exp(low - high)) + high


def along_axis(array: np.ndarray, axis: int,
               line_result: Callable[[list[Any]], Sequence[Sequence[Any]]],
               *dtypes: Any) -> tuple[np.ndarray, ...]:
    """Call `line_result` on every 1-D line of `array` along `axis`, given as a list of
    Python scalars. It returns one sequence per entry of `dtypes`, as long as the line;
    they are gathered into arrays of those dtypes and of `array`'s shape."""
    moved = np.moveaxis(array, axis, -1)
    outs = [np.empty(moved.shape, dtype=dtype) for dtype in dtypes]
    for index in np.ndindex(moved.shape[:-1]):
        results = line_result(moved[index].tolist())
        assert len(results) == len(dtypes)
        for out, result in zip(outs, results, strict=True):
            out[index] = result
    return tuple(np.moveaxis(out, -1, axis) for out in outs)


# The cumtool installed with the Python running the tests (a venv's), not whichever one
# comes first on PATH.
_SCRIPT = Path(sys.executable).with_name("cumtool")
CUMTOOL = str(_SCRIPT) if _SCRIPT.exists() else "cumtool"


def usage_error(message: str, command: str = "main cumsum") -> str:
    """A Click usage error as cumtool prints it: one line, the help to read at its end."""
    end = "" if message.endswith((".", "?")) else "."
    return f"Error: {message}{end} Try '{command} --help'.\n"
