"""Output files are all or nothing: a failed run leaves no partial file, an existing file
byte for byte as it was, and no temporary file behind; a finished one replaces the target
in one step, keeping its permissions, so `-o` may even name the input."""

from __future__ import annotations

import gzip
import io
import os
import stat
import threading
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from click.testing import Result
from helpers import CUMTOOL

import cumtool.output
from cumtool.engine import Request, run
from cumtool.errors import OutputError

Invoke = Callable[..., Result]
ORIGINAL = b"precious bytes that must survive a failed run\n"
OUTPUT_NAMES = ("out.csv", "out.tsv", "out.csv.gz", "out.parquet", "out.npy", "out.txt")


def leftovers(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.iterdir() if p.name.endswith(".cumtool-tmp"))


def overflow_at_the_last_row(directory: Path, rows: int = 60) -> Path:
    """A CSV whose running sum overflows int64 only at its last row."""
    path = directory / "late_overflow.csv"
    lines = ["n,x"] + [f"{i},{i * 0.5}" for i in range(rows - 1)] + [f"{2**63 - 1},1.0"]
    path.write_text("\n".join(lines) + "\n")
    return path


def bad_cell_late(directory: Path) -> Path:
    """A bad cell after the 10,000 rows types are inferred from."""
    path = directory / "late_bad_cell.csv"
    path.write_text("n\n" + "".join(f"{i}\n" for i in range(10_200)) + "twelve\n")
    return path


def extra_args(name: str) -> list[str]:
    return ["--to", "table"] if name.endswith(".txt") else []


# A failed run ----------------------------------------------------------------------------------


@pytest.mark.parametrize("name", OUTPUT_NAMES)
@pytest.mark.parametrize("existing", [False, True], ids=["new", "existing"])
def test_overflow_at_the_last_row_leaves_nothing_behind(invoke: Invoke, tmp_path, name,
                                                        existing):
    source = overflow_at_the_last_row(tmp_path)
    out = tmp_path / name
    if existing:
        out.write_bytes(ORIGINAL)
    result = invoke("cumsum", str(source), "-o", str(out), "--batch-rows", "7",
                    *extra_args(name))
    assert result.exit_code == 1
    assert "row 60" in result.stderr
    if existing:
        assert out.read_bytes() == ORIGINAL
    else:
        assert not out.exists()
    assert leftovers(tmp_path) == []


@pytest.mark.parametrize("name", ["out.csv", "out.parquet", "out.csv.gz"])
@pytest.mark.parametrize("existing", [False, True], ids=["new", "existing"])
def test_bad_cell_late_in_the_file_leaves_nothing_behind(invoke: Invoke, tmp_path, name,
                                                         existing):
    source = bad_cell_late(tmp_path)
    out = tmp_path / name
    if existing:
        out.write_bytes(ORIGINAL)
    result = invoke("cumsum", str(source), "-o", str(out), "--batch-rows", "100")
    assert result.exit_code == 1
    assert "row 10201" in result.stderr
    assert (out.read_bytes() == ORIGINAL) if existing else not out.exists()
    assert leftovers(tmp_path) == []


@pytest.mark.parametrize("name", ["out.npy", "out.csv", "out.txt"])
def test_array_overflow_late_leaves_the_existing_file(invoke: Invoke, tmp_path, name):
    array = np.ones((50, 3), dtype=np.int64)
    array[-1, 1] = 2**63 - 1
    source = tmp_path / "a.npy"
    np.save(source, array)
    out = tmp_path / name
    out.write_bytes(ORIGINAL)
    result = invoke("cumsum", str(source), "-o", str(out), "--batch-rows", "4",
                    *extra_args(name))
    assert result.exit_code == 1
    assert "(49, 1)" in result.stderr
    assert out.read_bytes() == ORIGINAL
    assert leftovers(tmp_path) == []


def test_failure_reading_standard_input_leaves_the_existing_file(invoke: Invoke, tmp_path):
    data = overflow_at_the_last_row(tmp_path).read_bytes()
    out = tmp_path / "out.parquet"
    out.write_bytes(ORIGINAL)
    result = invoke("cumsum", "-o", str(out), "--batch-rows", "5", input=data)
    assert result.exit_code == 1
    assert out.read_bytes() == ORIGINAL
    assert leftovers(tmp_path) == []


