"""Opening the input: a path or standard input, its format (by --from, name or magic
bytes) and compression, and the reader for it. Each format's module (and its library:
polars, pyarrow) is imported only when that format is read."""

from __future__ import annotations

import contextlib
import io
import os
import sys
from typing import IO, TYPE_CHECKING, Any, cast

import numpy as np

from cumtool import remote
from cumtool.errors import DataError, FormatError, UsageError
from cumtool.fingerprint import Span, SpanReader
from cumtool.formats import (
    BY_MAGIC,
    DELIMITED,
    INPUT_FORMATS,
    SPREADSHEETS,
    FileKind,
    check_format_name,
    kind_from_magic,
    kind_from_name,
    looks_like_json,
    peekable,
    unread_container,
    unreadable,
)

if TYPE_CHECKING:
    from cumtool.request import Request

SNIFF_BYTES = 1 << 16  # enough for the first line of almost any table


def open_source(
    request: Request, dtype: np.dtype | None, stack: contextlib.ExitStack,
    stdin: IO[bytes] | None = None, span: Span | None = None,
) -> tuple[Any, FileKind]:
    """`stdin`: standard input as read so far and the rest (the small path read some);
    `span`: the part of the file to read (a --state run: cumtool.fingerprint)."""
    path: str | None = None
    if request.input == "-":
        name = "standard input"
        stream: IO[bytes] = peekable(stdin_stream() if stdin is None else stdin)
        sniff = _peek(stream, name)
        head = sniff[:8]
        kind = kind_from_magic(sniff)
    else:
        path = request.input
        name = path
        # A URL (s3://, gs://, https://...) opens through fsspec as a seekable stream.
        if span is not None and span.spool is not None:  # a FIFO, read while fingerprinted
            stream = span.spool
            stream.seek(0)
            path = None
            span = None
        else:
            stream = (remote.open_input(path, stack) if remote.is_url(path)
                      else open_path(path, stack))
        if span is not None:  # header + bytes [start, end) only: io.BufferedReader peeks
            stream = io.BufferedReader(SpanReader(cast(io.BufferedReader, stream), span),
                                       buffer_size=SNIFF_BYTES)
        try:
            if stream.seekable():
                sniff = stream.read(SNIFF_BYTES)
                stream.seek(0)
            else:  # a FIFO, <(process substitution), a terminal: read as a stream
                sniff = _peek(stream, name)
                path = None
        except OSError as error:
            raise DataError(f"{name}: cannot read: {error.strerror or error}") from None
        head = sniff[:8]
        kind = kind_from_name(name) or kind_from_magic(sniff)
        sniffed = kind_from_magic(head)
        binary = (sniffed.format in BY_MAGIC and sniffed.format != "parquet") or (
            sniffed.format == "parquet" and (path is None or _has_parquet_footer(stream)))
        if binary and sniffed.format != kind.format:
            kind = sniffed  # a binary format is known by its bytes, whatever the name says
        if kind.compression is None and head.startswith(b"\x1f\x8b"):
            kind = FileKind(kind.format, "gzip")
    if kind.compression == "gzip" and (path is None or kind_from_name(name) is None):
        # Unnamed gzip (standard input, no extension): look inside for tsv, npy, parquet.
        kind = FileKind(_sniff_gzip(stream, seekable=path is not None).format, "gzip")
    if request.from_format:
        fmt = check_format_name(request.from_format, INPUT_FORMATS, "--from")
        kind = FileKind(fmt, kind.compression)
    elif kind.compression is None and kind.format in DELIMITED:
        _refuse_what_is_not_a_table(name, sniff, request.op)
    if request.sheet is not None and kind.format not in SPREADSHEETS:
        raise UsageError(f"--sheet is for spreadsheets (.xlsx, .xls, .ods); {name} is read "
                         f"as {kind.format}")
    if kind.format == "npy" and (head.startswith(b"PK") or name.lower().endswith(".npz")):
        raise FormatError(f"{name}: .npz input is not supported; give a .npy file")
    compressed = kind.compression
    if compressed and kind.format not in DELIMITED:
        import pyarrow as pa

        stream = pa.CompressedInputStream(pa.PythonFile(stream, mode="r"), compressed)
        path = None
    # Each format's module (and its library: polars, pyarrow) loads only when used.
    if kind.format in DELIMITED:
        from cumtool.formats.csv import CsvSource, file_size
        from cumtool.formats.records import MAX_RECORD_BYTES
        from cumtool.formats.wide import WideInput, WideSource

        # With a float --dtype, integers to be scanned are read as floats straight away.
        counted = CountingReader(stream)  # before decompression: progress in stored bytes
        float_columns = dtype is not None and dtype.kind in "fc"
        try:
            source: Any = CsvSource(
                cast(IO[bytes], counted), name, request.csv_read(kind.format),
                compression=compressed, float_columns=float_columns,
                decimal=request.decimal, total_bytes=file_size(stream),
                max_record=request.max_record_size or MAX_RECORD_BYTES)
        except WideInput as wide:  # read column group by column group (formats/wide.py)
            source = WideSource(wide, name, request.csv_read(kind.format),
                                float_columns=float_columns, decimal=request.decimal,
                                total_bytes=file_size(stream))
        return Measured(source, counted), kind
    if kind.format == "parquet":
        from cumtool.formats.parquet import ParquetSource

        if path is None:  # its footer is at the end: spool to disk, not to memory
            stream = stack.enter_context(_spooled(stream, name, "parquet"))
        local = path if path and not remote.is_url(path) else None
        return ParquetSource(local or stream, name, request.batch_rows), kind
    if kind.format != "npy":
        return _open_more(request, kind, stream, name, path, stack), kind
    from cumtool.formats.npy import NpySource

    return NpySource(stream, name, None if remote.is_url(path) else path), kind


