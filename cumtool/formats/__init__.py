"""File formats behind one small interface, chosen by name, extension or magic bytes.

A *table* format (csv, tsv, parquet) reads and writes Arrow record batches; an *array*
format (npy) reads and writes numpy blocks along axis 0. `table` and `chart` are output-only
formats: the pretty terminal view, and a line chart of the results (on the terminal, or an
SVG or PNG image named by `-o`).
"""

from __future__ import annotations

import io
import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import IO, TYPE_CHECKING, Protocol

from cumtool.errors import FormatError, UsageError

if TYPE_CHECKING:
    import numpy as np
    import pyarrow as pa


@dataclass(frozen=True)
class Format:
    """One format, as the rest of cumtool needs to know it. Every list of formats below
    (and in every other module) is derived from FORMATS, so that a format is added or
    changed in one place."""

    name: str
    extensions: tuple[str, ...]  # file name suffixes that announce it, lowercase
    reads: bool = True  # an input format
    writes: bool = True  # an output format
    kind: str = "table"  # table (Arrow batches), array (numpy blocks) or view (a picture)
    typed: bool = False  # keeps types: numbers read as text are written as numbers there
    binary: bool = False  # bytes, not text: never written to a terminal
    by_magic: bool = False  # known by its first bytes whatever the file's name says
    delimited: bool = False  # delimited text: compressed on the way, cut into byte ranges
    spreadsheet: bool = False  # read with fastexcel (the `excel` extra)
    # Line-oriented text: a file that grew is read on from a byte offset (--state).
    line_oriented: bool = False


FORMATS = (
    Format("csv", (".csv", ".txt"), delimited=True, line_oriented=True),
    Format("tsv", (".tsv", ".tab"), delimited=True, line_oriented=True),
    Format("parquet", (".parquet", ".pq"), typed=True, binary=True, by_magic=True),
    Format("npy", (".npy", ".npz"), kind="array", typed=True, binary=True, by_magic=True),
    Format("jsonl", (".jsonl", ".ndjson"), line_oriented=True),
    Format("arrow", (".arrow", ".feather"), typed=True, binary=True, by_magic=True),
    Format("arrows", (".arrows",), typed=True, binary=True, by_magic=True),
    Format("xlsx", (".xlsx", ".xlsm"), writes=False, binary=True, spreadsheet=True),
    Format("xls", (".xls",), writes=False, binary=True, spreadsheet=True),
    Format("ods", (".ods",), writes=False, binary=True, spreadsheet=True),
    # The pretty terminal view: typed, so a column is labelled (and aligned) as it was
    # read: an unscanned column of integers is int64, not text.
    Format("table", (), reads=False, kind="view", typed=True),
    # A line chart: on the terminal; -o FILE.svg or FILE.png draws it as an image.
    Format("chart", (".svg", ".png"), reads=False, kind="view"),
)

INPUT_FORMATS = tuple(f.name for f in FORMATS if f.reads)
OUTPUT_FORMATS = tuple(f.name for f in FORMATS if f.writes)
TABLE_FORMATS = tuple(f.name for f in FORMATS if f.reads and f.kind == "table")
TYPED_OUTPUTS = tuple(f.name for f in FORMATS if f.writes and f.typed)
SPREADSHEETS = tuple(f.name for f in FORMATS if f.spreadsheet)
BINARY_OUTPUTS = tuple(f.name for f in FORMATS if f.writes and f.binary)  # not for a terminal
BY_MAGIC = tuple(f.name for f in FORMATS if f.by_magic)
DELIMITED = tuple(f.name for f in FORMATS if f.delimited)  # the only ones compressed
LINE_ORIENTED = tuple(f.name for f in FORMATS if f.line_oriented)
# -o names that make the chart an image (the plot extra); other names get its text.
CHART_IMAGES = next(f.extensions for f in FORMATS if f.name == "chart")

_EXTENSIONS = {ext: f.name for f in FORMATS for ext in f.extensions}
_COMPRESSED = (".gz", ".bz2", ".zst", ".lz4")

NPY_MAGIC = b"\x93NUMPY"
PARQUET_MAGIC = b"PAR1"
GZIP_MAGIC = b"\x1f\x8b"
ARROW_FILE_MAGIC = b"ARROW1"
ARROW_STREAM_MAGIC = b"\xff\xff\xff\xff"  # the continuation marker of the first message
ZIP_MAGIC = b"PK\x03\x04"  # .xlsx and .ods are zip archives (so is .npz)
OLE2_MAGIC = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"  # .xls


@dataclass(frozen=True)
class FileKind:
    """What a path or stream holds: its format and the compression around it (if any)."""

    format: str
    compression: str | None = None


