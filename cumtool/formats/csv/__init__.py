"""Delimited text: CSV and TSV, plain or compressed (gzip, bz2, zstd, lz4 on the way).

csv.py reads it in byte ranges cut at record ends (wide.py when a header is too wide for
whole-width batches), csvcells.py and judge.py convert and judge its cells, csvwrite.py
writes it. Those modules (and polars, pyarrow) load only when a run reads or writes it.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from cumtool.formats import Format, Opening, Partitioning, SourceBase, TableSink, Writing

if TYPE_CHECKING:
    from cumtool.formats.partitioning import Partition, Splitting


def _read(opening: Opening) -> SourceBase:
    from cumtool.formats.csv.csv import open_delimited

    return open_delimited(opening)


def _write(writing: Writing) -> TableSink:
    from cumtool.formats.csv.csvwrite import CompressingSink, CsvSink

    assert writing.schema is not None
    return CompressingSink(CsvSink, writing.stream, writing.kind.compression, writing.schema,
                           writing.request.csv_write(writing.kind.format),
                           writing.source_name, writing.threads())


def _split(splitting: Splitting) -> list[Partition]:
    from cumtool.formats.csv.partitions import split

    return split(splitting)


def _open_partition(part: Partition, request: Any, stack: contextlib.ExitStack,
                    whole: Callable[[], SourceBase]) -> SourceBase:
    from cumtool.formats.csv.partitions import open_partition

    return open_partition(part, request, stack, whole)


# --engine dask: byte ranges cut at record ends (by the quote layout of each), read by the
# CSV reader; a compressed file, or one with --comment, whole.
BYTE_RANGES = Partitioning("byte ranges", _split, _open_partition)


def _is_tsv(head: bytes) -> bool:
    """A first line with tabs and no comma (and not a JSON object: JSON Lines)."""
    from cumtool.formats.jsonl import is_json_object

    first_line = head.split(b"\n", 1)[0]
    return b"\t" in first_line and b"," not in first_line and not is_json_object(first_line)


FORMATS = (
    Format("csv", (".csv", ".txt"), rank=10, delimiter=",", line_oriented=True,
           nested_as_text=True, reader=_read, writer=_write, engine="fast",
           partitioning=BYTE_RANGES),
    Format("tsv", (".tsv", ".tab"), rank=20, delimiter="\t", sniff=_is_tsv,
           line_oriented=True, nested_as_text=True, reader=_read, writer=_write,
           engine="fast", partitioning=BYTE_RANGES),
)
