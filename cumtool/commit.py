"""Putting a run's files in place together: its output(s) and its --state.

Every file a run writes goes first to a temporary file beside its target, is flushed and
fsynced, and is registered here instead of being renamed at once. When the run has
succeeded, `Commit.apply` writes a small commit record naming every rename, then does
the renames with stop signals held back, then removes the record. A run killed between
the first and the last rename leaves the record behind, and the next run on the same
state (or the same -o DIR/) completes it before anything else (`recover`): all the files
are replaced, or none. A run that fails before the record exists replaces nothing.

The state file is also held with an exclusive lock (`StateLock`) for the whole run, so two
overlapping runs can never both start from the same saved values.

Temporary files and stage folders carry the pid of the run that made them; a later run
removes those of runs that are gone (`remove_leftovers`), and only those.
"""

from __future__ import annotations

import contextlib
import errno
import os
import re
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterator

from cumtool.errors import CumtoolError, OutputError, option

EXIT_STATE_BUSY = 75  # EX_TEMPFAIL: another run holds the state; try again later
TEMPORARY_SUFFIX = ".cumtool-tmp"
STAGE_PREFIX = ".cumtool-stage-"
RECORD_SUFFIX = ".commit"  # beside the state: STATE.commit
LOCK_SUFFIX = ".lock"  # beside the state: STATE.lock
DIRECTORY_RECORD = ".cumtool-commit-"  # -o DIR/ without --state: DIR/.cumtool-commit-PID
STOP_SIGNALS = tuple(getattr(signal, name) for name in ("SIGINT", "SIGTERM", "SIGHUP")
                     if hasattr(signal, name))

# Set once this process has put a run's files in place: a stop signal after that point
# is no failure (the CLI then exits 0), and must not make a retry wrapper run it again.
committed = threading.Event()
_putting_in_place = threading.Event()
_deferred: list[int] = []  # stop signals that came while the files were put in place


_requested: list[int] = []  # stop signals whose handler raised, until a check sees them
# Set by the command's entry point (cumtool.launch), never by the Python API: once a run's
# files are in place its work is done, and the process leaves at once (`leave`), without
# the 100-200 ms of tearing down threads, modules and the interpreter, during which a
# kill -9 would make a scheduler retry a run that in fact committed.
leave_when_committed = threading.Event()


def leave() -> None:
    """End the process now, with status 0: what is written is flushed first."""
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            if stream is not None:
                stream.flush()
    fault("exit")
    os._exit(0)


def request_stop(number: int) -> bool:
    """For the stop-signal handlers: whether to raise Stopped now (see `may_stop`). The
    signal is also recorded: an exception raised by a handler while Python compiles a
    module (an import without .pyc) can be lost, and `check_stop` raises it again."""
    if not may_stop(number):
        return False
    _requested.append(number)
    return True


def handled_signals() -> tuple[int, ...]:
    """The stop signals a run handles: those not ignored (`nohup`, a shell's background
    job's SIGINT), which stay ignored, as in any other tool."""
    return tuple(n for n in STOP_SIGNALS if signal.getsignal(n) is not signal.SIG_IGN)


def stop_now(frame: object) -> bool:
    """For a stop-signal handler that request_stop told to stop: whether to raise Stopped
    now. Not while Python runs its import machinery (a module loading, or a native
    library importing one): an exception raised there is lost in a callback, with a
    traceback, or turns into another (a panic). The stop is raised once Python is out of
    it, by a timer that comes back until then (SIGALRM), or at the run's next check_stop."""
    if not _in_import(frame):
        disarm()
        return True
    _retry_soon()
    return False


def _in_import(frame: object) -> bool:
    while frame is not None:
        if frame.f_code.co_filename.startswith("<frozen importlib"):  # type: ignore[attr-defined]
            return True
        frame = frame.f_back  # type: ignore[attr-defined]
    return False


_armed = threading.Event()  # the timer of _retry_soon is set


def _retry_soon() -> None:
    if hasattr(signal, "setitimer") and threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGALRM, _retry)
        signal.setitimer(signal.ITIMER_REAL, 0.02)
        _armed.set()


def disarm() -> None:
    """The timer of a stop that waited is off, and SIGALRM ignored: as the interpreter
    exits it sets the signals with Python handlers back to their default, and SIGALRM's
    would end the process (status -14) after its own line and status were given."""
    if _armed.is_set() and threading.current_thread() is threading.main_thread():
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, signal.SIG_IGN)
        _armed.clear()


def _retry(_number: int, frame: object) -> None:
    # Not while the run puts its files in place, nor after: then its work is done, and a
    # stop that came before is dropped, as one that comes then is (may_stop).
    if not _requested or committed.is_set() or _putting_in_place.is_set():
        disarm()
    elif _in_import(frame):
        _retry_soon()
    else:
        check_stop()  # (which disarms the timer as it raises)


