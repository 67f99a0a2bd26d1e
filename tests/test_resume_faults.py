"""Faults at exact points of a --state run, then the retry and the next days: the outputs
and the state are compared byte for byte with those of clean runs (issue: exactly-once
runs). Faults come from kill -9 and stop signals at each commit step (the test-only
CUMTOOL_TEST_FAULT hook of cumtool.commit), from strace's fault injection where strace is
installed, from two overlapping runs, from signals while the modules load, and from a
full or read-only tmpfs where one can be mounted."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

DAYS = {
    "day-1.csv": "meter,kwh\nnorth,12\nsouth,7\nnorth,1\n",
    "day-2.csv": "meter,kwh\nsouth,9\nnorth,5\nwest,4\n",
    "day-3.csv": "meter,kwh\nnorth,8\neast,2\nsouth,1\n",
}
STEPS = ["record", "rename", "renamed", "committed", "exit"]


def cumtool(cwd: Path, *args: str, fault: str | None = None, stdin: bytes | None = None,
            timeout: float = 60) -> subprocess.CompletedProcess[bytes]:
    env = {k: v for k, v in os.environ.items() if k != "CUMTOOL_TEST_FAULT"}
    if fault is not None:
        env["CUMTOOL_TEST_FAULT"] = fault
    return subprocess.run([sys.executable, "-m", "cumtool", *args], cwd=cwd, env=env,
                          input=stdin, capture_output=True, timeout=timeout, check=False)


def day(cwd: Path, name: str, fault: str | None = None) -> subprocess.CompletedProcess[bytes]:
    return cumtool(cwd, "cumsum", name, "--by", "meter", "--state", "s.json", "-o",
                   f"out-{name}", fault=fault)


def files(cwd: Path) -> dict[str, bytes]:
    """Every file's bytes; the lock file's are the pid of its last holder."""
    return {p.name: b"pid" if p.name.endswith(".lock") else p.read_bytes()
            for p in sorted(cwd.iterdir()) if p.is_file()}


@pytest.fixture
def clean(tmp_path: Path) -> dict[str, bytes]:
    """The files that three clean days leave, made in the same folder the faulty run
    will use (the state records absolute paths)."""
    work = tmp_path / "work"
    work.mkdir()
    for name, text in DAYS.items():
        (work / name).write_text(text)
    for name in DAYS:
        assert day(work, name).returncode == 0
    result = files(work)
    for name in list(result):
        if name not in DAYS:
            (work / name).unlink()
    return result


@pytest.mark.parametrize("step", STEPS)
@pytest.mark.parametrize("stop", ["SIGKILL", "SIGTERM"])
def test_a_fault_at_each_commit_step_then_the_retry_gives_one_runs_bytes(
        tmp_path: Path, clean: dict[str, bytes], step: str, stop: str) -> None:
    work = tmp_path / "work"
    assert day(work, "day-1.csv").returncode == 0
    faulty = day(work, "day-2.csv", fault=f"{step}:{stop}")
    if stop == "SIGKILL":
        assert faulty.returncode == -signal.SIGKILL
    else:  # the files are being (or have been) put in place: the run's work is done
        assert (faulty.returncode, faulty.stderr) == (0, b"")
    retry = day(work, "day-2.csv")
    assert (retry.returncode, retry.stderr) == (0, b"")
    assert day(work, "day-3.csv").returncode == 0
    assert files(work) == clean


def test_a_kill_at_exit_found_by_strace_then_the_retry(tmp_path: Path,
                                                       clean: dict[str, bytes]) -> None:
    """The issue's own reproduction: the kernel kills the process as it exits, after
    the state was saved; the retry must not add the day again."""
    if shutil.which("strace") is None:
        pytest.skip("strace is not installed: the CUMTOOL_TEST_FAULT cases cover this")
    work = tmp_path / "work"
    assert day(work, "day-1.csv").returncode == 0
    killed = subprocess.run(
        ["strace", "-f", "-qq", "-o", "/dev/null", "-e", "trace=exit_group", "-e",
         "inject=exit_group:signal=KILL", sys.executable, "-m", "cumtool", "cumsum",
         "day-2.csv", "--by", "meter", "--state", "s.json", "-o", "out-day-2.csv"],
        cwd=work, capture_output=True, timeout=60, check=False)
    if b"PTRACE" in killed.stderr or b"Operation not permitted" in killed.stderr:
        pytest.skip(f"strace cannot trace here: {killed.stderr[:200]!r}")
    assert killed.returncode == -signal.SIGKILL
    assert day(work, "day-2.csv").returncode == 0
    assert day(work, "day-3.csv").returncode == 0
    assert files(work) == clean


def test_per_input_outputs_killed_between_renames_are_completed(tmp_path: Path) -> None:
    for name, text in DAYS.items():
        (tmp_path / name).write_text(text)
    args = ["cumsum", *DAYS, "--by", "meter", "-o", "out/"]
    assert cumtool(tmp_path, *args).returncode == 0
    expected = files(tmp_path / "out")
    for name in DAYS:  # yesterday's outputs, to be replaced
        (tmp_path / "out" / name).write_text("old\n")
    killed = cumtool(tmp_path, *args, fault="rename:SIGKILL")
    assert killed.returncode == -signal.SIGKILL
    half = files(tmp_path / "out")
    assert sorted(half) != sorted(expected) or half != expected  # some are new, some old
    assert [p.name for p in (tmp_path / "out").iterdir() if p.name.startswith(".")]
    # The next run on the folder completes the commit first, then does its own work.
    assert cumtool(tmp_path, "cumsum", "day-1.csv", "-o", "other/").returncode == 0
    assert cumtool(tmp_path, *args).returncode == 0
    assert files(tmp_path / "out") == expected
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == sorted(DAYS)


def test_the_record_left_by_a_kill_is_completed_by_the_next_run(tmp_path: Path,
                                                               clean: dict[str, bytes]
                                                               ) -> None:
    """kill -9 after the output was renamed and before the state was: the next run
    (here a retry) first puts the killed run's state in place."""
    work = tmp_path / "work"
    assert day(work, "day-1.csv").returncode == 0
    assert day(work, "day-2.csv", fault="rename:SIGKILL").returncode == -signal.SIGKILL
    assert (work / "s.json.commit").exists()
    assert day(work, "day-2.csv").returncode == 0
    assert not (work / "s.json.commit").exists()
    assert day(work, "day-3.csv").returncode == 0
    assert files(work) == clean


