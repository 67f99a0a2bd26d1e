"""The `cumtool` command's entry point. A stop signal (SIGINT, SIGTERM, SIGHUP) ends the
run with one line and the status for that signal from the first instruction on, while
the modules load too, not with a traceback or in silence. Once a run has put its files in
place, a stop signal no longer counts: the run has done its work (cumtool.commit)."""

from __future__ import annotations

import gc
import signal
import sys

from cumtool.commit import (
    STOP_SIGNALS,
    check_stop,
    committed,
    fault,
    leave_when_committed,
    request_stop,
)
from cumtool.errors import EXIT_INTERRUPTED, Stopped


def _stop(number: int, _frame: object) -> None:
    if request_stop(number):
        raise Stopped(number)


def main() -> None:
    for number in STOP_SIGNALS:
        signal.signal(number, _stop)
    # The modules' objects live as long as the process: no collection while they load,
    # then they are left out of every later one (gc.freeze). A 4-row CSV 0.161 -> 0.152 s,
    # Parquet 2M -> Parquet 0.403 -> 0.384 s, JSON Lines 2M -> CSV 0.663 -> 0.647 s on 2
    # cores (benchmarks/RESULTS-cores.md, session 10). The library's importers keep theirs.
    gc.disable()
    try:
        from cumtool.cli import main as cli_main
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
    try:
        cli_main()
    finally:
        if committed.is_set():  # until the process is gone
            for number in STOP_SIGNALS:
                signal.signal(number, signal.SIG_IGN)
        fault("exit")