def check_stop() -> None:
    """Raise the stop a signal asked for if its exception was lost on the way (the run
    calls this as it starts, at each batch and before it puts files in place)."""
    from cumtool.errors import Stopped

    if _requested and not committed.is_set():
        number = _requested[0]
        _requested.clear()
        disarm()
        raise Stopped(number)


def may_stop(number: int) -> bool:
    """For the stop-signal handlers: whether the run may stop now. Not while its files
    are being put in place (the signal waits until they are), nor after (it is
    dropped: the run has done its work)."""
    if committed.is_set():
        return False
    if _putting_in_place.is_set():
        _deferred.append(number)
        return False
    return True


class StateBusy(CumtoolError):
    """Another run holds the state file's lock (exit status 75, EX_TEMPFAIL)."""

    exit_code = EXIT_STATE_BUSY


# Locking ---------------------------------------------------------------------------------

class StateLock:
    """An exclusive lock on STATE.lock (flock), held until `release`; the file holds the
    holder's pid, for the message a second run prints."""

    def __init__(self, state: str, wait: float | None, shown: str) -> None:
        self.path = state + LOCK_SUFFIX
        self._fd: int | None = None
        try:
            import fcntl
        except ImportError:  # no flock (Windows): runs are not guarded against overlap
            return
        try:
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT | getattr(os, "O_CLOEXEC", 0),
                         0o666)
        except OSError as error:
            raise OutputError(f"cannot lock {option('state', shown)}: cannot open "
                              f"{self.path}: {error.strerror or error}") from None
        deadline = None if wait is None else time.monotonic() + wait
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except OSError as error:
                if error.errno not in (errno.EAGAIN, errno.EACCES, errno.EWOULDBLOCK):
                    os.close(fd)
                    raise OutputError(f"cannot lock {self.path}: "
                                      f"{error.strerror or error}") from None
            if deadline is None or time.monotonic() >= deadline:
                holder = _holder(fd)
                os.close(fd)
                waited = "" if wait is None else f", still after {wait:g} s of waiting"
                advice = (f"give {option('wait')} SECONDS to wait for it" if wait is None
                          else f"give a longer {option('wait')}")
                raise StateBusy(f"{option('state', shown)} is in use by another cumtool "
                                f"run{holder}{waited}; try again later, or {advice}")
            time.sleep(min(0.05, max(deadline - time.monotonic(), 0.0)))
        self._fd = fd
        with contextlib.suppress(OSError):
            os.ftruncate(fd, 0)
            os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)

    def release(self) -> None:
        if self._fd is not None:
            os.close(self._fd)  # closing the descriptor drops the flock
            self._fd = None


def _holder(fd: int) -> str:
    try:
        text = os.pread(fd, 32, 0).decode("ascii", "replace").strip()
    except OSError:
        return ""
    return f" (pid {text})" if text.isdigit() else ""


# Committing ------------------------------------------------------------------------------

class Commit:
    """The renames of one run, done all together at the end (see the module's doc)."""

    def __init__(self, record: str) -> None:
        self.record = record  # the commit record's path, written only while renaming
        self._renames: list[tuple[str, str]] = []  # (temporary, target), absolute
        self._cleanups: list[Callable[[], object]] = []

    def then(self, cleanup: Callable[[], object]) -> None:
        """Something to tidy once the files are in place (a stage folder): done before
        the process leaves at once (`leave_when_committed`)."""
        self._cleanups.append(cleanup)

    def add(self, temporary: str, target: str) -> None:
        """A complete, fsynced temporary file to be renamed over `target`."""
        self._renames.append((os.path.abspath(temporary), os.path.abspath(target)))

    def discard(self) -> None:
        """The run failed: remove every temporary file; nothing was replaced."""
        for temporary, _ in self._renames:
            with contextlib.suppress(OSError):
                os.unlink(temporary)
        self._renames.clear()

    def apply(self) -> None:
        """Write the record, rename everything with stop signals held, remove the
        record. An OSError before the record is written replaces nothing."""
        if not self._renames:
            return
        check_stop()
        with _signals_held():
            _write_record(self.record, self._renames)
            fault("record")
            _complete(self.record, self._renames)
            committed.set()
        fault("committed")
        self._renames.clear()
        for cleanup in self._cleanups:
            with contextlib.suppress(OSError):
                cleanup()
        if leave_when_committed.is_set():
            leave()


@contextlib.contextmanager
def _signals_held() -> Iterator[None]:
    """Stop signals wait until the renames are done: the handlers ask `may_stop`, which
    holds them back meanwhile (a signal is delivered to whichever thread, so masking it
    in this one would not do). One that came meanwhile is dropped once the files are in
    place, and stops the run as usual if they could not be."""
    from cumtool.errors import Stopped

    _deferred.clear()
    _putting_in_place.set()
    try:
        yield
    finally:
        _putting_in_place.clear()
    if _deferred and not committed.is_set():
        raise Stopped(_deferred[0])


