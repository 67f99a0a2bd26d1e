"""README and docs/ can never drift: every worked example runs, and prints what it shows.

The pages are README.md and every docs/*.md. A ```console block in them is a shell
session: `$ ` lines are commands, the lines up to the next `$ ` line are what the command
printed (standard output, then standard error). The commands understood here are the ones
the pages use:

    $ cumtool ARGS [< FILE] [| head -n N]      run through the CLI (CliRunner)
    $ cat FILE | cumtool ARGS [| head -n N]    FILE becomes standard input
    $ echo $?                                  the exit status of the command before
    $ python -c 'CODE'                         run with this interpreter

A command must exit 0 unless the next line of its block is `echo $?`, which shows the
status. ```text blocks (docs/options.md) are not run: tests/test_docs.py checks that file
against its generator. Each block runs in a fresh directory holding a link to sample_data/,
so files written by one command can be read by the next without touching the repository.
```pycon blocks are doctests of the Python API. The values the pages show were checked by
hand against torch (the reference the contract names), not copied blindly. After a
deliberate change of output, `python tests/test_readme.py --update` rewrites the shown
output of every page; review the diff.
"""

from __future__ import annotations

import doctest
import os
import re
import shlex
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import click
import pytest
from click.testing import Result
from conftest import REPO, SAMPLE_DATA

from cumtool.cli import main
from cumtool.ops import OPS, REGISTRY

Invoke = Callable[..., Result]

README = REPO / "README.md"
TEXT = README.read_text(encoding="utf-8")
# README first, then the pages of docs/ (a page added there is run without listing it).
PAGES = [README, *sorted((REPO / "docs").glob("*.md"))]
FENCE = re.compile(r"^```(?P<lang>[\w-]*)\n(?P<body>.*?)^```\s*$", re.M | re.S)
QUICK_START_COMMANDS = [
    "pip install . && cumtool cumsum sample_data/daily_sales.csv",
    "pip install -e '.[test]' && python -m pytest -m \"not slow\"",
]


@dataclass
class Step:
    command: str
    expected: list[str] = field(default_factory=list)


@dataclass
class Block:
    lang: str
    line: int  # where the block's body starts in its page (1-based)
    body: str
    page: Path = README

    @property
    def where(self) -> str:
        """`README.md:12` or `docs/formats.md:40`, for messages."""
        return f"{self.page.relative_to(REPO)}:{self.line}"


def fenced_blocks(text: str = TEXT, page: Path = README) -> list[Block]:
    return [Block(m["lang"], text.count("\n", 0, m.start("body")) + 1, m["body"], page)
            for m in FENCE.finditer(text)]


def page_blocks(page: Path) -> list[Block]:
    return fenced_blocks(page.read_text(encoding="utf-8"), page)


def console_steps(body: str) -> list[Step]:
    steps: list[Step] = []
    for line in body.splitlines():
        if line.startswith("$ "):
            steps.append(Step(line[2:].strip()))
        else:
            assert steps, f"output before any command: {line!r}"
            steps[-1].expected.append(line)
    return steps


def _block_id(block: Block) -> str:
    """The block's section heading and line, e.g. `cumprod@L112` in README and
    `formats.md:parquet@L40` in docs/."""
    before = block.page.read_text(encoding="utf-8").splitlines()[: block.line]
    heading = next((line for line in reversed(before) if line.startswith("#")), "README")
    slug = re.sub(r"[^a-z0-9]+", "-", heading.lstrip("#").strip().lower()).strip("-")
    prefix = "" if block.page == README else f"{block.page.name}:"
    return f"{prefix}{slug}@L{block.line}"


ALL_BLOCKS = [b for page in PAGES for b in page_blocks(page)]
CONSOLE_BLOCKS = [b for b in ALL_BLOCKS if b.lang == "console"]
PYCON_BLOCKS = [b for b in ALL_BLOCKS if b.lang == "pycon"]
README_CONSOLE_BLOCKS = [b for b in CONSOLE_BLOCKS if b.page == README]


@dataclass
class Outcome:
    text: str
    exit_code: int


