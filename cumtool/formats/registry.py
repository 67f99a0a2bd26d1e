"""Every format cumtool knows, gathered from the format packages under formats/ (each
declares its own in its light `__init__`), and what is derived from them: the lists the
options, completion and engines use, and a file's format by name or by its first bytes.

A new format is one new package: this module finds it, and nothing else lists formats.
"""

from __future__ import annotations

import importlib
import os
import pkgutil
import re

import cumtool.formats
from cumtool.errors import UsageError
from cumtool.formats import WHOLE_FILE, FileKind, Format, Partitioning


def _gather() -> tuple[tuple[Format, ...], tuple[tuple[str, str], ...]]:
    """The formats in rank order, and their own engines as (package, module), each once
    (CSV and TSV share one)."""
    found: list[tuple[Format, str]] = []
    for package in pkgutil.iter_modules(cumtool.formats.__path__):
        if package.ispkg:
            module = importlib.import_module(f"cumtool.formats.{package.name}")
            found.extend((f, package.name) for f in module.FORMATS)
    found.sort(key=lambda pair: pair[0].rank)
    engines = dict.fromkeys((package, f.engine) for f, package in found if f.engine)
    return tuple(f for f, _package in found), tuple(engines)


FORMATS, ENGINES = _gather()
BY_NAME = {f.name: f for f in FORMATS}

INPUT_FORMATS = tuple(f.name for f in FORMATS if f.reads)
OUTPUT_FORMATS = tuple(f.name for f in FORMATS if f.writes)
TYPED_OUTPUTS = tuple(f.name for f in FORMATS if f.writes and f.typed)
BINARY_OUTPUTS = tuple(f.name for f in FORMATS if f.writes and f.binary)  # not for a terminal
BY_MAGIC = tuple(f.name for f in FORMATS if f.by_magic)
DELIMITED = tuple(f.name for f in FORMATS if f.delimited)  # the only ones compressed
def _partitioning(f: Format) -> Partitioning | None:
    if f.partitioning is not None:
        return f.partitioning
    return WHOLE_FILE if f.reads and f.kind == "table" else None


# How --engine dask reads each format it reads (cumtool.distributed): in partitions as its
# package declares, else a table whole; an array format is not among them.
PARTITIONINGS = {f.name: p for f in FORMATS if (p := _partitioning(f)) is not None}
LINE_ORIENTED = tuple(f.name for f in FORMATS if f.line_oriented)
PLAIN_TEXT = DELIMITED[0]  # what text that shows no other format is read as
# -o names that make the chart an image (the plot extra); other names get its text.
CHART_IMAGES = BY_NAME["chart"].extensions
SPREADSHEETS = tuple(f.name for f in FORMATS if f.reads and f.spreadsheet)


def _listed(names: tuple[str, ...]) -> str:
    """`CSV, TSV and JSONL`: format names as a refusal says them."""
    said = [name.upper() for name in names]
    return said[0] if len(said) == 1 else f"{', '.join(said[:-1])} and {said[-1]}"


def input_group(names: tuple[str, ...]) -> str:
    """How a refusal says which inputs an option is for, given as format names."""
    return f"{_listed(names)} input"


# The groups of input formats an option can be declared for (cumtool.ops.decl.Option
# .inputs), each derived from the formats' declarations, with how a refusal names it: a
# new format joins the groups its declaration puts it in.
INPUT_GROUPS: dict[str, tuple[str, tuple[str, ...]]] = {
    "all": ("every input", INPUT_FORMATS),
    "tables": ("tables, not arrays",
               tuple(f.name for f in FORMATS if f.reads and f.kind == "table")),
    "text": (input_group(DELIMITED), DELIMITED),  # delimited text: CSV, TSV
    # Read record by record, each a line (--max-record-size bounds one).
    "lines": (input_group(LINE_ORIENTED), LINE_ORIENTED),
    "spreadsheets": (f"spreadsheets ({', '.join('.' + name for name in SPREADSHEETS)})",
                     SPREADSHEETS),
}

