"""Every way a run ends: a failure aborts each writer exactly once and leaves no noise, a
full disk at any point is one `Error:` line, SIGTERM and SIGHUP end like Ctrl-C, the
output file gets the right mode and owner and is never a swapped-in symlink, and the
progress bar measures what it says. Whatever happens: exit status as documented, stderr
one line, an existing target byte for byte as it was, no temporary file left behind."""

from __future__ import annotations

import contextlib
import errno
import gzip
import io
import os
import pwd
import re
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pytest
from click.testing import Result

import cumtool.engine
import cumtool.output
import cumtool.runner
from cumtool.engine import Request
from cumtool.formats.npy.npy import TableToNpy
from cumtool.pipeline import BackgroundSink, Progress, ReversingArraySink, ReversingSink
from cumtool.sinks import ArrayToTable
from cumtool.sources import open_source

Invoke = Callable[..., Result]
ORIGINAL = b"the old file: every byte of it must survive a failed run\n"
TIMEOUT = 60
ENOSPC = os.strerror(errno.ENOSPC)
CUMTOOL = [sys.executable, "-m", "cumtool"]


def leftovers(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.iterdir() if ".cumtool-" in p.name)


def csv_input(directory: Path, rows: int = 200, name: str = "in.csv") -> Path:
    path = directory / name
    data = np.random.default_rng(3).normal(size=(rows, 3))
    path.write_text("a,b,c\n" + "".join(",".join(repr(float(v)) for v in row) + "\n"
                                          for row in data))
    return path


def npy_input(directory: Path, rows: int = 200, name: str = "in.npy") -> Path:
    path = directory / name
    np.save(path, np.random.default_rng(3).normal(size=(rows, 3)))
    return path


def late_overflow_csv(directory: Path, rows: int = 400) -> Path:
    path = directory / "late.csv"
    lines = ["a,b"] + [f"{i},1" for i in range(rows - 1)] + [f"{2**63 - 1},1"]
    path.write_text("\n".join(lines) + "\n")
    return path


def late_overflow_npy(directory: Path, rows: int = 400) -> Path:
    path = directory / "late.npy"
    data = np.ones((rows, 2), dtype=np.int64)
    data[-1, 0] = np.iinfo(np.int64).max
    np.save(path, data)
    return path


# (input kind, output name, extra options): every output format, from tables and arrays.
OUTPUT_CASES = [
    pytest.param("csv", "out.csv", [], id="csv"),
    pytest.param("csv", "out.tsv", [], id="tsv"),
    pytest.param("csv", "out.csv.gz", [], id="csv.gz"),
    pytest.param("csv", "out.parquet", [], id="parquet"),
    pytest.param("csv", "out.npy", [], id="table-to-npy"),
    pytest.param("csv", "out.txt", ["--to", "table"], id="table-view"),
    pytest.param("npy", "out.npy", [], id="npy"),
    pytest.param("npy", "out.npz", ["--indices"], id="npz"),
    pytest.param("npy", "out.parquet", [], id="array-to-parquet"),
    pytest.param("npy", "out.csv.gz", [], id="array-to-csv.gz"),
    pytest.param("csv", "out.csv", ["--reverse"], id="csv-reversed"),
    pytest.param("csv", "out.parquet", ["--reverse"], id="parquet-reversed"),
    pytest.param("npy", "out.npy", ["--reverse"], id="npy-reversed"),
    pytest.param("npy", "out.npz", ["--indices", "--reverse"], id="npz-reversed"),
]


def op_for(options: list[str]) -> str:
    return "cummax" if "--indices" in options else "cumsum"


# 1. One Sink interface: abort forwarded, exactly once ------------------------------------------

class Recording:
    """A sink that records the calls it gets; the adapters below must forward to it."""

    def __init__(self) -> None:
        self.calls: list[str] = []

    def write(self, *args: Any) -> None:
        self.calls.append("write")

    def write_rows(self, block: np.ndarray) -> None:
        self.calls.append("write")

    def close(self) -> None:
        self.calls.append("close")

    def abort(self) -> None:
        self.calls.append("abort")


def _batch() -> pa.RecordBatch:
    return pa.RecordBatch.from_pydict({"0": pa.array([1.0, 2.0])})


@pytest.mark.parametrize("adapter", ["background", "reversing", "reversing-array",
                                     "array-to-table", "table-to-npy"])
def test_every_adapter_forwards_abort_once_and_never_closes(adapter: str) -> None:
    inner = Recording()
    with contextlib.ExitStack() as stack:
        sink: Any
        if adapter == "background":
            sink = BackgroundSink(inner)
        elif adapter == "reversing":
            sink = ReversingSink(inner, stack)
        elif adapter == "reversing-array":
            sink = ReversingArraySink(inner, stack)
        elif adapter == "array-to-table":
            sink = ArrayToTable(inner, _batch().schema)
        else:
            sink = TableToNpy(lambda *_args: inner, io.BytesIO(), _batch().schema)
        if adapter in ("reversing-array", "array-to-table"):
            sink.write(np.array([1.0, 2.0]), None)
        else:
            sink.write(_batch())
        sink.abort()
    if adapter == "background":  # a write still queued at abort is dropped, or not yet
        assert inner.calls in (["abort"], ["write", "abort"])
    elif adapter.startswith("reversing"):  # batches are held back until close
        assert inner.calls == ["abort"]
    else:
        assert inner.calls == ["write", "abort"]


