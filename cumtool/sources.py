"""Opening the input: a path or standard input, its format (by --from, name or magic
bytes) and compression, and the reader for it. Each format's module (and its library:
polars, pyarrow) is imported only when that format is read."""

from __future__ import annotations

import contextlib
import io
import os
import sys
from typing import IO, TYPE_CHECKING, Protocol, cast

import numpy as np

from cumtool import remote
from cumtool.errors import DataError, FormatError
from cumtool.formats import (
    BOM,
    FileKind,
    Opening,
    PrefixedStream,
    ReadRequest,
    SourceBase,
    peekable,
    unreadable,
)
from cumtool.formats.registry import (
    BY_MAGIC,
    INPUT_FORMATS,
    check_format_name,
    compression_of,
    decompressed_start,
    format_named,
    kind_from_magic,
    kind_from_name,
    unread_container,
)

if TYPE_CHECKING:
    from cumtool.fingerprint import Span


class InputRequest(ReadRequest, Protocol):
    """What opening the input asks of the run's options (cumtool.request.Request)."""

    @property
    def input(self) -> str: ...

    @property
    def from_format(self) -> str | None: ...

    @property
    def op(self) -> str: ...

    @property
    def encoding(self) -> str | None: ...

    def refuse_unread(self, fmt: str, name: str) -> None: ...

SNIFF_BYTES = 1 << 16  # enough for the first line of almost any table
_BZIP2_BLOCK = 1 << 20  # more than bzip2's largest block (900 kB of text) compressed


def open_source(
    request: InputRequest, dtype: np.dtype | None, stack: contextlib.ExitStack,
    stdin: IO[bytes] | None = None, span: Span | None = None, name: str | None = None,
) -> tuple[SourceBase, FileKind]:
    """The reader of the run's input, by its format (cumtool.formats.registry), and that
    format. `stdin`: standard input as read so far and the rest (the small path read
    some); `span`: the part of the file to read (a --state run: cumtool.fingerprint);
    `name`: how messages name the input, where not as its path (a Dask worker opens it
    by its absolute path or URL)."""
    path: str | None = None
    limit = _record_limit(request)
    if request.input == "-":
        name = "standard input"
        stream: IO[bytes] = peekable(stdin_stream() if stdin is None else stdin)
        sniff = _peek(stream, name)
        if not request.from_format:
            sniff, stream = _first_line(stream, sniff, name, limit)
        head = sniff[:8]
        kind = _sniffed(sniff, request.comment, limit)
    else:
        path = request.input
        name = path if name is None else name
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
            from cumtool.fingerprint import SpanReader  # hashlib: --state runs only

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
        if not (request.from_format or kind_from_name(name)):
            sniff, stream = _first_line(stream, sniff, name, limit)
        head = sniff[:8]
        kind = kind_from_name(name) or _sniffed(sniff, request.comment, limit)
        sniffed = kind_from_magic(head)
        trailer = format_named(sniffed.format).trailer
        binary = sniffed.format in BY_MAGIC and (
            not trailer or path is None or _ends_with(stream, trailer))
        if binary and sniffed.format != kind.format:
            kind = sniffed  # a binary format is known by its bytes, whatever the name says
        if kind.compression is None and compression_of(sniff) is not None:
            kind = FileKind(kind.format, compression_of(sniff))
    if kind.compression is not None and (path is None or kind_from_name(name) is None):
        # Unnamed compressed input (standard input, no extension): look inside for tsv,
        # npy, parquet.
        inner, stream = _sniff_compressed(stream, kind.compression, path is not None, limit)
        kind = FileKind(inner.format, kind.compression)
    if request.from_format:
        fmt = check_format_name(request.from_format, INPUT_FORMATS, "--from")
        kind = FileKind(fmt, kind.compression)
    elif kind.compression is None and format_named(kind.format).delimited:
        _refuse_what_is_not_a_table(name, sniff, request.op)
    if kind.compression is None and request.encoding is None and (
            format_named(kind.format).delimited or kind.format == "jsonl"):
        _refuse_wide_unicode(name, sniff, request.op)
    declared = format_named(kind.format)
    # What this format does not honour (--na on Parquet, --sheet on CSV), by name.
    request.refuse_unread(kind.format, name)
    if kind.compression and not declared.delimited:  # delimited text decompresses itself
        import pyarrow as pa

        stream = pa.CompressedInputStream(pa.PythonFile(stream, mode="r"), kind.compression)
        path = None
    assert declared.reader is not None  # --from and the registry name input formats only
    opening = Opening(stream, name, path, kind, request, stack,
                      spool=lambda pipe: stack.enter_context(_spooled(pipe, name, kind.format)),
                      head=head, float_columns=dtype is not None and dtype.kind in "fc")
    # Each format's module (and its library: polars, pyarrow) loads only when used.
    return declared.reader(opening), kind


