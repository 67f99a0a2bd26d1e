"""A Parquet file encoded in parts on several threads and stitched into one: the bytes
pyarrow's single writer makes.

pyarrow's ParquetWriter encodes and compresses a file's column chunks one after another on
one thread (apache/arrow#50866): on two cores it was the critical path of Parquet ->
Parquet. `PartsWriter` hands runs of batches to encoder threads instead; each thread
writes its run as a Parquet file of its own in memory, with the same options, and the
parts are stitched in order: their row groups' bytes one after another, then one footer.

Pages hold no position in the file; only the footer does (Thrift compact protocol). So the
stitched file is the single writer's, byte for byte, if every position in the footer is
moved by where its part landed. A wrong footer would silently corrupt the user's file, so
nothing is copied that is not understood:

- a part's row groups in its footer are read against `_ROW_GROUP`, a table of the
  parquet.thrift fields pyarrow writes for cumtool; a field or type not in it refuses the
  part (a later pyarrow's new index, say). The fields holding positions are marked
  `_POSITION`: each must be 0 (none) or fall inside the part's row groups, which move as
  one block. Their bytes are copied as the part wrote them, the positions' varints alone
  written anew;
- the part's bytes between the magic and the footer must be exactly its column chunks,
  end to end (nothing written after the row groups: bloom filters, page indexes);
- the rest of its footer (schema, key-value metadata, writer, column orders) must be,
  byte for byte, that of the single writer's file of no rows, and comes from there.

A part refused at start-up (`stitches_exactly`, which also compares a stitched file with
the single writer's) means the single writer is used; one refused later fails the run
with an OutputError: no file is better than a wrong one.
"""

from __future__ import annotations

import collections
import concurrent.futures
import io
import struct
import threading
from collections.abc import Mapping
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from cumtool.errors import OutputError
from cumtool.output import DiscardableStream

_MAGIC = b"PAR1"

# Thrift compact protocol types. A struct is read as a list of [field id, type, value,
# where its header starts]; a list as (element type, items).
_STOP, _TRUE, _FALSE, _BYTE, _I16, _I32, _I64, _DOUBLE, _BINARY, _LIST, _SET, _MAP, _STRUCT = (
    range(13))
Fields = list[list[Any]]

# A struct's table: field id -> (type, detail). The detail of a struct is its table; of a
# list, its element type or (for structs) the elements' table; None takes any contents
# (only in _FILE, whose fields but the row groups are compared as bytes, see _Layout).
# `_POSITION` marks an i64 that is a position in the file.
_POSITION = "position"
Table = dict[int, tuple[int, Any]]

_STATISTICS: Table = {  # values only: min and max, null and distinct counts, exactness
    1: (_BINARY, None), 2: (_BINARY, None), 3: (_I64, None), 4: (_I64, None),
    5: (_BINARY, None), 6: (_BINARY, None), 7: (_TRUE, None), 8: (_TRUE, None)}
_PAGE_ENCODING_STATS: Table = {1: (_I32, None), 2: (_I32, None), 3: (_I32, None)}
_SIZE_STATISTICS: Table = {1: (_I64, None), 2: (_LIST, _I64), 3: (_LIST, _I64)}
# ColumnMetaData. Refused: 8 key_value_metadata (pyarrow writes none; its contents are
# not checked), 10 index_page_offset (no writer writes index pages), 14 and 15 the bloom
# filter (written after every row group, so it would land in the middle), 17 geospatial.
_COLUMN_META: Table = {
    1: (_I32, None), 2: (_LIST, _I32), 3: (_LIST, _BINARY), 4: (_I32, None),
    5: (_I64, None), 6: (_I64, None), 7: (_I64, None),  # values; sizes uncompressed, stored
    9: (_I64, _POSITION), 11: (_I64, _POSITION),  # data page, dictionary page
    12: (_STRUCT, _STATISTICS), 13: (_LIST, _PAGE_ENCODING_STATS),
    16: (_STRUCT, _SIZE_STATISTICS)}
# ColumnChunk. Refused: 1 file_path (the chunk is in another file), 4 to 7 the page
# indexes (written after every row group, and holding positions of their own), 8 and 9
# encryption.
_COLUMN_CHUNK: Table = {2: (_I64, _POSITION), 3: (_STRUCT, _COLUMN_META)}
# RowGroup. Refused: 4 sorting_columns (cumtool sets none), 7 ordinal (the row group's
# number in the file: pyarrow writes it only in encrypted files).
_ROW_GROUP: Table = {1: (_LIST, _COLUMN_CHUNK), 2: (_I64, None), 3: (_I64, None),
                     5: (_I64, _POSITION), 6: (_I64, None)}
