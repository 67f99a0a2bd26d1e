"""Hostile and pathological input (issue 14): bombs, endless lines, binary data, huge
shapes, wide files, FIFOs. Whatever the input, a run stays within its memory bound and
stops with one `Error:` line, exit status 1, and no temporary file left.

The subprocess cases run `python -m cumtool` under an address-space cap and a timeout
(a regression then fails instead of taking the machine down), and measure the child's
peak resident memory. Bombs are kept small by a small --max-record-size."""

from __future__ import annotations

import bz2
import gzip
import io
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest
from numpy.lib import format as npformat

from cumtool.errors import UsageError
from cumtool.formats import CsvReadOptions
from cumtool.formats.csv.csv import CsvSource
from cumtool.formats.csv.judge import judge_columns
from cumtool.formats.records import Chunker, RecordTooLong, size_option
from tests.helpers import npy_bytes, parquet_bytes

# Virtual memory: polars and pyarrow reserve far more than they touch, so the cap only
# catches a runaway; the bound itself is checked on the peak resident size.
ADDRESS_CAP = 3 << 30
BOUND = 384 << 20  # 1.5 x the documented 256 MiB
TIMEOUT = 60.0

# Runs one command under the cap and reports its status, error text and peak memory
# (RUSAGE_CHILDREN of this small parent covers that one command only).
_RUNNER = r"""
import json, os, resource, signal, subprocess, sys
cap, timeout = int(sys.argv[1]), float(sys.argv[2])
def limit():
    resource.setrlimit(resource.RLIMIT_AS, (cap, cap))
# A session of its own, so that a timeout kills the whole pipeline, not only its shell
# (cumtool orphaned on an endless input would run on).
process = subprocess.Popen(sys.argv[3:], preexec_fn=limit, start_new_session=True,
                           stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                           stderr=subprocess.PIPE)
try:
    _, stderr = process.communicate(timeout=timeout)
    status, error = process.returncode, stderr.decode(errors="replace")
except subprocess.TimeoutExpired:
    os.killpg(process.pid, signal.SIGKILL)
    process.communicate()
    status, error = None, "timed out"
peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024
print(json.dumps({"status": status, "stderr": error, "peak": peak}))
"""


def run_capped(args: list[str], tmp_path: Path, shell: str | None = None) -> dict:
    """`python -m cumtool ARGS` (or a bash pipeline) with TMPDIR in tmp_path/tmp."""
    spool_dir = tmp_path / "tmp"
    spool_dir.mkdir(exist_ok=True)
    env = {**os.environ, "TMPDIR": str(spool_dir)}
    command = (["bash", "-c", shell] if shell is not None
               else [sys.executable, "-m", "cumtool", *args])
    done = subprocess.run([sys.executable, "-c", _RUNNER, str(ADDRESS_CAP), str(TIMEOUT),
                           *command], capture_output=True, text=True, env=env,
                          cwd=tmp_path, timeout=TIMEOUT + 30, check=True)
    report: dict = json.loads(done.stdout)
    report["left"] = sorted(p.name for p in spool_dir.iterdir()) + sorted(
        p.name for p in tmp_path.iterdir() if p.name.endswith(".cumtool-tmp"))
    return report


def assert_refused(report: dict, *words: str) -> None:
    assert report["status"] == 1, report
    lines = report["stderr"].splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: "), report
    for word in words:
        assert word in lines[0], report
    assert report["peak"] < BOUND, report
    assert report["left"] == [], report


CUMTOOL = f"{sys.executable} -m cumtool"


# Bombs and endless records (subprocesses) -----------------------------------------------

@pytest.mark.slow
def test_dev_zero_stops_at_the_first_nul(tmp_path: Path) -> None:
    assert_refused(run_capped(["cumsum", "/dev/zero", "-o", "out.csv"], tmp_path),
                   "NUL byte")


@pytest.mark.slow
def test_a_zstd_bomb_of_nul_bytes_stops_at_once(tmp_path: Path) -> None:
    with pa.CompressedOutputStream(str(tmp_path / "bomb.csv.zst"), "zstd") as out:
        zeros = bytes(16 << 20)
        for _ in range(32):  # 512 MiB of NUL, a few kB stored
            out.write(zeros)
    assert_refused(run_capped(["cumsum", "bomb.csv.zst", "-o", "out.csv"], tmp_path),
                   "NUL byte")


