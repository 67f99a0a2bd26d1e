"""JSON Lines in and out: one JSON object a line, read in batches of records.

The input is parsed once, in blocks of whole lines, into Arrow columns that are spooled to
an anonymous temporary file (disk, not memory); what each key held is learnt on the way,
so that a column's type is known for the whole input before the first batch is handed on.
The batches are then read back from the spool and given that type. Memory stays that of a
block.

A block is parsed with the types learnt so far by the C parser (`_jsonl.parse_block`, where
it was built; `parse_block_py` is its twin), which takes a block only where every line is a
flat object of known keys with values of their types, read as Python's json reads them.
It parses without the GIL, on --threads threads, a few blocks ahead of their turn, with the
types learnt by the time each block was read (`_Ahead`); in a file, each of those threads
reads its block's bytes itself (`_Text`, by position), only where blocks end being found
in order (`_located`); at its turn, in the input's order,
a block is taken only where those are still the types learnt so far (else it is parsed
again), so that what is learnt and spooled is what one thread would have done.
Else by polars' NDJSON reader, where the block's bytes let its reading be checked
(`_key_counts`), else by pyarrow's, strictly (a value of another kind, a key not seen
before, a line either reads otherwise than Python's json module would: the block is not
taken that way). Blocks none takes, and the lines where a
value is missing (null, or an absent key: Arrow has one null for both) or a float may have
been an integer, are read with Python's json module, which also says what is wrong with a
bad line.

A column whose values are all numbers, all strings or all booleans (or missing) gets that
Arrow type. Any other column (nested objects and arrays, or values of mixed kinds) holds
each value's JSON text, its field marked with JSON_TEXT: the JSON Lines writer puts that
text back as it is, and the CSV, TSV and table writers show strings as their text and
other values as JSON (`cell_text`). An absent key is a missing cell (null); in JSON Lines
output it stays absent, and an explicit `null` is written back as `null` (FIELD_MISSING
says, column by column, which the input had; for a numeric column that had both, the
writer learns it row by row from the source: `_NullRows`).
"""

from __future__ import annotations

import base64
import collections
import concurrent.futures
import contextlib
import errno
import io
import itertools
import json
import os
import stat
import tempfile
import threading
import weakref
from collections.abc import Callable, Collection, Iterator, Mapping
from dataclasses import dataclass, field
from types import ModuleType
from typing import IO, TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa

from cumtool import native
from cumtool._ext import load
from cumtool.columnar import (
    arrow_column,
    as_int64_or_float64,
    column_to_numpy,
    json_values_text,
    string_array,
    validity,
)
from cumtool.errors import DataError, FormatError
from cumtool.formats import (
    BOM,
    CULPRIT,
    HOLDS,
    JSON_TEXT,
    MOSTLY,
    SourceBase,
    culprit_text,
    holds_json_text,
    row_text,
)
from cumtool.formats.jsonl import lines
from cumtool.formats.jsonl.lines import number_text
from cumtool.formats.jsonl.missing import EACH, FIELD_MISSING
from cumtool.numtext import MOSTLY_NUMBERS
from cumtool.pipeline import RenderedAhead, prefetch

if TYPE_CHECKING:
    import polars as pl

NATIVE: ModuleType | None = load("_jsonl")  # None: the Python twin (cumtool._ext)

BATCH_ROWS = 1 << 17  # a block's rows (4 MiB of 8 numbers a line: ~45,000) in one batch:
# each batch is handed between the reading, scanning and writing threads
# Text parsed at once. Each block costs some ten hand-offs between threads (reading,
# parsing, spooling, scanning, writing), each a context switch where the other side waits;
# and each block parsed ahead, and its batch's text made ahead, is memory, up to 8 of each
# at once on 16 cores. 2M x 8 (181 MB) to CSV, 2 cores, --threads 2: 8 MiB blocks 3.9
# voluntary switches a MB and 202 MiB peak RSS, 4 MiB 4.5 and 139 MiB (2 MiB 10.2 and
# 103 MiB), the same wall time or less; with 16 threads' queues (native.USABLE set to 16),
# 350-430 MiB against 276-293 (benchmarks/RESULTS-cores.md, session 9).
BLOCK_BYTES = 4 << 20
FIRST_BLOCK_BYTES = 16 << 10  # the first block's: its types learnt before blocks run ahead
# Blocks parsed at once by the reader's threads, and batches' lines made at once by the
# writer's, at most; never more than the usable cores (native.ahead_workers: on 2 cores
# at --threads 16 more only cost memory, a block ahead ~14 MB with its columns, and
# context switches), and the text read ahead bounded. Beyond 8 the in-order turns
# (spooling, scanning, writing) are the limit (measured: RESULTS-jsonl.md).
PARSE_AHEAD = 8
WRITE_AHEAD = 8
AHEAD_BYTES = 72 << 20
SPOOL_AHEAD = 2  # blocks waiting to be spooled, at most
# Segments whose columns are kept in memory for the run reading behind pass 1, at most
# (`_Cache`): it is handed each at the block's turn and takes its columns from there, not
# waiting for the spool and reading them back (a copy out of the temporary file and
# Arrow's IPC reader on its thread: 0.046-0.059 s of that thread's CPU on 2M x 8 -> CSV
# with 16 threads' queues, 0.024-0.040 after; RESULTS-cores.md, session 12). A run more
# than this many behind reads the older ones back from the spool, so that memory stays
# that of a few blocks.
CACHED_SEGMENTS = 4
# Pass 1 read behind a run started with the first block's types (`overlap`) from this many
# cores (--threads and the cores there are): on 2, each pass alone keeps both busy, and
# overlapping them gave no wall time (2M x 8, --threads 2: 0.81-0.84 s either way) for
# +0.05 s of CPU and the output held back (peak RSS 180 -> 390-460 MiB); with more cores
# than one pass's threads keep busy, pass 2 runs in the cores pass 1 leaves idle.
OVERLAP_CORES = 4
PIECE_BYTES = 1 << 20  # a block the C parser did not take whole is taken in such pieces
HEAD_LINES = 1024  # lines read with Python's json first where a block is not taken whole
BY_POLARS = True  # polars' reader first (else pyarrow's alone)
BY_NATIVE = True  # the C block parser (_jsonl.c) before polars', where it was built
_PARSE_BLOCK = 1 << 20  # pyarrow's unit of work (its threads take blocks of this size)
_EXACT_FLOAT = 1 << 53  # integers beyond this are not exact as float64
_INT64 = 1 << 63

_encode = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode
_encode_ascii = json.JSONEncoder(ensure_ascii=True, separators=(",", ":")).encode
_encode_string = json.encoder.encode_basestring  # C, non-ASCII kept as it is: for str
_decode = json.JSONDecoder().decode


def _json(value: Any) -> str:
    """A value's compact JSON text (the common scalars without the encoder's overhead);
    a lone surrogate (`"\\ud800"` read from JSON) is written escaped, as UTF-8 cannot hold
    it."""
    kind = type(value)
    if kind is str:
        text = _encode_string(value)
    elif kind is int:
        return int.__repr__(value)
    else:
        text = _encode(value)
    if not text.isascii():
        try:
            text.encode("utf-8")
        except UnicodeEncodeError:
            return _encode_ascii(value)
    return text


class _Surrogate:
    """The kind of a string holding a lone surrogate: kept as JSON text, escaped."""


def _kind(value: Any) -> type:
    kind = type(value)
    if kind is str and not value.isascii():
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return _Surrogate
    return kind


@dataclass
class _Key:
    """What the input holds under a key."""

    kinds: set[type] = field(default_factory=set)  # NoneType: an explicit null
    absent: bool = False  # some record lacks it
    big: bool = False  # an integer beyond 2^53
    wide: bool = False  # an integer beyond int64
    culprit: str | None = None  # its first value that is not a number (culprit_text)
    mostly: bool = False  # numbers came first, and are most of the values around `culprit`

    def learn_culprit(self, row: int, line: int | None, value: Any) -> None:
        """Row `row` (line `line`) holds `value`, the key's first that is not a number."""
        text = value if isinstance(value, str) else _json(value)
        self.culprit = culprit_text(row_text(row, line), text)

    def parsed_type(self) -> pa.DataType | None:
        """The type pyarrow's reader is to give it, where one fits every value so far."""
        kinds = self.kinds - {type(None)}
        if not kinds:
            return pa.null()
        if kinds <= {int} and not self.wide:
            return pa.int64()
        if kinds <= {int, float} and not self.big:
            return pa.float64()
        if kinds == {str}:
            return pa.string()
        if kinds == {bool}:
            return pa.bool_()
        return None


def _field(name: str, key: _Key, token: str, floats: bool = False) -> pa.Field:
    """A column's field from what its key held. `floats` (a float --dtype): numbers that
    no float64 column holds exactly (integers beyond 2^53, or beyond int64) are floats
    too, as a CSV column of them is, rather than their JSON text (which is not scanned)."""
    has_null = type(None) in key.kinds
    arrow_type = key.parsed_type()
    if floats and arrow_type is None and key.kinds - {type(None)} <= {int, float}:
        arrow_type = pa.float64()
    if arrow_type == pa.null():
        arrow_type = None  # never a value: only nulls, kept as JSON text
    # A typed column cannot tell `null` from an absent key: text or flags that have both
    # keep their JSON text; numbers stay numbers, and the writer is told row by row.
    named = {CULPRIT: key.culprit.encode()} if key.culprit is not None else {}
    if key.mostly:
        named[MOSTLY] = b"1"
    if arrow_type is None:
        metadata = {JSON_TEXT: b"1", **named}
        if key.wide and key.kinds - {type(None)} <= {int}:  # said as such, not "string"
            metadata[HOLDS] = b"bigint"  # as a CSV column of them: its messages alike
        elif key.big and key.kinds - {type(None)} <= {int, float}:
            metadata[HOLDS] = b"bigfloat"  # integers float64 cannot hold, among floats
        return pa.field(name, pa.string(), metadata=metadata)
    if has_null and key.absent:
        missing = EACH + token.encode()
    else:
        missing = b"null" if has_null else b"absent"
    return pa.field(name, arrow_type, metadata={FIELD_MISSING: missing, **named})


# Null or absent, row by row -------------------------------------------------------------

_NULL_ROWS: dict[str, _NullRows] = {}
_tokens = itertools.count()


