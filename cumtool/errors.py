"""The package's own exceptions; the CLI turns each into one `Error: ...` line and an exit status.

Exit statuses: 0 success, 1 data or I/O error, 2 usage error (see README); a run stopped
by a signal exits with 128 + its number.
"""

from __future__ import annotations


class CumtoolError(Exception):
    """Base class: a failure the user can act on, with a one-line message."""

    exit_code = 1


class UsageError(CumtoolError):
    """A bad option or option combination (exit status 2)."""

    exit_code = 2


class DataError(CumtoolError):
    """The input's contents cannot be processed: bad cell, overflow, missing column."""


class FormatError(DataError):
    """A file that cannot be read as the format it claims or appears to be."""


class OutputError(CumtoolError):
    """The output cannot be written (missing directory, permissions, full disk)."""


class ScanOverflowError(DataError):
    """An integer result does not fit its dtype; `position` indexes the scanned block."""

    def __init__(self, message: str, position: tuple[int, ...] = ()) -> None:
        super().__init__(message)
        self.position = position


class Stopped(KeyboardInterrupt):
    """SIGTERM or SIGHUP: the run stops and cleans up exactly as for Ctrl-C (SIGINT)."""

    def __init__(self, signal_number: int) -> None:
        super().__init__(signal_number)
        self.signal_number = signal_number