def _write_record(record: str, renames: list[tuple[str, str]]) -> None:
    import json

    directory, base = os.path.split(os.path.abspath(record))
    temporary = os.path.join(directory, f"{temporary_prefix(base)}record{TEMPORARY_SUFFIX}")
    text = json.dumps({"format": "cumtool-commit", "pid": os.getpid(),
                       "renames": [list(pair) for pair in renames]}, indent=1)
    try:
        with open(temporary, "w", encoding="utf-8") as stream:
            stream.write(text + "\n")
            stream.flush()
            os.fsync(stream.fileno())
        os.replace(temporary, record)
        _sync_directory(directory)
    except OSError as error:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise OutputError(f"cannot write {record}: {error.strerror or error}") from None


def _complete(record: str, renames: list[tuple[str, str]]) -> None:
    """Rename whatever is still to be renamed, make it durable, drop the record."""
    try:
        for temporary, target in renames:
            if os.path.exists(temporary):
                os.replace(temporary, target)
                fault("rename")
        for directory in sorted({os.path.dirname(t) for _, t in renames}):
            _sync_directory(directory)
        fault("renamed")
        # Not synced: a record that comes back after a crash names renames already done,
        # and the next run's `recover` finds nothing left to rename.
        os.unlink(record)
    except OSError as error:
        raise OutputError(f"cannot complete the commit recorded in {record}: "
                          f"{error.strerror or error}; run again to complete it") from None


def _sync_directory(directory: str) -> None:
    try:
        fd = os.open(directory or ".", os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    except OSError:
        return  # a directory one may write but not read: the renames stand unsynced
    try:
        with contextlib.suppress(OSError):
            os.fsync(fd)
    finally:
        os.close(fd)


def recover(record: str) -> bool:
    """Complete the commit a killed run left in `record`, if any; whether there was one.
    Its temporary files were complete and fsynced before the record was written."""
    import json

    try:
        with open(record, encoding="utf-8") as stream:
            document = json.load(stream)
    except FileNotFoundError:
        return False
    except (OSError, ValueError) as error:
        why = getattr(error, "strerror", None) or error  # not Python's "[Errno 21] ..."
        raise OutputError(f"cannot read the commit record {record}: {why}; it is left by "
                          "a run that was killed while putting its files in place") from None
    try:
        renames = [(str(a), str(b)) for a, b in document["renames"]]
    except (KeyError, TypeError, ValueError):
        raise OutputError(f"{record}: not a cumtool commit record; remove it if no cumtool "
                          "run made it") from None
    with _signals_held():
        _complete(record, renames)
    return True


def recover_directory(directory: str) -> None:
    """-o DIR/ without --state: complete the commits of killed runs recorded in DIR."""
    with contextlib.suppress(OSError):
        for name in os.listdir(directory):
            found = re.fullmatch(re.escape(DIRECTORY_RECORD) + r"(\d+)", name)
            if found and not _alive(int(found[1])):
                recover(os.path.join(directory, name))


def fault(step: str) -> None:
    """For the fault tests only (tests/test_resume_faults.py): with CUMTOOL_TEST_FAULT set
    to STEP:SIGNAL (e.g. rename:SIGKILL), this process sends itself SIGNAL at that step
    of the commit: record, rename (after the first), renamed, committed, exit."""
    wanted = os.environ.get("CUMTOOL_TEST_FAULT")
    if wanted and wanted.partition(":")[0] == step:
        os.environ.pop("CUMTOOL_TEST_FAULT")  # once
        os.kill(os.getpid(), getattr(signal, wanted.partition(":")[2]))


# Leftovers of killed runs -------------------------------------------------------------

def temporary_prefix(base: str) -> str:
    """The start of this process's temporary files for a target named `base`."""
    return f".{base}.{os.getpid()}."


def remove_leftovers(directory: str, base: str) -> None:
    """Remove temporary files for `base` (and stage folders) that runs now gone left in
    `directory`. Only cumtool's own name pattern, and only a pid that no longer runs."""
    import shutil

    own = re.compile(re.escape(f".{base}.") + r"(\d+)\.\w+" + re.escape(TEMPORARY_SUFFIX))
    stage = re.compile(re.escape(STAGE_PREFIX) + r"(\d+)-\w+")
    try:
        names = os.listdir(directory or ".")
    except OSError:
        return
    for name in names:
        found = own.fullmatch(name) or stage.fullmatch(name)
        if found is None or _alive(int(found[1])):
            continue
        path = os.path.join(directory, name)
        with contextlib.suppress(OSError):
            if found.re is stage:  # after recover_directory: no record still needs it
                shutil.rmtree(path)
            else:
                os.unlink(path)


def _alive(pid: int) -> bool:
    if pid == os.getpid():
        return True
    if sys.platform == "win32":
        return True  # no cheap check: leave it
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # EPERM: it runs, as another user
        return True
    return True
