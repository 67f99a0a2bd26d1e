"""Output safety under faults: a full disk, an error half-way through a file, Ctrl-C, a
closed pipe. Whatever happens, the target is either the complete result or exactly what
it was before (absent or byte for byte the old file), no temporary file is left behind,
and no reader or writer thread outlives the run. And hostile content cannot make
cumtool run code (pickles) or open other files (paths in cells or metadata).
"""

from __future__ import annotations

import errno
import gc
import io
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from click.testing import Result

import cumtool
import cumtool.kernels
import cumtool.output
from cumtool.engine import Request, run

# Fault tests (full disks, interrupts, closed pipes; many in subprocesses):
# `-m 'not slow'` leaves them out.
pytestmark = pytest.mark.slow

Invoke = Callable[..., Result]
ORIGINAL = b"the old file: every byte of it must survive a failed run\n"
ROWS = 3000
TIMEOUT = 60


# Inputs: a few thousand rows of incompressible numbers, so that every output format writes
# well past the small disk budgets below, in many batches. ------------------------------------

def numbers(rows: int = ROWS) -> np.ndarray:
    return np.random.default_rng(7).normal(size=(rows, 3))


def write_input(directory: Path, kind: str, data: np.ndarray) -> Path:
    if kind == "csv":
        path = directory / "in.csv"
        lines = ["a,b,c"] + [",".join(repr(float(v)) for v in row) for row in data]
        path.write_text("\n".join(lines) + "\n")
    elif kind == "parquet":
        path = directory / "in.parquet"
        pq.write_table(pa.table({name: data[:, i] for i, name in enumerate("abc")}), path,
                       row_group_size=256)
    else:
        path = directory / "in.npy"
        np.save(path, data)
    return path


def with_overflow_at(directory: Path, kind: str, row: int) -> Path:
    """Integers whose running sum leaves int64 at `row` (0-based), far into the file."""
    data = np.ones((ROWS, 3), dtype=np.int64)
    data[row, 1] = np.iinfo(np.int64).max
    if kind == "csv":
        path = directory / "in.csv"
        lines = ["a,b,c"] + [",".join(str(int(v)) for v in r) for r in data]
        path.write_text("\n".join(lines) + "\n")
        return path
    if kind == "parquet":
        path = directory / "in.parquet"
        pq.write_table(pa.table({name: data[:, i] for i, name in enumerate("abc")}), path,
                       row_group_size=256)
        return path
    path = directory / "in.npy"
    np.save(path, data)
    return path


OUTPUTS = ["out.csv", "out.tsv", "out.csv.gz", "out.parquet", "out.npy", "out.txt"]


def output_args(name: str) -> list[str]:
    return ["--to", "table"] if name.endswith(".txt") else []


def request_for(source: Path, target: Path | None, op: str = "cumsum", **options: Any
                ) -> Request:
    return Request(op=op, input=str(source), output=None if target is None else str(target),
                   to_format="table" if target is not None and target.suffix == ".txt"
                   else options.pop("to_format", None), **options)


def directory_listing(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.iterdir())


@pytest.fixture
def no_thread_left() -> Iterator[None]:
    """No reader or writer thread outlives a run, failed or not, once the failure has been
    handled (a traceback kept alive keeps the reader's generator, and so its thread)."""
    before = set(threading.enumerate())
    yield
    gc.collect()
    deadline = time.monotonic() + 5
    while set(threading.enumerate()) - before and time.monotonic() < deadline:
        time.sleep(0.01)
    assert set(threading.enumerate()) - before == set()