def counting_sinks(monkeypatch: pytest.MonkeyPatch) -> Counter[str]:
    """Wrap the writer the engine gets, counting its close and abort calls."""
    counts: Counter[str] = Counter()

    class Counted:
        def __init__(self, sink: Any) -> None:
            self._sink = sink

        def write(self, *args: Any) -> None:
            self._sink.write(*args)

        def close(self) -> None:
            counts["close"] += 1
            self._sink.close()

        def abort(self) -> None:
            counts["abort"] += 1
            self._sink.abort()

    for module, name in ((cumtool.runner, "table_sink"), (cumtool.engine, "array_sink")):
        real = getattr(module, name)
        monkeypatch.setattr(module, name,
                            lambda *a, _real=real, **k: Counted(_real(*a, **k)))
    return counts


@pytest.mark.parametrize(("kind", "name", "options"), OUTPUT_CASES)
def test_a_failing_run_aborts_the_writer_exactly_once(
        invoke: Invoke, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, kind: str,
        name: str, options: list[str]) -> None:
    source = late_overflow_csv(tmp_path) if kind == "csv" else late_overflow_npy(tmp_path)
    target = tmp_path / name
    target.write_bytes(ORIGINAL)
    counts = counting_sinks(monkeypatch)
    # cummax cannot overflow; its late failure is a cast: int64 max does not fit int32.
    failing = ["--dtype", "int32"] if op_for(options) == "cummax" else []
    result = invoke(op_for(options), str(source), "-o", str(target), "--batch-rows", "50",
                    *options, *failing)
    assert result.exit_code == 1
    assert re.fullmatch(r"Error: [^\n]*(overflows|does not fit)[^\n]*\n", result.stderr), (
        result.stderr)
    assert counts == Counter(abort=1)
    assert target.read_bytes() == ORIGINAL
    assert leftovers(tmp_path) == []


@pytest.mark.slow
@pytest.mark.parametrize(("kind", "name", "options"), [
    pytest.param("npy", "o8.parquet", ["--dtype", "int8"], id="npy-to-parquet"),
    pytest.param("csv", "o.csv.gz", [], id="csv-to-csv.gz"),
    pytest.param("csv", "o.parquet", ["--reverse"], id="csv-to-parquet-reversed"),
    pytest.param("npy", "o.csv.gz", ["--dtype", "int8"], id="npy-to-csv.gz"),
])
def test_a_failed_run_prints_one_line_and_nothing_at_exit(tmp_path: Path, kind: str,
                                                          name: str, options: list[str]
                                                          ) -> None:
    """A real process: a writer left open used to write into the closed temporary file
    when collected ('Exception ignored in: ParquetWriter.__del__', 'Error ignored when
    destroying CompressedOutputStream') after the Error line."""
    if kind == "npy":
        source = tmp_path / "small.npy"
        np.save(source, np.array([100, 100, 100], dtype=np.int8))
    else:
        source = late_overflow_csv(tmp_path)
    done = subprocess.run([*CUMTOOL, "cumsum", str(source), "-o", name, *options],
                          cwd=tmp_path, capture_output=True, timeout=TIMEOUT)
    assert done.returncode == 1
    assert re.fullmatch(rb"Error: [^\n]*overflow[^\n]*\n", done.stderr), done.stderr
    assert not (tmp_path / name).exists()
    assert leftovers(tmp_path) == []


# 2. A full disk, at every write, flush, close, fsync and rename ---------------------------------

class Faults:
    """Counts the output file's operations and fails the `fail`th one of kind `what`."""

    def __init__(self, what: str | None = None, fail: int = 0) -> None:
        self.seen: Counter[str] = Counter()
        self._what = what
        self._fail = fail

    def hit(self, what: str) -> None:
        self.seen[what] += 1
        if what == self._what and self.seen[what] == self._fail:
            raise OSError(errno.ENOSPC, ENOSPC)


class FaultyFile:
    def __init__(self, raw: Any, faults: Faults) -> None:
        self._raw = raw
        self._faults = faults

    def write(self, data: Any) -> int:
        self._faults.hit("write")
        return int(self._raw.write(data))

    def flush(self) -> None:
        self._faults.hit("flush")
        self._raw.flush()

    def close(self) -> None:
        if self._raw.closed:
            return
        self._raw.close()  # close(2) releases the descriptor even when it reports an error
        self._faults.hit("close")

    def __enter__(self) -> FaultyFile:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._raw, name)