def _sniffed(sniff: bytes, comment: str | None, limit: int) -> FileKind:
    """The format the first bytes show; with --comment, text shows it (a tab-separated
    first line: TSV) on its first line that is neither a comment nor blank."""
    if _long_object_line(sniff, limit):
        return FileKind("jsonl")
    kind = kind_from_magic(sniff)
    if comment is None or kind.compression is not None or not format_named(
            kind.format).delimited:
        return kind
    start = len(BOM) if sniff.startswith(BOM) else 0
    skipped = comment.encode()
    while sniff[start:start + 1] in (skipped, b"\r", b"\n"):
        end = sniff.find(b"\n", start) if sniff[start:start + 1] == skipped else start
        if end < 0:
            return kind
        start = end + 1
    return kind_from_magic(sniff[start:])


def _record_limit(request: InputRequest) -> int:
    from cumtool.formats.records import MAX_RECORD_BYTES

    return request.max_record_size or MAX_RECORD_BYTES


def _cut_object_line(sniff: bytes) -> bool:
    """Whether the first line opens a JSON object and goes on past `sniff`: only the whole
    line tells JSON Lines (a whole object) from JSON (formats.jsonl)."""
    return b"\n" not in sniff and sniff.removeprefix(BOM).lstrip(b" \t").startswith(b"{")


def _long_object_line(sniff: bytes, limit: int) -> bool:
    """A first line opening a JSON object that is read on past --max-record-size: JSON
    Lines, whose reader says that the line is too long (and which option raises it)."""
    return len(sniff) > limit and _cut_object_line(sniff)


def _first_line(stream: IO[bytes], sniff: bytes, name: str, limit: int
                ) -> tuple[bytes, IO[bytes]]:
    """`sniff`, or where its first line opens a JSON object and does not end in it (a
    JSON Lines record longer than the sniff, or a pipe's first bytes), the input read on
    to that line's end (at most `limit` + 1 bytes); and the stream to read from (a pipe's
    bytes read so are replayed)."""
    if not _cut_object_line(sniff):
        return sniff, stream
    seekable = stream.seekable()
    read1 = getattr(stream, "read1", stream.read)
    pieces: list[bytes] = []
    size = 0
    try:
        while size <= limit:
            piece = read1(SNIFF_BYTES)
            if not piece:
                break
            pieces.append(piece)
            size += len(piece)
            if b"\n" in piece:
                break
        if seekable:
            stream.seek(0)
    except OSError as error:
        raise DataError(f"{name}: cannot read: {error.strerror or error}") from None
    data = b"".join(pieces)
    if not seekable:
        stream = io.BufferedReader(PrefixedStream(data, stream), buffer_size=SNIFF_BYTES)
    return data, stream


def _refuse_what_is_not_a_table(name: str, head: bytes, op: str) -> None:
    """A compression cumtool does not read, or JSON that is not JSON Lines: said as such,
    with the command that makes it readable, rather than met as a CSV error."""
    from cumtool.formats.jsonl import looks_like_json

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


# Byte order marks of the encodings that store ASCII with NUL bytes (Excel's "Unicode
# Text" export is UTF-16 with the first): UTF-32's before UTF-16's, which they start with.
_WIDE_BOMS = ((b"\xff\xfe\x00\x00", "UTF-32"), (b"\x00\x00\xfe\xff", "UTF-32"),
              (b"\xff\xfe", "UTF-16"), (b"\xfe\xff", "UTF-16"))


