"""Very wide CSV/TSV (cumtool/formats/csv/wide.py): read, scanned and written column group by
column group. The output must be the narrow path's, byte for byte: the differential
tests lower the width threshold and the group size so that small random tables take the
wide path, and compare with the same run on the narrow path."""

from __future__ import annotations

import gzip
import os
import select
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from click.testing import Result
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from cumtool.formats.csv import fast as fastcsv
from cumtool.formats.csv import wide
from tests.helpers import ok
from tests.test_hostile import BOUND, run_capped

# As the other property tests: CUMTOOL_HYPOTHESIS_PROFILE=cumtool-deep for a long run.
EXAMPLES = 1500 if os.environ.get("CUMTOOL_HYPOTHESIS_PROFILE") == "cumtool-deep" else 150


@pytest.fixture(autouse=True)
def _no_small_path(monkeypatch: pytest.MonkeyPatch) -> None:
    """These tables are tiny stand-ins for wide files (the threshold is lowered): they
    must reach the streaming readers, not the small-file path (cumtool/formats/csv/small.py)."""
    monkeypatch.setattr(fastcsv, "try_small", lambda request: (False, None))


def _both(invoke: Callable[..., Result], args: list[str], data: bytes,
          group: int = 2) -> tuple[Result, Result]:
    """The run on the narrow path, then on the wide path (every table of two or more
    columns is wide, in groups of `group` columns).

    The wide run must really be read by the wide reader (WideSource, whose `layout` the
    engine dispatches on), whether it succeeds or fails: an error the CSV reader raises
    before it hands the input over (an empty file, a NUL byte or a stray quote in the
    first chunk) would compare the narrow path with itself. Only a usage error (exit
    status 2, refused before any input is read) may stop earlier."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(wide, "WIDE_COLUMNS", 1 << 40)
        reference = invoke(*args, input=data)
    read: list[bool] = []

    class Spied(wide.WideSource):
        def __init__(self, *arguments: Any, **keywords: Any) -> None:
            read.append(self.layout == "wide")
            super().__init__(*arguments, **keywords)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(wide, "WIDE_COLUMNS", 1)
        patch.setattr(wide, "GROUP_COLUMNS", group)
        patch.setattr(wide, "WideSource", Spied)
        result = invoke(*args, input=data)
    if read != [True] and result.exit_code != 2:
        raise AssertionError(f"the run did not take the wide path (exit status "
                             f"{result.exit_code}: {result.stderr!r})")
    return reference, result


def _same(reference: Result, result: Result) -> None:
    """The same exit status and message, and on success the same bytes out (after a
    failure, how much already reached standard output depends on the writer thread)."""
    assert (result.exit_code, result.stderr) == (reference.exit_code, reference.stderr)
    if reference.exit_code == 0:
        assert result.stdout_bytes == reference.stdout_bytes


# Random tables -----------------------------------------------------------------------------

_TEXTS = st.sampled_from(["a", "b c", "x,y", 'say "hi"', "two\nlines", "tab\there", " ",
                          "w;z", "é", "N/A", "", "-"])
_MISSING = st.sampled_from(["", "NA", "null", '""', " "])


def _cell(kind: str) -> st.SearchStrategy[str]:
    if kind == "int":
        return st.integers(-1000, 1000).map(str)
    if kind == "big":  # overflows cumsum/cumprod int64 quickly
        return st.integers(2**61, 2**63 - 1).map(str)
    if kind == "float":
        return st.floats(-1e6, 1e6, allow_nan=False).map(lambda v: repr(round(v, 3)))
    if kind == "special":
        return st.sampled_from(["nan", "inf", "-inf", "1.5", "0.25", "-3"])
    if kind == "code":
        return st.sampled_from(["007", "012", "1", "099"])
    if kind == "bool":
        return st.sampled_from(["true", "false", "True"])
    if kind == "date":
        return st.sampled_from(["2024-01-31", "2023-12-01", "2025-06-15"])
    if kind == "comma":  # 1,5 with --decimal-comma
        return st.sampled_from(["1,5", "2", "-0,25", "10,125"])
    return _TEXTS


def _quoted(text: str, delimiter: str, force: bool) -> str:
    if force or any(c in text for c in (delimiter, '"', "\n", "\r")):
        return '"' + text.replace('"', '""') + '"'
    return text


@st.composite
def tables(draw: st.DrawFn, kinds: tuple[str, ...] = ("int", "big", "float", "special",
                                                       "code", "bool", "date", "text")
           ) -> tuple[bytes, str, int]:
    """A delimited table as bytes: random column kinds, missing cells, quoted cells,
    blank lines and CRLF endings; and its delimiter and width."""
    delimiter = draw(st.sampled_from([",", "\t", ";"]))
    width = draw(st.integers(2, 7))
    column_kinds = [draw(st.sampled_from(kinds)) for _ in range(width)]
    rows = draw(st.integers(0, 8))
    names = [draw(st.sampled_from(["a", "b", "a", "", "x y", "q,r", "n\"m", "k"]))
             + (str(i) if draw(st.booleans()) else "") for i in range(width)]
    ending = draw(st.sampled_from(["\n", "\r\n"]))
    lines = [delimiter.join(_quoted(n, delimiter, False) for n in names)]
    for _ in range(rows):
        cells = []
        for kind in column_kinds:
            if draw(st.integers(0, 9)) == 0:
                text = draw(_MISSING)
                cells.append(text if text == '""' else _quoted(text, delimiter, False))
            else:
                cells.append(_quoted(draw(_cell(kind)), delimiter, draw(st.integers(0, 9)) == 0))
        lines.append(delimiter.join(cells))
        if draw(st.integers(0, 12)) == 0:
            lines.append("")  # a blank line
    text = ending.join(lines) + (ending if draw(st.booleans()) else "")
    return text.encode(), delimiter, width


_OPTIONS = st.lists(st.sampled_from([
    ["--na-rep", "NA"], ["--na-rep", "-"], ["--na-rep", "N,A"], ["--na", "NA,-"], ["--skipna"],
    ["--exclusive"],
    ["--overflow", "wrap"], ["--dtype", "float64"], ["--batch-rows", "1"],
    ["--batch-rows", "3"], ["--only-scanned"], ["--decimal"], ["--no-header"],
    ["--exclude", "1"], ["-c", "2"], ["--out-delimiter", "|"], ["--to", "tsv"],
]), max_size=3, unique_by=lambda o: o[0])


def _args(op: str, delimiter: str, options: list[list[str]]) -> list[str]:
    args = [op, "-", "--from", "csv", "-d", delimiter, "-q"]
    for option in options:
        args += option
    if op in ("cummax", "cummin") and len(options) % 2:
        args.append("--indices")
    if op == "ewma":
        args += ["--alpha", "0.35"]
    return args


@pytest.mark.slow  # fuzz: `-m 'not slow'` leaves it out; the chosen cases below stay in
@settings(max_examples=EXAMPLES, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(table=tables(), op=st.sampled_from(["cumsum", "cumprod", "cummax", "cummin",
                                           "logcumsumexp", "cumcount", "cummean", "cumvar",
                                           "cumstd", "ewma", "diff", "cumnunique"]),
       options=_OPTIONS, group=st.integers(2, 4))
def test_the_wide_path_writes_what_the_narrow_path_writes(
        invoke: Callable[..., Result], table: tuple[bytes, str, int], op: str,
        options: list[list[str]], group: int) -> None:
    _wide_as_narrow(invoke, table, op, options, group)


def _wide_as_narrow(invoke: Callable[..., Result], table: tuple[bytes, str, int], op: str,
                    options: list[list[str]], group: int) -> None:
    data, delimiter, _width = table
    reference, result = _both(invoke, _args(op, delimiter, options), data, group)
    event(f"exit status {reference.exit_code}")
    _same(reference, result)


@pytest.mark.slow
@settings(max_examples=40, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(table=tables(kinds=("int", "comma", "text", "code")),
       op=st.sampled_from(["cumsum", "cummax"]))
def test_decimal_comma_on_the_wide_path(invoke: Callable[..., Result],
                                        table: tuple[bytes, str, int], op: str) -> None:
    data, delimiter, _width = table
    if delimiter == ",":
        data = data.replace(b",", b";")  # 1,5 needs another delimiter
        delimiter = ";"
    _same(*_both(invoke, _args(op, delimiter, [["--decimal-comma"]]), data))


@pytest.mark.slow
@settings(max_examples=30, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(table=tables(kinds=("date", "int", "text")), op=st.sampled_from(["cummax", "cummin"]))
def test_dates_named_with_c_on_the_wide_path(invoke: Callable[..., Result],
                                             table: tuple[bytes, str, int], op: str) -> None:
    data, delimiter, width = table
    columns = ",".join(str(i + 1) for i in range(width))  # dates too, where they judge so
    _same(*_both(invoke, _args(op, delimiter, [["-c", columns]]), data))


# Chosen cases -------------------------------------------------------------------------------

_QUOTED = (b'id,"name, full",v,"note"\n'
           b'1,"Smith, J",5,"said ""hi""\nand left"\n'
           b'2,,NA,""\n'
           b'\n'
           b'3,"x",7,plain\n')


@pytest.mark.parametrize("args", [
    ["cumsum"], ["cummax", "--indices"], ["cumsum", "--na-rep", "NA"],
    ["cumsum", "--only-scanned"], ["cumsum", "-c", "v"], ["cumsum", "--to", "tsv"],
    ["cumsum", "--only-scanned", "-c", "v"],
], ids=["cumsum", "indices", "na-rep", "only-scanned", "named", "tsv-out", "one-column-out"])
def test_quoted_cells_with_delimiters_and_newlines(invoke: Callable[..., Result],
                                                   args: list[str]) -> None:
    reference, result = _both(invoke, [*args, "-", "--from", "csv"], _QUOTED)
    ok(reference)
    _same(reference, result)


def test_a_wide_file_to_a_gzip_file_is_the_narrow_output(
        invoke: Callable[..., Result], tmp_path: Path) -> None:
    data = b"a,b,c\n1,x,2\n3,y,4\n"
    out = tmp_path / "out.csv.gz"
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(wide, "WIDE_COLUMNS", 2)
        ok(invoke("cumsum", "-", "--from", "csv", "-o", str(out), input=data))
    assert gzip.decompress(out.read_bytes()) == b"a,b,c\n1,x,2\n4,y,6\n"


def test_a_latin_1_file_comes_out_byte_for_byte(invoke: Callable[..., Result]) -> None:
    data = "x,name,y\n1,caf\xe9,2\n3,na\xefve,4\n".encode("latin-1")
    reference, result = _both(invoke, ["cumsum", "-", "--from", "csv", "--encoding",
                                       "latin-1"], data)
    assert ok(reference).stdout_bytes == "x,name,y\n1,caf\xe9,2\n4,na\xefve,6\n".encode(
        "latin-1")
    _same(reference, result)


def test_a_text_the_encoding_cannot_hold_is_the_narrow_paths_error(
        invoke: Callable[..., Result]) -> None:
    """--na-rep € in latin-1: one line naming the output, not a traceback."""
    reference, result = _both(invoke, ["cumsum", "-", "--from", "csv", "--encoding",
                                       "latin-1", "--na-rep", "€"], b"a,b,c\n1,,x\n2,3,y\n")
    assert (reference.exit_code, reference.stderr) == (
        1, "Error: cannot write standard output: '\u20ac' (U+20AC) cannot be written in "
           "latin-1, the output's encoding; choose one that has it (--out-encoding utf-8)\n")
    _same(reference, result)


@pytest.mark.parametrize("markers", ["NA,-999", "NA,nan", "NA,1.5"])
def test_missing_markers_that_are_numbers(invoke: Callable[..., Result], markers: str) -> None:
    """--na markers that read as numbers (-999, nan) are missing cells in every column,
    as on the narrow path (this raised NameError on the wide path)."""
    data = b"a,b,c\n1,-999,x\n-999,2.5,y\nnan,NA,z\n4,1.5,w\n"
    reference, result = _both(invoke, ["cumsum", "-", "--from", "csv", "--na", markers], data)
    assert ok(reference).stdout_bytes == {
        "NA,-999": b"a,b,c\n1.0,,x\n,2.5,y\nNaN,,z\nNaN,4.0,w\n",
        "NA,nan": b"a,b,c\n1,-999.0,x\n-998,-996.5,y\n,,z\n-994,-995.0,w\n",
        "NA,1.5": b"a,b,c\n1.0,-999.0,x\n-998.0,-996.5,y\nNaN,,z\nNaN,,w\n"}[markers]
    _same(reference, result)


def test_a_gzip_wide_input(invoke: Callable[..., Result], write_file: Any) -> None:
    path = write_file("in.csv.gz", gzip.compress(b"a,b,c\n1,x,2\n3,y,4\n"))
    reference, result = _both(invoke, ["cumsum", str(path), "-o", "-", "--to", "csv"], b"")
    assert ok(result).stdout_bytes == b"a,b,c\n1,x,2\n4,y,6\n"
    _same(reference, result)


def test_the_header_decides_the_path(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(wide, "WIDE_COLUMNS", 3)
    assert not wide.is_wide(b"a,b,c\n1,2,3\n", ",")
    assert wide.is_wide(b"a,b,c,d\n1,2,3,4\n", ",")
    # Delimiters inside quotes do not count; a quoted line end does not end the header.
    assert not wide.is_wide(b'"a,b,c",d\n1,2\n', ",")
    assert wide.is_wide(b'"a\nb",c,d,e\n1,2,3,4\n', ",")


_FEWER = "select at most 2 columns first (e.g. with xsv select or cut)"


@pytest.mark.parametrize("args, what, hint", [
    (["--by", "a"], "--by", _FEWER),
    (["--reset", "a"], "--reset", _FEWER),
    (["--keep"], "--keep", _FEWER),
    (["--reverse"], "--reverse", _FEWER),
    (["--axis", "columns"], "--axis columns", _FEWER),
    (["-o", "out.parquet"], "parquet output", "write csv or tsv (-o out.csv)"),
    (["--to", "npy"], "npy output", "write csv or tsv (-o out.csv)"),
    (["--state", "s.json"], "--state", _FEWER),
], ids=["by", "reset", "keep", "reverse", "axis", "parquet", "npy", "state"])
def test_options_that_need_whole_rows_are_refused_above_the_threshold(
        invoke: Callable[..., Result], monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
        args: list[str], what: str, hint: str) -> None:
    monkeypatch.chdir(tmp_path)
    data = b"a,b,c\n1,2,3\n0,5,6\n"
    monkeypatch.setattr(wide, "WIDE_COLUMNS", 2)
    result = invoke("cumsum", "-", "--from", "csv", *args, input=data)
    assert result.exit_code == 2, result.stderr
    assert result.stderr == (
        f"Error: standard input: 3 columns are more than 2, and {what} is not supported "
        f"on tables this wide (it needs whole rows in memory at once); {hint}\n")
    assert not (tmp_path / "out.parquet").exists()
    monkeypatch.setattr(wide, "WIDE_COLUMNS", 3)  # at the threshold: the narrow path
    assert invoke("cumsum", "-", "--from", "csv", *args, input=data).exit_code == 0


@pytest.mark.parametrize(("args", "what"), [
    (["ewma", "--times", "a", "--halflife", "1 day"], "--times"),  # an op's option
    (["cumsum", "--period", "month", "--time", "a"], "--period"),
])
def test_options_over_time_are_refused_by_name(invoke: Callable[..., Result],
                                               monkeypatch: pytest.MonkeyPatch,
                                               args: list[str], what: str) -> None:
    data = b"a,b,c\n2024-01-01,2,3\n2024-02-01,5,6\n"
    monkeypatch.setattr(wide, "WIDE_COLUMNS", 2)
    result = invoke(*args, "-", "--from", "csv", input=data)
    assert (result.exit_code, result.stderr) == (2, (
        f"Error: standard input: 3 columns are more than 2, and {what} is not supported on "
        f"tables this wide (it needs whole rows in memory at once); {_FEWER}\n"))
    monkeypatch.setattr(wide, "WIDE_COLUMNS", 3)  # at the threshold: the narrow path
    assert invoke(*args, "-", "--from", "csv", input=data).exit_code == 0


# A value for each option the wide path honours (Option.wide), given to a table that is
# wide (every table of two or more columns, in the test) and to the narrow path.
_HONOURED = {
    "dtype": ["-t", "float32"], "output": [], "from_format": ["--from", "csv"],
    "to_format": ["--to", "tsv"], "columns": ["-c", "x"], "exclude": ["--exclude", "y"],
    "only_scanned": ["--only-scanned"], "delimiter": ["-d", ","],
    "out_delimiter": ["--out-delimiter", ";"], "na": ["--na", "NA"],
    "na_rep": ["--na-rep", "X"], "encoding": ["--encoding", "latin-1"],
    "decimal_comma": [], "out_encoding": ["--out-encoding", "latin-1"],
    "out_decimal": ["--out-decimal", "comma"], "header": [], "comment": ["--comment", "#"],
    "ragged": ["--ragged"], "overflow": ["--overflow", "wrap"], "skipna": ["--skipna"],
    "exclusive": ["--exclusive"], "decimal": ["--decimal"], "notes": ["-q"],
    "threads": ["--threads", "2"], "batch_rows": ["--batch-rows", "2"],
    "max_record_size": ["--max-record-size", "1M"],
    # (with --comment: the run goes through, so that the note on y, empty in the first
    # row the types are judged from, is compared; the wide path reads its input before
    # it plans, so a run that fails on the comment line there says no note first)
    "line_buffered": ["--line-buffered", "--comment", "#"],
}
_HONOURED_DATA = (b"id,name,x,y,when\n1,a,1.5,NA,2024-01-01\n2,b c,-2,3,2024-01-02\n"
                  b"3,,4.25,5,2024-02-01\n# note\n4,NA,1e3,-7,2024-03-01\n")


def test_every_option_the_wide_path_honours_has_a_case_here() -> None:
    """A new option declared as honoured by the wide path gets a case in _HONOURED (the
    ones given as [] have tests of their own above: -o, --decimal-comma, --no-header)."""
    from cumtool.options import GENERAL

    declared = {o.name for o in GENERAL if o.flag and o.wide == "honours"}
    assert declared == set(_HONOURED)


@pytest.mark.parametrize("name", sorted(n for n, args in _HONOURED.items() if args))
def test_an_option_the_wide_path_honours_gives_the_narrow_paths_bytes(
        invoke: Callable[..., Result], name: str) -> None:
    reference, result = _both(invoke, ["cumsum", *_HONOURED[name]], _HONOURED_DATA)
    _same(reference, result)


def test_several_ops_are_refused_above_the_threshold(
        invoke: Callable[..., Result], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(wide, "WIDE_COLUMNS", 2)
    result = invoke("cumsum,cummax", "-", "--from", "csv", input=b"a,b,c\n1,2,3\n")
    assert result.exit_code == 2
    assert result.stderr.endswith("3 columns are more than 2, and several ops (cumsum,cummax) "
                                  "is not supported on tables this wide (it needs whole "
                                  "rows in memory at once); run one op at a time\n")


@pytest.mark.parametrize("args", [
    ["cummean", "--exclusive"], ["ewma", "--alpha", "0.5"],
    ["ewma", "--span", "3", "--no-adjust", "--exclusive"], ["cumvar", "--ddof", "0"],
    ["cumstd", "--exclusive"], ["cumcount", "--skipna"], ["diff"],
    ["cumsum", "--compensated"],
], ids=lambda args: "-".join(a.strip("-") for a in args))
def test_running_statistics_on_the_wide_path(invoke: Callable[..., Result],
                                             args: list[str]) -> None:
    # Their parameters reach the kernels, and a statistic of nothing stays missing.
    data = b"a,b,c\n1,2,3\n4,,6\n7,8,9\n"
    reference, result = _both(invoke, [args[0], "-", "--from", "csv", *args[1:]], data, 2)
    assert reference.exit_code == 0, reference.stderr
    _same(reference, result)


_CITIES = (b'id,city,n,day,price\n1,Oslo,3,2024-01-01,1.50\n2,NA,3,2024-01-02,1.5\n'
           b'3,Lima,,2024-01-01,2.25\n4,Oslo,4,,NA\n5,"",5,2024-01-03,nan\n')


@pytest.mark.parametrize("args", [
    [], ["-c", "city,n,day,price"], ["-c", "city,price", "--decimal"],
    ["-c", "n,price", "--skipna"], ["-c", "city", "--exclusive", "--only-scanned"],
    ["-c", "2,3", "--na", "Oslo"], ["--batch-rows", "2", "-c", "city,n"],
], ids=["numbers", "every-column", "decimal", "skipna", "exclusive-alone", "na", "batches"])
def test_cumnunique_on_the_wide_path(invoke: Callable[..., Result], args: list[str]) -> None:
    """Counted as on the narrow path: numbers, text (an NA marker a missing cell), dates
    and decimals, whichever group holds them (it was refused there as if the file were
    an array)."""
    reference, result = _both(invoke, ["cumnunique", "-", "--from", "csv", *args], _CITIES)
    assert ok(reference).stdout_bytes == {
        "-c city,n,day,price": b"id,city,n,day,price\n1,1,1,1,1\n2,,1,2,1\n3,2,,2,2\n"
                               b"4,2,2,,\n5,,3,3,3\n",
    }.get(" ".join(args), reference.stdout_bytes)
    _same(reference, result)


@pytest.mark.parametrize("extra", [["b.csv"], ["--filename-column", "file"]],
                         ids=["two-inputs", "filename-column"])
def test_a_wide_file_among_several_inputs_is_refused(
        invoke: Callable[..., Result], monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
        extra: list[str]) -> None:
    monkeypatch.chdir(tmp_path)
    for name in ("a.csv", "b.csv"):
        (tmp_path / name).write_bytes(b"a,b,c\n1,2,3\n")
    monkeypatch.setattr(wide, "WIDE_COLUMNS", 2)
    result = invoke("cumsum", "a.csv", *extra, "-o", "out.csv")
    assert result.exit_code == 2, result.stderr
    assert result.stderr == (
        "Error: a.csv: 3 columns are more than 2; a file this wide is read on its own, not "
        "with other inputs or --filename-column; give one file per run\n")
    assert not (tmp_path / "out.csv").exists()


@pytest.mark.parametrize("data, message", [
    (b"a,b,c\n1,2,3\n4,5\n", "Error: standard input: row 2 (line 3) has 2 fields, expected 3 like "
                             "the header; give --ragged to fill short rows with missing "
                             "cells\n"),
    (b"a,b,c\n1,2,3\n4\n", "Error: standard input: row 2 (line 3) has 1 field, expected 3 like "
                          "the header; give --ragged to fill short rows with missing "
                          "cells\n"),
    # Past the first chunk, which the columns' types are judged from.
    (b"a,b,c\n" + b"1,2,3\n" * 200_000 + b"4,x,6\n",
     "Error: standard input: row 200001 (line 200002), column 'b': 'x' is not an integer "
     "like the first rows; if 'x' means a missing cell, pass "
     "--na 'NA,N/A,n/a,NULL,null,None,<NA>,#N/A,x'\n"),
    (b"a,b,c\n9223372036854775807,2,3\n1,5,6\n", None),
    (b"a,b,c\n1,2,3\n4,\xff,6\n", "Error: standard input: row 2 (line 3), column 'b': "
                                  "bytes ff are "
                                  "not UTF-8; pass --encoding with the file's encoding "
                                  "(latin-1, cp1252, ...)\n"),
    # Blank lines, newlines and delimiters inside quotes are not rows or fields; lines
    # count every line.
    (b'a,b,c\n\n\n1,"x\ny",3\n4,"p,q",\xff\n', "Error: standard input: row 2 (line 6), "
     "column 'c': "
     "bytes ff are not UTF-8; pass --encoding with the file's encoding (latin-1, cp1252, "
     "...)\n"),
    # Past the first chunk: in the first, the CSV reader finds it before the handover.
    (b"a,b,c\n" + b"1,2,3\n" * 200_000 + b'4,"x\ny",6\n\n7,\x00,9\n',
     "Error: standard input: cannot read as csv: row 200002 (line 200005) holds a NUL byte "
     "(a binary file?)\n"),
], ids=["ragged", "ragged-one-field", "bad-number", "overflow", "not-utf8",
        "not-utf8-after-quotes", "nul"])
def test_errors_name_the_row_and_column_as_on_the_narrow_path(
        invoke: Callable[..., Result], data: bytes, message: str | None) -> None:
    reference, result = _both(invoke, ["cumsum", "-", "--from", "csv"], data)
    assert reference.exit_code == 1
    if message is not None:
        assert result.stderr == message
    _same(reference, result)


def test_a_refused_column_names_its_culprit_as_on_the_narrow_path(
        invoke: Callable[..., Result]) -> None:
    data = b"a,b,c\n1,x,2\n\n3,4,5\n"
    reference, result = _both(invoke, ["cumsum", "-", "--from", "csv", "-c", "b"], data)
    assert reference.stderr == ("Error: standard input: column 'b' is not numeric: row 1 "
                                "(line 2) holds 'x'; numeric columns: a, c\n")
    _same(reference, result)


@pytest.mark.parametrize(("args", "data", "message"), [
    (["cumnunique", "-c", "4", "--dtype", "float64"], b"a,a,b,b\n1,2,x,y\n3,4,z,y\n",
     "column 'b' (column 4) holds text, which cumnunique compares as written: leave "
     "--dtype out"),
    (["cummax", "-c", "3", "--dtype", "float64"],
     b"a,a,b,b\n1,2,2024-01-01,1.5\n3,4,2024-01-02,1.50\n",
     "standard input: column 'b' (column 3) holds dates: scan it down the rows, without "
     "--dtype"),
], ids=["cumnunique-text", "dates"])
def test_a_repeated_name_is_numbered_by_its_place_in_the_whole_header(
        invoke: Callable[..., Result], args: list[str], data: bytes, message: str) -> None:
    """A group's own plan numbered a repeated name by its place in the group (column 2,
    column 1)."""
    reference, result = _both(invoke, [args[0], "-", "--from", "csv", *args[1:]], data, 2)
    assert reference.stderr == f"Error: {message}\n"
    _same(reference, result)


def test_the_first_overflow_in_file_order_wins_across_groups(
        invoke: Callable[..., Result]) -> None:
    big = b"9223372036854775807"
    # Group (a, b) overflows at row 3, group (c, d) at row 2.
    data = b"a,b,c,d\n0,0," + big + b",0\n" + big + b",0," + big + b",0\n1,0,1,1\n"
    reference, result = _both(invoke, ["cumsum", "-", "--from", "csv"], data)
    assert "column 'c', row 2 (line 3)" in reference.stderr
    _same(reference, result)


# Memory and time on really wide files (subprocesses) ----------------------------------------

def _wide_csv(path: Path, width: int, rows: int = 3) -> None:
    """The shape of benchmarks/hostile.py's wide inputs."""
    with open(path, "w") as out:
        out.write(",".join(f"c{i}" for i in range(width)) + "\n")
        for row in range(rows):
            out.write(",".join(str((row + i) % 7) for i in range(width)) + "\n")


