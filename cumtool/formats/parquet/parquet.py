"""Parquet in and out with pyarrow, batch by batch."""

from __future__ import annotations

import contextlib
from collections.abc import Collection, Iterator, Mapping
from typing import IO

import pyarrow as pa
import pyarrow.parquet as pq

from cumtool.columnar import batch_without_views, schema_without_views
from cumtool.formats import SourceBase, unreadable
from cumtool.formats.parquet.stitch import PartsWriter, stitches_exactly
from cumtool.output import DiscardableStream

# What pyarrow raises on a damaged file: any of its own errors (including a memory error
# for a size read from corrupt metadata), OSError, and a column name that is not UTF-8.
_DAMAGE = (pa.ArrowException, OSError, UnicodeDecodeError)


# Column chunks are read through a buffer of this size, not whole: one row group of a
# few hundred MB must not be held in memory at once.
_BUFFER_BYTES = 1 << 20
# A batch's size in memory, about (row count from the metadata). A run holds ~14 batches
# in flight (read ahead, scanned, in the encoders and encoded), so this sets its memory:
# 10M x 8 floats -> Parquet peaked at 258-283 MiB with 8 MiB at 16 threads (Arrow's pool
# of 16 and 4 encoders, reproduced on 2 cores), 221-234 with 6, at no cost in time on 1
# or 2 threads (RESULTS-cores.md, session 11); 236-258 with 6 once the scan's loops were
# in C, 219-232 with 5, which cost 4% of Parquet 2M's time on 2 cores (session 12). The
# same at every thread count: a Parquet output's row groups are its batches, and the
# thread count never changes a bit of the output (5 MiB from 8 threads on made 25 row
# groups of 81,920 rows where 7 made 21 of 98,304).
BATCH_BYTES = 6 << 20
MAX_BATCH_ROWS = 1 << 17


