"""JSON Lines read behind the run: the run starts with the types of the input's first
block while the rest is read (runner._speculate), its output held back until the whole
input's schema is known. Where a later line widens a type (on the last line too) the
held output is dropped and the run made again: the bytes, the errors and their exit
codes are those of the run that waits for the whole input, at every thread count."""

from __future__ import annotations

import json

import pytest
from helpers import ok

from cumtool import runner
from cumtool.formats.jsonl import jsonl as module

THREADS = ["1", "2", "3", "16"]
ROWS = 300


@pytest.fixture
def behind(monkeypatch):
    """Small blocks (the first of a few lines: the run starts long before the input's
    end), and what each speculative run came to: True kept, False made again."""
    monkeypatch.setattr(module, "OVERLAP_CORES", 2)  # (from 4 cores else: this may have 2)
    monkeypatch.setattr(module, "FIRST_BLOCK_BYTES", 120)
    monkeypatch.setattr(module, "BLOCK_BYTES", 700)
    monkeypatch.setattr(module, "HEAD_LINES", 1)
    outcomes: list[bool] = []
    speculate = runner._speculate

    def recorded(*args, **kwargs):
        outcome = speculate(*args, **kwargs)
        outcomes.append(outcome)
        return outcome

    monkeypatch.setattr(runner, "_speculate", recorded)
    return outcomes


def _waiting(monkeypatch):
    """The run that waits for the whole input (the reference)."""
    monkeypatch.setattr(module.JsonlSource, "provisional", lambda self: None)


def _plain(k: int) -> dict[str, object]:
    return {"a": k % 17 - 8, "b": round((k * 7919 % 1000) / 100 - 5, 2), "i": k}


def _text(records: list[dict[str, object]], end: str = "\n") -> str:
    return end.join(json.dumps(r) for r in records) + end


def _last(change: dict[str, object]) -> str:
    records = [_plain(k) for k in range(ROWS)]
    records[-1] = {**records[-1], **change}
    return _text(records)


def _null_and_absent_late() -> str:
    """Column "a": a null, then a line without it, both after the first block: its
    missing cells are then told apart row by row (null or absent) in JSON Lines."""
    records = [_plain(k) for k in range(ROWS)]
    records[-2] = {**records[-2], "a": None}
    records[-1] = {"b": 1.5, "i": 7}
    return _text(records)


def _keyless_last() -> str:
    records = [_plain(k) for k in range(ROWS)]
    records[-1] = {"b": 1.5, "i": 7}  # "a" absent on the last line only
    return _text(records)


WIDENED = {
    "int-to-float-last": _last({"a": 0.5}),
    "number-to-string-last": _last({"b": "x"}),
    "null-last": _last({"a": None}),
    "new-key-last": _last({"z": 3}),
    "beyond-int64-last": _last({"i": 2 ** 70}),
    "null-and-absent-late": _null_and_absent_late(),
}
KEPT = {  # the whole input's schema is the first block's (its output is kept)
    "bigint-last": _last({"i": 2 ** 60}),  # an int64 still
    "absent-last": _keyless_last(),  # written as a null would be
    "plain": _text([_plain(k) for k in range(ROWS)]),
    "crlf": _text([_plain(k) for k in range(ROWS)], "\r\n"),
    "no-final-newline": _text([_plain(k) for k in range(ROWS)]).rstrip("\n"),
    "blank-lines": _text([_plain(k) for k in range(ROWS)]).replace("}\n{", "}\n\n{", 40),
}


def _runs(invoke, source, target, extra=()) -> dict[str, tuple[int, bytes, str]]:
    results = {}
    for threads in THREADS:
        result = invoke("cumsum", str(source), "--to", target, "--threads", threads, *extra)
        results[threads] = (result.exit_code, result.stdout_bytes, result.stderr)
    return results


@pytest.mark.parametrize("target", ["csv", "jsonl"])
@pytest.mark.parametrize("name", [*WIDENED, *KEPT])
def test_the_bytes_are_those_of_the_run_that_waits(invoke, write_file, behind, monkeypatch,
                                                   name, target):
    source = write_file("in.jsonl", {**WIDENED, **KEPT}[name])
    got = _runs(invoke, source, target)
    # at --threads 1 nothing reads behind; at 2, 3, 16 every run speculated, and was
    # made again exactly where the last line widened a type
    assert behind == [name in KEPT] * (len(THREADS) - 1)
    _waiting(monkeypatch)
    want = _runs(invoke, source, target)
    assert want["1"][0] == 0 and want["1"][1]
    assert got == want