@pytest.mark.slow
def test_100_000_columns_stay_within_the_bound(tmp_path: Path) -> None:
    _wide_csv(tmp_path / "w100.csv", 100_000)
    report = run_capped(["cumsum", "w100.csv", "-o", "out.csv"], tmp_path)
    assert report["status"] == 0, report
    assert report["peak"] < BOUND, report
    lines = (tmp_path / "out.csv").read_text().splitlines()
    assert len(lines) == 4
    assert lines[0].split(",")[-1] == "c99999"
    last = lines[3].split(",")
    assert len(last) == 100_000
    assert last[:3] == ["3", "6", "9"]  # (0+1+2), (1+2+3), (2+3+4) mod 7 sums
    assert last[-1] == str(sum((row + 99_999) % 7 for row in range(3)))


@pytest.mark.slow
def test_a_wide_file_on_standard_input_within_the_bound(tmp_path: Path) -> None:
    _wide_csv(tmp_path / "w.csv", 40_000, rows=20)
    report = run_capped([], tmp_path, shell=f"cat w.csv | {sys.executable} -m cumtool "
                        "cumsum - -o out.tsv --to tsv")
    assert report["status"] == 0, report
    assert report["peak"] < BOUND, report
    lines = (tmp_path / "out.tsv").read_text().splitlines()
    assert len(lines) == 21
    assert lines[20].split("\t")[0] == str(sum(row % 7 for row in range(20)))