@pytest.mark.slow
def test_a_gzip_line_without_newline_stops_at_the_cap(tmp_path: Path) -> None:
    with gzip.open(tmp_path / "line.csv.gz", "wb", compresslevel=1) as out:
        out.write(b"a,b\n1,2\n")
        for _ in range(16):
            out.write(b"x" * (4 << 20))
    report = run_capped(["cumsum", "line.csv.gz", "-o", "out.csv",
                         "--max-record-size", "256K"], tmp_path)
    assert_refused(report, "row 2 (line 3) is longer than 256 KiB", "--max-record-size")


@pytest.mark.slow
def test_an_unclosed_quote_on_an_endless_pipe_stops_at_the_cap(tmp_path: Path) -> None:
    # `yes` never ends: without the cap this would run until the timeout.
    report = run_capped([], tmp_path, shell=(
        f"{{ printf 'a,b\\n1,2\\n3,\"x\\n'; yes 'some text, and more'; }} "
        f"| {CUMTOOL} cumsum - -o out.csv --max-record-size 1M"))
    assert_refused(report, "row 2 (line 3) is longer than 1 MiB", "never closed")


@pytest.mark.slow
def test_the_default_cap_holds_a_single_endless_line(tmp_path: Path) -> None:
    report = run_capped([], tmp_path, shell=(
        f"{{ printf 'a\\n'; tr '\\0' 'x' < /dev/zero; }} | {CUMTOOL} cumsum - -o out.csv"))
    assert_refused(report, "row 1 (line 2) is longer than 32 MiB")


@pytest.mark.slow
def test_a_binary_file_in_the_middle_of_rows(tmp_path: Path) -> None:
    (tmp_path / "mixed.csv").write_bytes(b"a\n" + b"1\n" * 1000 + b"2\x00\x00\n3\n")
    assert_refused(run_capped(["cumsum", "mixed.csv", "-o", "out.csv"], tmp_path),
                   "row 1001 (line 1002) holds a NUL byte")


@pytest.mark.slow
def test_two_byte_rows_stay_within_the_bound(tmp_path: Path) -> None:
    (tmp_path / "tiny.csv").write_bytes(b"a\n" + b"1\n" * 10_000_000)
    report = run_capped(["cumsum", "tiny.csv", "-o", "out.csv"], tmp_path)
    assert report["status"] == 0, report
    assert report["peak"] < BOUND, report
    assert (tmp_path / "out.csv").read_bytes().endswith(b"\n10000000\n")


# Spooled binary formats --------------------------------------------------------------------

@pytest.mark.slow
def test_parquet_on_standard_input_is_spooled_and_the_spool_removed(tmp_path: Path) -> None:
    table = pa.table({"x": np.arange(1_000_000, dtype=np.int64)})
    (tmp_path / "in.parquet").write_bytes(parquet_bytes(table))
    report = run_capped([], tmp_path, shell=f"{CUMTOOL} cumsum - -o out.csv < in.parquet")
    assert report["status"] == 0 and report["left"] == [], report
    assert (tmp_path / "out.csv").read_text().splitlines()[-1] == str(
        sum(range(1_000_000)))


@pytest.mark.slow
def test_damaged_parquet_on_standard_input_leaves_no_spool(tmp_path: Path) -> None:
    data = parquet_bytes(pa.table({"x": np.arange(1000)}))
    (tmp_path / "bad.parquet").write_bytes(data[:-40] + data[-4:])
    report = run_capped([], tmp_path, shell=f"{CUMTOOL} cumsum - -o out.csv < bad.parquet")
    assert_refused(report, "cannot read as parquet")


@pytest.mark.slow
def test_a_signal_while_spooling_leaves_no_spool(tmp_path: Path) -> None:
    spool_dir = tmp_path / "tmp"
    spool_dir.mkdir()
    data = parquet_bytes(pa.table({"x": np.arange(100_000)}))
    process = subprocess.Popen(
        [sys.executable, "-m", "cumtool", "cumsum", "-", "-o", str(tmp_path / "out.csv")],
        stdin=subprocess.PIPE, stderr=subprocess.PIPE, env={**os.environ,
                                                            "TMPDIR": str(spool_dir)})
    assert process.stdin is not None
    process.stdin.write(data[: len(data) // 2])  # half a file: the spool is being written
    process.stdin.flush()
    time.sleep(1.5)
    process.send_signal(signal.SIGTERM)
    _, error = process.communicate(timeout=TIMEOUT)
    assert process.returncode == 128 + signal.SIGTERM, error
    assert list(spool_dir.iterdir()) == []
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".cumtool-tmp")]


