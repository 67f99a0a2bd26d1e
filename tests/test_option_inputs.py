"""Which input formats honour each option: declared once, with the option (Option.inputs in
cumtool/options.py and cumtool/ops), and one check derived from that, so that no reader
ignores an option it was given. An input that does not honour one refuses it by name
before it is read, with one message: `Error: --na is for CSV and TSV input; t.parquet is
read as parquet` (exit status 2), whether the format is known by --from, by the name, by
the first bytes (standard input, a name without an extension) or is one file of a
dataset's; and every input that does honour it still runs with it."""

from __future__ import annotations

import dataclasses
import importlib.util
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from cumtool.errors import UsageError
from cumtool.formats.registry import INPUT_FORMATS, INPUT_GROUPS
from cumtool.ops import OPTIONS
from cumtool.ops.decl import Option
from cumtool.options import BY_FIELD, GENERAL, inputs_of, refuse_unread
from cumtool.request import Request

# How each group of input formats is said in a refusal (written out here, not derived:
# this is what the user reads).
SAID = {"text": "CSV and TSV input", "lines": "CSV, TSV and JSONL input",
        "spreadsheets": "spreadsheets (.xlsx, .xls, .ods)", "tables": "tables, not arrays"}
MEMBERS = {"text": ("csv", "tsv"), "lines": ("csv", "tsv", "jsonl"),
           "spreadsheets": ("xlsx", "xls", "ods"),
           "tables": ("csv", "tsv", "parquet", "jsonl", "arrow", "arrows", "xlsx", "xls",
                      "ods")}
# Said after the refusal where another option does what the user may have meant.
TAILS = {"--encoding": " (for the output's encoding: --out-encoding)",
         "--decimal-comma": " (for numbers written 1,5: --out-decimal comma)"}

# Every option some input format does not honour, as typed: (the op, its arguments with
# what they need, the option as the refusal names it, the group it is declared for).
# tests/test_option_inputs.py::test_each_option_some_input_refuses_is_run_here keeps
# this list whole.
STATE = "{tmp}/run.state"
REFUSED: dict[str, tuple[str, tuple[str, ...], str, str]] = {
    "state": ("cumsum", ("--state", STATE), "--state", "tables"),
    "growing": ("cumsum", ("--state", STATE, "--run-id", "r1", "--growing"), "--growing",
                "lines"),
    "filename_column": ("cumsum", ("--filename-column", "file"), "--filename-column",
                        "tables"),
    "sheet": ("cumsum", ("--sheet", "1"), "--sheet", "spreadsheets"),
    "columns": ("cumsum", ("-c", "a"), "-c", "tables"),
    "exclude": ("cumsum", ("--exclude", "k"), "--exclude", "tables"),
    "only_scanned": ("cumsum", ("--only-scanned",), "--only-scanned", "tables"),
    "delimiter": ("cumsum", ("-d", ";"), "--delimiter", "text"),
    "na": ("cumsum", ("--na", "-999"), "--na", "text"),
    "encoding": ("cumsum", ("--encoding", "latin-1"), "--encoding", "text"),
    "decimal_comma": ("cumsum", ("--decimal-comma",), "--decimal-comma", "text"),
    "comment": ("cumsum", ("--comment", "#"), "--comment", "text"),
    "ragged": ("cumsum", ("--ragged",), "--ragged", "text"),
    "by": ("cumsum", ("--by", "k"), "--by", "tables"),
    "reset": ("cumsum", ("--reset", "a"), "--reset", "tables"),
    "period": ("cumsum", ("--period", "month", "--time", "k"), "--period", "tables"),
    "share": ("cumsum", ("--share",), "--share", "tables"),
    "keep": ("cumsum", ("--keep",), "--keep", "tables"),
    "decimal": ("cumsum", ("--decimal",), "--decimal", "text"),
    "max_record_size": ("cumsum", ("--max-record-size", "1M"), "--max-record-size", "lines"),
    "line_buffered": ("cumsum", ("--line-buffered",), "--line-buffered", "text"),
    "times": ("ewma", ("--times", "k", "--halflife", "2 days"), "--times", "tables"),
}
# Request fields no flag sets, which only cumtool itself gives (engine.run's rerun).
NOT_TYPED = ("widen",)
# What else each option needs, refused first where the format does not honour that too.
NEEDS = {"growing": "state"}