# FileMetaData: version, schema, rows, row groups, key-value metadata, writer, column
# orders. Refused: 8 and 9, encryption.
_FILE: Table = {1: (_I32, None), 2: (_LIST, None), 3: (_I64, None), 4: (_LIST, _ROW_GROUP),
                5: (_LIST, None), 6: (_BINARY, None), 7: (_LIST, None)}
_ROWS = 3


class Unstitchable(ValueError):
    """A part whose footer or layout this module does not know how to stitch."""


def _read_varint(buf: memoryview, pos: int) -> tuple[int, int]:
    result = shift = 0
    while True:
        byte = buf[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        if byte < 0x80:
            return result, pos
        shift += 7


Positions = list[tuple[int, int, int]]  # where a position's varint starts, ends; its value


def _read_value(buf: memoryview, pos: int, kind: int, detail: Any,
                positions: Positions) -> tuple[Any, int]:
    if kind in (_I16, _I32, _I64):
        start = pos
        value, pos = _read_varint(buf, pos)
        value = (value >> 1) ^ -(value & 1)
        if detail is _POSITION:
            positions.append((start, pos, value))
        return value, pos
    if kind == _BINARY:
        size, pos = _read_varint(buf, pos)
        if pos + size > len(buf):
            raise Unstitchable("a string runs past the footer")
        return bytes(buf[pos:pos + size]), pos + size
    if kind == _STRUCT:
        return _read_struct(buf, pos, detail, positions)
    if kind == _LIST:
        header = buf[pos]
        pos += 1
        size, element = header >> 4, header & 0x0F
        if size == 15:
            size, pos = _read_varint(buf, pos)
        expected = _STRUCT if isinstance(detail, dict) else detail
        if expected is not None and element != expected:
            raise Unstitchable(f"a list of Thrift type {element}, not {expected}")
        items = []
        for _ in range(size):
            item, pos = _read_value(buf, pos, element,
                                    detail if isinstance(detail, dict) else None, positions)
            items.append(item)
        return (element, items), pos
    if kind == _DOUBLE:
        return struct.unpack_from("<d", buf, pos)[0], pos + 8
    if kind in (_TRUE, _FALSE, _BYTE):  # a list's boolean: one byte
        return buf[pos], pos + 1
    raise Unstitchable(f"Thrift type {kind}")  # sets and maps: none in a footer


def _read_struct(buf: memoryview, pos: int, table: Table | None,
                 positions: Positions) -> tuple[Fields, int]:
    """A struct's fields, each [id, type, value, where its header starts]; with a table,
    refusing any field not in it or of another type. Positions found are added to
    `positions`."""
    fields: Fields = []
    last = 0
    while True:
        start = pos
        header = buf[pos]
        pos += 1
        if header == _STOP:
            return fields, pos
        kind, delta = header & 0x0F, header >> 4
        if delta:
            field = last + delta
        else:
            value, pos = _read_varint(buf, pos)
            field = (value >> 1) ^ -(value & 1)
        # A boolean field's value is its type (true or false): both are _TRUE in a table.
        kind_known = _TRUE if kind == _FALSE else kind
        known = table.get(field) if table is not None else (kind_known, None)
        if known is None or known[0] != kind_known:
            raise Unstitchable(f"field {field} of Thrift type {kind} in a Parquet footer")
        if kind in (_TRUE, _FALSE):
            fields.append([field, kind, kind == _TRUE, start])
        else:
            value, pos = _read_value(buf, pos, kind, known[1], positions)
            fields.append([field, kind, value, start])
        last = field


def _write_varint(out: bytearray, value: int) -> None:
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)


def _write_i64(out: bytearray, value: int) -> None:
    _write_varint(out, (value << 1) ^ (value >> 63))


def _write_list_header(out: bytearray, element: int, size: int) -> None:
    if size < 15:
        out.append((size << 4) | element)
    else:
        out.append(0xF0 | element)
        _write_varint(out, size)


def _field(fields: Fields, number: int) -> Any:
    for entry in fields:
        if entry[0] == number:
            return entry[2]
    raise Unstitchable(f"no field {number} in a Parquet footer")