@pytest.mark.slow
def test_fortran_order_npy_on_standard_input(tmp_path: Path) -> None:
    array = np.arange(2_000_000, dtype=np.float64).reshape(1000, 2000)
    (tmp_path / "f.npy").write_bytes(npy_bytes(array, fortran=True))
    report = run_capped([], tmp_path, shell=f"cat f.npy | {CUMTOOL} cumsum - -o out.npy")
    assert report["status"] == 0 and report["left"] == [], report
    assert report["peak"] < BOUND, report
    np.testing.assert_array_equal(np.load(tmp_path / "out.npy"), np.cumsum(array, axis=0))


@pytest.mark.slow
def test_a_npy_file_larger_than_the_bound_is_not_held_mapped(tmp_path: Path) -> None:
    """Memory-mapped pages count as the process's memory until they are unmapped."""
    np.save(tmp_path / "big.npy", np.ones((60_000, 1000)))  # 480 MB
    report = run_capped(["cumsum", "big.npy", "-o", "out.npy"], tmp_path)
    assert report["status"] == 0, report
    assert report["peak"] < BOUND, report
    assert np.load(tmp_path / "out.npy", mmap_mode="r")[-1, 0] == 60_000


# Shapes ----------------------------------------------------------------------------------

def _npy_header(shape: tuple[int, ...], data: bytes = b"") -> bytes:
    buffer = io.BytesIO()
    npformat.write_array_header_2_0(
        buffer, {"descr": "<f8", "fortran_order": False, "shape": shape})
    return buffer.getvalue() + data


def test_more_than_64_dimensions_is_an_error(invoke, write_file) -> None:
    path = write_file("deep.npy", _npy_header((1,) * 70, bytes(8)))
    result = invoke("cumsum", str(path), "-o", str(path.with_suffix(".out.npy")))
    assert result.exit_code == 1
    assert "70 dimensions" in result.stderr and "at most 64" in result.stderr


def test_an_empty_array_with_a_huge_row_is_refused(invoke, write_file) -> None:
    path = write_file("empty.npy", _npy_header((0, 1 << 24)))
    result = invoke("cumsum", str(path), "-o", str(path.with_suffix(".csv")))
    assert result.exit_code == 1
    assert "one row along axis 0 holds 128 MiB" in result.stderr


def test_an_array_too_wide_for_a_table(invoke, write_file) -> None:
    path = write_file("wide.npy", npy_bytes(np.ones((2, 40_000))))
    result = invoke("cumsum", str(path), "-o", str(path.with_suffix(".csv")))
    assert result.exit_code == 2
    assert "40000 columns are too many for csv" in result.stderr
    assert not list(path.parent.glob("*.cumtool-tmp"))


# The record cap ---------------------------------------------------------------------------

def test_the_record_cap_names_the_row(invoke, write_file) -> None:
    path = write_file("a.csv", b"a,b\n1,2\n\n3,4\n5," + b"x" * 3000 + b"\n6,7\n")
    result = invoke("cumsum", str(path), "--max-record-size", "1K")
    assert result.exit_code == 1
    assert result.stderr.strip() == (
        f"Error: {path}: row 3 (line 5) is longer than 1 KiB; --max-record-size raises the "
        "limit")
    assert invoke("cumsum", str(path), "--max-record-size", "4K", "-c", "a").exit_code == 0


def test_the_record_cap_names_the_header(invoke, write_file) -> None:
    path = write_file("a.csv", b"a" * 5000 + b"\n1\n")
    result = invoke("cumsum", str(path), "--max-record-size", "2K")
    assert "the header is longer than 2 KiB" in result.stderr


