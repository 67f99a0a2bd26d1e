"""cumtool on a real terminal (a pseudo-terminal), as a user meets it: the table fits the
terminal's width, nothing from a file drives the terminal, binary output and a missing
input are refused with a hint, and Click's messages are one escaped line and a hint.

Each run is the installed `cumtool` script with its standard output (and, where the
test says, its standard input) on a pseudo-terminal; standard error goes to a file."""

from __future__ import annotations

import fcntl
import os
import pty
import re
import select
import struct
import subprocess
import sys
import termios
import time
from dataclasses import dataclass
from pathlib import Path

import pytest
from helpers import CUMTOOL

ELLIPSIS = "…"
SGR = re.compile(r"\x1b\[[0-9;]*m")  # rich's own styles: colour, bold, dim, italic
# Terminal-driving text hidden in files: clear the screen, set the window title (OSC,
# ended by BEL), and the one-byte CSI of 8-bit terminals.
HOSTILE = "\x1b[2J\x1b]0;owned\x07\x9b6n"
HOSTILE_SHOWN = "\\x1b[2J\\x1b]0;owned\\x07\\x9b6n"

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="pseudo-terminals are POSIX")


@dataclass
class Done:
    status: int
    out: bytes  # what the terminal (or the pipe) received
    err: str

    @property
    def text(self) -> str:
        return self.out.decode("utf-8")


def cumtool(*args: str | bytes, tmp_path: Path, stdin_terminal: bool = False,
            stdout_terminal: bool = True, columns: int = 100, env: dict | None = None,
            stdin_path: Path | None = None, typed: bytes = b"", timeout: float = 60) -> Done:
    """Run `cumtool ARGS` with standard output on a pseudo-terminal `columns` wide (or a
    pipe), and standard input on it too (where `typed` is typed), or from `stdin_path`,
    or empty."""
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 40, columns, 0, 0))
    attributes = termios.tcgetattr(slave)
    attributes[1] &= ~termios.ONLCR  # keep "\n" as written, not "\r\n"
    termios.tcsetattr(slave, termios.TCSANOW, attributes)
    environment = {k: v for k, v in os.environ.items()
                   if k not in ("COLUMNS", "LINES", "NO_COLOR", "FORCE_COLOR", "TTY_COMPATIBLE")}
    environment.update(TERM="xterm-256color", PYTHONWARNINGS="ignore", **(env or {}))
    err_path = tmp_path / "stderr.txt"
    with open(err_path, "wb") as err, open(stdin_path or os.devnull, "rb") as data:
        process = subprocess.Popen(
            [CUMTOOL, *args], stdin=slave if stdin_terminal else data,
            stdout=slave if stdout_terminal else subprocess.PIPE, stderr=err,
            env=environment, start_new_session=True)
    os.close(slave)
    os.write(master, typed)
    chunks = []
    deadline = time.monotonic() + timeout
    try:
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise AssertionError(f"cumtool {args} did not finish in {timeout}s")
            if not select.select([master], [], [], left)[0]:
                continue
            try:
                data = os.read(master, 1 << 16)
            except OSError:  # EIO: every copy of the terminal's other end is closed
                break
            if not data:
                break
            chunks.append(data)
        if not stdout_terminal:  # the terminal got only what was typed, echoed
            assert process.stdout is not None
            chunks = [process.stdout.read()]
        status = process.wait(timeout=max(1.0, deadline - time.monotonic()))
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        if process.stdout is not None:
            process.stdout.close()
        os.close(master)
    return Done(status, b"".join(chunks), err_path.read_bytes().decode("utf-8"))


def plain(text: str) -> str:
    """The text without rich's styles (which a terminal gets)."""
    return SGR.sub("", text)


def cells(line: str) -> list[str]:
    return [c.strip() for c in line.strip()[1:-1].split(line.strip()[0])]


def header_names(text: str) -> list[str]:
    return cells(next(line for line in text.splitlines() if line.startswith("┃")))[1:]


# The table on a terminal ---------------------------------------------------------------------


def test_the_table_fits_the_terminal_and_shows_the_results_first(tmp_path: Path):
    names = [f"c{i:02d}" for i in range(30)]
    path = tmp_path / "wide.csv"
    path.write_text(",".join(names) + "\n" + ",".join(["1000000"] * 30) + "\n")
    done = cumtool("cumsum", str(path), "-c", "c25", tmp_path=tmp_path, columns=60)
    assert done.status == 0, done.err
    assert done.err == ""
    assert "\x1b[" in done.text  # styled: the terminal path ran
    text = plain(done.text)
    lines = text.splitlines()
    assert max(len(line) for line in lines[:-2]) <= 60
    # Each column is 7 wide (+3), the row numbers' 1 (+3, +1 edge): 5 of them fit in
    # 60, the scanned c25 first, then from the left; shown in input order.
    assert header_names(text) == ["c00", "c01", "c02", "c03", "c25"]
    assert lines[-2] == f"{ELLIPSIS} 25 more columns not shown: c04, c05, c06, c07, c08, {ELLIPSIS}"
    assert lines[-1] == f"cumsum along rows of {path}, 1 row x 30 columns; scanned: c25"


