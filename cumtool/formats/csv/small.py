"""Small delimited files without polars and pyarrow: a run that reads a CSV or TSV of at
most SMALL_BYTES takes this path, and starts in the time numpy takes to import. It is
read whole here (read_small) and rendered by fast.py's pipeline on one worker
(fast.try_small). render() below is not run by cumtool: it is the reference, written
cell by cell in Python, that the tests hold the pipeline and the streaming path to.

It does what the streaming path (sources.py, formats/csv/csv.py, formats/csv/judge.py, tables.py)
does with such a file, with the same kernels (kernels.py), and writes the same bytes:

- records cut as polars cuts them (RFC 4180 quoting, CRLF or LF line ends, blank lines
  skipped, an empty unquoted cell missing and a quoted "" empty text);
- each column judged from its first INFER_ROWS rows by judge.py's rules (numbers, codes
  with a leading zero, integers beyond int64, anything else not scanned), what each cell
  is by the one rule of every path (numtext.cell_kinds and judge_bounds: the missing
  markers, --na, and the spaces around a number as there); a column empty in all of
  them from INFER_ROWS rows from its first value on, as formats/csv/csv.py does;
- numbers written as polars writes them (formats/csv/csvwrite.py's CsvSink: the shortest text that
  reads back, polars' switch to exponents, NaN, inf), text quoted where needed.

It is narrow on purpose. Whatever it cannot be sure to do exactly so, it hands over to the
streaming path before anything is written: an option it does not implement (such as
--decimal-comma), a stray quote, a lone CR, bytes that are not UTF-8, a NUL, a U+001C to
U+001F (str.strip() strips them, polars' strip_chars not), and every error (a ragged
row, a bad cell, an overflow), which the streaming path then words. tests/test_small.py
checks the two paths against each other on random files; tests/test_cell_kinds.py holds
the one rule of what a cell is to the parsers of both (polars' casts, float() and int()).

Its loops over cells run in C (`_csvtext.c`) where that module was built, and in Python
here otherwise: the same rules, the same bytes (tested against each other).
"""

from __future__ import annotations

import contextlib
import io
import os
import re
import select
import stat
import time
from collections.abc import Callable, Iterator
from types import ModuleType
from typing import IO

import numpy as np

from cumtool import numtext
from cumtool._ext import load
from cumtool.columns import resolve
from cumtool.columns import select as select_columns
from cumtool.errors import CumtoolError, DataError
from cumtool.formats import BOM, FileKind, Handover, PrefixedStream
from cumtool.formats.csv import dialect
from cumtool.formats.jsonl import NAME as JSON_LINES
from cumtool.formats.registry import BINARY_MAGIC, DELIMITED, kind_from_magic, kind_from_name
from cumtool.numtext import ALL_FLOATS as _ALL_FLOATS
from cumtool.numtext import ALL_INT64 as _ALL_INT64
from cumtool.numtext import ALL_INTEGERS as _ALL_INTEGERS
from cumtool.numtext import FLOAT_TEXT as _FLOAT
from cumtool.numtext import INT_TEXT as _INT
from cumtool.numtext import float_text, layout_text
from cumtool.request import Request

TEXT: ModuleType | None = load("_csvtext")  # None: the Python twin (cumtool._ext)

# Larger inputs (and pipes still open past this) stream. With the C loops, this path beats
# the streaming one up to about 2 MB (0.31 s against 0.44 s at 1 MB, 20k rows x 8 columns,
# on 2 cores); rows are held as Python strings, about 50 bytes a cell.
SMALL_BYTES = 1 << 20
STDIN_WAIT = 0.1  # seconds standard input may take to end before it is streamed instead
SNIFF_BYTES = 1 << 16  # as sources.SNIFF_BYTES: what decides csv or tsv by the first line
INFER_ROWS = 10_000  # as formats.judge.INFER_ROWS

_INT64_MIN, _INT64_MAX = -(1 << 63), (1 << 63) - 1
# Python's str.strip() strips these too, polars' strip_chars does not.
_OTHER_SPACE = re.compile("[\x1c-\x1f]")


