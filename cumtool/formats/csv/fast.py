"""Delimited files without polars and pyarrow: the small path's idea (small.py),
streamed. Bytes in, chunks of records cut into cell bounds, the scanned columns parsed,
scanned with the carried state and written as text, bytes out (issue 25, part 3).

It takes what small.py takes (the same options, plain CSV or TSV in and out), from a
regular file or standard input of any size (try_fast), or a small input read whole
(try_small, on one worker), and writes the bytes the streaming path (sources.py,
formats/csv/csv.py, tables.py, formats/csv/csvwrite.py) writes:

- the columns are judged, named and selected exactly as small.py does, from the first
  INFER_ROWS rows (their cells' bounds judged by small.judge_cut, then
  small.select_scanned), before anything is written; a column empty in all of them from
  INFER_ROWS rows from its first value on (read ahead, up to AHEAD_BYTES);
- then the file is read in blocks of CHUNK_BYTES, cut into records (`cut`: cell bounds
  and whether a cell was quoted, as small._cut reads cells), the scanned columns parsed
  (numtext: float() and int(), correctly rounded), scanned block after block with the
  carried state (kernels.scan_block), written as polars writes numbers (numtext), and
  every other cell copied byte for byte, quoted where small._write quotes it (`assemble`).

Whatever small.py hands over on, this path is unsure of too: a stray quote, a lone CR, a
NUL, bytes that are not UTF-8, a ragged row, a cell that is not the column's number, an
overflow, an option it does not implement. Found before the first block is written, the
run goes to the streaming path as if this one had never looked. Found later, the output
so far is exactly what the streaming path writes first: a file output (written to a
temporary file) is dropped and the streaming path runs from the start; standard output
is handed to the streaming path, rerun from the start, with the bytes already written
skipped, so that the output and any error are the streaming path's own.

The run is driven by the runner's loop (runner.run_engine: the job's pieces -> apply ->
sink, through runner.scan_batches and write_all, as every table run), which also hands
it to the streaming path. The rows run in one compiled pipeline where the run fits it
(`_ext/_csvtext.c`'s Pipeline: the plain accumulating ops and the running statistics on
int64 and float64 to CSV, --by, --skipna, --exclusive and --overflow wrap too): Python
calls it once, and a pool of --threads threads cuts, parses, scans (in chunk order, the
one serial step) and formats chunks of whole records without the GIL, which is taken
only to read the input and hand out each chunk's output. Elsewhere (--period, --share,
JSON Lines out, --compensated, ewma --times, a --dtype cast, ...) the job runs the steps
itself: its pieces cut ahead on its workers, apply scans each in order, its sink renders
them on the workers and writes them in order; cut and assemble in C without the GIL
where built, in Python otherwise (cut_py, assemble_py). The steps are the pipeline's
Python twin: tests/test_pipeline.py and tests/test_pipeline_options.py hold the two to
the same bytes, and tests/test_fastcsv.py both to the streaming path's.
"""

from __future__ import annotations

import contextlib
import io
import os
import stat
import tempfile
from collections import deque
from collections.abc import Callable, Generator, Iterator
from typing import IO, TYPE_CHECKING, Any, NamedTuple, cast

import numpy as np

from cumtool import grouped, kernels, native, numtext
from cumtool.errors import CumtoolError, DataError, option
from cumtool.formats import BOM, PrefixedStream, records
from cumtool.formats.csv import dialect, small, wide
from cumtool.formats.csv.small import TEXT, Handover
from cumtool.formats.jsonl import lines
from cumtool.output import open_output, spool_error, staged_output
from cumtool.pipeline import written_into
from cumtool.remote import is_url
from cumtool.request import Request

if TYPE_CHECKING:
    from concurrent.futures import Future

CHUNK_BYTES = 4 << 20  # read at a time, and a block's size at most
STDIN_SPOOL_BYTES = 1 << 30  # standard input kept for a hand-over, at most
IN_FLIGHT_BYTES = 4 << 20  # the blocks in flight, together (each costs ~8x its size)
MAX_WORKERS = 16
MAX_IN_FLIGHT = 12  # blocks being cut or rendered at once, whatever the thread count
CHUNK_ROWS = 1 << 14  # rows cut, scanned and written at a time (their cells stay in cache)
CHUNK_CELLS = 1 << 20  # at most, cells cut at a time (17 bytes of bounds each)
HEAD_CELLS = 1 << 20  # at most, cells judged (one Python string each); wider: handed over
HEAD_LIMIT = 8 << 20  # the rows judged must lie within this (the streaming path: 16 MiB)
# A column empty in every judged row: read on (held) to its first value and INFER_ROWS
# rows from there, up to this; further, the streaming path reads on (to 64 MiB).
AHEAD_BYTES = 32 << 20
_INT64 = np.dtype(np.int64)
_FLOAT64 = np.dtype(np.float64)
CUT_DONE, CUT_FULL, CUT_UNSURE = range(3)  # cut's status


COMPILED = True  # the compiled pipeline where it fits (tests turn it off: its Python twin)
PIPELINE_CHUNK_BYTES = 1 << 20  # the compiled pipeline's chunks: whole records, about this
_PIPELINE_OPS = {"cumsum": 0, "cumprod": 1, "cummax": 2, "cummin": 3,  # _csvtext's codes
                 "logcumsumexp": 4}
# The running statistics the pipeline's serial step computes, by _csvtext's code, with
# the output dtype it writes (None: the column's own): cumtool/stats.py's kernels' steps
# in C, the same float operations in the same order.
_PIPELINE_STATS: dict[str, tuple[int, np.dtype | None]] = {
    "cumcount": (5, _INT64), "cummean": (6, _FLOAT64), "diff": (7, None),
    "cumvar": (8, _FLOAT64), "cumstd": (9, _FLOAT64), "ewma": (10, _FLOAT64)}
# A scan's options, as bits of _csvtext's (its SCAN_* flags): --skipna (a float64 column's
# NaN skipped, kept in place), --exclusive, --overflow wrap (int64 sums, products, diffs)
_SKIPNA, _EXCLUSIVE, _WRAP = 1, 2, 4
# ewma's weights change with the count until they settle (in float64); the pipeline takes
# them settled within this many counts (a tiny alpha takes longer: the Python steps')
EWMA_SETTLED = 1 << 16


def run(request: Request, stdin: IO[bytes] | None) -> tuple[bool, IO[bytes] | None]:
    """The CSV format's own engine for a whole run, where the run fits it (the registry's
    Format.engine): a small input read whole, else the compiled pipeline. (True, None)
    when done; else (False, standard input as it was, or None) for the streaming runner.
    `stdin`: standard input as another engine left it, or None."""
    done = False
    if stdin is None:
        done, stdin = try_small(request)
    if not done:
        done, stdin = try_fast(request, stdin)
    return done, stdin


