"""The optional C loops of `_sequential.c`, and how they are split across cores.

The module is built by `pip install` where a C compiler is found; without it, `SEQUENTIAL`
is None and the callers run the same recurrences with numpy and Python floats (the same
bits, several times slower). Tests compare the two paths bit for bit.
"""

from __future__ import annotations

import contextlib
import math
import os
import sys
import threading
from collections.abc import Iterator
from types import ModuleType

import numpy as np

from cumtool._ext import load

SEQUENTIAL: ModuleType | None = load("_sequential")  # None: the Python twin (cumtool._ext)

# Below this many cells a second thread costs more than it saves.
_THREAD_CELLS = 1 << 17


THREADS_VARIABLE = "CUMTOOL_THREADS"  # as polars has POLARS_MAX_THREADS


def usable_cores() -> int:
    """The cores this process may run on: its affinity mask (taskset, cpusets), bounded
    by a cgroup CPU quota, so that a container limited to 2 CPUs on a 64-core host uses 2
    threads, not 64 (which would only queue for the quota)."""
    try:
        cores = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # not on Linux
        cores = os.cpu_count() or 1
    quota = cgroup_quota()
    if quota is not None:
        cores = min(cores, max(1, math.ceil(quota)))
    return max(1, cores)


def cgroup_quota(root: str = "/sys/fs/cgroup", membership: str = "/proc/self/cgroup"
                 ) -> float | None:
    """CPUs' worth of time a period that this process's cgroup allows: the smallest quota
    of its cgroup and the ones above it (cgroup v2's cpu.max, v1's cfs quota; a container
    sees its own as the root, a service on a host sits in a slice that may have one).
    None: no quota."""
    v2, v1 = "", ""
    try:
        with open(membership, "rb") as stream:  # bytes, then ASCII: no codec to load
            for line in stream.read().decode("ascii", "replace").splitlines():
                number, controllers, path = [*line.split(":", 2), "", ""][:3]
                if number == "0" and not controllers:
                    v2 = path
                elif "cpu" in controllers.split(","):
                    v1 = path
    except OSError:
        pass
    found = [q for q in (*(_v2_quota(f"{root}{d}") for d in _up(v2)),
                         *(_v1_quota(f"{root}/cpu{d}") for d in _up(v1))) if q is not None]
    return min(found) if found else None


def _up(path: str) -> list[str]:
    """A cgroup's path and every one above it, to the root ("")."""
    parts = [p for p in path.split("/") if p and p not in (".", "..")]
    return ["/" + "/".join(parts[:k]) if k else "" for k in range(len(parts), -1, -1)]


def _v2_quota(directory: str) -> float | None:
    try:
        with open(f"{directory}/cpu.max", "rb") as stream:
            quota, period = stream.read().split()[:2]
        return None if quota == b"max" else int(quota) / int(period)
    except (OSError, ValueError, ZeroDivisionError):
        return None


def _v1_quota(directory: str) -> float | None:
    try:
        with open(f"{directory}/cpu.cfs_quota_us", "rb") as stream:
            quota_us = int(stream.read())
        with open(f"{directory}/cpu.cfs_period_us", "rb") as stream:
            period_us = int(stream.read())
    except (OSError, ValueError):
        return None
    return quota_us / period_us if quota_us > 0 and period_us > 0 else None


def threads_from_environment() -> int | None:
    """CUMTOOL_THREADS, where set to a count of threads (checked by `check_threads`)."""
    text = os.environ.get(THREADS_VARIABLE, "").strip()
    return int(text) if text.isdigit() and int(text) > 0 else None


def check_threads() -> None:
    from cumtool.errors import UsageError

    text = os.environ.get(THREADS_VARIABLE, "").strip()
    if text and threads_from_environment() is None:
        raise UsageError(f"{THREADS_VARIABLE}={text!r} is not a count of threads (1 or "
                         "more)")


@contextlib.contextmanager
def threads(count: int | None) -> Iterator[None]:
    """Run on `count` threads while the block lasts (--threads; None: CUMTOOL_THREADS,
    else the usable cores, as set at import): this module's and the CSV pipeline's
    workers, and the thread pools of polars and Arrow, which size themselves from their
    variables when first loaded (a library the caller loaded before keeps its own)."""
    global CORES
    if count is None:
        yield
        return
    saved = CORES
    CORES = count
    # The libraries' pools take no more than the usable cores: beyond them their threads
    # only queue, each holding the memory it works in (--threads 16 on 2 cores).
    pools = str(min(count, USABLE))
    os.environ["POLARS_MAX_THREADS"] = pools
    os.environ["OMP_NUM_THREADS"] = pools  # Arrow's CPU pool, when it loads
    try:
        yield
    finally:
        CORES = saved


# Arrow's allocator (mimalloc) reads its options once, when pyarrow loads: this module is
# loaded before that, pyarrow only when a table is read or written. With its arenas
# committed up front (its default where the kernel overcommits), the pages its threads
# freed stayed in the peak RSS, the more so the more threads: Parquet -> Parquet, 10M x 8,
# peaked at 335-370 MiB as if on 16 cores and 251-266 at --threads 2, against 271-295 and
# 227-236 committed as used, for the same CPU and bytes (benchmarks/RESULTS-parquet2.md,
# session 7).
MIMALLOC_COMMIT = "MIMALLOC_ARENA_EAGER_COMMIT"