def test_the_record_cap_far_into_a_pipe(invoke) -> None:
    data = b"a\n" + b"1\n" * 300_000 + b'"' + b"y" * 5000
    result = invoke("cumsum", "-", "--max-record-size", "4K", input=data)
    assert result.exit_code == 1
    assert ("row 300001 (line 300002) is longer than 4 KiB (a quote that is never closed?)"
            in result.stderr)


def test_max_record_size_is_checked_before_any_file_is_opened(invoke) -> None:
    for bad in ("0", "12x", "M", "-1"):
        result = invoke("cumsum", "no-such-file.csv", "--max-record-size", bad)
        assert result.exit_code == 2, bad
        assert "--max-record-size" in result.stderr and "no such file" not in result.stderr


@pytest.mark.parametrize(("text", "size"), [("1048576", 1 << 20), ("512K", 512 << 10),
                                            ("64M", 64 << 20), ("1g", 1 << 30),
                                            ("2MiB", 2 << 20), ("3KB", 3 << 10)])
def test_sizes(text: str, size: int) -> None:
    assert size_option(text, "--max-record-size") == size


def test_size_zero_is_a_usage_error() -> None:
    with pytest.raises(UsageError):
        size_option("0", "--max-record-size")


def test_the_chunker_scans_each_byte_once(monkeypatch) -> None:
    """A long record is read in many pieces: each is scanned once, not the whole buffer
    again at every read (which made long records quadratic)."""
    scanned = []
    original = Chunker._scan

    def counting(self: Chunker, data: bytes, offset: int) -> None:
        scanned.append(len(data))
        original(self, data, offset)

    monkeypatch.setattr(Chunker, "_scan", counting)
    data = b"a\n" + b'"' + b"x" * (4 << 20) + b'"\n' + b"1\n"
    chunker = Chunker(io.BufferedReader(io.BytesIO(data), 4096), 1 << 16, 8 << 20)
    assert b"".join(chunker.chunks()) == data
    assert sum(scanned) == len(data)
    assert len(scanned) > 10


def _record_ends(data: bytes) -> set[int]:
    """Offsets just past each newline outside quotes, by a plain state machine."""
    ends, quoted = set(), False
    for at, byte in enumerate(data):
        if byte == ord('"'):
            quoted = not quoted
        elif byte == ord("\n") and not quoted:
            ends.add(at + 1)
    return ends


@pytest.mark.parametrize("seed", range(40))
def test_the_chunker_cuts_only_at_newlines_outside_quotes(seed: int) -> None:
    """Random quotes, newlines (some inside quoted fields, some many in a row) and read
    sizes: every chunk ends where a record ends, and the chunks are the input."""
    rng = np.random.default_rng(seed)
    pieces = [b'"', b"\n", b",", b"ab", b'"' + b"\n" * 30 + b'"']  # the last: many newlines
    weights = rng.dirichlet(np.ones(len(pieces)))                 # inside one field
    picks = rng.choice(len(pieces), size=int(rng.integers(1, 5_000)), p=weights)
    data = b"".join(pieces[k] for k in picks)
    if data.count(b'"') % 2:
        data += b'"'  # a quote left open would be a record over the cap
    data += b"\n"
    ends = _record_ends(data)
    buffer = int(rng.integers(1, 5000))
    chunker = Chunker(io.BufferedReader(io.BytesIO(data), buffer), int(rng.integers(1, 3000)),
                      1 << 20)
    chunks = list(chunker.chunks())
    assert b"".join(chunks) == data
    at = 0
    for chunk in chunks:
        at += len(chunk)
        assert at in ends, (seed, at)


class _Trickle(io.RawIOBase):
    """A stream that hands out at most `step` bytes a read, like a slow pipe."""

    def __init__(self, data: bytes, step: int) -> None:
        self._data = memoryview(data)
        self._step = step

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:  # type: ignore[no-untyped-def]
        size = min(len(buffer), self._step, len(self._data))
        buffer[:size] = self._data[:size]
        self._data = self._data[size:]
        return size


@pytest.mark.parametrize("step", [7, 64, 1000])
def test_the_chunker_steps_over_many_newlines_in_a_quoted_field(step: int) -> None:
    """Reads that end inside a quoted field of many lines: the record ends before it."""
    data = b'a,b\n1,"' + b"x\n" * 200 + b'"\n2,3\n' + b'4,"\n\n"\n' * 50
    chunker = Chunker(io.BufferedReader(_Trickle(data, step), 1), 1, 1 << 20)
    chunks = list(chunker.chunks())
    assert b"".join(chunks) == data
    ends = _record_ends(data)
    assert all(sum(map(len, chunks[:k + 1])) in ends for k in range(len(chunks)))