@pytest.mark.slow
def test_rows_from_a_slow_producer_go_out_before_it_ends() -> None:
    """`producer | cumtool cumsum - --line-buffered`: each row is written once it has
    arrived, even when a batch of rows this wide would hold more."""
    width = wide.WIDE_COLUMNS + 1
    process = subprocess.Popen([sys.executable, "-m", "cumtool", "cumsum", "-", "-q",
                                "--line-buffered"],
                               stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE)
    assert process.stdin is not None and process.stdout is not None
    try:
        header = ",".join(f"c{i}" for i in range(width))
        process.stdin.write(f"{header}\n{','.join(['1'] * width)}\n".encode())
        process.stdin.flush()
        ready, _, _ = select.select([process.stdout], [], [], 60)
        assert ready, "no output while the producer is still writing"
        assert process.stdout.readline() == f"{header}\n".encode()
        assert process.stdout.readline() == f"{','.join(['1'] * width)}\n".encode()
        process.stdin.write(f"{','.join(['2'] * width)}\n".encode())
        process.stdin.close()
        assert process.stdout.readline() == f"{','.join(['3'] * width)}\n".encode()
        assert process.wait(timeout=60) == 0
        assert process.stderr is not None and process.stderr.read() == b""
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        for stream in (process.stdin, process.stdout, process.stderr):
            if stream is not None:
                stream.close()


