"""The package's own exceptions; the CLI turns each into one `Error: ...` line and an exit status.

Exit statuses: 0 success, 1 data or I/O error, 2 usage error, 75 the --state file is held
by another run (cumtool.commit; see README); a run stopped by a signal exits with 128 + its
number, and one whose output pipe was closed early 141, quietly.
"""

from __future__ import annotations

import re
from typing import Any

_MARK = "\x1f"  # brackets an option named in a message, for each front end to word
_OPTION = re.compile(f"{_MARK}([a-z_]+)(?:=([^{_MARK}]*))?{_MARK}")
_CLI_SPELLING = {"columns": "-c"}
_QUOTED = re.compile(r"'[^']*'|\"[^\"]*\"")
_PYTHON_LITERAL = re.compile(r"-?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:e[-+]?[0-9]+)?|True|False|None")


def option(name: str, value: str | None = None) -> str:
    """An option (and a value) named in a message. The message stays front-end neutral:
    the CLI words it `--name value`, the Python API `name='value'` (its keyword)."""
    return f"{_MARK}{name}{'' if value is None else '=' + value}{_MARK}"


def word(text: str, cli: bool) -> str:
    """`text` with every `option(...)` worded for the command line or for Python."""
    if _MARK not in text:
        return text

    def worded(match: re.Match[str]) -> str:
        name, value = match.group(1), match.group(2)
        if cli:
            flag = _CLI_SPELLING.get(name, "--" + name.replace("_", "-"))
            return flag if value is None else f"{flag} {value}"
        if value is None:
            return f"{name}="
        # Python's own spelling of the value: quoted once (a value given quoted, for a
        # shell, is not quoted again), a number or a flag as it is.
        plain = _QUOTED.fullmatch(value) or _PYTHON_LITERAL.fullmatch(value)
        return f"{name}={value}" if plain else f"{name}={value!r}"

    return _OPTION.sub(worded, text)


class CumtoolError(Exception):
    """Base class: a failure the user can act on, with a one-line message. Options named
    in it are worded for Python by str(); the CLI prints `cli_message()`."""

    exit_code = 1

    def __str__(self) -> str:
        return word(self.raw, cli=False)

    def __repr__(self) -> str:  # as str() words it, not with the front ends' markers
        return f"{type(self).__name__}({str(self)!r})"

    @property
    def raw(self) -> str:
        """The message as raised, options unworded: for wrapping in another message."""
        return str(self.args[0]) if self.args else ""

    def cli_message(self) -> str:
        return word(self.raw, cli=True)


class UsageError(CumtoolError):
    """A bad option or option combination (exit status 2)."""

    exit_code = 2


class UnknownKeyword(UsageError, TypeError):
    """A keyword the API does not take: a UsageError naming it, and the TypeError Python
    raises for one, which callers may already catch."""


class DataError(CumtoolError):
    """The input's contents cannot be processed: bad cell, overflow, missing column."""


class FormatError(DataError):
    """A file that cannot be read as the format it claims or appears to be."""


class LateDecimal(FormatError):
    """A decimal after the judged rows in a column read as integers (`column`: its place
    in the input; `where`: the message without its hint): engine.run scans a file again
    with that column read as float64 where nothing was written that cannot be taken back."""

    def __init__(self, where: str, hint: str, column: int) -> None:
        super().__init__(where + hint)
        self.where = where
        self.hint = hint
        self.column = column

    def __reduce__(self) -> tuple[type, tuple[str, str, int]]:
        # As its arguments, not its message: a Dask worker's pickles it to the client.
        return (type(self), (self.where, self.hint, self.column))


class OutputError(CumtoolError):
    """The output cannot be written (missing directory, permissions, full disk)."""


class ExtraMissing(CumtoolError):
    """The run needs an optional extra that is not installed (exit status 1, whichever
    extra: the command is right, this installation cannot run it). Made by
    `extra_missing`, the one wording of it."""


def extra_missing(what: str, extra: str) -> ExtraMissing:
    """`what` needs the optional extra `extra`: how to install it, both from PyPI and
    from a clone of the repository (where the name `cumtool[...]` finds nothing)."""
    return ExtraMissing(f"{what} needs the optional extra '{extra}': pip install "
                        f"'cumtool[{extra}]' (from a checkout: pip install '.[{extra}]')")


class ScanOverflowError(DataError):
    """An integer result does not fit its dtype; `position` indexes the scanned block."""

    def __init__(self, message: str, position: tuple[int, ...] = (),
                 hint: str | None = None) -> None:
        super().__init__(message)
        self.position = position
        # The advice that ends its message where --overflow wrap is no help (a value too
        # wide to be read at all): kernels.overflow_hint.
        self.hint = hint
        # A table's scan: the error's row in its batch, and what the rows before it give
        # (their results, then their output batch), so that those rows are written.
        self.batch_row: int | None = None
        self.before: Any = None


EXIT_INTERRUPTED = 130  # 128 + SIGINT
EXIT_BROKEN_PIPE = 141  # 128 + SIGPIPE, as other Unix tools report a closed pipe
# The stop signals by number (SIGHUP, SIGINT, SIGTERM are 1, 2 and 15 on every POSIX
# system): numbers, so that the entry point can name them before `signal` is imported.
STOP_WORDS = {1: "hung up", 2: "interrupted", 15: "terminated"}


class Stopped(BaseException):
    """SIGINT, SIGTERM or SIGHUP: the run stops and cleans up; one line, and the shell's
    status for a signal, 128 + its number (130, 143, 129). Not a KeyboardInterrupt: Click
    would catch that while it parses, and print a blank line before its own message."""

    def __init__(self, signal_number: int) -> None:
        super().__init__(signal_number)
        self.signal_number = signal_number

    @property
    def exit_code(self) -> int:
        return 128 + self.signal_number

    def message(self) -> str:
        return STOP_WORDS.get(self.signal_number, f"stopped by signal {self.signal_number}")
