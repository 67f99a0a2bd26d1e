"""Results never depend on how fast the input arrives (SEMANTICS.md, "Tables"): column
types are judged from the same first 10,000 rows from a pipe whose producer pauses as
from a file, and `--line-buffered` is the explicit low-latency mode, which writes each
row as soon as it is read and judges the types from the first data row.

A pipe here is a real one (os.pipe), fed by a writer thread that sleeps at chosen rows.
"""

from __future__ import annotations

import io
import os
import random
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import pytest
from click.testing import Result
from helpers import CUMTOOL

from cumtool.formats import CsvReadOptions
from cumtool.formats.csv.csv import CsvSource
from cumtool.request import Request

Invoke = Callable[..., Result]
PAUSE = 0.15  # longer than the small path's wait for standard input to end (0.1 s)


def _rows_then(late: dict[int, str], rows: int = 3000) -> bytes:
    """a,b,c: integers in a and b and text in c, but for the cells of column a in `late`
    (row from 1 -> text)."""
    lines = ["a,b,c"]
    for row in range(1, rows + 1):
        lines.append(f"{late.get(row, str(row))},{row % 7},x{row}")
    return ("\n".join(lines) + "\n").encode()


def _feed(data: bytes, pauses: Sequence[int]) -> tuple[int, threading.Thread]:
    """The read end of a pipe that delivers `data`, sleeping after each of the rows in
    `pauses` (line numbers from 1, the header being line 1)."""
    read_end, write_end = os.pipe()
    lines = data.splitlines(keepends=True)

    def write() -> None:
        with open(write_end, "wb", buffering=0) as out:
            start = 0
            for cut in sorted(pauses):
                out.write(b"".join(lines[start:cut]))
                time.sleep(PAUSE)
                start = cut
            out.write(b"".join(lines[start:]))

    thread = threading.Thread(target=write, daemon=True)
    thread.start()
    return read_end, thread


def _pauses(seed: int, lines: int, count: int = 3) -> list[int]:
    return random.Random(seed).sample(range(2, lines), count)


@pytest.mark.parametrize("seed", range(4))
def test_a_pipe_that_pauses_judges_the_rows_a_file_judges(seed: int) -> None:
    """A float at row 2000 and a leading zero at row 2500 are among the first 10,000
    rows: the column is judged from them however the input pauses before them."""
    data = _rows_then({2000: "2.5", 2500: "0123"})
    from_file = CsvSource(io.BytesIO(data), "file", CsvReadOptions()).hints
    read_end, thread = _feed(data, _pauses(seed, 3000))
    with open(read_end, "rb") as stream:
        from_pipe = CsvSource(stream, "pipe", CsvReadOptions()).hints
    thread.join()
    assert from_pipe == from_file
    assert [h.kind for h in from_file] == ["code", "int", "text"]


def test_a_pipe_that_pauses_before_its_first_rows_are_in() -> None:
    """Paused after the header and after the first row: the types wait for the rest."""
    data = _rows_then({3: "1.5"}, rows=5)
    read_end, thread = _feed(data, [1, 2])
    with open(read_end, "rb") as stream:
        hints = CsvSource(stream, "pipe", CsvReadOptions()).hints
    thread.join()
    assert [h.kind for h in hints] == ["float", "int", "text"]


def _run_on_stdin(data: bytes, pauses: Sequence[int], output: Path,
                  monkeypatch: pytest.MonkeyPatch, **options: object) -> None:
    from cumtool.engine import run

    read_end, thread = _feed(data, pauses)
    with open(read_end, "rb") as stream:
        monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(stream))
        run(Request(op="cumsum", input="-", output=str(output), **options))  # type: ignore[arg-type]
    thread.join()


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("options", [
    pytest.param({}, id="default"),
    pytest.param({"keep": True, "batch_rows": 100}, id="keep-batches"),
])
def test_the_bytes_from_a_pipe_that_pauses_are_those_from_a_file(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, seed: int,
        options: dict[str, object]) -> None:
    from cumtool.engine import run

    data = _rows_then({1500: "2.5"}, rows=2000)
    source = tmp_path / "in.csv"
    source.write_bytes(data)
    run(Request(op="cumsum", input=str(source), output=str(tmp_path / "file.csv"),
                **options))  # type: ignore[arg-type]
    _run_on_stdin(data, _pauses(seed, 2000), tmp_path / "pipe.csv", monkeypatch, **options)
    assert (tmp_path / "pipe.csv").read_bytes() == (tmp_path / "file.csv").read_bytes()
    last = b"2000,5,x2000,1999502.5,6000" if options else b"1999502.5,6000,x2000"
    assert (tmp_path / "file.csv").read_bytes().splitlines()[-1] == last