def test_an_integer_column_that_turns_float_on_the_last_line_is_float_throughout(
        invoke, write_file, behind):
    records = [{"a": k} for k in range(ROWS)]
    records[-1] = {"a": 0.5}
    source = write_file("in.jsonl", _text(records))
    total = 0.0
    want = ["a"]
    for k in range(ROWS - 1):
        total += k
        want.append(repr(total))
    want.append(repr(total + 0.5))
    for threads in THREADS:
        result = ok(invoke("cumsum", str(source), "--to", "csv", "--threads", threads))
        assert result.stdout == "\n".join(want) + "\n", f"--threads {threads}"
    assert behind == [False] * (len(THREADS) - 1)


@pytest.mark.parametrize("line", [150, ROWS], ids=["mid-file", "last-line"])
def test_a_bad_line_after_the_first_block_is_the_error_and_nothing_is_written(
        invoke, write_file, tmp_path, behind, line):
    rows = [json.dumps(_plain(k)) for k in range(ROWS)]
    rows[line - 1] = '{"a": 1, "b": }'
    source = write_file("in.jsonl", "".join(r + "\n" for r in rows))
    message = (f"Error: {source}: line {line} is not JSON: Expecting value (at character "
               "15)\n")
    for threads in THREADS:
        result = invoke("cumsum", str(source), "--to", "csv", "--threads", threads)
        assert (result.exit_code, result.stdout_bytes, result.stderr) == (1, b"", message)
        out = tmp_path / f"out-{threads}.jsonl"
        result = invoke("cumsum", str(source), "-o", str(out), "--threads", threads)
        assert (result.exit_code, result.stderr) == (1, message)
        assert not out.exists()
    # (pass 1 may fail before the run starts: then there is nothing to speculate on)
    assert not any(behind)


def test_an_overflow_in_the_scan_is_the_same_error_line(invoke, write_file, behind,
                                                         monkeypatch):
    records = [{"a": 2 ** 62 if k > 100 else k} for k in range(ROWS)]
    source = write_file("in.jsonl", _text(records))
    got = _runs(invoke, source, "csv", ("--dtype", "int64"))
    _waiting(monkeypatch)
    want = _runs(invoke, source, "csv", ("--dtype", "int64"))
    assert want["1"][2] == (f"Error: {source}: column 'a', row 103 (line 103): cumsum "
                            "overflows int64 (adding 4611686018427387904); use --overflow "
                            "wrap for wrap-around\n")
    # on standard output, every row before the one that overflows: rows 1 to 102
    rows = ["a", *(str(sum(range(k + 1))) for k in range(101)), str(5050 + 2 ** 62)]
    for threads in THREADS:  # the same error line, exit code and rows, waiting or not
        assert got[threads] == want[threads] == (1, "\n".join(rows).encode() + b"\n",
                                                 want["1"][2])


def test_output_beyond_what_is_held_waits_for_the_whole_schema(invoke, write_file, behind,
                                                              monkeypatch):
    monkeypatch.setattr(runner, "HOLD_BYTES", 64)
    for text, kept in ((KEPT["plain"], True), (WIDENED["int-to-float-last"], False)):
        source = write_file("in.jsonl", text)
        behind.clear()
        got = _runs(invoke, source, "jsonl")
        assert behind == [kept] * (len(THREADS) - 1)
        with monkeypatch.context() as waiting:
            _waiting(waiting)
            assert got == _runs(invoke, source, "jsonl")


def test_a_column_not_in_the_first_block_can_be_chosen(invoke, write_file, behind,
                                                       monkeypatch):
    """-c names a key first seen after the first block: the provisional plan cannot be
    made, and the run is made with the whole input's schema."""
    records = [_plain(k) for k in range(ROWS)]
    records[200]["late"] = 5
    source = write_file("in.jsonl", _text(records))
    got = _runs(invoke, source, "csv", ("-c", "late"))
    assert got["2"][0] == 0
    assert got["2"][1].decode().splitlines()[201].endswith(",5")
    assert behind == [False] * (len(THREADS) - 1)
    _waiting(monkeypatch)
    assert got == _runs(invoke, source, "csv", ("-c", "late"))


