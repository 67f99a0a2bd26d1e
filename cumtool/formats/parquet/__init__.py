"""Parquet, read and written with pyarrow (parquet.py, loaded only when used)."""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from cumtool.formats import Format, Opening, Partitioning, SourceBase, TableSink, Writing

if TYPE_CHECKING:
    from cumtool.formats.partitioning import Partition, Splitting


def _read(opening: Opening) -> SourceBase:
    from cumtool import remote
    from cumtool.formats.parquet.parquet import ParquetSource

    stream = opening.seekable()  # its footer is at the end: a pipe goes to disk first
    path = opening.path
    local = path if path and not remote.is_url(path) else None
    return ParquetSource(local or stream, opening.name, opening.request.batch_rows)


def _write(writing: Writing) -> TableSink:
    from cumtool.formats.parquet.parquet import ParquetSink

    assert writing.schema is not None
    return ParquetSink(writing.stream, writing.schema)


def _split(splitting: Splitting) -> list[Partition]:
    from cumtool.formats.parquet.partitions import split

    return split(splitting)


def _open_partition(part: Partition, request: Any, stack: contextlib.ExitStack,
                    whole: Callable[[], SourceBase]) -> SourceBase:
    from cumtool.formats.parquet.partitions import open_partition

    return open_partition(part, request, stack, whole)


# --engine dask: runs of row groups of about a partition's size.
ROW_GROUPS = Partitioning("row groups", _split, _open_partition)


FORMATS = (
    Format("parquet", (".parquet", ".pq"), rank=30, typed=True, binary=True,
           magic=(b"PAR1",), trailer=b"PAR1", by_magic=True, seekable=True, grouped=True,
           reader=_read, writer=_write, partitioning=ROW_GROUPS),
)
