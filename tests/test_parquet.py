"""The Parquet writer: parts encoded on threads and stitched make the file pyarrow's single
writer makes, byte for byte, whatever the schema, the data, the batch sizes and the number
of encoders; what the stitcher does not know it refuses (the single writer is used, or a
run fails rather than write a wrong file); and through the command line, the same values,
schema and row groups."""

from __future__ import annotations

import datetime
import decimal
import io
import json
import os
import struct
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from click.testing import Result
from conftest import REPO
from helpers import ok

from cumtool import native
from cumtool.errors import OutputError
from cumtool.formats.parquet import parquet, stitch
from cumtool.formats.parquet.parquet import ParquetSink
from cumtool.output import DiscardableStream

Invoke = Callable[..., Result]


@pytest.fixture(autouse=True)
def threads_for_small_batches(monkeypatch):
    """The threads whatever the batches' size (cumtool keeps them for big ones)."""
    monkeypatch.setattr(parquet, "MIN_CHUNK_BYTES", 0)


def sink_bytes(schema: pa.Schema, batches: list[pa.RecordBatch], encoders: int) -> bytes:
    """What cumtool's ParquetSink writes: with one encoder, pyarrow's own writer."""
    sink = io.BytesIO()
    writer = ParquetSink(sink, schema, encoders=encoders)
    for batch in batches:
        writer.write(batch)
    writer.close()
    assert isinstance(writer._writer, stitch.PartsWriter) == (encoders > 1), \
        "the stitched writer was not chosen"
    return sink.getvalue()


def single_bytes(schema: pa.Schema, batches: list[pa.RecordBatch], **options: Any) -> bytes:
    sink = io.BytesIO()
    with pq.ParquetWriter(sink, schema, **options) as writer:
        for batch in batches:
            writer.write_batch(batch)
    return sink.getvalue()


def stitched_bytes(schema: pa.Schema, batches: list[pa.RecordBatch], part_bytes: int = 0,
                   encoders: int = 2, **options: Any) -> bytes:
    """Stitched, with any pyarrow options; part_bytes 0 makes each batch a part."""
    assert stitch.stitches_exactly(schema, options)
    sink = io.BytesIO()
    writer = stitch.PartsWriter(DiscardableStream(sink), schema, options, encoders, part_bytes)
    for batch in batches:
        writer.write_batch(batch)
    writer.close()
    return sink.getvalue()


@pytest.mark.parametrize("encoders", [2, 3])
def test_one_part_waits_for_an_encoder_and_no_more(monkeypatch, encoders):
    """While every encoder is busy, one more part is handed over (an encoder that is done
    starts on it at once), and then the writer waits for the oldest part. Parts held up
    and let go later still make the single writer's bytes."""
    import threading
    import time

    table = mixed_table(400)
    batches = batches_of(table, [40] * 10)
    released = threading.Semaphore(0)
    real = stitch.encode_part

    def held(parts: list[pa.RecordBatch], *args: Any) -> stitch.Part:
        released.acquire()  # each part waits for the test
        return real(parts, *args)

    monkeypatch.setattr(stitch, "encode_part", held)
    sink = io.BytesIO()
    writer = stitch.PartsWriter(DiscardableStream(sink), table.schema, {}, encoders, 0)
    submitted: list[Any] = []
    submit = writer._pool.submit
    monkeypatch.setattr(writer._pool, "submit",
                        lambda *args: submitted.append(args) or submit(*args))
    written = [0]

    def feed() -> None:
        for batch in batches:
            writer.write_batch(batch)
            written[0] += 1
        writer.close()

    feeder = threading.Thread(target=feed, daemon=True)
    feeder.start()
    deadline = time.monotonic() + 10
    while len(submitted) < encoders + 1 and time.monotonic() < deadline:
        time.sleep(0.01)
    time.sleep(0.2)  # the writer now waits for the oldest part, handing over no more
    assert (len(submitted), written[0]) == (encoders + 1, encoders)
    for _ in batches:
        released.release()
    feeder.join(10)
    assert not feeder.is_alive()
    assert sink.getvalue() == single_bytes(table.schema, batches)


def batches_of(table: pa.Table, sizes: list[int]) -> list[pa.RecordBatch]:
    """The table cut into batches of these sizes (0 is an empty batch)."""
    assert sum(sizes) == table.num_rows
    out, start = [], 0
    for size in sizes:
        out.append(pa.RecordBatch.from_pylist([], schema=table.schema) if size == 0
                   else table.slice(start, size).combine_chunks().to_batches()[0])
        start += size
    return out


def footer_of(data: bytes) -> tuple[int, int]:
    """Where a Parquet file's footer starts, and its length."""
    length = struct.unpack_from("<i", data, len(data) - 8)[0]
    return len(data) - 8 - length, length