@pytest.mark.parametrize("name", ["int-to-float-last", "plain"])
def test_a_file_output_is_written_once_with_the_whole_inputs_types(invoke, write_file,
                                                                   tmp_path, behind,
                                                                   monkeypatch, name):
    """-o FILE is written as the run goes (nothing held: it is renamed into place only at
    the end); a run dropped for a type widened late leaves no file behind it."""
    source = write_file("in.jsonl", {**WIDENED, **KEPT}[name])
    for threads in THREADS:
        ok(invoke("cumsum", str(source), "-o", str(tmp_path / f"out-{threads}.csv"),
                  "--threads", threads))
    assert behind == [name in KEPT] * (len(THREADS) - 1)
    _waiting(monkeypatch)
    want = ok(invoke("cumsum", str(source), "--to", "csv")).stdout_bytes
    for threads in THREADS:
        assert (tmp_path / f"out-{threads}.csv").read_bytes() == want, f"--threads {threads}"
    assert sorted(p.name for p in tmp_path.iterdir()) == \
        sorted(["in.jsonl", *(f"out-{t}.csv" for t in THREADS)])


@pytest.mark.parametrize("target", ["csv", "jsonl"])
def test_output_held_in_a_temporary_file_is_written_in_order(invoke, write_file, tmp_path,
                                                             behind, monkeypatch, target):
    """Beyond HOLD_BYTES the held output goes to a temporary file, and is copied out in
    pieces (standard output) or by the kernel (a redirection to a regular file)."""
    monkeypatch.setattr(runner, "HOLD_BYTES", 100)
    monkeypatch.setattr(runner, "SPILL_BYTES", 333)
    source = write_file("in.jsonl", KEPT["crlf"])
    got = _runs(invoke, source, target)
    assert behind == [True] * (len(THREADS) - 1)
    _waiting(monkeypatch)
    assert got == _runs(invoke, source, target)
    # standard output redirected to a file: the temporary file's bytes by the kernel
    from cumtool.output import _GuardedStream

    redirected = tmp_path / "redirected"
    sent: list[int | None] = []
    with redirected.open("wb") as file:
        stream = _GuardedStream(file, "standard output")
        direct = stream.write_directly
        monkeypatch.setattr(stream, "write_directly", lambda w: sent.append(direct(w)) or sent[-1])
        held = runner._Held(stream, lambda wait: True if wait else None)
        for k in range(0, len(got["2"][1]), 150):
            held.write(memoryview(got["2"][1][k:k + 150]))
        held.write(b"after")
        held.flush()
    assert redirected.read_bytes() == got["2"][1] + b"after"
    # every piece was held in the temporary file (the first is over HOLD_BYTES already)
    assert sent == [len(got["2"][1]) + len(b"after")]


def test_few_cores_do_not_read_behind(invoke, write_file, behind, monkeypatch):
    """Below OVERLAP_CORES (the lesser of --threads and the cores there are) the input is
    read whole before the run starts, as at one thread."""
    monkeypatch.setattr(module, "OVERLAP_CORES", 3)
    monkeypatch.setattr(module.native, "USABLE", 2)
    source = write_file("in.jsonl", KEPT["plain"])
    ok(invoke("cumsum", str(source), "--threads", "16"))
    assert behind == []
    monkeypatch.setattr(module.native, "USABLE", 3)
    ok(invoke("cumsum", str(source), "--threads", "2"))
    assert behind == []
    ok(invoke("cumsum", str(source), "--threads", "3"))
    assert behind == [True]



def test_pass_one_behind_a_run_parses_half_the_blocks_ahead(invoke, write_file, behind,
                                                              monkeypatch):
    """While a run goes on from pass 1's segments (the passes overlapped), pass 1 keeps
    half the blocks in flight that it keeps alone (pass 2's batches and text are in flight
    beside them); once the run waits for the whole input instead, all of them. The bytes
    are the same."""
    monkeypatch.setattr(module.native, "USABLE", 16)
    in_flight: list[tuple[bool, int]] = []
    turn = module._Ahead.__iter__

    def counted(self):
        for item in turn(self):
            in_flight.append((self._overlapped(), len(self._queue) + 1))
            yield item

    monkeypatch.setattr(module._Ahead, "__iter__", counted)
    source = write_file("in.jsonl", _text([_plain(k) for k in range(3000)]))
    mine = ok(invoke("cumsum", str(source), "--threads", "16")).stdout
    assert behind == [True]
    overlapped = [blocks for behind_a_run, blocks in in_flight if behind_a_run]
    # the blocks read ahead before the run began are taken in turn, none more is read
    # until fewer than half are in flight
    settled = overlapped[module.PARSE_AHEAD:]
    assert settled and max(settled) == module.PARSE_AHEAD // 2 + 1 == 5
    in_flight.clear()
    # the run waits for the whole input, as where the first block's schema is refused
    monkeypatch.setattr(module.JsonlSource, "provisional",
                        lambda self: setattr(self, "_behind_a_run", False))
    assert ok(invoke("cumsum", str(source), "--threads", "16")).stdout == mine
    # (until the run says it waits, pass 1 may start as if behind a run)
    alone = [blocks for behind_a_run, blocks in in_flight if not behind_a_run]
    assert alone and max(alone) == module.PARSE_AHEAD + 1 == 9


