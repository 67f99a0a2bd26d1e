"""What a --state run read: each input's size and SHA-256, and the part of it to read.

A run with --state fingerprints its inputs before it scans them (in threads: hashlib
works without the GIL, so this overlaps the loading of the table libraries). The
fingerprints make a run's identity, which tells a retry from a new run, and they tell
a grown input from a changed one: when the bytes a past run consumed are still the
file's first bytes, only what follows is read (`Span`), after the header record.

Every input a --state run reads as text is read only up to the size it had when it was
fingerprinted, so rows appended while the run lasts are left for the next run.
"""

from __future__ import annotations

import io
import os
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from cumtool.errors import DataError
from cumtool.formats.csv import dialect

_CHUNK = 1 << 20
LINE_ENDS = (b"\n", b"\r")


@dataclass(frozen=True)
class Print:
    """An input as fingerprinted: its size, the SHA-256 of all its bytes, and the
    SHA-256 of the prefixes past runs consumed (`has_prefix`: whether those are still
    its first bytes). `lines` and `lines_sha256`: its bytes up to the end of its last
    line (all of them where the last byte ends a line), for a growing log whose last line
    is still being written (--growing: that line waits for the next run). `records` and
    `records_sha256`: the same up to the last line end outside quotes (the quote state
    being the parity of the quotes before it, as the CSV reader keeps it): a CSV log's
    writer caught inside a quoted field that holds a line end leaves its record open."""

    path: str
    size: int
    sha256: str
    ends_line: bool = True  # the last byte ends a line (or the file is empty)
    lines: int = -1  # -1: as `size`
    lines_sha256: str = ""  # "": as `sha256`
    records: int = -1  # -1: as `lines`
    records_sha256: str = ""
    # Prefixes asked for (`also`): their size -> the SHA-256 of the file's first bytes.
    prefixes: tuple[tuple[int, str], ...] = ()

    @property
    def whole_lines(self) -> tuple[int, str]:
        """The size and SHA-256 of the bytes up to the end of the last line."""
        if self.lines < 0:
            return self.size, self.sha256
        return self.lines, self.lines_sha256

    @property
    def whole_records(self) -> tuple[int, str]:
        """The size and SHA-256 of the bytes up to the last line end outside quotes."""
        if self.records < 0:
            return self.whole_lines
        return self.records, self.records_sha256

    def has_prefix(self, size: int, sha256: str) -> bool:
        """Whether the file's first `size` bytes are those a past run hashed."""
        return (size, sha256) in self.prefixes or (size, sha256) == (self.size, self.sha256)


@dataclass(frozen=True)
class Span:
    """Read bytes [start, end) of a file, after `header` (the header record of a file
    continued past its start)."""

    start: int
    end: int
    header: bytes = b""
    spool: Any = None  # a FIFO's or a pipe's bytes, copied to a temporary file


def fingerprint(paths: Iterable[str], consumed: dict[str, list[int]]) -> dict[str, Print]:
    """Each path's Print; `consumed` maps a path to the sizes past runs consumed of it,
    whose prefixes are hashed on the way."""
    paths = list(dict.fromkeys(paths))

    def one(p: str) -> Print:
        return _print(p, consumed.get(p, []))

    if len(paths) <= 1:
        return {p: one(p) for p in paths}
    from concurrent.futures import ThreadPoolExecutor  # (--state runs only)

    with ThreadPoolExecutor(max_workers=min(4, len(paths))) as pool:
        return dict(zip(paths, pool.map(one, paths), strict=True))


def _print(path: str, consumed: list[int]) -> Print:
    """One pass over the file: its hash, the hash at each size consumed before, and the
    hash up to the end of its last line and of its last line outside quotes (copies of
    the running hash at each chunk's last such ends: the bytes are read once)."""
    import hashlib  # (OpenSSL: --state runs only)

    digest = hashlib.sha256()
    stops = sorted({n for n in consumed if n > 0})
    prefixes: dict[int, str] = {0: digest.hexdigest()}
    size = 0
    line_size, line_digest = 0, digest.copy()
    record_size, record_digest = 0, digest.copy()
    odd = False  # an odd number of quotes so far: inside a quoted field
    try:
        with open(path, "rb", buffering=0) as stream:
            while True:
                room = _CHUNK if not stops else min(_CHUNK, stops[0] - size)
                chunk = stream.read(room)
                if not chunk:
                    break
                view = memoryview(chunk)
                done = 0
                end = _last_line_end(chunk, len(chunk))
                if end >= 0:
                    record = _last_record_end(chunk, end, odd)
                    if record >= 0:
                        digest.update(view[:record + 1])
                        record_size, record_digest = size + record + 1, digest.copy()
                        done = record + 1
                    digest.update(view[done:end + 1])
                    line_size, line_digest = size + end + 1, digest.copy()
                    done = end + 1
                digest.update(view[done:])
                odd ^= chunk.count(_QUOTE) % 2 == 1
                size += len(chunk)
                if stops and size == stops[0]:
                    prefixes[stops.pop(0)] = digest.hexdigest()
    except OSError as error:
        raise DataError(f"{path}: cannot read: {error.strerror or error}") from None
    whole = digest.hexdigest()
    ends = size == line_size
    if ends and not odd:
        record_size, record_digest = size, digest
    return Print(path, size, whole, ends, line_size,
                 whole if ends else line_digest.hexdigest(), record_size,
                 record_digest.hexdigest(), tuple(prefixes.items()))


_QUOTE = b'"'
# A walk back over the quotes of a chunk inside a quoted field stops here: a file whose
# quotes are wrong from some line on (which the reader then reports) costs no more.
_WALK = 256


