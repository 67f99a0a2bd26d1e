"""Text made ahead on several threads and written in order: pipeline.RenderedAhead (the
CSV and JSON Lines writers' pool), native.ahead_workers (how many threads it and the JSON
Lines reader's parser get), the CSV writer's number batches at every thread count, and the
JSON Lines reader's first block, small, whose types are learnt before blocks run ahead."""

from __future__ import annotations

import io
import json
import threading
import time

import numpy as np
import pyarrow as pa
import pytest
from helpers import ok

from cumtool import native
from cumtool.formats import CsvWriteOptions
from cumtool.formats.csv import csvwrite
from cumtool.formats.jsonl import jsonl as module
from cumtool.pipeline import RenderedAhead

THREADS = ["1", "2", "3", "16"]


# RenderedAhead -------------------------------------------------------------------------

def _slow(text: bytes, delay: float):
    def make() -> bytes:
        time.sleep(delay)
        return text
    return make


@pytest.mark.parametrize("workers", [1, 2, 4])
def test_text_made_ahead_is_written_in_the_order_it_was_put(workers: int) -> None:
    out = io.BytesIO()
    ahead = RenderedAhead(out, workers, "test-ahead")
    # the first calls are the slowest: made later than the ones after them
    for k in range(12):
        ahead.put(_slow(b"%d," % k, 0.002 * (12 - k)))
    ahead.drain()
    out.write(b"|")  # written between, as a writer does for text it makes itself
    ahead.put(_slow(b"last", 0))
    ahead.close()
    assert out.getvalue() == b"0,1,2,3,4,5,6,7,8,9,10,11,|last"


def test_text_is_made_on_the_pool_and_written_by_the_caller() -> None:
    made: list[str] = []
    written: list[str] = []

    class Stream(io.BytesIO):
        def write(self, data) -> int:  # type: ignore[override]
            written.append(threading.current_thread().name)
            return super().write(data)

    def make() -> bytes:
        made.append(threading.current_thread().name)
        return b"x"

    ahead = RenderedAhead(Stream(), 3, "test-ahead")
    for _ in range(10):
        ahead.put(make)
    ahead.close()
    assert all(name.startswith("test-ahead") for name in made)
    assert set(written) == {threading.current_thread().name}


def test_a_failure_making_text_is_raised_in_order_and_abort_drops_the_rest() -> None:
    def failing() -> bytes:
        raise ValueError("no text")

    out = io.BytesIO()
    ahead = RenderedAhead(out, 2, "test-ahead")
    ahead.put(_slow(b"a", 0.01))
    with pytest.raises(ValueError, match="no text"):
        # raised by this put where "a" is made by then (a loaded machine), else a later one
        ahead.put(failing)
        for _ in range(3):
            ahead.put(_slow(b"b", 0))
    assert out.getvalue() == b"a"  # what came before the failure, nothing after it
    ahead.abort()
    ahead.abort()  # twice: nothing left
    assert out.getvalue() == b"a"


def test_text_made_already_goes_out_at_the_next_put() -> None:
    """A slow input: what was made while the next batch was awaited is written when that
    batch comes, not held back for `workers` more."""
    out = io.BytesIO()
    ahead = RenderedAhead(out, 4, "test-ahead")
    ahead.put(_slow(b"a", 0))
    time.sleep(0.1)  # made by now
    ahead.put(_slow(b"b", 0.5))
    assert out.getvalue() == b"a"
    ahead.close()
    assert out.getvalue() == b"ab"


@pytest.mark.parametrize("workers", [1, 2, 4])
def test_text_made_into_buffers_reuses_them_once_written(workers: int) -> None:
    """put_into: each text written in order; the buffers it is made into come back for the
    texts after it, so that a run of 40 batches makes a few, not 40."""
    out = io.BytesIO()
    given: list[int] = []

    def make(k: int):
        def into_buffer(into: bytearray) -> int:
            given.append(id(into))
            text = b"%d," % k * (k + 1)  # longer and shorter texts: a buffer never shrinks
            if len(into) < len(text):
                into.extend(bytes(len(text) - len(into)))
            into[:len(text)] = text
            return len(text)
        return into_buffer

    ahead = RenderedAhead(out, workers, "test-ahead")
    for k in range(40):
        ahead.put_into(make(k if k % 3 else 40 - k))
    ahead.close()
    assert out.getvalue() == b"".join(b"%d," % k * (k + 1)
                                      for k in (k if k % 3 else 40 - k for k in range(40)))
    assert len(given) == 40
    assert len(set(given)) <= workers + 1


def test_a_buffer_a_view_still_holds_is_not_written_over() -> None:
    """A stream that keeps views of what it was given (none of cumtool's: each writes or
    copies at once) keeps what it was given: the C writers make new text elsewhere."""
    from cumtool.formats.jsonl import lines

    kept: list[memoryview] = []

    class Keeping(io.RawIOBase):
        def write(self, data) -> int:  # type: ignore[override]
            kept.append(memoryview(data))
            return len(kept[-1])

    ahead = RenderedAhead(Keeping(), 1, "test-ahead")
    for k in range(5):
        column = (b'"v":', np.array([k, 10 * k], np.int64), None, None)
        ahead.put_into(lambda into, c=column: lines.write_prepared(2, lines.prepared([c]),
                                                                    into))
    ahead.close()
    assert [bytes(view) for view in kept] == [
        b'{"v":%d}\n{"v":%d}\n' % (k, 10 * k) for k in range(5)]