def _declared(name: str) -> Option:
    return BY_FIELD[name] if name in BY_FIELD else OPTIONS[f"--{name}"]


# The declarations ---------------------------------------------------------------------


def test_every_option_declares_the_inputs_it_is_for() -> None:
    """A general option says which input formats honour it (a group of
    formats/registry.INPUT_GROUPS, or format names); left out, no input honours it."""
    for declared in GENERAL:
        assert declared.inputs is not None, (
            f"{declared.name}: declare inputs= in cumtool/options.py: 'all', a group of "
            f"{sorted(INPUT_GROUPS)}, or the input formats that honour it")
        if isinstance(declared.inputs, str):
            assert declared.inputs in INPUT_GROUPS, declared.name
        else:
            assert declared.inputs and set(declared.inputs) <= set(INPUT_FORMATS), declared.name
        assert not declared.elsewhere or declared.inputs != "all", declared.name
    for declared in OPTIONS.values():  # an op's: None is a kernel's parameter, read anywhere
        assert declared.inputs is None or declared.inputs in INPUT_GROUPS, declared.flag


def test_an_option_that_does_not_say_is_honoured_by_no_input() -> None:
    forgotten = Option("--example-flag", help="an example")
    assert inputs_of(forgotten) == ()
    with pytest.raises(UsageError) as refused:
        refuse_unread([forgotten], "csv", "in.csv")
    assert refused.value.cli_message() == ("--example-flag is for no input; in.csv is read "
                                           "as csv")
    keep = dataclasses.replace(BY_FIELD["keep"], inputs=None)
    assert inputs_of(keep) == ()
    assert inputs_of(OPTIONS["--span"]) == INPUT_FORMATS  # a kernel's parameter


def test_the_groups_are_the_formats_as_declared() -> None:
    assert {name: INPUT_GROUPS[name][0] for name in SAID} == SAID
    assert {name: INPUT_GROUPS[name][1] for name in MEMBERS} == MEMBERS
    assert INPUT_GROUPS["all"][1] == INPUT_FORMATS


def test_each_option_some_input_refuses_is_run_here() -> None:
    """A new option declared for fewer than every input gets a row in REFUSED, so the
    command line is run with it on each input that refuses it."""
    restricted = {d.name for d in (*GENERAL, *OPTIONS.values())
                  if set(inputs_of(d)) != set(INPUT_FORMATS)}
    assert restricted == set(REFUSED) | set(NOT_TYPED)
    for name, (_, _, _, group) in REFUSED.items():
        assert _declared(name).inputs == group, name


# The command line on each input -------------------------------------------------------


def _table() -> pa.Table:
    return pa.table({"k": ["x", "y", "x"], "a": [1, 2, 3]})


def _write_ipc(path: Path, stream: bool) -> None:
    table = _table()
    with pa.OSFile(str(path), "wb") as sink:
        opened = pa.ipc.new_stream if stream else pa.ipc.new_file
        with opened(sink, table.schema) as writer:
            writer.write_table(table)


def _write_xlsx(path: Path) -> None:
    import openpyxl

    book = openpyxl.Workbook()
    sheet = book.active
    for row in [("k", "a"), ("x", 1), ("y", 2), ("x", 3)]:
        sheet.append(row)
    book.save(path)


WRITERS: dict[str, Callable[[Path], object]] = {
    "npy": lambda path: np.save(path, np.arange(6.0).reshape(3, 2)),
    "parquet": lambda path: pq.write_table(_table(), path),
    "arrow": lambda path: _write_ipc(path, stream=False),
    "arrows": lambda path: _write_ipc(path, stream=True),
    "jsonl": lambda path: path.write_text('{"k":"x","a":1}\n{"k":"y","a":2}\n'),
    "xlsx": _write_xlsx,
    "csv": lambda path: path.write_text("k,a\nx,1\ny,2\n"),
}
EXTENSION = {"arrows": "arrows", "npy": "npy"}
_NO_OPENPYXL = importlib.util.find_spec("openpyxl") is None