def _open_more(request: Request, kind: FileKind, stream: IO[bytes], name: str,
               path: str | None, stack: contextlib.ExitStack) -> Any:
    """JSON Lines, Arrow IPC and spreadsheets (each module loads only when used)."""
    if kind.format == "jsonl":
        from cumtool.formats.jsonl import JsonlSource
        from cumtool.formats.records import MAX_RECORD_BYTES

        if path is None:  # read twice (columns first, then batches): from disk
            stream = stack.enter_context(_spooled(stream, name, "jsonl"))
        return JsonlSource(stream, name, request.batch_rows,
                           request.max_record_size or MAX_RECORD_BYTES)
    if kind.format in ("arrow", "arrows"):
        from cumtool.formats.arrow_ipc import ArrowSource

        file_format = _ipc_file_format(stream, kind.format == "arrow")
        if path is None and file_format:  # its footer is at the end: spool to disk
            stream = stack.enter_context(_spooled(stream, name, "arrow"))
        return ArrowSource(path if path and file_format else stream, name,
                           file_format=file_format, batch_rows=request.batch_rows)
    from cumtool.formats.excel import SpreadsheetSource

    return SpreadsheetSource(path if path else _read_all(stream, name), name, request.sheet,
                             header=request.header)


def _refuse_what_is_not_a_table(name: str, head: bytes, op: str) -> None:
    """A compression cumtool does not read, or JSON that is not JSON Lines: said as such,
    with the command that makes it readable, rather than met as a CSV error."""
    container = unread_container(name, head)
    piped = name == "standard input"
    if container is not None:
        undo = {"xz": "xz -dc", "zip": "unzip -p", "7z": "7z x -so", "tar": "tar -xOf",
                "compress (.Z)": "uncompress -c"}[container]
        command = f"... | {undo}" if piped else f"{undo} {name}"
        raise FormatError(f"{name}: {container} is a compression or archive cumtool does "
                          f"not read; unpack it on the way: {command} | cumtool {op}")
    if looks_like_json(head):
        command = "... | jq -c '.[]'" if piped else f"jq -c '.[]' {name}"
        raise FormatError(f"{name}: this is JSON, not JSON Lines (one object per line), "
                          f"which cumtool reads; turn it into JSON Lines on the way: "
                          f"{command} | cumtool {op} (or jq -c . for objects one after "
                          "another)")


def _ipc_file_format(stream: IO[bytes], asked: bool) -> bool:
    """Whether Arrow IPC input is the file format: as its first bytes say (`--from arrow`
    on a stream still reads it), else as asked."""
    from cumtool.formats import ARROW_FILE_MAGIC, ARROW_STREAM_MAGIC

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
    if head.startswith(ARROW_FILE_MAGIC):
        return True
    return False if head.startswith(ARROW_STREAM_MAGIC) else asked