def test_line_buffered_output_makes_no_text_ahead(monkeypatch) -> None:
    from cumtool.formats import Writing

    monkeypatch.setattr(native, "CORES", 8)

    class Request:
        line_buffered = False

    writing = Writing(io.BytesIO(), None, None, Request(), None, "in")  # type: ignore[arg-type]
    assert writing.threads() == 8
    Request.line_buffered = True
    assert writing.threads() == 1


@pytest.mark.parametrize("threads, usable, cap, workers", [
    (1, 16, 8, 1), (2, 16, 8, 2), (16, 16, 8, 8), (16, 2, 8, 2), (3, 1, 8, 2), (4, 16, 8, 4),
])
def test_workers_are_the_threads_asked_for_within_the_cores(monkeypatch, threads, usable, cap,
                                                           workers) -> None:
    monkeypatch.setattr(native, "USABLE", usable)
    assert native.ahead_workers(threads, cap) == workers


# The CSV writer's number batches on several threads ----------------------------------------

def _batches() -> list[pa.RecordBatch]:
    rng = np.random.default_rng(7)
    numbers = []
    for k in range(9):
        n = 50 + 13 * k
        floats = rng.normal(0, 1e3, n) ** (k % 3 + 1)
        ints = rng.integers(-10**12, 10**12, n)
        missing = rng.random(n) < 0.1
        numbers.append(pa.RecordBatch.from_arrays(
            [pa.array(floats, mask=missing), pa.array(ints)], names=["f", "i"]))
    return numbers


@pytest.mark.skipif(csvwrite.TEXT is None, reason="cumtool._ext._csvtext is not built")
@pytest.mark.parametrize("threads", [2, 3, 8])
def test_number_batches_made_on_threads_are_the_bytes_of_one_thread(monkeypatch,
                                                                   threads: int) -> None:
    monkeypatch.setattr(native, "USABLE", 8)
    batches = _batches()
    # a batch the C loop does not write (text) between them: written after those before it
    text = pa.RecordBatch.from_arrays([pa.array(["a,b", "c"]), pa.array([1, 2])],
                                      names=["f", "i"])
    schema = pa.schema([("f", pa.string()), ("i", pa.int64())])

    def written(count: int) -> bytes:
        out = io.BytesIO()
        sink = csvwrite.CsvSink(out, schema, CsvWriteOptions(), "in", count)
        for k, batch in enumerate(batches):
            sink.write(batch)
            if k == 4:
                sink.write(text)
        sink.close()
        return out.getvalue()

    one = written(1)
    assert one.count(b"\n") == 1 + sum(b.num_rows for b in batches) + 2
    assert b'"a,b",1\n' in one
    assert written(threads) == one


@pytest.mark.skipif(csvwrite.TEXT is None, reason="cumtool._ext._csvtext is not built")
def test_an_aborted_csv_sink_writes_nothing_more(monkeypatch) -> None:
    monkeypatch.setattr(native, "USABLE", 4)
    out = io.BytesIO()
    batches = _batches()
    sink = csvwrite.CompressingSink(csvwrite.CsvSink, out, None, batches[0].schema,
                                    CsvWriteOptions(), "in", 4)
    for batch in batches[:3]:
        sink.write(batch)
    sink.abort()
    before = out.getvalue()
    time.sleep(0.05)
    assert out.getvalue() == before
    assert before.count(b"\n") <= 1 + sum(b.num_rows for b in batches[:3])


# The JSON Lines reader's first block --------------------------------------------------------

def _late(k: int) -> str:
    # an integer column that turns float late, a key first seen late, strings
    record: dict[str, object] = {"n": k, "v": k * 3 if k < 700 else k / 8, "s": f"t{k}"}
    if k >= 500:
        record["late"] = k % 5
    return json.dumps(record)


@pytest.mark.parametrize("first", [40, 300, 1 << 14])
@pytest.mark.parametrize("target", ["jsonl", "csv"])
def test_a_small_first_block_gives_the_bytes_of_one_block(invoke, write_file, monkeypatch,
                                                         first, target) -> None:
    """Whatever the first block's size (a part line, some lines, all of them), the blocks
    after it parsed ahead on any count of threads: the same bytes as all in one block."""
    source = write_file("in.jsonl", "".join(_late(k) + "\n" for k in range(900)))
    monkeypatch.setattr(module, "BLOCK_BYTES", 1 << 20)
    monkeypatch.setattr(module, "FIRST_BLOCK_BYTES", 1 << 20)
    whole = ok(invoke("cumsum", str(source), "--to", target, "--threads", "1")).stdout_bytes
    monkeypatch.setattr(module, "BLOCK_BYTES", 2048)
    monkeypatch.setattr(module, "FIRST_BLOCK_BYTES", first)
    for threads in THREADS:
        got = ok(invoke("cumsum", str(source), "--to", target, "--threads", threads))
        assert got.stdout_bytes == whole, f"--threads {threads}"