def test_a_late_point_with_decimal_comma_is_named_on_both_paths(
        invoke: Callable[..., Result]) -> None:
    """With --decimal-comma, a cell past the judged rows that holds a point (1.500: a
    thousands separator, or a mistake) is an error naming it, on the narrow and the wide
    path, not read as 1.5."""
    data = b"a;b\n" + b"1,5;2\n" * 10_001 + b"1.500;3\n"
    reference, result = _both(invoke, ["cumsum", "--decimal-comma", "-d", ";"], data)
    _same(reference, result)
    assert reference.exit_code == 1
    assert reference.stderr == (
        "Error: standard input: row 10002 (line 10003), column 'a': '1.500' is not a number "
        "like the first rows: with --decimal-comma a number is written 1,5, and a point is "
        "part of none\n")


# Judged past the first chunk ------------------------------------------------------------

@pytest.fixture
def _short_first_chunk(monkeypatch: pytest.MonkeyPatch) -> None:
    """A first chunk of a few rows (a wide file's first MiB holds a few dozen of them): the
    rows after it are read on to be judged, as the narrow path judges them."""
    from cumtool.formats import records
    from cumtool.formats.csv import csv as csvreader

    monkeypatch.setattr(csvreader, "SAMPLE_BYTES", 64)
    monkeypatch.setattr(csvreader, "JUDGED_BYTES", 64)
    monkeypatch.setattr(records, "READ_BYTES", 32)


