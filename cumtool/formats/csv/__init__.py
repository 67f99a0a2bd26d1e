"""Delimited text: CSV and TSV, plain or compressed (gzip, bz2, zstd, lz4 on the way).

csv.py reads it in byte ranges cut at record ends (wide.py when a header is too wide for
whole-width batches), csvcells.py and judge.py convert and judge its cells, csvwrite.py
writes it. Those modules (and polars, pyarrow) load only when a run reads or writes it.
"""

from __future__ import annotations

from cumtool.formats import Format, Opening, SourceBase, TableSink, Writing


def _read(opening: Opening) -> SourceBase:
    from cumtool.formats.csv.csv import open_delimited

    return open_delimited(opening)


def _write(writing: Writing) -> TableSink:
    from cumtool.formats.csv.csvwrite import CompressingSink, CsvSink

    assert writing.schema is not None
    return CompressingSink(CsvSink, writing.stream, writing.kind.compression, writing.schema,
                           writing.request.csv_write(writing.kind.format),
                           writing.source_name, writing.threads())


def _is_tsv(head: bytes) -> bool:
    """A first line with tabs and no comma (and not a JSON object: JSON Lines)."""
    from cumtool.formats.jsonl import is_json_object

    first_line = head.split(b"\n", 1)[0]
    return b"\t" in first_line and b"," not in first_line and not is_json_object(first_line)


FORMATS = (
    Format("csv", (".csv", ".txt"), rank=10, delimiter=",", line_oriented=True,
           nested_as_text=True, reader=_read, writer=_write),
    Format("tsv", (".tsv", ".tab"), rank=20, delimiter="\t", sniff=_is_tsv,
           line_oriented=True, nested_as_text=True, reader=_read, writer=_write),
)