def test_a_byte_order_mark_is_dropped_from_a_small_first_block(invoke, write_file,
                                                              monkeypatch) -> None:
    monkeypatch.setattr(module, "FIRST_BLOCK_BYTES", 16)
    monkeypatch.setattr(module, "BLOCK_BYTES", 64)
    lines = "".join(json.dumps({"a": k, "b": k / 2}) + "\n" for k in range(40))
    source = write_file("in.jsonl", b"\xef\xbb\xbf" + lines.encode())
    for threads in THREADS:
        out = ok(invoke("cumsum", str(source), "--threads", threads, "--to", "csv")).stdout
        assert out.splitlines()[:2] == ["a,b", "0,0.0"], f"--threads {threads}"
        assert out.splitlines()[-1] == f"{sum(range(40))},{sum(range(40)) / 2}"


def test_the_first_block_is_read_with_python_and_the_rest_parsed_ahead(
        invoke, write_file, monkeypatch, parse_threads) -> None:
    """The C parser's calls run on the pool from the second block on: the first (small)
    block's types were learnt on the reading thread, so none waits for them."""
    monkeypatch.setattr(module, "BLOCK_BYTES", 4096)
    where = parse_threads
    source = write_file("in.jsonl", "".join(json.dumps({"a": k, "b": k / 4}) + "\n"
                                            for k in range(3000)))
    ok(invoke("cumsum", str(source), "--threads", "2"))
    blocks = -(-source.stat().st_size // 4096)
    assert len(where) >= blocks - 1
    assert all(name.startswith("cumtool-jsonl") for name in where), where


# Blocks of whole lines, read ahead ----------------------------------------------------------

@pytest.mark.parametrize("threads", THREADS)
def test_small_blocks_give_the_bytes_of_one_thread(invoke, write_file, monkeypatch,
                                                   threads) -> None:
    """Blocks read into buffers, far smaller than the file: the bytes of one thread's run
    of whole blocks, with a byte order mark, a last line without its line end and a line
    longer than a block."""
    rows = [_late(k) for k in range(600)]
    rows[300] = json.dumps({"n": 300, "v": 900, "s": "x" * 300})  # longer than a block
    text = b"\xef\xbb\xbf" + "\n".join(rows).encode()
    source = write_file("in.jsonl", text)
    want = ok(invoke("cumsum", str(source), "--threads", "1")).stdout_bytes
    monkeypatch.setattr(module, "BLOCK_BYTES", 256)
    monkeypatch.setattr(module, "FIRST_BLOCK_BYTES", 100)
    got = ok(invoke("cumsum", str(source), "--threads", threads)).stdout_bytes
    assert got == want
    assert got.count(b"\n") == 600


def test_standard_input_is_read_whole(invoke, monkeypatch) -> None:
    monkeypatch.setattr(module, "BLOCK_BYTES", 64)
    text = "".join(json.dumps({"a": k, "b": k / 4}) + "\n" for k in range(200))
    for threads in THREADS:
        got = ok(invoke("cumsum", "-", "--from", "jsonl", "--to", "csv", "--threads", threads,
                        input=text.encode()))
        lines = got.stdout.splitlines()
        assert len(lines) == 201 and lines[-1] == f"{sum(range(200))},{sum(range(200)) / 4}"


def test_a_declined_block_goes_the_slower_ways_a_piece_at_a_time(invoke, write_file,
                                                                 monkeypatch) -> None:
    """A key first seen mid-block: the C parser declines the block, which is then taken in
    pieces, the C parser's where it takes them, so only the piece with the new key goes to
    the slower readers; the bytes are those of blocks of one line."""
    if module.NATIVE is None:
        pytest.skip("the C parser is not built")
    rows = [{"a": k, "b": k / 4} for k in range(1500)]
    for k in range(700, 1500, 3):
        rows[k]["c"] = k % 5
    rows[1100]["b"] = None
    source = write_file("in.jsonl", "".join(json.dumps(r) + "\n" for r in rows))
    monkeypatch.setattr(module, "BLOCK_BYTES", 32)
    want = ok(invoke("cumsum", str(source), "--threads", "1")).stdout_bytes
    monkeypatch.setattr(module, "FIRST_BLOCK_BYTES", 256)
    monkeypatch.setattr(module, "BLOCK_BYTES", 16384)
    monkeypatch.setattr(module, "PIECE_BYTES", 1024)
    sizes: list[int] = []
    parsed = module._parsed

    def recorded(chunk, *args):
        sizes.append(len(chunk))
        return parsed(chunk, *args)

    monkeypatch.setattr(module, "_parsed", recorded)
    for threads in THREADS:
        sizes.clear()
        assert ok(invoke("cumsum", str(source), "--threads", threads)).stdout_bytes == want
        assert sizes and max(sizes[1:], default=0) <= 1024 + 40, sizes  # the first: 256