def _last_line_end(chunk: bytes, stop: int) -> int:
    return max(chunk.rfind(b"\n", 0, stop), chunk.rfind(b"\r", 0, stop))


def _last_record_end(chunk: bytes, end: int, odd: bool) -> int:
    """The last line end at or before `end` (the chunk's last) outside quotes, the chunk
    starting inside quotes where `odd`; -1 where none is found. Walked back quote by
    quote: just before the last quote at or before a line end inside quotes, the state
    is outside."""
    if odd == (chunk.count(_QUOTE, 0, end + 1) % 2 == 1):
        return end
    outside = chunk.rfind(_QUOTE, 0, end + 1)  # the state is outside just before it
    for _ in range(_WALK):
        if outside < 0:
            return -1
        line = _last_line_end(chunk, outside)
        if line < 0:
            return -1
        if chunk.count(_QUOTE, line + 1, outside) % 2 == 0:
            return line
        outside = chunk.rfind(_QUOTE, 0, line)
    return -1


def spool_stdin(path: str | None) -> tuple[io.BufferedRandom, Print]:
    """Standard input (`path` None), a FIFO or a URL copied to a temporary file (TMPDIR)
    and fingerprinted on the way: a retry of a run that read a pipe is known by the
    bytes, before any row is scanned."""
    import contextlib
    import sys
    import tempfile

    from cumtool import remote
    from cumtool.output import spool_error

    closing = contextlib.ExitStack()
    if path is not None and remote.is_url(path):  # downloaded once, then read from disk
        source: Any = remote.open_input(path, closing)
    elif path is not None:
        try:
            source = closing.enter_context(open(path, "rb"))
        except OSError as error:
            raise DataError(f"{path}: cannot read: {error.strerror or error}") from None
    elif sys.stdin is None:
        raise DataError("standard input is closed; give an INPUT file")
    else:
        source = sys.stdin.buffer
    import hashlib

    digest = hashlib.sha256()
    try:
        spool = tempfile.TemporaryFile()
    except OSError as error:
        raise spool_error(error) from None
    size = 0
    last = b""
    read1 = getattr(source, "read1", source.read)
    try:
        while chunk := read1(_CHUNK):
            digest.update(chunk)
            spool.write(chunk)
            size += len(chunk)
            last = chunk[-1:]
        spool.flush()
        spool.seek(0)
    except OSError as error:
        spool.close()
        raise spool_error(error) from None
    finally:
        closing.close()
    shown = "-" if path is None else path if remote.is_url(path) else os.path.abspath(path)
    return spool, Print(shown, size, digest.hexdigest(), size == 0 or last in LINE_ENDS)


def header_record(path: str, comment: str | None = None) -> bytes:
    """The first record of a CSV/TSV file with its line end: the first newline outside
    quotes (or a lone CR, in an old Mac file), found with bytes.find and count, not a
    loop over bytes (a wide file's header runs to megabytes). A byte-order mark and the
    blank lines before it are skipped, as the reader skips them, and with `comment`
    (--comment) the lines that start with it: they are not the header."""
    data = b""
    start = 0  # where the record looked at starts
    inside = False  # the quote state at `searched` (the record starts outside)
    searched = 0
    skipped = comment.encode() if comment is not None else None
    try:
        with open(path, "rb") as stream:
            while True:
                chunk = stream.read(_CHUNK)
                data += chunk
                if start == 0 and data.startswith(b"\xef\xbb\xbf"):
                    start = searched = 3
                while True:
                    first = data[start:start + 1]
                    if searched == start and first in (b"\n", b"\r"):  # a blank line
                        start = searched = start + 1
                        continue
                    if searched == start and first and first == skipped:  # a comment
                        ends = [i for i in (data.find(b"\n", start), data.find(b"\r", start))
                                if i >= 0]
                        if not ends:
                            if not chunk:
                                return b""  # nothing but comments
                            break
                        start = searched = min(ends) + 1
                        continue
                    ends = [i for i in (data.find(b"\n", searched), data.find(b"\r", searched))
                            if i >= 0]
                    if not ends:
                        break
                    end = min(ends)
                    inside ^= dialect.flips(data, searched, end)
                    searched = end + 1
                    if not inside:  # outside quotes: the header ends here
                        if data[end:end + 1] == b"\r":
                            if end + 1 == len(data) and chunk:
                                data += stream.read(1)
                            if data[end + 1:end + 2] == b"\n":
                                return data[start:end + 2]
                        return data[start:end + 1]
                if not chunk:
                    return data[start:]
    except OSError as error:
        raise DataError(f"{path}: cannot read: {error.strerror or error}") from None


class SpanReader(io.RawIOBase):
    """`header` followed by bytes [start, end) of an open file, as one seekable stream."""

    def __init__(self, stream: io.BufferedReader, span: Span) -> None:
        super().__init__()
        self._stream = stream
        self._span = span
        self._size = len(span.header) + span.end - span.start
        self._position = 0

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def tell(self) -> int:
        return self._position

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        base = {io.SEEK_SET: 0, io.SEEK_CUR: self._position, io.SEEK_END: self._size}[whence]
        self._position = max(0, base + offset)
        return self._position

    def readinto(self, buffer: memoryview | bytearray) -> int:  # type: ignore[override]
        view = memoryview(buffer).cast("B")
        header = self._span.header
        done = 0
        if self._position < len(header):
            part = header[self._position:self._position + len(view)]
            view[:len(part)] = part
            done = len(part)
            self._position += done
        room = min(len(view) - done, self._size - self._position)
        if room > 0:
            self._stream.seek(self._span.start + self._position - len(header))
            data = self._stream.read(room)
            view[done:done + len(data)] = data
            done += len(data)
            self._position += len(data)
        return done

    def close(self) -> None:
        super().close()  # the run closes the file itself
