"""JSON Lines read by position: where a block ends is found on the reading thread, and its
bytes are read by the thread that parses it (os.pread), so that no one thread reads the
whole input. The blocks are those of a read from start to end (the same lines each, so
the same errors and the same bytes out at every thread count), and a file that becomes
shorter while it is read is one error line naming it."""

from __future__ import annotations

import io
import json
import os
import threading

import pytest
from helpers import ok

from cumtool.formats.jsonl import jsonl as module

THREADS = ["1", "2", "3", "16"]


def _source_reading(path, monkeypatch, first: int, block: int, max_line: int):
    """A JsonlSource made without reading (its blocks are compared here)."""
    monkeypatch.setattr(module, "FIRST_BLOCK_BYTES", first)
    monkeypatch.setattr(module, "BLOCK_BYTES", block)
    source = module.JsonlSource.__new__(module.JsonlSource)
    source.name = str(path)
    source._max_line = max_line
    return source


def _blocks_as_read(source, data: bytes) -> list[tuple[bytes, int, int, bool]]:
    return [(bytes(memoryview(text)[:end]), end, at, over)
            for text, end, at, over in source._blocks(io.BytesIO(data))]


def _blocks_located(source, path) -> list[tuple[bytes, int, int, bool]]:
    with open(path, "rb") as stream:
        return [(text.get(), end, at, over)
                for text, end, at, over in source._located(stream.fileno())]


LINES = [b'{"a": 1}', b'{"a": 22, "b": "' + b"x" * 70 + b'"}', b"", b'{"a": 3}\r',
         b'{"b": ' + b"9" * 30 + b"}", b'{"a": 4.5}']


@pytest.mark.parametrize("bom", [False, True], ids=["", "bom"])
@pytest.mark.parametrize("last_feed", [True, False], ids=["ends-with-feed", "no-last-feed"])
@pytest.mark.parametrize(("first", "block", "max_line"), [
    (16, 64, 1000), (100, 40, 1000), (1 << 14, 1 << 20, 1000), (16, 32, 60), (7, 7, 1000)])
def test_blocks_located_are_the_blocks_read(tmp_path, monkeypatch, bom, last_feed, first,
                                            block, max_line):
    lines = [LINES[k % len(LINES)] for k in range(60)]
    data = (b"\xef\xbb\xbf" if bom else b"") + b"\n".join(lines) + (b"\n" if last_feed else b"")
    path = tmp_path / "in.jsonl"
    path.write_bytes(data)
    source = _source_reading(path, monkeypatch, first, block, max_line)
    read = _blocks_as_read(source, data)
    assert read  # (something to compare)
    assert _blocks_located(source, path) == read


@pytest.mark.parametrize("data", [b"", b"\n", b"\n\n\n", b"\xef\xbb\xbf", b'{"a": 1}',
                                  b"x" * 300, b"x" * 300 + b"\n" + b'{"a": 1}\n'],
                         ids=["empty", "one-feed", "feeds", "bom-alone", "one-line-no-feed",
                              "one-long-line", "long-then-short"])
def test_blocks_located_at_the_edges_are_the_blocks_read(tmp_path, monkeypatch, data):
    path = tmp_path / "in.jsonl"
    path.write_bytes(data)
    source = _source_reading(path, monkeypatch, 16, 64, 100)
    assert _blocks_located(source, path) == _blocks_as_read(source, data)


def _plain(k: int) -> str:
    return json.dumps({"a": k % 17 - 8, "b": round((k * 7919 % 1000) / 100 - 5, 2)})


def test_the_blocks_are_read_on_the_parse_threads(invoke, write_file, monkeypatch):
    """At --threads 3 the bytes of every block parsed ahead are read on a parse thread;
    at --threads 1 all on the one thread."""
    if module.NATIVE is None:
        pytest.skip("the C parser is not built: nothing runs ahead without it")
    monkeypatch.setattr(module, "BLOCK_BYTES", 1 << 14)
    readers: dict[str, int] = {}
    pread = module._pread

    def recorded(fd: int, at: int, size: int, name: str) -> bytes:
        thread = threading.current_thread().name.rsplit("_", 1)[0]
        readers[thread] = readers.get(thread, 0) + size
        return pread(fd, at, size, name)

    monkeypatch.setattr(module, "_pread", recorded)
    text = "".join(_plain(k) + "\n" for k in range(20000))
    source = write_file("in.jsonl", text)
    one = ok(invoke("cumsum", str(source), "--to", "csv", "--threads", "1")).stdout_bytes
    assert set(readers) == {"MainThread"}
    readers.clear()
    three = ok(invoke("cumsum", str(source), "--to", "csv", "--threads", "3")).stdout_bytes
    assert three == one
    # all but the first block (its types are learnt before any block is parsed ahead);
    # on pass 1's thread (its own where it reads behind the run: runner._speculate), the
    # first and the few bytes looked at for where each block ends
    assert readers["cumtool-jsonl"] >= len(text) - 2 * 16384
    assert readers.get("MainThread", 0) + readers.get("cumtool-jsonl-pass1", 0) \
        < len(text) // 3


@pytest.mark.parametrize("threads", THREADS)
def test_a_file_cut_short_while_it_is_read_is_one_error_line(invoke, write_file, tmp_path,
                                                             monkeypatch, threads):
    """A log truncated (rotated) once its blocks are found: the reads come back short, and
    the run says so, naming the file, writing nothing (no crash, no partial output)."""
    monkeypatch.setattr(module, "BLOCK_BYTES", 256)
    source = write_file("in.jsonl", "".join(_plain(k) + "\n" for k in range(400)))
    located = module.JsonlSource._located

    def truncating(self, fd):
        for k, block in enumerate(located(self, fd)):
            if k == 3:
                os.truncate(source, 1000)
            yield block

    monkeypatch.setattr(module.JsonlSource, "_located", truncating)
    out = tmp_path / "out.csv"
    result = invoke("cumsum", str(source), "-o", str(out), "--threads", threads)
    assert (result.exit_code, result.stdout) == (1, "")
    assert result.stderr == (f"Error: {source}: cannot read: the file became shorter while "
                             "it was read\n")
    assert not out.exists()


def test_standard_input_reads_as_the_file(invoke, write_file, monkeypatch):
    """Standard input is spooled to a file first, whose blocks are then read by position
    as a named file's are: the same bytes out."""
    monkeypatch.setattr(module, "BLOCK_BYTES", 300)
    text = "".join(_plain(k) + "\n" for k in range(500))
    source = write_file("in.jsonl", text)
    for threads in ["1", "2"]:
        named = ok(invoke("cumsum", str(source), "--to", "jsonl", "--threads", threads))
        piped = ok(invoke("cumsum", "--to", "jsonl", "--threads", threads, input=text))
        assert piped.stdout_bytes == named.stdout_bytes
        assert named.stdout.count("\n") == 500