def kind_from_name(path: str) -> FileKind | None:
    """The format a file name announces (`a.csv.gz` is gzip-compressed csv), or None."""
    name = os.path.basename(path).lower()
    compression = None
    for suffix in _COMPRESSED:
        if name.endswith(suffix):
            compression = {".gz": "gzip", ".bz2": "bz2", ".zst": "zstd", ".lz4": "lz4"}[suffix]
            name = name[: -len(suffix)]
            break
    ext = os.path.splitext(name)[1]
    if ext in _EXTENSIONS:
        return FileKind(_EXTENSIONS[ext], compression)
    return None


def kind_from_magic(head: bytes) -> FileKind:
    """Sniff the first bytes: Parquet, .npy, gzip, else delimited text."""
    if head.startswith(PARQUET_MAGIC):
        return FileKind("parquet")
    if head.startswith(NPY_MAGIC):
        return FileKind("npy")
    if head.startswith(GZIP_MAGIC):
        return FileKind("csv", "gzip")
    if head.startswith(ARROW_FILE_MAGIC):
        return FileKind("arrow")
    if head.startswith(ARROW_STREAM_MAGIC):
        return FileKind("arrows")
    if head.startswith(OLE2_MAGIC):
        return FileKind("xls")
    if head.startswith(ZIP_MAGIC):
        # Members' names (and an .ods' mimetype, its first member) are in local headers.
        if b"opendocument.spreadsheet" in head[:200]:
            return FileKind("ods")
        if b"xl/" in head or b"[Content_Types].xml" in head[:200]:
            return FileKind("xlsx")
    first_line = head.split(b"\n", 1)[0]
    if _is_json_object(first_line):
        return FileKind("jsonl")
    if b"\t" in first_line and b"," not in first_line:
        return FileKind("tsv")
    return FileKind("csv")


# Compressions and containers cumtool does not read, by magic bytes and by extension:
# named as such, not met as "a NUL byte" in a CSV.
UNREAD_MAGIC = {b"\xfd7zXZ\x00": "xz", b"7z\xbc\xaf\x27\x1c": "7z", b"\x1f\x9d": "compress (.Z)"}
UNREAD_EXTENSIONS = {".xz": "xz", ".lzma": "xz", ".7z": "7z", ".z": "compress (.Z)",
                     ".zip": "zip", ".tar": "tar", ".tgz": "tar"}


def unread_container(name: str, head: bytes) -> str | None:
    """The name of a compression or archive that cumtool does not read, if `name` or
    `head` shows one (asked of what would otherwise be read as delimited text: a zip
    that is a spreadsheet was already known as one)."""
    if head.startswith(ZIP_MAGIC):
        return "zip"
    for magic, what in UNREAD_MAGIC.items():
        if head.startswith(magic):
            return what
    ext = os.path.splitext(name.lower())[1]
    return UNREAD_EXTENSIONS.get(ext)


def looks_like_json(head: bytes) -> bool:
    """JSON that is not JSON Lines: an array (`[{...}, ...]`), or one object spread over
    lines (pretty-printed). A CSV header starts with neither."""
    text = head.lstrip()
    if text.startswith(b"["):
        rest = text[1:].lstrip()
        return rest[:1] in (b"{", b"[", b"]", b'"') or rest[:1].isdigit()
    if text.startswith(b"{"):
        first = text.split(b"\n", 1)[0].strip()
        return first == b"{" or (first.startswith(b'{"') and not _is_json_object(first))
    return False


def _is_json_object(line: bytes) -> bool:
    """A first line that is a whole JSON object: JSON Lines (no CSV header is one)."""
    text = line.strip()
    if not (text.startswith(b"{") and text.endswith(b"}")):
        return False
    import json

    try:
        return isinstance(json.loads(text), dict)
    except ValueError:
        return False


def check_format_name(name: str, allowed: tuple[str, ...], option: str) -> str:
    lowered = name.lower()
    if lowered not in allowed:
        raise UsageError(f"{option} {name!r} is not a format; choose from {', '.join(allowed)}")
    return lowered


def delimiter_option(text: str | None, default: str, option: str) -> str:
    """A delimiter as typed after `option` (`'\\t'` and `tab` are a tab)."""
    if text is None:
        return default
    delimiter = {"\\t": "\t", "tab": "\t"}.get(text, text)
    # One byte too: the readers and writers split on a byte (polars refuses '§', two
    # bytes in UTF-8).
    if len(delimiter) != 1 or delimiter in "\r\n\"" or not delimiter.isascii():
        raise UsageError(f"{option} {text!r} must be one ASCII character (use '\\t' for "
                         "tab)")
    return delimiter


def encoding_option(name: str | None, option: str = "--encoding") -> str | None:
    """--encoding (or `option`): a codec that keeps ASCII as it is (so newlines, quotes
    and delimiters are the same bytes); None for UTF-8, cumtool's own."""
    if name is None:
        return None
    import codecs

    try:
        codec = codecs.lookup(name)
    except LookupError:
        raise UsageError(f"{option} {name!r} is not an encoding Python knows (latin-1, "
                         "cp1252, iso-8859-15, shift_jis, ...)") from None
    if codec.name == "utf-8":
        return None
    try:
        ascii_compatible = '\n"\t,;|ab'.encode(codec.name) == b'\n"\t,;|ab'
    except UnicodeError:
        ascii_compatible = False
    if not ascii_compatible:
        raise UsageError(f"{option} {name!r} does not keep ASCII as it is (UTF-16, ...); "
                         "convert the file to UTF-8 first, e.g. with iconv")
    return codec.name


