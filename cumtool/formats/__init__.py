"""File formats behind one small interface, chosen by name, extension or magic bytes.

A *table* format (csv, tsv, parquet) reads and writes Arrow record batches; an *array*
format (npy) reads and writes numpy blocks along axis 0. `table` and `chart` are output-only
formats: the pretty terminal view, and a line chart of the results (on the terminal, or an
SVG or PNG image named by `-o`).
"""

from __future__ import annotations

import contextlib
import io
from collections.abc import Callable, Collection, Iterator, Mapping
from dataclasses import dataclass, field
from typing import IO, TYPE_CHECKING, Any, ClassVar, Literal, Protocol, cast

# It lives with the column vocabulary; readers take it from here.
from cumtool.columns import delimiter_hint as delimiter_hint
from cumtool.errors import FormatError, UsageError

if TYPE_CHECKING:
    import numpy as np
    import pyarrow as pa

    from cumtool.columns import Selection
    from cumtool.formats.partitioning import Partition, Splitting
    from cumtool.view import View


class Widened(Exception):
    """A run made with a source's provisional schema (SourceBase.provisional) learnt, or
    failed, as the source was read to its end: the runner drops it, unwritten, and runs
    with the whole input's schema."""


class Handover(Exception):
    """A format's own engine (Format.engine) is unsure of the input, or does not
    implement an option: the general path takes the run from the start, and words any
    error itself (runner.run_engine)."""


# A group's rows where Format.grouped writes fixed groups: about 6 MiB of 8-byte cells,
# as a Parquet input's batches hold (formats/parquet/parquet.py's BATCH_BYTES), and no
# more rows than its MAX_BATCH_ROWS.
GROUP_BYTES = 6 << 20
MAX_GROUP_ROWS = 1 << 17