@pytest.mark.parametrize("name", ["plain", "int-to-float-last", "null-and-absent-late"])
@pytest.mark.parametrize("kept", [0, 1, 4])
def test_the_run_behind_takes_segments_from_memory_up_to_a_bound(invoke, write_file, behind,
                                                                 monkeypatch, name, kept):
    """The run reading behind pass 1 takes each segment's columns as they were spooled,
    from memory, for the newest CACHED_SEGMENTS; one it is too far behind to find there
    is read back from the spool (0: every one). The bytes are those of the run that
    waits, kept or made again."""
    monkeypatch.setattr(module, "CACHED_SEGMENTS", kept)
    source = write_file("in.jsonl", {**WIDENED, **KEPT}[name])
    taken: list[bool] = []
    take = module._Cache.take

    def counted(self, segment):
        table = take(self, segment)
        taken.append(table is not None)
        assert len(self._kept) <= kept
        return table

    monkeypatch.setattr(module._Cache, "take", counted)
    # whether pass 1 had read the whole (small) input by the time the run asked for its
    # provisional schema (a loaded machine): the source then settled, keeping nothing
    ended_first: list[bool] = []
    provisional = module.JsonlSource.provisional
    monkeypatch.setattr(module.JsonlSource, "provisional",
                        lambda self: ended_first.append(self._ended) or provisional(self))
    got = {t: invoke("cumsum", str(source), "--to", "jsonl", "--threads", t) for t in "13"}
    assert behind == [name in KEPT]
    if kept == 0:
        assert taken and not any(taken)
    if name in KEPT:  # (a widened run may end before it has taken them all)
        assert len(taken) > 10  # (blocks of 700 bytes)
        # the last segment at least: the run had caught up with pass 1 by then
        assert any(taken) == (kept > 0 and not ended_first[-1])
    _waiting(monkeypatch)
    for threads, result in got.items():
        want = invoke("cumsum", str(source), "--to", "jsonl", "--threads", threads)
        assert (result.exit_code, result.stdout_bytes) == (0, want.stdout_bytes)


def test_segments_kept_for_a_run_are_let_go_once_it_ends(write_file, monkeypatch):
    """Once no run reads behind pass 1 (it ended, or waits for the whole input), no
    segment's columns stay in memory: the spool holds them."""
    monkeypatch.setattr(module, "OVERLAP_CORES", 2)
    monkeypatch.setattr(module, "FIRST_BLOCK_BYTES", 120)
    monkeypatch.setattr(module, "BLOCK_BYTES", 700)
    monkeypatch.setattr(module.native, "CORES", 2)
    monkeypatch.setattr(module.native, "USABLE", 2)
    path = write_file("in.jsonl", KEPT["plain"])
    with open(path, "rb") as stream:
        source = module.JsonlSource(stream, "in.jsonl", None, 1 << 20, overlap=True)
        provisional = source.provisional()
        assert provisional is not None
        batches = provisional.batches()
        first = next(batches)
        assert first.num_rows > 0
        batches.close()  # the run stopped after its first batch
        assert source.num_rows == ROWS  # (pass 1 read on to the end)
        assert len(source._segments) > 5
        assert all(segment.table is None for segment in source._segments)
        assert not source._cache._kept
        rows = sum(batch.num_rows for batch in source.batches())
        assert rows == ROWS