@pytest.mark.slow
def test_indices_npz_failure_leaves_the_existing_file(tmp_path):
    """.npy on standard input cut short: found only when the last rows are read, after the
    .npz of values and indices has been half written. In a real process, so that anything
    printed at exit (a zip left open complains with a traceback) is seen."""
    import subprocess

    buffer = io.BytesIO()
    np.save(buffer, np.arange(40, dtype=np.int16).reshape(20, 2))
    data = buffer.getvalue()[:-8]
    out = tmp_path / "out.npz"
    out.write_bytes(ORIGINAL)
    done = subprocess.run([CUMTOOL, "cummax", "--indices", "-o", str(out), "--batch-rows",
                           "2"], input=data, capture_output=True, timeout=60)
    assert done.returncode == 1
    stderr = done.stderr.decode()
    assert stderr.startswith("Error: standard input: ")
    assert "truncated" in stderr
    assert stderr.count("\n") == 1, stderr
    assert out.read_bytes() == ORIGINAL
    assert leftovers(tmp_path) == []


def test_interrupted_run_leaves_nothing_behind(invoke: Invoke, tmp_path, monkeypatch):
    """Ctrl-C in the middle of a run: status 130, and the target untouched."""
    import cumtool.tables

    source = overflow_at_the_last_row(tmp_path, rows=40)
    source.write_text(source.read_text().replace(str(2**63 - 1), "1"))
    out = tmp_path / "out.csv"
    out.write_bytes(ORIGINAL)
    real_apply = cumtool.tables.TablePlan.apply
    calls = []

    def interrupt_on_third_batch(self, batch):
        calls.append(1)
        if len(calls) == 3:
            raise KeyboardInterrupt
        return real_apply(self, batch)

    monkeypatch.setattr(cumtool.tables.TablePlan, "apply", interrupt_on_third_batch)
    result = invoke("cumsum", str(source), "-o", str(out), "--batch-rows", "5")
    assert result.exit_code == 130
    assert result.stderr == "Error: interrupted\n"
    assert out.read_bytes() == ORIGINAL
    assert leftovers(tmp_path) == []


def test_success_leaves_no_temporary_file(invoke: Invoke, tmp_path):
    source = tmp_path / "in.csv"
    source.write_text("a\n1\n2\n")
    for name in OUTPUT_NAMES:
        result = invoke("cumsum", str(source), "-o", str(tmp_path / name), *extra_args(name))
        assert result.exit_code == 0, (name, result.stderr)
    assert leftovers(tmp_path) == []
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(["in.csv", *OUTPUT_NAMES])


# Where the output cannot go -----------------------------------------------------------------


def test_missing_output_directory(invoke: Invoke, tmp_path):
    source = tmp_path / "in.csv"
    source.write_text("a\n1\n")
    missing = tmp_path / "no" / "such"
    result = invoke("cumsum", str(source), "-o", str(missing / "out.csv"))
    assert result.exit_code == 1
    assert result.stderr.startswith("Error: ")
    assert str(missing) in result.stderr
    assert "does not exist" in result.stderr
    assert not missing.exists()


def test_output_is_a_directory(invoke: Invoke, tmp_path):
    source = tmp_path / "in.csv"
    source.write_text("a\n1\n")
    target = tmp_path / "dir.csv"
    target.mkdir()
    result = invoke("cumsum", str(source), "-o", str(target))
    assert result.exit_code == 1
    assert str(target) in result.stderr
    assert target.is_dir()


def _refuse(*_args, **_kwargs):
    raise PermissionError(13, "Permission denied")


@pytest.mark.parametrize("where", ["mkstemp", "replace"])
def test_permission_denied_through_the_python_api(tmp_path, monkeypatch, where):
    """Root ignores file modes, so the refusal of a read-only directory is simulated where
    the writer meets it: creating the temporary file, or renaming it over the target."""
    source = tmp_path / "in.csv"
    source.write_text("a\n1\n2\n")
    out = tmp_path / "out.csv"
    out.write_bytes(ORIGINAL)
    if where == "mkstemp":
        monkeypatch.setattr(cumtool.output.tempfile, "mkstemp", _refuse)
    else:
        monkeypatch.setattr(cumtool.output.os, "replace", _refuse)
    with pytest.raises(OutputError) as caught:
        run(Request(op="cumsum", input=str(source), output=str(out)))
    assert str(out) in str(caught.value)
    assert "Permission denied" in str(caught.value)
    assert caught.value.exit_code == 1
    assert out.read_bytes() == ORIGINAL
    assert leftovers(tmp_path) == []