def group_rows(columns: int) -> int:
    """The rows of each group of a table of `columns` columns, fixed by its width alone."""
    return max(1, min(MAX_GROUP_ROWS, GROUP_BYTES // (8 * max(columns, 1))))


@dataclass(frozen=True)
class Format:
    """One format, as the rest of cumtool needs to know it. Each format package
    (formats/csv, formats/parquet, ...) declares its own in its light `__init__`, whose
    reader and writer import the format's module (and its library) only when called;
    formats/registry.py gathers them, and every list of formats is derived from there."""

    name: str
    extensions: tuple[str, ...]  # file name suffixes that announce it, lowercase
    # Where it is listed (--help, completion, docs) and in what order it is sniffed.
    rank: int
    kind: str = "table"  # table (Arrow batches), array (numpy blocks) or view (a picture)
    typed: bool = False  # keeps types: numbers read as text are written as numbers there
    binary: bool = False  # bytes, not text: never written to a terminal
    magic: tuple[bytes, ...] = ()  # first bytes that announce it
    trailer: bytes = b""  # last bytes of a whole file too: a file that lacks them is text
    # What else the first bytes must show (a zip is a spreadsheet only if it holds one),
    # or, for text without magic, that they show this format (a first line of JSON).
    sniff: Callable[[bytes], bool] | None = None
    by_magic: bool = False  # known by its first bytes whatever the file's name says
    delimiter: str | None = None  # delimited text: its delimiter unless -d says another
    seekable: bool = False  # read with seeks: a pipe is copied to a temporary file first
    spreadsheet: bool = False  # read with fastexcel (the `excel` extra)
    # Line-oriented text: a file that grew is read on from a byte offset (--state).
    line_oriented: bool = False
    # Text for people and spreadsheets: JSON Lines' nested values are written as their
    # JSON text (strings as themselves), where typed formats keep them as strings.
    nested_as_text: bool = False
    # Its bytes follow the batches written (Parquet's row groups, Arrow's record batches):
    # where the input's batches end where reads end, rows are written in fixed groups
    # (group_rows), so that a pipe's pauses or a slow disk change no byte.
    grouped: bool = False
    # The reader: the source of an opened input (None: not an input format).
    reader: Callable[[Opening], SourceBase] | None = field(default=None, compare=False)
    # The table writer: a TableSink (None: not an output format).
    writer: Callable[[Writing], TableSink] | None = field(default=None, compare=False)
    # The array writer, for a format that writes numpy blocks as they are (else arrays
    # are written as tables of columns 0, 1, ...).
    array_writer: Callable[[Writing, tuple[int, ...], np.dtype], ArraySink] | None = field(
        default=None, compare=False)
    # The format's own engine for whole runs, where a run fits it (CSV: the small path and
    # the compiled pipeline): the module of its package whose run(request, stdin) returns
    # (done, standard input as it was or None); else the streaming runner reads the input
    # through `reader`. A name, not an import: an engine drives a run, a layer above this.
    engine: str | None = None
    # How --engine dask cuts a file into partitions and reads one; None: a table format
    # is read whole by one task (WHOLE_FILE), an array is not read there (refused by name).
    partitioning: Partitioning | None = field(default=None, compare=False)

    @property
    def reads(self) -> bool:
        return self.reader is not None

    @property
    def writes(self) -> bool:
        return self.writer is not None

    @property
    def delimited(self) -> bool:  # delimited text: compressed on the way, cut into byte ranges
        return self.delimiter is not None


class Partitioning:
    """How `--engine dask` (cumtool.distributed) reads files of a format, declared by the
    format's package beside its reader: `split`, on the client, cuts a file into
    partitions (cumtool.formats.partitioning.Partition; it may run small tasks on the
    workers, through `Splitting.gather`); `open`, in a worker, is the reader of one
    partition, whose batches the scan takes as the local engine takes the reader's. `open`
    is handed the partition, the run's options, what closes with the read, and `whole`:
    the file's reader as the local engine opens it (cumtool.sources), for a partition that
    is a whole file. Both import their module only when called, so a worker loads a
    format's library only when it reads one. A plain class: a dataclass would cost the
    command line's start-up its making, for Dask alone."""

    __slots__ = ("how", "open", "split")

    def __init__(self, how: str, split: Callable[[Splitting], list[Partition]],
                 open: Callable[[Partition, Any, contextlib.ExitStack,
                                 Callable[[], SourceBase]], SourceBase]) -> None:
        self.how = how  # how a file is cut, for messages and docs: "row groups", ...
        self.split = split
        self.open = open


def _split_whole(splitting: Splitting) -> list[Partition]:
    return [splitting.whole()]


def _open_whole(part: Partition, request: Any, stack: contextlib.ExitStack,
                whole: Callable[[], SourceBase]) -> SourceBase:
    return whole()


# A file read whole by one task, by its format's own reader, as the local engine reads it:
# for the formats that cannot be cut (JSON Lines is read in two passes, an Arrow IPC file
# or a spreadsheet is one object).
WHOLE_FILE = Partitioning("whole files", _split_whole, _open_whole)


@dataclass(frozen=True)
class FileKind:
    """What a path or stream holds: its format and the compression around it (if any)."""

    format: str
    compression: str | None = None


class ReadRequest(Protocol):
    """What a format's reader may ask of the run's options (cumtool.request.Request)."""

    @property
    def batch_rows(self) -> int | None: ...

    @property
    def max_record_size(self) -> int | None: ...

    @property
    def decimal(self) -> bool: ...

    @property
    def header(self) -> bool: ...

    @property
    def sheet(self) -> str | None: ...

    @property
    def notes(self) -> bool: ...

    @property
    def comment(self) -> str | None: ...

    @property
    def ragged(self) -> bool: ...

    @property
    def widen(self) -> tuple[int, ...]: ...

    def csv_read(self, fmt: str) -> CsvReadOptions: ...


class WriteRequest(Protocol):
    """What a format's writer may ask of the run's options (cumtool.request.Request)."""

    @property
    def output(self) -> str | None: ...

    @property
    def stdout_is_terminal(self) -> bool: ...

    @property
    def indices(self) -> bool: ...

    @property
    def keep(self) -> bool: ...

    @property
    def by(self) -> tuple[Selection, ...]: ...

    @property
    def x(self) -> Selection | None: ...

    @property
    def x_format(self) -> str | None: ...

    @property
    def time(self) -> Selection | None: ...

    def period_of(self) -> Any: ...

    @property
    def width(self) -> int | None: ...

    @property
    def height(self) -> int | None: ...

    @property
    def ops(self) -> list[str]: ...

    def chart_image(self) -> str | None: ...

    def csv_write(self, fmt: str) -> CsvWriteOptions: ...


@dataclass
class Opening:
    """An input as its format's reader is handed it (cumtool.sources opens it)."""

    stream: IO[bytes]  # from its start; decompressed, unless the format is delimited text
    name: str  # how messages name it
    path: str | None  # its path or URL, when the reader may open it itself; else None
    kind: FileKind
    request: ReadRequest
    stack: contextlib.ExitStack  # what is opened for the run is closed with it
    # Copies a pipe to a temporary file that is removed with the run (cumtool.sources).
    spool: Callable[[IO[bytes]], IO[bytes]]
    head: bytes = b""  # its first bytes as stored (before any decompression)
    float_columns: bool = False  # a float --dtype: integers to be scanned read as floats

    def seekable(self) -> IO[bytes]:
        """The stream, copied to a temporary file first if it is a pipe (a footer at the
        end, or a second pass, needs seeks)."""
        if self.path is None:
            self.stream = self.spool(self.stream)
        return self.stream


@dataclass
class Writing:
    """An output as its format's writer is handed it (cumtool.sinks chooses it)."""

    stream: IO[bytes]
    schema: pa.Schema | None  # None: an array's blocks
    kind: FileKind
    request: WriteRequest
    view: View | None  # how the terminal table and the chart label columns
    source_name: str  # the input, for messages

    def threads(self) -> int:
        """Threads a writer may make its text on, ahead of writing it (--threads): one
        where each row is to go out as it is read (--line-buffered; a batch's text made
        ahead waits for a later batch's turn)."""
        from cumtool import native

        return 1 if getattr(self.request, "line_buffered", False) else native.CORES

    def text_encoding(self) -> str:
        """Text for people (the table, the chart): in the locale's encoding on standard
        output, else UTF-8."""
        if self.request.output in (None, "-"):
            import sys

            return getattr(sys.stdout, "encoding", None) or "utf-8"
        return "utf-8"

    def to_terminal(self) -> bool:
        return self.request.output in (None, "-") and self.request.stdout_is_terminal


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


# What R, pandas, databases and spreadsheets write for a missing cell (SEMANTICS.md).
DEFAULT_NA = ("", "NA", "N/A", "n/a", "NULL", "null", "None", "<NA>", "#N/A")
# Field metadata: what a column of text stands for, in a reader's words, where its type
# says less (JSON Lines' integers beyond int64, kept as their JSON text); messages say it.
HOLDS = b"cumtool.holds"
# Field metadata of a JSON Lines column of mixed kinds: it holds each value's JSON text.
JSON_TEXT = b"cumtool.json"
BOM = b"\xef\xbb\xbf"  # UTF-8's byte order mark: the text readers drop it


def holds_json_text(field_: pa.Field) -> bool:
    """Whether a column holds each value's JSON text (JSON_TEXT)."""
    return bool(field_.metadata) and JSON_TEXT in field_.metadata

# Field metadata: a text column's first value that is not a number, and where
# (culprit_text), for the message where -c names it: ColumnHint.culprit.
CULPRIT = b"cumtool.culprit"
# Field metadata of a JSON Lines column of mixed kinds whose first rows hold numbers
# (numtext.MOSTLY_NUMBERS of the values around its first other one): left out with a
# note, as a CSV column of them is (ColumnHint.mostly_numbers).
MOSTLY = b"cumtool.mostly"


@dataclass(frozen=True)
class CsvReadOptions:
    """How delimited text is read."""

    delimiter: str = ","
    header: bool = True
    na_values: tuple[str, ...] = DEFAULT_NA  # cells that are missing (the empty cell always)
    decimal_comma: bool = False  # 1,5 is one and a half
    encoding: str | None = None  # None: UTF-8
    line_buffered: bool = False  # types from the first data row; rows out as they come
    comment: str | None = None  # a line starting with it is skipped, as a blank line is
    ragged: bool = False  # a record with fewer fields than the header: missing cells after


@dataclass(frozen=True)
class CsvWriteOptions:
    """How delimited text is written."""

    delimiter: str = ","
    header: bool = True
    na_rep: str = ""  # how a missing cell is written
    decimal_comma: bool = False
    encoding: str | None = None  # None: UTF-8


def row_text(row: int, line: int | None) -> str:
    """A data record for a message: `row 2 (line 3)`. Rows count records from 1 (not the
    header), lines every line of the file from 1, as an editor does (SEMANTICS.md)."""
    return f"row {row}" if line is None else f"row {row} (line {line})"


def culprit_text(row: str, cell: str) -> str:
    """`row 2 (line 3) holds 'oops'`: where a text column's first non-number stands
    (ColumnHint.culprit)."""
    return f"{row} holds {cell[:40]!r}"


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
    # Text whose judged cells are mostly numbers (numtext.MOSTLY_NUMBERS of those not
    # missing): left out by default, with a note (cumtool.notes.left_out) naming `culprit`;
    # `texts`: its judged cells that are not numbers, stripped, the first few of them.
    mostly_numbers: bool = field(default=False, compare=False)
    texts: tuple[str, ...] = field(default=(), compare=False)
    # Text whose judged cells not numbers are all numbers as a spreadsheet formats them
    # (numtext.formatted_number: '1,234', '$1.50', '15%'): a note too, naming `culprit`.
    formatted: bool = field(default=False, compare=False)
    # Formatted, and its first such cell has a decimal comma ('1,5': numtext.comma_decimal):
    # the note names --decimal-comma.
    comma_decimal: bool = field(default=False, compare=False)


class SourceBase:
    """What every reader answers beyond its rows, with the answers of a reader that
    knows no more. Readers subclass it, so the runner asks them, never probes them."""

    layout: ClassVar[Literal["table", "array", "wide"]] = "table"  # how a run drives it
    name: str  # how messages refer to it
    # What each column holds, judged from text cells (CSV, TSV, JSON Lines); None: the
    # stored types are what the columns hold.
    hints: list[ColumnHint] | None = None
    sampled_rows: int = 1  # rows the hints were judged from (0: every hint is a guess)
    total_bytes: int | None = None  # the input's size as stored, where known
    num_rows: int | None = None  # the rows the input holds, where its file says so
    width: int | None = None  # columns, where known before reading (a wide CSV's header)
    # Its batches end where reads end (a pipe that pauses, a read that takes long), so
    # their rows vary from run to run; the values never do (Format.grouped).
    cut_by_time: bool = False

    @property
    def shown_name(self) -> str:
        """How the terminal's table and chart name the input in their caption."""
        return self.name

    def as_json_text(self, positions: Collection[int]) -> bool:
        """Give these columns as JSON text (JSON_TEXT), as the run's first input has them
        (a JSON Lines column of mixed kinds): True where this reader does so itself (JSON
        Lines, keeping `null` and an absent key apart); else the run converts the values."""
        return False

    def table(self) -> TableSource:
        """This source as what it is when its layout is "table"."""
        assert self.layout == "table", f"{self.name} is read as {self.layout}"
        return cast("TableSource", self)

    def array(self) -> ArraySource:
        """This source as what it is when its layout is "array"."""
        assert self.layout == "array", f"{self.name} is read as {self.layout}"
        return cast("ArraySource", self)

    @property
    def bytes_read(self) -> int | None:
        """Bytes of the input read so far, as stored (text: the progress bar's measure)."""
        return None

    @property
    def locator(self) -> Callable[[int], tuple[str, int] | tuple[str, int, int]] | None:
        """What names the file, row and line of a row of the run (from 1); None: rows of
        the run are rows of the input, and lines are not known."""
        return None

    def provisional(self) -> Provisional | None:
        """A schema to start the run with while the input is still being read, where the
        reader learns the schema from the whole input first (JSON Lines); None: `schema`
        is known (or the reader does not offer one)."""
        return None


class Provisional(Protocol):
    """A schema from an input's first lines, and its batches as they are read, in that
    schema (runner.run_table speculates with them). `outcome`: None while the input is
    still being read (`wait`: read to its end first); True once it is, and the whole
    input's schema is this one; False where it is not, or the reading failed. The batches
    raise Widened at the first batch after the outcome is known to be False."""

    schema: pa.Schema

    def batches(self, parse: Mapping[int, pa.DataType] | None = None,
                unused: Collection[int] = ()) -> Iterator[pa.RecordBatch]: ...

    def outcome(self, wait: bool) -> bool | None: ...

    def stop(self) -> None: ...


class TableSource(Protocol):
    """A table read batch by batch (SourceBase's answers, and the batches)."""

    layout: ClassVar[Literal["table", "array", "wide"]]
    name: str
    hints: list[ColumnHint] | None
    sampled_rows: int
    total_bytes: int | None
    num_rows: int | None

    @property
    def schema(self) -> pa.Schema: ...

    @property
    def bytes_read(self) -> int | None: ...

    @property
    def locator(self) -> Callable[[int], tuple[str, int] | tuple[str, int, int]] | None: ...

    def batches(self, parse: Mapping[int, pa.DataType] | None = None,
                unused: Collection[int] = ()) -> Iterator[pa.RecordBatch]: ...

    def provisional(self) -> Provisional | None: ...


class TableSink(Protocol):
    """Where a table's batches go. After any failure (one in `close` too) the engine calls
    `abort`, once: it releases the writer without completing the output, raising nothing."""

    def write(self, batch: pa.RecordBatch) -> None: ...

    def close(self) -> None: ...

    def abort(self) -> None: ...


class ArraySource(Protocol):
    """An N-d array read in blocks along axis 0 (C order)."""

    layout: ClassVar[Literal["table", "array", "wide"]]
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
    """A read-only stream that replays already-read bytes (`head`: the bytes, or a
    stream of them, such as a spool) before the rest of `stream` (read as it arrives: a
    pipe's reader is not held until a whole buffer is full)."""

    def __init__(self, head: bytes | IO[bytes], stream: IO[bytes]) -> None:
        self._head = memoryview(head) if isinstance(head, bytes) else b""
        self._head_stream = None if isinstance(head, bytes) else head
        self._stream = stream
        self._read1 = getattr(stream, "read1", stream.read)

    def readable(self) -> bool:
        return True

    def fileno(self) -> int:
        # The CSV reader asks the descriptor whether more input is ready (a pipe whose
        # producer pauses must not hold back the rows already here).
        return self._stream.fileno()

    def read1(self, size: int = -1) -> bytes:
        """What is ready, up to `size` bytes (at least one, unless the input ended), as
        the stream gives it: no copy into a buffer and out again (the CSV splitter reads
        this way; 2M x 8 copied its 97 MB twice more through readinto)."""
        if size < 0:
            size = 1 << 20
        if self._head_stream is not None:
            data = self._head_stream.read(size)
            if data:
                return bytes(data)
            self._head_stream = None
        if self._head:
            piece = bytes(self._head[:size])
            self._head = self._head[size:]
            return piece
        return bytes(self._read1(size))

    def readinto(self, buffer: memoryview) -> int:  # type: ignore[override]
        if self._head_stream is not None:
            data = self._head_stream.read(len(buffer))
            if data:
                buffer[: len(data)] = data
                return len(data)
            self._head_stream = None
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