def options_fit(request: Request) -> bool:
    """Whether this path can take the run: every option given is one it honours
    (cumtool.options declares which; any other hands the run over), with values it
    takes."""
    from cumtool import inputs, remote
    from cumtool.options import honoured

    return (all(honoured(declared, "small") for declared in request.given())
            # --share reads a file twice: standard input is spooled (runner.py)
            and not (request.share and request.input == "-")
            # several inputs, a glob or a folder, -o DIR/, a URL: the general path's
            and not inputs.is_dataset(request.inputs or (request.input,))
            and not inputs.per_input_output(request.output)
            and not (remote.is_url(request.input) or remote.is_url(request.output))
            and (request.from_format or "csv").lower() in DELIMITED)


# Reading -------------------------------------------------------------------------------

def read_small(request: Request) -> tuple[bytes | None, IO[bytes] | None]:
    """The whole input when it is at most SMALL_BYTES, else None; and for standard input
    a stream that replays what was read, then the rest, for the streaming path."""
    from cumtool import sources

    if request.input != "-":
        try:
            info = os.stat(request.input)
            if not stat.S_ISREG(info.st_mode) or info.st_size > SMALL_BYTES:
                return None, None
            with contextlib.ExitStack() as stack:  # opened as the streaming path opens it
                data = sources.open_path(request.input, stack).read(SMALL_BYTES + 1)
        except (OSError, ValueError, CumtoolError):  # the streaming path says what is wrong
            return None, None
        return (data if len(data) <= SMALL_BYTES else None), None
    try:
        stdin = sources.stdin_stream()
    except CumtoolError:
        raise Handover from None
    head, ended = _read_stdin(stdin)
    # A buffer that holds all that was read: the first look (the sniff) takes it at once.
    replay = io.BufferedReader(PrefixedStream(head, stdin), max(SNIFF_BYTES, len(head)))
    return (head if ended else None), replay


def _read_stdin(stdin: IO[bytes]) -> tuple[bytes, bool]:
    """What standard input holds, if it ends within SMALL_BYTES and STDIN_WAIT seconds;
    else what was read so far (a slow producer must not be held back)."""
    pieces: list[bytes] = []
    size = 0
    try:
        fd: int | None = stdin.fileno()
    except (OSError, AttributeError, ValueError, io.UnsupportedOperation):
        fd = None
    deadline = time.monotonic() + STDIN_WAIT
    read1 = getattr(stdin, "read1", stdin.read)
    try:
        while size <= SMALL_BYTES:
            if fd is not None:
                left = deadline - time.monotonic()
                if left <= 0 or not select.select([fd], [], [], left)[0]:
                    return b"".join(pieces), False
            piece = read1(SMALL_BYTES + 1 - size)
            if not piece:
                return b"".join(pieces), True
            pieces.append(piece)
            size += len(piece)
    except (OSError, ValueError):
        pass
    return b"".join(pieces), False


def input_kind(request: Request, data: bytes) -> FileKind:
    """As sources.open_source decides it, for plain (uncompressed) text only."""
    head = data[:8]
    if head.startswith(BINARY_MAGIC):
        raise Handover
    named = kind_from_name(request.input) if request.input != "-" else None
    kind = named or kind_from_magic(data[:SNIFF_BYTES])
    if request.from_format:
        kind = FileKind(request.from_format.lower(), kind.compression)
    if kind.format not in DELIMITED or kind.compression is not None:
        raise Handover
    return kind


def output_kind(request: Request, kind: FileKind, json_lines: bool = False) -> FileKind:
    """The output's format (Request.output_format); csv or tsv (or, where `json_lines`,
    jsonl), uncompressed, or Handover."""
    out = request.output_format(kind)
    request.check_table_output(out.format)  # what that output refuses, as run_table does
    if out.compression is not None or not (
            out.format in DELIMITED or (json_lines and out.format == JSON_LINES)):
        raise Handover
    return out


