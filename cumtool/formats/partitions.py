"""What the format packages' partitionings for `--engine dask` (cumtool.formats.Partitioning,
formats/csv/partitions.py, formats/parquet/partitions.py) share: a partition's file
opened by path or URL, and its size. Plain Python: no Dask, no format library."""

from __future__ import annotations

import contextlib
import os
from typing import IO

from cumtool import remote
from cumtool.errors import DataError


def open_location(location: str, stack: contextlib.ExitStack) -> IO[bytes]:
    """A partition's file (a path or a URL), closed with `stack`."""
    if remote.is_url(location):
        return remote.open_input(location, stack)
    try:
        return stack.enter_context(open(location, "rb"))
    except FileNotFoundError:
        raise DataError(f"{location}: no such file") from None
    except OSError as error:
        raise DataError(f"{location}: cannot read: {error.strerror or error}") from None


def size_of(location: str) -> int:
    if remote.is_url(location):
        fs, path = remote.filesystem(location)
        return int(fs.size(path))
    return os.path.getsize(location)
