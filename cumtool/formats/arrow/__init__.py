"""Arrow IPC: the file format (.arrow, .feather) and the stream format (.arrows), read and
written with pyarrow (arrow_ipc.py, loaded only when used)."""

from __future__ import annotations

from typing import IO

from cumtool.formats import Format, Opening, SourceBase, TableSink, Writing

FILE_MAGIC = b"ARROW1"
STREAM_MAGIC = b"\xff\xff\xff\xff"  # the continuation marker of the first message


def _read(opening: Opening) -> SourceBase:
    from cumtool.formats.arrow.arrow_ipc import ArrowSource

    file_format = _file_format(opening.stream, opening.kind.format == "arrow")
    if file_format:  # its footer is at the end: a pipe goes to disk first
        opening.seekable()
    path = opening.path
    return ArrowSource(path if path and file_format else opening.stream, opening.name,
                       file_format=file_format, batch_rows=opening.request.batch_rows)


def _file_format(stream: IO[bytes], asked: bool) -> bool:
    """Whether the input is the file format: as its first bytes say (`--from arrow` on a
    stream still reads it), else as asked."""
    try:
        if hasattr(stream, "peek"):
            head = bytes(stream.peek(8)[:8])
        elif stream.seekable():
            head = stream.read(8)
            stream.seek(0)
        else:
            return asked
    except OSError:
        return asked
    if head.startswith(FILE_MAGIC):
        return True
    return False if head.startswith(STREAM_MAGIC) else asked


def _write(writing: Writing) -> TableSink:
    from cumtool.formats.arrow.arrow_ipc import ArrowSink

    assert writing.schema is not None
    return ArrowSink(writing.stream, writing.schema, file_format=writing.kind.format == "arrow")


FORMATS = (
    Format("arrow", (".arrow", ".feather"), rank=60, typed=True, binary=True,
           magic=(FILE_MAGIC,), by_magic=True, grouped=True, reader=_read, writer=_write),
    Format("arrows", (".arrows",), rank=70, typed=True, binary=True, magic=(STREAM_MAGIC,),
           by_magic=True, grouped=True, reader=_read, writer=_write),
)