class ParquetSource(SourceBase):
    """A Parquet file read in batches of about BATCH_BYTES. Parquet keeps its footer at the
    end: a non-seekable stream (standard input, .parquet.zst) comes spooled to a file."""

    def __init__(self, stream: IO[bytes] | str, name: str, batch_rows: int | None) -> None:
        self.name = name
        try:
            self._file = pq.ParquetFile(stream, buffer_size=_BUFFER_BYTES, pre_buffer=False)
            # Text stored as views (pyarrow keeps the Arrow schema) is read as large text.
            self._schema = schema_without_views(self._file.schema_arrow)
            self.num_rows = int(self._file.metadata.num_rows)
            self._batch_rows = batch_rows or self._rows_per_batch()
        except _DAMAGE as error:
            raise unreadable(name, "parquet", error) from None

    def _rows_per_batch(self) -> int:
        """Rows of about BATCH_BYTES, from the sizes the metadata gives (uncompressed)."""
        metadata = self._file.metadata
        rows = max(int(metadata.num_rows), 1)
        stored = sum(metadata.row_group(i).total_byte_size for i in range(metadata.num_row_groups))
        # Arrow holds at least 8 bytes a cell (values or offsets) whatever the encoding.
        row_bytes = max(stored / rows, 8 * max(len(self._schema), 1))
        return int(min(MAX_BATCH_ROWS, max(1, BATCH_BYTES // row_bytes)))

    @property
    def schema(self) -> pa.Schema:
        return self._schema

    def batches(self, parse: Mapping[int, pa.DataType] | None = None,
                unused: Collection[int] = ()) -> Iterator[pa.RecordBatch]:
        """Row-group batches. Parquet columns are typed: nothing is parsed or left out
        (`parse` and `unused` are for text formats)."""
        try:
            with decoding_threads():
                for batch in self._file.iter_batches(batch_size=self._batch_rows):
                    yield batch_without_views(batch, self._schema)
        except _DAMAGE as error:
            raise unreadable(self.name, "parquet", error) from None


@contextlib.contextmanager
def decoding_threads() -> Iterator[None]:
    """Arrow's pool, which decodes a batch's columns, held to the usable cores while a file
    is read (--threads sizes it, beyond the cores too): each of its threads keeps the memory
    it freed for a while (mimalloc), so on 2 cores its 16 threads at --threads 16 held
    ~40 MiB more of the peak RSS than 2 did (10M x 8 Parquet -> Parquet), for no speed.
    The size it had comes back after."""
    from cumtool import native

    before = pa.cpu_count()
    wanted = native.ahead_workers(native.CORES, before)
    if wanted >= before:
        yield
        return
    pa.set_cpu_count(wanted)
    try:
        yield
    finally:
        pa.set_cpu_count(before)


def _encoders() -> int:
    """Threads to encode with: --threads, but no more than the usable cores (more only
    hold parts in memory while they wait for one: 4 encoders on 2 cores at --threads 16
    held ~25 MiB more of the peak RSS than 2) and at most 4 (each holds a part's batches
    and its encoded bytes)."""
    from cumtool import native

    return native.ahead_workers(native.CORES, 4)


# Batches are encoded in parts of at least this many bytes (in memory): a part costs a
# writer and a footer to read and check (0.5 ms for 8 columns, against 0.14 ms for a row
# group in the single writer), which a part of 6 MiB (the readers' batch) repays many
# times over, and a part of one small batch would not.
PART_BYTES = 4 << 20
# Threads only where the first batch holds at least this much a Parquet column (leaf):
# every column chunk costs the stitcher Python (holding the GIL), every part memory, so
# small chunks lose. Threads against the single writer, cumsum of N float and int
# columns, paired whole runs on 2 cores: 8 columns (1 MiB chunks) wall 0.83x; 16 (512
# KiB) 0.88x; 32 (256 KiB) 1.06x; CPU 1.01x-1.09x. In-process, 2000 columns of 3 KiB
# chunks (a wide table's 8 MiB batch) took 3.7 s against 0.8 s. 320 KiB keeps the threads
# for tables of up to 19 columns in batches of BATCH_BYTES (6 MiB), as 512 did in 8 MiB
# ones.
MIN_CHUNK_BYTES = 320 << 10


def _leaves(data_type: pa.DataType) -> int:
    """Parquet columns (leaves) an Arrow type makes."""
    if isinstance(data_type, pa.BaseExtensionType):
        data_type = data_type.storage_type
    if pa.types.is_dictionary(data_type) or data_type.num_fields == 0:
        return 1
    return sum(_leaves(data_type.field(k).type) for k in range(data_type.num_fields))


class ParquetSink:
    """A Parquet file written batch by batch, one row group a batch (as pyarrow's writer
    makes them). With more than one core and big enough batches, parts of the file are
    encoded on threads and stitched (stitch.py): the same bytes, or the single writer
    where that is not sure."""

    def __init__(self, stream: IO[bytes], schema: pa.Schema,
                 encoders: int | None = None) -> None:
        # Dictionary encoding only where values repeat (text, dates, flags): running totals
        # are nearly all distinct, and trying a dictionary on them first made writing
        # 2.7x slower (1.75 s against 0.66 s for 2M x 8 floats here).
        repeating = [f.name for f in schema if not (
            pa.types.is_floating(f.type) or pa.types.is_integer(f.type)
            or pa.types.is_decimal(f.type))]
        self._options = {"use_dictionary": repeating}
        # The schema's metadata (a pandas index, for one) is the input's: kept.
        self._schema = schema
        self._out = DiscardableStream(stream)
        self._encoders = _encoders() if encoders is None else encoders
        self._writer: pq.ParquetWriter | PartsWriter | None = None
        if self._encoders == 1:
            self._writer = pq.ParquetWriter(self._out, schema, **self._options)
        else:  # chosen at the first batch; a type Parquet cannot hold fails now all the same
            pq.ParquetWriter(pa.BufferOutputStream(), schema, **self._options).close()

    def _open(self, batch_bytes: int) -> pq.ParquetWriter | PartsWriter:
        """The writer, chosen at the first batch (see MIN_CHUNK_BYTES)."""
        columns = sum(_leaves(f.type) for f in self._schema)
        if (self._encoders > 1 and batch_bytes >= MIN_CHUNK_BYTES * columns
                and stitches_exactly(self._schema, self._options)):
            return PartsWriter(self._out, self._schema, self._options, self._encoders,
                               PART_BYTES)
        return pq.ParquetWriter(self._out, self._schema, **self._options)

    def write(self, batch: pa.RecordBatch) -> None:
        if self._writer is None:
            self._writer = self._open(batch.nbytes)
        self._writer.write_batch(batch)

    def close(self) -> None:
        if self._writer is None:
            self._writer = self._open(0)
        self._writer.close()

    def abort(self) -> None:
        """Release the writer after a failure. Its footer goes nowhere: a close that failed
        would leave the writer open, to try again (and fail noisily) when collected."""
        self._out.discard()
        if isinstance(self._writer, PartsWriter):
            self._writer.abort()
        elif self._writer is not None:
            with contextlib.suppress(pa.ArrowException, OSError, ValueError):
                self._writer.close()