def test_line_buffered_judges_from_the_first_data_row(invoke: Invoke) -> None:
    result = invoke("cumsum", "--line-buffered", input=b"a\n1\n\n1.5\n")
    assert result.exit_code == 1
    assert result.stderr == ("Error: standard input: row 2 (line 4), column 'a': '1.5' is "
                             "not an integer like the first rows; pass --dtype float64 if "
                             "the column holds floats\n")


def test_line_buffered_with_a_dtype(invoke: Invoke) -> None:
    result = invoke("cumsum", "--line-buffered", "--dtype", "float64",
                    input=b"a,b\n1,x\n1.5,y\n")
    assert result.exit_code == 0, result.stderr
    assert result.stdout_bytes == b"a,b\n1.0,x\n2.5,y\n"


def test_line_buffered_gives_the_bytes_of_a_file_where_the_first_row_says_it_all(
        invoke: Invoke, write_file) -> None:
    data = _rows_then({}, rows=50)
    path = write_file("in.csv", data)
    assert invoke("cumsum", "--line-buffered", input=data).stdout_bytes == \
        invoke("cumsum", str(path)).stdout_bytes


def test_line_buffered_refuses_reverse(invoke: Invoke) -> None:
    result = invoke("cumsum", "--line-buffered", "--reverse", input=b"a\n1\n")
    assert result.exit_code == 2
    assert result.stderr == ("Error: --line-buffered writes each row as it is read, and "
                             "--reverse needs the last row first; leave one out\n")


@pytest.mark.slow
def test_line_buffered_writes_each_row_before_the_next_arrives() -> None:
    """A producer that waits for each result before it sends the next row (a
    conversation): only a line-buffered reader answers it."""
    process = subprocess.Popen([sys.executable, "-m", "cumtool", "cumsum", "-",
                                "--line-buffered"],
                               stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE)
    assert process.stdin is not None and process.stdout is not None
    try:
        process.stdin.write(b"a\n1\n")
        process.stdin.flush()
        got = [process.stdout.readline(), process.stdout.readline()]
        for value in (2, 3):
            process.stdin.write(f"{value}\n".encode())
            process.stdin.flush()
            got.append(process.stdout.readline())
        _, stderr = process.communicate(timeout=60)
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()
    assert process.returncode == 0, stderr
    assert got == [b"a\n", b"1\n", b"3\n", b"6\n"]


@pytest.mark.parametrize("stderr", ["closed", "full", "reader-gone"])
def test_a_note_that_cannot_be_written_does_not_stop_the_run(tmp_path, stderr):
    """A note is advice: with standard error closed (2>&-), full (2>/dev/full) or its
    reader gone, the run wrote nothing and exited 1 (or 141), its output lost."""
    import subprocess

    source = tmp_path / "n.csv"
    source.write_text('a,b\n1,"1,234.5"\n2,3\n')  # b: a note (formatted numbers)
    read, write = os.pipe()
    os.close(read)
    target = {"closed": None, "full": open("/dev/full", "wb"), "reader-gone": write}[stderr]
    try:
        done = subprocess.run(
            [CUMTOOL, "cumsum", str(source), "-o", str(tmp_path / "o.csv")],
            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=target,
            preexec_fn=(lambda: os.close(2)) if target is None else None)
    finally:
        os.close(write)
        if stderr == "full":
            target.close()
    assert done.returncode == 0
    assert (tmp_path / "o.csv").read_text() == 'a,b\n1,"1,234.5"\n3,3\n'


@pytest.mark.parametrize("args", [["--help"], ["cumsum", "--help"], ["--version"]])
def test_the_help_and_version_not_taken_are_one_line_or_quiet_141(args):
    """The help or the version into a full disk was a 38-line Python traceback (status
    1), and into a pipe closed early status 1, silent (Click's way); a run's are one line
    and 1, and quiet 141."""
    import subprocess

    with open("/dev/full", "wb") as full:
        done = subprocess.run([CUMTOOL, *args], stdout=full, stderr=subprocess.PIPE,
                              stdin=subprocess.DEVNULL, text=True)
    assert (done.returncode, done.stderr) == (
        1, "Error: cannot write standard output: No space left on device\n")
    read, write = os.pipe()
    os.close(read)
    try:
        done = subprocess.run([CUMTOOL, *args], stdout=write, stderr=subprocess.PIPE,
                              stdin=subprocess.DEVNULL, text=True)
    finally:
        os.close(write)
    assert (done.returncode, done.stderr) == (141, "")
    done = subprocess.run([CUMTOOL, *args], stdin=subprocess.DEVNULL, stderr=subprocess.PIPE,
                          text=True, preexec_fn=lambda: os.close(1))  # `>&-`: said 0
    assert (done.returncode, done.stderr) == (
        1, "Error: cannot write standard output: it is closed\n")