def try_small(request: Request) -> tuple[bool, IO[bytes] | None]:
    """Run `request` on an input of at most small.SMALL_BYTES, read whole: (True, None)
    when done; else (False, standard input to read instead of sys.stdin, when this read
    some of it). It goes through this path on one worker (no thread pool: start-up is
    most of a small run's time); where it hands over, the streaming path takes it."""
    if not small.options_fit(request):
        return False, None
    try:
        data, stdin = small.read_small(request)
    except Handover:
        return False, None
    if data is None:
        return False, stdin
    rendered = render_whole(request, data)
    if rendered is None:
        return False, stdin
    with open_output(request.output) as stream:
        stream.write(rendered)
    return True, None


def render_whole(request: Request, data: bytes) -> bytes | None:
    """The output of `request` on `data` (all of the input) on one worker, through the
    runner's loop into memory; None where this path hands over."""
    from cumtool import runner

    try:
        with contextlib.closing(_Job(request, io.BytesIO(data), workers=1, whole=True)
                                ) as job, contextlib.ExitStack() as stack:
            if request.share:  # a first pass for the final values
                job.finals = _finals(request, io.BytesIO(data), workers=1)
            rendered = io.BytesIO()
            runner.scan_batches(job, job.pieces, job.sink(rendered), False, stack)
            return rendered.getvalue()
    except (Handover, CumtoolError):
        return None


def try_fast(request: Request, stdin: IO[bytes] | None) -> tuple[bool, IO[bytes] | None]:
    """Run `request` on this path if it fits: (True, None) when done, else (False, a
    stream of standard input as it was, for the streaming path, or None)."""
    if not small.options_fit(request):
        return False, stdin
    # A device, a FIFO or a descriptor (/dev/stdout) is written in place: no going back.
    if (request.output not in (None, "-") and not staged_output(request.output)
            and not is_url(request.output)):
        return False, stdin
    from cumtool import sources

    if request.input == "-":
        return _from_stdin(request, stdin)
    try:
        info = os.stat(request.input)
    except (OSError, ValueError):
        return False, stdin
    if not stat.S_ISREG(info.st_mode) or info.st_size <= small.SMALL_BYTES:
        return False, stdin  # not a file; or small, and try_small handed it over already
    finals = None
    if request.share:  # a first pass over the file for the final values
        with contextlib.ExitStack() as stack:
            try:
                finals = _finals(request, sources.open_path(request.input, stack))
            except (Handover, CumtoolError):
                return False, stdin  # the streaming path takes it, or words the error
    with contextlib.ExitStack() as stack:
        try:
            stream = sources.open_path(request.input, stack)
        except CumtoolError:
            return False, stdin  # the streaming path words it
        return _run(request, stream, lambda _rows: stdin, finals)


def _finals(request: Request, stream: IO[bytes], workers: int | None = None
            ) -> dict[tuple[int, str], np.ndarray]:
    """--share's first pass: every group's final value by (column, op), from the scan
    without --exclusive (the whole total); nothing is written."""
    import dataclasses

    with contextlib.closing(_Job(dataclasses.replace(request, exclusive=False), stream,
                                 workers)) as job:
        job.tracking = True
        for piece in job.pieces():
            job.apply(piece)
        return job.finals


def _from_stdin(request: Request, stdin: IO[bytes] | None
                ) -> tuple[bool, IO[bytes] | None]:
    """Standard input, kept in an (unlinked) temporary file as it is read, so that the
    streaming path can read it again from the start if this path hands over."""
    from cumtool import sources

    if stdin is None:
        try:
            stdin = sources.stdin_stream()
        except CumtoolError:
            return False, None  # the streaming path words it
    try:
        spool = tempfile.TemporaryFile(prefix="cumtool-stdin-")
    except OSError:
        return False, stdin
    tee = _Tee(stdin, spool)

    def replay(rows: int) -> IO[bytes]:
        if not tee.dropped:
            try:
                spool.flush()
            except OSError as error:  # what the buffer held could not be written either
                tee.dropped, tee.failure = True, error
        if tee.dropped and tee.failure is not None and not rows:
            # before a row was scanned (another format's input, say): the disk's failure
            raise spool_error(tee.failure)
        if tee.dropped:
            raise DataError(
                f"standard input: a record after row {rows:,} needs the general CSV reader, "
                f"and standard input, kept to hand it over, was let go (past "
                f"{records.shown_size(STDIN_SPOOL_BYTES)}, or TMPDIR is full); run again with "
                f"{option('batch_rows')} 65536 (the general reader from the start)")
        spool.seek(0)
        # The general path sniffs SNIFF_BYTES at once (peek): a smaller buffer would show
        # it less of the first line than it sees of a pipe, and it could judge otherwise.
        return io.BufferedReader(PrefixedStream(spool, stdin), small.SNIFF_BYTES)

    return _run(request, tee, replay)


class _Tee:
    """A stream that copies what is read from it into `spool`, up to STDIN_SPOOL_BYTES:
    past that, or where it cannot be written, the spool is let go (`dropped`), so that an
    endless pipe does not fill the disk; a late hand-over is then an error instead."""

    def __init__(self, stream: IO[bytes], spool: IO[bytes]) -> None:
        self._stream = stream
        self._spool = spool
        self._kept = 0
        self.dropped = False
        self.failure: OSError | None = None  # why the spool could not be written

    def read(self, size: int) -> bytes:
        return self._keep(self._stream.read(size))

    def read1(self, size: int) -> bytes:
        read1 = getattr(self._stream, "read1", self._stream.read)
        return self._keep(read1(size))

    def fileno(self) -> int:
        return self._stream.fileno()

    def _keep(self, data: bytes) -> bytes:
        if data and not self.dropped and self._kept + len(data) > STDIN_SPOOL_BYTES:
            self.dropped = True
            with contextlib.suppress(OSError):
                self._spool.close()  # unlinked already: its blocks are freed
        if data and not self.dropped:
            self._kept += len(data)
            try:
                self._spool.write(data)
            except OSError as error:  # a full disk, a file size limit: on without it
                self.dropped, self.failure = True, error
                with contextlib.suppress(OSError):
                    self._spool.close()
        return data


def _run(request: Request, stream: IO[bytes] | _Tee,
         replay: Callable[[int], IO[bytes] | None],
         finals: dict[tuple[int, str], np.ndarray] | None = None
         ) -> tuple[bool, IO[bytes] | None]:
    """The run on `stream`, under the runner's loop (runner.run_engine); `replay(rows
    scanned)` gives standard input again, from the start, when the streaming path takes
    over. `finals`: --share's, from _finals."""
    from cumtool import runner

    try:
        job = _Job(request, stream)
    except (Handover, CumtoolError):
        return False, replay(0)  # the streaming path takes it, or words the error
    if finals is not None:
        job.finals = finals
    job.lending = True  # each piece is written before the next is asked for
    return runner.run_engine(request, job, replay)