def inject(monkeypatch: pytest.MonkeyPatch, faults: Faults) -> None:
    class Os:
        def __getattr__(self, name: str) -> Any:
            return getattr(os, name)

        @staticmethod
        def fdopen(fd: int, mode: str = "r", *args: Any, **kwargs: Any) -> Any:
            return FaultyFile(os.fdopen(fd, mode, *args, **kwargs), faults)

        @staticmethod
        def fsync(fd: int) -> None:
            faults.hit("fsync")
            os.fsync(fd)

        @staticmethod
        def replace(*args: Any, **kwargs: Any) -> None:
            faults.hit("replace")
            os.replace(*args, **kwargs)

    monkeypatch.setattr(cumtool.output, "os", Os())


@pytest.mark.slow
@pytest.mark.parametrize(("kind", "name", "options"), OUTPUT_CASES)
def test_full_disk_at_every_point_is_one_error_line(
        invoke: Invoke, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, kind: str,
        name: str, options: list[str]) -> None:
    source = csv_input(tmp_path) if kind == "csv" else npy_input(tmp_path)
    target = tmp_path / name
    args = [op_for(options), str(source), "-o", str(target), "--batch-rows", "40", *options]
    clean = Faults()
    with monkeypatch.context() as patch:
        inject(patch, clean)
        assert invoke(*args).exit_code == 0
    complete = target.read_bytes()
    points = [(what, n) for what in ("write", "flush", "fsync", "close", "replace")
              for n in range(1, clean.seen[what] + 1)]
    assert clean.seen["write"] >= 1 and clean.seen["fsync"] == clean.seen["close"] == 1
    for what, n in points:
        target.write_bytes(ORIGINAL)
        with monkeypatch.context() as patch:
            inject(patch, Faults(what, n))
            result = invoke(*args)
        assert (result.exit_code, result.stderr) == (
            1, f"Error: cannot write {target}: {ENOSPC}\n"), (what, n)
        assert target.read_bytes() == ORIGINAL, (what, n)
        assert leftovers(tmp_path) == [], (what, n)
    # And with no fault, the same run still completes: the faults were the only difference.
    assert invoke(*args).exit_code == 0
    assert target.read_bytes() == complete


@pytest.mark.parametrize("name", ["out.csv", "out.parquet", "out.csv.gz", "out.npz"])
def test_an_error_on_close_does_not_replace_the_first_error(
        invoke: Invoke, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str) -> None:
    """The first write fails (disk full); closing the file then fails differently (EIO):
    the user hears about the first failure, once."""
    source = npy_input(tmp_path) if name.endswith(".npz") else csv_input(tmp_path)
    target = tmp_path / name
    target.write_bytes(ORIGINAL)

    class Failing(FaultyFile):
        def close(self) -> None:
            if not self._raw.closed:
                self._raw.close()
                raise OSError(errno.EIO, os.strerror(errno.EIO))

    class Os:
        def __getattr__(self, attribute: str) -> Any:
            return getattr(os, attribute)

        @staticmethod
        def fdopen(fd: int, mode: str = "r", *args: Any, **kwargs: Any) -> Any:
            return Failing(os.fdopen(fd, mode, *args, **kwargs), Faults("write", 1))

    monkeypatch.setattr(cumtool.output, "os", Os())
    options = ["--indices"] if name.endswith(".npz") else []
    result = invoke(op_for(options), str(source), "-o", str(target), *options)
    assert (result.exit_code, result.stderr) == (
        1, f"Error: cannot write {target}: {ENOSPC}\n")
    assert target.read_bytes() == ORIGINAL
    assert leftovers(tmp_path) == []


@pytest.mark.parametrize(("kind", "to", "options"), [
    pytest.param("csv", "csv", [], id="csv"),
    pytest.param("csv", "tsv", [], id="tsv", marks=pytest.mark.slow),
    pytest.param("csv", "parquet", [], id="parquet", marks=pytest.mark.slow),
    pytest.param("npy", "npy", [], id="npy"),
    pytest.param("npy", "npy", ["--indices"], id="npz", marks=pytest.mark.slow),
    pytest.param("csv", "csv", ["--reverse"], id="csv-reversed", marks=pytest.mark.slow),
    pytest.param("npy", "npy", ["--reverse"], id="npy-reversed", marks=pytest.mark.slow),
])
def test_dev_full_is_one_error_line(tmp_path: Path, kind: str, to: str,
                                    options: list[str]) -> None:
    """A real device that is always full: writing and closing both fail."""
    source = csv_input(tmp_path, 5) if kind == "csv" else npy_input(tmp_path, 5)
    done = subprocess.run([*CUMTOOL, op_for(options), str(source), "-o", "/dev/full",
                           "--to", to, *options], capture_output=True, timeout=TIMEOUT)
    assert (done.returncode, done.stderr) == (
        1, f"Error: cannot write /dev/full: {ENOSPC}\n".encode())


