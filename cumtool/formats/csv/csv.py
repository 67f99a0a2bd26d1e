"""Reading delimited text (CSV, TSV, plain or compressed); writing it is formats/csv/csvwrite.py,
and the rules of records and cells both readers share are formats/csv/csvcells.py.

Reading: the input is cut into chunks of whole records (a newline outside quotes ends a
record), and polars parses each chunk into text columns: every cell as written, after CSV
unquoting. Memory is bounded by the chunk size whatever the file size; files, pipes and
compressed streams take the same path, and past the first rows a chunk is parsed as soon
as its bytes have arrived, so `producer | cumtool cumsum - | head` shows rows before the
producer ends.

What each column holds (numbers, codes with leading zeros, flags, dates, text) is judged
from its first 10,000 rows, missing cells aside, read whole however the input pauses (or
from the first row with --line-buffered); a column empty in all of them, from 10,000 rows
from its first value on, read ahead (up to AHEAD_LIMIT). Only the columns a run scans are
then converted to numbers, batch by batch. Every other cell stays the text it was and is
written back unchanged (SEMANTICS.md, "Tables: what is a number, and what is left alone").
Blank lines are skipped, and with --comment lines that start with its character
(records.Chunker blanks them as they are read); a record with more or fewer fields than
the header is an error, or with --ragged only one with more (a shorter one's missing
fields are missing cells, as polars reads them).
"""

from __future__ import annotations

import contextlib
import io
import os
from collections.abc import Callable, Collection, Iterator, Mapping
from typing import IO, TypeVar, cast

import numpy as np
import polars as pl
import pyarrow as pa

from cumtool.errors import DataError, FormatError
from cumtool.formats import (
    BOM,
    ColumnHint,
    CsvReadOptions,
    Opening,
    SourceBase,
    delimiter_hint,
    row_text,
    unreadable,
)
from cumtool.formats.csv import dialect
from cumtool.formats.csv.csvcells import (
    RowLines,
    check_quotes,
    comma_decimals,
    convert,
    count_records,
    dialect_hint,
    layout,
    markers_parse,
    place,
    record_lines,
    surprise,
)
from cumtool.formats.csv.judge import (
    INFER_ROWS,
    judge_columns,
    judge_one,
    widened,
    with_culprits,
)
from cumtool.formats.csv.wide import JUDGED_BYTES, WideInput, is_wide
from cumtool.formats.records import (
    MAX_RECORD_BYTES,
    Chunker,
    CountingReader,
    RecordTooLong,
    shown_size,
)

CHUNK_BYTES = 8 << 20
SAMPLE_BYTES = 1 << 20  # the first chunk, whose rows say what each column holds
SAMPLE_LIMIT = 16 << 20  # ... read on to INFER_ROWS rows, up to this size
# A column empty in every judged row: read on (and held) until it holds a value and
# INFER_ROWS rows from there, up to this size in all; it is judged from those rows.
AHEAD_LIMIT = 64 << 20
_CHUNK_CELLS = 1 << 18
MIN_CHUNK_BYTES = 64 << 10
MIN_CHUNK_ROWS = 128
_TEXT = pa.large_string()
T = TypeVar("T")
_POLARS_NUMBER: dict[str, pl.DataType] = {"int64": pl.Int64(), "double": pl.Float64()}


def _polars_message(error: Exception) -> str:
    return " ".join(str(error).split("\n\n", 1)[0].split())


def _count_byte(data: bytes, character: str) -> int:
    """How many times the one-byte `character` occurs in `data`: numpy compares bytes
    about ten times faster than bytes.count, which costs 0.1 s a 100 MB file."""
    return int(np.count_nonzero(np.frombuffer(data, dtype=np.uint8) == ord(character)))


def _prepend(firsts: list[T], rest: Iterator[T]) -> Iterator[T]:
    firsts.reverse()
    while firsts:
        yield firsts.pop()  # held only by the consumer from here on
    yield from rest