def _zips(late: int, rows: int = 40) -> bytes:
    """Codes of five digits, the first with a leading zero at row `late`."""
    body = "".join(f"{'02134' if i == late else 10001 + i},{i},t{i}\n" for i in range(1, rows))
    return ("zip,n,label\n" + body).encode()


@pytest.mark.usefixtures("_short_first_chunk")
@pytest.mark.parametrize("late", [2, 13, 39])
def test_a_code_past_the_first_chunk_is_judged_a_code(invoke: Callable[..., Result],
                                                        late: int) -> None:
    """Judged from the first MiB only, a wide file's ZIP codes were summed (10001, 12135,
    ...) where a narrow file's are left as they are."""
    reference, result = _both(invoke, ["cumsum", "-", "--from", "csv"], _zips(late))
    _same(reference, result)
    lines = result.stdout.splitlines()
    assert lines[late] == f"02134,{late * (late + 1) // 2},t{late}"
    assert lines[1] == "10002,1,t1"


@pytest.mark.usefixtures("_short_first_chunk")
@pytest.mark.parametrize("args", [[], ["--ragged"], ["--batch-rows", "3"]])
def test_rows_read_on_to_judge_are_written_once_in_order(invoke: Callable[..., Result],
                                                          args: list[str]) -> None:
    rows = [f"{i},{i * 2},{'' if i % 7 == 0 else i}" for i in range(1, 60)]
    data = ("a,b,c\n" + "\n".join(rows) + "\n").encode()
    reference, result = _both(invoke, ["cumsum", "-", "--from", "csv", *args], data)
    _same(reference, result)
    assert len(result.stdout.splitlines()) == 60