@pytest.fixture
def tiny_disk(tmp_path: Path) -> Iterator[Path]:
    """A real 64 KiB file system (tmpfs), to fill for real; needs the right to mount."""
    mount = tmp_path / "tiny"
    mount.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(mount)],
                          capture_output=True)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a small tmpfs to fill (not root?): {done.stderr!r}")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=True)


def fill(disk: Path, leave: int) -> None:
    """Fill `disk` but for `leave` bytes of room."""
    (disk / "filler").write_bytes(b"x" * max(shutil.disk_usage(disk).free - leave, 0))


@pytest.mark.slow
@pytest.mark.parametrize("room", [0, 4096, 32768], ids=["no-room", "a-page", "half"])
@pytest.mark.parametrize(("kind", "name", "options"), [
    pytest.param("csv", "out.csv", [], id="csv"),
    pytest.param("csv", "out.csv.gz", [], id="csv.gz"),
    pytest.param("csv", "out.parquet", [], id="parquet"),
    pytest.param("npy", "out.npy", [], id="npy"),
    pytest.param("npy", "out.npz", ["--indices"], id="npz"),
])
def test_a_real_full_disk_keeps_the_old_file(invoke: Invoke, tmp_path: Path,
                                             tiny_disk: Path, kind: str, name: str,
                                             options: list[str], room: int) -> None:
    source = (csv_input(tmp_path, 4000) if kind == "csv" else npy_input(tmp_path, 8000))
    target = tiny_disk / name
    target.write_bytes(ORIGINAL)
    fill(tiny_disk, room)
    result = invoke(op_for(options), str(source), "-o", str(target), "--batch-rows", "500",
                    *options)
    assert (result.exit_code, result.stderr) == (
        1, f"Error: cannot write {target}: {ENOSPC}\n")
    assert target.read_bytes() == ORIGINAL
    assert leftovers(tiny_disk) == []


@pytest.mark.slow
@pytest.mark.parametrize(("kind", "name", "options", "via"), [
    pytest.param("csv", "out.csv", ["--reverse"], "file", id="table-input-spool"),
    pytest.param("npy", "out.npy", ["--reverse"], "file", id="array-output-spool"),
    pytest.param("npy", "out.npy", ["--reverse"], "stdin", id="array-input-spool"),
    pytest.param("csv", "out.npy", [], "file", id="table-to-npy-spool"),
    pytest.param("npy", "out.npz", ["--indices"], "file", id="npz-indices-spool"),
])
def test_a_full_temporary_directory_is_one_error_line(tmp_path: Path, tiny_disk: Path,
                                                      kind: str, name: str,
                                                      options: list[str], via: str) -> None:
    source = csv_input(tmp_path, 4000) if kind == "csv" else npy_input(tmp_path, 8000)
    target = tmp_path / name
    target.write_bytes(ORIGINAL)
    with open(source, "rb") as stdin:
        done = subprocess.run(
            [*CUMTOOL, op_for(options), str(source) if via == "file" else "-", "-o",
             str(target), *options], stdin=stdin, capture_output=True, timeout=TIMEOUT,
            env={**os.environ, "TMPDIR": str(tiny_disk)})
    assert (done.returncode, done.stderr.decode()) == (
        1, f"Error: cannot write a temporary file in {tiny_disk}: {ENOSPC} (TMPDIR chooses "
           "where temporary files go)\n")
    assert target.read_bytes() == ORIGINAL
    assert leftovers(tmp_path) == []
    assert list(tiny_disk.iterdir()) == []


@pytest.mark.slow
@pytest.mark.parametrize("threads", ["1", "16"])
def test_a_full_temporary_directory_under_json_lines_is_one_error_line(
        tmp_path: Path, tiny_disk: Path, threads: str) -> None:
    # The spool's file, closed when its source goes, must not report the full disk again
    # ("Exception ignored in: <finalize object ...>" and a traceback, once).
    source = tmp_path / "in.jsonl"
    source.write_text("".join(f'{{"a": {k}, "b": {k / 2}}}\n' for k in range(60000)))
    done = subprocess.run([*CUMTOOL, "cumsum", str(source), "--threads", threads],
                          capture_output=True, timeout=TIMEOUT,
                          env={**os.environ, "TMPDIR": str(tiny_disk)})
    assert (done.returncode, done.stdout, done.stderr.decode()) == (
        1, b"", f"Error: {source}: cannot write its parsed records to a temporary file in "
                f"$TMPDIR: {ENOSPC}\n")


@pytest.mark.slow
def test_a_full_temporary_directory_under_json_lines_on_standard_input(
        tmp_path: Path, tiny_disk: Path) -> None:
    # Standard input is kept in $TMPDIR while its kind is told: where it cannot be, the
    # error is the disk's, not a hand-over to "the general CSV reader" of a JSON input.
    source = tmp_path / "in.jsonl"
    source.write_text("".join(f'{{"a": {k}, "b": {k / 2}}}\n' for k in range(20000)))
    with open(source, "rb") as stdin:
        done = subprocess.run([*CUMTOOL, "cumsum"], stdin=stdin, capture_output=True,
                              timeout=TIMEOUT, env={**os.environ, "TMPDIR": str(tiny_disk)})
    assert (done.returncode, done.stdout, done.stderr.decode()) == (
        1, b"", f"Error: cannot write a temporary file in {tiny_disk}: {ENOSPC} (TMPDIR "
                "chooses where temporary files go)\n")


