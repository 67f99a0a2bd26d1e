"""Shell completion (bash, zsh, fish) beyond what Click completes by itself (operations,
options, and the values of the types in params.py): file names for INPUT and `-o`, and
column names from the input's header for `-c`, `--exclude`, `--by` and `--reset`.

Completion runs at every Tab, so it reads little: the first 64 KiB of a CSV or TSV file
(plain, gzip or bz2), or a Parquet file's footer; standard input and .npy files complete
no names. It never fails: a missing, unreadable or binary file completes nothing. Only a
Parquet file's names load pyarrow.
"""

from __future__ import annotations

import os
import re
import shlex
import stat
from collections import Counter
from collections.abc import Iterator, Sequence

import click
from click.shell_completion import BashComplete, CompletionItem, add_completion_class

from cumtool.columns import INDEX_NAME
from cumtool.errors import UsageError
from cumtool.formats import FileKind, delimiter_option, encoding_option
from cumtool.formats.registry import (
    BY_MAGIC,
    DELIMITED,
    compression_of,
    decompressed_start,
    format_named,
    kind_from_magic,
    kind_from_name,
)

HEAD_BYTES = 1 << 16
_DIGITS = re.compile(r"^[0-9]+$")


class _BashComplete(BashComplete):
    """Click's bash completion, each value quoted for the shell: bash puts a completion
    on the command line as it is, and `"price, usd"` must reach cumtool with its double
    quotes and its space. (zsh and fish quote what they insert themselves.)"""

    def format_completion(self, item: CompletionItem) -> str:
        value = shlex.quote(item.value) if item.type == "plain" else item.value
        return f"{item.type},{value}"


add_completion_class(_BashComplete, "bash")


def complete_path(_ctx: click.Context, _param: click.Parameter, incomplete: str
                  ) -> list[CompletionItem]:
    """INPUT and `-o`: the shell completes file names."""
    return [CompletionItem(incomplete, type="file")]


def complete_columns(ctx: click.Context, _param: click.Parameter, incomplete: str
                     ) -> list[CompletionItem]:
    """`-c`, `--exclude`, `--by`, `--reset`: the input's column names, with `-d`,
    `--no-header`, `--from`, `--encoding` and `--comment` honoured when given before
    them."""
    params = ctx.params
    if params.get("no_header"):
        return []  # columns are positions then
    # While a value is still missing, Click leaves the input among the unparsed args.
    given = params.get("input")
    path = (given[0] if isinstance(given, tuple | list) and given else given
            ) or next(iter(ctx.args), None)
    if not path or path == "-":
        return []
    header = header_names(os.path.expanduser(path), from_format=params.get("from_format"),
                          delimiter=params.get("delimiter"), encoding=params.get("encoding"),
                          comment=params.get("comment"))
    return [CompletionItem(value) for value in column_completions(header, incomplete)]


def header_names(path: str, *, from_format: str | None = None, delimiter: str | None = None,
                 encoding: str | None = None, comment: str | None = None) -> list[str]:
    """The column names of a CSV, TSV or Parquet file; [] for anything else or on any
    failure."""
    try:
        if not stat.S_ISREG(os.stat(path).st_mode):
            return []  # a pipe or a device would block, or never end
        with open(path, "rb") as stream:
            head = stream.read(HEAD_BYTES)
    except (OSError, ValueError):  # ValueError: a NUL in the path
        return []
    kind = _kind(path, head, from_format)
    if kind.format == "parquet" and kind.compression is None:
        return _parquet_names(path)
    truncated = len(head) == HEAD_BYTES
    if kind.compression is not None:
        inner = decompressed_start(head, kind.compression, HEAD_BYTES)
        if inner is None:
            return []
        head, complete = inner
        truncated = not complete
        if from_format is None and kind_from_name(path) is None:
            kind = FileKind(kind_from_magic(head).format)  # what the engine sniffs too
    if kind.format not in DELIMITED:
        return []
    return _csv_names(head, truncated, kind.format, delimiter, encoding, comment)


def _kind(path: str, head: bytes, from_format: str | None) -> FileKind:
    """The input's format, decided as sources.py does, from what is at hand."""
    sniffed = kind_from_magic(head)
    # A binary format is known by its bytes, whatever the name says.
    binary = sniffed.format in BY_MAGIC
    kind = sniffed if binary else kind_from_name(path) or sniffed
    compressed = compression_of(head)
    if kind.compression is None and compressed is not None:
        kind = FileKind(kind.format, compressed)
    return FileKind(from_format, kind.compression) if from_format else kind