def delimiter_hint(header: str) -> str:
    """For a header read as one field: a ; (European), tab or | in it was the delimiter."""
    for delimiter, shown in ((";", ";"), ("\t", "\\t"), ("|", "|")):
        if delimiter in header:
            extra = " (and --decimal-comma for 1,5)" if delimiter == ";" else ""
            return f"; the header holds '{shown}': pass -d '{shown}'{extra}"
    return ""


# What R, pandas, databases and spreadsheets write for a missing cell (SEMANTICS.md).
DEFAULT_NA = ("", "NA", "N/A", "n/a", "NULL", "null", "None", "<NA>", "#N/A")


@dataclass(frozen=True)
class CsvReadOptions:
    """How delimited text is read."""

    delimiter: str = ","
    header: bool = True
    na_values: tuple[str, ...] = DEFAULT_NA  # cells that are missing (the empty cell always)
    decimal_comma: bool = False  # 1,5 is one and a half
    encoding: str | None = None  # None: UTF-8
    line_buffered: bool = False  # types from the first data row; rows out as they come


@dataclass(frozen=True)
class CsvWriteOptions:
    """How delimited text is written."""

    delimiter: str = ","
    header: bool = True
    na_rep: str = ""  # how a missing cell is written
    decimal_comma: bool = False
    encoding: str | None = None  # None: UTF-8


@dataclass(frozen=True)
class ColumnHint:
    """What a reader knows of a column beyond its stored type (CSV cells are text): the
    type its cells parse to when it is scanned (None: not a number), whether it is scanned
    when no -c names it, and what it holds, for messages."""

    parse_as: pa.DataType | None
    by_default: bool
    kind: str  # int, float, code, bool, date, empty, bigint, text
    # Text: its first cell that is not a number, and where, for a message (`row 2 (line
    # 3) holds 'oops'`); what a column holds is the same without it.
    culprit: str | None = field(default=None, compare=False)


class TableSource(Protocol):
    """A table read batch by batch. `name` is how messages refer to it."""

    name: str

    @property
    def schema(self) -> pa.Schema: ...

    def batches(self) -> Iterator[pa.RecordBatch]: ...


class TableSink(Protocol):
    """Where a table's batches go. After any failure (one in `close` too) the engine calls
    `abort`, once: it releases the writer without completing the output, raising nothing."""

    def write(self, batch: pa.RecordBatch) -> None: ...

    def close(self) -> None: ...

    def abort(self) -> None: ...


class ArraySource(Protocol):
    """An N-d array read in blocks along axis 0 (C order)."""

    name: str
    shape: tuple[int, ...]
    dtype: np.dtype

    def blocks(self, rows: int) -> Iterator[np.ndarray]: ...


class ArraySink(Protocol):
    """Where an array's blocks go (along axis 0); `abort` as for TableSink."""

    def write(self, values: np.ndarray, indices: np.ndarray | None) -> None: ...

    def close(self) -> None: ...

    def abort(self) -> None: ...


class PrefixedStream(io.RawIOBase):
    """A read-only stream that replays already-read bytes before the rest of `stream`
    (read as it arrives: a pipe's reader is not held until a whole buffer is full)."""

    def __init__(self, head: bytes, stream: IO[bytes]) -> None:
        self._head = memoryview(head)
        self._stream = stream
        self._read1 = getattr(stream, "read1", stream.read)

    def readable(self) -> bool:
        return True

    def fileno(self) -> int:
        # The CSV reader asks the descriptor whether more input is ready (a pipe whose
        # producer pauses must not hold back the rows already here).
        return self._stream.fileno()

    def readinto(self, buffer: memoryview) -> int:  # type: ignore[override]
        if self._head:
            size = min(len(buffer), len(self._head))
            buffer[:size] = self._head[:size]
            self._head = self._head[size:]
            return size
        data = self._read1(len(buffer))
        buffer[: len(data)] = data
        return len(data)


def peekable(stream: IO[bytes]) -> IO[bytes]:
    """A stream whose first bytes can be sniffed without being consumed."""
    if hasattr(stream, "peek"):
        return stream
    return io.BufferedReader(PrefixedStream(b"", stream))


def unreadable(name: str, fmt: str, reason: object) -> FormatError:
    """A one-line error for a file that does not parse as `fmt`."""
    text = " ".join(str(reason).split())
    if len(text) > 200:
        text = text[:200] + "..."
    return FormatError(f"{name}: cannot read as {fmt}: {text}")