def _read_all(stream: IO[bytes], name: str) -> bytes:
    try:
        return stream.read()
    except (OSError, ValueError) as error:
        raise unreadable(name, "a spreadsheet", error) from None


def open_path(path: str, stack: contextlib.ExitStack) -> IO[bytes]:
    if not os.path.exists(path):
        raise DataError(f"{path}: no such file")
    if os.path.isdir(path):
        raise DataError(f"{path}: is a directory, not a file")
    try:
        # A buffer as large as the sniff: peek() on a pipe returns at most one buffer.
        stream = stack.enter_context(open(path, "rb", buffering=SNIFF_BYTES))
    except OSError as error:
        raise DataError(f"{path}: cannot read: {error.strerror or error}") from None
    return stream


def _peek(stream: IO[bytes], name: str) -> bytes:
    """The first bytes of a stream, as far as they have arrived, left to be read again
    (the first line tells tsv from csv; magic bytes tell npy, parquet, gzip)."""
    try:
        return bytes(stream.peek(SNIFF_BYTES)[:SNIFF_BYTES])  # type: ignore[attr-defined]
    except OSError as error:
        raise DataError(f"{name}: cannot read: {error.strerror or error}") from None


def _spooled(stream: IO[bytes], name: str, fmt: str) -> IO[bytes]:
    from cumtool.pipeline import spool_stream

    try:
        return spool_stream(stream)
    except (OSError, ValueError) as error:  # pyarrow's decompression errors are ValueErrors
        raise unreadable(name, fmt, error) from None


class CountingReader:
    """A read-only stream that counts the bytes read through it."""

    def __init__(self, stream: IO[bytes]) -> None:
        self._stream = stream
        self._read1 = getattr(stream, "read1", stream.read)
        self.count = 0

    def read(self, size: int = -1) -> bytes:
        data = self._stream.read(size)
        self.count += len(data)
        return data

    def read1(self, size: int = -1) -> bytes:
        data: bytes = self._read1(size)
        self.count += len(data)
        return data

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return False

    def fileno(self) -> int:
        return self._stream.fileno()

    def tell(self) -> int:
        return self.count

    @property
    def closed(self) -> bool:
        return self._stream.closed

    def close(self) -> None:
        pass  # the run closes the stream itself


class Measured:
    """A text source whose progress is counted in the bytes of the input as stored, so a
    compressed file's progress is measured against its (compressed) size."""

    def __init__(self, source: Any, counted: CountingReader) -> None:
        self._source = source
        self._counted = counted

    @property
    def bytes_read(self) -> int:
        return self._counted.count

    def __getattr__(self, name: str) -> Any:
        return getattr(self._source, name)


def stdin_stream() -> IO[bytes]:
    """Standard input as a stream of our own: when a run stops early (`| head`, an error)
    the reader thread may still be blocked reading it, and must not then hold the lock of
    sys.stdin, which Python takes at exit (it would abort: "could not acquire lock")."""
    if sys.stdin is None:  # started with standard input closed (`<&-`)
        raise DataError("standard input is closed; give an INPUT file")
    try:
        return open(sys.stdin.fileno(), "rb", closefd=False)
    except (AttributeError, OSError, ValueError):  # not a real file (tests, embedding)
        return sys.stdin.buffer


def _has_parquet_footer(stream: IO[bytes]) -> bool:
    try:
        size = stream.seek(0, 2)
        stream.seek(max(size - 4, 0))
        return stream.read(4) == b"PAR1"
    except OSError:
        return False
    finally:
        stream.seek(0)


def _sniff_gzip(stream: IO[bytes], seekable: bool) -> FileKind:
    """What a gzip stream holds, from the decompressed start of its first bytes."""
    import zlib

    if seekable:
        data = stream.read(1 << 16)
        stream.seek(0)
    else:
        data = stream.peek(1 << 16)  # type: ignore[attr-defined]
    try:
        inner = zlib.decompressobj(16 + zlib.MAX_WBITS).decompress(data, 1 << 16)
    except zlib.error:
        return FileKind("csv")
    return kind_from_magic(inner)