def test_a_wider_terminal_shows_more_columns(tmp_path: Path):
    path = tmp_path / "wide.csv"
    path.write_text(",".join(f"c{i:02d}" for i in range(30)) + "\n"
                    + ",".join(["1000000"] * 30) + "\n")
    done = cumtool("cumsum", str(path), tmp_path=tmp_path, columns=120)
    assert done.status == 0, done.err
    assert header_names(plain(done.text)) == [f"c{i:02d}" for i in range(11)]


def test_nothing_from_a_file_drives_the_terminal(tmp_path: Path):
    directory = tmp_path / f"dir{HOSTILE}"
    directory.mkdir()
    path = directory / "data.csv"
    path.write_text(f'n,"name{HOSTILE}",note\n1,2,"[bold]x{HOSTILE}"\n3,4,[red]y\n',
                    encoding="utf-8")
    done = cumtool("cumsum", str(path), tmp_path=tmp_path)
    assert done.status == 0, done.err
    assert b"\x1b[2J" not in done.out and b"\x1b]0;" not in done.out
    assert b"\x07" not in done.out and "\x9b".encode() not in done.out
    text = plain(done.text)
    assert "\x1b" not in text  # rich's styles were the only escape sequences
    assert header_names(text) == ["n", f"name{HOSTILE_SHOWN}", "note"]
    rows = [cells(line)[1:] for line in text.splitlines() if line.startswith("│")]
    assert rows == [["1", "2", f"[bold]x{HOSTILE_SHOWN}"], ["4", "6", "[red]y"]]
    shown_path = str(path).replace(HOSTILE, HOSTILE_SHOWN)
    assert text.splitlines()[-1] == (f"cumsum along rows of {shown_path}, 2 rows x 3 "
                                     f"columns; scanned: n, name{HOSTILE_SHOWN}")


@pytest.mark.slow  # a subprocess in another locale: 1 s
def test_a_file_name_that_is_not_utf8(tmp_path: Path):
    path = os.path.join(os.fsencode(tmp_path), b"caf\xe9.csv")
    with open(path, "wb") as handle:
        handle.write(b"a\n1\n2\n")
    done = cumtool("cumsum", path, tmp_path=tmp_path)
    assert done.status == 0, done.err
    assert plain(done.text).splitlines()[-1] == (
        f"cumsum along rows of {tmp_path}/caf\\xe9.csv, 2 rows x 1 column; scanned: a")
    into_a_pipe = cumtool("cumsum", path, "--to", "table", tmp_path=tmp_path,
                          stdout_terminal=False)
    assert into_a_pipe.status == 0, into_a_pipe.err
    assert into_a_pipe.text.splitlines()[-1] == plain(done.text).splitlines()[-1]
    missing = cumtool("cumsum", b"nope\xff.csv", tmp_path=tmp_path)
    assert missing.status == 1
    assert missing.err == "Error: nope\\xff.csv: no such file\n"


LATIN1_TABLE = [
    "+------------------+",
    "| # |    ?? | city |",
    "|   | int64 | str  |",
    "|---+-------+------|",
    "| 1 |     1 | ??   |",
    "| 2 |     3 | ??   |",
    "+------------------+",
]


@pytest.mark.slow  # subprocesses in another locale: 1 s
@pytest.mark.parametrize("terminal", [True, False], ids=["terminal", "pipe"])
def test_a_latin1_locale_shows_cjk_names_as_replacement_characters(tmp_path: Path,
                                                                    terminal: bool):
    path = tmp_path / "cjk.csv"
    path.write_text("売上,city\n1,東京\n2,大阪\n", encoding="utf-8")
    done = cumtool("cumsum", str(path), "--to", "table", tmp_path=tmp_path,
                   stdout_terminal=terminal, env={"LC_ALL": "C", "PYTHONIOENCODING": "latin-1"})
    assert done.status == 0, done.err
    assert done.err == ""
    lines = plain(done.out.decode("latin-1")).splitlines()
    # Measured as shown: "??" is two columns, as the terminal shows it; ASCII borders.
    assert lines[:-1] == LATIN1_TABLE
    assert lines[-1] == f"cumsum along rows of {path}, 2 rows x 2 columns; scanned: ??"


# Guard rails ---------------------------------------------------------------------------------


@pytest.mark.parametrize(("args", "fmt"), [
    pytest.param(["--to", "parquet"], "parquet", id="parquet"),
    pytest.param(["--to", "npy"], "npy", id="npy"),
    pytest.param(["--to", "npy", "-o", "-"], "npy", id="npy-dash"),
])
def test_binary_output_to_a_terminal_is_refused(tmp_path: Path, args: list[str], fmt: str):
    path = tmp_path / "t.csv"
    path.write_text("a\n1\n2\n")
    done = cumtool("cumsum", str(path), *args, tmp_path=tmp_path)
    assert done.status == 2
    assert done.out == b""
    assert done.err == f"Error: {fmt} output is binary; write it with -o FILE or pipe it\n"