def _csv_names(data: bytes, truncated: bool, fmt: str, delimiter: str | None,
               encoding: str | None, comment: str | None = None) -> list[str]:
    import codecs
    import csv
    import io

    try:
        separator = delimiter_option(delimiter, format_named(fmt).delimiter or ",", "--delimiter")
        codec = encoding_option(encoding) or "utf-8-sig"
    except UsageError:
        return []
    try:
        # Incremental: a character cut at the end of what was read is not an error.
        text = codecs.getincrementaldecoder(codec)().decode(data, final=not truncated)
    except UnicodeDecodeError:
        return []
    if "\0" in text:
        return []  # binary, whatever its name says
    lines = io.StringIO(text.lstrip("\r\n"), newline="").readlines()
    if comment:  # comment lines (and blank lines) before the header are skipped
        while lines and (lines[0].startswith(comment) or not lines[0].strip("\r\n")):
            lines.pop(0)
    used = 0

    def feed() -> Iterator[str]:
        nonlocal used
        for line in lines:
            used += 1
            yield line

    try:
        header = next(csv.reader(feed(), delimiter=separator), [])
    except csv.Error:
        return []
    if truncated and lines and used == len(lines) and not lines[-1].endswith(("\n", "\r")):
        header = header[:-1]  # the header goes on past what was read: its last name is cut
    return header


def _parquet_names(path: str) -> list[str]:
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        schema = pq.read_schema(path)  # the footer only
    # What a damaged footer raises (a metadata string that is not UTF-8, an unknown type).
    except (OSError, pa.ArrowInvalid, pa.ArrowNotImplementedError, UnicodeDecodeError):
        return []
    return [name for name in schema.names if not INDEX_NAME.match(name)]


def column_completions(header: Sequence[str], incomplete: str) -> list[str]:
    """What completes `incomplete`, a selection being typed (columns.py): the items
    before its last comma stay as they are, the last is completed with a name of the
    header not chosen yet, quoted where the selection syntax needs it."""
    prefix, current = _split_last_item(incomplete)
    partial = _typed_name(current)
    chosen = _chosen(prefix)
    names = set(header)
    counts = Counter(header)
    completions: list[str] = []
    for name in dict.fromkeys(header):
        if not name or name in chosen:
            continue
        spelled = spell(name, names)
        # A name the header repeats is chosen as name[k], as in xsv.
        candidates = ([(name, spelled)] if counts[name] == 1 else
                      [(f"{name}[{k}]", f"{spelled}[{k}]") for k in range(counts[name])])
        completions.extend(prefix + text for plain, text in candidates
                           if plain.startswith(partial))
    return completions


def spell(name: str, names: set[str]) -> str:
    """`name` as a selection item: in double quotes when it holds a comma or a quote, has
    spaces around it, starts with `!`, or looks like a position or a range."""
    if _needs_quotes(name, names):
        return '"' + name.replace('"', '""') + '"'
    return name


def _needs_quotes(name: str, names: set[str]) -> bool:
    if not name or name != name.strip() or name.startswith(("!", '"')) or "," in name:
        return True
    if _DIGITS.match(name):
        return True
    for dash in (i for i, c in enumerate(name) if c == "-"):
        ends = (name[:dash].strip(), name[dash + 1:].strip())
        if any(ends) and all(not end or _DIGITS.match(end) or end in names for end in ends):
            return True
    return False


def _split_last_item(text: str) -> tuple[str, str]:
    """`text` cut after its last comma outside double quotes (and after a leading `!`)."""
    start = 1 if text.startswith("!") else 0
    cut = start
    quoted = False
    for i in range(start, len(text)):
        if text[i] == '"':
            quoted = not quoted
        elif text[i] == "," and not quoted:
            cut = i + 1
    return text[:cut], text[cut:]


def _typed_name(item: str) -> str:
    """The name an item being typed begins: `"price, u` begins `price, u`."""
    if not item.startswith('"'):
        return item.lstrip()
    chars: list[str] = []
    i = 1
    while i < len(item):
        if item[i] == '"':
            if not item.startswith('"', i + 1):
                break  # the closing quote
            i += 1  # "" is a quote inside quotes
        chars.append(item[i])
        i += 1
    return "".join(chars)


def _chosen(prefix: str) -> set[str]:
    """The names the items before the one being typed choose."""
    from cumtool.columns import parse

    body = prefix.removeprefix("!").removesuffix(",")
    if not body:
        return set()
    try:
        return {item.text for item in parse(body, "-c").items}
    except UsageError:
        return set()