_EXTENSIONS = {ext: f.name for f in FORMATS for ext in f.extensions}
COMPRESSIONS = {".gz": "gzip", ".bz2": "bz2", ".zst": "zstd", ".lz4": "lz4"}
GZIP_MAGIC = b"\x1f\x8b"
# The compressions above by their first bytes, for a pipe or a name without the suffix
# (bzip2 apart: "BZh" could start a CSV, so `compression_of` checks more of it).
COMPRESSION_MAGIC = {GZIP_MAGIC: "gzip", b"\x28\xb5\x2f\xfd": "zstd",
                     b"\x04\x22\x4d\x18": "lz4"}
# bzip2: "BZh", the block size (1-9), then a block's magic (pi) or the end's (sqrt(pi)).
_BZIP2 = re.compile(rb"BZh[1-9](?:1AY&SY|\x17rE8P\x90)")
ZIP_MAGIC = b"PK\x03\x04"  # spreadsheets (.xlsx, .ods) and .npz are zip archives
# First bytes of a binary format: text that starts so is not read as text.
BINARY_MAGIC = (*(m for f in FORMATS if f.binary for m in f.magic), *COMPRESSION_MAGIC)


def format_named(name: str) -> Format:
    """The format of a name the options have checked."""
    return BY_NAME[name]


def kind_from_name(path: str) -> FileKind | None:
    """The format a file name announces (`a.csv.gz` is gzip-compressed csv), or None."""
    name = os.path.basename(path).lower()
    compression = None
    for suffix, method in COMPRESSIONS.items():
        if name.endswith(suffix):
            compression = method
            name = name[: -len(suffix)]
            break
    ext = os.path.splitext(name)[1]
    if ext in _EXTENSIONS:
        return FileKind(_EXTENSIONS[ext], compression)
    return None


def kind_from_magic(head: bytes) -> FileKind:
    """Sniff the first bytes: a format's magic (and what else it must show), gzip, text
    that shows its format (JSON Lines, TSV), else plain delimited text."""
    for f in FORMATS:
        if f.magic and head.startswith(f.magic) and (f.sniff is None or f.sniff(head)):
            return FileKind(f.name)
    compression = compression_of(head)
    if compression is not None:
        return FileKind(PLAIN_TEXT, compression)
    for f in FORMATS:
        if not f.magic and f.sniff is not None and f.sniff(head):
            return FileKind(f.name)
    return FileKind(PLAIN_TEXT)


def compression_of(head: bytes) -> str | None:
    """The compression (of COMPRESSIONS) that a stream's first bytes show, or None."""
    for magic, method in COMPRESSION_MAGIC.items():
        if head.startswith(magic):
            return method
    return "bz2" if _BZIP2.match(head) else None


def decompressed_start(data: bytes, compression: str, limit: int
                       ) -> tuple[bytes, bool] | None:
    """What `data`, the first bytes of a compressed stream, decompress to (at most `limit`
    bytes), and whether that is all of the stream; None where nothing can be had: a
    damaged stream, or a bzip2 block longer than `data`."""
    if compression == "gzip":
        import zlib

        inflate = zlib.decompressobj(16 + zlib.MAX_WBITS)
        try:
            return inflate.decompress(data, limit), inflate.eof
        except zlib.error:
            return None
    if compression == "bz2":
        import bz2

        unpack = bz2.BZ2Decompressor()
        try:
            inner = unpack.decompress(data, limit)
        except (OSError, EOFError):
            return None
        return (inner, unpack.eof) if inner or unpack.eof else None
    import pyarrow as pa  # zstd, lz4: as they are read (pa.CompressedInputStream)

    stream = pa.CompressedInputStream(pa.BufferReader(data), compression)
    inner = b""
    try:
        while len(inner) < limit:
            chunk = stream.read(limit - len(inner))
            if not chunk:
                return inner, True
            inner += chunk
    except (OSError, ValueError):  # the stream goes on past `data`, or is damaged
        return (inner, False) if inner else None
    return inner, False


def check_format_name(name: str, allowed: tuple[str, ...], option: str) -> str:
    lowered = name.lower()
    if lowered not in allowed:
        raise UsageError(f"{option} {name!r} is not a format; choose from {', '.join(allowed)}")
    return lowered


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