def _format_param(fmt: str) -> Any:
    if fmt == "xlsx":
        return pytest.param(fmt, id=fmt, marks=pytest.mark.skipif(
            _NO_OPENPYXL, reason="openpyxl is not installed: no .xlsx to read"))
    return pytest.param(fmt, id=fmt)


def _cases(stdin: bool) -> list[Any]:
    cases = []
    for name, (_, _, _, group) in REFUSED.items():
        for fmt in WRITERS:
            if fmt in MEMBERS[group]:
                continue
            needed = NEEDS.get(name)
            if needed is not None and fmt not in MEMBERS[REFUSED[needed][3]]:
                continue  # what it needs is refused first (its own case)
            if stdin and name in ("state", "growing", "filename_column"):
                continue  # standard input: refused for their own reasons (test_datasets)
            marks = _format_param(fmt).marks
            cases.append(pytest.param(name, fmt, id=f"{name}-{fmt}", marks=marks))
    return cases


def _file(tmp_path: Path, fmt: str) -> Path:
    path = tmp_path / f"t.{EXTENSION.get(fmt, fmt)}"
    WRITERS[fmt](path)
    return path


def _message(name: str, fmt: str, where: str) -> str:
    _, _, spelled, group = REFUSED[name]
    return (f"Error: {spelled} is for {SAID[group]}; {where} is read as {fmt}"
            f"{TAILS.get(spelled, '')}\n")


def _args(name: str, tmp_path: Path) -> tuple[str, list[str]]:
    op, args, _, _ = REFUSED[name]
    return op, [arg.format(tmp=tmp_path) for arg in args]


@pytest.mark.parametrize(("name", "fmt"), _cases(stdin=False))
def test_a_named_input_refuses_what_its_format_does_not_honour(
        invoke: Any, tmp_path: Path, name: str, fmt: str) -> None:
    path = _file(tmp_path, fmt)
    op, args = _args(name, tmp_path)
    out = tmp_path / "out.csv"
    result = invoke(op, str(path), *args, "-o", str(out))
    assert result.exit_code == 2, result.stderr
    assert result.stderr == _message(name, fmt, str(path))
    assert not out.exists()


@pytest.mark.parametrize(("name", "fmt"), _cases(stdin=True))
def test_standard_input_refuses_what_its_format_does_not_honour(
        invoke: Any, tmp_path: Path, name: str, fmt: str) -> None:
    """Known by its first bytes only, once it is opened: the same refusal."""
    data = _file(tmp_path, fmt).read_bytes()
    op, args = _args(name, tmp_path)
    result = invoke(op, *args, "--to", "csv", input=data)
    assert result.exit_code == 2, result.stderr
    assert result.stderr == _message(name, fmt, "standard input")
    assert result.stdout_bytes == b""


@pytest.mark.parametrize("fmt", [_format_param(f) for f in ("npy", "parquet", "jsonl")])
def test_a_name_without_its_extension_is_refused_by_its_bytes(
        invoke: Any, tmp_path: Path, fmt: str) -> None:
    path = tmp_path / "data"
    path.write_bytes(_file(tmp_path, fmt).read_bytes())
    result = invoke("cumsum", str(path), "--na", "-999", "--to", "csv")
    assert result.exit_code == 2, result.stderr
    assert result.stderr == _message("na", fmt, str(path))


def test_from_says_the_format(invoke: Any, tmp_path: Path) -> None:
    path = tmp_path / "data.txt"
    path.write_text('{"a":1}\n')
    result = invoke("cumsum", str(path), "--from", "jsonl", "-d", ";")
    assert result.exit_code == 2
    assert result.stderr == _message("delimiter", "jsonl", str(path))


def test_from_says_the_format_of_standard_input(invoke: Any) -> None:
    result = invoke("cumsum", "--from", "parquet", "--na", "x", input=b"")
    assert result.exit_code == 2
    assert result.stderr == _message("na", "parquet", "standard input")