@pytest.mark.parametrize("where", ["mkstemp", "replace"])
def test_permission_denied_through_the_cli(invoke: Invoke, tmp_path, monkeypatch, where):
    source = tmp_path / "in.csv"
    source.write_text("a\n1\n2\n")
    out = tmp_path / "out.parquet"
    if where == "mkstemp":
        monkeypatch.setattr(cumtool.output.tempfile, "mkstemp", _refuse)
    else:
        monkeypatch.setattr(cumtool.output.os, "replace", _refuse)
    result = invoke("cumsum", str(source), "-o", str(out))
    assert result.exit_code == 1
    assert result.stderr == f"Error: cannot write {out}: Permission denied\n"
    assert not out.exists()
    assert leftovers(tmp_path) == []


def test_read_only_directory(invoke: Invoke, tmp_path, monkeypatch):
    """A real read-only directory where permissions apply; as root (who may write anyway)
    the same refusal is simulated at the temporary file."""
    source = tmp_path / "in.csv"
    source.write_text("a\n1\n")
    locked = tmp_path / "locked"
    locked.mkdir()
    (locked / "out.csv").write_bytes(ORIGINAL)
    locked.chmod(0o555)
    try:
        if os.access(locked, os.W_OK):
            monkeypatch.setattr(cumtool.output.tempfile, "mkstemp", _refuse)
        result = invoke("cumsum", str(source), "-o", str(locked / "out.csv"))
    finally:
        locked.chmod(0o755)
    assert result.exit_code == 1
    assert result.stderr.startswith(f"Error: cannot write {locked / 'out.csv'}")
    assert (locked / "out.csv").read_bytes() == ORIGINAL
    assert leftovers(locked) == []


@pytest.mark.slow
def test_full_disk_on_standard_output_is_an_error(tmp_path):
    """/dev/full: every write fails with ENOSPC; the message names standard output."""
    import subprocess

    source = tmp_path / "in.csv"
    source.write_text("a\n" + "1\n" * 1000)
    with open("/dev/full", "wb") as full:
        done = subprocess.run([CUMTOOL, "cumsum", str(source)], stdout=full,
                              stderr=subprocess.PIPE, text=True, timeout=60)
    assert done.returncode == 1
    assert done.stderr == "Error: cannot write standard output: No space left on device\n"


# A writer's own failure: one line that names the output -------------------------------------

_NOT_LATIN_1 = ("'\u20ac' (U+20AC) cannot be written in latin-1, the output's encoding; "
                "choose one that has it (--out-encoding utf-8)")


@pytest.mark.parametrize("to", ["file", "folder", "standard output"])
def test_a_writer_failure_is_one_line_naming_the_output(invoke: Invoke, tmp_path, to):
    """--na-rep € in latin-1 cannot be written: the CSV writer's UnicodeEncodeError was a
    traceback; now one line naming the output (each file of -o DIR/ as it would be
    named), exit 1, and nothing left behind."""
    source = tmp_path / "e.csv"
    source.write_text("a,b\n1,\n2,3\n")
    out = tmp_path / "out.csv"
    out.write_bytes(ORIGINAL)
    where = {"file": ["-o", str(out)], "folder": ["-o", f"{tmp_path / 'drop'}/"],
             "standard output": []}[to]
    result = invoke("cumsum", str(source), "--encoding", "latin-1", "--na-rep", "€", *where)
    named = {"file": str(out), "folder": str(tmp_path / "drop" / "e.csv")}.get(to, to)
    assert result.exit_code == 1
    assert result.stderr == f"Error: cannot write {named}: {_NOT_LATIN_1}\n"
    assert out.read_bytes() == ORIGINAL
    assert sorted(p.name for p in tmp_path.iterdir()) == ["e.csv", "out.csv"]