def test_the_run_behind_does_not_wait_for_the_spool(write_file, monkeypatch):
    """Behind pass 1, the run is handed each segment at its turn, before it is spooled:
    with the spool held until the run has taken two segments, the run takes them (the
    spool then catches up, and a run made again reads it all)."""
    monkeypatch.setattr(module, "OVERLAP_CORES", 2)
    monkeypatch.setattr(module, "FIRST_BLOCK_BYTES", 120)
    monkeypatch.setattr(module, "BLOCK_BYTES", 700)
    monkeypatch.setattr(module.native, "CORES", 2)
    monkeypatch.setattr(module.native, "USABLE", 2)
    import threading

    taken_two = threading.Event()
    waited: list[bool] = []
    spool = module.JsonlSource._spool

    def held(self, segment, table):
        if not taken_two.is_set():
            waited.append(taken_two.wait(10))
        spool(self, segment, table)

    monkeypatch.setattr(module.JsonlSource, "_spool", held)
    path = write_file("in.jsonl", KEPT["plain"])
    with open(path, "rb") as stream:
        source = module.JsonlSource(stream, "in.jsonl", None, 1 << 20, overlap=True)
        provisional = source.provisional()
        assert provisional is not None
        rows = []
        for batch in provisional.batches():
            rows.append(batch.num_rows)
            if len(rows) == 2:
                taken_two.set()
        assert sum(rows) == ROWS
        assert waited and all(waited)  # no spool write timed out
        assert provisional.outcome(True) is True
        assert all(segment.spooled for segment in source._segments)
        again = [batch.to_pydict() for batch in source.batches()]
    assert sum(len(b["i"]) for b in again) == ROWS


@pytest.mark.parametrize("threads", ["3", "16"])
def test_a_full_disk_for_the_spool_behind_a_run_is_one_error_line(invoke, write_file, behind,
                                                                   monkeypatch, threads):
    """The spool fails (a full $TMPDIR) after the run behind pass 1 has taken segments
    from memory: nothing is written, and the error is the one line of the run that
    waits."""
    import errno
    import tempfile

    made = tempfile.TemporaryFile

    class Full:
        def __init__(self) -> None:
            self._file = made()
            self._writes = 0

        def write(self, data):
            self._writes += 1
            if self._writes > 40:  # past a few segments (each a few writes)
                raise OSError(errno.ENOSPC, "No space left on device")
            return self._file.write(data)

        def __getattr__(self, name):
            return getattr(self._file, name)

    monkeypatch.setattr(module.tempfile, "TemporaryFile", Full)
    taken: list[bool] = []
    take = module._Cache.take
    monkeypatch.setattr(module._Cache, "take",
                        lambda self, segment: taken.append(True) or take(self, segment))
    path = write_file("in.jsonl", KEPT["plain"])
    result = invoke("cumsum", str(path), "--threads", threads)
    assert (result.exit_code, result.stdout) == (1, "")
    assert result.stderr == (f"Error: {path}: cannot write its parsed records to a "
                             "temporary file in $TMPDIR: No space left on device\n")
    # the run went on from segments in memory; pass 1's failure is raised from the
    # speculating run as it would be without it (so it recorded no outcome)
    assert taken and behind == []


# Standard output redirected to a regular file: the provisional run writes there as it
# goes (runner._InPlace), and a dropped run cuts the file back to where it began.
_DRIVER = """
import os, sys
from cumtool import runner
from cumtool.formats.jsonl import jsonl
jsonl.OVERLAP_CORES, jsonl.FIRST_BLOCK_BYTES, jsonl.BLOCK_BYTES, jsonl.HEAD_LINES = 2, 120, 700, 1
seen = []
for kind in (runner._Held, runner._InPlace):
    def made(self, *args, _init=kind.__init__, _name=kind.__name__):
        seen.append(_name)
        _init(self, *args)
    kind.__init__ = made
outcome = runner._speculate
runner._speculate = lambda *a: seen.append(str(outcome(*a))) or seen[-1] == "True"
if os.environ.get("CUMTOOL_TEST_STOP"):  # SIGTERM at the first write, pass 1 unfinished
    import signal
    jsonl._Provisional.outcome = lambda self, wait: None if not wait else True
    write = runner._InPlace.write
    def stopping(self, data):
        done = write(self, data)
        os.kill(os.getpid(), signal.SIGTERM)
        return done
    runner._InPlace.write = stopping
import atexit
atexit.register(lambda: open(os.environ["CUMTOOL_TEST_SEEN"], "w").write(" ".join(seen)))
sys.argv[0] = "cumtool"
from cumtool.launch import main
main()
"""


def _content(data: bytes, target: str) -> object:
    """What a run's output holds: its bytes for text; for Parquet and Arrow the table
    (the batches' and row groups' sizes follow the blocks the run was made from)."""
    import io

    import pyarrow.ipc as ipc
    import pyarrow.parquet as pq

    if target == "parquet":
        return pq.read_table(io.BytesIO(data)).to_pylist()
    if target == "arrow":
        return ipc.open_file(data).read_all().to_pylist()
    return data