@pytest.fixture
def private_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Spool files (tempfile's directory) go here, so leftovers there can be seen too."""
    spool = tmp_path / "spool"
    spool.mkdir()
    monkeypatch.setattr("tempfile.tempdir", str(spool))
    return spool


# A full disk ------------------------------------------------------------------------------------

class FullDisk:
    """A file on a disk with `budget` bytes free: writes beyond it fail with ENOSPC, as
    write(2) does (what fits is written, then the error)."""

    def __init__(self, raw: Any, budget: int) -> None:
        self._raw = raw
        self._room = budget

    def write(self, data: Any) -> int:
        view = memoryview(data).cast("B")
        if view.nbytes > self._room:
            self._raw.write(view[: self._room])
            self._room = 0
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        self._room -= view.nbytes
        return int(self._raw.write(view))

    def __enter__(self) -> FullDisk:
        return self

    def __exit__(self, *exc: object) -> None:
        self._raw.close()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._raw, name)


def fill_the_disk(monkeypatch: pytest.MonkeyPatch, budget: int) -> None:
    """Every file cumtool's output module opens for writing gets `budget` bytes of disk."""

    class Os:
        def __getattr__(self, name: str) -> Any:
            return getattr(os, name)

        @staticmethod
        def fdopen(fd: int, mode: str = "r", *args: Any, **kwargs: Any) -> Any:
            raw = os.fdopen(fd, mode, *args, **kwargs)
            return FullDisk(raw, budget) if "w" in mode else raw

    monkeypatch.setattr(cumtool.output, "os", Os())


# Room on the disk, as a share of what the complete output needs: none, one byte, half,
# and all but the last byte.
BUDGETS = [pytest.param(0.0, id="no-room"), pytest.param(1e-9, id="1-byte"),
           pytest.param(0.5, id="half"), pytest.param(1.0, id="all-but-1-byte")]


def budget_for(share: float, complete: int) -> int:
    """Bytes of room for `share` of a `complete`-byte output (always short of it)."""
    return min(complete - 1, max(int(share * complete), 1 if share else 0))


@pytest.mark.parametrize("budget", BUDGETS)
@pytest.mark.parametrize("existing", [False, True], ids=["new", "existing"])
@pytest.mark.parametrize(("kind", "name"), [
    *[pytest.param("csv", name, id=f"csv-to-{name}") for name in OUTPUTS],
    *[pytest.param("npy", name, id=f"npy-to-{name}") for name in OUTPUTS
      if not name.endswith(".gz")],
    pytest.param("parquet", "out.parquet", id="parquet-to-parquet"),
    pytest.param("npy", "out.npz", id="npy-to-npz-with-indices"),
])
def test_full_disk_leaves_the_old_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                       private_tmp: Path, no_thread_left: None, kind: str,
                                       name: str, budget: float, existing: bool) -> None:
    source = write_input(tmp_path, kind, numbers())
    target = tmp_path / name
    op = "cummax" if name.endswith(".npz") else "cumsum"
    request = request_for(source, target, op, batch_rows=50, indices=name.endswith(".npz"))
    run(request)
    complete = target.stat().st_size
    target.unlink()
    if existing:
        target.write_bytes(ORIGINAL)
    before = directory_listing(tmp_path)
    fill_the_disk(monkeypatch, budget_for(budget, complete))
    with pytest.raises(cumtool.OutputError) as raised:
        run(request)
    assert str(raised.value) == f"cannot write {target}: No space left on device"
    assert directory_listing(tmp_path) == before
    if existing:
        assert target.read_bytes() == ORIGINAL
    assert list(private_tmp.iterdir()) == []


@pytest.mark.parametrize("name", ["out.csv", "out.parquet", "out.npy"])
def test_full_disk_through_the_cli(invoke: Invoke, tmp_path: Path,
                                   monkeypatch: pytest.MonkeyPatch, name: str) -> None:
    source = write_input(tmp_path, "npy" if name.endswith(".npy") else "csv", numbers())
    target = tmp_path / name
    target.write_bytes(ORIGINAL)
    fill_the_disk(monkeypatch, 1000)
    result = invoke("cumsum", str(source), "-o", str(target), "--batch-rows", "20")
    assert result.exit_code == 1
    assert result.stderr == f"Error: cannot write {target}: No space left on device\n"
    assert target.read_bytes() == ORIGINAL
    assert directory_listing(tmp_path) == sorted([source.name, name])