def mixed_table(rows: int, seed: int = 0) -> pa.Table:
    """Every kind of column cumtool passes through or writes, with missing cells."""
    rng = np.random.default_rng(seed)
    missing = rng.random(rows) < 0.1
    floats = rng.normal(0, 100, rows).cumsum()
    ints = rng.integers(-1000, 1000, rows).cumsum()
    words = np.array(["north", "south", "east", "west", "ünïcode"])[rng.integers(0, 5, rows)]
    day = datetime.date(2024, 3, 1)
    stamps = np.arange(rows, dtype=np.int64) * 1_000_003
    return pa.table({
        "f": pa.array(floats, mask=missing),
        "i": pa.array(ints),
        "i32": pa.array(ints.astype(np.int32), mask=missing),
        "u8": pa.array(rng.integers(0, 255, rows).astype(np.uint8)),
        "u64": pa.array(rng.integers(0, 1 << 62, rows).astype(np.uint64) * 3),
        "f32": pa.array(floats.astype(np.float32)),
        "f16": pa.array(floats.astype(np.float16)),
        "s": pa.array(words.tolist(), mask=missing),
        "big": pa.array(words.tolist(), type=pa.large_string()),
        "view": pa.array(words.tolist(), type=pa.string_view()),
        "b": pa.array(rng.random(rows) < 0.5),
        "d": pa.array([day + datetime.timedelta(days=int(k) % 400) for k in range(rows)]),
        "ts": pa.array(stamps, type=pa.timestamp("us", tz="Europe/Paris")),
        "ts_ns_utc": pa.array(stamps * 7, type=pa.timestamp("ns", tz="UTC"), mask=missing),
        "ts_s": pa.array(stamps // 1000, type=pa.timestamp("s")),
        "t": pa.array(stamps % 86_400_000_000, type=pa.time64("us")),
        "dur": pa.array(stamps, type=pa.duration("ms")),
        "dec": pa.array([decimal.Decimal(int(v)) / 100 for v in ints],
                        type=pa.decimal128(18, 2)),
        "dec38": pa.array([decimal.Decimal(int(v)) / 10**9 for v in ints],
                          type=pa.decimal128(38, 9), mask=missing),
        "dec256": pa.array([decimal.Decimal(int(v)) for v in ints], type=pa.decimal256(50, 0)),
        "dict": pa.array(words.tolist()).dictionary_encode(),
        "raw": pa.array([bytes([k % 256]) * (k % 5) for k in range(rows)]),
        "fixed": pa.array([k.to_bytes(3, "little") for k in range(rows)], pa.binary(3)),
        "list": pa.array([[k, k + 1] if k % 3 else None for k in range(rows)]),
        "large_list": pa.array([[str(k)] * (k % 3) for k in range(rows)],
                               pa.large_list(pa.string())),
        "struct": pa.array([{"a": k, "b": str(k) if k % 4 else None} for k in range(rows)]),
        "map": pa.array([[("k", k)] if k % 5 else None for k in range(rows)],
                        pa.map_(pa.string(), pa.int64())),
        "nested": pa.array([[{"x": [k]}] if k % 2 else [] for k in range(rows)]),
        "nothing": pa.nulls(rows),
        # Newer and extension types, carried by the ARROW:schema metadata.
        "dec32": pa.array([decimal.Decimal(int(v) % 10**6).scaleb(-2) for v in ints],
                          pa.decimal32(8, 2)),
        "dec64": pa.array([decimal.Decimal(int(v)).scaleb(-3) for v in ints],
                          pa.decimal64(15, 3)),
        "list_view": pa.array([[k] * (k % 3) for k in range(rows)], pa.list_view(pa.int16())),
        "uuid": pa.ExtensionArray.from_storage(pa.uuid(), pa.array(
            [k.to_bytes(16, "big") for k in range(rows)], pa.binary(16))),
        "json": pa.ExtensionArray.from_storage(pa.json_(), pa.array(
            [f'{{"k": {k}}}' for k in range(rows)], mask=missing)),
        "tensor": pa.ExtensionArray.from_storage(
            pa.fixed_shape_tensor(pa.float32(), [2, 2]),
            pa.array([[float(k)] * 4 for k in range(rows)], pa.list_(pa.float32(), 4))),
    }).replace_schema_metadata({b"pandas": json.dumps({
        "index_columns": [{"kind": "range", "name": None, "start": 0, "stop": rows, "step": 1}],
        "columns": [{"name": "f", "pandas_type": "float64"}]}).encode()})


@pytest.mark.parametrize("encoders", [2, 3])
@pytest.mark.parametrize("part_bytes", [1, 50_000, 1 << 30])
def test_stitched_file_is_the_single_writers_byte_for_byte(monkeypatch, encoders, part_bytes):
    # Batches of uneven sizes, empty ones among them (an empty row group has no data
    # page, but a dictionary column still has its dictionary page), more than 15 row
    # groups (a long list header in the footer), and empty batches left for close.
    monkeypatch.setattr(parquet, "PART_BYTES", part_bytes)
    table = mixed_table(3000)
    sizes = [1, 0, 700, 13, 0, 999] + [71] * 18 + [0]
    sizes += [table.num_rows - sum(sizes), 0, 0]
    batches = batches_of(table, sizes)
    whole = sink_bytes(table.schema, batches, 1)
    assert sink_bytes(table.schema, batches, encoders) == whole
    read = pq.read_table(io.BytesIO(whole))
    assert read.equals(table.cast(read.schema))
    assert pq.ParquetFile(io.BytesIO(whole)).metadata.num_row_groups == len(sizes)


@pytest.mark.parametrize("encoders", [1, 2])
def test_dictionary_only_where_values_repeat_and_the_metadata_kept(encoders):
    """As cumtool's writer always did: numbers (running totals, nearly all distinct) plain,
    text, dates and flags with a dictionary; the schema's metadata (pandas') kept."""
    table = mixed_table(200).select(["f", "i", "u8", "dec", "s", "d", "b"])
    data = sink_bytes(table.schema, table.to_batches(), encoders)
    assert data == single_bytes(table.schema, table.to_batches(),
                                use_dictionary=["s", "d", "b"])
    written = pq.ParquetFile(io.BytesIO(data))
    group = written.metadata.row_group(0)
    # (Parquet has no dictionary for booleans: pyarrow writes them plain whatever it is asked.)
    assert [group.column(k).has_dictionary_page for k in range(7)] == [
        False, False, False, False, True, True, False]
    assert written.schema_arrow.metadata == table.schema.metadata


def test_every_batch_its_own_part_empty_ones_too():
    """part_bytes 0: an empty batch is a part of its own, whose row group holds only the
    dictionary pages of its text columns; a text column first puts them at the row
    group's file offset."""
    table = mixed_table(400).select(["s", "f", "dict", "i"])
    batches = batches_of(table, [0, 0, 100, 0, 150, 0, 150, 0])
    options = {"use_dictionary": ["s", "dict"]}
    whole = single_bytes(table.schema, batches, **options)
    assert stitched_bytes(table.schema, batches, 0, 2, **options) == whole
    assert stitched_bytes(table.schema, batches, 0, 4, **options) == whole
    first = pq.ParquetFile(io.BytesIO(whole)).metadata.row_group(0).column(0)
    assert first.has_dictionary_page and first.dictionary_page_offset == 4


def test_no_batches_and_only_empty_batches():
    schema = mixed_table(1).schema
    assert sink_bytes(schema, [], 2) == sink_bytes(schema, [], 1)
    empty = [pa.RecordBatch.from_pylist([], schema=schema)] * 3
    assert sink_bytes(schema, empty, 2) == sink_bytes(schema, empty, 1)
    assert stitched_bytes(schema, empty, 0) == single_bytes(schema, empty)
    assert pq.ParquetFile(io.BytesIO(sink_bytes(schema, empty, 2))).metadata.num_rows == 0


def by_id(fields: list[Any]) -> dict[int, Any]:
    """A struct read by stitch._read_struct, as field id -> value."""
    return {entry[0]: entry[2] for entry in fields}


def plain_data_pages(data: bytes) -> list[bool]:
    """Row group by row group, whether the first column has data pages encoded PLAIN (its
    footer's encoding_stats: page type 0, a data page; encoding 0, PLAIN)."""
    footer, _ = stitch._read_struct(memoryview(data), footer_of(data)[0], None, [])
    found = []
    for row_group in by_id(footer)[4][1]:
        meta = by_id(by_id(row_group)[1][1][0])[3]
        stats = [by_id(entry) for entry in by_id(meta)[13][1]]
        found.append(any(entry[1] == 0 and entry[2] == 0 for entry in stats))
    return found


def test_dictionary_falls_back_to_plain_in_some_row_groups():
    """A text column whose dictionary outgrows its page limit is written plain from there
    on, in that row group only: the encodings and page layout differ row group by row
    group, and so do the chunks' sizes and positions."""
    rng = np.random.default_rng(1)
    repeated = [f"w{k}" for k in rng.integers(0, 20, 3000)]
    unique = [f"unique-{k:08d}-{'x' * (k % 9)}" for k in range(3000)]
    table = pa.table({"s": repeated[:1500] + unique[:1500], "x": np.arange(3000.0)})
    batches = batches_of(table, [500, 1000, 1300, 200])
    options = {"use_dictionary": ["s"], "dictionary_pagesize_limit": 2_000}
    whole = single_bytes(table.schema, batches, **options)
    assert stitched_bytes(table.schema, batches, 0, **options) == whole
    # Not in every row group; not in one whose values all came in one write (1024 rows).
    assert plain_data_pages(whole) == [False, False, True, False]


def test_dictionary_fallback_with_cumtools_options():
    """The same with the page limit pyarrow has by default (1 MiB), through ParquetSink."""
    text = [f"{k:032d}" for k in range(36_000)]  # 36 bytes a value in the dictionary
    table = pa.table({"s": text + text[:6_000], "x": np.arange(42_000.0)})
    batches = batches_of(table, [36_000, 6_000])
    whole = sink_bytes(table.schema, batches, 1)
    assert sink_bytes(table.schema, batches, 2) == whole
    assert plain_data_pages(whole) == [True, False]


def test_statistics_kept_in_some_row_groups_dropped_in_others():
    """pyarrow leaves min and max out of a chunk where one is over 4096 bytes, and a chunk
    of nulls only has none: the footer's fields differ from row group to row group."""
    text = ["a" * (4000 + 50 * (k % 5)) for k in range(30)] + ["b" * 10] * 10
    table = pa.table({"s": text, "n": pa.array([None] * 20 + list(range(20)), pa.int64())})
    batches = batches_of(table, [2, 1, 10, 7, 0, 10, 10])
    options = {"use_dictionary": ["s"]}
    whole = single_bytes(table.schema, batches, **options)
    assert stitched_bytes(table.schema, batches, 0, **options) == whole
    metadata = pq.ParquetFile(io.BytesIO(whole)).metadata
    min_max = [[bool(stats and stats.has_min_max) for stats in (
        metadata.row_group(k).column(c).statistics for k in range(7))] for c in range(2)]
    assert min_max == [[True, False, False, False, False, False, True],
                       [False, False, False, False, False, True, True]]


def test_many_row_groups_and_positions_of_longer_varints():
    """More than 127 row groups (a count of two varint bytes) and positions that need more
    varint bytes in the stitched file than in their part: the footer grows."""
    rng = np.random.default_rng(2)
    table = pa.table({"x": rng.normal(size=6000), "s": [f"v{k % 7}" for k in range(6000)]})
    sizes = [int(v) for v in rng.integers(0, 40, 200)]
    sizes.append(table.num_rows - sum(sizes))
    batches = batches_of(table, sizes)
    whole = sink_bytes(table.schema, batches, 1)
    assert sink_bytes(table.schema, batches, 2) == whole
    assert stitched_bytes(table.schema, batches, 0, 3, use_dictionary=["s"]) == whole
    assert pq.ParquetFile(io.BytesIO(whole)).metadata.num_row_groups == 201


def test_many_columns_and_big_offsets(monkeypatch):
    """More than 15 columns (a long list header) and row groups megabytes apart."""
    monkeypatch.setattr(parquet, "PART_BYTES", 1)
    rng = np.random.default_rng(3)
    table = pa.table({f"c{k}": rng.normal(size=40_000).cumsum() for k in range(20)})
    batches = table.to_batches(max_chunksize=5_000)
    assert sink_bytes(table.schema, batches, 2) == sink_bytes(table.schema, batches, 1)


def test_a_batch_longer_than_a_row_group():
    """pyarrow cuts a batch longer than its row group size (1Mi rows) into several row
    groups, in a part as in the single writer."""
    table = pa.table({"x": np.arange(1_100_005) % 3 == 0})
    batches = batches_of(table, [1_100_000, 5])
    whole = sink_bytes(table.schema, batches, 1)
    assert sink_bytes(table.schema, batches, 2) == whole
    assert pq.ParquetFile(io.BytesIO(whole)).metadata.num_row_groups == 3


def test_a_part_bigger_than_its_buffer_is_encoded_again():
    """A dictionary column written plain, uncompressed, is far bigger than in Arrow (one
    10 kB value, 2000 times): its part outgrows the buffer taken for it."""
    table = pa.table({"d": pa.array(["v" * 10_000] * 2000).dictionary_encode()})
    options = {"use_dictionary": False, "compression": None}
    assert table.nbytes < 20_000
    layout = stitch._Layout(stitch._written(table.schema, options, []))
    buffers = stitch._Buffers()
    part = stitch.encode_part(table.to_batches(), table.schema, options, layout, buffers)
    assert part.buffer is None and len(part.data) > 20_000_000
    assert [buffer.size for buffer in buffers._free] == [2 * table.nbytes + (1 << 20)]
    batches = batches_of(table, [700, 0, 1300])
    assert stitched_bytes(table.schema, batches, 0, **options) == \
        single_bytes(table.schema, batches, **options)


def test_buffers_are_used_again_once_given_back():
    buffers = stitch._Buffers()
    first = buffers.take(1000)
    assert buffers.take(1000) is not first  # still taken
    buffers.give(first)
    assert buffers.take(900) is first
    buffers.give(first)
    bigger = buffers.take(2000)  # too small: dropped, a new one
    assert bigger.size == 2000 and buffers._free == []


def test_parts_are_written_in_slices_of_at_most_write_bytes(monkeypatch):
    """Each part goes to the file in writes of at most WRITE_BYTES (whole ~8 MB parts cost
    the kernel several times more), and the file is still the single writer's."""
    monkeypatch.setattr(stitch, "WRITE_BYTES", 1000)
    table = mixed_table(3000)
    batches = batches_of(table, [1000, 0, 1500, 500])
    sizes: list[int] = []

    class Recorded(io.BytesIO):
        def write(self, data: Any) -> int:
            sizes.append(memoryview(data).nbytes)
            return super().write(data)

    sink = Recorded()
    writer = stitch.PartsWriter(DiscardableStream(sink), table.schema, {}, 2, 0)
    for batch in batches:
        writer.write_batch(batch)
    writer.close()
    assert sink.getvalue() == single_bytes(table.schema, batches)
    footer_start, footer_length = footer_of(sink.getvalue())
    assert sizes[0] == 4 and sizes[-1] == footer_length + 8  # the magic; footer, length, magic
    assert max(sizes[1:-1]) == 1000 and sum(sizes[1:-1]) == footer_start - 4
    assert len(sizes) > 2 + (footer_start - 4) // 1000  # the last slice of a part is shorter


@pytest.mark.parametrize("backend, released", [("mimalloc", True), ("system", False)])
def test_encoders_hand_back_freed_memory_only_where_it_is_cheap(monkeypatch, backend,
                                                                released):
    """After each part, its encoder thread hands the memory its writer freed back to the
    system (mimalloc keeps freed pages a while: ~50 MiB of peak RSS at 16 threads); the
    system pool's release (malloc_trim over every arena) is not asked for."""
    import threading

    calls: list[str] = []

    class Pool:
        backend_name = backend

        def release_unused(self) -> None:
            calls.append(threading.current_thread().name)

    monkeypatch.setattr(pa, "default_memory_pool", Pool)
    table = mixed_table(300)
    batches = batches_of(table, [100, 100, 100])
    assert stitched_bytes(table.schema, batches) == single_bytes(table.schema, batches)
    if released:
        assert len(calls) == 3 and all(name.startswith("cumtool-parquet") for name in calls)
    else:
        assert calls == []


def test_required_columns_are_stitched_too():
    """A column declared non-nullable (as Spark writes them) keeps the threads: the check
    at start-up writes nulls, so it takes the columns as nullable."""
    schema = pa.schema([pa.field("x", pa.float64(), nullable=False),
                        pa.field("s", pa.string(), nullable=False),
                        pa.field("l", pa.list_(pa.field("e", pa.int32(), nullable=False)),
                                 nullable=False)])
    table = pa.table({"x": np.arange(5000, dtype=np.float64), "s": ["a", "b"] * 2500,
                      "l": [[k] for k in range(5000)]}, schema=schema)
    batches = table.to_batches(max_chunksize=1000)
    assert sink_bytes(schema, batches, 2) == sink_bytes(schema, batches, 1)


@pytest.mark.parametrize(("options", "stitched"), [
    ({}, True),
    ({"compression": "zstd", "compression_level": 3}, True),
    ({"write_page_checksum": True, "data_page_size": 512}, True),  # pages hold no position
    ({"use_byte_stream_split": ["x"], "use_dictionary": False}, True),
    ({"data_page_version": "2.0"}, True),
    ({"write_statistics": False}, True),
    ({"use_content_defined_chunking": True}, True),
    # Written after every row group, with positions of their own: refused.
    ({"write_page_index": True}, False),
    ({"bloom_filter_options": {"s": {"ndv": 100}}}, False),
    ({"sorting_columns": [pq.SortingColumn(0)]}, False),  # a field cumtool never sets
])
def test_options_stitched_exactly_or_refused(options, stitched):
    """The start-up check accepts options that change only pages and refuses those that
    add what the stitcher does not know; where it accepts, the bytes are the same."""
    rng = np.random.default_rng(4)
    table = pa.table({"x": rng.normal(size=2000), "s": [f"s{k % 50}" for k in range(2000)]})
    assert stitch.stitches_exactly(table.schema, options) == stitched
    if stitched:
        batches = batches_of(table, [300, 0, 700, 1000])
        assert (stitched_bytes(table.schema, batches, 0, **options)
                == single_bytes(table.schema, batches, **options))


def test_the_check_at_start_falls_back_to_the_single_writer(monkeypatch):
    monkeypatch.setattr(parquet, "stitches_exactly", lambda schema, options: False)
    table = mixed_table(100)
    sink = io.BytesIO()
    writer = ParquetSink(sink, table.schema, encoders=2)
    for batch in table.to_batches(max_chunksize=30):
        writer.write(batch)
    writer.close()
    assert isinstance(writer._writer, pq.ParquetWriter)
    assert sink.getvalue() == sink_bytes(table.schema, table.to_batches(max_chunksize=30), 1)


def test_batches_and_row_groups_are_the_same_at_every_thread_count(monkeypatch, tmp_path):
    """A Parquet output's row groups are its batches: their size never follows --threads
    (5 MiB from 8 threads on once made other row groups, and other bytes)."""
    path = tmp_path / "in.parquet"
    pq.write_table(pa.table({f"c{k}": np.arange(1000.0) for k in range(8)}), path)

    def rows(threads: int, usable: int) -> int:
        monkeypatch.setattr(native, "CORES", threads)
        monkeypatch.setattr(native, "USABLE", usable)
        return parquet.ParquetSource(str(path), "in.parquet", None)._batch_rows

    few = rows(2, 2)
    assert 60_000 < few < 98_304  # 6 MiB of rows of 8 floats (64 bytes) and their overhead
    assert rows(1, 16) == rows(7, 16) == rows(8, 16) == rows(16, 16) == rows(16, 2) == few


def test_threads_only_for_batches_of_big_column_chunks(monkeypatch):
    """Each column chunk costs the stitcher some Python: a wide table's small chunks, or
    small batches, go to the single writer (the first batch decides)."""
    monkeypatch.setattr(parquet, "MIN_CHUNK_BYTES", 1000)
    schema = pa.schema([("x", pa.float64()), ("l", pa.list_(pa.struct(
        [("a", pa.int64()), ("b", pa.string())])))])  # 3 Parquet columns
    chosen = []
    for rows in (50, 150):  # 150 rows: 1200 bytes of x alone
        table = pa.table({"x": np.arange(float(rows)), "l": [[{"a": 1, "b": "b"}]] * rows},
                         schema=schema)
        assert (table.nbytes >= 3000) == (rows == 150)
        writer = ParquetSink(io.BytesIO(), schema, encoders=2)
        writer.write(table.to_batches()[0])
        chosen.append(type(writer._writer))
        writer.close()
    assert chosen == [pq.ParquetWriter, stitch.PartsWriter]
    # Each field's leaves, as the Parquet schema pyarrow writes has them.
    table = mixed_table(1)
    written = pq.ParquetFile(io.BytesIO(single_bytes(table.schema, table.to_batches()))).schema
    paths = [written.column(k).path.split(".")[0] for k in range(len(written))]
    assert [parquet._leaves(f.type) for f in table.schema] == [
        paths.count(name) for name in table.column_names]


@pytest.mark.parametrize("encoders", [1, 2])
def test_a_type_parquet_cannot_hold_fails_before_any_batch(encoders):
    schema = pa.schema([("x", pa.float64()), ("i", pa.month_day_nano_interval())])
    sink = io.BytesIO()
    with pytest.raises(pa.ArrowNotImplementedError, match="month_day_nano_interval"):
        ParquetSink(sink, schema, encoders=encoders)
    assert sink.getvalue() == b""


def test_one_core_uses_the_single_writer(monkeypatch):
    monkeypatch.setattr(parquet, "_encoders", lambda: 1)
    writer = ParquetSink(io.BytesIO(), pa.schema([("x", pa.float64())]))
    writer.close()
    assert isinstance(writer._writer, pq.ParquetWriter)


def test_a_part_refused_mid_run_fails_the_run_and_writes_no_footer(monkeypatch):
    """Should a part show a field the check at start-up did not (none is known to), the
    run fails: no file is better than a wrong one."""
    monkeypatch.setattr(parquet, "PART_BYTES", 1 << 20)
    schema = pa.schema([("x", pa.float64())])
    sink = io.BytesIO()
    writer = ParquetSink(sink, schema, encoders=2)
    batch = pa.RecordBatch.from_pydict({"x": [1.0]}, schema=schema)
    writer.write(batch)  # the check at start-up passes; the batch waits for more
    assert isinstance(writer._writer, stitch.PartsWriter)
    monkeypatch.setitem(stitch._COLUMN_META, 16, (stitch._I64, None))  # SizeStatistics
    with pytest.raises(OutputError, match=r"could not be stitched safely \(field 16"):
        writer.write(batch)
        writer.close()
    writer.abort()
    assert sink.getvalue() == b"PAR1"


def test_a_part_that_fails_raises_what_the_single_writer_raises():
    schema = pa.schema([("x", pa.float64())])
    wrong = pa.RecordBatch.from_pydict({"y": [1.0]})
    raised = []
    for encoders in (1, 2):
        writer = ParquetSink(io.BytesIO(), schema, encoders=encoders)
        with pytest.raises(ValueError, match="schema") as error:
            writer.write(wrong)
            writer.close()
        raised.append(type(error.value))
        writer.abort()
    assert raised[0] is raised[1]


def test_abort_writes_nothing_more_and_stops_the_encoders(monkeypatch):
    monkeypatch.setattr(parquet, "PART_BYTES", 1)
    table = mixed_table(2000)
    sink = io.BytesIO()
    writer = ParquetSink(sink, table.schema, encoders=2)
    for batch in table.to_batches(max_chunksize=100):
        writer.write(batch)
    writer.abort()
    size = len(sink.getvalue())
    assert isinstance(writer._writer, stitch.PartsWriter)
    writer._writer._pool.shutdown(wait=True)
    assert len(sink.getvalue()) == size  # nothing reached the stream after the abort
    assert sink.getvalue()[:4] == b"PAR1"
    assert sink.getvalue()[-4:] != b"PAR1" or size == 4


# The footer's reader ----------------------------------------------------------------------

def encode_struct(out: bytearray, fields: list[Any]) -> None:
    """Thrift compact protocol, written here apart from the module (which writes only
    varints and a list's header): to make footers the reader must refuse."""
    def varint(value: int) -> None:
        while value >= 0x80:
            out.append(value & 0x7F | 0x80)
            value >>= 7
        out.append(value)

    def value_of(kind: int, value: Any) -> None:
        if kind in (stitch._I16, stitch._I32, stitch._I64):
            varint((value << 1) ^ (value >> 63))
        elif kind == stitch._BINARY:
            varint(len(value))
            out.extend(value)
        elif kind == stitch._STRUCT:
            encode_struct(out, value)
        elif kind == stitch._LIST:
            element, items = value
            out.append(len(items) << 4 | element if len(items) < 15 else 0xF0 | element)
            if len(items) >= 15:
                varint(len(items))
            for item in items:
                value_of(element, item)
        elif kind == stitch._DOUBLE:
            out.extend(struct.pack("<d", value))
        else:
            out.append(value)

    last = 0
    for field, kind, value, *_ in fields:
        if kind in (stitch._TRUE, stitch._FALSE):
            kind = stitch._TRUE if value else stitch._FALSE
        out.append((field - last) << 4 | kind if 0 < field - last <= 15 else kind)
        if not 0 < field - last <= 15:
            varint(field << 1)
        if kind not in (stitch._TRUE, stitch._FALSE):
            value_of(kind, value)
        last = field
    out.append(0)


SMALL_SCHEMA = pa.schema([("x", pa.float64()), ("s", pa.string())])
SMALL_OPTIONS = {"use_dictionary": ["s"]}


def small_file() -> bytes:
    """Two row groups: the second's chunks are not at the file's start."""
    table = pa.table({"x": [1.0, 2.0, 3.0], "s": ["a", "b", "a"]}, schema=SMALL_SCHEMA)
    return single_bytes(SMALL_SCHEMA, batches_of(table, [2, 1]), **SMALL_OPTIONS)


def small_layout() -> Any:
    return stitch._Layout(memoryview(single_bytes(SMALL_SCHEMA, [], **SMALL_OPTIONS)))


def with_footer(data: bytes, footer: bytes) -> bytes:
    start, _ = footer_of(data)
    return data[:start] + footer + struct.pack("<i", len(footer)) + b"PAR1"


def refused(data: bytes) -> str:
    with pytest.raises(stitch.Unstitchable) as error:
        stitch.Part(memoryview(data), small_layout())
    return str(error.value)


def edited(path: tuple[int, ...], edit: Callable[[list[Any]], None]) -> bytes:
    """small_file() with its footer's struct at `path` (field ids, then an item's index in
    a list) changed by `edit`, and written again."""
    data = small_file()
    start, _ = footer_of(data)
    footer, _ = stitch._read_struct(memoryview(data), start, None, [])
    node: Any = footer
    for step in path:
        node = node[1][step] if isinstance(node, tuple) else next(
            entry[2] for entry in node if entry[0] == step)
    edit(node)
    out = bytearray()
    encode_struct(out, footer)
    return with_footer(data, bytes(out))


def test_a_part_read_as_pyarrow_wrote_it():
    """Its rows, its row groups' bytes as in its footer, and where their positions are:
    the row groups' file offsets, the chunks' data and dictionary pages (file_offset,
    0 in pyarrow 26, is none)."""
    data = small_file()
    start, length = footer_of(data)
    part = stitch.Part(memoryview(data), small_layout())
    assert (part.rows, part.count) == (3, 2)
    assert bytes(part.data) == data[4:start]
    assert part.row_groups in data[start:start + length]
    metadata = pq.ParquetFile(io.BytesIO(data)).metadata
    expected = []
    for k in range(2):
        group = metadata.row_group(k)
        x, s = group.column(0), group.column(1)
        expected += [x.data_page_offset, s.data_page_offset, s.dictionary_page_offset,
                     x.data_page_offset]  # the last: the row group's file_offset
    assert [value for _, _, value in part.positions] == expected
    for begin, end, value in part.positions:  # each a varint of the value, zigzagged
        out = bytearray()
        stitch._write_i64(out, value)
        assert part.row_groups[begin:end] == bytes(out)


def test_the_test_encoder_writes_footers_as_pyarrow_does():
    assert edited((), lambda fields: None) == small_file()
    table = mixed_table(300)
    data = sink_bytes(table.schema, batches_of(table, [100, 0, 200]), 1)
    start, _ = footer_of(data)
    footer, end = stitch._read_struct(memoryview(data), start, None, [])
    out = bytearray()
    encode_struct(out, footer)
    assert bytes(out) == data[start:end]
    assert end == len(data) - 8


@pytest.mark.parametrize(("path", "field"), [
    ((4, 0), 7),  # RowGroup.ordinal
    ((4, 1), 4),  # RowGroup.sorting_columns
    ((4, 0, 1, 0), 4),  # ColumnChunk.offset_index_offset
    ((4, 0, 1, 1), 1),  # ColumnChunk.file_path
    ((4, 1, 1, 0, 3), 10),  # ColumnMetaData.index_page_offset
    ((4, 0, 1, 1, 3), 14),  # ColumnMetaData.bloom_filter_offset
    ((4, 0, 1, 0, 3), 17),  # ColumnMetaData.geospatial_statistics
    ((4, 0, 1, 0, 3), 30),  # a field no parquet.thrift has yet
    ((4, 0, 1, 0, 3, 12), 9),  # Statistics
    ((4, 0, 1, 0, 3, 16), 4),  # SizeStatistics
])
def test_an_unknown_field_in_a_row_group_is_refused(path, field):
    def add(fields: list[Any]) -> None:
        fields.append([field, stitch._I64, 99])
        fields.sort(key=lambda entry: entry[0])
    assert refused(edited(path, add)) == f"field {field} of Thrift type 6 in a Parquet footer"


def test_a_known_field_of_another_type_is_refused():
    def retype(fields: list[Any]) -> None:
        entry = next(entry for entry in fields if entry[0] == 9)  # data_page_offset
        entry[1], entry[2] = stitch._I32, entry[2]
    assert refused(edited((4, 0, 1, 0, 3), retype)) == \
        "field 9 of Thrift type 5 in a Parquet footer"


@pytest.mark.parametrize(("field", "value"), [
    (1, 1),  # version
    (5, (stitch._STRUCT, [[[1, stitch._BINARY, b"k"]]])),  # key-value metadata
    (6, b"parquet-cpp-arrow version 99"),  # created_by
    (8, (stitch._STRUCT, [])),  # encryption_algorithm
])
def test_file_fields_not_those_of_the_single_writer_are_refused(field, value):
    def change(fields: list[Any]) -> None:
        for entry in fields:
            if entry[0] == field:
                entry[2] = value
                return
        fields.append([field, stitch._STRUCT, []])
    assert refused(edited((), change)) == \
        "a part's footer is not the single writer's outside its row groups"


def test_a_schema_not_the_single_writers_is_refused():
    other = pa.schema([("x", pa.float64()), ("s", pa.string())], metadata={"a": "b"})
    table = pa.table({"x": [1.0], "s": ["a"]}, schema=other)
    assert refused(single_bytes(other, table.to_batches(), **SMALL_OPTIONS)) == \
        "a part's footer is not the single writer's outside its row groups"


def test_bytes_after_the_row_groups_are_refused():
    data = small_file()
    start, _ = footer_of(data)
    assert refused(data[:start] + b"\x00" * 3 + data[start:]) == "3 bytes after the row groups"


def test_a_position_outside_the_row_groups_is_refused():
    def move(fields: list[Any]) -> None:
        next(entry for entry in fields if entry[0] == 5)[2] = 10_000  # file_offset
    assert refused(edited((4, 1), move)) == "position 10000 outside the row groups"


def test_a_chunk_where_another_should_start_is_refused():
    def move(fields: list[Any]) -> None:
        next(entry for entry in fields if entry[0] == 9)[2] += 1
    assert refused(edited((4, 0, 1, 0, 3), move)) == "a column chunk at 5, where 4 was expected"


def test_a_damaged_footer_is_refused():
    data = small_file()
    start, length = footer_of(data)
    refused(with_footer(data, data[start:start + length - 1]))  # whatever it then reads
    assert refused(data[:-8] + struct.pack("<i", len(data)) + b"PAR1") == \
        "pyarrow wrote an unexpected Parquet layout"
    with pytest.raises(stitch.Unstitchable, match="a string runs past the footer"):
        stitch._read_struct(memoryview(b"\x18\xff\x07ab"), 0, None, [])


# Through the command line ----------------------------------------------------------------

def run_parquet(invoke: Invoke, monkeypatch, tmp_path: Path, encoders: int, *args: str) -> bytes:
    monkeypatch.setattr(parquet, "_encoders", lambda: encoders)
    stitched = []

    class Counted(stitch.PartsWriter):
        def __init__(self, *args: Any) -> None:
            super().__init__(*args)
            stitched.append(self)

    monkeypatch.setattr(parquet, "PartsWriter", Counted)
    out = tmp_path / f"out-{encoders}.parquet"
    ok(invoke("cumsum", str(tmp_path / "in.parquet"), "-o", str(out), "-q", *args))
    assert len(stitched) == (encoders > 1)
    return out.read_bytes()


@pytest.mark.parametrize(("batch_rows", "rows"),
                         [("1", 300), ("37", 3000), ("1000", 3000), ("100000", 3000)])
def test_cli_output_is_the_same_with_one_and_with_several_encoders(
        invoke: Invoke, monkeypatch, tmp_path: Path, batch_rows: str, rows: int):
    monkeypatch.setattr(parquet, "PART_BYTES", 2_000)
    table = mixed_table(rows, seed=5).select(
        ["f", "i", "i32", "u8", "f32", "s", "big", "b", "d", "ts", "dec", "dict", "raw"])
    pq.write_table(table, tmp_path / "in.parquet", row_group_size=rows // 4 - 50)
    single = run_parquet(invoke, monkeypatch, tmp_path, 1, "--batch-rows", batch_rows)
    several = run_parquet(invoke, monkeypatch, tmp_path, 2, "--batch-rows", batch_rows)
    assert several == single
    result = pq.ParquetFile(io.BytesIO(several))
    assert result.schema_arrow.names == table.schema.names
    assert result.schema_arrow.metadata == table.schema.metadata  # the input's, kept
    got = result.read()
    # Missing cells stay missing and are skipped; integers sum in int64, float32 in a
    # double as torch's CPU cumsum does (docs/semantics.md).
    for name, wide, dtype in (("f", np.float64, np.float64), ("i", np.int64, np.int64),
                              ("i32", np.int64, np.int64), ("f32", np.float64, np.float32)):
        column = table.column(name)
        valid = ~np.asarray(column.is_null())
        expect = np.cumsum(column.fill_null(0).to_numpy().astype(wide)).astype(dtype)
        out = got.column(name)
        assert out.type == pa.from_numpy_dtype(dtype)
        assert np.array_equal(np.asarray(out.is_null()), ~valid)
        assert np.array_equal(out.fill_null(0).to_numpy()[valid], expect[valid])
    assert np.array_equal(got.column("u8").to_numpy(),
                          np.cumsum(table.column("u8").to_numpy().astype(np.int64)))
    running = decimal.Decimal(0)
    sums = []
    for value in table.column("dec").to_pylist():
        running += value
        sums.append(running)
    assert got.column("dec").to_pylist() == sums
    for name in ("s", "big", "b", "d", "ts", "dict", "raw"):  # not scanned: passed through
        assert got.column(name).equals(table.column(name)), name
    row_groups = [result.metadata.row_group(k).num_rows for k in range(result.num_row_groups)]
    assert sum(row_groups) == rows
    assert max(row_groups) <= int(batch_rows)



@pytest.mark.parametrize(("threads", "usable", "encoders"),
                         [(1, 16, 1), (2, 16, 2), (16, 16, 4), (16, 2, 2), (3, 1, 2)])
def test_encoders_are_the_threads_asked_for_within_the_cores(monkeypatch, threads, usable,
                                                             encoders):
    """No more encoders than the cores (more only hold parts in memory), at most 4."""
    from cumtool import native

    monkeypatch.setattr(native, "CORES", threads)
    monkeypatch.setattr(native, "USABLE", usable)
    assert parquet._encoders() == encoders


@pytest.fixture
def arrow_threads():
    """Arrow's pool size, given back after the test."""
    before = pa.cpu_count()
    yield
    pa.set_cpu_count(before)


def test_arrows_pool_decodes_on_the_usable_cores_and_gets_its_size_back(
        monkeypatch, tmp_path: Path, arrow_threads):
    """--threads 16 on 2 cores: a Parquet file is decoded on 2 of Arrow's threads, not 16
    (each keeps memory it freed), the same batches; the pool's size comes back after the
    file is read, and after a read given up midway."""
    from cumtool import native
    from cumtool.formats.parquet.parquet import ParquetSource

    monkeypatch.setattr(native, "CORES", 16)
    pa.set_cpu_count(16)
    table = mixed_table(3000, seed=3)
    pq.write_table(table, tmp_path / "in.parquet", row_group_size=700)
    source = ParquetSource(str(tmp_path / "in.parquet"), "in.parquet", 500)

    def read() -> tuple[set[int], pa.Table]:
        sizes = set()
        batches = []
        for batch in source.batches():
            sizes.add(pa.cpu_count())
            batches.append(batch)
        return sizes, pa.Table.from_batches(batches)

    monkeypatch.setattr(native, "USABLE", 32)  # as many cores as threads: left as it is
    sizes, wide = read()
    assert sizes == {16} and wide.num_rows == 3000
    monkeypatch.setattr(native, "USABLE", 2)
    sizes, narrow = read()
    assert sizes == {2} and pa.cpu_count() == 16
    assert narrow.equals(wide)
    batches = source.batches()
    next(batches)
    assert pa.cpu_count() == 2
    batches.close()
    assert pa.cpu_count() == 16


def test_cli_output_is_the_same_at_16_threads_on_2_cores(invoke: Invoke, monkeypatch,
                                                         tmp_path: Path, arrow_threads):
    """--threads 16 on 2 cores (2 encoders, Arrow's pool held to 2 while reading) writes the
    bytes of --threads 1 (pyarrow's single writer), several row groups in and out."""
    from cumtool import native

    monkeypatch.setattr(native, "USABLE", 2)
    monkeypatch.setattr(parquet, "PART_BYTES", 2_000)
    table = mixed_table(3000, seed=9).select(["f", "i", "i32", "s", "dec"])
    pq.write_table(table, tmp_path / "in.parquet", row_group_size=900)
    outputs = {}
    for threads in ("1", "16"):
        out = tmp_path / f"out-{threads}.parquet"
        ok(invoke("cumsum", str(tmp_path / "in.parquet"), "-o", str(out), "-q",
                  "--batch-rows", "400", "--threads", threads))
        outputs[threads] = out.read_bytes()
    assert outputs["16"] == outputs["1"]
    assert pq.ParquetFile(io.BytesIO(outputs["16"])).num_row_groups == 8  # 7 x 400, 200

def test_cli_no_rows(invoke: Invoke, monkeypatch, tmp_path: Path):
    pq.write_table(pa.table({"x": pa.array([], pa.float64())}), tmp_path / "in.parquet")
    assert (run_parquet(invoke, monkeypatch, tmp_path, 2)
            == run_parquet(invoke, monkeypatch, tmp_path, 1))
    assert pq.read_table(tmp_path / "out-2.parquet").num_rows == 0


def test_cli_a_part_refused_mid_run_leaves_no_output(invoke: Invoke, monkeypatch,
                                                     tmp_path: Path):
    pq.write_table(pa.table({"x": np.arange(100.0)}), tmp_path / "in.parquet")
    monkeypatch.setattr(parquet, "_encoders", lambda: 2)
    monkeypatch.setattr(parquet, "stitches_exactly", lambda schema, options: True)
    monkeypatch.delitem(stitch._COLUMN_META, 16)  # as if pyarrow wrote a field unknown here
    out = tmp_path / "out.parquet"
    result = invoke("cumsum", str(tmp_path / "in.parquet"), "-o", str(out), "-q")
    assert result.exit_code == 1
    assert "could not be stitched safely (field 16 of Thrift type 12" in result.stderr
    assert not out.exists()


# Fuzz ------------------------------------------------------------------------------------

TYPES: list[Callable[[np.random.Generator, int], pa.Array]] = [
    lambda rng, n: pa.array(rng.normal(size=n)),
    lambda rng, n: pa.array(rng.integers(-5, 5, n)),
    lambda rng, n: pa.array(rng.integers(0, 1 << 40, n).astype(np.uint64)),
    lambda rng, n: pa.array(rng.random(n) < 0.3),
    lambda rng, n: pa.array([f"t{v}" * int(v % 4) for v in rng.integers(0, 300, n)]),
    lambda rng, n: pa.array([f"{v}" for v in rng.integers(0, 10**9, n)], pa.large_string()),
    lambda rng, n: pa.array([bytes(int(v) % 256 for _ in range(int(v) % 7))
                             for v in rng.integers(0, 10**6, n)], pa.binary()),
    lambda rng, n: pa.array(rng.integers(0, 10**12, n), pa.timestamp("ms", tz="Asia/Tokyo")),
    lambda rng, n: pa.array([decimal.Decimal(int(v)).scaleb(-3) for v in
                             rng.integers(-10**9, 10**9, n)], pa.decimal128(12, 3)),
    lambda rng, n: pa.array([[int(v)] * int(v % 3) for v in rng.integers(0, 9, n)]),
    lambda rng, n: pa.array([{"a": float(v), "b": [int(v)]} for v in rng.normal(size=n)]),
    lambda rng, n: pa.array([f"c{v}" for v in rng.integers(0, 4, n)]).dictionary_encode(),
    lambda rng, n: pa.nulls(n, pa.float64()),
]


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(150))
def test_fuzz_random_schemas_data_and_batches(seed):
    rng = np.random.default_rng(seed)
    rows = int(rng.integers(0, 3000))
    columns = {}
    for k in range(int(rng.integers(1, 20))):
        array = TYPES[int(rng.integers(0, len(TYPES)))](rng, rows)
        nulls = rng.random() < 0.5
        mask = rng.random(rows) < rng.random() if nulls else None
        if mask is not None and not pa.types.is_dictionary(array.type):
            array = pa.array(array.to_pylist(), array.type, mask=mask)
        columns[f"c{k}"] = array
    table = pa.table(columns)
    sizes: list[int] = []
    while sum(sizes) < rows:
        sizes.append(min(rows - sum(sizes), int(rng.integers(0, rows // 4 + 2))))
    sizes.insert(int(rng.integers(0, len(sizes) + 1)), 0)
    batches = batches_of(table, sizes)
    options: dict[str, Any] = {"use_dictionary": [
        name for name in table.column_names if rng.random() < 0.5]}
    if rng.random() < 0.3:
        options["dictionary_pagesize_limit"] = int(rng.integers(100, 5000))
    if rng.random() < 0.3:
        options["data_page_size"] = int(rng.integers(100, 5000))
    whole = single_bytes(table.schema, batches, **options)
    for part_bytes in (0, int(rng.integers(1, 100_000))):
        assert stitched_bytes(table.schema, batches, part_bytes,
                              int(rng.integers(2, 5)), **options) == whole
    read = pq.read_table(io.BytesIO(whole))
    assert read.num_rows == rows


def test_text_stored_as_views_is_read_as_text(invoke: Callable[..., Result],
                                              tmp_path: Path) -> None:
    """pyarrow keeps a table's Arrow schema in the file: text written as string views comes
    back as views, which --reverse (Arrow's take) and cumnunique's sets do not take (an
    internal error), and which a chart's --x called not text."""
    path = tmp_path / "views.parquet"
    pq.write_table(pa.table({"v": pa.array(["a", "b", "a"], type=pa.string_view()),
                             "n": [1, 2, 3]}), path)
    assert pq.read_schema(path).field("v").type == pa.string_view()
    assert ok(invoke("cumsum", str(path), "--reverse", "--to", "csv")).stdout == (
        "v,n\na,6\nb,5\na,3\n")
    assert ok(invoke("cumnunique", str(path), "-c", "v", "--reverse", "--to", "csv")
              ).stdout == "v,n\n2,1\n2,2\n1,3\n"
    out = tmp_path / "out.parquet"
    ok(invoke("cumsum", str(path), "-o", str(out)))
    assert pq.read_table(out).schema.field("v").type == pa.large_string()


@pytest.mark.parametrize("user_setting, used", [(None, "0"), ("1", "1")])
def test_arrows_allocator_commits_memory_as_used_unless_the_user_says(tmp_path, user_setting,
                                                                      used):
    """The CLI sets the environment (native.py) before pyarrow loads, so that Arrow's
    mimalloc starts with its arenas committed as used, not up front (freed pages otherwise
    stayed in the peak RSS: ~60 MiB of it at --threads 16, RESULTS-parquet2.md). A user's
    own setting wins. mimalloc says which it took when asked to be verbose."""
    if pa.default_memory_pool().backend_name != "mimalloc":
        pytest.skip("this pyarrow allocates with " + pa.default_memory_pool().backend_name)
    source, out = tmp_path / "in.parquet", tmp_path / "out.parquet"
    pq.write_table(pa.table({"x": [1.0, 2.5, 4.0], "n": [1, 2, 3]}), source)
    env = {k: v for k, v in os.environ.items() if not k.startswith("MIMALLOC_")}
    env.update(PYTHONPATH=str(REPO), MIMALLOC_VERBOSE="1")
    if user_setting is not None:
        env[native.MIMALLOC_COMMIT] = user_setting
    done = subprocess.run([sys.executable, "-m", "cumtool", "cumsum", str(source), "-o",
                           str(out)], env=env, capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    assert f"option 'arena_eager_commit': {used}" in done.stderr
    assert pq.read_table(out).to_pydict() == {"x": [1.0, 3.5, 7.5], "n": [1, 3, 6]}


@pytest.mark.parametrize("to, na", [("csv", ""), ("tsv", "NA")])
def test_a_passed_through_decimal256_is_written_as_text_with_its_scale(invoke, tmp_path,
                                                                        to, na):
    """polars takes no decimal256 (precision over 38, BigQuery's BIGNUMERIC): CSV output
    was its panic and a traceback, after the header."""
    path = tmp_path / "d.parquet"
    digits = decimal.Decimal("12345678901234567890123456789012345678.5")
    pq.write_table(pa.table({
        "x": [1, 2, 3],
        "d": pa.array([decimal.Decimal("1.5"), None, digits], pa.decimal256(40, 2))}), path)
    args = ["--na-rep", na] if na else []
    result = ok(invoke("cumsum", str(path), "-c", "x", "--to", to, *args))
    sep = "," if to == "csv" else "\t"
    assert result.stdout == (f"x{sep}d\n1{sep}1.50\n3{sep}{na}\n"
                             f"6{sep}12345678901234567890123456789012345678.50\n")
    assert result.stderr == ""


@pytest.mark.parametrize("overflow", ["error", "wrap"])
def test_a_decimal_wider_than_64_bits_is_told_to_scan_as_floats(invoke, tmp_path, overflow):
    """The hint was --overflow wrap, which then failed with the same error: the value
    cannot be read as 64 bits at all. --dtype float64 scans it."""
    path = tmp_path / "big.parquet"
    pq.write_table(pa.table({"d": pa.array(
        [decimal.Decimal("1.5"), decimal.Decimal("123456789012345678901.25")],
        pa.decimal128(38, 2))}), path)
    result = invoke("cummax", str(path), "--to", "csv", "--overflow", overflow)
    assert result.exit_code == 1
    assert result.stderr == (f"Error: {path}: column 'd', row 2: decimal "
                             "123456789012345678901.25 does not fit 64 bits; scan it as "
                             "floats with --dtype float64\n")
    floats = ok(invoke("cummax", str(path), "--to", "csv", "--dtype", "float64"))
    assert floats.stdout == "d\n1.5\n1.2345678901234568e+20\n"


def test_a_decimal_sum_past_64_bits_is_said_in_decimals(invoke, tmp_path):
    """It said `cumsum overflows int64 (adding 5000000000000000000)`: the scaled count."""
    path = tmp_path / "d.parquet"
    pq.write_table(pa.table({"d": pa.array([decimal.Decimal("50000000000000000.00")] * 3,
                                           pa.decimal128(20, 2))}), path)
    result = invoke("cumsum", str(path), "--to", "csv")
    assert result.exit_code == 1
    assert result.stderr == (f"Error: {path}: column 'd', row 2: cumsum overflows the 64 "
                             "bits a decimal is held in (adding 50000000000000000.00); use "
                             "--overflow wrap for wrap-around\n")
