"""The partitions `--engine dask` (cumtool.distributed) reads a file in: what each format
package's `Partitioning` (cumtool.formats) makes and reads, and the whole-file reading
that formats which cannot be cut share. Plain Python: no Dask, and a format's library
loads only in its own partition module (formats/csv/partitions.py, ...).
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import IO, TYPE_CHECKING, Any

from cumtool import remote
from cumtool.errors import DataError

if TYPE_CHECKING:
    from cumtool.formats import FileKind, SourceBase


@dataclass(frozen=True)
class Partition:
    """A piece of the input that one task reads: a whole file, or its row groups or byte
    range, as its format's `Partitioning.split` cut it."""

    name: str  # the input as given, for messages
    location: str  # an absolute path or a URL: what the workers open
    format: str  # the registry's name of its format: whose Partitioning reads it
    compression: str | None = None
    row_groups: tuple[int, ...] | None = None  # Parquet; None: all
    start: int = 0  # CSV: the byte range [start, end); end None: to the end
    end: int | None = None
    header: bytes = b""  # CSV after a file's first partition: its first record
    first_of_file: bool = True  # rows in messages count from this partition's first
    output: str | None = None  # where its output goes, with one output per input file
    target: str | None = None  # where that output is put once every file is done


@dataclass(frozen=True)
class Splitting:
    """A file as its format's `Partitioning.split` is handed it, on the client."""

    name: str  # the input as given
    location: str  # what the workers open
    kind: FileKind  # its format and compression
    request: Any  # the run's options (cumtool.request.Request)
    partition_bytes: int  # a partition's size on disk, about
    # Runs func(*args) for each args on the workers; the results in order.
    gather: Callable[[Callable[..., Any], list[tuple[Any, ...]]], list[Any]]

    def whole(self, **more: Any) -> Partition:
        return Partition(self.name, self.location, self.kind.format, self.kind.compression,
                         **more)


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


def whole_file(splitting: Splitting) -> list[Partition]:
    """One partition: the file read whole, by one task."""
    return [splitting.whole()]


def open_whole(part: Partition, request: Any, stack: contextlib.ExitStack) -> SourceBase:
    """A file's reader as the local engine opens it (cumtool.sources: its format by
    --from, name or first bytes, its compression), messages naming it as given."""
    from cumtool import kernels
    from cumtool.sources import open_source

    dtype = kernels.parse_dtype(request.dtype) if request.dtype is not None else None
    source, _kind = open_source(dataclasses.replace(request, input=part.location, inputs=()),
                                dtype, stack, name=part.name)
    return source
