"""Cutting delimited text into chunks of whole records, with memory bounded whatever the
input: a record longer than the cap (one line without a newline, an unclosed quote, a
binary file) stops the run as soon as the cap is passed, and a NUL byte stops reading at
once. Each byte is scanned once, so a long record costs linear time, not quadratic.
"""

from __future__ import annotations

import io
import os
import select
import stat
import time
from collections.abc import Iterator
from typing import IO

import numpy as np

from cumtool.formats import BOM
from cumtool.formats.csv import dialect

MAX_RECORD_BYTES = 32 << 20
READ_BYTES = 64 * 1024  # the least one read asks for
_QUOTE = ord('"')
_NEWLINE = ord("\n")
_RETURN = ord("\r")


class RecordTooLong(Exception):  # internal: CsvSource turns it into a FormatError
    """A record passed the cap; `before` non-blank records precede it in the data not yet
    handed out, and `newlines` line ends; `quoted` says whether it holds an open quote
    (the likely cause)."""

    def __init__(self, before: int, quoted: bool, newlines: int = 0) -> None:
        super().__init__(before, quoted)
        self.before = before
        self.quoted = quoted
        self.newlines = newlines


# A pipe that has nothing for this long has paused: the rows read so far go out. Less
# than a person notices; more than `cat` or a program writing rows takes to refill a pipe
# (with no wait, `cat file | cumtool` met a momentarily empty pipe every few blocks and
# drained its workers each time: 1M x 8 took 1.22x polars' wall time, now 0.94x).
PAUSE_SECONDS = 0.02
# Rows that trickle in without such a pause (a producer writing a row every few ms) go
# out at least this often: a chunk stops growing once it has waited this long.
FLUSH_SECONDS = 0.1


def cut_cell_text(data: bytes | memoryview, start: int, end: int, flag: int) -> str:
    """The text of a cell cut at data[start:end] with `flag` (fast.cut's: 0 bare, 1
    quoted, 2 quoted with its quotes doubled, which are one), as the CSV reader reads it
    (an empty one: ""; whether that is a missing cell is the caller's: bare and empty)."""
    text = bytes(data[start:end]).decode("utf-8")
    return text.replace('""', '"') if flag == 2 else text


def input_fd(stream: IO[bytes]) -> int | None:
    """The descriptor `input_ready` asks of a stream, where it has one."""
    try:
        return stream.fileno()
    except (OSError, AttributeError, ValueError, io.UnsupportedOperation):
        return None


def input_steady(fd: int | None) -> bool:
    """Whether reads from `fd` never wait on a producer: a regular file (a pipe's, a
    socket's or a terminal's may)."""
    if fd is None:
        return False
    try:
        return stat.S_ISREG(os.fstat(fd).st_mode)
    except OSError:
        return False


def input_ready(fd: int | None) -> bool:
    """Whether more input is available on `fd`, or comes within PAUSE_SECONDS (a pipe
    with a slow producer should not hold back rows already here; a fast one, whose reader
    often empties the pipe for a moment, has not paused)."""
    if fd is None:
        return True
    try:
        ready, _, _ = select.select([fd], [], [], PAUSE_SECONDS)
    except (OSError, ValueError):
        return True
    return bool(ready)