class _Failing:
    """A writer that fails as a library's bug would: a ValueError of two lines (made
    with `early`: when it is made)."""

    early = False

    def __init__(self, *_args: object) -> None:
        if self.early:
            raise ValueError("values must be\n  C-contiguous")

    def write(self, *_items: object) -> None:
        raise ValueError("values must be\n  C-contiguous")

    def close(self) -> None:
        pass

    def abort(self) -> None:
        pass


@pytest.mark.parametrize("early", [False, True], ids=["writing", "made"])
@pytest.mark.parametrize("fmt", ["csv", "tsv", "parquet", "npy", "jsonl", "arrow", "arrows"])
def test_any_writers_failure_is_one_line(invoke: Invoke, tmp_path, monkeypatch, fmt, early):
    """Whatever a format's writer raises, when made or when writing, is one line with its
    type and text: a bug in a writer is reported, not hidden, and never a traceback."""
    import dataclasses

    from cumtool.formats import registry

    monkeypatch.setattr(_Failing, "early", early)
    declared = registry.BY_NAME[fmt]
    hook = "array_writer" if declared.array_writer is not None else "writer"
    monkeypatch.setitem(registry.BY_NAME, fmt, dataclasses.replace(declared, **{hook: _Failing}))
    source = tmp_path / ("in.npy" if fmt == "npy" else "in.parquet")
    if fmt == "npy":
        np.save(source, np.arange(4))
    else:
        pq.write_table(pa.table({"x": [1, 2, 3]}), source)
    out = tmp_path / f"out.{fmt}"
    result = invoke("cumsum", str(source), "-o", str(out))
    assert result.exit_code == 1
    assert result.stderr == f"Error: cannot write {out}: ValueError: values must be C-contiguous\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == [source.name]


# A finished run --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "read"),
    [
        pytest.param("data.csv", lambda p: p.read_text(), id="csv"),
        pytest.param("data.csv.gz", lambda p: gzip.decompress(p.read_bytes()).decode(),
                     id="csv.gz"),
        pytest.param("data.parquet", lambda p: pq.read_table(p).to_pydict(), id="parquet"),
    ],
)
def test_output_may_name_the_input_itself(invoke: Invoke, tmp_path, name, read):
    source = tmp_path / "data.csv"
    source.write_text("a,b\n1,10\n2,20\n3,30\n")
    path = tmp_path / name
    if name != "data.csv":
        first = invoke("cumprod", str(source), "-o", str(path), "-c", "b", "--to",
                       "parquet" if name.endswith("parquet") else "csv")
        assert first.exit_code == 0, first.stderr
        assert read(path) != source.read_text()
    before = read(path)
    result = invoke("cumsum", str(path), "-o", str(path), "--batch-rows", "1")
    assert result.exit_code == 0, result.stderr
    after = read(path)
    if name == "data.csv":
        assert after == "a,b\n1,10\n3,30\n6,60\n"
    elif name == "data.csv.gz":
        assert after == "a,b\n1,10\n3,210\n6,6210\n"
    else:
        assert before == {"a": [1, 2, 3], "b": [10, 200, 6000]}
        assert after == {"a": [1, 3, 6], "b": [10, 210, 6210]}
    assert leftovers(tmp_path) == []


def test_npy_output_may_name_the_input_itself(invoke: Invoke, tmp_path):
    path = tmp_path / "a.npy"
    array = np.arange(12, dtype=np.int32).reshape(4, 3)
    np.save(path, array)
    result = invoke("cumsum", str(path), "-o", str(path), "--batch-rows", "1")
    assert result.exit_code == 0, result.stderr
    got = np.load(path)
    assert got.dtype == np.int64
    np.testing.assert_array_equal(got, np.cumsum(array, axis=0))
    assert leftovers(tmp_path) == []


@pytest.mark.parametrize("mode", [0o600, 0o640, 0o755, 0o444])
def test_an_existing_files_permissions_are_kept(invoke: Invoke, tmp_path, mode):
    if not mode & 0o200 and os.geteuid() != 0:
        pytest.skip("only root may replace a read-only file (refusal: test_endings.py)")
    source = tmp_path / "in.csv"
    source.write_text("a\n1\n2\n")
    out = tmp_path / "out.csv"
    out.write_bytes(ORIGINAL)
    out.chmod(mode)
    result = invoke("cumsum", str(source), "-o", str(out))
    assert result.exit_code == 0, result.stderr
    assert stat.S_IMODE(out.stat().st_mode) == mode
    assert out.read_text() == "a\n1\n3\n"