def _footer_start(view: memoryview) -> int:
    if len(view) < 12 or bytes(view[:4]) != _MAGIC or bytes(view[-4:]) != _MAGIC:
        raise Unstitchable("pyarrow wrote an unexpected Parquet layout")
    start = len(view) - 8 - struct.unpack_from("<i", view, len(view) - 8)[0]
    if not 4 <= start < len(view) - 8:
        raise Unstitchable("pyarrow wrote an unexpected Parquet layout")
    return start


# In FileMetaData, between the schema (field 2) and the key-value metadata (field 5) of a
# file of no rows: field 3 (i64, one on from 2) num_rows 0, field 4 (list, one on from 3)
# row_groups, an empty list of structs.
_NO_ROWS = bytes([0x16, 0x00, 0x19, 0x0C])


class _Layout:
    """The footer of the single writer's file of no rows, cut around its rows and row
    groups: what every part's footer must hold around theirs, and the stitched file's."""

    def __init__(self, view: memoryview) -> None:
        start = _footer_start(view)
        try:
            footer, end = _read_struct(view, start, _FILE, [])
        except (IndexError, struct.error):
            raise Unstitchable("a footer cut short") from None
        rows_at = next((entry[3] for entry in footer if entry[0] == _ROWS), 0)
        if end != len(view) - 8 or bytes(view[rows_at:rows_at + 4]) != _NO_ROWS:
            raise Unstitchable("pyarrow wrote an unexpected footer for no rows")
        self.before = bytes(view[start:rows_at])
        self.after = bytes(view[rows_at + len(_NO_ROWS):end])


_NOT_THE_SINGLE_WRITERS = "a part's footer is not the single writer's outside its row groups"


class Part:
    """A run of consecutive batches as a Parquet file of its own: its row groups' bytes,
    and its footer's row groups as encoded there with where their positions are (checked
    as the module's doc says, against the single writer's `layout`)."""

    def __init__(self, view: memoryview, layout: _Layout) -> None:
        start = _footer_start(view)
        try:
            self._read_footer(view, start, layout)
        except (IndexError, struct.error):
            raise Unstitchable("a footer cut short") from None
        self.data = view[4:start]
        self.buffer: pa.Buffer | None = None  # the memory of `data`, to be used again

    def _read_footer(self, view: memoryview, start: int, layout: _Layout) -> None:
        pos = start + len(layout.before)
        if bytes(view[start:pos]) != layout.before or view[pos] != _NO_ROWS[0]:
            raise Unstitchable(_NOT_THE_SINGLE_WRITERS)
        rows, pos = _read_varint(view, pos + 1)
        self.rows = (rows >> 1) ^ -(rows & 1)
        if view[pos] != _NO_ROWS[2] or view[pos + 1] & 0x0F != _STRUCT:
            raise Unstitchable("no row groups where expected in a part's footer")
        self.count, groups_at = view[pos + 1] >> 4, pos + 2
        if self.count == 15:
            self.count, groups_at = _read_varint(view, groups_at)
        row_groups: list[Fields] = []
        positions: Positions = []
        end = groups_at
        for _ in range(self.count):
            row_group, end = _read_struct(view, end, _ROW_GROUP, positions)
            row_groups.append(row_group)
        if bytes(view[end:len(view) - 8]) != layout.after:
            raise Unstitchable(_NOT_THE_SINGLE_WRITERS)
        # The bytes before the footer are the column chunks end to end, and nothing else.
        at = 4
        for row_group in row_groups:
            for chunk in _field(row_group, 1)[1]:
                meta = _field(chunk, 3)
                size = _field(meta, 7)
                first = next((e[2] for e in meta if e[0] == 11), 0) or _field(meta, 9)
                if size or first:  # a chunk of no rows may have no page (and no position)
                    if first != at or size <= 0:
                        raise Unstitchable(f"a column chunk at {first}, where {at} was expected")
                    at += size
        if at != start:
            raise Unstitchable(f"{start - at} bytes after the row groups")
        # A position may be where the row groups end: an older pyarrow's ColumnChunk
        # file_offset is where its chunk ends (pyarrow 26 writes 0).
        for _, _, value in positions:
            if value and not 4 <= value <= start:
                raise Unstitchable(f"position {value} outside the row groups")
        self.row_groups = bytes(view[groups_at:end])
        # Positions in self.row_groups; 0 (none) stays 0.
        self.positions = [(s - groups_at, e - groups_at, v) for s, e, v in positions if v]