def test_binary_output_into_a_pipe_or_a_file_is_written(tmp_path: Path):
    path = tmp_path / "t.csv"
    path.write_text("a\n1\n2\n")
    piped = cumtool("cumsum", str(path), "--to", "parquet", tmp_path=tmp_path,
                    stdout_terminal=False)
    assert piped.status == 0, piped.err
    assert piped.out[:4] == b"PAR1"
    done = cumtool("cumsum", str(path), "-o", str(tmp_path / "o.npy"), tmp_path=tmp_path)
    assert done.status == 0, done.err
    assert (tmp_path / "o.npy").read_bytes()[:6] == b"\x93NUMPY"


NO_INPUT = ("Error: no input: give a file, or pipe data into cumtool (cumtool cummax data.csv, "
            "or ... | cumtool cummax)\n")


@pytest.mark.parametrize("stdout_terminal", [True, False], ids=["to-terminal", "to-pipe"])
def test_no_input_on_a_terminal_says_how_to_give_it(tmp_path: Path, stdout_terminal: bool):
    # Were it to wait for input, the run would time out: the terminal never ends.
    done = cumtool("cummax", tmp_path=tmp_path, stdin_terminal=True,
                   stdout_terminal=stdout_terminal, timeout=30)
    assert done.status == 2
    assert done.out == b""
    assert done.err == NO_INPUT


def test_an_explicit_dash_reads_what_is_typed_on_the_terminal(tmp_path: Path):
    done = cumtool("cummax", "-", tmp_path=tmp_path, stdin_terminal=True,
                   stdout_terminal=False, typed=b"a\n3\n1\n\x04", timeout=30)
    assert done.status == 0, done.err
    assert done.out == b"a\n3\n3\n"


def test_piped_input_is_read_while_the_output_is_a_terminal(tmp_path: Path):
    path = tmp_path / "t.csv"
    path.write_text("a\n1\n2\n")
    done = cumtool("cumsum", tmp_path=tmp_path, stdin_path=path)
    assert done.status == 0, done.err
    assert plain(done.text).splitlines()[-1] == (
        "cumsum along rows of standard input, 2 rows x 1 column; scanned: a")


# Click's messages ----------------------------------------------------------------------------


def test_a_hostile_argument_is_shown_escaped_in_one_line(tmp_path: Path):
    """A second INPUT is one more file to read (a glob here, for its '['): its name is
    shown escaped."""
    path = tmp_path / "t.csv"
    path.write_text("a\n1\n")
    done = cumtool("cumsum", str(path), f"x{HOSTILE}", tmp_path=tmp_path)
    assert done.status == 1
    assert done.out == b""
    assert done.err == f"Error: x{HOSTILE_SHOWN}: no file matches\n"


@pytest.mark.parametrize(("args", "error", "hint"), [
    pytest.param(["cumsum", "{path}", "--zzzz"], "No such option '--zzzz'.",
                 "Try 'main cumsum --help'.", id="unknown-option"),
    pytest.param(["cumsum", "{path}", "--overflow", "nope"],
                 "Invalid value for '--overflow': 'nope' is not one of 'error', 'wrap'.",
                 "Try 'main cumsum --help'.", id="bad-choice"),
    pytest.param(["cumsum", "{path}", "-c", "a,\x1b[2J,"],
                 "-c 'a,\\x1b[2J,': an empty column name; quote it as '\"\"' to choose a "
                 "column whose name is empty",
                 "Try 'main cumsum --help'.", id="hostile-value"),
    pytest.param([f"no{HOSTILE}such"], f"No such command 'no{HOSTILE_SHOWN}such'.",
                 "Try 'main --help'.", id="hostile-command"),
])
def test_usage_errors_are_one_line_with_a_hint(invoke, tmp_path: Path, args: list[str],
                                              error: str, hint: str):
    path = tmp_path / "t.csv"
    path.write_text("a\n1\n")
    result = invoke(*(arg.format(path=path) if arg == "{path}" else arg for arg in args))
    assert result.exit_code == 2
    assert result.stdout == ""
    assert result.stderr == f"Error: {error}{'' if error.endswith('.') else '.'} {hint}\n"


def test_a_usage_error_without_a_command_has_no_hint(invoke, tmp_path: Path):
    result = invoke("cumsum", str(tmp_path / "t.csv"), "-o")
    assert result.exit_code == 2
    assert result.stderr == "Error: Option '-o' requires an argument.\n"


def test_help_and_version_are_not_errors(invoke):
    assert invoke("cumsum", "--help").exit_code == 0
    result = invoke("--version")
    assert (result.exit_code, result.stderr) == (0, "")