@pytest.mark.parametrize("budget", BUDGETS)
@pytest.mark.parametrize(("kind", "to"), [("csv", "csv"), ("csv", "parquet"), ("npy", "npy"),
                                          ("npy", "csv"), ("csv", "table")])
def test_full_disk_on_standard_output(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                      no_thread_left: None, kind: str, to: str,
                                      budget: float) -> None:
    source = write_input(tmp_path, kind, numbers())
    complete = tmp_path / "complete"
    run(Request(op="cumsum", input=str(source), output=str(complete), to_format=to))
    room = budget_for(budget, complete.stat().st_size)

    class Stdout:
        buffer = FullDisk(io.BytesIO(), room)

        def isatty(self) -> bool:
            return False

        def flush(self) -> None:
            pass

    monkeypatch.setattr(sys, "stdout", Stdout())
    with pytest.raises(cumtool.OutputError, match=r"^cannot write standard output: No space "
                                                  r"left on device$"):
        run(Request(op="cumsum", input=str(source), to_format=to, batch_rows=50))


# An error half-way through --------------------------------------------------------------------

@pytest.mark.parametrize("existing", [False, True], ids=["new", "existing"])
@pytest.mark.parametrize("name", OUTPUTS)
@pytest.mark.parametrize("kind", ["csv", "parquet", "npy"])
def test_overflow_half_way_leaves_the_old_file(tmp_path: Path, private_tmp: Path,
                                               no_thread_left: None, kind: str, name: str,
                                               existing: bool) -> None:
    """60 batches written, then an overflow at row 2001: nothing of them is kept."""
    source = with_overflow_at(tmp_path, kind, 2000)
    target = tmp_path / name
    if existing:
        target.write_bytes(ORIGINAL)
    before = directory_listing(tmp_path)
    with pytest.raises(cumtool.DataError, match=r"row 2001\b|index \(2000,"):
        run(request_for(source, target, batch_rows=33))
    assert directory_listing(tmp_path) == before
    if existing:
        assert target.read_bytes() == ORIGINAL
    assert list(private_tmp.iterdir()) == []