def records(data: bytes, delimiter: str, header: bool
             ) -> tuple[list[str], list[list[str | None]]]:
    """The header's names and the rows' cells (None: an empty unquoted cell), as
    formats/csv/csv.py reads them."""
    data = data.removeprefix(BOM).lstrip(b"\r\n")
    if not data.strip() or b"\0" in data or data.count(b"\r") != data.count(b"\r\n"):
        raise Handover  # empty, binary, or lone CRs (old Mac files): the streaming path
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise Handover from None
    if _OTHER_SPACE.search(text):
        raise Handover
    records = _cut(data, text, delimiter)
    width = len(records[0])
    # A blank line is skipped; in a one-column file a missing cell is one too.
    kept = [r for r in records if r != [None]]
    if any(len(r) != width for r in kept):
        raise Handover  # ragged: the streaming path names the row
    if header:
        names = ["" if cell is None else cell for cell in kept[0]]
        return names, kept[1:]
    return [str(i + 1) for i in range(width)], kept


def _cut(data: bytes, text: str, delimiter: str) -> list[list[str | None]]:
    """The records of `text` (`data` decoded), each a list of cells."""
    if TEXT is not None and len(delimiter) == 1 and delimiter.isascii() \
            and delimiter not in '"\r\n':
        cut: list[list[str | None]] | None = TEXT.records(data, delimiter)
        if cut is None:
            raise Handover  # a quote that RFC 4180 does not allow
        return cut
    records = dialect.records(text, delimiter)
    if records is None:
        raise Handover  # a quote that RFC 4180 does not allow
    return records


class _Hint:
    """What a column holds, as judge.py's ColumnHint: the numpy dtype its cells parse to
    (None: not scanned by this path) and whether it is scanned by default."""

    def __init__(self, dtype: np.dtype | None, by_default: bool, empty: bool = False) -> None:
        self.dtype = dtype
        self.by_default = by_default
        self.empty = empty  # no judged cell held a value (all empty or missing)


_INT64 = np.dtype(np.int64)
_FLOAT64 = np.dtype(np.float64)


def judge_cut(data: bytes, starts: np.ndarray, ends: np.ndarray, flags: np.ndarray,
              markers: set[str], float_columns: bool) -> _Hint:
    """judge() of a column cut into cell bounds (fast.cut: one entry a row, at most
    INFER_ROWS), without a Python string a cell where _csvtext is built."""
    if not flags.shape[0]:
        return _Hint(_INT64, True)
    count, zero, kind = numtext.judge_bounds(data, starts, ends, flags,
                                             numtext.marker_bytes(markers))
    return _hint(count, zero, kind, float_columns)


def _hint(count: int, zero: bool, kind: int, float_columns: bool) -> _Hint:
    """A column's hint from what judge_cells found in it."""
    if not count:
        return _Hint(_FLOAT64, False, True)  # empty: a float column, scanned when named
    by_default = not zero
    if kind == _ALL_INT64:
        return _Hint(_FLOAT64 if float_columns else _INT64, by_default)
    if kind == _ALL_INTEGERS:  # beyond int64: an id, not a count (unless a float --dtype)
        return _Hint(_FLOAT64, by_default) if float_columns else _Hint(None, False)
    if kind == _ALL_FLOATS:
        return _Hint(_FLOAT64, by_default)
    return _Hint(None, False)  # flags, dates, text: the streaming path scans those


def _judge_cells(rows: list[list[str | None]], column: int, markers: set[str]
                 ) -> tuple[int, bool, int]:
    """Of a column's first INFER_ROWS cells, those neither None nor (stripped) a marker:
    how many, whether any has a leading zero, and what they all are (numtext's Python
    twin alone: the reference's)."""
    bounds = numtext.cell_bounds([row[column] for row in rows[:INFER_ROWS]])
    return numtext.judge_bounds_py(*bounds, numtext.marker_bytes(markers))