class _NullRows:
    """Which missing cells of a numeric column were an explicit `null` (the rest were
    absent keys), handed from a JSON Lines source to a JSON Lines writer in row order.
    Masks are kept only while a writer is there to take them."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._pending: list[tuple[int, dict[str, np.ndarray]]] = []
        self._taken = 0  # rows of the first pending block already taken
        self.wanted = False

    def put(self, rows: int, masks: dict[str, np.ndarray]) -> None:
        if self.wanted:
            with self._lock:
                self._pending.append((rows, masks))

    def take(self, rows: int, key: str) -> np.ndarray:
        """The next `rows` rows' mask of one key; every key's rows are taken together by
        `advance`."""
        parts = []
        need = rows
        skip = self._taken
        with self._lock:
            for _count, masks in self._pending:
                if need <= 0:
                    break
                part = masks[key][skip:skip + need]
                parts.append(part)
                need -= len(part)
                skip = 0
        got = np.concatenate(parts) if parts else np.zeros(0, dtype=bool)
        if len(got) < rows:  # rows the source did not see (another input): absent
            got = np.concatenate([got, np.zeros(rows - len(got), dtype=bool)])
        return got

    def advance(self, rows: int) -> None:
        with self._lock:
            self._taken += rows
            while self._pending and self._taken >= self._pending[0][0]:
                self._taken -= self._pending.pop(0)[0]


def _lines_of(chunk: bytes) -> tuple[np.ndarray, np.ndarray]:
    """(start, end) of each line of a block, its line end left out (none in no bytes)."""
    if not chunk:
        return np.zeros(0, dtype=np.intp), np.zeros(0, dtype=np.intp)
    data = np.frombuffer(chunk, dtype=np.uint8)
    ends = np.flatnonzero(data == 10)
    if not chunk.endswith(b"\n"):
        ends = np.append(ends, len(chunk))
    starts = np.empty_like(ends)
    if len(ends):
        starts[0] = 0
        starts[1:] = ends[:-1] + 1
    return starts, ends


def _read_into(stream: IO[bytes], view: memoryview) -> int:
    """Fill `view` from the stream (less only at its end): how many bytes came."""
    done = 0
    while done < len(view):
        got = stream.readinto(view[done:])  # type: ignore[attr-defined]
        if not got:
            break
        done += got
    return done


def _record(line: bytes, number: int, name: str) -> dict[str, Any]:
    try:
        text = line.decode("utf-8")
        value = _decode(text)
    except UnicodeDecodeError:
        raise DataError(f"{name}: line {number} is not UTF-8 text") from None
    except json.JSONDecodeError as error:
        raise DataError(f"{name}: line {number} is not JSON: {error.msg} (at character "
                        f"{error.pos + 1})") from None
    except RecursionError:
        raise DataError(f"{name}: line {number} is nested too deeply to read") from None
    if not isinstance(value, dict):
        shown = text.strip()[:40]  # as written in the file: "h\u00e9", null
        kind = "an array" if isinstance(value, list) else f"the value {shown}"
        raise DataError(f"{name}: line {number} is {kind}, not a JSON object")
    return value


@dataclass
class _Segment:
    """One block's columns in the spool: where, how many rows, and for each key (by
    position) whether it is JSON text and whether it has a mask of absent cells."""

    offset: int
    size: int
    rows: int
    columns: dict[int, tuple[bool, bool]]
    source: tuple[int, int, int]  # its lines in the input: from, to, the first's number
    # its columns as spooled, kept in memory for a run going on from the segments as
    # they come (`_provisional_batches`) until it takes them (`_Cache`)
    table: pa.Table | None = field(default=None, repr=False)
    spooled: bool = False  # its columns are in the spool at `offset` (and `size` long)


class JsonlSource(SourceBase):
    """A JSON Lines file (seekable: a file, or standard input spooled to disk)."""

    def __init__(self, stream: IO[bytes], name: str, batch_rows: int | None,
                 max_line: int, float_columns: bool = False, overlap: bool = False) -> None:
        """`overlap`: where the input is a file and there are cores to spare, read the
        input (pass 1) on a thread of its own after its first block, so that a run can
        start with the schema learnt from that block (`provisional`); `schema`,
        `num_rows` and `batches` wait for the whole input, as without."""
        self.name = name
        self._stream = stream
        self._reread_cache: tuple[tuple[int, str] | None, list[str | None]] = (None, [])
        self._batch_rows = batch_rows or BATCH_ROWS
        self._max_line = max_line
        self._float_columns = float_columns
        self._keys: dict[str, _Key] = {}  # in order of first appearance
        self._segments: list[_Segment] = []
        self._spooler: concurrent.futures.ThreadPoolExecutor | None = None
        self._spooling: collections.deque[concurrent.futures.Future[None]] = \
            collections.deque()
        self._spool_file = tempfile.TemporaryFile()
        self._cache = _Cache()
        weakref.finalize(self, _close_spool, self._spool_file)
        self._rows = 0
        self._token = f"{next(_tokens)}"
        self._null_rows: _NullRows | None = None
        self._schema = pa.schema([])
        # pass 1 on a thread of its own: its end, its failure, and the schema after its
        # first block; `_grown` is notified at each segment listed, and spooled, and at
        # the end
        self._reading: threading.Thread | None = None
        self._ended = False
        self._failure: BaseException | None = None
        self._stopping = False
        self._grown = threading.Condition()
        self._first: pa.Schema | None = None
        self._first_read = threading.Event()
        # Whether a run may go on from the segments as they come (provisional), so that
        # pass 1 keeps fewer blocks in flight (_Ahead): from the start where it reads
        # behind, until the run waits for the whole input instead, or has ended
        self._behind_a_run = False
        if (overlap and native.running_threads() >= OVERLAP_CORES
                and NATIVE is not None and BY_NATIVE and _descriptor(stream) is not None):
            self._behind_a_run = True
            self._reading = threading.Thread(target=self._read_behind, args=(stream,),
                                             name="cumtool-jsonl-pass1", daemon=True)
            self._reading.start()
            self._first_read.wait()
            if self._ended:  # read whole (a small input), or failed: as without overlap
                self._settle()
            return
        self._read_whole(stream)

    def _read_whole(self, stream: IO[bytes]) -> None:
        try:
            stream.seek(0)
            self._read(stream)
        except OSError as error:
            raise DataError(f"{self.name}: cannot read: {error.strerror or error}") from None
        self._schema = self._schema_now()
        self._null_rows = None
        if any((f.metadata or {}).get(FIELD_MISSING, b"").startswith(EACH)
               for f in self._schema):
            self._null_rows = _NullRows()
            _NULL_ROWS[self._token] = self._null_rows
            weakref.finalize(self, _NULL_ROWS.pop, self._token, None)

    def _schema_now(self) -> pa.Schema:
        return pa.schema([_field(k, key, f"{self._token} {i}", self._float_columns)
                          for i, (k, key) in enumerate(self._keys.items())])

    def _read_behind(self, stream: IO[bytes]) -> None:
        """Pass 1 on its own thread (`overlap`); its failure is raised by `_settle`."""
        try:
            self._read_whole(stream)
        except BaseException as error:  # raised on the run's thread, by _settle
            self._failure = error
        finally:
            with self._grown:
                self._ended = True
                self._grown.notify_all()
            self._first_read.set()

    def _settle(self) -> None:
        """Wait for pass 1 to end; raise its failure."""
        self._not_behind()  # the run waits: pass 1 alone, on every core
        if self._reading is not None:
            self._reading.join()
            if self._failure is not None:
                raise self._failure

    @property
    def num_rows(self) -> int:  # type: ignore[override]
        """Counted as the input is read, before any batch."""
        self._settle()
        return self._rows

    @property
    def schema(self) -> pa.Schema:
        self._settle()
        return self._schema

    def as_json_text(self, positions: Collection[int]) -> bool:
        """The columns at `positions` as JSON text, each value as its line has it
        (_typed converts a typed column's spooled values)."""
        self._settle()
        fields = list(self._schema)
        for i in positions:
            fields[i] = pa.field(fields[i].name, pa.string(), metadata={JSON_TEXT: b"1"})
        self._schema = pa.schema(fields, metadata=self._schema.metadata)
        return True

    def provisional(self) -> _Provisional | None:
        """The schema after the first block, and the batches as they are spooled, where
        pass 1 is still running (`overlap`) and that schema is one they can be made in
        without the whole input: no column of JSON text (read again from the input),
        none whose missing cells are null or absent row by row (_NullRows)."""
        first = self._first
        if self._reading is None or first is None or not len(first) or any(
                f.metadata and (JSON_TEXT in f.metadata or (f.metadata.get(
                    FIELD_MISSING, b"")).startswith(EACH)) for f in first):
            self._not_behind()
            return None
        return _Provisional(self, first)

    @property
    def locator(self) -> Callable[[int], tuple[str, int, int] | tuple[str, int]]:
        return self.locate

    def locate(self, row: int) -> tuple[str, int, int] | tuple[str, int]:
        """This source's name, row `row` (from 1: blank lines are no rows) and its line,
        for a message (`row 2 (line 4)`), found again in the input (only on an error)."""
        done = 0
        for segment in self._segments:
            if row <= done + segment.rows:
                start, stop, number = segment.source
                try:
                    # by position where it can (the reading thread may be reading too)
                    fd = _descriptor(self._stream)
                    if fd is not None:
                        text = _pread(fd, start, stop - start, self.name)
                    else:
                        self._stream.seek(start)
                        text = self._stream.read(stop - start)
                except (OSError, DataError):
                    return self.name, row  # the message without its line, not another one
                records = (k for k, line in enumerate(text.split(b"\n")) if line.strip())
                k = next(itertools.islice(records, row - done - 1, None), None)
                return (self.name, row) if k is None else (self.name, row, number + k)
            done += segment.rows
        return self.name, row

    # Pass 1: parse and spool -----------------------------------------------------------

    def _read(self, stream: IO[bytes]) -> None:
        """Parse and spool the input, block by block of whole lines, in order. The blocks
        of a file are read by the threads that parse them (else on a thread of their own),
        the C parser's calls run ahead on the reader's threads (`_Ahead`) and the spool is
        written on a thread of its own; what is learnt
        and spooled is decided here, block after block, as on one thread."""
        number = 1  # of the next line
        # Read, not mapped into memory: a log truncated while it is read (rotation by
        # copytruncate) would kill the run with SIGBUS, no message and its temporary
        # files left; a read comes back short and the run says so.
        fd = _descriptor(stream)
        # In a file, only where blocks end is found here; each block's bytes are read by
        # the thread that parses it (_Text), so that no one thread reads the whole input.
        blocks: Iterator[_Block] = self._blocks(stream) if fd is None else self._located(fd)
        if native.CORES > 1 and NATIVE is not None and BY_NATIVE:
            if fd is None:
                # read on a thread of its own (a read releases the GIL), a block or two
                # ahead
                blocks = prefetch(blocks)
            # and spooled on another (the file's writes release the GIL)
            self._spooler = concurrent.futures.ThreadPoolExecutor(
                1, thread_name_prefix="cumtool-jsonl-spool")
        ahead = _Ahead(blocks, native.CORES, self._types, lambda: self._behind_a_run)
        # The block before is let go only once the next one is read: its memory is then
        # reused by the next block but one, not given back to the system and faulted in
        # again (measured: 88,000 page faults more on 2M x 8 at --threads 1, 0.13 s)
        kept: list[object] = [None]
        try:
            for (text, end, at, over), parse in ahead:
                # the bytes are asked for only where the parse made ahead is not taken
                # (else they were read on its thread, in parallel)
                lines = self._native(text, 0, number, at, end, parse)
                if lines is None:
                    lines = self._declined(_bytes(text), end, number, at)
                kept[0] = text
                number += lines
                if over:
                    raise self._too_long(number)
                if self._reading is not None:
                    if self._first is None:  # a run may start with these types
                        self._first = self._schema_now()
                        self._first_read.set()
                    if self._stopping:
                        raise _Stopped()
            while self._spooling:
                self._spooling.popleft().result()
        finally:
            ahead.close()
            if self._spooler is not None:
                self._spooler.shutdown(wait=True, cancel_futures=True)
                self._spooler = None
                self._spooling.clear()
            close = getattr(blocks, "close", None)
            if close is not None:
                close()  # the reading thread ends before the stream is read again

    def _declined(self, data: bytes | bytearray | memoryview, end: int, number: int,
                  at: int) -> int:
        """A block the C parser did not take whole (a key or a type first seen in it, a
        bad line): in pieces of PIECE_BYTES, each by the C parser where it takes it, so
        that only the piece that holds what it did not take goes the slower ways (whose
        cost grows with the text they are given). Returns the block's lines."""
        cuts: list[int] = []
        if NATIVE is not None and BY_NATIVE and self._types() is not None and end > PIECE_BYTES:
            feeds = np.flatnonzero(np.frombuffer(data, dtype=np.uint8, count=end) == 10) + 1
            at_least = np.arange(PIECE_BYTES, end, PIECE_BYTES)
            found = np.searchsorted(feeds, at_least)
            cuts = sorted({int(feeds[k]) for k in found.tolist() if k < len(feeds)} - {end})
        total = 0
        start = 0
        for stop in [*cuts, end]:
            lines = self._native(data, start, number + total, at, stop)
            if lines is None:  # the slower readers take bytes
                parsed = _parsed(bytes(memoryview(data)[start:stop]), self._types())
                parsed.at = at + start
                lines = self._take(number + total, parsed)
            total += lines
            start = stop
        return total

    def _blocks(self, stream: IO[bytes]) -> Iterator[_Block]:
        """Blocks of whole lines: bytes whose first `end` are the block (not cut out: the
        C parser takes them as they are), where it starts in the input and whether the
        line after it is too long. The first block is small (FIRST_BLOCK_BYTES at most): its keys
        and types are learnt on the reading thread, by Python's json, before any block
        can be parsed ahead. Each block is read into its own buffer after the part line
        the one before ended on (one copy of the text, not a read and a join)."""
        rest = b""
        at = 0  # where `rest` starts
        size = min(FIRST_BLOCK_BYTES, BLOCK_BYTES)
        first = True
        while True:
            data = bytearray(len(rest) + size)
            data[:len(rest)] = rest
            got = _read_into(stream, memoryview(data)[len(rest):])
            if got < size:
                del data[len(rest) + got:]
            size = BLOCK_BYTES
            if first and data.startswith(BOM):
                del data[:len(BOM)]
                at = 3
            first = False
            if not got:
                break
            end = data.rfind(b"\n") + 1
            rest = bytes(data[end:])
            if len(rest) > self._max_line:
                yield data, end, at, True
                return
            if end:
                yield data, end, at, False
                at += end
        if rest:
            yield rest, len(rest), at, False

    def _located(self, fd: int) -> Iterator[_Block]:
        """The blocks `_blocks` makes (the same lines each: its buffers end FIRST_BLOCK_BYTES
        in, then every BLOCK_BYTES, and a block is their whole lines), with their bytes
        left to be read (`_Text`): here only the line feed each block ends on is looked
        for, from where its buffer would end back to where the one before ended (none
        between: else the block before would have ended there)."""
        size = os.fstat(fd).st_size
        at = len(BOM) if os.pread(fd, len(BOM), 0) == BOM else 0
        read = 0  # where the buffer before ended
        bound = min(FIRST_BLOCK_BYTES, BLOCK_BYTES)
        while True:
            if bound > size:
                size = os.fstat(fd).st_size  # a file still written: read to its end, as read()
            stop = min(bound, size)
            if stop <= read:
                break
            end = self._last_feed(fd, max(at, read), stop) or at
            if stop - end > self._max_line:
                yield _Text(fd, at, end - at, self.name), end - at, at, True
                return
            if end > at:
                yield _Text(fd, at, end - at, self.name), end - at, at, False
                at = end
            read = stop
            bound += BLOCK_BYTES
        if at < read:
            yield _Text(fd, at, read - at, self.name), read - at, at, False

    def _last_feed(self, fd: int, start: int, stop: int) -> int:
        """Just after the last line feed in bytes `start` to `stop` of the file; 0 if none.
        Looked for from the end, a window at a time, a few lines each at first."""
        window = 4096
        while stop > start:
            begin = max(start, stop - window)
            found = _pread(fd, begin, stop - begin, self.name).rfind(b"\n")
            if found >= 0:
                return begin + found + 1
            stop = begin
            window *= 2
        return 0

    def _types(self) -> dict[str, pa.DataType] | None:
        """The types the keys have had so far; None if some key has no one type."""
        types = {}
        for k, key in self._keys.items():
            parsed_type = key.parsed_type()
            if parsed_type is None:
                return None
            types[k] = parsed_type
        return types or None

    def _too_long(self, number: int) -> DataError:
        return DataError(f"{self.name}: line {number} is longer than {self._max_line} "
                         "bytes; raise --max-record-size if it is meant")

    def _take(self, number: int, parsed: _Parsed) -> int:
        """Check and spool a block of lines, the first of them line `number`; returns how
        many lines it had."""
        starts, ends = parsed.starts, parsed.ends
        if len(ends):
            over = np.flatnonzero(ends - starts > self._max_line)
            if len(over):
                raise self._too_long(number + int(over[0]))
        begin = 0
        head = HEAD_LINES
        while begin < len(ends):
            if begin:
                if self._native(parsed.chunk, int(starts[begin]), number + begin,
                                parsed.at) is not None:
                    break
                at = parsed.at
                parsed = _parsed(parsed.chunk, self._types(), int(starts[begin]))
                parsed.at = at
            if self._fast(parsed, number + begin):
                break
            stop = min(begin + head, len(ends))
            self._exact(parsed.chunk, starts[begin:stop], ends[begin:stop], number + begin,
                        parsed.at)
            begin = stop
            head *= 2
        return len(ends)

    def _native(self, chunk: bytes | bytearray | memoryview | _Text, start: int, number: int,
                at: int, stop: int = -1, parse: _Parse | None = None) -> int | None:
        """The lines of a block from byte `start` on to `stop` (the end if -1; the first
        of them line `number`) read by the C parser with the types learnt so far, checked
        and spooled: how many lines there were; None (nothing learnt) where it does not
        take them all. `parse`: the parser's call made ahead, taken where it was made with
        the types learnt so far (else it is made again here)."""
        types = self._types()
        if stop < 0:
            stop = len(_bytes(chunk))
        if NATIVE is None or not BY_NATIVE or types is None or start >= stop:
            return None
        block = parse.result(types) if parse is not None else None
        if block is None:
            block = _parse_native(_bytes(chunk), start, stop, types)
        if block is _DECLINED:
            return None
        assert isinstance(block, _NativeBlock)
        if block.longest > self._max_line:
            return None  # the other ways name the line
        if not block.rows:
            return block.lines
        for (name, arrow_type), (value, null, absent, big) in zip(types.items(), block.learnt,
                                                                  strict=True):
            key = self._keys[name]
            if value:
                key.kinds.add(_KIND_TYPES[arrow_type])
            if null:
                key.kinds.add(type(None))
            key.absent |= absent
            key.big |= big
        self._spooled(block.table, block.layout, block.rows, (at + start, at + block.end,
                                                              number))
        return block.lines

    def _fast(self, parsed: _Parsed, number: int) -> bool:
        """The lines parsed with the types learnt so far, by polars where the block's bytes
        let its reading be checked, else by pyarrow, if it takes them all as Python's json
        would; False (nothing learnt) if not."""
        types = self._types()
        if types is None:
            return False
        if types != parsed.types:  # learnt more since it was parsed
            at = parsed.at
            parsed = _parsed(parsed.chunk, types, parsed.start)
            parsed.at = at
        if parsed.lines is None:
            return False
        table, counts = parsed.table, parsed.counts
        if table is None:  # polars did not take it (or was not asked): pyarrow may
            counts = None
            table = _by_pyarrow(parsed.text, types, len(parsed.lines))
        if table is None:
            return False
        return self._typed_block(parsed, number, types, table, counts)

    def _typed_block(self, parsed: _Parsed, number: int, types: dict[str, pa.DataType],
                     table: pa.Table, counts: tuple[int, int] | None) -> bool:
        chunk, lines = parsed.chunk, parsed.lines
        starts, content_end = parsed.line_starts, parsed.content_end
        assert lines is not None and starts is not None and content_end is not None
        columns = table.columns
        missing_rows: list[np.ndarray] = []
        valid: dict[str, np.ndarray] = {}  # of the columns with missing cells
        odd: dict[str, np.ndarray] = {}  # rows of floats that pyarrow may read otherwise
        big: set[str] = set()
        for name, column in zip(types, columns, strict=True):
            if column.null_count:
                valid[name] = _valid(column)
                missing_rows.append(np.flatnonzero(~valid[name]))
            if pa.types.is_floating(column.type):
                rows = _odd_parsed(column)
                if len(rows):
                    odd[name] = rows
            elif pa.types.is_integer(column.type) and _beyond(column, _EXACT_FLOAT):
                big.add(name)
        looked = np.unique(np.concatenate([*missing_rows, *odd.values()]).astype(np.int64)) \
            if missing_rows or odd else np.zeros(0, dtype=np.int64)
        records = {row: _record(chunk[int(starts[lines[row]]):int(content_end[lines[row]])],
                                number + int(lines[row]), self.name) for row in looked.tolist()}
        for name, rows in odd.items():
            if any(type(records[row].get(name)) is not float for row in rows.tolist()):
                return False
        # Missing cells: null or an absent key, as the line says.
        absent: dict[str, np.ndarray] = {}
        nulls: set[str] = set()
        for name, column in zip(types, columns, strict=True):
            if not column.null_count:
                continue
            gone = np.zeros(len(column), dtype=bool)
            where = np.flatnonzero(~valid[name])
            for row in where.tolist():
                if name not in records[row]:
                    gone[row] = True
            if gone.any():
                absent[name] = gone
            if not gone[where].all():
                nulls.add(name)
        if counts is not None and counts != _expected_counts(types, columns, valid, absent):
            # A key polars left out, or a value it turned into text: pyarrow says which.
            table = _by_pyarrow(parsed.text, types, len(lines))
            return table is not None and self._typed_block(parsed, number, types, table, None)
        # Taken: learn from it, and spool it.
        for name, column in zip(types, columns, strict=True):
            key = self._keys[name]
            if column.null_count < len(column):
                key.kinds.add({pa.int64(): int, pa.float64(): float, pa.string(): str,
                               pa.bool_(): bool}[column.type])
            if name in nulls:
                key.kinds.add(type(None))
            if name in absent:
                key.absent = True
            if name in big:
                key.big = True
        position = {k: i for i, k in enumerate(self._keys)}
        arrays, names, layout = [], [], {}
        for name, column in zip(types, columns, strict=True):
            i = position[name]
            arrays.append(column)
            names.append(str(i))
            if name in absent:
                arrays.append(arrow_column(absent[name], None))
                names.append(f"{i}!")
            layout[i] = (False, name in absent)
        self._spooled(pa.Table.from_arrays(arrays, names=names), layout, table.num_rows,
                      (parsed.at + parsed.start, parsed.at + int(parsed.ends[-1]), number))
        return True

    def _exact(self, chunk: bytes, starts: np.ndarray, ends: np.ndarray, number: int,
               at: int) -> None:
        """Lines read with Python's json module."""
        records, numbers = [], []
        for k, (start, end) in enumerate(zip(starts.tolist(), ends.tolist(), strict=True)):
            line = chunk[start:end]
            if line.strip():
                records.append(_record(line, number + k, self.name))
                numbers.append(number + k)
        if not records:
            return
        for record in records:
            for name in record:
                if name not in self._keys:
                    # A key first seen here was absent from every record before.
                    self._keys[name] = _Key(absent=self._rows > 0)
        arrays, names, layout = [], [], {}
        for i, (name, key) in enumerate(self._keys.items()):
            values = [r.get(name, _ABSENT) for r in records]
            kinds = {_kind(v) for v in values if v is not _ABSENT}
            ints = [v for v in values if type(v) is int]
            big = any(not -_EXACT_FLOAT <= v <= _EXACT_FLOAT for v in ints)
            wide = any(not -_INT64 <= v < _INT64 for v in ints)
            has_absent = any(v is _ABSENT for v in values)
            # A key's first value that is not a number is always met here: the typed
            # parsers take a block only in the types learnt so far, and only this way
            # learns a new key or kind.
            if key.culprit is None and kinds - _NUMBER_KINDS:
                first = next(j for j, v in enumerate(values)
                             if v is not _ABSENT and type(v) not in _NUMBER_KINDS)
                key.learn_culprit(self._rows + first + 1, numbers[first], values[first])
                key.mostly = _mostly_numbers(values, first, bool(key.kinds - {type(None)}))
            key.kinds |= kinds
            key.big |= big
            key.wide |= wide
            key.absent |= has_absent
            column, text = _array(values, kinds - {type(None)}, big, wide)
            arrays.append(column)
            names.append(str(i))
            mask = not text and has_absent
            if mask:
                arrays.append(arrow_column(np.array([v is _ABSENT for v in values]), None))
                names.append(f"{i}!")
            layout[i] = (text, mask)
        self._spooled(pa.Table.from_arrays(arrays, names=names), layout, len(records),
                      (at + int(starts[0]), at + int(ends[-1]), number))

    def _spooled(self, table: pa.Table, layout: dict[int, tuple[bool, bool]], rows: int,
                 source: tuple[int, int, int]) -> None:
        """Spool a block's columns: at once, or on the spooling thread (blocks in order,
        a few at most waiting, each failure raised at a later block's turn or the end).
        The segment is listed now, and behind a run (`overlap`) handed to it with its
        columns kept in memory (`_Cache`): the run does not wait on the spool."""
        self._rows += rows
        segment = _Segment(-1, 0, rows, layout, source)
        with self._grown:
            if self._behind_a_run and table.num_columns:
                self._cache.keep(segment, table)
            self._segments.append(segment)
            self._grown.notify_all()
        if self._spooler is None:
            self._spool(segment, table)
            return
        self._spooling.append(self._spooler.submit(self._spool, segment, table))
        while len(self._spooling) > SPOOL_AHEAD:
            self._spooling.popleft().result()

    def _spool(self, segment: _Segment, table: pa.Table) -> None:
        """Spool a block's columns (none: records without keys, absent from every one),
        straight into the file (an IPC buffer first cost a copy, and page faults: 0.1 s of
        CPU on 2M x 8), and say where they lie."""
        import pyarrow.ipc as ipc

        offset = self._spool_file.tell()
        if table.num_columns:
            try:
                with ipc.new_stream(pa.PythonFile(self._spool_file, mode="w"),
                                    table.schema) as writer:
                    writer.write_table(table)
            except OSError as error:  # a full disk: not the input's fault
                raise DataError(f"{self.name}: cannot write its parsed records to a "
                                f"temporary file in $TMPDIR: {error.strerror or error}"
                                ) from None
        self._spool_file.flush()  # read back by position (os.pread), while pass 1 goes on
        with self._grown:
            segment.offset, segment.size, segment.spooled = (
                offset, self._spool_file.tell() - offset, True)
            self._grown.notify_all()

    # Pass 2: the spooled blocks in the schema's types ------------------------------------

    def batches(self, parse: Mapping[int, pa.DataType] | None = None,
                unused: Collection[int] = ()) -> Iterator[pa.RecordBatch]:
        """Batches of records as the schema's columns (typed: nothing to parse)."""
        self._settle()
        if not len(self._schema):
            if self._rows:
                raise FormatError(f"{self.name}: its {self._rows} records have no keys; "
                                  "there is no column to scan")
            return
        for segment in self._segments:
            yield from self._segment_batches(segment, self._schema)

    def _segment_batches(self, segment: _Segment, schema: pa.Schema,
                         table: pa.Table | None = None) -> Iterator[pa.RecordBatch]:
        """A spooled segment's batches in `schema`'s types; from `table`, its columns as
        they were spooled, where given (the batches the spool's stream holds: one a
        chunk), else read back from the spool."""
        import pyarrow.ipc as ipc

        if not segment.columns:
            batch = self._typed(pa.RecordBatch.from_arrays([], names=[]), segment, 0,
                                segment.rows, schema)
            for start in range(0, batch.num_rows, self._batch_rows):
                yield batch.slice(start, self._batch_rows)
            return
        if table is not None:
            spooled: Iterator[pa.RecordBatch] = iter(table.to_batches())
        else:
            try:
                # by position: the spooling thread may be writing the file (`overlap`)
                data = os.pread(self._spool_file.fileno(), segment.size, segment.offset)
                if len(data) != segment.size:
                    raise OSError(errno.EIO, "short read")
            except OSError as error:
                raise DataError(f"{self.name}: cannot read back its spooled batches: "
                                f"{error.strerror or error}") from None
            spooled = iter(ipc.open_stream(pa.py_buffer(data)))
        done = 0
        for part in spooled:
            batch = self._typed(part, segment, done, part.num_rows, schema)
            done += part.num_rows
            for start in range(0, batch.num_rows, self._batch_rows):
                yield batch.slice(start, self._batch_rows)

    def _provisional_batches(self, first: pa.Schema) -> Iterator[pa.RecordBatch]:
        """The batches in the provisional schema `first`, each segment as soon as it is
        spooled; Widened once pass 1 has ended with another schema, or failed."""
        from cumtool.formats import Widened

        try:
            taken = 0
            while True:
                with self._grown:
                    # the next segment, once its columns are kept or spooled
                    while not self._ended and (taken == len(self._segments) or not (
                            self._segments[taken].spooled
                            or self._segments[taken].table is not None)):
                        self._grown.wait()
                    ended = self._ended
                    segment = self._segments[taken] if taken < len(self._segments) else None
                    table = self._cache.take(segment) if segment is not None else None
                if ended and (self._failure is not None
                              or not self._schema.equals(first, check_metadata=True)):
                    raise Widened()
                if segment is None:
                    return
                # (pass 1 ended well: every segment was spooled)
                assert table is not None or segment.spooled
                taken += 1
                yield from self._segment_batches(segment, first, table)
        finally:
            self._not_behind()

    def _not_behind(self) -> None:
        """No run goes on from the segments as they come (any more)."""
        with self._grown:
            self._behind_a_run = False
            self._cache.clear()

    def _reread(self, segment: _Segment, name: str) -> list[str | None]:
        """The JSON text of a key's values in a segment's lines, read again from the input
        with Python's json module (`null` as "null", an absent key None)."""
        if self._reread_cache[0] == (segment.offset, name):
            return self._reread_cache[1]
        start, stop, number = segment.source
        try:
            self._stream.seek(start)
            text = self._stream.read(stop - start)
        except OSError as error:
            raise DataError(f"{self.name}: cannot read: {error.strerror or error}") from None
        texts: list[str | None] = []
        for k, line in enumerate(text.split(b"\n")):
            if line.strip():
                record = _record(line, number + k, self.name)
                texts.append(_json(record[name]) if name in record else None)
        self._reread_cache = ((segment.offset, name), texts)
        return texts

    def _typed(self, spooled: pa.RecordBatch, segment: _Segment, first: int,
               rows: int, schema: pa.Schema) -> pa.RecordBatch:
        """Rows `first` on of a spooled segment, in `schema`'s types."""
        arrays = []
        explicit: dict[str, np.ndarray] = {}
        for i, field_ in enumerate(schema):
            absent: np.ndarray | None
            if i not in segment.columns:  # a key not seen yet: absent from every record
                absent = np.ones(rows, dtype=bool)
                column: pa.Array = pa.nulls(rows, field_.type)
            else:
                text, masked = segment.columns[i]
                column = spooled.column(str(i))
                absent = column_to_numpy(spooled.column(f"{i}!"))[0] if masked else None
                if holds_json_text(field_):
                    if pa.types.is_floating(column.type):
                        # A float column read as such (its integers too: 0 read 0.0)
                        # that turned out to mix kinds: its values as the lines have them.
                        column = string_array(self._reread(segment, field_.name)[
                            first:first + rows])
                    elif not text:
                        column = as_json_text(column, absent)
                elif pa.types.is_string(column.type) and pa.types.is_floating(field_.type):
                    # JSON text of numbers (integers beyond int64), a float --dtype's
                    column, gone = _floats(column)
                    absent = gone if absent is None else absent
                elif column.type != field_.type:
                    # integers beyond 2^53 (a float --dtype's) to the nearest float, as
                    # float() rounds them; any other cast is exact
                    column = column.cast(field_.type, safe=not pa.types.is_floating(
                        field_.type))
            missing = (field_.metadata or {}).get(FIELD_MISSING, b"")
            if missing.startswith(EACH):
                nulls = ~_valid(column)
                if absent is not None:
                    nulls &= ~absent
                explicit[str(i)] = nulls
            arrays.append(column)
        if self._null_rows is not None and schema is self._schema:
            # (never from a provisional schema's batches: pass 1 may have made the queue
            # for the schema it ended with while they are still being made)
            self._null_rows.put(rows, explicit)
        return pa.RecordBatch.from_arrays(arrays, schema=schema)


class _Cache:
    """Segments' columns kept in memory, as spooled, for the run reading behind pass 1:
    the newest CACHED_SEGMENTS at most (a run further behind reads the older ones back
    from the spool). Used under the source's `_grown` lock."""

    def __init__(self) -> None:
        self._kept: collections.deque[_Segment] = collections.deque()

    def keep(self, segment: _Segment, table: pa.Table) -> None:
        segment.table = table
        self._kept.append(segment)
        while len(self._kept) > CACHED_SEGMENTS:
            self._kept.popleft().table = None

    def take(self, segment: _Segment) -> pa.Table | None:
        """The segment's columns, if kept (then no longer: each is read once)."""
        table, segment.table = segment.table, None
        if table is not None:
            self._kept.remove(segment)
        return table

    def clear(self) -> None:
        while self._kept:
            self._kept.popleft().table = None


class _Stopped(Exception):
    """Pass 1 read behind (`overlap`) was stopped: the run ended without it."""


class _Provisional:
    """JsonlSource.provisional's answer (cumtool.formats.Provisional)."""

    def __init__(self, source: JsonlSource, schema: pa.Schema) -> None:
        self._source = source
        self.schema = schema

    def batches(self, parse: Mapping[int, pa.DataType] | None = None,
                unused: Collection[int] = ()) -> Iterator[pa.RecordBatch]:
        return self._source._provisional_batches(self.schema)

    def outcome(self, wait: bool) -> bool | None:
        source = self._source
        reading = source._reading
        assert reading is not None
        if wait:
            reading.join()
        elif reading.is_alive():
            return None
        return source._failure is None and source._schema.equals(self.schema,
                                                                 check_metadata=True)

    def stop(self) -> None:
        """Pass 1 ends at its next block (a stop signal, an interrupted run)."""
        self._source._stopping = True


_ABSENT = object()
_NUMBER_KINDS = {int, float, type(None)}  # a value of any other kind is not a number


def _mostly_numbers(values: list[Any], first: int, before: bool) -> bool:
    """Whether a key whose first value that is not a number is `values[first]` looks like
    a column of numbers, as a CSV column is judged (numtext.MOSTLY_NUMBERS): numbers came
    before it (in this block, or in blocks before: `before`, all numbers), and they are
    most of the block's values that are not null."""
    present = [v for v in values if v is not _ABSENT and v is not None]
    numbers = sum(1 for v in present if type(v) in _NUMBER_KINDS)
    came_first = before or any(type(v) in _NUMBER_KINDS and v is not None
                               for v in values[:first])
    return came_first and numbers >= MOSTLY_NUMBERS * len(present)


def _descriptor(stream: IO[bytes]) -> int | None:
    """The file descriptor of a stream that is a plain file (its blocks read by position,
    os.pread, on any thread); None for anything else (a decompressing stream)."""
    try:
        fd = stream.fileno()
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        os.pread(fd, 0, 0)
    except (AttributeError, OSError, io.UnsupportedOperation):
        return None
    return fd


def _pread(fd: int, at: int, size: int, name: str) -> bytes:
    """`size` bytes of the file from `at`: all of them, or an error naming the file (one
    that became shorter while it was read, as a log truncated on rotation does)."""
    data = os.pread(fd, size, at)
    while len(data) < size:
        more = os.pread(fd, size - len(data), at + len(data))
        if not more:
            raise DataError(f"{name}: cannot read: the file became shorter while it was "
                            "read")
        data += more
    return data


class _Text:
    """A block's bytes, read from the file by the first thread that wants them: a parse
    thread where the block is parsed ahead of its turn, else the reading one at its turn
    (which then takes them as they were read)."""

    __slots__ = ("_at", "_data", "_fd", "_lock", "_name", "_size")

    def __init__(self, fd: int, at: int, size: int, name: str) -> None:
        self._fd, self._at, self._size, self._name = fd, at, size, name
        self._lock = threading.Lock()
        self._data: bytes | None = None

    def get(self) -> bytes:
        with self._lock:
            if self._data is None:
                self._data = _pread(self._fd, self._at, self._size, self._name)
            return self._data


def _bytes(text: bytes | bytearray | memoryview | _Text) -> bytes | bytearray | memoryview:
    return text.get() if isinstance(text, _Text) else text


# A block of whole lines: its text (a buffer it was read into, or a view of one, or bytes
# of the file still to be read; the block is its first `end` bytes), `end`, where it
# starts in the input, and whether the line after it is too long
_Block = tuple[bytes | bytearray | memoryview | _Text, int, int, bool]


# The C parser's calls, run ahead on threads ------------------------------------------------

@dataclass
class _NativeBlock:
    """What the C parser made of a block's lines: the counts `_native` checks, what each
    key (in the types' order) held (a value, a null, an absent cell, an int64 beyond
    2^53), and the columns as the spool takes them."""

    lines: int
    longest: int
    rows: int
    end: int  # of the last line's text in the block (without its line feed)
    learnt: list[tuple[bool, bool, bool, bool]]
    table: pa.Table
    layout: dict[int, tuple[bool, bool]]


_DECLINED = object()  # the parser did not take every line


def _ascii(chunk: bytes | bytearray | memoryview) -> bool:
    """Whether a block is ASCII alone (a view too): by the C parser's module without the
    GIL, where it was built (the parse threads call it)."""
    if NATIVE is not None:
        return bool(NATIVE.is_ascii(chunk))
    if isinstance(chunk, memoryview):
        data = np.frombuffer(chunk, dtype=np.uint8)
        return not len(data) or int(data.max()) < 128
    return chunk.isascii()


def _parse_native(chunk: bytes | bytearray | memoryview, start: int, stop: int,
                  types: dict[str, pa.DataType]) -> _NativeBlock | object:
    """A block's lines from `start` to `stop` by the C parser (without the GIL), as the
    spool's columns, or _DECLINED. Depends on nothing but its arguments: the
    reader's threads call it ahead of the block's turn."""
    assert NATIVE is not None
    if not _ascii(chunk):
        try:
            str(memoryview(chunk)[start:stop], "utf-8")
        except UnicodeDecodeError:
            return _DECLINED
    keys = tuple(name.encode("utf-8", "surrogatepass") for name in types)
    kinds = bytes(_KIND_CODES[t] for t in types.values())
    result = NATIVE.parse_block(chunk if stop == len(chunk) else memoryview(chunk)[:stop],
                                start, keys, kinds)
    if result is None:
        return _DECLINED
    lines, longest, rows, columns = result
    end = stop - 1 if chunk[stop - 1] == 10 else stop
    if not rows:
        return _NativeBlock(lines, longest, rows, end, [], pa.table({}), {})
    arrays, names, layout, learnt = [], [], {}, []
    for i, (arrow_type, (values, offsets, text, state, big)) in enumerate(zip(
            types.values(), columns, strict=True)):
        states = None if state is None else np.frombuffer(state, dtype=np.uint8)
        missing = None if states is None else states != 0
        gone = None if states is None else states == 2
        has_absent = gone is not None and bool(gone.any())
        learnt.append((arrow_type != pa.null() and (missing is None or not bool(missing.all())),
                       states is not None and bool((states == 1).any()), has_absent, big))
        column: pa.Array
        if arrow_type == pa.null():
            column = pa.nulls(rows)
        elif arrow_type == pa.string():
            assert offsets is not None and text is not None
            bitmap = None if missing is None else pa.py_buffer(
                np.packbits(~missing, bitorder="little"))
            column = pa.Array.from_buffers(pa.string(), rows, [
                bitmap, pa.py_buffer(offsets), pa.py_buffer(text)])
        else:
            assert values is not None
            column = arrow_column(np.frombuffer(values, dtype=_KIND_DTYPES[arrow_type]),
                                  missing)
        arrays.append(column)
        names.append(str(i))  # the key's position: the types are every key, in order
        if has_absent:
            assert gone is not None
            arrays.append(arrow_column(gone, None))
            names.append(f"{i}!")
        layout[i] = (False, has_absent)
    table = pa.Table.from_arrays(arrays, names=names)
    return _NativeBlock(lines, longest, rows, end, learnt, table, layout)


def _close_spool(spool: IO[bytes]) -> None:
    """Close a spool file that is no longer read. Its buffer's last bytes are not needed:
    where they cannot be written (a full $TMPDIR, the error the run has reported), the
    file is closed all the same, without a second report."""
    with contextlib.suppress(OSError, ValueError):
        spool.close()


def _parse_ahead(text: bytes | bytearray | memoryview | _Text, end: int,
                 types: dict[str, pa.DataType]) -> _NativeBlock | object:
    """A block's first `end` bytes by the C parser, its bytes read first where they are
    still in the file (on this thread: the reads are spread over the parse threads)."""
    return _parse_native(_bytes(text), 0, end, types)


class _Parse:
    """The C parser's call on one block, made ahead with the types learnt when it was
    asked for (None: none was made)."""

    def __init__(self, types: dict[str, pa.DataType] | None,
                 future: concurrent.futures.Future[Any] | None) -> None:
        self.types = types
        self.future = future

    def result(self, types: dict[str, pa.DataType]) -> _NativeBlock | object | None:
        """Its outcome where it was made with `types`; None where it was not."""
        if self.future is None or self.types != types:
            if self.future is not None:
                self.future.cancel()
            return None
        return self.future.result()  # an error of the thread's is raised here


class _Ahead:
    """Blocks of the input, each with the C parser's call on it already under way on
    one of `threads` threads, a few blocks ahead (AHEAD_BYTES), in the input's order. A call
    is made with the types learnt by the time its block is read; where that is no longer
    what the block's turn finds (a key or a type learnt in between), `_native` makes the
    call again: what is taken never depends on the thread count. With one thread, or no
    C parser, nothing runs ahead."""

    def __init__(self, blocks: Iterator[_Block], threads: int,
                 types: Callable[[], dict[str, pa.DataType] | None],
                 overlapped: Callable[[], bool] = lambda: False) -> None:
        self._blocks = blocks
        self._types = types
        self._queue: collections.deque[tuple[_Block, _Parse]] = \
            collections.deque()
        self._pool: concurrent.futures.ThreadPoolExecutor | None = None
        # as many threads as cores (native.ahead_workers), and a block more than threads,
        # so that none waits while a turn is taken; the text ahead bounded (AHEAD_BYTES),
        # as memory is to stay that of a few blocks
        workers = native.ahead_workers(threads, PARSE_AHEAD)
        self._depth = min(workers + 1, max(2, AHEAD_BYTES // BLOCK_BYTES))
        # While a run goes on from the blocks parsed (`overlapped()`: pass 2 beside this
        # pass 1), its batches and text are in flight on the other cores: half the blocks
        # ahead. With 16 threads' queues (native.USABLE set to 16 on 2 cores), 2M x 8 to
        # CSV peaked at 230-262 MiB at 2M lines and 270-304 at 10M with 9 blocks in
        # flight, 206-222 and 243-247 with 5 (benchmarks/RESULTS-cores.md, session 9).
        self._overlapped = overlapped
        self._half_depth = min(self._depth, max(1, workers // 2) + 1)
        if threads > 1 and NATIVE is not None and BY_NATIVE:
            self._pool = concurrent.futures.ThreadPoolExecutor(
                min(workers, self._depth), thread_name_prefix="cumtool-jsonl")

    def __iter__(self) -> Iterator[tuple[_Block, _Parse | None]]:
        if self._pool is None:
            for block in self._blocks:
                yield block, None
            return
        more = True
        while True:
            # Until types are learnt (the first block's), no block is read ahead: a call
            # made without them is no call, and its block would wait for one at its turn.
            depth = 1 if self._types() is None else (
                self._half_depth if self._overlapped() else self._depth)
            while more and len(self._queue) < depth:
                read = next(self._blocks, None)
                if read is None:
                    more = False
                    break
                self._queue.append((read, self._submit(read)))
            if not self._queue:
                return
            block, parse = self._queue.popleft()
            types = self._types()
            if parse.types != types:
                self._renew(types)  # learnt since: the blocks still ahead again
            yield block, parse

    def _submit(self, block: _Block) -> _Parse:
        assert self._pool is not None
        data, end, _at, _over = block
        types = self._types()
        if types is None or not end:
            return _Parse(None, None)
        return _Parse(types, self._pool.submit(_parse_ahead, data, end, types))

    def _renew(self, types: dict[str, pa.DataType] | None) -> None:
        for k, (block, parse) in enumerate(self._queue):
            if parse.types != types:
                if parse.future is not None:
                    parse.future.cancel()  # one under way runs on, unused
                self._queue[k] = (block, self._submit(block))

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)

# The C parser's kinds of column (_jsonl.c), and their Python types and numpy dtypes.
_KIND_CODES = {pa.null(): 0, pa.bool_(): 1, pa.int64(): 2, pa.float64(): 3, pa.string(): 4}
_KIND_TYPES: dict[pa.DataType, type] = {pa.bool_(): bool, pa.int64(): int,
                                        pa.float64(): float, pa.string(): str}
_KIND_DTYPES: dict[pa.DataType, Any] = {pa.bool_(): np.bool_, pa.int64(): np.int64,
                                        pa.float64(): np.float64}
_CONTROL = bytes(c for c in range(32) if c not in (9, 13))  # not JSON's space, in a line


class _Declined(Exception):
    pass


def _pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    record = dict(pairs)
    if len(record) != len(pairs):
        raise _Declined  # a key twice
    return record


def _constant(text: str) -> Any:
    raise _Declined  # NaN, Infinity, -Infinity


_strict_decode = json.JSONDecoder(object_pairs_hook=_pairs, parse_constant=_constant).decode
_Column = tuple[bytes | None, bytes | None, bytes | None, bytes | None, bool]


def parse_block_py(data: bytes, start: int, keys: tuple[bytes, ...],
                   kinds: bytes) -> tuple[int, int, int, list[_Column]] | None:
    """_jsonl.parse_block in Python, rule for rule (its reference in the tests): the lines
    of `data` from `start` on, flat objects of the `keys` with values of their `kinds`
    (0 null, 1 bool, 2 int64, 3 float64, 4 string) or null, blank lines skipped, as
    (lines, longest, rows, columns); None where a line is not so."""
    text = data[start:]
    pieces = text.split(b"\n") if text else []
    if text.endswith(b"\n"):
        pieces.pop()
    names = {k.decode("utf-8", "surrogatepass"): i for i, k in enumerate(keys)}
    cells: list[list[Any]] = [[] for _ in keys]
    for line in pieces:
        if not line.strip(b" \t\r"):
            continue
        if line.translate(None, _CONTROL) != line:
            return None
        try:
            record = _strict_decode(line.decode("utf-8"))
        except (ValueError, _Declined, RecursionError):
            return None
        if type(record) is not dict or any(k not in names or _kind(k) is _Surrogate
                                           for k in record):
            return None
        for k, i in names.items():
            value = record.get(k, _ABSENT)
            if value is not _ABSENT and value is not None and not _fits(value, kinds[i]):
                return None
            cells[i].append(value)
    rows = len(cells[0]) if keys else sum(1 for p in pieces if p.strip(b" \t\r"))
    columns: list[_Column] = []
    for kind, values in zip(kinds, cells, strict=True):
        states = bytes(2 if v is _ABSENT else 1 if v is None else 0 for v in values)
        state = states if any(states) else None
        big = False
        packed: bytes | None = None
        offsets: bytes | None = None
        strings: bytes | None = None
        present = [v if v is not _ABSENT and v is not None else None for v in values]
        if kind == 2:
            big = any(v is not None and not -_EXACT_FLOAT <= v <= _EXACT_FLOAT for v in present)
            packed = np.array([0 if v is None else v for v in present], dtype=np.int64).tobytes()
        elif kind == 3:
            packed = np.array([0.0 if v is None else float(v) for v in present],
                              dtype=np.float64).tobytes()
        elif kind == 1:
            packed = bytes(1 if v else 0 for v in present)
        elif kind == 4:
            encoded = [b"" if v is None else v.encode("utf-8") for v in present]
            ends = np.zeros(len(encoded) + 1, dtype=np.int64)
            np.cumsum([len(b) for b in encoded], out=ends[1:])
            if ends[-1] > 0x7FFFFFFF:
                return None
            offsets, strings = ends.astype(np.int32).tobytes(), b"".join(encoded)
        columns.append((packed, offsets, strings, state, big))
    longest = max((len(p) for p in pieces), default=0)
    return len(pieces), longest, rows, columns


def _fits(value: Any, kind: int) -> bool:
    """Whether a value read by json belongs in a column of a kind (_jsonl.c's)."""
    if kind == 1:
        return type(value) is bool
    if kind == 2:
        return type(value) is int and -_INT64 <= value < _INT64
    if kind == 3:
        return type(value) is float or (type(value) is int
                                        and -_EXACT_FLOAT <= value <= _EXACT_FLOAT)
    if kind == 4:
        return _kind(value) is str  # not a lone surrogate (\\ud800), which UTF-8 cannot hold
    return False


@dataclass
class _Parsed:
    """A block of lines from `start` on: where its lines are, and (where each line is one
    object) their text and, where polars took it, its table and `_key_counts`."""

    chunk: bytes
    start: int
    types: dict[str, pa.DataType] | None
    starts: np.ndarray  # of every line of the block (from 0), and their ends
    ends: np.ndarray
    lines: np.ndarray | None = None  # the lines from `start` that are not empty
    line_starts: np.ndarray | None = None  # of all lines from `start`, in the block
    content_end: np.ndarray | None = None  # without a CR
    text: bytes = b""
    counts: tuple[int, int] | None = None
    table: pa.Table | None = None
    at: int = 0  # where the block starts in the input


def _parsed(chunk: bytes, types: dict[str, pa.DataType] | None, start: int = 0) -> _Parsed:
    """The lines of a block from byte `start` on, and polars' table of them where the
    lines are objects (each starts with { and ends with }, a CR before the line end left
    out; empty lines are skipped) of the given types."""
    starts, ends = _lines_of(chunk)
    parsed = _Parsed(chunk, start, types, starts, ends)
    if types is None or not len(ends):
        return parsed
    first = int(np.searchsorted(starts, start))
    line_starts, line_ends = starts[first:], ends[first:]
    data = np.frombuffer(chunk, dtype=np.uint8)
    content_end = line_ends - ((line_ends > line_starts)
                               & (data[np.maximum(line_ends - 1, 0)] == 13))
    lines = np.flatnonzero(content_end > line_starts)
    if len(lines) and not ((data[line_starts[lines]] == 123).all()
                           and (data[content_end[lines] - 1] == 125).all()):
        return parsed
    text = chunk[start:int(line_ends[-1])]
    if not text.isascii():
        try:
            text.decode("utf-8")
        except UnicodeDecodeError:
            return parsed
    parsed.lines, parsed.line_starts, parsed.content_end, parsed.text = (
        lines, line_starts, content_end, text)
    parsed.counts = _key_counts(text, len(lines)) if BY_POLARS else None
    if parsed.counts is not None:
        parsed.table = _by_polars(text, types, len(lines))
    return parsed


def _key_counts(text: bytes, rows: int) -> tuple[int, int] | None:
    """(keys, double quotes) in `rows` lines of flat objects, where every `":` ends a key
    and every `"` starts or ends a key or a string (no backslash, no space before a colon,
    no brace but each line's first, no bracket: whatever a version of polars makes of a
    nested value, it is not read); None for text where that does not hold."""
    if b"\\" in text or b"[" in text:  # escapes (of quotes, of surrogates); arrays
        return None
    if text.count(b"{") != rows:  # an object in a value (or a brace in a string)
        return None
    data = np.frombuffer(text, dtype=np.uint8)
    before = data[np.flatnonzero(data == 58) - 1]  # what stands before each colon
    if ((before == 32) | (before == 9) | (before == 13)).any():
        return None
    return int(np.count_nonzero(before == 34)), int(np.count_nonzero(data == 34))


def _expected_counts(types: dict[str, pa.DataType], columns: list[pa.ChunkedArray],
                     valid: dict[str, np.ndarray],
                     absent: dict[str, np.ndarray]) -> tuple[int, int]:
    """(keys, double quotes) that the lines hold if every key and value was read: each
    present key is one `":` and two quotes, each string two more."""
    keys = strings = 0
    for name, column in zip(types, columns, strict=True):
        present = len(column) - column.null_count
        nulls = column.null_count - int(np.count_nonzero(absent[name])) if name in absent \
            else column.null_count
        keys += present + nulls
        if types[name] == pa.string():
            strings += present
    return keys, 2 * (keys + strings)


def _by_pyarrow(text: bytes, types: dict[str, pa.DataType], rows: int) -> pa.Table | None:
    """Lines parsed by pyarrow's JSON reader, strictly: a value of another type, or a key
    not in `types`, and it takes none."""
    import pyarrow.json as pj

    schema = pa.schema([(k, t) for k, t in types.items()])
    try:
        table = pj.read_json(
            pa.BufferReader(text),
            read_options=pj.ReadOptions(use_threads=True, block_size=_PARSE_BLOCK),
            parse_options=pj.ParseOptions(explicit_schema=schema,
                                          unexpected_field_behavior="error"))
    except (pa.ArrowException, ValueError):  # UnicodeDecodeError is a ValueError
        return None
    if table.num_rows != rows or table.column_names != list(types):
        return None
    return table


def _by_polars(text: bytes, types: dict[str, pa.DataType], rows: int) -> pa.Table | None:
    """Lines parsed by polars' NDJSON reader (faster than pyarrow's, on every core). It
    is strict with integers, floats (which take integers), flags and nulls, and strings
    read as categories take no number, flag, object or array; a key it does not know it
    leaves out, and an integer beyond 128 bits it reads as text: `_key_counts` finds
    both."""
    import polars as pl

    kinds = {pa.int64(): pl.Int64, pa.float64(): pl.Float64, pa.bool_(): pl.Boolean,
             pa.string(): pl.Categorical, pa.null(): pl.Null}
    try:
        frame = pl.read_ndjson(io.BytesIO(text), schema={k: kinds[t] for k, t in types.items()})
    except (pl.exceptions.PolarsError, pl.exceptions.PanicException, ValueError,
            OverflowError):
        return None
    if frame.height != rows or frame.columns != list(types):
        return None
    strings = [k for k, t in types.items() if t == pa.string()]
    if strings:
        frame = frame.with_columns(pl.col(strings).cast(pl.String))
    table = frame.to_arrow()
    if strings:
        table = table.cast(pa.schema([(k, types[k]) for k in types]))
    return table


def _pieces(column: pa.ChunkedArray) -> Iterator[tuple[int, pa.Array]]:
    """(first row, chunk) of each chunk of a column."""
    offset = 0
    for piece in column.chunks:
        yield offset, piece
        offset += len(piece)


def _valid(column: pa.Array | pa.ChunkedArray) -> np.ndarray:
    """Which cells are present, as numpy booleans (not to_numpy: it imports pandas)."""
    pieces = column.chunks if isinstance(column, pa.ChunkedArray) else [column]
    parts = [np.zeros(len(p), dtype=bool) if pa.types.is_null(p.type)
             else np.ones(len(p), dtype=bool) if (v := validity(p)) is None else v
             for p in pieces]
    return np.concatenate(parts) if len(parts) != 1 else parts[0]


def _odd_parsed(column: pa.ChunkedArray) -> np.ndarray:
    """Rows of floats that pyarrow may read otherwise than Python's json: an integer
    beyond 2^53 read as a float (its key is then JSON text), the integer -0 (0 to Python,
    -0.0 to pyarrow) and -NaN (not JSON to Python), told from 1e300, -0.0 and NaN by the
    line itself."""
    rows = []
    for offset, piece in _pieces(column):
        if not len(piece):
            continue
        values, present = column_to_numpy(piece)
        with np.errstate(invalid="ignore"):
            odd = (((np.abs(values) >= _EXACT_FLOAT) & (values == np.floor(values)))
                   | (np.signbit(values) & (values == 0)) | np.isnan(values))
        if present is not None:
            odd &= present
        rows.append(np.flatnonzero(odd) + offset)
    return np.concatenate(rows) if rows else np.zeros(0, dtype=np.int64)


def _beyond(column: pa.ChunkedArray, limit: int) -> bool:
    """Whether an integer column holds a value beyond +-limit."""
    for _, piece in _pieces(column):
        values, present = column_to_numpy(piece)
        if present is not None:
            values = values[present]
        if len(values) and (values.min() < -limit or values.max() > limit):
            return True
    return False


def _array(values: list[Any], kinds: set[type], big: bool, wide: bool) -> tuple[pa.Array, bool]:
    """A column of a block read by Python's json module: typed where its values allow
    (missing cells null), else their JSON text (`null` as "null", an absent key null).
    Also whether it is JSON text."""
    present = [v is not _ABSENT and v is not None for v in values]
    if not kinds:
        return pa.nulls(len(values)), False
    if kinds == {str}:
        return string_array([v if p else None for v, p in zip(values, present, strict=True)]), False
    dtype: Any = None
    if kinds <= {int} and not wide:
        dtype = np.int64
    elif kinds <= {int, float} and not big:
        dtype = np.float64
    elif kinds == {bool}:
        dtype = np.bool_
    if dtype is None:
        return string_array([None if v is _ABSENT else _json(v) for v in values]), True
    missing = ~np.array(present, dtype=bool)
    cells: np.ndarray = np.array([v if p else 0 for v, p in zip(values, present, strict=True)],
                                 dtype=dtype)
    return arrow_column(cells, missing), False


def as_json_text(column: pa.Array, absent: np.ndarray | None) -> pa.Array:
    """A typed column (integers, strings, flags or nulls; a spooled one's floats are read
    again from their lines) as JSON text: a missing cell `null`, or null where the key
    was absent."""
    values = column.to_pylist()
    texts = [None if v is None else _json(v) for v in values]
    gone = absent.tolist() if absent is not None else [False] * len(values)
    return string_array([None if g else "null" if t is None else t
                         for t, g in zip(texts, gone, strict=True)])


def _floats(column: pa.Array) -> tuple[pa.Array, np.ndarray]:
    """A spooled column of JSON text of numbers as float64 (`null` and an absent key
    missing), and which cells were absent keys."""
    texts = column.to_pylist()
    gone = np.array([t is None for t in texts], dtype=bool)
    missing = np.array([t is None or t == "null" for t in texts], dtype=bool)
    cells = np.array([0.0 if t is None or t == "null" else float(t) for t in texts],
                     dtype=np.float64)
    return arrow_column(cells, missing), gone


def cell_text(batch: pa.RecordBatch) -> pa.RecordBatch:
    """For CSV, TSV and the table: a JSON-text column's strings as their text (`"a"` is
    a), `null` as a missing cell, and other values (numbers, objects) as their JSON."""
    arrays = []
    for field_, column in zip(batch.schema, batch.columns, strict=True):
        if holds_json_text(field_):
            column = json_values_text(column)
        arrays.append(column)
    fields = [f.remove_metadata() for f in batch.schema]
    return pa.RecordBatch.from_arrays(arrays, schema=pa.schema(fields, batch.schema.metadata))


# Writing ------------------------------------------------------------------------------

_NEEDS_ESCAPE = r'[\x00-\x1f"\\]'


class JsonlSink:
    """One JSON object a line, keys in column order. A missing cell is `null`, or left
    out of its record where a JSON Lines input's column had absent keys (or, for a
    numeric column that had both, as the input had it, row by row).

    A batch of numbers, flags and strings alone is written by lines.write_lines (C where
    built), on --threads threads a few batches ahead (pipeline.RenderedAhead), in order. A
    batch with other types (dictionaries, binary, dates and times, JSON text) is written by polars'
    NDJSON writer, and the lines it would write otherwise than Python's json module (a
    missing cell to leave out, floats below 1e-4 and the infinities) are put together
    again, as any other batch is: by one polars query over the cells' JSON texts, the
    cells polars has no text for (or another text) written by Python."""

    def __init__(self, stream: IO[bytes], schema: pa.Schema, threads: int = 1) -> None:
        self._stream = stream
        self._keys = [_encode(name) + ":" for name in schema.names]
        self._fields = list(schema)
        self._null_rows: dict[int, tuple[_NullRows, str]] = {}
        for i, f in enumerate(self._fields):
            missing = (f.metadata or {}).get(FIELD_MISSING, b"")
            if missing.startswith(EACH):
                token, key = missing[len(EACH):].decode().split(" ")
                rows = _NULL_ROWS.get(token)
                if rows is not None:
                    rows.wanted = True
                    self._null_rows[i] = (rows, key)
        # polars names a column "" as column_1 (its from_arrow): that one is put together
        self._whole = len(set(schema.names)) == len(schema) and all(schema.names) and all(
            _polars_writes(f) for f in schema)
        self._native = all(_written_natively(f) for f in schema)
        self._key_texts = [key.encode("utf-8") for key in self._keys]
        self._ahead = RenderedAhead(stream, native.ahead_workers(threads, WRITE_AHEAD),
                                    "cumtool-jsonl-write")

    def write(self, batch: pa.RecordBatch) -> None:
        rows = batch.num_rows
        if not rows:
            return
        explicit = {}
        for i, (source, key) in self._null_rows.items():
            explicit[i] = source.take(rows, key)
        for source, _key in {id(s): (s, k) for s, k in self._null_rows.values()}.values():
            source.advance(rows)
        columns = self._native_columns(batch, explicit) if self._native else None
        if columns is not None:
            ready = lines.prepared(columns)
            self._ahead.put_into(lambda into: lines.write_prepared(rows, ready, into))
            return
        self._ahead.drain()  # the batches before this one first
        if self._whole:
            self._stream.write(self._polars_lines(batch, explicit))
        else:
            self._stream.write(self._lines(batch, explicit))

    def _native_lines(self, batch: pa.RecordBatch,
                      explicit: dict[int, np.ndarray]) -> bytes | None:
        """The lines of a batch of numbers, flags and strings (lines.write_lines); None
        where a column's values are not int64's (uint64's beyond it)."""
        columns = self._native_columns(batch, explicit)
        return None if columns is None else lines.write_lines(batch.num_rows, columns)

    def _native_columns(self, batch: pa.RecordBatch,
                        explicit: dict[int, np.ndarray]) -> list[lines.LineColumn] | None:
        """A batch's columns as lines.write_lines takes them; None where a column's values
        are not int64's (uint64's beyond it)."""
        columns: list[lines.LineColumn] = []
        for i, (f, column) in enumerate(zip(self._fields, batch.columns, strict=True)):
            present = validity(column) if not pa.types.is_null(column.type) \
                else np.zeros(len(column), dtype=bool)
            missing = absent = None
            if present is not None:
                missing = ~present
                if i in explicit:  # null where the input had null, absent elsewhere
                    absent = missing & ~explicit[i]
                elif (f.metadata or {}).get(FIELD_MISSING) == b"absent":
                    absent = missing
            key = self._key_texts[i]
            if pa.types.is_string(column.type) or pa.types.is_large_string(column.type):
                data, starts, ends = _string_bounds(column)
                columns.append((key, data, starts, ends, np.ones(len(column), dtype=np.uint8),
                                missing, absent))
                continue
            values = np.zeros(len(column), dtype=np.int64) if pa.types.is_null(column.type) \
                else as_int64_or_float64(column_to_numpy(column)[0])
            if values is None:
                return None
            columns.append((key, values, missing, absent))
        return columns

    def _polars_lines(self, batch: pa.RecordBatch,
                      explicit: dict[int, np.ndarray]) -> bytes | memoryview:
        """polars' NDJSON of a batch, with the lines it writes otherwise remade."""
        import polars as pl

        redo = np.zeros(batch.num_rows, dtype=bool)
        for i, (f, column) in enumerate(zip(self._fields, batch.columns, strict=True)):
            if column.null_count and (f.metadata or {}).get(FIELD_MISSING) not in (None,
                                                                                   b"null"):
                gone = ~_valid(column)
                redo |= gone & ~explicit[i] if i in explicit else gone
            if pa.types.is_floating(column.type):
                redo |= _odd_rows(_float64(column))
        redone = np.flatnonzero(redo)
        if len(redone) * 8 > batch.num_rows:  # many: the whole batch the other way
            return self._lines(batch, explicit)
        # One batch, not a series a column: polars' from_arrow of an array imports
        # pyarrow.compute (60 ms).
        frame = pl.from_arrow(pa.RecordBatch.from_arrays(
            [_polars_input(c) for c in batch.columns], names=batch.schema.names))
        assert isinstance(frame, pl.DataFrame)
        rendered = io.BytesIO()
        frame.write_ndjson(rendered)
        if not len(redone):
            return rendered.getbuffer()
        text = rendered.getbuffer()
        ends = np.flatnonzero(np.frombuffer(text, dtype=np.uint8) == 10) + 1
        starts = np.concatenate([[0], ends[:-1]])
        again = self._lines(batch.take(arrow_column(redone.astype(np.int64), None)),
                            {i: m[redone] for i, m in explicit.items()}).splitlines(True)
        pieces: list[bytes | memoryview] = []
        done = 0
        for k, row in enumerate(redone.tolist()):
            pieces.append(text[starts[done]:starts[row]] if row > done else b"")
            pieces.append(again[k])
            done = row + 1
        pieces.append(text[starts[done]:] if done < batch.num_rows else b"")
        return b"".join(pieces)

    def _lines(self, batch: pa.RecordBatch, explicit: dict[int, np.ndarray]) -> bytes:
        """The lines of a batch, put together by one polars query."""
        import polars as pl

        rows = batch.num_rows
        columns: dict[str, Any] = {}
        pieces = []
        for i, (f, column) in enumerate(zip(self._fields, batch.columns, strict=True)):
            name = f"c{i}"
            text = _json_text(f, column, name, columns)
            metadata = f.metadata or {}
            if i in explicit:
                columns[f"n{i}"] = pl.Series(explicit[i])
                text = pl.when(pl.col(f"n{i}")).then(pl.lit("null")).otherwise(text)
            elif metadata.get(FIELD_MISSING) != b"absent" and JSON_TEXT not in metadata \
                    and column.null_count:
                # A missing cell from another format (CSV's empty cell, Parquet's null)
                # is a null, so that a column of them is not lost; JSON Lines input says
                # what it had (JSON text holds `null` as such: a missing cell is absent).
                text = text.fill_null(pl.lit("null"))
            pieces.append(pl.lit(self._keys[i]) + text)
        frame = pl.DataFrame(columns, height=rows)
        line = (pl.concat_str(pieces, separator=",", ignore_nulls=True) if pieces
                else pl.repeat(pl.lit(""), rows))
        rendered = io.BytesIO()
        frame.select(pl.lit("{") + line + pl.lit("}")).write_csv(
            rendered, include_header=False, quote_style="never")
        return rendered.getvalue()

    def close(self) -> None:
        self._ahead.close()  # the stream is the run's: it is not closed here

    def drain(self) -> None:
        """Write the text made ahead (a failed run's rows before the failure)."""
        self._ahead.drain()

    def abort(self) -> None:
        self._ahead.abort()


def _polars_writes(field_: pa.Field) -> bool:
    """Whether polars' NDJSON writer writes a column's cells as Python's json module
    would (floats but for the rows `_odd_rows` finds)."""
    if holds_json_text(field_):
        return False
    arrow_type = field_.type
    if pa.types.is_dictionary(arrow_type):
        arrow_type = arrow_type.value_type
    return (pa.types.is_integer(arrow_type) or pa.types.is_floating(arrow_type)
            or pa.types.is_boolean(arrow_type) or pa.types.is_string(arrow_type)
            or pa.types.is_large_string(arrow_type) or pa.types.is_string_view(arrow_type)
            or pa.types.is_null(arrow_type))


def _written_natively(field_: pa.Field) -> bool:
    """Whether lines.write_lines writes a column: numbers, flags, strings or nothing but
    nulls."""
    if holds_json_text(field_):
        return False
    arrow_type = field_.type
    return (pa.types.is_integer(arrow_type) or pa.types.is_floating(arrow_type)
            or pa.types.is_boolean(arrow_type) or pa.types.is_null(arrow_type)
            or pa.types.is_string(arrow_type) or pa.types.is_large_string(arrow_type))


def _string_bounds(column: pa.Array) -> tuple[memoryview | bytes, np.ndarray, np.ndarray]:
    """A string column's bytes, and each string's start and end in them (int64)."""
    _validity, offsets_buffer, data = column.buffers()
    wide = pa.types.is_large_string(column.type)
    offsets = np.frombuffer(offsets_buffer, dtype=np.int64 if wide else np.int32,
                            count=column.offset + len(column) + 1)[column.offset:]
    bounds = offsets.astype(np.int64)
    return (memoryview(data) if data is not None else b""), bounds[:-1], bounds[1:]


def _polars_input(column: pa.Array) -> pa.Array:
    if pa.types.is_dictionary(column.type):
        column = column.dictionary_decode()
    if pa.types.is_floating(column.type):
        return _float64(column)
    return column


def _float64(column: pa.Array) -> pa.Array:
    """A float column as float64 (not Array.cast where it is one: that imports
    pyarrow.compute)."""
    return column if column.type == pa.float64() else column.cast(pa.float64())


def _json_text(field_: pa.Field, column: pa.Array, name: str,
               columns: dict[str, Any]) -> pl.Expr:
    """The expression of a column's cells' JSON text (a missing cell null); the columns
    it reads are added to `columns`, under `name` and names that start with it."""
    import polars as pl

    cells = pl.col(name)
    if holds_json_text(field_):
        columns[name] = _series(column.cast(pa.string()))
        return cells
    arrow_type = column.type
    if pa.types.is_dictionary(arrow_type):
        column = column.dictionary_decode()
        arrow_type = column.type
    if pa.types.is_integer(arrow_type) or pa.types.is_boolean(arrow_type):
        columns[name] = _series(column)
        return cells.cast(pl.String)  # true, false for flags
    if pa.types.is_floating(arrow_type):
        column = column.cast(pa.float64())
        columns[name] = _series(column)
        fixed = _odd_floats(column)
        if fixed is None:
            return cells.cast(pl.String)
        columns[name + "x"] = fixed
        return pl.coalesce(pl.col(name + "x"), cells.cast(pl.String))
    if (pa.types.is_string(arrow_type) or pa.types.is_large_string(arrow_type)
            or pa.types.is_string_view(arrow_type)):
        strings = _series(column.cast(pa.large_string()))
        columns[name] = strings
        escaped = _escaped(strings)
        if escaped is None:
            return pl.lit('"') + cells + pl.lit('"')
        columns[name + "x"] = escaped
        return pl.coalesce(pl.col(name + "x"), pl.lit('"') + cells + pl.lit('"'))
    if pa.types.is_decimal(arrow_type):
        columns[name] = _series(column.cast(pa.string()))
        return cells
    columns[name] = pl.Series(_python_texts(column), dtype=pl.String)
    return cells


def _python_texts(column: pa.Array) -> list[str | None]:
    """The JSON text of the cells of the types polars has none for."""
    arrow_type = column.type
    if (pa.types.is_binary(arrow_type) or pa.types.is_large_binary(arrow_type)
            or pa.types.is_fixed_size_binary(arrow_type) or pa.types.is_binary_view(arrow_type)):
        # Bytes as base64 text (RFC 4648, with padding), which any JSON reader takes.
        return [None if v is None else '"' + base64.b64encode(v).decode("ascii") + '"'
                for v in column.to_pylist()]
    if pa.types.is_duration(arrow_type):
        unit = arrow_type.unit
        return [None if v is None else '"' + iso_duration(v, unit) + '"'
                for v in column.cast(pa.int64()).to_pylist()]
    # Dates, times and timestamps as ISO text; anything else as its JSON, or its text.
    return [None if v is None else _json(v.isoformat() if hasattr(v, "isoformat")
                                         else _plain(v))
            for v in column.to_pylist()]


_UNIT_DIGITS = {"s": 0, "ms": 3, "us": 6, "ns": 9}


def iso_duration(count: int, unit: str) -> str:
    """An Arrow duration (a count of `unit`) as ISO 8601 text, exactly, as polars writes
    it: `PT1.5S`, `-PT0.000001S`, and `P0D` for zero."""
    if count == 0:
        return "P0D"
    sign = "-" if count < 0 else ""
    digits = _UNIT_DIGITS[unit]
    whole, part = divmod(abs(count), 10 ** digits)
    fraction = f"{part:0{digits}d}".rstrip("0") if digits else ""
    return f"{sign}PT{whole}{'.' + fraction if fraction else ''}S"


def _series(column: pa.Array) -> pl.Series:
    import polars as pl

    series = pl.from_arrow(column)
    assert isinstance(series, pl.Series)
    return series


def _odd_rows(column: pa.Array) -> np.ndarray:
    """The floats polars writes otherwise than Python's repr (and json): below 1e-4 it
    writes 0.00001 and 1e-7 for 1e-05 and 1e-07, NaN and inf as NaN and inf (its
    shortest digits are Python's: every other float is written the same)."""
    values, present = column_to_numpy(column)
    with np.errstate(invalid="ignore"):
        odd = ~(np.abs(values) >= 1e-4) & (values != 0)  # small, or NaN (missing too)
    odd |= np.isinf(values)
    if present is not None:
        odd &= present
    return odd


def _odd_floats(column: pa.Array) -> pl.Series | None:
    """Python's text of the floats `_odd_rows` finds (None elsewhere); None if none."""
    import polars as pl

    values = column_to_numpy(column)[0]
    where = np.flatnonzero(_odd_rows(column))
    if not len(where):
        return None
    fixed = pl.Series([None] * len(values), dtype=pl.String)
    return fixed.scatter(where, [number_text(v) for v in values[where].tolist()])


_NEEDS_ESCAPE = r'[\x00-\x1f"\\]'


def _escaped(strings: pl.Series) -> pl.Series | None:
    """Python's JSON text of the strings that need escapes (None where they do not);
    None if there are none."""
    import polars as pl

    needs = strings.str.contains(_NEEDS_ESCAPE)
    if not needs.any():
        return None
    where = needs.arg_true()
    fixed = pl.Series([None] * len(strings), dtype=pl.String)
    return fixed.scatter(where, [_encode_string(v) for v in strings.gather(where)])


def _plain(value: Any) -> Any:
    try:
        _encode(value)
    except (TypeError, ValueError):
        return str(value)
    return value