def _chunk_rows(width: int) -> int:
    """Rows a batch holds: _CHUNK_CELLS cells, but at least MIN_CHUNK_ROWS rows, where each
    batch costs Python a call or more a column (8,000 columns: 32-row batches took 0.45 s
    each)."""
    return max(MIN_CHUNK_ROWS, _CHUNK_CELLS // max(width, 1))


def _in_pieces(items: Iterator[pl.DataFrame | bytes], width: int
               ) -> Iterator[pl.DataFrame | bytes]:
    """The frames read ahead (to judge the columns) in pieces of _CHUNK_CELLS cells, as
    the chunks read on are cut: 10,000 rows of 800 columns made one batch of 8M cells,
    whose numbers and output took the peak from 337 to 464 MiB."""
    rows = _chunk_rows(width)
    for item in items:
        if isinstance(item, bytes) or item.height <= rows:
            yield item
            continue
        for low in range(0, item.height, rows):
            yield item.slice(low, rows)
        del item


class CsvSource(SourceBase):
    """Delimited text from any binary stream, in batches of whole records.

    `schema` is what batches hold unconverted (every column text); `hints` say, column by
    column, what its cells parse to when it is scanned and whether it is scanned by
    default. `batches(parse)` converts the columns the plan scans."""

    cut_by_time = True  # records.Chunker: a chunk ends early where the input pauses

    def __init__(
        self, stream: IO[bytes], name: str, options: CsvReadOptions, *,
        compression: str | None = None, float_columns: bool = False, decimal: bool = False,
        chunk_bytes: int | None = None, total_bytes: int | None = None,
        max_record: int = MAX_RECORD_BYTES, widen: tuple[int, ...] = (),
    ) -> None:
        self.name = name
        self.total_bytes = total_bytes
        self._options = options
        markers = list(dict.fromkeys([*options.na_values, ""]))
        self._na = pl.Series(markers, dtype=pl.String).implode()
        self.markers = markers
        if compression:
            stream = pa.CompressedInputStream(pa.PythonFile(stream, mode="r"), compression)
        chunk_bytes = chunk_bytes or CHUNK_BYTES
        self._chunker = Chunker(stream, chunk_bytes, max_record, comment=options.comment)
        self.rows_read = 0
        # Physical lines (as an editor counts them) before the chunk being read, and where
        # the rows of each chunk read stand, for messages: `row 2 (line 3)`.
        self._line = 0
        self._chunk_line = 0
        self._rows_at = RowLines()
        self._held = b""  # records read after the first frame, for the next chunk
        sample = b""
        line_buffered = options.line_buffered
        wanted = (1 if line_buffered else INFER_ROWS) + (1 if options.header else 0)
        try:
            sample = self._chunker.take(SAMPLE_BYTES)
            # A first row longer than the sample: read on until a whole row follows the
            # header, or the types would be judged from the header alone.
            while (count_records(sample, options.delimiter) < wanted if line_buffered
                   else sample.count(b"\n") < 2) and (more := self._chunker.take(SAMPLE_BYTES)):
                sample += more
            # Columns are judged from their first INFER_ROWS rows: read on until they are
            # in (up to SAMPLE_LIMIT bytes; a wide file's up to JUDGED_BYTES), however the
            # input comes: a pipe whose producer pauses gives the types a file gives
            # (SEMANTICS.md). Lines are counted first (a cheap count, never fewer than the
            # rows); the rows once they may be enough.
            lines = _count_byte(sample, "\n")
            records: int | None = None
            wide = is_wide(sample.removeprefix(BOM).lstrip(b"\r\n"), options.delimiter)
            limit = JUDGED_BYTES if wide else SAMPLE_LIMIT
            while not line_buffered and len(sample) < limit:
                if records is None and lines >= wanted:
                    records = count_records(sample, options.delimiter)
                if records is not None and records >= wanted:
                    break
                more = self._chunker.take(SAMPLE_BYTES)
                if not more:
                    break
                sample += more
                lines += _count_byte(more, "\n")
                if records is not None:
                    records += count_records(more, options.delimiter)
        except (OSError, pa.ArrowException) as error:
            raise unreadable(name, f"{compression}-compressed csv" if compression else "csv",
                             error) from None
        except RecordTooLong as error:
            raise self._too_long(error, sample, first=True) from None
        lines = _count_byte(sample, "\n")
        sample = sample.removeprefix(BOM).lstrip(b"\r\n")  # blank lines before the header
        self._line = self._chunk_line = lines - _count_byte(sample, "\n")
        if not sample.strip():
            raise FormatError(f"{name}: the file is empty (no header, no rows)")
        self._first_line = sample.split(b"\n", 1)[0].decode(options.encoding or "utf-8",
                                                            "replace")
        if wide:  # read column group by column group
            self._first_checks(sample)
            raise WideInput(self._chunker, sample, self._line)
        try:
            frame = self._first_frame(sample)
        except DataError:
            # A bad record after the rows the columns are judged from: those rows are the
            # first frame, and the rest is read as the next chunk, so that every row
            # before the bad one is written (batches()). One among them: its own error.
            parts = self._judged_part(sample, wanted)
            if parts is None:
                raise
            sample, self._held = parts
            frame = self._first_frame(sample)
        self._width = frame.width
        self._text_schema = {f"c{i}": pl.String() for i in range(self._width)}
        if options.header:
            self.column_names = ["" if cell is None else str(cell) for cell in frame.row(0)]
            frame = frame.slice(1)
        else:
            self.column_names = [str(i + 1) for i in range(self._width)]
        self.sampled_rows = frame.height  # rows the hints were judged from (0: guesses)
        # Chunks are sized in cells as well as bytes: a cell costs tens of bytes in a
        # batch (offsets, the parsed value, the result), so 8 MiB of 2-byte rows made
        # batches of 4M rows and held 500 MB.
        records = frame.height + (1 if options.header else 0)
        per_record = len(sample) / max(records, 1)
        self._chunker.chunk_bytes = int(min(chunk_bytes, max(
            MIN_CHUNK_BYTES, per_record * _chunk_rows(self._width))))
        self.schema = pa.schema([pa.field(n, _TEXT) for n in self.column_names])
        # Judged: the first INFER_ROWS rows that lie within SAMPLE_LIMIT bytes (at least
        # one), or with --line-buffered the first row; the same rows from a file or a pipe.
        judged = frame.height
        if line_buffered:
            judged = min(judged, 1)
        elif len(sample) > SAMPLE_LIMIT:
            within = count_records(sample, options.delimiter, SAMPLE_LIMIT)
            judged = min(judged, max(1, within - (1 if options.header else 0)))
        hints = judge_columns(frame, markers, decimal_comma=options.decimal_comma,
                              float_columns=float_columns, decimal=decimal, rows=judged)
        judged = min(judged, INFER_ROWS)
        hints = self._culprits(frame.head(judged), hints)
        self._ahead = [frame]
        del frame
        empty = [i for i, hint in enumerate(hints) if hint.kind == "empty"]
        if empty and not line_buffered:
            found = self._look_ahead(empty, judged, len(sample))
            for i, first_row in found.items():
                hints[i] = self._judge_from(i, first_row, float_columns, decimal)
        self.hints = widened(hints, widen)

    def _first_checks(self, sample: bytes) -> None:
        self._check_nul(sample, first=True)
        check_quotes(self.name, sample, self._options.delimiter, 0,
                     header=self._options.header, lines_before=self._line)

    def _first_frame(self, sample: bytes) -> pl.DataFrame:
        """The first chunk (the header and the rows to judge) read, checked first."""
        self._first_checks(sample)
        self._width = 0
        return self._strings(sample, first=True)

    def _judged_part(self, sample: bytes, wanted: int) -> tuple[bytes, bytes] | None:
        """The first chunk cut after its first `wanted` records (blank lines aside), and
        the rest; None where it holds no more."""
        ends = dialect.record_ends(np.frombuffer(sample, dtype=np.uint8)) + 1
        _fields, blank = layout(sample, self._options.delimiter)
        kept = np.flatnonzero(~blank[:ends.shape[0]])
        if kept.shape[0] <= wanted:
            return None
        cut = int(ends[kept[wanted - 1]])
        return sample[:cut], sample[cut:]

    def _look_ahead(self, empty: list[int], judged: int, read: int) -> dict[int, int]:
        """The rows after the judged ones, read on (and kept for batches()) until each
        column of `empty` (empty or missing in every judged row) holds a value and
        INFER_ROWS rows from its first on are in, or the input ends, or AHEAD_LIMIT bytes
        were read: where each that holds a value first does (its row, from 0)."""
        first: dict[int, int] = {}
        total = 0  # rows in the frames read
        at = judged  # the first row not yet looked at
        try:
            while True:
                for frame in self._ahead[len(self._ahead) - 1:]:
                    for i in empty:
                        if i in first:
                            continue
                        cells = frame.to_series(i).slice(max(0, at - total)).str.strip_chars()
                        held = (cells.is_not_null() & ~cells.is_in(self._na)).arg_true()
                        if held.len():
                            first[i] = max(at, total) + int(held[0])
                    total += frame.height
                at = total
                if (len(first) == len(empty) and all(r + INFER_ROWS <= total
                                                      for r in first.values())) \
                        or read >= AHEAD_LIMIT:
                    break
                chunk, self._held = self._held or self._chunker.take(SAMPLE_BYTES), b""
                if not chunk:
                    break
                read += len(chunk)
                self.rows_read = total  # where the chunk's rows stand, for messages
                self._ahead.append(self._strings(chunk, first=False))
        except (OSError, pa.ArrowException) as error:
            raise unreadable(self.name, "csv", error) from None
        except RecordTooLong as error:
            raise self._too_long(error, b"", first=False) from None
        finally:
            self.rows_read = 0
        return first

    def _judge_from(self, position: int, first_row: int, float_columns: bool,
                    decimal: bool) -> ColumnHint:
        """The hint of a column empty in every judged row, from INFER_ROWS rows from its
        first value on (in the frames read ahead)."""
        cells = pl.concat([frame.to_series(position) for frame in self._ahead]
                          ).slice(first_row, INFER_ROWS)
        return judge_one(cells, self.markers, decimal_comma=self._options.decimal_comma,
                         float_columns=float_columns, decimal=decimal,
                         row_line=self.row_line, first_row=first_row)

    def _culprits(self, judged: pl.DataFrame, hints: list[ColumnHint]) -> list[ColumnHint]:
        """The hints, each text column's with its first cell that is not a number."""
        return with_culprits(hints, judged.to_series, self.markers,
                             decimal_comma=self._options.decimal_comma,
                             row_line=self.row_line)

    # Reading ---------------------------------------------------------------------------

    stored: CountingReader | None = None  # the input as stored (before decompression)

    @property
    def bytes_read(self) -> int:
        return self.stored.count if self.stored is not None else self._chunker.bytes_read

    @property
    def locator(self) -> Callable[[int], tuple[str, int, int] | tuple[str, int]]:
        return self.locate

    def batches(self, parse: Mapping[int, pa.DataType] | None = None,
                unused: Collection[int] = ()) -> Iterator[pa.RecordBatch]:
        """Batches of the input: its columns as text, then those in `parse` converted.
        Columns in `unused` (their text not written) come as type-null columns, uncopied."""
        parse = parse or {}
        # Numbers whose text is not written are parsed by polars straight away (a chunk
        # it cannot parse so, with a missing marker or a bad cell, is read as text).
        # Not for one column: there a blank line (skipped) and a "" cell (a row) both
        # parse to null, and only the text tells them apart.
        typed = {} if self._options.decimal_comma or self._width == 1 else {
            i: _POLARS_NUMBER[str(t)] for i, t in parse.items()
            if i in unused and str(t) in _POLARS_NUMBER
            and not markers_parse(self.markers, t)}
        schema: dict[str, pl.DataType] = dict(self._text_schema)
        schema.update((f"c{i}", t) for i, t in typed.items())
        read_as = schema if typed else None
        try:
            # The frames read ahead (to judge the columns), the records held after them
            # (_held), then the chunks read on.
            ahead: list[pl.DataFrame | bytes] = [*self._ahead]
            if self._held:
                ahead.append(self._held)
            self._ahead, self._held = [], b""
            items = _in_pieces(_prepend(ahead, self._chunker.chunks()), self._width)
            del ahead
            for item in items:
                frame = item if isinstance(item, pl.DataFrame) else None
                chunk = item if isinstance(item, bytes) else b""
                del item
                try:
                    if frame is None:
                        frame = self._strings(chunk, first=False, typed=read_as)
                    batch = self._batch(frame, parse, unused)
                except DataError as error:
                    yield from self._rows_before(error, chunk, frame, read_as, parse, unused)
                    raise  # (_rows_before raises)
                self.rows_read += frame.height
                # Hold neither the text frame nor the batch while the consumer works and
                # the next chunk is read: a wide table costs about 1 kB a column in each.
                del frame, chunk
                yield batch
                del batch
        except (OSError, pa.ArrowException) as error:
            raise unreadable(self.name, "csv", error) from None
        except RecordTooLong as error:
            raise self._too_long(error, b"", first=False) from None

    def _rows_before(self, error: DataError, chunk: bytes, frame: pl.DataFrame | None,
                     read_as: dict[str, pl.DataType] | None, parse: Mapping[int, pa.DataType],
                     unused: Collection[int]) -> Iterator[pa.RecordBatch]:
        """For a chunk (or a frame read ahead) that failed: a batch of its rows before its
        first bad record, then that record's error (`error` where that record alone reads
        well). So every row before an error is written, however the input was cut into
        chunks: at every thread count, and whether the input came fast or slowly."""
        if frame is not None:  # its records were read: a cell is not its column's type
            def rows(count: int) -> pa.RecordBatch:
                return self._batch(frame.slice(0, count), parse, unused)

            good = _longest(rows, frame.height)
            if good:
                batch = rows(good)
                self.rows_read += good
                yield batch
            self._batch(frame.slice(good, 1), parse, unused)
            raise error
        ends = dialect.record_ends(np.frombuffer(chunk, dtype=np.uint8)) + 1
        if not ends.shape[0] or ends[-1] < len(chunk):  # (a stray quote: the rest, one)
            ends = np.append(ends, len(chunk))

        def records(start: int, stop: int) -> pa.RecordBatch:
            text = self._strings(chunk[start:stop], first=False, typed=read_as)
            return self._batch(text, parse, unused)

        def trial(count: int) -> object:
            saved = self._line, self._chunk_line, self._rows_at.saved()
            try:
                return records(0, int(ends[count - 1]))
            finally:
                self._line, self._chunk_line = saved[0], saved[1]
                self._rows_at.restore(saved[2])

        good = _longest(trial, ends.shape[0])
        start = int(ends[good - 1]) if good else 0
        if good:
            batch = records(0, start)
            self.rows_read += batch.num_rows
            yield batch
        if b"\0" not in chunk:  # (a NUL: a binary file, named first)
            records(start, int(ends[good]))
        raise error

    def _too_long(self, error: RecordTooLong, sample: bytes, first: bool) -> FormatError:
        """The cap on one record was passed: name the row, at once (the rest is unread)."""
        before = error.before
        lines = self._line  # the line ends of the chunks handed out
        if first:  # the records of the sample have not been counted yet
            _fields, blank = layout(sample, self._options.delimiter)
            before += int(np.count_nonzero(~blank))
            lines = _count_byte(sample, "\n")
        where = self._where(before, first, lines + error.newlines + 1)
        cause = " (a quote that is never closed?)" if error.quoted else ""
        return FormatError(
            f"{self.name}: {where} is longer than {shown_size(self._chunker.max_record)}"
            f"{cause}; --max-record-size raises the limit")

    def _where(self, line: int, first: bool, physical: int | None = None) -> str:
        """A place in a chunk for a message: its `line`-th record (from 0) is the header
        in the first chunk of a file with one, else the row that many after those read;
        `physical`: the line of the file it is on."""
        header = first and self._options.header
        if header and line == 0:
            return "the header"
        return row_text(self.rows_read + line + (0 if header else 1), physical)

    def _line_of(self, chunk: bytes, at: int) -> int:
        """The line of the file that byte `at` of the chunk being read is on."""
        return self._chunk_line + chunk.count(b"\n", 0, at) + 1

    def _check_nul(self, chunk: bytes, first: bool) -> None:
        nul = chunk.find(b"\0")
        if nul >= 0:  # binary data, not text: stop at the first NUL, whatever follows
            where = self._where(place(chunk, nul, self._options.delimiter)[0], first,
                                self._line_of(chunk, nul))
            raise FormatError(f"{self.name}: cannot read as csv: {where} holds a NUL byte "
                              "(a binary file?)")

    def _strings(self, chunk: bytes, first: bool,
                 typed: dict[str, pl.DataType] | None = None) -> pl.DataFrame:
        """A chunk as text columns (or some as numbers, by the `typed` schema, where they
        all parse so), blank lines dropped; a ragged record is an error."""
        self._chunk_line = self._line
        self._check_nul(chunk, first)
        if not first:  # the first chunk was checked before its header was read
            check_quotes(self.name, chunk, self._options.delimiter, self.rows_read,
                         lines_before=self._line)
        if self._options.encoding:
            chunk = self._transcode(chunk, first)
        frame = None
        if typed is not None:
            with contextlib.suppress(pl.exceptions.PolarsError):
                frame = pl.read_csv(chunk, has_header=False, schema=typed,
                                    separator=self._options.delimiter, raise_if_empty=False)
        try:
            if frame is None:
                frame = pl.read_csv(
                    chunk, has_header=False, infer_schema=False,
                    schema=None if first else self._text_schema,
                    separator=self._options.delimiter, raise_if_empty=False,
                    try_parse_dates=False,
                )
        except pl.exceptions.PolarsError as error:
            raise self._not_utf8(chunk, first) or self._ragged(chunk, first) or unreadable(
                self.name, "csv", _polars_message(error)) from None
        frame = self._whole_records(frame, chunk, first)
        self._note_lines(chunk, frame.height, first)
        return frame

    def _whole_records(self, frame: pl.DataFrame, chunk: bytes, first: bool) -> pl.DataFrame:
        """`frame` without blank lines; a ragged record is an error (with --ragged, only a
        longer one)."""
        width = frame.width if first else self._width
        delimiter = self._options.delimiter
        if width == 1:
            # No field count to check; a blank line is a null row (a quoted "" is text).
            column = frame.to_series(0)
            return frame.filter(column.is_not_null()) if column.null_count() else frame
        # polars refuses longer records than the header and fills a short one (a blank
        # line too) with nulls at its end: with no null in the last column, every record
        # is whole. Else every record has the header's field count, and none is a blank
        # line, exactly when the delimiters outside quotes number (width - 1) per row.
        # polars drops the empty last field of a last record without a line end that
        # ends in the delimiter (`3,4,` at the end of the file): counted here instead.
        cut_short = chunk.endswith(delimiter.encode()) and not chunk.endswith(b"\n")
        if frame.to_series(width - 1).null_count() == 0 and not cut_short:
            return frame
        if self._options.ragged or cut_short:  # short records are whole: each is told by its fields
            fields, blank = layout(chunk, delimiter)
            return self._without_blank(frame, fields, blank, width, first, chunk)
        outside = _count_byte(chunk, delimiter)
        if b'"' in chunk:
            inside = frame.select(pl.col(pl.String).str.count_matches(delimiter,
                                                                      literal=True).sum())
            outside -= int(inside.sum_horizontal().item() or 0)
        if outside == frame.height * (width - 1):
            return frame
        fields, blank = layout(chunk, delimiter)
        return self._without_blank(frame, fields, blank, width, first, chunk)

    def _without_blank(self, frame: pl.DataFrame, fields: np.ndarray, blank: np.ndarray,
                       width: int, first: bool, chunk: bytes) -> pl.DataFrame:
        """`frame` without the blank lines of its records' `fields` and `blank`; a
        ragged record is an error."""
        if fields.shape[0] != frame.height:
            raise unreadable(self.name, "csv", f"{fields.shape[0]} records but polars read "
                             f"{frame.height} rows")
        ragged = self._ragged_at(fields, blank, width, first, chunk)
        if ragged is not None:
            raise ragged
        return frame.filter(pl.Series(~blank)) if blank.any() else frame

    def _note_lines(self, chunk: bytes, records: int, first: bool) -> None:
        """Where the `records` records of a chunk stand in the file (for messages), and
        the chunk's line ends counted. A chunk whose records are a line each (no blank
        lines, no newlines in quotes: nearly always) needs no more than its first line."""
        start = self._chunk_line
        newlines = _count_byte(chunk, "\n")
        header = 1 if first and self._options.header else 0
        lines: np.ndarray | None = None
        if newlines + (0 if chunk.endswith(b"\n") or not chunk else 1) != records:
            found = record_lines(chunk, self._options.delimiter) + (start + 1)
            lines = found[header:] if found.shape[0] == records else np.zeros(0, np.int64)
        self._rows_at.add(self.rows_read, start + 1 + header, lines)
        self._line = start + newlines

    def row_line(self, row: int) -> int | None:
        """The line of the file that row `row` (from 0, of this source) starts on."""
        return self._rows_at.line(row)

    def locate(self, row: int) -> tuple[str, int, int] | tuple[str, int]:
        """This source's name, row `row` (from 1) and the line it starts on, if known
        (cumtool.state hands this to the plan for its messages)."""
        line = self.row_line(row - 1)
        return (self.name, row) if line is None else (self.name, row, line)

    def _transcode(self, chunk: bytes, first: bool) -> bytes:
        """--encoding: the chunk in UTF-8 for polars (ASCII-compatible encodings only, so
        records were cut at the same newlines)."""
        encoding = self._options.encoding
        assert encoding is not None
        try:
            return chunk.decode(encoding).encode("utf-8")
        except UnicodeDecodeError as error:
            line, field = place(chunk, error.start, self._options.delimiter)
            where = (self._where(line, first, self._line_of(chunk, error.start))
                     + self._column(field, first, line))
            raise FormatError(f"{self.name}: {where}: bytes "
                              f"{chunk[error.start:error.end].hex(' ')} are not {encoding}"
                              ) from None

    def _not_utf8(self, chunk: bytes, first: bool) -> FormatError | None:
        """The row and column of the first bytes that are not UTF-8 (never replaced)."""
        try:
            chunk.decode("utf-8")
        except UnicodeDecodeError as error:
            line, field = place(chunk, error.start, self._options.delimiter)
            where = (self._where(line, first, self._line_of(chunk, error.start))
                     + self._column(field, first, line))
            bad = chunk[error.start:error.end].hex(" ")
            return FormatError(
                f"{self.name}: {where}: bytes {bad} are not UTF-8; pass --encoding with the "
                "file's encoding (latin-1, cp1252, ...)")
        return None

    def _column(self, field: int, first: bool, line: int) -> str:
        """", column 'name'" for a message about a cell of field `field` (nothing for the
        header's own cells); in the first chunk the names may not be known yet."""
        if first and self._options.header and line == 0:
            return ""
        if self._width:
            names = self.column_names
        elif self._options.header:
            import csv  # the header's names, quotes and all, before polars could read it

            try:  # a lone CR in the header is a line end to csv: then the column's number
                names = next(csv.reader([self._first_line],
                                        delimiter=self._options.delimiter), [])
            except csv.Error:
                return f", column {str(field + 1)!r}"
        else:
            return f", column {str(field + 1)!r}"
        return f", column {names[field]!r}" if field < len(names) else ""

    def _ragged(self, chunk: bytes, first: bool) -> FormatError | None:
        fields, blank = layout(chunk, self._options.delimiter)
        kept = fields[~blank]
        if not kept.shape[0]:
            return None
        return self._ragged_at(fields, blank, self._width or int(kept[0]), first, chunk)

    def _ragged_at(self, fields: np.ndarray, blank: np.ndarray, width: int,
                   first: bool, chunk: bytes) -> FormatError | None:
        ragged = self._options.ragged
        bad = np.flatnonzero(~blank & ((fields > width) if ragged else (fields != width)))
        if not bad.shape[0]:
            return None
        at = int(bad[0])
        kept = int(np.count_nonzero(~blank[: at + 1]))
        row = self.rows_read + kept
        if first and self._options.header:
            row -= 1
        line = self._chunk_line + int(record_lines(chunk, self._options.delimiter)[kept - 1]) + 1
        return FormatError(f"{self.name}: {row_text(row, line)} has {int(fields[at])} "
                           f"field{'' if fields[at] == 1 else 's'}, expected "
                           f"{'at most ' if ragged else ''}{width} like the "
                           f"{'header' if self._options.header else 'first row'}"
                           f"{self._delimiter_hint(width)}"
                           f"{self._dialect_hint(chunk, first, int(fields[at]) < width)}")

    def _dialect_hint(self, chunk: bytes, first: bool, short: bool) -> str:
        start = chunk[:1].decode("latin-1") if first else ""
        return dialect_hint(start, self._options.comment, self._options.ragged, short)


    def _delimiter_hint(self, width: int) -> str:
        """A header read as one field that holds ; or a tab was split by that instead."""
        if width != 1 or self._options.delimiter != ",":
            return ""
        return delimiter_hint(self._first_line)

    def _batch(self, frame: pl.DataFrame, parse: Mapping[int, pa.DataType],
               unused: Collection[int]) -> pa.RecordBatch:
        """Every column as text (an empty cell null; `unused` ones as type-null columns),
        then the columns in `parse` converted, appended in its order (--keep writes the
        text of a scanned column as it was)."""
        wanted = [i for i in range(self._width) if i not in unused]
        # The text columns in one call, not one a column (100,000 columns: 1 s less).
        text = iter(frame.select(pl.nth(wanted)).to_arrow().columns if wanted else ())
        arrays = [pa.nulls(frame.height) if i in unused else _one_chunk(next(text))
                  for i in range(self._width)]
        arrays += [self._parse(i, cells, t) if (cells := frame.to_series(i)).dtype == pl.String
                   else cells.to_arrow() for i, t in parse.items()]
        names = self.column_names + [self.column_names[i] for i in parse]
        return pa.RecordBatch.from_arrays(arrays, names=names)

    def _parse(self, position: int, cells: pl.Series, arrow_type: pa.DataType) -> pa.Array:
        """A text column converted to `arrow_type`; missing markers become nulls, and a
        cell that is neither is an error naming its row and column."""
        numeric = pa.types.is_floating(arrow_type) or pa.types.is_decimal(arrow_type)
        given = cells
        if self._options.decimal_comma and numeric:
            cells = comma_decimals(cells)
        parsed = convert(cells, arrow_type)
        if parsed.null_count() == 0 and not markers_parse(self.markers, arrow_type):
            return parsed.to_arrow()
        # Missing markers, or spaces around a number, or a bad cell: the slower path.
        stripped = cells.str.strip_chars()
        kept = pl.select(pl.when(stripped.is_in(self._na)).then(None).otherwise(stripped)
                         ).to_series()
        parsed = convert(kept, arrow_type)
        bad = parsed.is_null() & kept.is_not_null()
        if bad.any():
            at = int(bad.arg_true()[0])
            row = self.rows_read + at + 1
            raise surprise(self.name, row_text(row, self.row_line(row - 1)),
                           self.column_names, position, str(given[at]).strip(), arrow_type,
                           self._options.na_values, self._options.decimal_comma)
        return parsed.to_arrow()


def _longest(trial: Callable[[int], object], count: int) -> int:
    """The most records (fewer than `count`, which failed) that `trial` reads without a
    DataError: a bad record fails every run of records that holds it."""
    good, bad = 0, count
    while bad - good > 1:
        middle = (good + bad) // 2
        try:
            trial(middle)
        except DataError:
            bad = middle
        else:
            good = middle
    return good


def _one_chunk(column: pa.ChunkedArray) -> pa.Array:
    return column.chunk(0) if column.num_chunks == 1 else column.combine_chunks()


def file_size(stream: IO[bytes]) -> int | None:
    try:
        return os.fstat(stream.fileno()).st_size
    except (OSError, AttributeError, ValueError, io.UnsupportedOperation):
        return None


def open_delimited(opening: Opening) -> SourceBase:
    """The source of a CSV or TSV input: CsvSource, or WideSource for a header too wide
    for whole-width batches; its progress counted in the bytes of the input as stored."""
    from cumtool.formats.csv.wide import WideSource

    request = opening.request
    fmt = opening.kind.format
    counted = CountingReader(opening.stream)  # before decompression: bytes as stored
    source: CsvSource | WideSource
    try:
        # With a float --dtype, integers to be scanned are read as floats straight away.
        source = CsvSource(
            cast(IO[bytes], counted), opening.name, request.csv_read(fmt),
            compression=opening.kind.compression, float_columns=opening.float_columns,
            decimal=request.decimal, total_bytes=file_size(opening.stream),
            max_record=request.max_record_size or MAX_RECORD_BYTES, widen=request.widen)
    except WideInput as wide:  # read column group by column group (widerun.py)
        source = WideSource(wide, opening.name, request.csv_read(fmt),
                            float_columns=opening.float_columns, decimal=request.decimal,
                            total_bytes=file_size(opening.stream), widen=request.widen)
    source.stored = counted
    return source