def test_a_new_file_gets_the_umask_default(invoke: Invoke, tmp_path):
    source = tmp_path / "in.csv"
    source.write_text("a\n1\n")
    old = os.umask(0o027)
    try:
        result = invoke("cumsum", str(source), "-o", str(tmp_path / "new.csv"))
    finally:
        os.umask(old)
    assert result.exit_code == 0, result.stderr
    # Not mkstemp's private 0o600: what any other program would create.
    assert stat.S_IMODE((tmp_path / "new.csv").stat().st_mode) == 0o640


def test_output_through_a_symlink_updates_the_file_and_keeps_the_link(invoke: Invoke,
                                                                      tmp_path):
    source = tmp_path / "in.csv"
    source.write_text("a\n1\n2\n")
    real = tmp_path / "real.csv"
    real.write_bytes(ORIGINAL)
    link = tmp_path / "link.csv"
    link.symlink_to(real)
    result = invoke("cumsum", str(source), "-o", str(link))
    assert result.exit_code == 0, result.stderr
    assert link.is_symlink()
    assert real.read_text() == "a\n1\n3\n"


def test_output_to_a_fifo_writes_into_it(invoke: Invoke, tmp_path):
    """A FIFO (like /dev/stdout) is written in place, never replaced by a regular file."""
    source = tmp_path / "in.csv"
    source.write_text("a\n1\n2\n3\n")
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    received = io.BytesIO()

    def drain() -> None:
        with open(fifo, "rb") as reader:
            received.write(reader.read())

    reader = threading.Thread(target=drain)
    reader.start()
    result = invoke("cumsum", str(source), "-o", str(fifo), "--to", "csv")
    reader.join(timeout=30)
    assert result.exit_code == 0, result.stderr
    assert received.getvalue() == b"a\n1\n3\n6\n"
    assert stat.S_ISFIFO(fifo.stat().st_mode)
    assert leftovers(tmp_path) == []


@pytest.mark.parametrize("name, stream", [("/dev/stdout", "stdout"), ("/dev/fd/1", "stdout"),
                                          ("/proc/self/fd/1", "stdout"),
                                          ("/dev/stderr", "stderr"), ("link", "stdout")])
def test_an_output_naming_a_descriptor_writes_where_it_stands(tmp_path, name, stream):
    """-o /dev/stdout where standard output is a file opened to append (`>> log`): the
    path resolves to the file, and the temporary file renamed over it took its place,
    losing the log's earlier lines and leaving the shell writing to a file unlinked. The
    descriptor is written where it stands, as a redirect writes it."""
    import subprocess

    source = tmp_path / "in.csv"
    source.write_text("a\n1\n2\n")
    (tmp_path / "link").symlink_to("/dev/stdout")
    log = tmp_path / "log.txt"
    log.write_text("earlier line\n")
    with open(log, "ab") as appended:
        done = subprocess.run([CUMTOOL, "cumsum", str(source), "-o", name, "--to", "csv"],
                              cwd=tmp_path, stdin=subprocess.DEVNULL,
                              stdout=appended if stream == "stdout" else subprocess.PIPE,
                              stderr=appended if stream == "stderr" else subprocess.PIPE)
        appended.write(b"later line\n")
    assert done.returncode == 0
    assert log.read_text() == "earlier line\na\n1\n3\nlater line\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.csv", "link", "log.txt"]


def test_an_output_naming_a_descriptor_not_open_is_one_line(tmp_path):
    import subprocess

    source = tmp_path / "in.csv"
    source.write_text("a\n1\n")
    done = subprocess.run([CUMTOOL, "cumsum", str(source), "-o", "/dev/fd/9", "--to", "csv"],
                          capture_output=True, text=True, stdin=subprocess.DEVNULL)
    assert (done.returncode, done.stdout) == (1, "")
    assert done.stderr == "Error: cannot write /dev/fd/9: Bad file descriptor\n"


class _OutOfMemory(_Failing):
    def write(self, *_items: object) -> None:
        raise MemoryError