def noted(request: Request, hints: list[_Hint], selected: list[int], keys: list[int],
          cells_of: Callable[[int], list[str | None]], markers: set[str]) -> Iterator[int]:
    """The columns left unscanned by default (no -c) whose judged cells (`cells_of(j)`)
    are mostly numbers (judge.py's rule): the streaming path words a note for each."""
    if not request.notes or any(not s.negated for s in request.columns):
        return
    chosen = set(selected) | set(keys)
    for j, hint in enumerate(hints):
        if hint.dtype is not None or j in chosen:
            continue
        cells = cells_of(j)
        codes, _places = numtext.cell_kinds(*numtext.cell_bounds(cells),
                                            numtext.marker_bytes(markers))
        if any(numtext.left_out_numbers(codes, cells.__getitem__, request.decimal_comma)):
            yield j


def key_columns(request: Request, names: list[str]) -> list[int]:
    """The --by columns' positions, as tables.TablePlan resolves them."""
    try:
        chosen = [i for selection in request.by for i in resolve(selection, names, "")]
    except DataError:
        raise Handover from None  # the streaming path words it
    return list(dict.fromkeys(chosen))


def select_scanned(request: Request, names: list[str], hints: list[_Hint],
                   keys: list[int]) -> list[int]:
    """The scanned columns, by the rules every path shares (columns.select); a column
    that is not numeric here (an error, or a flag or date column) is the streaming
    path's to word, and so is a key column scanned (named with -c)."""
    try:
        selected = select_columns(names, [hint.by_default for hint in hints],
                                  request.columns, request.exclude, "the input",
                                  scannable=lambda i: hints[i].dtype is not None,
                                  unscannable=lambda i, numeric: "", structural=keys)
    except DataError:
        raise Handover from None
    if set(selected) & set(keys):
        raise Handover
    return selected


def number(text: str, dtype: np.dtype) -> int | float | None:
    """A cell as polars' cast to Int64 or Float64 reads it (None: not a number)."""
    if dtype == _INT64:
        return _int64(text) if _INT.fullmatch(text) else None
    return float(text) if _FLOAT.fullmatch(text) else None


def _int64(text: str) -> int | None:
    """An integer's text (_INT) as an int64, or None beyond its range. Leading zeros are
    dropped first: int() refuses texts of more than 4,300 digits, polars reads them."""
    digits = text.lstrip("+-").lstrip("0")
    if len(digits) > 19:
        return None
    value = int(digits or "0")
    value = -value if text.startswith("-") else value
    return value if _INT64_MIN <= value <= _INT64_MAX else None


# Writing -------------------------------------------------------------------------------

def result_texts(values: np.ndarray, missing: np.ndarray | None, null: str,
                 text_cell: Callable[[str], str]) -> list[str]:
    """A result column's cells as CsvSink writes them, `null` where `missing`; float16's
    as a text column's (`text_cell`: how a text cell is written)."""
    if values.dtype == np.float16:
        # polars has no float16: CsvSink writes numpy's text, as a text column.
        texts = [np.format_float_positional(v, unique=True, trim="0") for v in values]
        return [null if missing is not None and missing[k] else text_cell(t)
                for k, t in enumerate(texts)]
    return _numbers(values, missing, null)


def _numbers(values: np.ndarray, missing: np.ndarray | None, null: str) -> list[str]:
    kind = values.dtype.kind
    if kind in "iu":
        texts = [str(v) for v in values.tolist()]
    elif kind == "b":
        texts = ["true" if v else "false" for v in values.tolist()]
    elif values.dtype == np.float32:
        texts = [layout_text(np.format_float_scientific(v, unique=True, trim="-"), v, 13, -6)
                 for v in values]
    elif TEXT is not None and values.dtype == np.float64:
        return TEXT.float_texts(np.ascontiguousarray(values), missing, null)
    else:
        texts = [float_text(v) for v in values.tolist()]
    if missing is not None:
        texts = [null if gone else t for t, gone in zip(texts, missing.tolist(),
                                                        strict=True)]
    return texts