# A part (~8 MB) goes to the file in writes of at most this size. One write of a whole part
# cost the writer thread (a stage of its own, on no other core) 0.5-0.9 s of kernel time
# for a 560 MB output (10M x 8), nearly all of it copying into the page cache, where 1 MiB
# writes cost 0.11-0.13 s, run after run: 7.3 MB writes, 77 parts, 5 tries each of
# interleaved runs, 0.65-0.72 s against 0.11-0.13 s (and 0.10-1.04 s in later rounds).
WRITE_BYTES = 1 << 20


class Stitcher:
    """Writes parts one after another as one Parquet file: its footer is that of the single
    writer's file of no rows with every part's row groups (their bytes as the part wrote
    them, only their positions moved) and the count of their rows."""

    def __init__(self, out: DiscardableStream, empty: memoryview) -> None:
        self.layout = _Layout(empty)
        self._out = out
        self._out.write(_MAGIC)  # as pyarrow's writer does when it opens
        self._position = len(_MAGIC)
        self._rows = 0
        self._row_groups = bytearray()
        self._count = 0

    def add(self, part: Part) -> None:
        moved_by = self._position - len(_MAGIC)
        at = 0
        for start, end, value in part.positions:
            self._row_groups += part.row_groups[at:start]
            _write_i64(self._row_groups, value + moved_by)
            at = end
        self._row_groups += part.row_groups[at:]
        self._count += part.count
        self._rows += part.rows
        data = part.data
        for at in range(0, len(data), WRITE_BYTES):
            self._out.write(data[at:at + WRITE_BYTES])
        self._position += len(data)

    def finish(self) -> None:
        footer = bytearray(self.layout.before)
        footer.append(_NO_ROWS[0])
        _write_i64(footer, self._rows)
        footer.append(_NO_ROWS[2])
        _write_list_header(footer, _STRUCT, self._count)
        footer += self._row_groups
        footer += self.layout.after
        self._out.write(bytes(footer) + struct.pack("<i", len(footer)) + _MAGIC)


def _written(schema: pa.Schema, options: Mapping[str, Any],
             batches: list[pa.RecordBatch]) -> memoryview:
    """The file pyarrow's writer makes of the batches, in memory."""
    sink = pa.BufferOutputStream()  # no Python object (or GIL) under the writer
    with pq.ParquetWriter(sink, schema, **options) as writer:
        for batch in batches:
            writer.write_batch(batch)
    return memoryview(sink.getvalue()).cast("B")


class _Buffers:
    """Memory for parts to be encoded into, each buffer used again once its part is written
    out. A new growing buffer for every part cost page faults and copies, and handing its
    memory back to the system after each part (for the peak RSS) cost more: on 2M x 8,
    9% more CPU than this (paired runs, n=21), for the same peak RSS (241 MiB)."""

    def __init__(self) -> None:
        self._free: list[pa.Buffer] = []
        self._lock = threading.Lock()  # taken on encoder threads, given back on another

    def take(self, size: int) -> pa.Buffer:
        with self._lock:
            while self._free:
                buffer = self._free.pop()
                if buffer.size >= size:
                    return buffer  # (one too small is dropped, and freed)
        return pa.allocate_buffer(size)

    def give(self, buffer: pa.Buffer) -> None:
        with self._lock:
            self._free.append(buffer)


def encode_part(batches: list[pa.RecordBatch], schema: pa.Schema, options: Mapping[str, Any],
                layout: _Layout, buffers: _Buffers) -> Part:
    """A run of batches encoded as a part (on an encoder thread), into a buffer of twice
    the batches' size: Parquet is rarely bigger than Arrow, and where it is (a dictionary
    column written plain, say) the part is encoded again, into memory that grows."""
    buffer = buffers.take(2 * sum(batch.nbytes for batch in batches) + (1 << 20))
    stream = pa.FixedSizeBufferWriter(buffer)
    try:
        with pq.ParquetWriter(stream, schema, **options) as writer:
            for batch in batches:
                writer.write_batch(batch)
    except OSError:  # "Write out of bounds": the only I/O error memory has
        buffers.give(buffer)
        return Part(_written(schema, options, batches), layout)
    part = Part(memoryview(buffer).cast("B")[:stream.tell()], layout)
    part.buffer = buffer
    return part


