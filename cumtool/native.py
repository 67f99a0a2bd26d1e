"""The optional C loops of `_sequential.c`, and how they are split across cores.

The module is built by `pip install` where a C compiler is found; without it, `SEQUENTIAL`
is None and the callers run the same recurrences with numpy and Python floats (the same
bits, several times slower). Tests compare the two paths bit for bit.
"""

from __future__ import annotations

import os
import threading
from types import ModuleType

import numpy as np

SEQUENTIAL: ModuleType | None
try:
    from cumtool._ext import _sequential as SEQUENTIAL
except ImportError:  # not built: no C compiler at install time
    SEQUENTIAL = None

# Below this many cells a second thread costs more than it saves.
_THREAD_CELLS = 1 << 17


def _cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


CORES = _cores()


def accumulate_rows(product: bool, x: np.ndarray, start: np.ndarray) -> np.ndarray | None:
    """A new float64 array: start + x[0], then the running sum (or product) down axis 0,
    computed row by row. None, having done nothing, when the C loop is not there or a
    block of one line would gain nothing (numpy's accumulate is then contiguous too)."""
    if SEQUENTIAL is None or x.dtype != np.float64 or x.ndim < 2 \
            or not x.flags.c_contiguous:  # (so that the reshape below is a view)
        return None
    block = x.reshape(x.shape[0], -1)
    if block.shape[1] < 2:
        return None
    out = np.empty(block.shape)
    first = np.ascontiguousarray(start, dtype=np.float64).reshape(-1)
    SEQUENTIAL.accumulate_rows(int(product), block, first, out)
    return out.reshape(x.shape)


def logaddexp_accumulate(acc: np.ndarray, start: np.ndarray) -> bool:
    """In place: acc[0] = logaddexp(start, acc[0]), then logaddexp.accumulate down axis 0,
    on a float64 block, with the lines split over the cores (the C loop releases the GIL).
    Returns False, having done nothing, when the C loop is not there or does not apply."""
    if (SEQUENTIAL is None or acc.dtype != np.float64 or acc.ndim == 0
            or not acc.flags.c_contiguous):  # (so that the reshape below is a view)
        return False
    block = acc.reshape(acc.shape[0], -1)
    first = np.ascontiguousarray(start, dtype=np.float64).reshape(-1)
    lines = block.shape[1]
    parts = min(CORES, lines) if block.size >= _THREAD_CELLS else 1
    if parts <= 1:
        SEQUENTIAL.logaddexp_accumulate(block, first, 0, lines)
        return True
    bounds = [lines * k // parts for k in range(parts + 1)]
    errors: list[BaseException] = []

    def scan(lo: int, hi: int) -> None:
        try:
            SEQUENTIAL.logaddexp_accumulate(block, first, lo, hi)
        except BaseException as error:  # handed to the calling thread below
            errors.append(error)

    helpers = [threading.Thread(target=scan, args=(bounds[k], bounds[k + 1]))
               for k in range(1, parts)]
    for helper in helpers:
        helper.start()
    scan(bounds[0], bounds[1])
    for helper in helpers:
        helper.join()
    if errors:
        raise errors[0]
    return True