@pytest.mark.parametrize("step", [1, 5, 64, 100_000])
def test_a_lone_cr_file_keeps_the_cr_inside_a_quoted_field(step: int) -> None:
    """Old Mac line ends become LF; a CR inside quotes is text, whichever read it is in."""
    data = b'x,y\r1,"a\rb"\r2,c\r' + b'3,"\r\r""\r"\r' * 20
    chunker = Chunker(io.BufferedReader(_Trickle(data, step), 1), 1, 1 << 20)
    expected, quoted = bytearray(data), False
    for at, byte in enumerate(data):
        quoted ^= byte == ord('"')
        if byte == ord("\r") and not quoted:
            expected[at] = ord("\n")
    assert b"".join(chunker.chunks()) == bytes(expected)


@pytest.mark.parametrize("step", [1, 2, 3, 4, 100])
@pytest.mark.parametrize("ending", [b"\r\n", b"\r", b"\n"], ids=["crlf", "cr", "lf"])
def test_line_ends_are_judged_whatever_the_reads(step: int, ending: bytes) -> None:
    """A read may end between the CR and the LF of a CRLF: that is not a lone CR."""
    data = ending.join([b"x,y", b"1,2", b"3,4", b""])
    chunker = Chunker(io.BufferedReader(_Trickle(data, step), 1), 1, 1 << 20)
    expected = data.replace(b"\r", b"\n") if ending == b"\r" else data
    assert b"".join(chunker.chunks()) == expected


def test_a_cr_in_a_quoted_cell_of_a_lone_cr_file_is_written_back(invoke) -> None:
    result = invoke("cumsum", "--batch-rows", "1", input=b'x,y\r1,"a\rb"\r2,c\r')
    assert result.exit_code == 0, result.stderr
    assert result.stdout_bytes == b'x,y\n1,"a\rb"\n3,c\n'


def test_the_chunker_refuses_at_the_cap_without_reading_on() -> None:
    endless = io.BufferedReader(_Endless(b"x"), 1 << 16)
    chunker = Chunker(endless, 1 << 16, 1 << 20)
    with pytest.raises(RecordTooLong):
        list(chunker.chunks())
    assert chunker.bytes_read < 4 << 20


class _Endless(io.RawIOBase):
    def __init__(self, byte: bytes) -> None:
        self._byte = byte

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:  # type: ignore[no-untyped-def]
        buffer[:] = self._byte * len(buffer)
        return len(buffer)


def test_a_nul_stops_the_chunker_at_once() -> None:
    chunker = Chunker(io.BufferedReader(_Endless(b"\0"), 1 << 16), 1 << 20, 1 << 30)
    chunk = chunker.take(1 << 20)
    assert b"\0" in chunk and chunker.bytes_read <= 2 << 20


# Batches sized in bytes ----------------------------------------------------------------------

def test_short_rows_make_batches_of_bounded_rows() -> None:
    source = CsvSource(io.BytesIO(b"a\n" + b"1\n" * 2_000_000), "tiny", CsvReadOptions())
    rows = [batch.num_rows for batch in source.batches()]
    assert sum(rows) == 2_000_000
    assert max(rows) <= 1 << 19  # about 256K cells a batch, not 4M rows per 8 MiB


def test_parquet_batches_follow_the_row_size(tmp_path: Path) -> None:
    from cumtool.formats.parquet.parquet import BATCH_BYTES, ParquetSource

    table = pa.table({f"c{i}": np.arange(20_000, dtype=np.float64) for i in range(200)})
    path = tmp_path / "wide.parquet"
    path.write_bytes(parquet_bytes(table, row_group_size=20_000))
    source = ParquetSource(str(path), "wide.parquet", None)
    rows = [batch.num_rows for batch in source.batches()]
    assert sum(rows) == 20_000
    assert max(rows) * 200 * 8 <= BATCH_BYTES


# FIFOs and process substitution ---------------------------------------------------------------

def _bash(script: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["bash", "-c", script], capture_output=True, text=True, cwd=cwd,
                          timeout=TIMEOUT)


