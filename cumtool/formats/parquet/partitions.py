"""Parquet for `--engine dask` (cumtool.distributed): a file cut into runs of row groups of
about a partition's size each, and the reader of one run. Loaded only when Dask reads
Parquet."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Collection, Iterator, Mapping
from typing import TYPE_CHECKING, Any

from cumtool.formats import SourceBase, unreadable
from cumtool.formats.partitioning import Partition, Splitting
from cumtool.formats.partitions import open_location

if TYPE_CHECKING:
    import pyarrow as pa


def split(splitting: Splitting) -> list[Partition]:
    """Consecutive row groups of about `partition_bytes` each (at least one partition);
    a compressed file (.parquet.zst) whole, as the local engine reads it."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    if splitting.kind.compression is not None:
        return [splitting.whole()]
    with contextlib.ExitStack() as stack:
        stream = open_location(splitting.location, stack)
        try:
            metadata = pq.ParquetFile(stream).metadata
        except (pa.ArrowException, OSError, UnicodeDecodeError) as error:
            raise unreadable(splitting.name, "parquet", error) from None
    groups: list[list[int]] = [[]]
    size = 0
    for index in range(metadata.num_row_groups):
        if groups[-1] and size >= splitting.partition_bytes:
            groups.append([])
            size = 0
        groups[-1].append(index)
        size += metadata.row_group(index).total_byte_size
    return [splitting.whole(row_groups=tuple(g), first_of_file=k == 0)
            for k, g in enumerate(groups)]


class RowGroupsSource(SourceBase):
    """Some row groups of a Parquet file, read at once (a partition is about 64 MiB)."""

    def __init__(self, part: Partition, stack: contextlib.ExitStack) -> None:
        import pyarrow as pa
        import pyarrow.parquet as pq

        from cumtool.columnar import schema_without_views

        self.name = part.name
        stream = open_location(part.location, stack)
        try:
            file = pq.ParquetFile(stream)
            self._table = (file.read_row_groups(list(part.row_groups))
                           if part.row_groups is not None else file.read())
        except (pa.ArrowException, OSError, UnicodeDecodeError) as error:
            raise unreadable(part.name, "parquet", error) from None
        plain = schema_without_views(self._table.schema)  # as ParquetSource reads it
        if plain is not self._table.schema:
            self._table = self._table.cast(plain)
        self.num_rows = self._table.num_rows

    @property
    def schema(self) -> pa.Schema:
        return self._table.schema

    def batches(self, parse: Mapping[int, pa.DataType] | None = None,
                unused: Collection[int] = ()) -> Iterator[pa.RecordBatch]:
        """The row groups' batches (typed: nothing to parse)."""
        yield from self._table.to_batches()


def open_partition(part: Partition, request: Any, stack: contextlib.ExitStack,
                   whole: Callable[[], SourceBase]) -> SourceBase:
    """Its row groups; a compressed file whole, by the Parquet reader as the local engine
    opens it."""
    if part.compression is not None:
        return whole()
    return RowGroupsSource(part, stack)