def test_a_full_disk_in_the_results_spool_of_reverse(invoke: Invoke, tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """--reverse on a table spools twice: the input, then the results (to put them back in
    input order). The second spool's full disk is one line too."""
    source = csv_input(tmp_path, 50)
    target = tmp_path / "out.csv"
    target.write_bytes(ORIGINAL)
    real = pa.ipc.new_file
    opened: list[Any] = []

    class Full:
        def __init__(self, writer: Any) -> None:
            self._writer = writer

        def write_batch(self, batch: pa.RecordBatch) -> None:
            raise OSError(errno.ENOSPC, ENOSPC)

        def close(self) -> None:
            self._writer.close()

    def new_file(*args: Any, **kwargs: Any) -> Any:
        opened.append(args)
        writer = real(*args, **kwargs)
        return Full(writer) if len(opened) == 2 else writer

    monkeypatch.setattr(pa.ipc, "new_file", new_file)
    result = invoke("cumsum", str(source), "-o", str(target), "--reverse")
    assert len(opened) == 2
    assert (result.exit_code, result.stderr) == (
        1, f"Error: cannot write a temporary file in {tempfile.gettempdir()}: {ENOSPC} "
           "(TMPDIR chooses where temporary files go)\n")
    assert target.read_bytes() == ORIGINAL
    assert leftovers(tmp_path) == []


# 3. Signals -------------------------------------------------------------------------------------

@pytest.mark.slow
@pytest.mark.parametrize(("number", "status", "line"), [
    pytest.param(signal.SIGTERM, 143, "terminated", id="SIGTERM"),
    pytest.param(signal.SIGHUP, 129, "hung up", id="SIGHUP"),
    pytest.param(signal.SIGINT, 130, "interrupted", id="SIGINT"),
])
@pytest.mark.parametrize(("name", "options"), [
    pytest.param("out.csv", [], id="csv"),
    pytest.param("out.parquet", [], id="parquet"),
    pytest.param("out.csv", ["--reverse"], id="csv-reversed"),
])
def test_a_signal_ends_the_run_cleanly(tmp_path: Path, number: int, status: int, line: str,
                                       name: str, options: list[str]) -> None:
    """cron and systemd stop a job with SIGTERM, a closed terminal sends SIGHUP: while the
    run waits for more input (its temporary file open), either ends it like Ctrl-C."""
    target = tmp_path / name
    target.write_bytes(ORIGINAL)
    process = subprocess.Popen([*CUMTOOL, "cumsum", "-", "-o", name, *options],
                               cwd=tmp_path, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE)
    assert process.stdin is not None
    try:
        # More rows than the types are judged from: the run gets past judging them
        # (which waits for 10,000 rows or the end) and opens its output.
        process.stdin.write(b"a,b\n" + b"1,2\n" * 20_000)
        process.stdin.flush()
        deadline = time.monotonic() + TIMEOUT
        while not any(n.endswith(".cumtool-tmp") for n in os.listdir(tmp_path)):
            assert time.monotonic() < deadline and process.poll() is None
            time.sleep(0.05)
        time.sleep(0.3)  # let it scan and write what it has, then wait for more
        process.send_signal(number)
        _, stderr = process.communicate(timeout=TIMEOUT)
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()
    assert process.returncode == status
    assert stderr.decode() == f"Error: {line}\n"
    assert target.read_bytes() == ORIGINAL
    assert sorted(os.listdir(tmp_path)) == [name]


@pytest.mark.parametrize("number", [signal.SIGHUP, signal.SIGINT], ids=["nohup", "bg-SIGINT"])
def test_an_ignored_stop_signal_stays_ignored(tmp_path: Path, number: int) -> None:
    """`nohup cumtool ... &` (SIGHUP ignored) and a script's background job (SIGINT
    ignored) were stopped all the same: cumtool set its handler over the ignoring."""
    process = subprocess.Popen([*CUMTOOL, "cumsum", "-", "-o", "out.csv"], cwd=tmp_path,
                               stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE,
                               preexec_fn=lambda: signal.signal(number, signal.SIG_IGN))
    assert process.stdin is not None
    process.stdin.write(b"a\n1\n")
    process.stdin.flush()
    time.sleep(1.0)  # started, its handlers set, waiting for more input
    process.send_signal(number)
    _, stderr = process.communicate(b"2\n", timeout=TIMEOUT)
    assert (process.returncode, stderr) == (0, b"")
    assert (tmp_path / "out.csv").read_bytes() == b"a\n1\n3\n"


def test_a_stop_while_a_module_loads_is_raised_once_it_has_loaded(tmp_path: Path) -> None:
    """Raised inside the import machinery, the stop was lost in one of its callbacks (a
    traceback, "Exception ignored in"), or a native library's import turned it into a
    panic: it waits until the module has loaded."""
    (tmp_path / "slow_module.py").write_text(
        "import os, signal, time\nos.kill(os.getpid(), signal.SIGTERM)\n"
        "end = time.monotonic() + 0.2\nwhile time.monotonic() < end:\n    pass\n"
        "LOADED = True\n")
    script = (
        "import signal, sys, time\n"
        f"sys.path.insert(0, {str(tmp_path)!r})\n"
        "from cumtool import launch\nfrom cumtool.commit import handled_signals\n"
        "from cumtool.errors import Stopped\n"
        "for number in handled_signals():\n    signal.signal(number, launch._stop)\n"
        "try:\n    import slow_module\n"
        "    end = time.monotonic() + 5\n    while time.monotonic() < end:\n"
        "        time.sleep(0.01)\n    print('never stopped')\n"
        "except Stopped as stop:\n"
        "    loaded = getattr(sys.modules.get('slow_module'), 'LOADED', False)\n"
        "    print('loaded', loaded)\n    print('stopped', stop.exit_code)\n")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=TIMEOUT)
    # (status 0: no timer left to end it by SIGALRM once the interpreter exits)
    assert (done.returncode, done.stdout, done.stderr) == (0, "loaded True\nstopped 143\n",
                                                           "")