@pytest.mark.usefixtures("_short_first_chunk")
@pytest.mark.parametrize("data", [
    b"a,b,c\n" + b"1,2,3\n" * 20 + b"4,5\n" + b"6,7,8\n",
    b"a,b,c\n" + b"1,2,3\n" * 20 + b'4,"5,6\n',
    b"a,b,c\n" + b"1,2,3\n" * 20 + b"4,\xff,6\n",
], ids=["ragged", "open-quote", "not-utf8"])
def test_a_bad_record_among_the_rows_read_on_is_named_as_on_the_narrow_path(
        invoke: Callable[..., Result], data: bytes) -> None:
    reference, result = _both(invoke, ["cumsum", "-", "--from", "csv"], data)
    assert reference.exit_code == 1
    _same(reference, result)


@pytest.mark.usefixtures("_short_first_chunk")
def test_rows_past_the_judged_bytes_are_not_judged_on_either_path(
        invoke: Callable[..., Result], monkeypatch: pytest.MonkeyPatch) -> None:
    """At most JUDGE_LIMIT bytes are judged (16 MiB, the narrow path's SAMPLE_LIMIT):
    text past it stops the column on both paths, with the same message."""
    from cumtool.formats.csv import csv as csvreader

    monkeypatch.setattr(csvreader, "SAMPLE_LIMIT", 300)
    monkeypatch.setattr(wide, "JUDGE_LIMIT", 300)
    data = ("a,b\n" + "".join(f"{i},{i}\n" for i in range(1, 80)) + "x,1\n").encode()
    reference, result = _both(invoke, ["cumsum", "-", "--from", "csv", "-o", "-"], data)
    assert reference.exit_code == 1
    assert "row 80 (line 81), column 'a': 'x' is not an integer" in reference.stderr
    _same(reference, result)