def _encode_and_release(batches: list[pa.RecordBatch], schema: pa.Schema,
                        options: Mapping[str, Any], layout: _Layout, buffers: _Buffers) -> Part:
    """encode_part on an encoder thread, then the memory its writer freed handed back to
    the system: Arrow's mimalloc keeps each thread's freed pages for a while, and at
    --threads 16 (4 encoders) that held ~50 MiB of the peak RSS (290-297 MiB against
    341-347). Only mimalloc's release is this cheap (~1 us a call): the system pool's is
    malloc_trim, over every arena."""
    try:
        return encode_part(batches, schema, options, layout, buffers)
    finally:
        pool = pa.default_memory_pool()
        if pool.backend_name == "mimalloc":
            pool.release_unused()


def stitches_exactly(schema: pa.Schema, options: Mapping[str, Any]) -> bool:
    """Whether two one-row parts stitched make the bytes pyarrow's single writer makes of
    the same two row groups, for this schema and these options (and this pyarrow). The
    rows are nulls, so the fields are taken as nullable: that changes a column's
    repetition in the footer's schema, not where its positions are."""
    try:
        _Layout(_written(schema, options, []))  # as PartsWriter will
        nullable = pa.schema([f.with_nullable(True) for f in schema], metadata=schema.metadata)
        batch = pa.RecordBatch.from_arrays([pa.nulls(1, f.type) for f in nullable],
                                           schema=nullable)
        stitched = io.BytesIO()
        stitcher = Stitcher(DiscardableStream(stitched), _written(nullable, options, []))
        for _ in range(2):
            stitcher.add(encode_part([batch], nullable, options, stitcher.layout, _Buffers()))
        stitcher.finish()
        return stitched.getvalue() == bytes(_written(nullable, options, [batch, batch]))
    except Exception:  # whatever fails here (a type pa.nulls cannot make, say): no threads
        return False


class PartsWriter:
    """pq.ParquetWriter's write_batch and close, the batches encoded `encoders` parts at a
    time on threads and stitched in order (use it where `stitches_exactly`)."""

    def __init__(self, out: DiscardableStream, schema: pa.Schema, options: Mapping[str, Any],
                 encoders: int, part_bytes: int) -> None:
        self._schema = schema
        self._options = options
        self._encoders = encoders
        self._part_bytes = part_bytes
        self._stitcher = Stitcher(out, _written(schema, options, []))
        self._buffers = _Buffers()
        self._pool = concurrent.futures.ThreadPoolExecutor(
            encoders, thread_name_prefix="cumtool-parquet")
        self._pending: collections.deque[concurrent.futures.Future[Part]] = (
            collections.deque())
        self._batches: list[pa.RecordBatch] = []
        self._bytes = 0

    def write_batch(self, batch: pa.RecordBatch) -> None:
        self._batches.append(batch)
        self._bytes += batch.nbytes
        if self._bytes >= self._part_bytes:
            self._encode()

    def _encode(self) -> None:
        """Hand the batches held to an encoder; stitch the parts done, in order. One part
        more than there are encoders may wait for a thread, so that an encoder that is done
        starts on it at once, not after this thread has stitched and been handed the next
        batch; with more, wait for the oldest part: memory holds at most `encoders` + 1
        parts. (On 2M x 8, 2 encoders, the encoders' idle time between parts went from
        220-720 ms to 75-190 ms in a loaded machine's runs; peak RSS +10 MiB, of ~250.)"""
        batches, self._batches, self._bytes = self._batches, [], 0
        self._pending.append(self._pool.submit(
            _encode_and_release, batches, self._schema, self._options, self._stitcher.layout,
            self._buffers))
        while len(self._pending) > self._encoders or (
                self._pending and self._pending[0].done()):
            self._stitch_oldest()

    def _stitch_oldest(self) -> None:
        try:
            part = self._pending.popleft().result()
        except Unstitchable as error:
            raise OutputError(f"cannot write Parquet: a part encoded on a thread could not "
                              f"be stitched safely ({error}); nothing was written") from None
        self._stitcher.add(part)
        if part.buffer is not None:  # written out: the buffer may take another part
            self._buffers.give(part.buffer)

    def close(self) -> None:
        if self._batches:
            self._encode()
        while self._pending:
            self._stitch_oldest()
        self._pool.shutdown()
        self._stitcher.finish()

    def abort(self) -> None:
        """Drop the parts under way (an encoder finishes the one it is on, into memory)."""
        self._pending.clear()
        self._batches = []
        self._pool.shutdown(wait=False, cancel_futures=True)