def test_an_input_that_is_standard_output_is_refused(tmp_path: Path) -> None:
    """`cumtool cumsum a.csv >> a.csv` read back the rows it appended, then failed on the
    header among them, the input doubled."""
    path = tmp_path / "a.csv"
    path.write_bytes(b"a\n1\n2\n")
    with open(path, "ab") as appended:
        done = subprocess.run([*CUMTOOL, "cumsum", str(path)], stdout=appended,
                              stderr=subprocess.PIPE, timeout=TIMEOUT)
    assert (done.returncode, done.stderr.decode()) == (
        2, f"Error: {path} is also standard output: the run would read back what it "
           f"writes; write to another file, or use -o {path} to replace it\n")
    assert path.read_bytes() == b"a\n1\n2\n"


def test_help_lists_every_exit_status(invoke: Invoke) -> None:
    text = " ".join(invoke("--help").output.split())
    assert ("Exit status: 0 success, 1 data or I/O error, 2 usage error, 75 --state held "
            "by another run (try again later, or --wait), 129 hung up (SIGHUP), 130 "
            "interrupted (Ctrl-C, SIGINT), 141 output pipe closed early (e.g. `| head`), "
            "143 terminated (SIGTERM).") in text


# 5. Safe output files ---------------------------------------------------------------------------