@contextlib.contextmanager
def fifo(path: Path) -> Iterator[Path]:
    os.mkfifo(path)
    try:
        yield path
    finally:
        path.unlink()


def test_two_overlapping_runs_never_both_start_from_one_state(tmp_path: Path) -> None:
    """Yesterday's slow run still holds the state when today's starts: today's fails at
    once with status 75 naming yesterday's pid, and its retry counts its rows once."""
    (tmp_path / "today.csv").write_text("kwh\n10\n")
    with fifo(tmp_path / "slow.csv") as slow:
        first = subprocess.Popen([sys.executable, "-m", "cumtool", "cumsum", slow.name,
                                  "--state", "s.json", "-o", "yesterday.csv"],
                                 cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        try:
            deadline = time.monotonic() + 30
            while not (tmp_path / "s.json.lock").exists() or not (
                    tmp_path / "s.json.lock").read_text().strip():
                assert time.monotonic() < deadline, "the first run never took the lock"
                time.sleep(0.02)
            second = cumtool(tmp_path, "cumsum", "today.csv", "--state", "s.json", "-o",
                             "today-out.csv")
            assert second.returncode == 75
            assert second.stderr == (
                f"Error: --state s.json is in use by another cumtool run (pid {first.pid}); "
                "try again later, or give --wait SECONDS to wait for it\n").encode()
            assert not (tmp_path / "today-out.csv").exists()
            waiting = subprocess.Popen([sys.executable, "-m", "cumtool", "cumsum",
                                        "today.csv", "--state", "s.json", "--wait", "30",
                                        "-o", "today-out.csv"], cwd=tmp_path,
                                       stdout=subprocess.PIPE, stderr=subprocess.PIPE)
            with open(slow, "w") as writer:
                writer.write("kwh\n1\n2\n")
        finally:
            _, err = first.communicate(timeout=60)
        assert (first.returncode, err) == (0, b"")
        _, err = waiting.communicate(timeout=60)
        assert (waiting.returncode, err) == (0, b"")
    assert (tmp_path / "yesterday.csv").read_text() == "kwh\n1\n3\n"
    assert (tmp_path / "today-out.csv").read_text() == "kwh\n13\n"


@pytest.mark.parametrize("stop, status, word", [
    (signal.SIGTERM, 143, "terminated"), (signal.SIGHUP, 129, "hung up"),
    (signal.SIGINT, 130, "interrupted"),
], ids=["SIGTERM", "SIGHUP", "SIGINT"])
@pytest.mark.parametrize("delay", [0.0, 0.01, 0.03, 0.1, 0.3])
def test_a_stop_signal_while_the_modules_load_is_one_line(tmp_path: Path, stop: int,
                                                          status: int, word: str,
                                                          delay: float) -> None:
    """From the first instruction of cumtool's own code on, a stop signal gives its one
    line and status, whether the modules are still loading or the run is waiting."""
    with fifo(tmp_path / "never.csv") as never:
        process = subprocess.Popen([sys.executable, "-m", "cumtool", "cumsum", never.name],
                                   cwd=tmp_path, stdout=subprocess.PIPE,
                                   stderr=subprocess.PIPE)
        # cumtool's first instruction sets the three handlers, SIGHUP's last (Python's own
        # start sets one for SIGINT).
        _wait_for_a_handler(process.pid, signal.SIGHUP)
        time.sleep(delay)
        process.send_signal(stop)
        # The run may be blocked opening the FIFO: a writer that closes at once frees it.
        opener = threading.Thread(target=lambda: _touch_fifo(never, process), daemon=True)
        opener.start()
        out, err = process.communicate(timeout=60)
    assert (process.returncode, err, out) == (status, f"Error: {word}\n".encode(), b"")


def _wait_for_a_handler(pid: int, number: int) -> None:
    """Until the process catches `number` (Linux: SigCgt in /proc/PID/status). Before
    that, Python itself is starting (site, encodings): no program's code runs yet."""
    status = Path(f"/proc/{pid}/status")
    if not status.exists():
        pytest.skip("no /proc/PID/status here to see when cumtool's code starts")
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        with contextlib.suppress(OSError):
            for line in status.read_text().splitlines():
                if line.startswith("SigCgt:") and int(line.split()[1], 16) >> (number - 1) & 1:
                    return
        time.sleep(0.001)
    raise AssertionError("cumtool never set a handler for the signal")


def _touch_fifo(path: Path, process: subprocess.Popen[bytes]) -> None:
    while process.poll() is None:
        with contextlib.suppress(OSError):
            fd = os.open(path, os.O_WRONLY | os.O_NONBLOCK)
            os.close(fd)
        time.sleep(0.01)


@contextlib.contextmanager
def tmpfs(path: Path, size: str) -> Iterator[Path]:
    path.mkdir()
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs",
                              str(path)], capture_output=True, check=False)
    if mounted.returncode != 0:
        pytest.skip(f"no tmpfs can be mounted here (needs root and mount(8)): "
                    f"{mounted.stderr.decode(errors='replace').strip()}")
    try:
        yield path
    finally:
        subprocess.run(["umount", "-l", str(path)], capture_output=True, check=False)