@pytest.mark.parametrize("fmt", ["csv", "parquet"])
def test_memory_running_out_in_a_writer_is_not_blamed_on_the_output(invoke: Invoke,
                                                                    tmp_path, monkeypatch,
                                                                    fmt):
    """A MemoryError met while writing (numpy's, in the scan behind the writer) was
    'cannot write out.csv: MemoryError'; elsewhere it was an internal error. It is the
    run's memory, said so in one line."""
    import dataclasses

    from cumtool.formats import registry

    declared = registry.BY_NAME[fmt]
    monkeypatch.setitem(registry.BY_NAME, fmt, dataclasses.replace(declared,
                                                                   writer=_OutOfMemory))
    source = tmp_path / "in.parquet"
    pq.write_table(pa.table({"x": [1, 2, 3]}), source)
    result = invoke("cumsum", str(source), "-o", str(tmp_path / f"out.{fmt}"))
    assert result.exit_code == 1
    assert result.stderr.startswith("Error: out of memory: the system gave no more; ")
    assert sorted(p.name for p in tmp_path.iterdir()) == [source.name]


_EIGHT_CORES = ("import sys\nimport cumtool.native as n\nn.USABLE = n.CORES = 8\n"
                "from cumtool.launch import main\nsys.argv = ['cumtool'] + sys.argv[1:]\n"
                "main()\n")


@pytest.mark.parametrize("name", ["/dev/stdout", "/dev/fd/3"])
@pytest.mark.parametrize("kind", ["csv", "jsonl"])
def test_a_named_descriptor_is_not_a_file_to_drop_and_write_again(tmp_path, name, kind):
    """A column that widens late (an integer column's float after the judged rows) is
    scanned again where the output is a file that can be dropped. -o /dev/stdout over a
    file was taken for one: its first, partial output stayed and the second followed (two
    headers). It is written as standard output is: for CSV the rows before the fault and
    its error; for JSON Lines (read whole first, here on 8 cores: the run that started
    with the first block's types is dropped and its output cut back) the one output."""
    import subprocess
    import sys

    source = tmp_path / f"late.{kind}"
    if kind == "csv":
        source.write_text("a\n" + "".join(f"{i}\n" for i in range(10_001)) + "1.5\n")
    else:
        source.write_text("".join(f'{{"a": {i % 7}}}\n' for i in range(30_000))
                          + '{"a": 1.5}\n')
    target = tmp_path / "out.csv"

    def run(output: list[str], descriptor: int) -> subprocess.CompletedProcess:
        with open(target, "wb") as out:
            return subprocess.run(
                [sys.executable, "-c", _EIGHT_CORES, "cumsum", str(source), "--to", "csv",
                 "-q", *output], stdin=subprocess.DEVNULL, stderr=subprocess.PIPE,
                stdout=out if descriptor == 1 else subprocess.DEVNULL,
                pass_fds=(3,) if descriptor == 3 else (),
                preexec_fn=(lambda: os.dup2(out.fileno(), 3)) if descriptor == 3 else None)

    plain = run([], 1)
    wanted = target.read_bytes()
    done = run(["-o", name], 1 if name == "/dev/stdout" else 3)
    assert (done.returncode, done.stderr) == (plain.returncode, plain.stderr)
    assert target.read_bytes() == wanted
    assert wanted.count(b"a\n") == 1


def test_an_input_that_a_named_descriptor_appends_to_is_refused(tmp_path):
    """-o /dev/stdout >> in.csv read back what it wrote (a header among the numbers, or
    a file that grows for ever), where `>> in.csv` alone is refused."""
    import subprocess

    source = tmp_path / "in.csv"
    source.write_text("a\n1\n2\n")
    with open(source, "ab") as appended:
        done = subprocess.run([CUMTOOL, "cumsum", str(source), "--to", "csv",
                               "-o", "/dev/stdout"], stdout=appended,
                              stderr=subprocess.PIPE, text=True, stdin=subprocess.DEVNULL)
    assert done.returncode == 2
    assert done.stderr == (f"Error: {source} is also -o /dev/stdout: the run would read back "
                           f"what it writes; write to another file, or use -o {source} to "
                           "replace it\n")
    assert source.read_text() == "a\n1\n2\n"
