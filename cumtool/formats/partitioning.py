"""What `--engine dask` cuts files into and hands its formats' Partitioning (declared in
cumtool.formats): a partition, and a file as its format's `split` is handed it. Loaded by
the Dask engine and the formats' partition readers only, not by a local run."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol


class Kind(Protocol):
    """What a split needs of a file's kind (cumtool.formats.FileKind); a Protocol, so that
    this module imports nothing of the formats package that names it."""

    @property
    def format(self) -> str: ...

    @property
    def compression(self) -> str | None: ...


@dataclass(frozen=True)
class Partition:
    """A piece of an input that one Dask task reads: a whole file, or its row groups or
    byte range, as its format's `Partitioning.split` cut it."""

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
    kind: Kind  # its format and compression (a FileKind)
    request: Any  # the run's options (cumtool.request.Request)
    partition_bytes: int  # a partition's size on disk, about
    # Runs func(*args) on the workers for each args; the results in order.
    gather: Callable[[Callable[..., Any], list[tuple[Any, ...]]], list[Any]]

    def whole(self, **more: Any) -> Partition:
        """The file as one partition (`more`: a piece of it)."""
        return Partition(self.name, self.location, self.kind.format, self.kind.compression,
                         **more)