def test_a_state_on_a_read_only_file_system_replaces_nothing(tmp_path: Path) -> None:
    for name, text in DAYS.items():
        (tmp_path / name).write_text(text)
    with tmpfs(tmp_path / "ro", "1m") as folder:
        state = folder / "s.json"
        assert cumtool(tmp_path, "cumsum", "day-1.csv", "--state", str(state), "-o",
                       "out.csv").returncode == 0
        before = (tmp_path / "out.csv").read_bytes(), state.read_bytes()
        subprocess.run(["mount", "-o", "remount,ro", str(folder)], check=True)
        result = cumtool(tmp_path, "cumsum", "day-2.csv", "--state", str(state), "-o",
                         "out.csv")
        assert result.returncode == 1
        assert result.stderr.startswith(b"Error: ")
        assert result.stderr.count(b"\n") == 1
        assert ((tmp_path / "out.csv").read_bytes(), state.read_bytes()) == before
        assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
            [*DAYS, "out.csv", "ro"])


def test_a_state_on_a_full_file_system_replaces_nothing(tmp_path: Path) -> None:
    big = "meter,kwh\n" + "".join(f"m{i},{i}\n" for i in range(3000))
    (tmp_path / "big.csv").write_text(big)
    (tmp_path / "d1.csv").write_text("meter,kwh\nm1,1\n")
    with tmpfs(tmp_path / "full", "64k") as folder:
        state = folder / "s.json"
        assert cumtool(tmp_path, "cumsum", "d1.csv", "--by", "meter", "--state",
                       str(state), "-o", "out.csv").returncode == 0
        before = (tmp_path / "out.csv").read_bytes(), state.read_bytes()
        result = cumtool(tmp_path, "cumsum", "big.csv", "--by", "meter", "--state",
                         str(state), "-o", "out.csv")
        assert result.returncode == 1
        assert result.stderr == f"Error: cannot write {state}: No space left on device\n".encode()
        assert ((tmp_path / "out.csv").read_bytes(), state.read_bytes()) == before
        assert sorted(p.name for p in folder.iterdir()) == ["s.json", "s.json.lock"]
        assert not [p for p in tmp_path.iterdir() if p.name.endswith(".cumtool-tmp")]


def _grow(log: Path, rows: range) -> None:
    with open(log, "a") as stream:
        stream.writelines(f"m{k % 7},{k * 0.5 + 0.25}\n" for k in rows)


