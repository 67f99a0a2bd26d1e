"""The `cumtool` command's entry point. A stop signal (SIGINT, SIGTERM, SIGHUP) ends the
run with one line and the status for that signal from the first instruction on, while
the modules load too, not with a traceback or in silence. Once a run has put its files in
place, a stop signal no longer counts: the run has done its work (cumtool.commit)."""

from __future__ import annotations

import atexit
import contextlib
import gc
import os
import signal
import stat
import sys

from cumtool.commit import (
    STOP_SIGNALS,
    check_stop,
    committed,
    disarm,
    fault,
    handled_signals,
    leave_when_committed,
    request_stop,
    stop_now,
)
from cumtool.errors import EXIT_BROKEN_PIPE, EXIT_INTERRUPTED, Stopped


def _leave(status: int) -> None:
    """End the process with `status` once the command has ended with it, as Python's
    exit would, but without its teardown of the modules and memory, which only gives
    back what the process's end gives back anyway: threads are joined and every exit
    handler runs (threading's and atexit's, last registered first), standard output and
    error are flushed, and the process ends (os._exit). That teardown took 6-8 ms of a
    4-row CSV's 0.095 s, and 0.1-0.3 s of Parquet 10M x 8 -> Parquet
    (benchmarks/RESULTS-cores.md, session 11). Returns, leaving it all to Python, under
    a tracer or monitor (a debugger, coverage: theirs may come after), or where this
    Python has no such steps to call."""
    if sys.gettrace() is not None or sys.getprofile() is not None:
        return
    monitoring = getattr(sys, "monitoring", None)
    if monitoring is not None and any(monitoring.get_tool(tool) for tool in range(6)):
        return
    import threading

    # The first steps of the interpreter's exit (Py_FinalizeEx), in its order.
    join_threads = getattr(threading, "_shutdown", None)
    run_handlers = getattr(atexit, "_run_exitfuncs", None)
    if join_threads is None or run_handlers is None:
        return
    join_threads()
    run_handlers()
    # Where a flush fails, Python would print a traceback and exit 120; the command's
    # own ways instead (cli: a reader gone is quiet, 141; else one Error line, 1).
    for name, stream in (("standard output", sys.stdout), ("standard error", sys.stderr)):
        try:
            if stream is not None:
                stream.flush()
        except BrokenPipeError:
            status = status or EXIT_BROKEN_PIPE
        except (OSError, ValueError) as error:
            with contextlib.suppress(OSError, ValueError):
                message = getattr(error, "strerror", None) or error
                os.write(2, f"Error: cannot write {name}: {message}\n".encode())
            status = status or 1  # an I/O error (cumtool.errors)
    os._exit(status)


def _written_as_a_new_file() -> None:
    """Standard output redirected over an existing file (the shell's `>`) is written as it
    would be to a new file. ext4 marks a file cut to nothing and, at its next close, makes
    the closing process place all the pages written since (auto_da_alloc; XFS and btrfs
    flush such a file at its close alike): at our exit,
    on one thread, 0.6 s of a 0.7 s run writing 1.3 GB on 16 cores (benchmarks/
    RESULTS-cores.md, sessions 10 and 16). Any close takes the mark off, so one is made
    now, while nothing is written yet, on a descriptor of our own: read-only, a reader's
    close, which no watcher of finished writes hears. Elsewhere this costs a stat."""
    try:
        if not stat.S_ISREG(os.fstat(1).st_mode):
            return
        fd = os.open("/proc/self/fd/1", os.O_RDONLY | os.O_CLOEXEC | os.O_NONBLOCK)
    except OSError:  # no /proc, or no leave to read it: the file is written as before
        return
    os.close(fd)


def _stop(number: int, frame: object) -> None:
    if request_stop(number) and stop_now(frame):
        raise Stopped(number)


def main() -> None:
    for number in handled_signals():
        signal.signal(number, _stop)
    _written_as_a_new_file()
    # The modules' objects live as long as the process: no collection while they load,
    # then they are left out of every later one (gc.freeze). A 4-row CSV 0.161 -> 0.152 s,
    # Parquet 2M -> Parquet 0.403 -> 0.384 s, JSON Lines 2M -> CSV 0.663 -> 0.647 s on 2
    # cores (benchmarks/RESULTS-cores.md, session 10). The library's importers keep theirs.
    gc.disable()
    try:
        from cumtool.cli import main as cli_main

        check_stop()  # one that came while they loaded (commit.stop_now waited), now
    except Stopped as stop:
        sys.stderr.write(f"Error: {stop.message()}\n")
        sys.exit(stop.exit_code)
    except KeyboardInterrupt:  # Python's own SIGINT handler, before ours was set
        sys.stderr.write("Error: interrupted\n")
        sys.exit(EXIT_INTERRUPTED)
    except Exception:
        # The stop's exception wrapped in what ran when it came (a RuntimeError from a
        # class's __set_name__ as a module loads): the stop it was.
        try:
            check_stop()
        except Stopped as stop:
            sys.stderr.write(f"Error: {stop.message()}\n")
            sys.exit(stop.exit_code)
        raise
    finally:
        gc.freeze()
        gc.enable()
    leave_when_committed.set()
    status = None  # a caller that main() returns to may have more to do: left to it
    try:
        cli_main()
    except SystemExit as ended:
        code = 0 if ended.code is None else ended.code
        if isinstance(code, int) and not isinstance(code, bool):
            status = code
        raise
    finally:
        disarm()  # a stop's timer, if one waited for an import
        if committed.is_set():  # until the process is gone
            for number in STOP_SIGNALS:
                signal.signal(number, signal.SIG_IGN)
        fault("exit")
        if status is not None:
            _leave(status)