def run_command(command: str, invoke: Invoke, cwd: Path) -> Outcome:
    """Run one README command (the small shell subset above) and return what it printed."""
    words = shlex.split(command)
    if words[0] == "python":
        done = subprocess.run([sys.executable, *words[1:]], cwd=cwd, capture_output=True,
                              text=True, timeout=60, check=False)
        return Outcome(done.stdout + done.stderr, done.returncode)
    stdin: bytes | None = None
    if words[:1] == ["cat"]:
        assert words[2] == "|", f"unsupported pipeline: {command}"
        stdin = (cwd / words[1]).read_bytes()
        words = words[3:]
    head: int | None = None
    if "|" in words:
        at = words.index("|")
        assert words[at + 1:at + 3] == ["head", "-n"] and len(words) == at + 4, command
        head = int(words[at + 3])
        words = words[:at]
    if "<" in words:
        at = words.index("<")
        stdin = (cwd / words[at + 1]).read_bytes()
        words = words[:at] + words[at + 2:]
    assert words[0] == "cumtool", f"unsupported command: {command}"
    result = invoke(*words[1:], input=stdin)
    out = result.stdout
    if head is not None:
        out = "".join(out.splitlines(keepends=True)[:head])
    return Outcome(out + result.stderr, result.exit_code)


def _lines(text: str) -> list[str]:
    """Compare line by line, ignoring trailing blanks (rich pads captions with spaces;
    editors strip them in README)."""
    lines = [line.rstrip() for line in text.splitlines()]
    while lines and not lines[-1]:
        lines.pop()
    return lines


@pytest.fixture
def workdir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / "sample_data").symlink_to(SAMPLE_DATA, target_is_directory=True)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("COLUMNS", "80")  # the width of the tables shown in README
    for name in ("FORCE_COLOR", "NO_COLOR", "TTY_COMPATIBLE", "TTY_INTERACTIVE"):
        monkeypatch.delenv(name, raising=False)
    return tmp_path


def run_block(block: Block, invoke: Invoke, cwd: Path) -> list[tuple[Step, Outcome]]:
    steps = console_steps(block.body)
    done: list[tuple[Step, Outcome]] = []
    last: Outcome | None = None
    for step in steps:
        if step.command == "echo $?":
            assert last is not None, "echo $? needs a command before it"
            assert "|" not in done[-1][0].command, "after a pipe, $? is the last command's"
            outcome = Outcome(f"{last.exit_code}\n", 0)
        else:
            outcome = run_command(step.command, invoke, cwd)
        done.append((step, outcome))
        last = outcome
    return done


@pytest.mark.parametrize(
    "block", [pytest.param(b, id=_block_id(b)) for b in CONSOLE_BLOCKS])
def test_console_example_prints_what_readme_shows(block: Block, invoke, workdir: Path
                                                  ) -> None:
    done = run_block(block, invoke, workdir)
    for number, (step, outcome) in enumerate(done):
        assert _lines(outcome.text) == _lines("\n".join(step.expected)), (
            f"{block.where}: `{step.command}` printed:\n{outcome.text}\n"
            "(after a deliberate change: python tests/test_readme.py --update)")
        status_shown = number + 1 < len(done) and done[number + 1][0].command == "echo $?"
        if not status_shown and step.command != "echo $?":
            assert outcome.exit_code == 0, (
                f"{block.where}: `{step.command}` exited {outcome.exit_code}; "
                "show the status with `$ echo $?` if the failure is the point")


@pytest.mark.parametrize(
    "block", [pytest.param(b, id=_block_id(b)) for b in PYCON_BLOCKS])
def test_python_api_example_prints_what_readme_shows(block: Block, workdir: Path) -> None:
    parser = doctest.DocTestParser()
    test = parser.get_doctest(block.body, {}, block.where, str(block.page), block.line - 1)
    assert test.examples, "a pycon block without examples"
    runner = doctest.DocTestRunner(optionflags=doctest.NORMALIZE_WHITESPACE)
    report: list[str] = []
    result = runner.run(test, out=report.append)
    assert result.failed == 0, "".join(report)


