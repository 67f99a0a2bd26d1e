"""The output file's pages are started on their way to disk as it is written (output.py,
_Writeback), so that the fsync at the end has little left to wait for: the ranges asked
for follow each other from the file's start, the bytes are those written, and a platform
or file system without sync_file_range changes nothing but that."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

import cumtool.output
from cumtool.output import _GuardedStream, _Writeback, open_output

PIECE = 3 << 20  # not a divisor of the writeback step: calls fall between writes


class Calls:
    def __init__(self, result: int = 0) -> None:
        self.ranges: list[tuple[int, int, int]] = []
        self.sizes_seen: list[int] = []
        self._result = result

    def __call__(self, fd: int, offset: int, size: int, flags: int) -> int:
        self.ranges.append((offset, size, flags))
        self.sizes_seen.append(os.fstat(fd).st_size)  # what the kernel holds at the call
        return self._result


@pytest.fixture
def calls(monkeypatch: pytest.MonkeyPatch) -> Calls:
    recorder = Calls()
    monkeypatch.setattr(_Writeback, "_call", recorder)
    return recorder


def written(path: Path, pieces: int) -> bytes:
    data = b"".join(bytes([i]) * PIECE for i in range(pieces))
    with open_output(str(path)) as stream:
        for i in range(pieces):
            stream.write(data[i * PIECE:(i + 1) * PIECE])
    return data


def test_ranges_follow_each_other_from_the_start(tmp_path: Path, calls: Calls) -> None:
    target = tmp_path / "out.bin"
    data = written(target, 9)
    assert target.read_bytes() == data
    step = cumtool.output._WRITEBACK_BYTES
    assert len(calls.ranges) == len(data) // step >= 2
    at = 0
    for (offset, size, flags), kernel_size in zip(calls.ranges, calls.sizes_seen, strict=True):
        assert (offset, flags) == (at, 2)  # SYNC_FILE_RANGE_WRITE: start, do not wait
        assert size >= step
        at += size
        assert kernel_size >= at  # flushed to the kernel before it is asked to write
    assert at <= len(data)


def test_small_outputs_never_ask(tmp_path: Path, calls: Calls) -> None:
    written(tmp_path / "out.bin", 2)
    assert calls.ranges == []


def test_a_refusal_stops_the_calls_and_nothing_else(tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    refusing = Calls(result=-1)
    monkeypatch.setattr(_Writeback, "_call", refusing)
    target = tmp_path / "out.bin"
    data = written(target, 9)
    assert target.read_bytes() == data
    assert len(refusing.ranges) == 1


def test_without_the_call_the_output_is_the_same(tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_Writeback, "_call", False)
    target = tmp_path / "out.bin"
    data = written(target, 9)
    assert target.read_bytes() == data


def test_the_call_is_found_on_linux() -> None:
    found: Any = cumtool.output._sync_file_range()
    if os.uname().sysname == "Linux":
        assert found
        with open(os.devnull, "wb") as null:
            found(null.fileno(), 0, 0, 2)  # callable with these types (result not asked)


def test_standard_output_and_plain_streams_have_none() -> None:
    with open(os.devnull, "wb") as null:
        assert _GuardedStream(null, "null")._writeback is None