def test_each_file_of_a_dataset_is_checked(invoke: Any, tmp_path: Path) -> None:
    """A folder, a glob, several inputs: the first whose format does not honour it is
    named, before any is read."""
    folder = tmp_path / "parts"
    folder.mkdir()
    (folder / "a.csv").write_text("a\n1\n")
    pq.write_table(pa.table({"a": [2]}), folder / "b.parquet")
    for given in ([str(folder)], [str(folder / "*.parquet")],
                  [str(folder / "a.csv"), str(folder / "b.parquet")]):
        out = tmp_path / "out.csv"
        result = invoke("cumsum", *given, "--na", "-999", "-o", str(out))
        assert result.exit_code == 2, result.stderr
        where = given[-1] if "*" in given[-1] or len(given) > 1 else str(folder / "b.parquet")
        assert result.stderr == _message("na", "parquet", where), given
        assert not out.exists()


def test_the_dask_engine_refuses_before_it_starts() -> None:
    request = Request(op="cumsum", input="in.parquet", engine="dask", na=("-999",))
    with pytest.raises(UsageError) as refused:
        request.check()
    assert refused.value.cli_message() == ("--na is for CSV and TSV input; in.parquet is "
                                           "read as parquet")


def test_the_api_reads_a_file_with_no_option_to_refuse(tmp_path: Path) -> None:
    """cumtool.scan takes no reader options: a file of any format opens as on the CLI."""
    import cumtool

    for fmt in ("npy", "parquet", "jsonl", "arrow"):
        cumtool.scan(_file(tmp_path, fmt), "cumsum")


def test_a_terminal_is_line_buffered_by_cumtool_not_by_the_user(monkeypatch: Any) -> None:
    """The CLI line-buffers standard input typed on a terminal (cli._run): no option the
    user gave, so JSON Lines typed there is not refused for it; a file still is."""
    monkeypatch.setattr("cumtool.request._stdin_is_terminal", lambda: True)
    typed = Request(op="cumsum", input="-", line_buffered=True)
    typed.refuse_unread("jsonl", "standard input")
    with pytest.raises(UsageError) as refused:
        dataclasses.replace(typed, input="t.jsonl").refuse_unread("jsonl", "t.jsonl")
    assert refused.value.cli_message() == ("--line-buffered is for CSV and TSV input; "
                                           "t.jsonl is read as jsonl")
    monkeypatch.setattr("cumtool.request._stdin_is_terminal", lambda: False)
    with pytest.raises(UsageError) as refused:
        typed.refuse_unread("jsonl", "standard input")
    assert refused.value.cli_message().startswith("--line-buffered is for CSV and TSV")


def test_a_default_given_again_is_no_option_given(invoke: Any, tmp_path: Path) -> None:
    """Given means set away from its default: --overflow error, --rows 20 on an array."""
    path = _file(tmp_path, "npy")
    result = invoke("cumsum", str(path), "--overflow", "error", "-n", "20", "--to", "csv")
    assert result.exit_code == 0, result.stderr


# What each input honours still runs -----------------------------------------------------


def _ok(result: Any) -> bytes:
    assert result.exit_code == 0, result.stderr
    return bytes(result.stdout_bytes)


def test_na_on_csv(invoke: Any, write_file: Any) -> None:
    path = write_file("t.csv", "a\n1\n-999\n3\n")
    # A missing cell alone on its line is written "" (a blank line is no row).
    assert _ok(invoke("cumsum", str(path), "--na", "-999")) == b'a\n1\n""\n4\n'


def test_delimiter_on_tsv(invoke: Any, write_file: Any) -> None:
    path = write_file("t.tsv", "a;b\n1;2\n3;4\n")
    assert _ok(invoke("cumsum", str(path), "-d", ";", "--to", "csv")) == b"a,b\n1,2\n4,6\n"


def test_max_record_size_on_json_lines(invoke: Any, write_file: Any) -> None:
    path = write_file("t.jsonl", '{"a":1}\n{"a":2}\n')
    assert _ok(invoke("cumsum", str(path), "--max-record-size", "1M", "--to", "csv")) == (
        b"a\n1\n3\n")