def test_readme_has_worked_examples_for_every_op_and_axis() -> None:
    commands = [step.command for block in README_CONSOLE_BLOCKS
                for step in console_steps(block.body)]
    for op in ("cumsum", "cumprod", "cummax", "cummin", "logcumsumexp"):
        assert any(f"cumtool {op} " in c for c in commands), op
    for flag in ("--axis columns", "--axis 1", "--axis -1", "--dtype", "--indices",
                 "--skipna", "--overflow wrap", "--to table", ".npy", ".parquet", ".tsv",
                 ".csv.gz"):
        assert any(flag in c for c in commands), flag


@pytest.mark.parametrize("op", [pytest.param(op, id=op) for op in OPS])
def test_readme_documents_every_option(op: str) -> None:
    """Each option is in the Usage table, or (the table options) in its own section."""
    command = main.get_command(click.Context(main), op)
    assert command is not None
    for param in command.params:
        for name in param.opts:
            if name.startswith("--"):
                assert re.search(rf"(?<![\w-]){re.escape(name)}(?![\w-])", TEXT), (
                    f"README does not mention {name}")


def test_quick_start_is_exactly_two_commands() -> None:
    section = TEXT.split("\n## Quick start\n", 1)[1].split("\n## ", 1)[0]
    blocks = fenced_blocks(section)
    assert len(blocks) == 1
    assert blocks[0].body.splitlines() == QUICK_START_COMMANDS


def test_quick_start_command_runs_on_the_sample(invoke, workdir: Path) -> None:
    words = shlex.split(QUICK_START_COMMANDS[0].split("&&", 1)[1])
    result = invoke(*words[1:])
    assert result.exit_code == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0] == "date,store,units,revenue"
    assert len(lines) == len((SAMPLE_DATA / "daily_sales.csv").read_text().splitlines())


@pytest.mark.parametrize("op", [pytest.param(op, id=op) for op in OPS])
def test_help_examples_run_on_the_sample_files(op: str, invoke, workdir: Path
                                               ) -> None:
    words = shlex.split(REGISTRY[op].example)
    assert words[:2] == ["cumtool", op]
    result = invoke(*words[1:])
    assert result.exit_code == 0, result.stderr
    assert result.stderr == ""
    if "-o" in words:
        assert os.path.getsize(workdir / words[words.index("-o") + 1]) > 0
    else:
        assert result.stdout.count("\n") >= 2


def update_readme() -> None:
    """Rewrite the output of every console block of every page with what the commands
    print now. Review `git diff README.md docs/` afterwards: a changed number may be a bug,
    not news."""
    import tempfile

    from click.testing import CliRunner

    os.environ["COLUMNS"] = "80"
    runner = CliRunner()

    def invoke(*args: str, input: bytes | None = None) -> Result:
        return runner.invoke(main, list(args), input=input, catch_exceptions=False)

    for page in PAGES:
        text = page.read_text(encoding="utf-8")
        pieces, position = [], 0
        for match in FENCE.finditer(text):
            if match["lang"] != "console":
                continue
            with tempfile.TemporaryDirectory() as directory:
                cwd = Path(directory)
                (cwd / "sample_data").symlink_to(SAMPLE_DATA, target_is_directory=True)
                previous = os.getcwd()
                os.chdir(cwd)
                try:
                    done = run_block(Block("console", 0, match["body"], page), invoke, cwd)
                finally:
                    os.chdir(previous)
            body = "".join(f"$ {step.command}\n"
                           + "".join(f"{line}\n" for line in _lines(o.text))
                           for step, o in done)
            pieces.append(text[position:match.start("body")] + body)
            position = match.end("body")
        new = "".join(pieces) + text[position:]
        if new != text:
            page.write_text(new, encoding="utf-8")
            print(f"rewrote {page.relative_to(REPO)}")


if __name__ == "__main__":  # python tests/test_readme.py --update
    if sys.argv[1:] != ["--update"]:
        sys.exit("usage: python tests/test_readme.py --update")
    update_readme()