class _Job:
    """One run: the input judged and planned from its head; then its output, piece by
    piece."""

    def __init__(self, request: Request, stream: IO[bytes] | _Tee,
                 workers: int | None = None, whole: bool = False) -> None:
        self.stream = stream
        # A small input read whole: its results of any dtype are written here, the rarer
        # ones (float32, float16, bool, uint64 past int64) a cell at a time in Python.
        self.whole = whole
        if workers is None:
            workers = min(native.CORES, MAX_WORKERS)
            if workers > 1:  # one more than the cores: the main thread mostly waits
                workers += 1
        self.workers = workers
        self.rows_scanned = 0  # in order: every row before them is in the output's text
        # pieces() may yield views of the compiled pipeline's text, each valid until the
        # next is asked for: for a caller that writes each piece at once (_run)
        self.lending = False
        self.pipe: Any = None  # the compiled pipeline, while its chunks are being asked for
        self.pool: Any = None  # the worker threads of the Python steps (_pool)
        self.eof = False
        data = self._read()
        while len(data) < small.SNIFF_BYTES and not self.eof:  # what the general path sniffs
            data += self._read()
        kind = small.input_kind(request, data)
        out = small.output_kind(request, kind, json_lines=True)
        # JSON Lines out: every column a result, written as JsonlSink writes numbers
        self.json = out.format == small.JSON_LINES
        if self.json and request.out_delimiter is not None:
            raise Handover  # the streaming path says what it makes of it
        read = request.csv_read(kind.format)
        write = request.csv_write(out.format)
        for delimiter in (read.delimiter, write.delimiter):
            if len(delimiter) != 1 or not delimiter.isascii() or delimiter in '"\r\n':
                raise Handover
        self.delimiter = read.delimiter
        self.out_delimiter = write.delimiter
        dtype = kernels.parse_dtype(request.dtype) if request.dtype is not None else None
        if dtype is not None and dtype.kind == "c":
            raise Handover
        data = data.removeprefix(BOM)
        while not self.eof and not data.lstrip(b"\r\n").strip():
            data += self._read()
        data = data.lstrip(b"\r\n")
        if not data.strip():
            raise Handover  # empty: the streaming path words it
        data, self.width = self._width(data)
        # The head: the header and INFER_ROWS rows, judged as small.py judges them. Cut
        # on from where the last cut stopped, in blocks that bound the arrays' size.
        head_rows = wanted = small.INFER_ROWS + (1 if read.header else 0)
        end = 0
        while wanted:
            starts, ends, flags = self._arrays(min(wanted, self._block_rows()))
            rows, end, status = cut(data, end, self.delimiter, self.width, self.eof,
                                    starts, ends, flags)
            wanted -= rows
            if status == CUT_UNSURE or end > HEAD_LIMIT:
                raise Handover
            if (head_rows - wanted) * self.width > HEAD_CELLS:
                raise Handover  # a wide head (below): known before it is all cut
            if status == CUT_DONE:
                if self.eof:
                    break
                if len(data) > HEAD_LIMIT:
                    raise Handover  # long records: the streaming path's
                data += self._read()
        judged = head_rows - wanted
        if judged * self.width > HEAD_CELLS:
            raise Handover  # a wide head: its cells' bounds (and notes' text) cost memory
        # Rows' least length, guessed from the head's (half their average, and a row holds
        # at least its delimiters and a LF): sizes cell arrays without counting LFs.
        self.row_bytes = max(self.width, end // max(1, judged) // 2)
        # The head cut again in one piece, its cells judged where they lie.
        starts, ends, flags = self._arrays(max(1, judged))
        cut(data, 0, self.delimiter, self.width, self.eof, starts, ends, flags)
        first = 1 if read.header else 0
        if read.header:
            names = [records.cut_cell_text(data, int(starts[j, 0]), int(ends[j, 0]),
                                     int(flags[j, 0])) for j in range(self.width)]
        else:
            names = [str(j + 1) for j in range(self.width)]
        markers = set(read.na_values) | {""}
        floats = dtype is not None and dtype.kind == "f"
        hints = [small.judge_cut(data, starts[j, first:judged], ends[j, first:judged],
                                 flags[j, first:judged], markers, floats)
                 for j in range(self.width)]
        ahead: dict[int, tuple[np.ndarray, np.ndarray, np.ndarray]] = {}
        empty = [j for j, hint in enumerate(hints) if hint.empty]
        if empty and not wanted:
            # A column empty in every judged row is judged from INFER_ROWS rows from its
            # first value on, as the streaming path (formats/csv/csv.py) judges it.
            data, ahead = self._look_ahead(data, end, empty, markers)
            for j, (s, e, f) in ahead.items():
                hints[j] = small.judge_cut(data, s, e, f, markers, floats)
        self.keys = small.key_columns(request, names)
        self.time_at = self._time_column(request, names, hints)
        structural = self.keys + ([self.time_at] if self.time_at is not None else [])
        selected = small.select_scanned(request, names, hints, structural)

        def judged_cells(j: int) -> list[str | None]:
            s, e, f = ahead.get(j) or (starts[j, first:judged], ends[j, first:judged],
                                       flags[j, first:judged])
            # the codes the rule itself reads (numtext.left_out_numbers): a missing
            # marker (NA) is neither a number nor text there
            codes, _places = numtext.cell_kinds(data, s, e, f,
                                                numtext.marker_bytes(markers))
            others = np.flatnonzero((codes & numtext.CELL_KIND) == numtext.CELL_OTHER)
            present = int(np.count_nonzero(codes != numtext.CELL_MISSING))
            if 2 * (present - len(others)) < present:
                # Not half numbers: not mostly numbers either, and not numbers as a
                # spreadsheet formats them ('1,234') unless its first text cell is one.
                k = int(others[0])
                if not numtext.formatted_number(records.cut_cell_text(
                        data, int(s[k]), int(e[k]), int(f[k]))):
                    return []
            return [None if a == b and not c else records.cut_cell_text(data, a, b, c)
                    for a, b, c in zip(s.tolist(), e.tolist(), f.tolist(), strict=True)]

        if next(small.noted(request, hints, selected, self.keys, judged_cells, markers),
                None) is not None:  # (column 0 is falsy: not any())
            raise Handover  # the streaming path says which, where, and how to scan it
        del starts, ends, flags
        self.groups = grouped.CellKeys(len(self.keys)) if self.keys else None
        # --share: each group's final value by (column, op); the first pass (tracking)
        # finds them, the second divides by them.
        self.share = request.share
        self.tracking = False
        self.finals: dict[tuple[int, str], np.ndarray] = {}
        # --period: each row's group is its keys' and its period's, numbered as pairs.
        self.period = request.period_of()
        self.pairs: Any = None
        if self.time_at is not None:
            self.pairs = (native.SEQUENTIAL.KeyTable(16) if native.SEQUENTIAL is not None
                          else {})
        self.markers = markers
        self._plan(request, names, hints, selected, dtype)
        by_sink = bool(write.na_rep) or len(self.columns) == 1
        self.by_sink = by_sink
        self.single = len(self.columns) == 1
        self.null = self._quote(write.na_rep).encode() if by_sink else b""
        self.header = (write.delimiter.join(self._quote(name) for name, _ in self.columns)
                       + "\n").encode() if write.header and not self.json else b""
        self.keys_text = [lines.key_text(name) for name, _ in self.columns] if self.json else []
        self.data = data
        # Where the rows start: past the header, if any.
        self.begin = 0
        if read.header:
            starts, ends, flags = self._arrays(1)
            _rows, self.begin, _status = cut(data, 0, self.delimiter, self.width, self.eof,
                                             starts, ends, flags)

    def _look_ahead(self, data: bytes, end: int, empty: list[int], markers: set[str]
                    ) -> tuple[bytes, dict[int, tuple[np.ndarray, np.ndarray, np.ndarray]]]:
        """The input read on from byte `end` (past the judged rows) until each column of
        `empty` holds a value and INFER_ROWS rows from there are in, or the input ends:
        the data read, and each such column's cell bounds from its first value on. Past
        AHEAD_BYTES unresolved, the streaming path takes the run (it reads on further)."""
        found: dict[int, list[tuple[np.ndarray, np.ndarray, np.ndarray]]] = {}
        counts: dict[int, int] = {}
        while True:
            starts, ends, flags = self._arrays(self._block_rows())
            rows, end, status = cut(data, end, self.delimiter, self.width, self.eof,
                                    starts, ends, flags)
            if status == CUT_UNSURE:
                raise Handover
            for j in empty:
                s, e, f = starts[j, :rows], ends[j, :rows], flags[j, :rows]
                if j not in found:
                    held = next((r for r in np.flatnonzero((e > s) | (f != 0)).tolist()
                                 if records.cut_cell_text(data, int(s[r]), int(e[r]),
                                                          int(f[r])).strip() not in markers),
                                None)
                    if held is None:
                        continue
                    found[j], counts[j] = [], 0
                    s, e, f = s[held:], e[held:], f[held:]
                take = min(len(s), small.INFER_ROWS - counts[j])
                if take > 0:
                    found[j].append((s[:take].copy(), e[:take].copy(), f[:take].copy()))
                    counts[j] += take
            if len(found) == len(empty) and min(counts.values()) >= small.INFER_ROWS:
                break
            if status == CUT_DONE:
                if self.eof:
                    break
                if len(data) > AHEAD_BYTES:
                    raise Handover
                data += self._read()
        return data, {j: (np.concatenate([p[0] for p in pieces]),
                          np.concatenate([p[1] for p in pieces]),
                          np.concatenate([p[2] for p in pieces]))
                      for j, pieces in found.items()}

    def _read(self) -> bytes:
        """What the input has ready, up to CHUNK_BYTES (waiting only while it has none:
        a pipe that pauses still has its first rows judged and written)."""
        read1 = getattr(self.stream, "read1", self.stream.read)
        piece = read1(CHUNK_BYTES)
        if not piece:
            self.eof = True
        return piece

    def _width(self, data: bytes) -> tuple[bytes, int]:
        """The data read on to the end of the first record, and its fields (read as
        small.py reads them)."""
        at = -1
        while True:
            at = data.find(b"\n", at + 1)
            while at < 0 and not self.eof:
                data += self._read()
                at = data.find(b"\n")
                if len(data) > records.MAX_RECORD_BYTES:
                    raise Handover
            if at < 0 or not dialect.quoted_before(data, at):
                break
        first = data if at < 0 else data[:at + 1]
        try:
            first.decode("utf-8")
        except UnicodeDecodeError:
            raise Handover from None
        width = len(small.records(first, self.delimiter, False)[0])
        if not 0 < width <= wide.WIDE_COLUMNS:
            raise Handover  # the wide path's
        return data, width

    def _block_rows(self) -> int:
        """Rows cut at a time: CHUNK_ROWS, fewer in wide files (CHUNK_CELLS cells)."""
        return max(1, min(CHUNK_ROWS, CHUNK_CELLS // self.width))

    def _arrays(self, rows: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        return (np.empty((self.width, rows), np.int64), np.empty((self.width, rows), np.int64),
                np.empty((self.width, rows), np.uint8))

    def _plan(self, request: Request, names: list[str], hints: list[Any],
              selected: list[int], dtype: np.dtype | None) -> None:
        """The output's columns, as the streaming path lays them out, and the scans."""
        ops = self.ops = request.ops
        scan = request.scan_options()
        repeated = {n for n in names if names.count(n) > 1}

        def label(i: int) -> str:
            return f"{names[i]!r} (column {i + 1})" if names[i] in repeated else repr(names[i])

        self.scans: dict[tuple[int, str], tuple[Any, Any]] = {}
        self.parse: dict[int, np.dtype] = {}
        # Markers that read as numbers (--na -999): by dtype, their values; a cell that
        # parses to one is missing where its text is the marker.
        self.numeric_markers: dict[np.dtype, np.ndarray] = {}
        for i in selected:
            source = hints[i].dtype
            assert source is not None
            numeric = [value for value in (small.number(marker.strip(), source)
                                           for marker in self.markers) if value is not None]
            if numeric:
                self.numeric_markers[source] = np.array(numeric, source)
            self.parse[i] = source
            for op in ops:
                spec = kernels.make_spec(op, source, dtype, what=f"column {label(i)}", **scan)
                out = spec.out_dtype
                if out not in (_INT64, _FLOAT64) and (self.json or not (
                        self.whole or _as_int64(out))):
                    raise Handover  # not written as int64: a cell at a time, small inputs only
                self.scans[i, op] = (spec, grouped.GroupCarry(spec)
                                     if self.keys or self.time_at is not None
                                     else kernels.initial_carry(spec))
        keep = request.keep or len(ops) > 1
        columns: list[tuple[str, Any]] = []  # (name, an input column or (column, op))
        if not keep:
            for i, name in enumerate(names):
                if i in self.parse:
                    columns.append((name, (i, ops[0])))
                elif not request.only_scanned:
                    columns.append((name, i))
        else:
            columns = [(name, i) for i, name in enumerate(names)
                       if not request.only_scanned or i in self.parse]
            taken = set(names)
            for op in ops:
                if any(f"{names[i]}_{op}" in taken for i in selected):
                    raise Handover  # tables.py words the clash
            for i in selected:
                columns.extend((f"{names[i]}_{op}", (i, op)) for op in ops)
        if not columns:
            raise Handover
        if self.json and len({name for name, _ in columns}) < len(columns):
            raise Handover  # a key twice: the streaming path's
        self.columns = columns

    def _quote(self, text: str) -> str:
        """small._write's quote: CsvSink's, for names and --na-rep."""
        return dialect.quote(text, self.out_delimiter, len(self.columns) == 1)

    # The rows --------------------------------------------------------------------------

    def pieces(self) -> Generator[Any, None, None]:
        """What the runner's loop reads (runner.run_engine: pieces -> apply -> sink): the
        compiled pipeline's chunks, cut, scanned and formatted already (_run_compiled);
        else the input's pieces, cut and parsed, for `apply` to scan in order and the
        sink to render.

        The input is split into blocks of whole records (`_blocks`); each block is cut
        and its scanned columns parsed on a worker (`_cut`) ahead of the loop. The C loops
        release the GIL, so blocks are cut and rendered on every core at once (a worker a
        core, and one more: 2M x 8 on 2 cores, 1.1 s wall instead of 1.3); at most
        MAX_IN_FLIGHT blocks are cut or rendered at once, half here and half in the sink,
        which bounds memory. A block after which the input paused (a pipe whose producer
        waits) is not read past until its rows are out: its last piece says so."""
        compiled = self._compiled()
        if compiled is not None:
            yield from self._run_compiled(compiled)
            return
        # Each op adds a result and its text per scanned column: smaller blocks for more.
        # Blocks as on 2 cores (3 workers) at any thread count, and at most MAX_IN_FLIGHT
        # of them at once: a block costs GIL-held work and hand-offs whatever its size,
        # and blocks that shrank as workers were added multiplied that cost on many
        # cores (benchmarks/RESULTS-cores.md).
        size = max(1, min(CHUNK_BYTES,
                          IN_FLIGHT_BYTES // (2 * min(self.workers, 3) * len(self.ops))))
        blocks = self._blocks(size)
        if self.workers == 1:
            for block, paused in blocks:
                yield from _marked(self._cut(block), paused)
            return
        pool = self._pool()
        ahead = max(1, self._flight() // 2)
        cutting: deque[tuple[Future[list[_Piece]], bool]] = deque()
        more = True
        try:
            while True:
                # Not past a block after which the input paused: its rows go out first.
                while more and len(cutting) < ahead and not (cutting and cutting[-1][1]):
                    try:
                        block, paused = next(blocks)
                    except StopIteration:
                        more = False
                    else:
                        cutting.append((pool.submit(self._cut, block), paused))
                if not cutting:
                    return
                future, paused = cutting.popleft()
                yield from _marked(future.result(), paused)
        finally:
            for future, _paused in cutting:
                future.cancel()

    def apply(self, item: Any) -> Any:
        """A piece's rows scanned with the carried state, in order (the one serial step):
        the piece and its results, for the sink to render. The compiled pipeline's chunks
        come scanned and written as text already."""
        if isinstance(item, _Piece):
            return item, self._scan(item)
        return item

    def sink(self, stream: IO[bytes]) -> _TextSink:
        """The writer of what `apply` gives to `stream`, the header first."""
        return _TextSink(self, stream)

    def _flight(self) -> int:
        return min(2 * self.workers, MAX_IN_FLIGHT)

    def _pool(self) -> Any:
        """The job's worker threads (cutting here, rendering in the sink); one-worker
        jobs have none."""
        if self.pool is None:
            from concurrent.futures import ThreadPoolExecutor  # loaded only for a pool

            self.pool = ThreadPoolExecutor(self.workers)
        return self.pool

    def close(self) -> None:
        if self.pool is not None:
            self.pool.shutdown(wait=True, cancel_futures=True)
            self.pool = None

    def _compiled(self) -> dict[str, Any] | None:
        """The plan of the compiled pipeline (_csvtext.Pipeline: every step of pieces()
        in C, on a pool of threads that never takes the GIL), where this run fits it: the
        plain accumulating ops and the running statistics (_compiled_stat) on int64 or
        float64 to CSV (logcumsumexp of int64 in float64), --by too, with --skipna,
        --exclusive and (int64) --overflow wrap; else None, and pieces() runs the steps
        itself (its Python twin: the same bytes, tests/test_pipeline.py and
        tests/test_pipeline_options.py). What falls back:
        JSON Lines out, --period, --share, markers that read as numbers, a --dtype cast
        (or any other dtype), cumsum --compensated, and _compiled_stat's."""
        pipeline = getattr(TEXT, "Pipeline", None)
        if (pipeline is None or not COMPILED or self.json or self.time_at is not None
                or self.share or self.numeric_markers):
            return None
        parsed = list(self.parse)
        scans: list[tuple[int, int, Any, int]] = []
        for i, op in self.scans:
            spec, _carry = self.scans[i, op]
            source = self.parse[i]
            if spec.op in _PIPELINE_STATS:
                stat = self._compiled_stat(spec, source)
                if stat is None:
                    return None
                scans.append((parsed.index(i), *stat, _options(spec, source)))
                continue
            code = _PIPELINE_OPS.get(spec.op)
            # logcumsumexp accumulates int64 cells as float64 (kernels.to_acc; the
            # pipeline casts them as it scans)
            acc = _FLOAT64 if spec.op == "logcumsumexp" and source == _INT64 else source
            if (code is None or spec.is_stat or spec.indices
                    or any(value for _name, value in spec.params)
                    or not spec.source_dtype == spec.in_dtype == source
                    or not spec.acc_dtype == spec.out_dtype == acc):
                return None
            scans.append((parsed.index(i), code, spec.identity.item(),
                          _options(spec, source)))
        order = list(self.scans)
        columns = [(column, -1) if isinstance(column, int) else (-1, order.index(column))
                   for _name, column in self.columns]
        return {"parse": [(i, self.parse[i] == _INT64) for i in parsed], "scans": scans,
                "columns": columns, "keys": list(self.keys)}

    @staticmethod
    def _compiled_stat(spec: Any, source: np.dtype) -> tuple[int, Any] | None:
        """_csvtext's code of a running statistic the pipeline computes as its kernel
        does (--skipna, --exclusive and diff's --overflow wrap included: _options), and
        what its scan starts from (its zeros but for: cumvar's and cumstd's ddof; ewma's
        weights, as the kernel's tables give them); or None where the spec asks for what
        only the kernel does: --compensated, ewma --times or weights that do not settle
        within EWMA_SETTLED counts, a --dtype cast, another output dtype."""
        code, out = _PIPELINE_STATS[spec.op]
        params = dict(spec.params)
        if (spec.indices or params.get("compensated")
                or params.get("halflife_ns") is not None
                or source not in (_INT64, _FLOAT64)
                or not spec.source_dtype == spec.in_dtype == source
                or spec.out_dtype != (source if out is None else out)):
            return None
        if spec.op in ("cumvar", "cumstd"):
            return code, int(params["ddof"])
        if spec.op == "ewma":
            new, after, old, total = spec.kernel.tables(spec, EWMA_SETTLED)
            if after.shape[0] > EWMA_SETTLED:
                return None  # not known to have settled: the last entry would not hold
            return code, (float(new), old.tolist(), total.tolist())
        return code, 0

    def _run_compiled(self, plan: dict[str, Any]) -> Iterator[bytes]:
        """pieces() by the compiled pipeline: its chunks' output in order; Handover
        where it stopped on what the Python steps word or hand over."""
        head = self.data[self.begin:]
        del self.data
        stream = cast(IO[bytes], self.stream)
        read = getattr(stream, "read1", stream.read)
        fd = records.input_fd(stream)
        steady = records.input_steady(fd)
        # A file opened here (not a decompressor's stream, nor standard input's spool):
        # the pool reads its blocks at once, from the first row on (the head's bytes are
        # the file's up to where this stream got to), so that the head is cut into
        # chunks like the rest.
        in_fd = (fd if fd is not None and steady and type(stream) is io.BufferedReader
                 and type(stream.raw) is io.FileIO else -1)
        whole_file = in_fd >= 0
        start = stream.tell() - len(head) if whole_file else 0
        assert TEXT is not None  # _compiled found it
        pipe = TEXT.Pipeline(
            b"" if whole_file else bytes(head), read, lambda: records.input_ready(fd),
            self.delimiter, self.width, self.out_delimiter, plan["parse"], plan["scans"],
            plan["columns"], sorted(marker.encode() for marker in self.markers), self.null,
            self.by_sink, self.single, self.workers, PIPELINE_CHUNK_BYTES, records.MAX_RECORD_BYTES,
            readinto=getattr(stream, "readinto1", None), views=self.lending,
            keys=plan["keys"], flush=records.FLUSH_SECONDS, cores=native.usable_cores(),
            steady=steady, in_fd=in_fd, in_offset=start)
        try:
            self.pipe = pipe  # the sink may have it write the rest to a file itself
            yield from pipe
            self.pipe = None
            self.rows_scanned = pipe.rows
            if pipe.status:
                raise Handover  # the Python steps word it, from the start
        finally:
            pipe.close()

    def _blocks(self, size: int) -> Iterator[tuple[bytes, bool]]:
        """The input from the first row on, in blocks of whole records of about `size`
        bytes (records.Chunker, the streaming path's), each with whether the input
        paused after it (a pipe whose producer waits: the rows so far go out first)."""
        head = self.data[self.begin:]
        del self.data
        stream = PrefixedStream(head, cast(IO[bytes], self.stream))
        chunker = records.Chunker(cast(IO[bytes], stream), size,
                                  lone_cr=False)  # the head's lines end with a LF
        try:
            for block in chunker.chunks():
                yield block, chunker.short or not chunker.more_is_ready()
        except records.RecordTooLong:
            raise Handover from None  # the streaming path names the record

    def _cut(self, block: bytes) -> list[_Piece]:
        """A block's records cut into cells, its scanned columns parsed (on a worker)."""
        pieces = []
        begin = 0
        # Bounds for about the rows the block holds, not more: untouched arrays still cost
        # memory (huge pages), and every worker has blocks in flight. Shorter rows than
        # guessed fill the arrays: the block then goes on in another piece.
        rows_each = min(self._block_rows(), len(block) // self.row_bytes + 1)
        while True:
            starts, ends, flags = self._arrays(rows_each)
            rows, end, status = cut(block, begin, self.delimiter, self.width, True,
                                    starts, ends, flags)
            if status == CUT_UNSURE:
                raise Handover
            if rows:
                numbers = {i: self._numbers(block, starts[i, :rows], ends[i, :rows],
                                            flags[i, :rows], source)
                           for i, source in self.parse.items()}
                firsts = None
                if self.time_at is not None:  # --period: parsed here, on a worker too
                    from cumtool import periods

                    firsts = periods.cell_periods(self.period, block,
                                                  starts[self.time_at, :rows],
                                                  ends[self.time_at, :rows])
                    if firsts is None:
                        raise Handover  # the streaming path reads datetimes, words errors
                pieces.append(_Piece(block, starts, ends, flags, rows, numbers, firsts))
            if status == CUT_DONE:
                return pieces
            begin = end

    def _scan(self, piece: _Piece
              ) -> dict[tuple[int, str], tuple[np.ndarray, np.ndarray | None]]:
        """The results of a piece's rows, and their missing cells, by (column, op)."""
        results: dict[tuple[int, str], tuple[np.ndarray, np.ndarray | None]] = {}
        self.rows_scanned += piece.rows
        groups = None
        count = 1
        if self.groups is not None or self.time_at is not None:
            # --by (and --period): each row's group, numbered here, in order
            rows = piece.rows
            ids = (self.groups.ids(piece.data, [piece.starts[k, :rows] for k in self.keys],
                                   [piece.ends[k, :rows] for k in self.keys])
                   if self.groups is not None else np.zeros(rows, dtype=np.int64))
            count = self.groups.count if self.groups is not None else 1
            if self.time_at is not None:
                ids, count = self._with_periods(piece, ids)
            groups = grouped.BatchGroups(ids, None)
            for _spec, carry in self.scans.values():
                carry.grow(count)
        for (i, op), (spec, carry) in self.scans.items():
            values, valid = piece.numbers[i]
            try:
                if groups is None:
                    result = kernels.scan_block(spec, values, valid, carry)
                else:
                    result = grouped.scan_runs(spec, values, valid, groups, carry, None)
            except CumtoolError:
                raise Handover from None  # the streaming path words it
            missing = None if valid is None else ~valid
            if result.missing is not None:
                missing = result.missing if missing is None else missing | result.missing
            results[i, op] = result.values, missing
            if self.share:
                results[i, op] = self._shares((i, op), result.values, missing, groups,
                                              count, values if spec.skipna else None)
        return results

    def _shares(self, key: tuple[int, str], values: np.ndarray, missing: np.ndarray | None,
                groups: grouped.BatchGroups | None, count: int,
                skipped_in: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray | None]:
        """--share (cumtool.periods): the first pass keeps each group's last value, the
        second divides by it."""
        from cumtool import periods

        ids = groups.ids if groups is not None else np.zeros(values.shape[0], np.int64)
        present = None if missing is None else ~missing
        if self.tracking:
            if skipped_in is not None:  # --skipna: the input, whose NaN were skipped
                present = periods.scanned_rows(present, skipped_in)
            self.finals[key] = periods.track_finals(self.finals.get(key), count, ids,
                                                    values, present)
            return values, missing
        finals = self.finals[key] = periods.grown(self.finals.get(key), count)
        return periods.shares(finals, ids, values, present)

    @staticmethod
    def _time_column(request: Request, names: list[str], hints: list[Any]) -> int | None:
        """--time's column; the streaming path's where it is not one column of text."""
        if request.period is None or request.time is None:
            return None
        from cumtool.columns import resolve

        try:
            positions = resolve(request.time, names, "")
        except DataError:
            raise Handover from None
        if len(positions) != 1 or hints[positions[0]].dtype is not None or (
                hints[positions[0]].empty):
            raise Handover  # the streaming path words what is wrong with it
        return positions[0]

    def _with_periods(self, piece: _Piece, ids: np.ndarray) -> tuple[np.ndarray, int]:
        """Each row's group of its keys (`ids`) and its period (the piece's, as _cut
        found them); and the count of groups."""
        rows = piece.rows
        assert piece.periods is not None
        pairs = np.stack([ids.astype(np.int64), piece.periods], axis=1)
        out = np.empty(rows, dtype=np.int64)
        if isinstance(self.pairs, dict):  # without the C loops
            seen = self.pairs
            for i, pair in enumerate(map(tuple, pairs.tolist())):
                out[i] = seen.setdefault(pair, len(seen))
            return out, len(seen)
        firsts = np.empty(rows, dtype=np.int64)
        self.pairs.encode(np.ascontiguousarray(pairs), None, None, False, out, firsts)
        return out, int(self.pairs.count)

    def _render(self, piece: _Piece,
                results: dict[tuple[int, str], tuple[np.ndarray, np.ndarray | None]]
                ) -> bytes:
        """A piece's rows as output text (on a worker): the results written as numbers
        straight into the lines."""
        if self.json:
            rows = piece.rows
            json_plan: list[lines.LineColumn] = []
            for key, (_name, column) in zip(self.keys_text, self.columns, strict=True):
                if isinstance(column, tuple):
                    values, missing = results[column]
                    json_plan.append((key, values, missing, None))
                else:  # an input cell: the JSON string of its text, as CSV input is read
                    json_plan.append((key, piece.data, piece.starts[column, :rows],
                                      piece.ends[column, :rows], piece.flags[column, :rows]))
            return lines.write_lines(rows, json_plan)
        plan: list[Any] = []
        for _name, column in self.columns:
            if isinstance(column, tuple):
                values, missing = results[column]
                if values.dtype not in (_INT64, _FLOAT64):
                    values, text = self._narrow(values, missing)
                    if text is not None:
                        plan.append(text)
                        continue
                plan.append((np.ascontiguousarray(values), missing if missing is None
                             else np.ascontiguousarray(missing), self.null))
            else:
                plan.append(column)
        made = assemble(piece.data, piece.starts, piece.ends, piece.flags,
                        piece.starts.shape[1], piece.rows, plan, self.out_delimiter,
                        self.by_sink, self.single)
        assert isinstance(made, bytes)
        return made

    def _narrow(self, values: np.ndarray, missing: np.ndarray | None
                ) -> tuple[np.ndarray, tuple[bytes, np.ndarray] | None]:
        """A result of another dtype than int64 and float64: integers as int64 (the same
        text), where every value fits; else its cells' text and offsets, as CsvSink writes
        them."""
        if _as_int64(values.dtype):
            return values.astype(np.int64), None
        null = self.null.decode()

        def text_cell(text: str) -> str:  # a float16 cell, written as text
            if self.by_sink:
                return self._quote(text)
            return dialect.quote(text, self.out_delimiter, True)

        cells = [cell.encode() for cell in small.result_texts(values, missing, null, text_cell)]
        offsets = np.zeros(len(cells) + 1, np.int64)
        np.cumsum([len(cell) for cell in cells], out=offsets[1:])
        return values, (b"".join(cells), offsets)

    def _numbers(self, data: bytes, starts: np.ndarray, ends: np.ndarray,
                 flags: np.ndarray, dtype: np.dtype) -> tuple[np.ndarray, np.ndarray | None]:
        """A column's cells as small._parse reads them: as they are where all are numbers;
        else spaces stripped, and the missing markers missing."""
        if dtype == _INT64:
            values, status = numtext.parse_ints(data, starts, ends)
            ok = status == numtext.INT
        else:
            values, ok = numtext.parse_floats(data, starts, ends)
        marked = self.numeric_markers.get(values.dtype)
        if marked is not None:  # cells that read as a marker's number and are its text
            same = np.isin(values, marked) & ok
            if values.dtype.kind == "f" and np.isnan(marked).any():
                same |= np.isnan(values) & ok
            for r in np.flatnonzero(same).tolist():
                text = records.cut_cell_text(data, int(starts[r]), int(ends[r]),
                                             int(flags[r])).strip()
                ok[r] = text not in self.markers
        if ok.all():
            return values, None
        valid = ok
        bad = np.flatnonzero(~ok)
        for r in bad[ends[bad] != starts[bad]].tolist():  # empty cells are missing
            text = records.cut_cell_text(data, int(starts[r]), int(ends[r]), int(flags[r])).strip()
            if text in self.markers:
                continue
            value = small.number(text, dtype)
            if value is None:
                raise Handover  # a bad cell: the streaming path names it
            values[r] = value
            valid[r] = True
        values[~valid] = 0
        return values, valid


def _options(spec: Any, source: np.dtype) -> int:
    """A scan's options as the pipeline takes them (_SKIPNA, _EXCLUSIVE, _WRAP): --skipna
    on a float64 column (int64 holds no NaN), --exclusive, --overflow wrap on int64."""
    return ((_SKIPNA if spec.skipna and source == _FLOAT64 else 0)
            | (_EXCLUSIVE if spec.exclusive else 0)
            | (_WRAP if spec.overflow == "wrap" and source == _INT64 else 0))


def _as_int64(dtype: np.dtype) -> bool:
    """Whether every value of an integer dtype is an int64 (written as one: the same text)."""
    return dtype.kind == "i" or (dtype.kind == "u" and dtype.itemsize < 8)


class _Piece(NamedTuple):
    """Rows of a block cut into cells (cell j of row r at [j, r]), and the scanned
    columns' numbers: (values, valid or None) by column."""

    data: bytes
    starts: np.ndarray
    ends: np.ndarray
    flags: np.ndarray
    rows: int
    numbers: dict[int, tuple[np.ndarray, np.ndarray | None]]
    # --period: the first day of each row's period (periods.cell_periods), else None
    periods: np.ndarray | None = None
    paused: bool = False  # the input paused after these rows: they go out before more


def _marked(pieces: list[_Piece], paused: bool) -> list[_Piece]:
    """A block's pieces, the last marked where the input paused after the block."""
    if paused and pieces:
        pieces[-1] = pieces[-1]._replace(paused=True)
    return pieces


class _TextSink:
    """The job's output to a stream, in order: the header, then each scanned piece
    rendered as text (on the job's workers, up to half of MAX_IN_FLIGHT at once), or
    each chunk the compiled pipeline wrote. To a regular file (-o, or standard output
    redirected to one), the pipeline's own thread writes the chunks after the first
    (Pipeline.write_rest: the caller's writes were the serial rest at 16 cores,
    benchmarks/RESULTS-cores.md) while the caller only reads. `written`: the bytes put
    in the stream so far."""

    def __init__(self, job: _Job, stream: IO[bytes]) -> None:
        self._job = job
        self._stream = stream
        self._header = job.header
        self.written = 0
        self._rendering: deque[Future[bytes]] = deque()
        self._ahead = max(1, job._flight() - job._flight() // 2)
        self._direct = getattr(stream, "write_directly", None)

    def write(self, item: Any) -> None:
        if not isinstance(item, tuple):  # the compiled pipeline's text
            self._out(item)
            direct = self._direct
            self._direct = None  # asked once, after the first chunk
            if self._job.pipe is not None and direct is not None:
                self.written += max(0, direct(self._job.pipe.write_rest) or 0)
            return
        piece, results = item
        if self._job.workers == 1:
            self._out(self._job._render(piece, results))
            return
        self._rendering.append(self._job._pool().submit(self._job._render, piece, results))
        while self._rendering and (piece.paused or len(self._rendering) > self._ahead
                                   or self._rendering[0].done()):
            self._out(self._rendering.popleft().result())

    def _out(self, text: bytes | memoryview) -> None:
        if self._header:
            text = self._header + text
            self._header = b""
        self._stream.write(text)
        self.written += len(text)

    def close(self) -> None:
        while self._rendering:
            self._out(self._rendering.popleft().result())
        if self._header:  # no rows
            self._out(b"")

    def abort(self) -> None:
        for future in self._rendering:
            future.cancel()
        self._rendering.clear()


# The loops, in Python where _csvtext is not built --------------------------------------

def cut(data: bytes, begin: int, delimiter: str, width: int, final: bool,
        starts: np.ndarray, ends: np.ndarray, flags: np.ndarray) -> tuple[int, int, int]:
    """_csvtext.cut, or cut_py."""
    if TEXT is not None:
        return TEXT.cut(data, begin, delimiter, width, final, starts, ends, flags)
    return cut_py(data, begin, delimiter, width, final, starts, ends, flags)


def _clean(data: bytes) -> bool:
    """No NUL, U+001C-U+001F or lone CR, and UTF-8 (what small._records hands over on)."""
    if b"\0" in data or data.count(b"\r") != data.count(b"\r\n"):
        return False
    if any(c in data for c in (b"\x1c", b"\x1d", b"\x1e", b"\x1f")):
        return False
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def cut_py(data: bytes, begin: int, delimiter: str, width: int, final: bool,
           starts: np.ndarray, ends: np.ndarray, flags: np.ndarray) -> tuple[int, int, int]:
    """The records of data[begin:] as bounds of cells (see _csvtext.cut's doc)."""
    capacity = starts.shape[-1] if starts.ndim == 2 else starts.size // width
    s, e, f = starts.reshape(-1), ends.reshape(-1), flags.reshape(-1)
    d = ord(delimiter)
    quote, cr, lf = ord('"'), ord("\r"), ord("\n")
    n = len(data)
    rows, end, at = 0, begin, begin
    while at < n:
        if rows == capacity:
            return rows, end, CUT_FULL
        cells: list[tuple[int, int, int]] = []
        unsure = unfinished = False
        while True:
            if at < n and data[at] == quote:
                close, flag = at + 1, 1
                while True:
                    if close >= n:
                        unfinished = True
                        break
                    if data[close] == quote:
                        if close + 1 < n and data[close + 1] == quote:
                            flag, close = 2, close + 2
                            continue
                        unfinished = close + 1 >= n and not final
                        break
                    close += 1
                if unfinished:
                    break
                cell = (at + 1, close, flag)
                at = close + 1
            else:
                stop = at
                while stop < n and data[stop] not in (d, quote, cr, lf):
                    stop += 1
                if stop < n and data[stop] == quote:
                    unsure = True
                    break
                cell = (at, stop, 0)
                at = stop
            following = at
            if following < n and data[following] == cr:
                if following + 1 >= n:
                    unfinished, unsure = not final, final
                    break
                if data[following + 1] != lf:
                    unsure = True
                    break
                following += 1
            if following >= n:
                if not final:
                    unfinished = True
                    break
                last = True
            elif data[following] == d:
                last = False
                following += 1
            elif data[following] == lf:
                last = True
                following += 1
            else:
                unsure = True
                break
            cells.append(cell)
            at = following
            if last:
                break
        if unfinished and not unsure:
            if final:
                return rows, end, CUT_UNSURE  # a quote never closed
            break
        blank = len(cells) == 1 and cells[0][2] == 0 and cells[0][0] == cells[0][1]
        if unsure or (not blank and len(cells) != width) or not _clean(data[end:at]):
            return rows, end, CUT_UNSURE
        if not blank:
            for j, (start, stop, flag) in enumerate(cells):
                s[j * capacity + rows], e[j * capacity + rows] = start, stop
                f[j * capacity + rows] = flag
            rows += 1
        end = at
    return rows, end, CUT_DONE


def assemble(data: bytes, starts: np.ndarray, ends: np.ndarray, flags: np.ndarray,
             capacity: int, rows: int, columns: list[Any], delimiter: str, by_sink: bool,
             single: bool, into: bytearray | None = None) -> bytes | int:
    """_csvtext.assemble, or assemble_py."""
    if TEXT is not None:
        return TEXT.assemble(data, starts, ends, flags, capacity, rows, columns, delimiter,
                             by_sink, single, into)
    return assemble_py(data, starts, ends, flags, capacity, rows, columns, delimiter,
                       by_sink, single, into)


def assemble_py(data: bytes, starts: np.ndarray, ends: np.ndarray, flags: np.ndarray,
                capacity: int, rows: int, columns: list[Any], delimiter: str, by_sink: bool,
                single: bool, into: bytearray | None = None) -> bytes | int:
    """Lines of output text (see _csvtext.assemble's doc): bytes, or, given `into`, their
    size, written at its start."""
    return written_into(into, _assemble_py(data, starts, ends, flags, capacity, rows,
                                           columns, delimiter, by_sink, single))


def _assemble_py(data: bytes, starts: np.ndarray, ends: np.ndarray, flags: np.ndarray,
                 capacity: int, rows: int, columns: list[Any], delimiter: str, by_sink: bool,
                 single: bool) -> bytes:
    s, e, f = starts.reshape(-1), ends.reshape(-1), flags.reshape(-1)
    out = delimiter.encode()
    rendered: list[list[bytes]] = []
    for column in columns:
        if not isinstance(column, int) and len(column) == 2:  # a result's text, made before
            text, offsets = column
            at = np.asarray(offsets, np.int64).tolist()
            rendered.append([bytes(text[at[r]:at[r + 1]]) for r in range(rows)])
            continue
        if not isinstance(column, int):
            values, missing, null = column  # a result's numbers
            write = numtext.format_ints if values.dtype == _INT64 else numtext.format_floats
            text, offsets = write(values, missing, null)
            at = np.asarray(offsets, np.int64).tolist()
            rendered.append([bytes(text[at[r]:at[r + 1]]) for r in range(rows)])
            continue
        cells = []
        for r in range(rows):
            c = column * capacity + r
            cell = data[int(s[c]):int(e[c])]  # a quoted cell's quotes doubled already
            empty_quoted = single if by_sink else int(f[c]) != 0
            quoted = dialect.needs_quotes(cell.decode("utf-8"), delimiter, empty_quoted)
            cells.append(b'"' + cell + b'"' if quoted else cell)
        rendered.append(cells)
    return b"".join(out.join(line) + b"\n" for line in zip(*rendered, strict=True))