def test_a_symlink_swapped_in_for_the_temporary_file_is_not_followed(
        invoke: Invoke, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    source = csv_input(tmp_path, 10)
    target = tmp_path / "out.csv"
    target.write_bytes(ORIGINAL)
    victim = tmp_path / "victim"
    victim.write_bytes(b"secret\n")
    victim.chmod(0o600)

    def swap(fd: int) -> None:
        # Another program replaces the temporary file by a link to a file of its choice.
        (temporary,) = [p for p in tmp_path.iterdir() if p.name.endswith(".cumtool-tmp")]
        temporary.rename(tmp_path / "moved-away")
        temporary.symlink_to(victim)
        os.fsync(fd)

    class Os:
        def __getattr__(self, name: str) -> Any:
            return getattr(os, name)

        fsync = staticmethod(swap)

    monkeypatch.setattr(cumtool.output, "os", Os())
    result = invoke("cumsum", str(source), "-o", str(target))
    assert result.exit_code == 1
    assert re.fullmatch(rf"Error: cannot write {re.escape(str(target))}: its temporary file "
                        r"\.out\.csv\.\d+\.\w+\.cumtool-tmp was replaced by another program\n",
                        result.stderr), result.stderr
    assert not target.is_symlink()
    assert target.read_bytes() == ORIGINAL
    assert stat.S_IMODE(victim.stat().st_mode) == 0o600
    assert victim.read_bytes() == b"secret\n"
    assert leftovers(tmp_path) == []


def test_replacing_a_file_keeps_its_owner_group_and_set_id_mode(invoke: Invoke,
                                                                tmp_path: Path) -> None:
    if os.geteuid() != 0:
        pytest.skip("only root may give a file to another user")
    nobody = pwd.getpwnam("nobody")
    source = csv_input(tmp_path, 3)
    target = tmp_path / "out.csv"
    target.write_bytes(ORIGINAL)
    os.chown(target, nobody.pw_uid, nobody.pw_gid)
    target.chmod(0o2750)
    result = invoke("cumsum", str(source), "-o", str(target))
    assert result.exit_code == 0, result.stderr
    info = target.stat()
    assert (info.st_uid, info.st_gid) == (nobody.pw_uid, nobody.pw_gid)
    assert stat.S_IMODE(info.st_mode) == 0o2750
    assert target.read_bytes().startswith(b"a,b,c\n")


@pytest.mark.parametrize("name", ["n" * 251 + ".csv", "é" * 125 + ".csv"],
                         ids=["255-bytes", "254-bytes-utf8"])
def test_a_name_at_the_file_name_limit_is_written(invoke: Invoke, tmp_path: Path,
                                                  name: str) -> None:
    source = tmp_path / "in.csv"
    source.write_text("a\n1\n2\n")
    result = invoke("cumsum", str(source), "-o", str(tmp_path / name))
    assert result.exit_code == 0, result.stderr
    assert (tmp_path / name).read_text() == "a\n1\n3\n"
    assert leftovers(tmp_path) == []


@pytest.mark.parametrize(("make", "reason"), [
    pytest.param(lambda d: (os.symlink("loop2", d / "loop1.csv"),
                            os.symlink("loop1.csv", d / "loop2")), "Too many levels of "
                 "symbolic links", id="symlink-loop"),
    pytest.param(lambda d: (d / "plain").write_text("x"), "Not a directory",
                 id="path-through-a-file"),
])
def test_an_impossible_target_is_one_error_line(invoke: Invoke, tmp_path: Path,
                                                make: Callable[[Path], object],
                                                reason: str) -> None:
    source = tmp_path / "in.csv"
    source.write_text("a\n1\n")
    make(tmp_path)
    target = tmp_path / ("loop1.csv" if "symbolic" in reason else "plain/out.csv")
    result = invoke("cumsum", str(source), "-o", str(target))
    assert (result.exit_code, result.stderr) == (1, f"Error: cannot write {target}: "
                                                    f"{reason}\n")
    assert leftovers(tmp_path) == []


# As another user: root may write anything, so refusals need an ordinary user. -------------------

AS_NOBODY = """
import os, sys
# Everything cumtool may load, loaded while the interpreter's files (under /root) can
# still be read; then become nobody and run the command line.
import importlib, pkgutil, cumtool, cumtool.cli
for module in pkgutil.walk_packages(cumtool.__path__, "cumtool."):
    try:
        importlib.import_module(module.name)
    except ImportError:  # a module of an optional extra that is not installed
        pass
import ctypes.util, difflib, pyarrow.ipc, pyarrow.parquet, polars, rich.progress, zipfile
os.setgroups([])
os.setgid({gid})
os.setuid({uid})
sys.argv[0] = "cumtool"
cumtool.cli.main()
"""


@pytest.fixture
def nobody_dir() -> Iterator[Path]:
    """A directory owned by `nobody` that `nobody` can reach (tmp_path is root's only)."""
    if os.geteuid() != 0:
        pytest.skip("needs root, to switch to user nobody")
    try:
        nobody = pwd.getpwnam("nobody")
    except KeyError:
        pytest.skip("no user nobody to switch to")
    directory = Path(tempfile.mkdtemp(prefix="cumtool-nobody-", dir="/tmp"))
    try:
        directory.chmod(0o755)
        os.chown(directory, nobody.pw_uid, nobody.pw_gid)
        yield directory
    finally:
        shutil.rmtree(directory)


def run_as_nobody(directory: Path, *args: str) -> subprocess.CompletedProcess[bytes]:
    nobody = pwd.getpwnam("nobody")
    code = AS_NOBODY.format(uid=nobody.pw_uid, gid=nobody.pw_gid)
    return subprocess.run([sys.executable, "-c", code, *args], cwd=directory,
                          capture_output=True, timeout=TIMEOUT)


@pytest.mark.slow
@pytest.mark.parametrize("owner", ["nobody", "root"])
def test_a_file_the_user_cannot_write_is_not_replaced(nobody_dir: Path, owner: str) -> None:
    """rename() asks only for the directory's permission; a plain write (`>`) would be
    refused, and so is -o."""
    (nobody_dir / "in.csv").write_text("a\n1\n2\n")
    target = nobody_dir / "out.csv"
    target.write_bytes(ORIGINAL)
    if owner == "nobody":
        nobody = pwd.getpwnam("nobody")
        os.chown(target, nobody.pw_uid, nobody.pw_gid)
        target.chmod(0o444)
    else:
        target.chmod(0o644)
    before = target.stat()
    done = run_as_nobody(nobody_dir, "cumsum", "in.csv", "-o", "out.csv")
    assert (done.returncode, done.stderr) == (1, b"Error: cannot write out.csv: "
                                                 b"Permission denied\n")
    after = target.stat()
    assert target.read_bytes() == ORIGINAL
    assert (after.st_ino, after.st_mode, after.st_uid) == (before.st_ino, before.st_mode,
                                                          before.st_uid)
    assert leftovers(nobody_dir) == []


@pytest.mark.slow
def test_an_ordinary_user_keeps_mode_where_owner_cannot_be_kept(nobody_dir: Path) -> None:
    """A root-owned file that anyone may write: nobody may replace it; the mode is kept,
    the owner cannot be (only root may give files away), and that is not an error."""
    (nobody_dir / "in.csv").write_text("a\n1\n2\n")
    target = nobody_dir / "out.csv"
    target.write_bytes(ORIGINAL)
    target.chmod(0o666)
    done = run_as_nobody(nobody_dir, "cumsum", "in.csv", "-o", "out.csv")
    assert (done.returncode, done.stderr) == (0, b"")
    assert target.read_text() == "a\n1\n3\n"
    info = target.stat()
    assert stat.S_IMODE(info.st_mode) == 0o666
    assert info.st_uid == pwd.getpwnam("nobody").pw_uid
    assert leftovers(nobody_dir) == []


@pytest.mark.slow
def test_a_directory_that_cannot_be_listed_can_still_be_written(nobody_dir: Path) -> None:
    (nobody_dir / "in.csv").write_text("a\n1\n2\n")
    nobody_dir.chmod(0o333)
    done = run_as_nobody(nobody_dir, "cumsum", "in.csv", "-o", "out.csv")
    nobody_dir.chmod(0o755)
    assert (done.returncode, done.stderr) == (0, b"")
    assert (nobody_dir / "out.csv").read_text() == "a\n1\n3\n"
    assert leftovers(nobody_dir) == []


@pytest.mark.slow
def test_an_ordinary_users_new_file_gets_the_umask_default(nobody_dir: Path) -> None:
    (nobody_dir / "in.csv").write_text("a\n1\n")
    old = os.umask(0o022)
    try:
        done = run_as_nobody(nobody_dir, "cumsum", "in.csv", "-o", "new.csv")
    finally:
        os.umask(old)
    assert (done.returncode, done.stderr) == (0, b"")
    info = (nobody_dir / "new.csv").stat()
    assert stat.S_IMODE(info.st_mode) == 0o644
    assert info.st_uid == pwd.getpwnam("nobody").pw_uid


# 4. The progress bar ----------------------------------------------------------------------------

def rendered(progress: Progress, completed: int) -> str:
    progress.update(completed)
    progress.close()
    console = progress._console
    return str(console.file.getvalue())


def console() -> Any:
    from rich.console import Console

    return Console(file=io.StringIO(), force_terminal=True, width=160, color_system=None)


def test_compressed_input_is_measured_in_compressed_bytes(tmp_path: Path) -> None:
    path = tmp_path / "in.csv.gz"
    data = np.random.default_rng(5).integers(0, 1000, size=(100_000, 3))
    text = "a,b,c\n" + "".join(f"{x},{y},{z}\n" for x, y, z in data)
    path.write_bytes(gzip.compress(text.encode()))
    size = path.stat().st_size
    assert size * 2 < len(text)  # decompressed bytes would overrun the bar
    request = Request(op="cumsum", input=str(path))
    with contextlib.ExitStack() as stack:
        source, _kind = open_source(request, None, stack)
        progress = cumtool.runner.table_progress(request, source)
        assert (progress.unit, progress.total) == ("bytes", size)
        seen = [source.bytes_read for _batch in source.batches()]
    assert seen == sorted(seen)
    assert seen[-1] == size


def test_standard_input_gets_no_made_up_total(tmp_path: Path,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    read_end, write_end = os.pipe()
    os.write(write_end, b"a\n" + b"1\n" * 1000)
    os.close(write_end)
    with open(read_end) as stdin:
        monkeypatch.setattr(sys, "stdin", stdin)
        request = Request(op="cumsum", input="-")
        with contextlib.ExitStack() as stack:
            source, _kind = open_source(request, None, stack)
            progress = cumtool.runner.table_progress(request, source)
            for _batch in source.batches():
                pass
            assert (progress.unit, progress.total) == ("bytes", None)
            assert source.bytes_read == 2 + 2 * 1000
    bar = Progress(True, None, "bytes", "standard input", delay=0, console=console())
    text = rendered(bar, 2002)
    assert "standard input" in text and "2.0 kB" in text
    assert "rows" not in text and "/" not in text.replace("kB/s", "")


@pytest.mark.parametrize(("name", "shown"), [
    ("[final].csv", "[final].csv"),
    ("[/bold].csv", "[/bold].csv"),
    ("back\\", "back\\"),
    ("evil\x1b]0;title\x07.csv", "evil\\x1b]0;title\\x07.csv"),
    ("two\nlines.csv", "two\\nlines.csv"),
])
def test_file_names_in_the_bar_are_text_not_markup(name: str, shown: str) -> None:
    text = rendered(Progress(True, 100, "rows", name, delay=0, console=console()), 50)
    assert f"{shown} " in text
    assert "\x1b]0" not in text and "\x07" not in text