@pytest.mark.parametrize("name", ["out.csv", "out.npy", "out.parquet"])
def test_a_truncated_stream_half_way_leaves_the_old_file(invoke: Invoke, tmp_path: Path,
                                                         name: str) -> None:
    """Standard input ends in the middle of a .npy: found after many batches were
    written."""
    buffer = io.BytesIO()
    np.save(buffer, numbers())
    data = buffer.getvalue()
    target = tmp_path / name
    target.write_bytes(ORIGINAL)
    result = invoke("cummax", "-", "-o", str(target), "--batch-rows", "25",
                    input=data[: len(data) * 2 // 3])
    assert result.exit_code == 1
    assert result.stderr.startswith("Error: standard input: ")
    assert "truncated" in result.stderr and result.stderr.count("\n") == 1
    assert target.read_bytes() == ORIGINAL
    assert directory_listing(tmp_path) == [name]


def test_a_corrupt_gzip_half_way_leaves_the_old_file(invoke: Invoke, tmp_path: Path) -> None:
    import gzip

    text = "a\n" + "".join(f"{i}\n" for i in range(200_000))
    packed = bytearray(gzip.compress(text.encode(), mtime=0))
    packed[len(packed) * 2 // 3] ^= 0xFF
    source = tmp_path / "in.csv.gz"
    source.write_bytes(bytes(packed))
    target = tmp_path / "out.csv"
    target.write_bytes(ORIGINAL)
    result = invoke("cumsum", str(source), "-o", str(target), "--batch-rows", "1000")
    assert result.exit_code == 1, result.stderr
    assert result.stderr.startswith(f"Error: {source}: ")
    assert result.stderr.count("\n") == 1
    assert target.read_bytes() == ORIGINAL
    assert directory_listing(tmp_path) == ["in.csv.gz", "out.csv"]


# Ctrl-C ---------------------------------------------------------------------------------------

def interrupt_on_third_scan(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The scan kernel raises KeyboardInterrupt (as SIGINT would) on its third block."""
    real = cumtool.kernels.scan_block
    calls: list[int] = []

    def scan_block(*args: Any, **kwargs: Any) -> Any:
        calls.append(1)
        if len(calls) == 3:
            raise KeyboardInterrupt
        return real(*args, **kwargs)

    monkeypatch.setattr(cumtool.kernels, "scan_block", scan_block)
    return calls


@pytest.mark.parametrize("existing", [False, True], ids=["new", "existing"])
@pytest.mark.parametrize("name", OUTPUTS)
@pytest.mark.parametrize("kind", ["csv", "parquet", "npy"])
def test_interrupt_leaves_the_old_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                       private_tmp: Path, no_thread_left: None, kind: str,
                                       name: str, existing: bool) -> None:
    source = write_input(tmp_path, kind, numbers())
    target = tmp_path / name
    if existing:
        target.write_bytes(ORIGINAL)
    before = directory_listing(tmp_path)
    calls = interrupt_on_third_scan(monkeypatch)
    with pytest.raises(KeyboardInterrupt):
        run(request_for(source, target, batch_rows=50))
    assert len(calls) == 3
    assert directory_listing(tmp_path) == before
    if existing:
        assert target.read_bytes() == ORIGINAL
    assert list(private_tmp.iterdir()) == []


@pytest.mark.parametrize("name", ["out.csv", "out.parquet", "out.npy"])
@pytest.mark.parametrize("kind", ["csv", "npy"])
def test_interrupt_through_the_cli(invoke: Invoke, tmp_path: Path,
                                   monkeypatch: pytest.MonkeyPatch, kind: str,
                                   name: str) -> None:
    source = write_input(tmp_path, kind, numbers())
    target = tmp_path / name
    target.write_bytes(ORIGINAL)
    interrupt_on_third_scan(monkeypatch)
    result = invoke("cumsum", str(source), "-o", str(target), "--batch-rows", "50")
    assert result.exit_code == 130
    assert result.stderr == "Error: interrupted\n"
    assert target.read_bytes() == ORIGINAL
    assert directory_listing(tmp_path) == sorted([source.name, name])


@pytest.mark.parametrize(("args", "content"), [
    pytest.param(["-o", "out.csv"], b"a\n" + b"1\n" * 100_000, id="csv-to-file"),
    pytest.param([], b"a\n" + b"1\n" * 100_000, id="csv-to-stdout"),
    pytest.param(["--from", "npy", "-o", "out.npy"], None, id="npy-to-file"),
])
def test_sigint_while_waiting_for_standard_input(tmp_path: Path, args: list[str],
                                                 content: bytes | None) -> None:
    """A real Ctrl-C while the reader waits on a producer that has not finished: exit
    130 at once, not when the producer ends; no file, no temporary file."""
    if content is None:
        buffer = io.BytesIO()
        np.save(buffer, np.arange(100_000.0))
        content = buffer.getvalue()[:400_000]
    process = subprocess.Popen([sys.executable, "-m", "cumtool", "cumsum", "-", *args],
                               stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, cwd=tmp_path)
    assert process.stdin is not None
    try:
        process.stdin.write(content)
        process.stdin.flush()
        time.sleep(1.5)  # let it read, scan and write what it has, then wait for more
        process.send_signal(signal.SIGINT)
        _, stderr = process.communicate(timeout=TIMEOUT)
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()
    assert process.returncode == 130
    assert stderr == b"Error: interrupted\n"
    assert directory_listing(tmp_path) == []


_INTERRUPTED_IMPORT = """
import sys

class Interrupt:  # Ctrl-C while the command line's modules load
    def find_spec(self, name, path=None, target=None):
        if name == "cumtool.cli":
            raise KeyboardInterrupt

sys.meta_path.insert(0, Interrupt())
sys.argv = ["cumtool", "cumsum", "-"]
from cumtool.launch import main
main()
"""


_WRAPPED_STOP = """
import signal, sys
from cumtool.commit import request_stop
from cumtool.errors import Stopped

class Wrapped:  # SIGTERM as {module} loads, its exception wrapped as a class's
    def find_spec(self, name, path=None, target=None):  # __set_name__ wraps one
        if name == "{module}":
            request_stop(signal.SIGTERM)
            raise RuntimeError("Error calling __set_name__") from Stopped(signal.SIGTERM)

sys.meta_path.insert(0, Wrapped())
sys.argv = ["cumtool", "cumsum", "-"]
from cumtool.launch import main
main()
"""


@pytest.mark.parametrize("module", ["cumtool.cli", "cumtool.engine"])
def test_a_stop_wrapped_in_another_exception_while_modules_load_is_one_line(
        module: str) -> None:
    # Python 3.11 wraps an exception raised in __set_name__ (a dataclass's field, as
    # Request's class is made) in a RuntimeError: this was a traceback, now and then.
    done = subprocess.run([sys.executable, "-c", _WRAPPED_STOP.replace("{module}", module)],
                          capture_output=True, timeout=TIMEOUT, input=b"a\n1\n")
    assert (done.returncode, done.stderr, done.stdout) == (143, b"Error: terminated\n", b"")


def test_ctrl_c_while_the_modules_load_is_one_line() -> None:
    # The first tens of milliseconds of a run: this was a KeyboardInterrupt traceback.
    done = subprocess.run([sys.executable, "-c", _INTERRUPTED_IMPORT], capture_output=True,
                          timeout=TIMEOUT)
    assert (done.returncode, done.stderr, done.stdout) == (130, b"Error: interrupted\n", b"")


# A closed pipe ----------------------------------------------------------------------------------

@pytest.mark.parametrize(("to", "when"), [
    *[pytest.param(to, "at-once", id=f"{to}-closed-at-once")
      for to in ("csv", "npy", "parquet", "table")],
    # The pretty table is a screenful: it fits a pipe's buffer, so only the first case.
    *[pytest.param(to, "after-100-bytes", id=f"{to}-closed-after-100-bytes")
      for to in ("csv", "npy", "parquet")],
])
@pytest.mark.parametrize("via", ["file", "stdin"])
def test_closed_pipe_stops_quietly(tmp_path: Path, to: str, when: str, via: str) -> None:
    """`cumtool ... | head -c 100`: the reader leaves early; cumtool stops with status
    141 (128 + SIGPIPE), as other tools do, and prints nothing: no traceback, no
    'Exception ignored' at exit."""
    source = write_input(tmp_path, "npy" if to == "npy" else "csv", numbers(20_000))
    command = [sys.executable, "-m", "cumtool", "cumsum", "--to", to, "--batch-rows", "100",
               str(source) if via == "file" else "-"]
    read_end, write_end = os.pipe()
    with open(source, "rb") as stdin:
        process = subprocess.Popen(
            command, stdin=stdin if via == "stdin" else subprocess.DEVNULL,
            stdout=write_end, stderr=subprocess.PIPE)
    os.close(write_end)
    try:
        if when == "after-100-bytes":
            assert len(os.read(read_end, 100)) > 0
        os.close(read_end)
        _, stderr = process.communicate(timeout=TIMEOUT)
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()
    assert process.returncode == 141, stderr
    assert stderr == b""


# Hostile content --------------------------------------------------------------------------------

class Canary:
    """Unpickling this creates the file at `path` (pickle calls open(path, "w"))."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def __reduce__(self) -> tuple[Any, ...]:
        return (open, (str(self.path), "w"))


def canary_npy(directory: Path, dtype: Any = object) -> tuple[bytes, Path]:
    canary = directory / "CANARY"
    array = np.empty(2, dtype=dtype)
    if dtype is object:
        array[0] = Canary(canary)
        array[1] = 1.5
    else:
        array["x"] = [Canary(canary), Canary(canary)]
    buffer = io.BytesIO()
    np.save(buffer, array, allow_pickle=True)
    return buffer.getvalue(), canary


def test_the_canary_works(tmp_path: Path) -> None:
    """np.load with allow_pickle=True really does run it: the tests below mean something."""
    content, canary = canary_npy(tmp_path)
    np.load(io.BytesIO(content), allow_pickle=True)
    assert canary.exists()


@pytest.mark.parametrize("dtype", [pytest.param(object, id="object"),
                                   pytest.param([("x", object)], id="object-field")])
@pytest.mark.parametrize("via", ["file", "stdin", "subprocess-stdin"])
@pytest.mark.parametrize("op", ["cumsum", "cummax"])
def test_object_npy_is_never_unpickled(invoke: Invoke, tmp_path: Path, dtype: Any, via: str,
                                       op: str) -> None:
    content, canary = canary_npy(tmp_path, dtype)
    path = tmp_path / "pickled.npy"
    path.write_bytes(content)
    if via == "subprocess-stdin":
        done = subprocess.run([sys.executable, "-m", "cumtool", op, "-"], input=content,
                              capture_output=True, timeout=TIMEOUT, cwd=tmp_path, check=False)
        status, stderr = done.returncode, done.stderr.decode()
    else:
        result = (invoke(op, str(path)) if via == "file" else invoke(op, "-", input=content))
        status, stderr = result.exit_code, result.stderr
    assert not canary.exists(), "cumtool unpickled the file's objects"
    assert status == 1
    assert stderr.startswith("Error: ") and stderr.count("\n") == 1
    assert "never unpickles" in stderr


def test_object_array_is_never_unpickled_through_the_api(tmp_path: Path) -> None:
    _, canary = canary_npy(tmp_path)
    with pytest.raises(cumtool.DataError):
        cumtool.scan(np.array([Canary(canary)], dtype=object), "cumsum")
    assert not canary.exists()


def test_paths_in_cells_are_just_text(invoke: Invoke, tmp_path: Path,
                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """A cell, or a column name, that names a file is text: passed through as it is,
    and the file it names is never opened."""
    secret = tmp_path / "secret.txt"
    secret.write_text("TOPSECRET\n1\n2\n")
    monkeypatch.chdir(tmp_path)
    cells = [str(secret), "secret.txt", f"file://{secret}", "@secret.txt", "~/.ssh/id_rsa",
             "/dev/zero", "/proc/self/environ", "$(cat secret.txt)"]
    text = f"path,{secret},n\n" + "".join(f'"{c}",{c}x,{i}\n' for i, c in enumerate(cells))
    source = tmp_path / "paths.csv"
    source.write_text(text)
    result = invoke("cumsum", str(source), "-c", "n")
    assert result.exit_code == 0, result.stderr
    assert "TOPSECRET" not in result.stdout
    lines = result.stdout.splitlines()
    assert lines[0] == f"path,{secret},n"
    running = 0
    for i, (line, cell) in enumerate(zip(lines[1:], cells, strict=True)):
        running += i
        assert line == f"{cell},{cell}x,{running}"


def test_parquet_column_chunks_pointing_at_another_file_are_not_followed(
        invoke: Invoke, tmp_path: Path) -> None:
    """Parquet metadata may say a column chunk lives in another file (file_path): a
    footer-only file whose chunks point at a real data file is not read from it."""
    data = tmp_path / "data.parquet"
    pq.write_table(pa.table({"n": [1, 2, 3]}), data)
    metadata = pq.read_metadata(data)
    metadata.set_file_path(str(data))
    footer = tmp_path / "footer.parquet"
    pq.write_metadata(pa.schema([("n", pa.int64())]), footer, metadata_collector=[metadata])
    result = invoke("cumsum", str(footer), "--to", "csv")
    assert "1\n3\n6" not in result.stdout
    assert result.exit_code == 1
    assert result.stderr.startswith(f"Error: {footer}: cannot read as parquet")