def _environment_to_libraries() -> None:
    """CUMTOOL_THREADS for polars and Arrow too, where the user set it; Arrow's allocator
    committing memory as used. A user's own settings are kept."""
    count = threads_from_environment()
    if count is not None:
        pools = str(min(count, USABLE))  # as threads() gives them
        os.environ.setdefault("POLARS_MAX_THREADS", pools)
        os.environ.setdefault("OMP_NUM_THREADS", pools)
    if "pyarrow" not in sys.modules:  # (loaded already, its allocator is set up: left alone)
        os.environ.setdefault(MIMALLOC_COMMIT, "0")


# glibc gives each thread that allocates an arena of its own, up to 8 a core, and keeps the
# memory freed in one for that arena: the more threads, the more of the peak RSS is pages
# freed in one arena while another allocates afresh. With 16 threads' queues (USABLE and
# CORES set to 16 on 2 cores), 2M x 8 JSON Lines -> JSON Lines peaked at 284-298 MiB, and
# 238-260 with 4 arenas, for the same CPU; CSV and --by a few MiB lower, Parquet the same
# (its buffers are Arrow's, whose allocator is its own). What the threads allocate from
# glibc are big buffers, a few a block: 4 arenas do not make them wait on each other.
MALLOC_ARENAS = 4
_M_ARENA_MAX = -8  # mallopt's parameter (malloc.h)


def cap_malloc_arenas() -> None:
    """Cap glibc's arenas at MALLOC_ARENAS, for this process's run (the command line's
    only: a program that calls cumtool keeps its allocator as it set it up), where the
    user did not set MALLOC_ARENA_MAX. Elsewhere than glibc on Linux, nothing."""
    if not sys.platform.startswith("linux") or "MALLOC_ARENA_MAX" in os.environ:
        return
    import ctypes  # loaded already by numpy: no start-up cost

    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):
        return
    mallopt(_M_ARENA_MAX, MALLOC_ARENAS)


USABLE = usable_cores()  # the cores there are, whatever --threads says
CORES = threads_from_environment() or USABLE
_environment_to_libraries()


def running_threads() -> int:
    """Threads that run at once: --threads (CORES), no more than the usable cores (beyond
    them the pools are held to those)."""
    return min(CORES, USABLE)


def ahead_workers(threads: int, cap: int) -> int:
    """Threads for work made ahead of its turn and taken in order (blocks parsed, batches'
    text made): `threads` (--threads), but no more than the usable cores (more only queue
    for them, in memory held ahead and context switches; two where two or more are asked,
    so that a pool is one on one core too) nor `cap` (beyond it the turns taken in order
    are the limit)."""
    if threads <= 1:
        return 1
    return max(2, min(threads, USABLE, cap))


def accumulate_rows(product: bool, x: np.ndarray, start: np.ndarray) -> np.ndarray | None:
    """A new float64 array: start + x[0], then the running sum (or product) down axis 0,
    computed row by row. None, having done nothing, when the C loop is not there. One
    line (a table's column) too: the C loop keeps its running value in a register, 0.87
    ns a cell here against 3.7 for numpy's accumulate, which reads it back from memory
    (and wants a copy of x to accumulate in place)."""
    if SEQUENTIAL is None or x.dtype != np.float64 or x.ndim < 1 \
            or not x.flags.c_contiguous:  # (so that the reshape below is a view)
        return None
    block = x.reshape(x.shape[0], -1)
    out = np.empty(block.shape)
    first = np.ascontiguousarray(start, dtype=np.float64).reshape(-1)
    SEQUENTIAL.accumulate_rows(int(product), block, first, out)
    return out.reshape(x.shape)


# scan_column's steps (_sequential.c): a column's running value kept in a register,
# 0.7-1.5 ns a cell against 3.4-3.7 for numpy's accumulate, which reads it back from
# memory (and, for an int64 sum, ~10 with its copies and overflow bound).
COLUMN_MAX, COLUMN_MIN, COLUMN_SUM, COLUMN_SUM_CHECKED = range(4)


def scan_column(step: int, x: np.ndarray, start: np.ndarray) -> np.ndarray | None:
    """A new array: the running value of the column x from start, by `step`: cummax or
    cummin (float64 or int64, torch's ties: the later element; a NaN wins and stays), or
    an int64 cumsum wrapped to 64 bits as numpy's add wraps (COLUMN_SUM_CHECKED: None
    where it leaves int64, for numpy's way to name the overflow). None, having done
    nothing, when the C loop is not there or does not apply."""
    integer = x.dtype == np.int64
    if SEQUENTIAL is None or x.ndim != 1 or not len(x) or not (
            integer or (x.dtype == np.float64 and step in (COLUMN_MAX, COLUMN_MIN))):
        return None
    first = np.ascontiguousarray(start, dtype=x.dtype).reshape(-1)
    if first.shape != (1,):
        return None
    out = np.empty(len(x), dtype=x.dtype)
    return None if SEQUENTIAL.scan_column(x, first, out, step, integer) >= 0 else out


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