def _to_file(source, target: str, out, mode: str, before: bytes, threads: str = "2",
             stop: bool = False) -> tuple[int, bytes, str, str]:
    """cumtool cumsum SOURCE --to TARGET with standard output a regular file holding
    `before`, opened with `mode` ("r+b": at its end; "ab": to append; "<>": at its start,
    `before` after the position): the exit code, the file's bytes, standard error and
    what the run held its output in, then whether its speculation was kept."""
    import os
    import subprocess
    import sys

    out.write_bytes(before)
    seen = out.with_suffix(".seen")
    with open(out, "r+b" if mode == "<>" else mode) as stream:
        if mode == "r+b":
            stream.seek(0, os.SEEK_END)
        done = subprocess.run(
            [sys.executable, "-c", _DRIVER, "cumsum", str(source), "--to", target,
             "--threads", threads], stdout=stream, stderr=subprocess.PIPE,
            env={**os.environ, "CUMTOOL_TEST_SEEN": str(seen),
                 "CUMTOOL_TEST_STOP": "1" if stop else ""}, timeout=120)
    return done.returncode, out.read_bytes(), done.stderr.decode(), seen.read_text()


@pytest.mark.parametrize("target", ["csv", "jsonl", "parquet", "arrow"])
@pytest.mark.parametrize("name", ["int-to-float-last", "new-key-last", "plain", "crlf"])
def test_standard_output_to_a_file_is_written_in_place_and_cut_back_if_dropped(
        invoke, write_file, tmp_path, monkeypatch, name, target):
    source = write_file("in.jsonl", {**WIDENED, **KEPT}[name])
    _waiting(monkeypatch)
    want = ok(invoke("cumsum", str(source), "--to", target)).stdout_bytes
    before = b"earlier output\n"
    code, got, error, seen = _to_file(source, target, tmp_path / "out", "r+b", before)
    assert (code, error) == (0, "")
    assert got[:len(before)] == before
    assert _content(got[len(before):], target) == _content(want, target)
    assert seen == f"_InPlace {name in KEPT}"


@pytest.mark.parametrize("target", ["csv", "parquet"])
def test_a_file_opened_to_append_or_with_bytes_after_the_position_is_held(
        invoke, write_file, tmp_path, monkeypatch, target):
    """Others may write at the end of a file opened to append, and a file written from
    before its end has bytes that cutting back would lose: the output is held there.
    (A dropped Parquet writer's footer goes nowhere, and says nothing.)"""
    source = write_file("in.jsonl", WIDENED["int-to-float-last"])
    _waiting(monkeypatch)
    want = ok(invoke("cumsum", str(source), "--to", target)).stdout_bytes
    before = b"earlier output\n"
    code, got, error, seen = _to_file(source, target, tmp_path / "out", "ab", before)
    assert (code, error, seen) == (0, "", "_Held False")
    assert got[:len(before)] == before
    assert _content(got[len(before):], target) == _content(want, target)
    if target != "csv":
        return
    tail = b"x" * (len(want) + 100)  # longer than the output: its last bytes stay
    code, got, error, seen = _to_file(source, "csv", tmp_path / "out", "<>", tail)
    assert (code, got, error, seen) == (0, want + tail[len(want):], "", "_Held False")


def test_a_bad_line_found_behind_the_run_leaves_the_file_as_it_was(write_file, tmp_path):
    rows = [json.dumps(_plain(k)) for k in range(ROWS)]
    rows[ROWS - 1] = '{"a": 1, "b": }'
    source = write_file("in.jsonl", "".join(r + "\n" for r in rows))
    before = b"earlier output\n"
    code, got, error, seen = _to_file(source, "csv", tmp_path / "out", "r+b", before)
    assert (code, got) == (1, before)
    assert error == (f"Error: {source}: line {ROWS} is not JSON: Expecting value (at "
                     "character 15)\n")
    assert seen == "_InPlace"  # written in place; pass 1's failure raised, as without


def test_a_stop_signal_before_the_schema_is_known_cuts_the_file_back(write_file, tmp_path):
    """SIGTERM while the provisional run writes in place: the run ends with its one line
    and status, and the file is as it was before (nothing of a run whose types were not
    yet known), as where the output is held back."""
    source = write_file("in.jsonl", KEPT["plain"])
    before = b"earlier output\n"
    code, got, error, seen = _to_file(source, "csv", tmp_path / "out", "r+b", before,
                                      stop=True)
    assert (code, got, error) == (143, before, "Error: terminated\n")
    assert seen == "_InPlace"