def test_growing_on_json_lines(invoke: Any, tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    path.write_text('{"a":1}\n')
    state = str(tmp_path / "run.state")
    args = ("--state", state, "--growing", "--to", "csv")
    assert _ok(invoke("cumsum", str(path), *args, "--run-id", "1")) == b"a\n1\n"
    with path.open("a") as stream:
        stream.write('{"a":2}\n')
    assert _ok(invoke("cumsum", str(path), *args, "--run-id", "2")) == b"a\n3\n"


def test_encoding_and_decimal_comma_on_csv(invoke: Any, write_file: Any) -> None:
    path = write_file("t.csv", "n\xe9;x\n1,5;a\n2,25;b\n".encode("latin-1"))
    assert _ok(invoke("cumsum", str(path), "--encoding", "latin-1", "--decimal-comma",
                      "-d", ";")) == "n\xe9;x\n1,5;a\n3,75;b\n".encode("latin-1")


def test_what_the_refusals_name_instead_works_on_parquet(invoke: Any, tmp_path: Path) -> None:
    path = tmp_path / "t.parquet"
    pq.write_table(pa.table({"n\xe9": [1.5, 2.25]}), path)
    assert _ok(invoke("cumsum", str(path), "--out-encoding", "latin-1", "--out-decimal",
                      "comma", "--to", "csv")) == "n\xe9\n1,5\n3,75\n".encode("latin-1")


def test_options_of_every_input_on_typed_inputs(invoke: Any, tmp_path: Path) -> None:
    """The output's options, --no-header among them, on inputs that are not text."""
    for fmt in ("parquet", "jsonl", "arrow", "arrows"):
        path = _file(tmp_path, fmt)
        assert _ok(invoke("cumsum", str(path), "--no-header", "--na-rep", "-", "-c", "a",
                          "--to", "csv")).startswith(b"x,1\ny,3\n"), fmt
    assert _ok(invoke("cumsum", str(_file(tmp_path, "npy")), "--no-header", "--to",
                      "csv")) == b"0.0,1.0\n2.0,4.0\n6.0,9.0\n"


@pytest.mark.skipif(_NO_OPENPYXL, reason="openpyxl is not installed: no .xlsx to read")
def test_sheet_and_table_options_on_a_spreadsheet(invoke: Any, tmp_path: Path) -> None:
    pytest.importorskip("fastexcel", reason="fastexcel (the excel extra) reads spreadsheets")
    path = _file(tmp_path, "xlsx")
    assert _ok(invoke("cumsum", str(path), "--sheet", "1", "--by", "k", "--to", "csv")) == (
        b"k,a\nx,1\ny,2\nx,4\n")


_OUTPUT_TEXT = [("--na-rep", "NA"), ("--out-delimiter", ";"), ("--out-decimal", "comma"),
                ("--out-encoding", "latin-1")]


@pytest.mark.parametrize(("flag", "value"), _OUTPUT_TEXT)
@pytest.mark.parametrize("to", ["parquet", "jsonl", "arrow"])
def test_an_output_text_option_is_refused_by_a_format_that_does_not_write_text(
        invoke: Any, write_file: Any, tmp_path: Path, flag: str, value: str,
        to: str) -> None:
    """They were ignored without a word (options.md: "none ignores it")."""
    path = write_file("a.csv", "a,b\n1,\n2,3\n")
    target = tmp_path / f"out.{to}"
    result = invoke("cumsum", str(path), flag, value, "-o", str(target))
    assert (result.exit_code, result.stderr) == (
        2, f"Error: {flag} is for csv and tsv output; this run writes {to}\n")
    assert not target.exists()


def test_output_text_options_are_kept_for_text_and_for_the_terminals_views(
        invoke: Any, write_file: Any, tmp_path: Path) -> None:
    path = write_file("a.csv", "a,b\n1,\n2,3\n")
    assert invoke("cumsum", str(path), "--na-rep", "NA", "--to", "tsv").stdout == (
        "a\tb\n1\tNA\n3\t3\n")
    table = invoke("cumsum", str(path), "--na-rep", "NA", "--to", "table")
    assert (table.exit_code, table.stderr) == (0, "")
    arrays = tmp_path / "a.npy"
    np.save(arrays, np.arange(3.0))
    result = invoke("cumsum", str(arrays), "--na-rep", "NA", "-o", str(tmp_path / "b.npy"))
    assert (result.exit_code, result.stderr) == (
        2, "Error: --na-rep is for csv and tsv output; this run writes npy\n")