@pytest.mark.parametrize("step", ["committed", "exit"])
def test_a_kill_after_the_commit_with_the_log_grown_before_the_retry(tmp_path: Path,
                                                                     step: str) -> None:
    """Hourly runs over a growing log, named by the hour. One is killed -9 after its
    commit, the log grows, and cron retries it with the same --run-id. The hours'
    outputs are one run's over the whole log, row for row: nothing lost, nothing
    doubled."""
    log = tmp_path / "log.csv"
    log.write_text("meter,kwh\n")
    outputs: dict[str, bytes] = {}

    def hour(name: str, fault: str | None = None) -> subprocess.CompletedProcess[bytes]:
        return cumtool(tmp_path, "cumsum", "log.csv", "--by", "meter", "--state", "s.json",
                       "--growing", "--run-id", name, "-o", f"out-{name}.csv", fault=fault)

    _grow(log, range(0, 300))
    assert hour("h1").returncode == 0
    _grow(log, range(300, 700))
    killed = hour("h2", fault=f"{step}:SIGKILL")
    assert killed.returncode == -signal.SIGKILL
    _grow(log, range(700, 900))  # the log goes on meanwhile
    retry = hour("h2")
    assert (retry.returncode, retry.stderr) == (0, b"")
    _grow(log, range(900, 1000))
    assert hour("h3").returncode == 0
    for name in ("h1", "h2", "h3"):
        outputs[name] = (tmp_path / f"out-{name}.csv").read_bytes()
    whole = cumtool(tmp_path, "cumsum", "log.csv", "--by", "meter")
    assert whole.returncode == 0
    rows = [line for name in ("h1", "h2", "h3") for line in outputs[name].splitlines()[1:]]
    assert rows == whole.stdout.splitlines()[1:]
    assert [len(outputs[n].splitlines()) - 1 for n in ("h1", "h2", "h3")] == [300, 400, 300]


@pytest.mark.parametrize("seed", range(5))
def test_random_kills_over_a_growing_log_lose_and_double_nothing(tmp_path: Path,
                                                                 seed: int) -> None:
    """The issue's trial, with real kill -9s at random moments: a program appends to its
    log through a block buffer (so a run often finds the last line cut), cron runs every
    hour with --growing and --run-id, and a killed run is retried with its hour's ID while
    the log goes on growing. The hours' outputs, in order, are one run's over the finished
    log, row for row."""
    import random

    rng = random.Random(seed)
    log = tmp_path / "log.csv"
    text = "meter,kwh\n" + "".join(
        f"m{rng.randrange(5)},{rng.randrange(1, 10**6) / 100}\n" for _ in range(3000))
    written = len("meter,kwh\n")
    log.write_text(text[:written])
    outputs = []
    env = {k: v for k, v in os.environ.items() if k != "CUMTOOL_TEST_FAULT"}

    def grow() -> None:
        nonlocal written
        written = min(len(text), written + rng.randrange(500, 6000))  # often mid-line
        log.write_text(text[:written])

    for hour in range(12):
        grow()
        argv = [sys.executable, "-m", "cumtool", "cumsum", "log.csv", "--by", "meter",
                "--state", "s.json", "--growing", "--run-id", f"h{hour}", "-o",
                f"out-{hour:02}.csv", "-q"]
        for _attempt in range(20):
            run = subprocess.Popen(argv, cwd=tmp_path, env=env, stdout=subprocess.PIPE,
                                   stderr=subprocess.PIPE)
            if rng.random() < 0.5:  # a kill at a random moment, before or after the commit
                time.sleep(rng.uniform(0.0, 0.6))
                run.kill()
            _out, err = run.communicate(timeout=60)
            if run.returncode == 0:
                break
            assert run.returncode == -signal.SIGKILL, err
            if rng.random() < 0.5:
                grow()  # the log goes on between the kill and cron's retry
        else:
            pytest.fail("twenty attempts killed in a row")
        outputs.append((tmp_path / f"out-{hour:02}.csv").read_text())
    log.write_text(text)  # the writer finishes; a last hour takes the rest
    final = subprocess.run([*argv[:-5], "--run-id", "last", "-o", "out-last.csv"],
                           cwd=tmp_path, env=env, capture_output=True, timeout=60)
    assert final.returncode == 0, final.stderr
    outputs.append((tmp_path / "out-last.csv").read_text())
    whole = subprocess.run([sys.executable, "-m", "cumtool", "cumsum", "log.csv", "--by",
                            "meter"], cwd=tmp_path, env=env, capture_output=True,
                           timeout=60, text=True)
    rows = [line for out in outputs for line in out.splitlines()[1:]]
    assert rows == whole.stdout.splitlines()[1:]
    assert len(rows) == 3000