@pytest.mark.slow
@pytest.mark.usefixtures("_short_first_chunk")
@settings(max_examples=EXAMPLES, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(table=tables(), op=st.sampled_from(["cumsum", "cummax", "cummean", "cumnunique"]),
       options=_OPTIONS, group=st.integers(2, 4))
def test_rows_judged_past_the_first_chunk_give_the_narrow_paths_bytes(
        invoke: Callable[..., Result], table: tuple[bytes, str, int], op: str,
        options: list[list[str]], group: int) -> None:
    _wide_as_narrow(invoke, table, op, options, group)


def _mixed_table(width: int, rows: int) -> str:
    kinds = [lambda r: str(r), lambda r: f"{r % 7:03d}", lambda r: f"{r / 8}",
             lambda r: "yes" if r % 2 else "no", lambda r: "true" if r % 3 else "false",
             lambda r: f"2024-01-{r % 28 + 1:02d}", lambda r: "", lambda r: f"{r}" if r else "x"]
    head = ",".join(f"c{j}" for j in range(width))
    return head + "\n" + "".join(
        ",".join(kinds[j % len(kinds)](r) for j in range(width)) + "\n" for r in range(rows))


def test_columns_judged_a_group_at_a_time_are_judged_as_all_at_once(monkeypatch):
    """A table's columns are judged a group of JUDGE_CELLS cells at a time (800 columns of
    10,000 rows at once took the peak memory to 972 MiB): the same hints as all at once."""
    import polars as pl

    from cumtool.formats.csv import judge

    frame = pl.read_csv(_mixed_table(40, 60).encode(), infer_schema=False)
    whole = judge.judge_columns(frame, ["", "NA"], decimal_comma=False, float_columns=False,
                                decimal=False)
    monkeypatch.setattr(judge, "JUDGE_CELLS", 3 * 60)
    grouped = judge.judge_columns(frame, ["", "NA"], decimal_comma=False,
                                  float_columns=False, decimal=False)
    assert grouped == whole
    assert {hint.kind for hint in whole} == {"int", "code", "float", "text", "bool", "date",
                                            "empty"}


def test_the_rows_read_to_judge_are_scanned_in_batches_of_bounded_cells(
        invoke, write_file, monkeypatch):
    """The rows read to judge the columns (up to 10,000) go on as batches of about
    _CHUNK_CELLS cells, as the chunks read after them do, not as one batch (10,000 rows of
    800 columns held 8M cells' numbers and output at once): the same bytes."""
    from cumtool.formats.csv import csv as csvformat

    path = write_file("mixed.csv", _mixed_table(40, 3_000))
    monkeypatch.setattr(fastcsv, "HEAD_CELLS", 0)  # a head this wide: the streaming path
    whole = ok(invoke("cumsum", str(path), "-q")).stdout
    heights: list[int] = []
    batch = csvformat.CsvSource._batch

    def counted(self: Any, frame: Any, *rest: Any) -> Any:
        heights.append(frame.height)
        return batch(self, frame, *rest)

    monkeypatch.setattr(csvformat, "_CHUNK_CELLS", 40 * 200)
    monkeypatch.setattr(csvformat.CsvSource, "_batch", counted)
    assert ok(invoke("cumsum", str(path), "-q")).stdout == whole
    assert sum(heights) == 3_000 and max(heights) == 200