@pytest.mark.slow  # bash and a subprocess each: 1.4 s
@pytest.mark.parametrize(("producer", "expected"), [
    ("printf 'a\\n1\\n2\\n'", "a\n1\n3\n"),
    ("printf 'a\\tb\\n1\\t2\\n2\\t3\\n'", "a\tb\n1\t2\n3\t5\n"),
    ("printf 'a\\n1\\n2\\n' | gzip -c", "a\n1\n3\n"),
])
def test_process_substitution(tmp_path: Path, producer: str, expected: str) -> None:
    done = _bash(f"{CUMTOOL} cumsum <({producer})", tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout == expected


def test_process_substitution_of_binary_formats(tmp_path: Path) -> None:
    (tmp_path / "a.npy").write_bytes(npy_bytes(np.arange(4)))
    (tmp_path / "a.parquet").write_bytes(parquet_bytes(pa.table({"x": [1, 2, 3]})))
    done = _bash(f"{CUMTOOL} cumsum <(cat a.npy) -o o.npy && "
                 f"{CUMTOOL} cumsum <(cat a.parquet) --to csv", tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout == "x\n1\n3\n6\n"
    assert np.load(tmp_path / "o.npy").tolist() == [0, 1, 3, 6]


def test_a_named_pipe(tmp_path: Path) -> None:
    fifo = tmp_path / "pipe.csv"
    os.mkfifo(fifo)
    done = _bash(f"printf 'a\\n1\\n2\\n' > pipe.csv & {CUMTOOL} cumsum pipe.csv; wait",
                 tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout == "a\n1\n3\n"


def test_a_bz2_stream_through_a_fifo(tmp_path: Path) -> None:
    fifo = tmp_path / "pipe.csv.bz2"
    os.mkfifo(fifo)
    (tmp_path / "data.bz2").write_bytes(bz2.compress(b"a\n1\n2\n"))
    done = _bash(f"cat data.bz2 > pipe.csv.bz2 & {CUMTOOL} cumsum pipe.csv.bz2; wait",
                 tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout == "a\n1\n3\n"


# Wide files ---------------------------------------------------------------------------------

@pytest.mark.slow  # a very wide file: 2 s
def test_judging_is_a_query_a_group_of_columns_whatever_the_width(monkeypatch) -> None:
    """Column types are judged in one polars query a group of JUDGE_CELLS cells (which
    bounds the memory of the cells in long form), not a few calls per column (which took
    50 s for 100,000 columns)."""
    import polars as pl

    from cumtool.formats.csv.judge import JUDGE_CELLS

    calls = []
    original = pl.DataFrame.group_by

    def counting(self, *args, **kwargs):  # type: ignore[no-untyped-def]
        calls.append(self.height)
        return original(self, *args, **kwargs)

    monkeypatch.setattr(pl.DataFrame, "group_by", counting)
    width = 100_000
    frame = pl.DataFrame({f"c{i}": [str(i), "x" if i % 3 == 0 else "2", ""]
                          for i in range(width)})
    started = time.monotonic()
    hints = judge_columns(frame, [""], decimal_comma=False, float_columns=False,
                          decimal=False)
    assert time.monotonic() - started < 30  # about 1 s here; generous against a slow CI
    columns = JUDGE_CELLS // 3  # a group's, of 3 rows (2 of them not missing)
    assert calls == [2 * columns] * (width // columns) + [2 * (width % columns)]
    assert [h.kind for h in hints[:3]] == ["text", "int", "int"]


@pytest.mark.slow
def test_a_file_100000_columns_wide_runs_in_seconds(tmp_path: Path) -> None:
    width = 100_000
    header = ",".join(f"c{i}" for i in range(width))
    rows = "\n".join(",".join(str((r + i) % 7) for i in range(width)) for r in range(3))
    (tmp_path / "wide.csv").write_text(f"{header}\n{rows}\n")
    started = time.monotonic()
    done = subprocess.run([sys.executable, "-m", "cumtool", "cumsum", "wide.csv", "-o",
                           "out.csv"], capture_output=True, text=True, cwd=tmp_path,
                          timeout=180)
    assert done.returncode == 0, done.stderr
    assert time.monotonic() - started < 120  # about 10 s on 2 busy cores
