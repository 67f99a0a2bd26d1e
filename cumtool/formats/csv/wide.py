"""Very wide delimited text, read: more columns than WIDE_COLUMNS, cut into records of
cells in Python, so that no frame or batch ever spans the whole width (polars and pyarrow
allocate a few kB per column of a frame or batch: 40,000 columns of 3 rows held 437 MB,
100,000 columns 1.09 GB). cumtool/widerun.py scans and writes it column group by column
group, so memory stays bounded whatever the width.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Generator, Iterator
from typing import TYPE_CHECKING, Any

from cumtool.formats import SourceBase
from cumtool.formats.csv import dialect

if TYPE_CHECKING:
    import polars as pl

    from cumtool.formats import ColumnHint, CsvReadOptions
    from cumtool.formats.records import Chunker, CountingReader

WIDE_COLUMNS = 8192  # a header with more fields than this takes the wide path
GROUP_COLUMNS = 4096  # columns scanned and written together
JUDGED_BYTES = 1 << 20  # the first rows of a wide file, cut into cells and held
# Its columns are judged from INFER_ROWS rows within this much input (SEMANTICS.md), as a
# narrow file's: the rows after the first MiB are judged a chunk at a time and held as
# their bytes (Python strings would be twenty times their size), cut again when written.
JUDGE_LIMIT = 16 << 20
# A column empty in every judged row: read on (cells held as Python strings, about twenty
# times their bytes) until it holds a value and INFER_ROWS rows from there, up to this.
AHEAD_BYTES = 4 << 20
BATCH_CELLS = 3 << 17  # cells in one batch (at least one record): about 25 MB of str


class WideInput(Exception):  # internal: CsvSource hands a wide input over to WideSource
    """The header of a CSV input is wider than WIDE_COLUMNS: its chunker and first chunk
    (header and first rows, as CsvSource read and checked them)."""

    def __init__(self, chunker: Chunker, sample: bytes, lines: int = 0) -> None:
        super().__init__("a wide input")
        self.chunker = chunker
        self.sample = sample
        self.lines = lines  # the blank lines before the sample (dropped from it)


def is_wide(sample: bytes, delimiter: str) -> bool:
    """Whether the first record of `sample` has more than WIDE_COLUMNS fields."""
    separator = delimiter.encode()
    if sample.count(separator) < WIDE_COLUMNS:  # cheap for every narrow file
        return False
    end = sample.find(b"\n")
    first = sample if end < 0 else sample[:end]
    if b'"' not in first:
        return first.count(separator) + 1 > WIDE_COLUMNS
    from cumtool.formats.csv.csvcells import layout

    fields, _blank = layout(sample, delimiter)
    return int(fields[0]) > WIDE_COLUMNS


class WideSource(SourceBase):
    """Delimited text wider than WIDE_COLUMNS, in batches of records cut into cells (a
    list of rows, each a list of cells: text, or None for an empty unquoted cell, as
    polars reads them on the narrow path)."""

    layout = "wide"
    hints: list[ColumnHint]  # judged from its first MiB
    width: int  # columns in its header
    stored: CountingReader | None = None  # the input as stored (before decompression)

    def __init__(self, handover: WideInput, name: str, options: CsvReadOptions, *,
                 float_columns: bool = False, decimal: bool = False,
                 total_bytes: int | None = None, widen: tuple[int, ...] = ()) -> None:
        import polars as pl

        from cumtool.formats.csv.judge import INFER_ROWS, JUDGE_CELLS, judge_cells

        self.name = name
        self.total_bytes = total_bytes
        self._options = options
        self.na_values = options.na_values  # for a message's --na list
        self._chunker = handover.chunker
        self._delimiter = options.delimiter
        self._pattern = dialect.field_pattern(options.delimiter)
        self.rows_read = 0
        self.markers = list(dict.fromkeys([*options.na_values, ""]))
        sample = handover.sample
        from cumtool.formats.csv.csvcells import RowLines

        # Physical lines before the chunk being read, and where each row starts, for
        # messages: `row 2 (line 3)` (as formats/csv/csv.py).
        self._line = self._chunk_line = handover.lines
        self._rows_at = RowLines()
        del handover
        self._first_start = sample[:1].decode("latin-1")  # for a message's hint
        # Until the header is read, messages name columns by its first line's fields.
        self.column_names = sample.split(b"\n", 1)[0].decode(
            options.encoding or "utf-8", "replace").split(options.delimiter)
        rows = self._records(self._decode(sample, first=True), first=True)
        width = len(rows[0])
        self.width = width
        if options.header:
            header = rows.pop(0)
            self.column_names = ["" if cell is None else cell for cell in header]
        else:
            self.column_names = [str(i + 1) for i in range(width)]
        self._check_widths(rows, first=True)
        self.rows_read = len(rows)
        self._first = rows
        self._first_paused = self._chunker.short  # the input paused (or ended) there
        # Batches of about BATCH_CELLS cells: few records when they are wide.
        self.batch_rows = max(1, BATCH_CELLS // width)
        per_record = len(sample) / max(len(rows) + (1 if options.header else 0), 1)
        self._chunker.chunk_bytes = int(max(64 << 10, per_record * self.batch_rows))
        # Judged: the first INFER_ROWS rows within JUDGE_LIMIT bytes (at least one), the
        # same rows however the input arrives (the sample was read whole, pauses or not,
        # and _judge_on reads on alike); with --line-buffered, the first row.
        from cumtool.formats.csv.csvcells import count_records

        within = count_records(sample, options.delimiter, JUDGE_LIMIT)
        judged = rows[:1 if options.line_buffered else
                      max(1, min(INFER_ROWS, within - (1 if options.header else 0)))]
        # Chunks read on to judge more rows, as their bytes; whether each was read as the
        # batches read one (checked, its lines noted), or is to be read then (one that
        # failed: the batches before it are written first, and it names the fault).
        self._held: list[tuple[bytes, bool, bool]] = []
        self._held_error: BaseException | None = None  # met reading on: raised in turn
        if judged:
            import numpy as np

            cells = [pl.Series([cell for row in judged for cell in row], dtype=pl.String)]
            if not options.line_buffered and len(judged) == len(rows) < INFER_ROWS:
                cells += self._judge_on(INFER_ROWS - len(judged), len(sample))
            # Judged a group of columns at a time: the checks' copies of the cells are a
            # group's, not the whole width's.
            hints = []
            columns = max(1, JUDGE_CELLS // (sum(map(len, cells)) // width))
            for low in range(0, width, columns):
                group = np.arange(low, min(width, low + columns), dtype=np.int64)
                part = pl.concat([piece.gather((np.arange(len(piece) // width, dtype=np.int64)
                                                [:, None] * width + group).ravel())
                                  for piece in cells])
                long = pl.DataFrame({
                    "column": pl.Series(np.tile(group.astype(np.int32),
                                                len(part) // len(group))),
                    "cell": part})
                del part
                hints += judge_cells(long, len(group), {int(c): int(c) - low for c in group},
                                     self.markers, decimal_comma=options.decimal_comma,
                                     float_columns=float_columns, decimal=decimal)
                del long
            self.hints = self._culprits(cells, hints)
            del cells
            empty = [i for i, hint in enumerate(self.hints) if hint.kind == "empty"]
            if empty and not options.line_buffered:
                for i, first_row in self._look_ahead(empty, len(judged)).items():
                    self.hints[i] = self._judge_from(i, first_row, float_columns, decimal)
        else:
            import pyarrow as pa

            from cumtool.formats import ColumnHint

            self.hints = [ColumnHint(pa.int64(), True, "int") for _ in range(width)]
        from cumtool.formats.csv.judge import widened

        self.hints = widened(self.hints, widen)

    def _judge_on(self, wanted: int, read: int) -> list[pl.Series]:
        """The cells, row by row, of up to `wanted` rows after the first chunk, read on
        (kept in self._held) until they are in, the input ends, or JUDGE_LIMIT bytes in
        all were read, however the input comes (a pipe that pauses judges as a file). A
        chunk that does not read (a bad record) ends them."""
        import polars as pl
        import pyarrow as pa

        from cumtool.errors import CumtoolError
        from cumtool.formats.csv.csvcells import check_quotes, count_records
        from cumtool.formats.records import RecordTooLong

        cells: list[pl.Series] = []
        while wanted > 0 and read < JUDGE_LIMIT:
            try:
                chunk = self._chunker.take(self._chunker.chunk_bytes)
            except (OSError, pa.ArrowException, RecordTooLong) as error:
                self._held_error = error  # the batches raise it after the rows before it
                break
            if not chunk:
                break
            paused = self._chunker.short
            limit = JUDGE_LIMIT - read  # its records that end within JUDGE_LIMIT are judged
            read += len(chunk)
            try:
                self._check_nul(chunk)
                check_quotes(self.name, chunk, self._delimiter, self.rows_read,
                             lines_before=self._line)
                text = self._decode(chunk, first=False)
                records, starts = self._cut(text, first=False)
                self._check_widths(records, first=False)
            except CumtoolError:
                self._held.append((chunk, paused, False))
                break
            self._chunk_line = self._line
            self._note_lines(text, starts, first=False)
            self.rows_read += len(records)
            self._held.append((chunk, paused, True))
            taken = records[:min(wanted, count_records(chunk, self._delimiter, limit))]
            wanted -= len(taken)
            cells.append(pl.Series([cell for row in taken for cell in row], dtype=pl.String))
            del records, taken, text
        return cells

    def _held_records(self) -> Iterator[tuple[list[list[str | None]], bool]]:
        """The records of the chunks read on to judge the columns, each once."""
        while self._held:
            chunk, paused, read = self._held.pop(0)
            if read:  # checked, and its lines noted, when it was read
                records = self._cut(self._decode(chunk, first=False), first=False)[0]
                if self._options.ragged:
                    self._check_widths(records, first=False)  # its short records filled
            else:
                records = self._read_chunk(chunk)
            del chunk
            yield records, paused
        if self._held_error is not None:
            error, self._held_error = self._held_error, None
            raise error

    def _read_chunk(self, chunk: bytes) -> list[list[str | None]]:
        """A chunk read after the first: checked, its lines noted, cut into records."""
        from cumtool.formats.csv.csvcells import check_quotes

        self._chunk_line = self._line
        self._check_nul(chunk)
        check_quotes(self.name, chunk, self._delimiter, self.rows_read,
                     lines_before=self._line)
        records = self._records(self._decode(chunk, first=False), first=False)
        self._check_widths(records, first=False)
        self.rows_read += len(records)
        return records

    def _look_ahead(self, empty: list[int], at: int) -> dict[int, int]:
        """As CsvSource._look_ahead: the rows after the `at` judged ones, read on (and kept
        for the batches) until each column of `empty` holds a value and INFER_ROWS rows
        from its first on are in, or the input ends, or AHEAD_BYTES were read (held as
        Python strings here, twenty times their size): where each first holds one."""
        import pyarrow as pa

        from cumtool.formats import unreadable
        from cumtool.formats.csv.judge import INFER_ROWS
        from cumtool.formats.records import RecordTooLong

        rows = self._first
        na = set(self.markers)
        first: dict[int, int] = {}
        read = 0
        held = [entry for entry in self._held if entry[2]]  # read on to judge, and read
        del self._held[:len(held)]
        for chunk, paused, _read in held:
            records = self._cut(self._decode(chunk, first=False), first=False)[0]
            if self._options.ragged:
                self._check_widths(records, first=False)
            rows.extend(records)
            read += len(chunk)
            self._first_paused = paused
        while True:
            for i in empty:
                if i not in first:
                    first_row = next((r for r in range(at, len(rows))
                                      if (c := rows[r][i]) is not None
                                      and c.strip() not in na), None)
                    if first_row is not None:
                        first[i] = first_row
            at = len(rows)
            if (len(first) == len(empty) and all(r + INFER_ROWS <= len(rows)
                                                  for r in first.values())) \
                    or read >= AHEAD_BYTES or self._held:
                return first  # (a chunk held unread: the batches read it, and name its fault)
            if self._held_error is not None:
                return first  # the batches raise it, after the rows before it
            try:
                chunk = self._chunker.take(self._chunker.chunk_bytes)
            except (OSError, pa.ArrowException) as error:
                raise unreadable(self.name, "csv", error) from None
            except RecordTooLong:
                return first  # the batches name the record
            if not chunk:
                return first
            read += len(chunk)
            rows.extend(self._read_chunk(chunk))
            self._first_paused = self._chunker.short

    def _judge_from(self, position: int, first_row: int, float_columns: bool,
                    decimal: bool) -> ColumnHint:
        """The hint of a column empty in every judged row, from INFER_ROWS rows from its
        first value on."""
        import polars as pl

        from cumtool.formats.csv.judge import INFER_ROWS, judge_one

        cells = pl.Series([row[position] for row in self._first[first_row:
                                                                first_row + INFER_ROWS]],
                          dtype=pl.String)
        return judge_one(cells, self.markers, decimal_comma=self._options.decimal_comma,
                         float_columns=float_columns, decimal=decimal,
                         row_line=self.row_line, first_row=first_row)

    def _culprits(self, cells: list[pl.Series], hints: list[Any]) -> list[Any]:
        """The hints, each text column's with its first cell that is not a number
        (`cells`: the judged rows' cells, row by row, in pieces of whole rows)."""
        import polars as pl

        from cumtool.formats.csv.judge import with_culprits

        return with_culprits(
            hints, lambda i: pl.concat([piece.gather_every(self.width, offset=i)
                                        for piece in cells]),
            self.markers, decimal_comma=self._options.decimal_comma, row_line=self.row_line)

    @property
    def bytes_read(self) -> int:
        return self.stored.count if self.stored is not None else self._chunker.bytes_read

    def row_batches(self, rows: int | None = None) -> Generator[list[list[str | None]], None, None]:
        """The records, `rows` (else batch_rows) at a time, across chunk boundaries."""
        size = min(rows or self.batch_rows, self.batch_rows)
        pending: list[list[str | None]] = []
        with contextlib.closing(self._record_lists()) as lists:
            for records, paused in lists:
                pending.extend(records)
                del records
                while len(pending) >= size:
                    yield pending[:size]
                    del pending[:size]
                if paused and pending:  # a slow producer: the rows here go out now
                    yield pending
                    pending = []
        if pending:
            yield pending

    def _record_lists(self) -> Generator[tuple[list[list[str | None]], bool], None, None]:
        """The records of the first chunk, then of each chunk read; and whether the input
        paused (or ended) there: a chunk is cut short only then."""
        import pyarrow as pa

        from cumtool.formats import unreadable
        from cumtool.formats.records import RecordTooLong
        from cumtool.pipeline import prefetch

        first, self._first = self._first, []
        yield first, self._first_paused
        del first
        try:
            yield from self._held_records()
            # Bytes are read (and decompressed) a chunk ahead in a thread; the cells are
            # cut here, so a single batch of them is in memory at a time.
            chunker = self._chunker
            # Whether each chunk was cut short is read in the reader thread, with it.
            read = ((chunk, chunker.short) for chunk in chunker.chunks())
            with contextlib.closing(prefetch(read, depth=1)) as chunks:
                for chunk, paused in chunks:
                    records = self._read_chunk(chunk)
                    del chunk
                    yield records, paused
                    del records
        except (OSError, pa.ArrowException) as error:
            raise unreadable(self.name, "csv", error) from None
        except RecordTooLong as error:
            from cumtool.errors import FormatError
            from cumtool.formats import row_text
            from cumtool.formats.records import shown_size

            cause = " (a quote that is never closed?)" if error.quoted else ""
            where = row_text(self.rows_read + error.before + 1, self._line + error.newlines + 1)
            raise FormatError(
                f"{self.name}: {where} is longer than "
                f"{shown_size(self._chunker.max_record)}{cause}; --max-record-size raises "
                "the limit") from None

    def _where(self, line: int, first: bool, physical: int | None = None) -> str:
        from cumtool.formats import row_text

        if first and self._options.header and line == 0:
            return "the header"
        return row_text(self.rows_read + line + (0 if first and self._options.header else 1),
                        physical)

    def row_line(self, row: int) -> int | None:
        """The line of the file that row `row` (from 0) starts on, if known."""
        return self._rows_at.line(row)

    def locate(self, row: int) -> tuple[str, int, int] | tuple[str, int]:
        """This source's name, row `row` (from 1) and the line it starts on, if known."""
        line = self.row_line(row - 1)
        return (self.name, row) if line is None else (self.name, row, line)

    def _check_nul(self, chunk: bytes) -> None:
        from cumtool.errors import FormatError
        from cumtool.formats.csv.csvcells import place

        nul = chunk.find(b"\0")
        if nul >= 0:
            where = self._where(place(chunk, nul, self._delimiter)[0], first=False,
                                physical=self._chunk_line + chunk.count(b"\n", 0, nul) + 1)
            raise FormatError(f"{self.name}: cannot read as csv: {where} holds a NUL byte "
                              "(a binary file?)")

    def _decode(self, chunk: bytes, first: bool) -> str:
        from cumtool.errors import FormatError
        from cumtool.formats.csv.csvcells import place

        encoding = self._options.encoding
        try:
            return chunk.decode(encoding or "utf-8")
        except UnicodeDecodeError as error:
            line, field = place(chunk, error.start, self._delimiter)
            where = self._where(line, first,
                                self._chunk_line + chunk.count(b"\n", 0, error.start) + 1)
            if where != "the header" and field < len(self.column_names):
                where += f", column {self.column_names[field]!r}"
            bad = chunk[error.start:error.end].hex(" ")
            if encoding:
                raise FormatError(f"{self.name}: {where}: bytes {bad} are not {encoding}"
                                  ) from None
            raise FormatError(
                f"{self.name}: {where}: bytes {bad} are not UTF-8; pass --encoding with the "
                "file's encoding (latin-1, cp1252, ...)") from None

    def _records(self, text: str, first: bool) -> list[list[str | None]]:
        """The records of `text` cut into cells; blank lines dropped; their lines noted."""
        records, starts = self._cut(text, first)
        self._note_lines(text, starts, first)
        return records

    def _cut(self, text: str, first: bool) -> tuple[list[list[str | None]], list[int]]:
        """The records of `text` cut into cells (blank lines dropped), and where each
        starts in it."""
        from cumtool.errors import FormatError

        match = self._pattern.match
        delimiter = self._delimiter
        records: list[list[str | None]] = []
        starts: list[int] = []  # where each record starts in `text`
        row: list[str | None] = []
        position, end = 0, len(text)
        start = 0
        while position < end:
            found = match(text, position)
            if found is None:
                physical = self._chunk_line + text.count("\n", 0, start) + 1
                where = self._where(len(records), first, physical)
                raise FormatError(f"{self.name}: cannot read as csv: {where}: a quote that "
                                  "is never closed")
            quoted, plain, ending = found.groups()
            row.append(dialect.field_text(quoted, plain))
            position = found.end()
            if ending != delimiter:
                if len(row) != 1 or row[0] is not None:  # a blank line is no record
                    records.append(row)
                    starts.append(start)
                row = []
                start = position
        if row:  # the text ended right after a delimiter: an empty last cell
            row.append(None)
            records.append(row)
            starts.append(start)
        return records, starts

    def _note_lines(self, text: str, starts: list[int], first: bool) -> None:
        """Where the records of a chunk (starting at `starts` in its `text`) stand in the
        file, and its line ends counted (as CsvSource._note_lines)."""
        import numpy as np

        newlines = text.count("\n")
        header = 1 if first and self._options.header else 0
        lines = None
        if newlines + (0 if text.endswith("\n") or not text else 1) != len(starts):
            ends = np.array([m.start() for m in re.finditer("\n", text)], dtype=np.int64)
            found = np.searchsorted(ends, np.array(starts, dtype=np.int64))
            lines = found[header:] + (self._chunk_line + 1)
        self._rows_at.add(self.rows_read, self._chunk_line + 1 + header, lines)
        self._line = self._chunk_line + newlines

    def _check_widths(self, records: list[list[str | None]], first: bool) -> None:
        from cumtool.errors import FormatError

        ragged = self._options.ragged
        for at, record in enumerate(records):
            if len(record) < self.width and ragged:  # its missing fields: missing cells
                record.extend([None] * (self.width - len(record)))
            elif len(record) != self.width:
                like = "header" if self._options.header else "first row"
                from cumtool.formats import row_text

                row = self.rows_read + at + 1
                from cumtool.formats.csv.csvcells import dialect_hint

                hint = dialect_hint(self._first_start if first else "", self._options.comment,
                                    ragged, len(record) < self.width)
                raise FormatError(f"{self.name}: {row_text(row, self.row_line(row - 1))} has "
                                  f"{len(record)} field{'' if len(record) == 1 else 's'}, "
                                  f"expected {'at most ' if ragged else ''}{self.width} "
                                  f"like the {like}{hint}")


# Scanning and writing ------------------------------------------------------------------