class Chunker:
    """Cuts a byte stream into chunks that end on a record boundary (a newline outside
    quotes), of about `chunk_bytes` each; no record may exceed `max_record` bytes.

    `comment` (--comment): a line whose first byte it is, at the start of a record (not
    inside quotes), is a comment. Its bytes up to its newline are dropped as they are
    read, the newline kept: it becomes a blank line, which every reader skips, so row
    numbers count data rows and line numbers stay the file's. A comment ends at its
    line end whatever quotes it holds (as pandas' and polars' comment options)."""

    def __init__(self, stream: IO[bytes], chunk_bytes: int,
                 max_record: int = MAX_RECORD_BYTES, lone_cr: bool | None = None,
                 comment: str | None = None) -> None:
        self._stream = stream
        self.chunk_bytes = chunk_bytes
        self.max_record = max_record
        self._pending = bytearray()
        self._last_end = 0  # just past the last newline outside quotes in _pending
        self._quoted = False  # inside quotes at the end of _pending
        self._too_long = False  # the record at the start of _pending is over the cap
        self._eof = False
        self._read1 = getattr(stream, "read1", None)
        self._fd = input_fd(stream)
        self.bytes_read = 0
        self._lone_cr = lone_cr  # lines end with a lone CR (None: judged at the first end)
        self.short = False  # the last chunk taken: cut short because the input paused or ended
        self._comment = comment.encode() if comment is not None else None
        self._line_start = True  # the next byte read starts a record (outside quotes)
        self._in_comment = False  # the bytes read ended inside a comment line
        self._first_read = True  # nothing read yet (a byte-order mark may come first)

    def more_is_ready(self) -> bool:
        return input_ready(self._fd)

    def _read_some(self, size: int) -> bytes:
        return bytes(self._read1(size) if self._read1 is not None else self._stream.read(size))

    def _read(self, size: int) -> bytes:
        """Some bytes, LF-ended, comments blanked; empty only at the end of the input."""
        while True:
            data = self._read_some(size)
            # A comment may follow a byte-order mark: the first read holds both (a pipe
            # may give fewer bytes).
            while (self._first_read and self._comment is not None and 0 < len(data) < 4
                   and BOM.startswith(data[:3])
                   and (more := self._read_some(4 - len(data)))):
                data += more
            if self._lone_cr is None and (b"\r" in data or b"\n" in data):
                # Old Mac files end lines with a lone CR: judged at the first line end,
                # which needs the byte after a CR (a read may end between the CR and LF
                # of a CRLF).
                while (data.endswith(b"\r") and b"\n" not in data
                       and (more := self._read_some(1))):
                    data += more
                self._lone_cr = b"\n" not in data
            self.bytes_read += len(data)
            if self._lone_cr:
                data = self._line_ends(data)
            if self._comment is None or not data:
                return data
            kept = self._uncomment(data)
            if kept:  # else all of it was inside a comment: read on
                return kept

    def _uncomment(self, data: bytes) -> bytes:
        """`data` with each comment line's bytes dropped up to its newline (kept). The
        quote state at its start is that at the end of the bytes kept before it."""
        comment = self._comment
        assert comment is not None
        first, self._first_read = self._first_read, False
        pieces: list[bytes] = []
        kept = 0  # data[kept:] is not yet in pieces
        if self._in_comment:
            kept = data.find(b"\n")
            if kept < 0:
                return b""
            self._in_comment = False
        quoted = self._quoted
        counted = kept  # the quote state is `quoted` at data[counted]
        # Where a comment may start: the first byte (after a byte-order mark) when a
        # record starts there, and the byte after each newline outside quotes.
        candidates: list[int] = []
        if kept == 0 and self._line_start and not quoted:
            candidates.append(len(BOM) if first and data.startswith(BOM) else 0)
        marker = b"\n" + comment
        search = kept
        while True:
            if candidates:
                start = candidates.pop()
            else:
                found = data.find(marker, search)
                if found < 0:
                    break
                start = found + 1
            search = start
            if data[start:start + 1] != comment:
                continue
            quoted ^= dialect.flips(data, counted, start)
            counted = start
            if quoted:  # a newline inside a quoted cell: the line goes on, data
                continue
            pieces.append(data[kept:start])
            end = data.find(b"\n", start)
            if end < 0:  # the comment goes on in the next bytes read
                self._in_comment = True
                kept = len(data)
                break
            kept = counted = search = end
        if not pieces:
            tail = data[kept:] if kept else data
        else:
            pieces.append(data[kept:])
            tail = b"".join(pieces)
        if not self._in_comment:
            quoted ^= dialect.flips(data, counted)
            self._line_start = tail.endswith(b"\n") and not quoted
        return tail

    def _line_ends(self, data: bytes) -> bytes:
        """A lone-CR file's line ends as LF; a CR inside a quoted field is text, kept
        (the quote state at the start of `data` is that at the end of the pending bytes)."""
        if b'"' not in data and not self._quoted:
            return data.replace(b"\r", b"\n")
        array = np.frombuffer(data, dtype=np.uint8).copy()
        returns = np.flatnonzero(array == _RETURN)
        quotes = np.flatnonzero(array == _QUOTE)
        array[returns[dialect.outside_quotes(quotes, returns, self._quoted)]] = _NEWLINE
        return array.tobytes()

    def _scan(self, data: bytes, offset: int) -> None:
        """Track the quote state and the last record end through new bytes only."""
        if b'"' not in data:
            if not self._quoted:
                newline = data.rfind(b"\n")
                if newline >= 0:
                    self._last_end = offset + newline + 1
            return
        array = np.frombuffer(data, dtype=np.uint8)
        quotes = int(np.count_nonzero(array == _QUOTE))
        # The last newline outside quotes is nearly always the last newline: it is, when
        # the quotes before it pair up (counted as all of them less those after it, the
        # tail of one record). A few newlines inside a quoted field are stepped over;
        # many are left to a vectorised search (positions of every quote and newline).
        end = len(data)
        for _ in range(8):
            newline = data.rfind(b"\n", 0, end)
            if newline < 0:
                break
            # outside quotes where the state at its start, flipped by the quotes before
            # it (all of them but those after it), is outside
            if not self._quoted ^ (quotes % 2 == 1) ^ dialect.flips(data, newline):
                self._last_end = offset + newline + 1
                break
            end = newline
        else:
            positions = np.flatnonzero(array == _QUOTE)
            newlines = np.flatnonzero(array[:end] == _NEWLINE)
            outside = newlines[dialect.outside_quotes(positions, newlines, self._quoted)]
            if outside.shape[0]:
                self._last_end = offset + int(outside[-1]) + 1
        self._quoted = bool(self._quoted) ^ (quotes % 2 == 1)

    def take(self, minimum: int) -> bytes:
        """Read until at least `minimum` bytes and a whole record are pending (or the input
        pauses or ends, or holds a NUL byte), and return the whole records read."""
        if self._too_long:
            raise RecordTooLong(0, self._quoted)
        pending = self._pending
        started = time.monotonic()
        while not self._eof and (len(pending) < minimum or not self._last_end):
            data = self._read(max(minimum - len(pending), READ_BYTES))
            if not data:
                self._eof = True
                break
            offset = len(pending)
            pending += data
            if b"\0" in data:
                # Binary data: read no further; the parser reports the NUL's row.
                self._eof = True
                break
            self._scan(data, offset)
            if len(pending) - self._last_end > self.max_record:
                if not self._last_end:
                    raise RecordTooLong(0, self._quoted)
                self._too_long = True  # first hand out the whole records before it
                break
            if self._last_end and (time.monotonic() - started > FLUSH_SECONDS
                                   or not self.more_is_ready()):
                break
        self.short = len(pending) < minimum
        cut = len(pending) if self._eof else self._last_end
        with memoryview(pending) as view:  # one copy, not a slice and then its bytes
            chunk = bytes(view[:cut])
        del pending[:cut]
        self._last_end = 0
        if len(chunk) > self.max_record:
            self._check_lengths(chunk)
        return chunk

    def _check_lengths(self, chunk: bytes) -> None:
        """A whole record inside a chunk may be over the cap too (a small cap)."""
        data = np.frombuffer(chunk, dtype=np.uint8)
        ends = np.append(dialect.record_ends(data), data.shape[0])
        lengths = np.diff(ends, prepend=-1) - 1
        over = np.flatnonzero(lengths > self.max_record)
        if over.shape[0]:
            at = int(over[0])
            blank = int(np.count_nonzero(lengths[:at] == 0))
            start = int(ends[at - 1]) + 1 if at else 0
            raise RecordTooLong(at - blank, b'"' in chunk, chunk.count(b"\n", 0, start))

    def chunks(self) -> Iterator[bytes]:
        while True:
            chunk = self.take(self.chunk_bytes)
            if chunk:
                yield chunk
            if self._eof and not self._pending:
                return


def size_option(text: str | int | None, option: str) -> int | None:
    """A byte size as typed: 1048576, 512K, 64M, 1G (powers of 1024; KiB/MB spellings)."""
    from cumtool.errors import UsageError

    if text is None or isinstance(text, int):
        value = text
    else:
        cleaned = text.strip().upper().removesuffix("B").removesuffix("I")
        factor = 1
        if cleaned[-1:] in _UNITS:
            factor, cleaned = _UNITS[cleaned[-1]], cleaned[:-1]
        if not cleaned.strip().isdigit():
            raise UsageError(f"{option} {text!r} is not a size; give bytes or a number with "
                             "K, M or G (e.g. 64M)")
        value = int(cleaned) * factor
    if value is not None and value < 1:
        raise UsageError(f"{option} must be at least 1 byte")
    return value


_UNITS = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}


def shown_size(size: int) -> str:
    for unit, factor in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if size >= factor and size % factor == 0:
            return f"{size // factor} {unit}"
    return f"{size} bytes"


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