def _refuse_wide_unicode(name: str, head: bytes, op: str) -> None:
    """Text in UTF-16 or UTF-32, known by its byte order mark: said as such, with the
    command that converts it, rather than met as a NUL byte in the header."""
    for bom, encoding in _WIDE_BOMS:
        if head.startswith(bom):
            command = "... | iconv" if name == "standard input" else "iconv"
            source = "" if name == "standard input" else f" {name}"
            raise FormatError(f"{name}: the text is {encoding} (it starts with a {encoding} "
                              "byte order mark), which cumtool does not read; convert it "
                              f"to UTF-8 on the way: {command} -f {encoding} -t UTF-8"
                              f"{source} | cumtool {op}")


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


def stdin_stream() -> IO[bytes]:
    """Standard input as a stream of our own: when a run stops early (`| head`, an error)
    the reader thread may still be blocked reading it, and must not then hold the lock of
    sys.stdin, which Python takes at exit (it would abort: "could not acquire lock")."""
    if sys.stdin is None:  # started with standard input closed (`<&-`)
        raise DataError("standard input is closed; give an INPUT file")
    try:
        fd = sys.stdin.fileno()
    except (AttributeError, OSError, ValueError):  # not a real file (tests, embedding)
        return sys.stdin.buffer
    widen_pipe(fd)
    return open(fd, "rb", closefd=False)


PIPE_BYTES = 1 << 20


def widen_pipe(fd: int) -> None:
    """A pipe's buffer raised from 64 KiB to PIPE_BYTES (Linux): reader and writer then
    wait on each other once a MiB, not 16 times (`cat big.csv | cumtool`: half the
    context switches). Where it is not a pipe, or the system's limit is lower, nothing."""
    import stat

    try:
        import fcntl  # not on Windows
    except ImportError:
        return
    try:
        if stat.S_ISFIFO(os.fstat(fd).st_mode) and hasattr(fcntl, "F_SETPIPE_SZ"):
            fcntl.fcntl(fd, fcntl.F_SETPIPE_SZ, PIPE_BYTES)
    except OSError:
        pass


def _ends_with(stream: IO[bytes], magic: bytes) -> bool:
    """Whether a file ends with a format's trailer (Parquet's footer): text that merely
    starts with its magic is still text."""
    try:
        size = stream.seek(0, 2)
        stream.seek(max(size - len(magic), 0))
        return stream.read(len(magic)) == magic
    except OSError:
        return False
    finally:
        stream.seek(0)


def _sniff_compressed(stream: IO[bytes], compression: str, seekable: bool, limit: int
                      ) -> tuple[FileKind, IO[bytes]]:
    """What a compressed stream holds, from the decompressed start of its first bytes
    (csv where they show nothing: a damaged stream), and the stream to read it from. A
    bzip2 block decompresses only whole: up to one block is read for it; a first line
    that opens a JSON object is decompressed to its end (as _first_line); a pipe's bytes
    read so are replayed."""
    taken = b""  # what was read from a pipe, not only peeked at

    def start(size: int) -> bytes:  # the stream's first `size` bytes (fewer at its end)
        nonlocal taken
        if seekable:
            data = stream.read(size)
            stream.seek(0)
            return data
        if len(taken) < size:
            taken += stream.read(size - len(taken))
        return taken

    data = start(_BZIP2_BLOCK if compression == "bz2" else SNIFF_BYTES) if seekable else (
        stream.peek(SNIFF_BYTES))  # type: ignore[attr-defined]
    if compression == "bz2" and decompressed_start(data, compression, 1) is None:
        data = start(_BZIP2_BLOCK)
    want = SNIFF_BYTES
    inner = decompressed_start(data, compression, want)
    while (inner is not None and not inner[1] and len(inner[0]) <= limit
           and _cut_object_line(inner[0])):
        if len(inner[0]) < want:  # all that `data` holds: read on
            more = start(2 * len(data))
            if len(more) == len(data):  # the stream ends there
                break
            data = more
        else:
            want = min(2 * want, limit + 1)
        inner = decompressed_start(data, compression, want)
    if taken:
        stream = io.BufferedReader(PrefixedStream(taken, stream), buffer_size=SNIFF_BYTES)
    if inner is None:
        return FileKind("csv"), stream
    if _long_object_line(inner[0], limit):
        return FileKind("jsonl"), stream
    return kind_from_magic(inner[0]), stream
