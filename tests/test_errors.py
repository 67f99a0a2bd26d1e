"""Every way a run can fail: exit status 1 (data, I/O) or 2 (usage), one line
`Error: ...` on standard error that names the file, column, row or option at fault, and
never a traceback (the `invoke` fixture does not catch exceptions, so one fails the test).
"""

from __future__ import annotations

import gzip
import io
import os
import re
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from click.testing import Result
from helpers import npy_bytes, usage_error

import cumtool.sources

Invoke = Callable[..., Result]
OPS = ("cumsum", "cumprod", "cummax", "cummin", "logcumsumexp")


def assert_error(result: Result, status: int, *names: str) -> str:
    """One `Error:` line, the status, every name in the message, no traceback."""
    assert result.exit_code == status, (result.exit_code, result.stderr)
    assert result.stderr.startswith("Error: "), result.stderr
    assert result.stderr.endswith("\n")
    assert result.stderr.count("\n") == 1, result.stderr
    for name in names:
        assert name in result.stderr, (name, result.stderr)
    assert "Traceback" not in result.stderr + result.stdout
    return result.stderr


def assert_click_usage_error(result: Result, *names: str) -> None:
    """Click's own usage errors: one `Error: ...` line, ending in the hint `Try 'main OP
    --help'.` where there is a command (no usage block); status 2."""
    assert result.exit_code == 2, result.stderr
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("Error: ")
    for name in names:
        assert name in lines[0], (name, lines[0])
    assert "Try" not in lines[0] or re.search(r"[.?] Try 'main( \w+)? --help'\.$",
                                              lines[0]), lines[0]
    assert result.stdout == ""


@pytest.fixture
def sample(write_file) -> Path:
    return write_file("ok.csv", "a,b,name\n1,2.5,x\n3,4.5,y\n")


# Input files -------------------------------------------------------------------------------


def test_missing_file(invoke: Invoke, tmp_path):
    missing = tmp_path / "nope.csv"
    assert_error(invoke("cumsum", str(missing)), 1, str(missing), "no such file")


def test_directory_as_input(invoke: Invoke, tmp_path):
    assert_error(invoke("cumsum", str(tmp_path)), 1, str(tmp_path), "directory")


def test_unreadable_file(invoke: Invoke, write_file, monkeypatch):
    path = write_file("locked.csv", "a\n1\n")
    real_open = open

    def refuse(file, *args, **kwargs):  # root ignores file modes: simulate the refusal
        if str(file) == str(path):
            raise PermissionError(13, "Permission denied", str(file))
        return real_open(file, *args, **kwargs)

    monkeypatch.setattr(cumtool.sources, "open", refuse, raising=False)
    assert_error(invoke("cumsum", str(path)), 1, str(path), "Permission denied")


@pytest.mark.parametrize(
    ("name", "content"),
    [
        pytest.param("empty.csv", b"", id="empty-csv"),
        pytest.param("blank.csv", b"\n\n", id="blank-lines"),
        pytest.param("empty.tsv", b"", id="empty-tsv"),
        pytest.param("empty.csv.gz", gzip.compress(b""), id="empty-gzip"),
    ],
)
def test_empty_file(invoke: Invoke, write_file, name, content):
    path = write_file(name, content)
    assert_error(invoke("cumsum", str(path)), 1, str(path), "empty")


def test_empty_standard_input(invoke: Invoke):
    assert_error(invoke("cumsum", input=b""), 1, "standard input", "empty")


@pytest.mark.parametrize("name", ["empty.npy", "empty.parquet"])
def test_empty_binary_file(invoke: Invoke, write_file, name):
    path = write_file(name, b"")
    assert_error(invoke("cumsum", str(path)), 1, str(path))


@pytest.mark.slow
@pytest.mark.parametrize(
    ("redirect", "status", "message"),
    [
        pytest.param("<&-", 1, "Error: standard input is closed; give an INPUT file",
                     id="stdin-closed"),
        pytest.param("{csv} >&-", 1, "Error: cannot write standard output: it is closed",
                     id="stdout-closed"),
        pytest.param("{csv} -o {out} >&-", 0, "", id="stdout-closed-but-unused"),
    ],
)
def test_closed_standard_streams(tmp_path, redirect, status, message):
    import shlex
    import subprocess

    csv_path = tmp_path / "in.csv"
    csv_path.write_text("a\n1\n2\n")
    out = tmp_path / "out.csv"
    command = "cumtool cumsum " + redirect.format(csv=shlex.quote(str(csv_path)),
                                                  out=shlex.quote(str(out)))
    done = subprocess.run(["bash", "-c", command], capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == status
    assert done.stderr == (message + "\n" if message else "")
    if status == 0:
        assert out.read_text() == "a\n1\n3\n"


# CSV contents ------------------------------------------------------------------------------


@pytest.mark.parametrize("via", ["file", "stdin", "gzip"])
def test_ragged_csv_with_a_long_row_names_the_row(invoke: Invoke, write_file, via):
    data = b"a,b\n1,2\n3,4\n5,6,7\n8,9\n"
    if via == "file":
        path = write_file("ragged.csv", data)
        assert_error(invoke("cumsum", str(path)), 1, str(path), "row 3", "3 fields",
                     "expected 2")
    elif via == "gzip":
        path = write_file("ragged.csv.gz", gzip.compress(data))
        assert_error(invoke("cumsum", str(path)), 1, str(path), "row 3")
    else:
        assert_error(invoke("cumsum", input=data), 1, "standard input", "row 3")


def test_ragged_row_far_into_the_file_names_its_row(invoke: Invoke, write_file):
    rows = "".join(f"{i},{i}\n" for i in range(20_000))
    path = write_file("late.csv", "a,b\n" + rows + "1,2,3\n")
    assert_error(invoke("cumsum", str(path), "--batch-rows", "1000"), 1, str(path),
                 "row 20001")


@pytest.mark.parametrize("via", ["file", "stdin"])
def test_ragged_csv_with_a_short_row_names_the_row(invoke: Invoke, write_file, via):
    data = b"a,b\n1,2\n3\n4,5\n"
    if via == "file":
        result = invoke("cumsum", str(write_file("short.csv", data)))
    else:
        result = invoke("cumsum", input=data)
    assert_error(result, 1, "row 2 (line 3) has 1 field, expected 2")


def test_bad_cell_after_the_rows_types_are_inferred_from(invoke: Invoke, write_file, tmp_path):
    rows = "".join(f"{i}\n" for i in range(12_000))
    path = write_file("late.csv", "a\n" + rows + "oops\n")
    out = tmp_path / "out.csv"
    message = assert_error(invoke("cumsum", str(path), "--batch-rows", "500", "-o", str(out)),
                           1, str(path), "row 12001", "'a'", "oops")
    assert message.endswith("if 'oops' means a missing cell, pass "
                            "--na 'NA,N/A,n/a,NULL,null,None,<NA>,#N/A,oops'\n")
    assert not out.exists()


def test_binary_garbage_as_csv(invoke: Invoke, write_file):
    path = write_file("garbage.csv", b"\x00\x01\x02abc,\x00def\n\x05\x06\n")
    assert_error(invoke("cumsum", str(path)), 1, str(path))
    assert_error(invoke("cumsum", input=b"a\x00,b\n1,2\n"), 1, "standard input")


# Columns -------------------------------------------------------------------------------------


def test_non_numeric_column_named_in_columns(invoke: Invoke, sample):
    message = assert_error(invoke("cumsum", str(sample), "-c", "name"), 1, str(sample),
                           "'name'", "not numeric")
    assert "a, b" in message  # the numeric columns it could have been


@pytest.mark.parametrize(("data", "culprit"), [
    pytest.param("date,kwh\n2024-01-01,1\n2024-01-02,oops\n", "row 2 (line 3) holds 'oops'",
                 id="word"),
    pytest.param('date,kwh\n2024-01-01,2\n\n2024-01-02,"$1,234.50"\n',
                 "row 2 (line 4) holds '$1,234.50'", id="money"),
    pytest.param('date,kwh\n2024-01-01,"a\nb"\n', "row 1 (line 2) holds 'a\\nb'",
                 id="quoted-line-break"),
    pytest.param("date,kwh\n2024-01-01,N/A\n2024-01-02,5%\n", "row 2 (line 3) holds '5%'",
                 id="percent"),
    pytest.param("date,kwh\n" + "2024-01-01,1\n" * 9000 + "2024-01-02,oops\n",
                 "row 9001 (line 9002) holds 'oops'", id="far-in"),
])
@pytest.mark.parametrize("batch_rows", [[], ["--batch-rows", "7"]], ids=["small", "streaming"])
def test_a_refused_column_names_its_first_cell_that_is_not_a_number(
        invoke: Invoke, write_file, data, culprit, batch_rows):
    """SEMANTICS.md, Tables: -c on a column that is not numeric names the culprit."""
    path = write_file("meter.csv", data)
    result = invoke("cumsum", str(path), "-c", "kwh", *batch_rows)
    assert result.exit_code == 1
    # date is not listed: cumsum refuses dates (the list is what -c could name instead).
    assert result.stderr == (f"Error: {path}: column 'kwh' is not numeric: {culprit}; "
                             "numeric columns: none\n")


def test_a_cell_that_is_not_a_number_past_the_judged_rows_is_named(invoke: Invoke,
                                                                     write_file):
    path = write_file("meter.csv", "kwh\n" + "1\n" * 12_000 + "\n oops\n")
    result = invoke("cumsum", str(path), "-c", "kwh")
    assert result.exit_code == 1
    assert result.stderr == (f"Error: {path}: row 12001 (line 12003), column 'kwh': 'oops' "
                             "is not an integer like the first rows; if 'oops' means a "
                             "missing cell, pass --na 'NA,N/A,n/a,NULL,null,None,<NA>,#N/A,"
                             "oops'\n")


def test_unknown_column_lists_the_columns(invoke: Invoke, sample):
    message = assert_error(invoke("cumsum", str(sample), "-c", "a,zz"), 1, str(sample),
                           "'zz'")
    assert "a, b, name" in message


def test_unknown_column_of_a_headerless_file(invoke: Invoke, write_file):
    path = write_file("n.csv", "1,2\n3,4\n")
    assert_error(invoke("cumsum", str(path), "--no-header", "-c", "3"), 1, "-c 3",
                 "no column at that position", "2 columns")
    assert_error(invoke("cumsum", str(path), "--no-header", "-c", "zz"), 1, "'zz'", "1, 2")


@pytest.mark.parametrize(
    ("name", "content"),
    [
        pytest.param("text.csv", "s,t\nx,y\nz,w\n", id="csv"),
        pytest.param("dates.csv", "day\n2024-01-01\n2024-01-02\n", id="dates"),
    ],
)
def test_no_numeric_columns(invoke: Invoke, write_file, name, content):
    path = write_file(name, content)
    message = assert_error(invoke("cumsum", str(path)), 1, str(path), "no numeric columns")
    assert content.split("\n")[0].replace(",", ", ") in message


def test_no_numeric_columns_in_parquet(invoke: Invoke, tmp_path):
    path = tmp_path / "text.parquet"
    pq.write_table(pa.table({"s": ["a", "b"]}), path)
    assert_error(invoke("cummax", str(path)), 1, str(path), "no numeric columns", "s")


def test_npy_output_of_a_table_with_text(invoke: Invoke, sample, tmp_path):
    out = tmp_path / "out.npy"
    assert_error(invoke("cumsum", str(sample), "-o", str(out)), 2, "'name'", "csv or parquet")
    assert not out.exists()


def test_npy_output_of_a_table_with_missing_cells(invoke: Invoke, write_file, tmp_path):
    path = write_file("m.csv", "a,b\n1,2\n,3\n")
    out = tmp_path / "out.npy"
    assert_error(invoke("cumsum", str(path), "-o", str(out)), 1, "'a'", "missing")
    assert not out.exists()


# Options ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("axis", ["diagonal", "2", "-3", "1.5", ""])
def test_bad_axis_for_a_table_lists_the_valid_ones(invoke: Invoke, sample, axis):
    assert_error(invoke("cumsum", str(sample), "--axis", axis), 2, "--axis", "rows",
                 "columns")


@pytest.mark.parametrize(
    ("shape", "axis", "valid"),
    [
        pytest.param((2, 3, 4), "3", "-3 to 2", id="3d-too-high"),
        pytest.param((2, 3, 4), "-4", "-3 to 2", id="3d-too-low"),
        pytest.param((5,), "1", "-1 to 0", id="1d"),
        pytest.param((5,), "columns", "-1 to 0", id="1d-columns"),
        pytest.param((2, 2, 2, 2), "4", "-4 to 3", id="4d"),
    ],
)
def test_axis_out_of_range_for_an_array_names_the_range(invoke: Invoke, tmp_path, shape,
                                                        axis, valid):
    path = tmp_path / "a.npy"
    np.save(path, np.zeros(shape))
    assert_error(invoke("cumsum", str(path), "-a", axis), 2, "--axis", f"{len(shape)}-d",
                 valid)
    assert_error(invoke("cumsum", "-a", axis, input=path.read_bytes()), 2, valid)


@pytest.mark.parametrize("axis", [pytest.param("x", id="word"), pytest.param("1.5", id="float"),
                                  pytest.param("", id="empty")])
def test_axis_that_is_neither_a_word_nor_an_integer_stops_before_the_input_is_read(
        invoke: Invoke, tmp_path, axis):
    """Checked while the options are parsed (no file is opened): the message cannot know
    the array's range, and lists what an axis can be."""
    missing = tmp_path / "missing.npy"
    assert_error(invoke("cumsum", str(missing), "-a", axis), 2,
                 f"--axis {axis!r} is not an axis; use rows (index, 0), columns (1), or an "
                 "integer axis of a .npy array")


@pytest.mark.parametrize("dtype", ["int128", "float8", "string", "f4x", ""])
def test_unknown_dtype_lists_the_accepted_ones(invoke: Invoke, sample, dtype):
    message = assert_error(invoke("cumsum", str(sample), "--dtype", dtype), 2, "--dtype")
    for accepted in ("int8", "int64", "uint8", "float16", "float64", "complex128", "double"):
        assert accepted in message


@pytest.mark.parametrize("dtype", ["bool", "uint16", "uint32", "uint64", "bfloat16",
                                   "torch.bool", "torch.bfloat16"])
def test_refused_dtypes(invoke: Invoke, sample, dtype):
    message = assert_error(invoke("cumsum", str(sample), "-t", dtype), 2, repr(dtype),
                           "not supported")
    assert "int32" in message


@pytest.mark.parametrize("dtype", ["int32", "int64", "uint8", "long"])
def test_logcumsumexp_needs_a_floating_dtype(invoke: Invoke, sample, dtype):
    assert_error(invoke("logcumsumexp", str(sample), "--dtype", dtype), 2, "logcumsumexp",
                 "floating")


@pytest.mark.parametrize("op", ["cumsum", "cumprod", "logcumsumexp"])
def test_indices_is_not_an_option_of_other_ops(invoke: Invoke, sample, op):
    assert_click_usage_error(invoke(op, str(sample), "--indices"), "--indices")


@pytest.mark.parametrize(
    ("args", "names"),
    [
        pytest.param(["--batch-rows", "0"], ["--batch-rows"], id="batch-rows-0"),
        pytest.param(["--batch-rows", "many"], ["--batch-rows"], id="batch-rows-word"),
        pytest.param(["--overflow", "saturate"], ["--overflow", "saturate"], id="overflow"),
        pytest.param(["-c", "a,,b"], ["-c 'a,,b': an empty column name"], id="empty-column"),
        pytest.param(["--frobnicate"], ["--frobnicate"], id="unknown-option"),
        pytest.param(["-a"], ["-a"], id="missing-value"),
    ],
)
def test_click_usage_errors(invoke: Invoke, sample, args, names):
    assert_click_usage_error(invoke("cumsum", str(sample), *args), *names)


def test_unknown_command(invoke: Invoke):
    assert_click_usage_error(invoke("cumavg", "x.csv"), "cumavg")


@pytest.mark.parametrize("delimiter", ["ab", "", '"', "\n", "\r", "\\n", "§"])
def test_bad_delimiter(invoke: Invoke, sample, delimiter):
    assert_error(invoke("cumsum", str(sample), "-d", delimiter), 2, "--delimiter")


def test_the_list_of_numeric_columns_shows_an_empty_name(invoke: Invoke):
    result = invoke("cumsum", "-c", "t", "-", input="id,,x,t\n1,2,3,a\n")
    assert_error(result, 1)
    assert result.stderr == ("Error: standard input: column 't' is not numeric: row 1 (line 2) "
                             "holds 'a'; "
                             "numeric columns: id, '', x\n")


_UTF8_HINT = "pass --encoding with the file's encoding (latin-1, cp1252, ...)"


@pytest.mark.parametrize(("data", "options", "message"), [
    pytest.param(b'a,b\n\n\n1,x\n2,"multi\nline"\n3,caf\xe9\n', [],
                 f"row 3 (line 7), column 'b': bytes e9 are not UTF-8; {_UTF8_HINT}",
                 id="blank-lines"),
    pytest.param(b'a,b,c,d\n"p,q",caf\xe9,1,2\n', [],
                 f"row 1 (line 2), column 'b': bytes e9 are not UTF-8; {_UTF8_HINT}",
                 id="delimiter-in-quotes"),
    pytest.param(b'a,b,c\n1,"line1\nline2 caf\xe9",3\n', [],
                 f"row 1 (line 3), column 'b': bytes e9 are not UTF-8; {_UTF8_HINT}",
                 id="newline-in-quotes"),
    pytest.param(b'"a,b",c\n1,caf\xe9\n', [],
                 f"row 1 (line 2), column 'c': bytes e9 are not UTF-8; {_UTF8_HINT}",
                 id="quoted-header"),
    pytest.param(b"1,a\n2,caf\xe9\n", ["--no-header"],
                 f"row 2 (line 2), column '2': bytes e9 are not UTF-8; {_UTF8_HINT}",
                 id="no-header"),
    pytest.param(b"a,b\r,c\n\x801,2,3\n", [],
                 f"row 1 (line 2), column '1': bytes 80 are not UTF-8; {_UTF8_HINT}",
                 id="lone-cr-in-header"),
    pytest.param(b"a,b\n\n1,x\n2,caf\xe9\n", ["--encoding", "ascii"],
                 "row 2 (line 4), column 'b': bytes e9 are not ascii", id="encoding"),
    pytest.param(b'a,b\n1,"x\n2,y"\n3,ok\n4,\x00\n', [],
                 "cannot read as csv: row 3 (line 5) holds a NUL byte (a binary file?)",
                 id="nul"),
    pytest.param(b'x,y\n\n\n1,"a\nb\nc"\n2,ok\n3,a"b\n', [],
                 "a quote inside an unquoted field, near row 3 (line 8) ('3,a\"b'); quote the "
                 "whole "
                 "field (\"a \"\"b\"\" c\") as CSV requires", id="stray-quote"),
    pytest.param(b'x,t\n1,"abc\n2,d\n', [], "cannot read as csv: row 1 (line 2): a quote "
                 "that is never closed", id="unclosed-quote"),
    pytest.param(b'x,t\n\n1,a\n2,"abc\n', [], "cannot read as csv: row 2 (line 4): a quote "
                 "that is never closed", id="unclosed-quote-last-row"),
])
@pytest.mark.parametrize("batch_rows", [[], ["--batch-rows", "1"]], ids=["small", "streaming"])
def test_errors_in_the_text_name_the_row_and_column(invoke: Invoke, tmp_path, data, options,
                                                    message, batch_rows):
    """Rows are counted as records: blank lines, and newlines inside quotes, are not rows;
    a delimiter inside quotes does not start a field."""
    path = tmp_path / "t.csv"
    path.write_bytes(data)
    result = invoke("cumsum", str(path), *options, *batch_rows)
    assert_error(result, 1)
    assert result.stderr == f"Error: {path}: {message}\n"


@pytest.mark.parametrize("delimiter", [".", "-", "+", "5", "e", "n"])
def test_an_out_delimiter_that_can_be_part_of_a_number_is_refused(invoke: Invoke, delimiter):
    # Numbers are written unquoted: 3.5 with '.' between fields would read as two cells.
    result = invoke("cumsum", "--out-delimiter", delimiter, input="x,y\n1.5,-2\n")
    assert_error(result, 2, f"--out-delimiter {delimiter!r} can be part of a number")


@pytest.mark.parametrize("option", ["--delimiter", "--out-delimiter"])
@pytest.mark.parametrize("rows", [1, 200_000], ids=["small", "streaming"])
def test_non_ascii_delimiter_is_refused(invoke: Invoke, tmp_path, option, rows):
    # '§' is two bytes in UTF-8: polars cannot split on it (this was a traceback).
    delimiter = "§" if option == "--delimiter" else ","
    path = tmp_path / "s.csv"
    path.write_text(f"a{delimiter}b\n" + "".join(f"{i}{delimiter}{i}\n" for i in range(rows)),
                    encoding="utf-8")
    result = invoke("cumsum", str(path), option, "§")
    assert_error(result, 2, f"{option} '§' must be one ASCII character")


@pytest.mark.parametrize(
    ("option", "value"),
    [pytest.param("--from", "xml", id="from"), pytest.param("--to", "json", id="to"),
     pytest.param("--from", "table", id="from-table")],
)
def test_unknown_format_name(invoke: Invoke, sample, option, value):
    message = assert_error(invoke("cumsum", str(sample), option, value), 2, option, value)
    assert "csv, tsv, parquet, npy" in message


@pytest.mark.parametrize("to", ["csv", "tsv"])
def test_nested_parquet_columns_cannot_be_delimited_text(invoke: Invoke, tmp_path, to):
    path = tmp_path / "nested.parquet"
    pq.write_table(pa.table({"tags": pa.array([[1, 2], [3]]), "n": [1, 2]}), path)
    out = tmp_path / f"out.{to}"
    assert_error(invoke("cumsum", str(path), "-o", str(out)), 2, "'tags'", "parquet")
    assert not out.exists()
    # Parquet keeps them, untouched.
    out = tmp_path / "out.parquet"
    assert invoke("cumsum", str(path), "-o", str(out)).exit_code == 0
    assert pq.read_table(out).to_pydict() == {"tags": [[1, 2], [3]], "n": [1, 3]}


@pytest.mark.parametrize("name", ["out.parquet.gz", "out.npy.gz", "out.txt.gz"])
def test_compression_suffix_on_a_binary_output(invoke: Invoke, sample, tmp_path, name):
    """Only delimited text is compressed; a .gz name on anything else is refused rather
    than written uncompressed under a name that says otherwise."""
    out = tmp_path / name
    extra = ["--to", "table"] if name.startswith("out.txt") else ["-c", "a,b"]
    args = ["cumsum", str(sample), "-o", str(out), *extra]
    if name.startswith("out.npy"):
        args = ["cumsum", str(write_npy_file(tmp_path)), "-o", str(out)]
    assert_error(invoke(*args), 2, str(out), "gzip", "csv and tsv")
    assert not out.exists()


def write_npy_file(directory: Path) -> Path:
    path = directory / "a.npy"
    np.save(path, np.arange(3))
    return path


def test_a_parquet_gz_that_is_not_gzip(invoke: Invoke, tmp_path):
    path = tmp_path / "plain.parquet.gz"
    pq.write_table(pa.table({"a": [1, 2]}), path)
    assert_error(invoke("cumsum", str(path)), 1, str(path), "parquet")


def test_indices_with_npy_output_of_a_table(invoke: Invoke, write_file, tmp_path):
    path = write_file("n.csv", "a\n1\n2\n")
    out = tmp_path / "o.npy"
    assert_error(invoke("cummax", str(path), "--indices", "-o", str(out)), 2, "--indices")
    assert not out.exists()


def test_indices_to_a_file_named_npy(invoke: Invoke, tmp_path):
    """--indices writes a .npz archive, which a .npy name would misdescribe."""
    path = tmp_path / "a.npy"
    np.save(path, np.arange(4))
    out = tmp_path / "out.npy"
    assert_error(invoke("cummax", str(path), "--indices", "-o", str(out)), 2, ".npz",
                 str(out))
    assert not out.exists()


# Arrays ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("op", ["cummax", "cummin"])
@pytest.mark.parametrize("via", ["file", "stdin", "dtype"])
def test_complex_cummax_and_cummin(invoke: Invoke, tmp_path, op, via):
    if via == "dtype":  # asking for a complex dtype is a usage error
        path = tmp_path / "r.npy"
        np.save(path, np.arange(3.0))
        assert_error(invoke(op, str(path), "--dtype", "complex64"), 2, op, "complex")
        return
    array = np.array([1 + 1j, 2 - 1j], dtype=np.complex64)
    path = tmp_path / "c.npy"
    np.save(path, array)
    if via == "file":
        assert_error(invoke(op, str(path)), 1, op, "complex", str(path))
    else:
        assert_error(invoke(op, input=path.read_bytes()), 1, op, "complex", "standard input")


def test_complex_values_cannot_be_csv(invoke: Invoke, tmp_path):
    path = tmp_path / "c.npy"
    np.save(path, np.array([1 + 1j, 2j]))
    assert_error(invoke("cumsum", str(path), "--to", "csv"), 2, "complex", "csv")


class Canary:
    """Unpickling this creates `marker`: the proof that a pickle was loaded."""

    def __init__(self, marker: str) -> None:
        self.marker = marker

    def __reduce__(self):
        return (os.mkdir, (self.marker,))


@pytest.mark.parametrize("via", ["file", "stdin", "from-npy", "axis"])
def test_object_npy_is_refused_and_never_unpickled(invoke: Invoke, tmp_path, via):
    marker = tmp_path / "unpickled"
    array = np.empty(2, dtype=object)
    array[0], array[1] = Canary(str(marker)), 1
    path = tmp_path / "objects.npy"
    np.save(path, array, allow_pickle=True)
    np.load(path, allow_pickle=True)  # the canary works: unpickling it makes the marker
    assert marker.is_dir()
    marker.rmdir()
    if via == "file":
        result = invoke("cumsum", str(path))
    elif via == "stdin":
        result = invoke("cumsum", input=path.read_bytes())
    elif via == "from-npy":
        other = tmp_path / "objects.dat"
        other.write_bytes(path.read_bytes())
        result = invoke("cummax", str(other), "--from", "npy")
    else:
        result = invoke("cumprod", str(path), "-a", "0", "-o", str(tmp_path / "out.npy"))
    assert_error(result, 1, "object")
    assert not marker.exists()
    assert not (tmp_path / "out.npy").exists()


@pytest.mark.parametrize(
    ("array", "what"),
    [
        pytest.param(np.array(["a", "bc"]), "<U2", id="unicode"),
        pytest.param(np.zeros(2, dtype=[("x", "i4"), ("y", "f8")]), "structured",
                     id="structured"),
        pytest.param(np.array(["2024-01-01"], dtype="datetime64[D]"), "datetime64",
                     id="datetime"),
        pytest.param(np.zeros(2, dtype=np.longdouble), "float128", id="longdouble"),
    ],
)
def test_npy_dtypes_cumtool_cannot_scan(invoke: Invoke, tmp_path, array, what):
    path = tmp_path / "x.npy"
    np.save(path, array)
    assert_error(invoke("cumsum", str(path)), 1, str(path), what)


def test_npz_input_is_refused(invoke: Invoke, tmp_path):
    path = tmp_path / "pair.npz"
    np.savez(path, a=np.arange(3))
    assert_error(invoke("cumsum", str(path)), 1, str(path), ".npz")


@pytest.mark.parametrize("keep", [5, 60, 200], ids=["magic", "header", "data"])
@pytest.mark.parametrize("via", ["file", "stdin"])
def test_truncated_npy(invoke: Invoke, tmp_path, keep, via):
    data = npy_bytes(np.arange(24, dtype=np.int64).reshape(2, 3, 4))
    assert len(data) > 200
    path = tmp_path / "cut.npy"
    path.write_bytes(data[:keep])
    out = tmp_path / "out.npy"
    if via == "file":
        result = invoke("cumsum", str(path), "-o", str(out))
        assert_error(result, 1, str(path))
    else:
        result = invoke("cumsum", "--from", "npy", "-o", str(out), input=data[:keep])
        assert_error(result, 1, "standard input")
    assert any(word in result.stderr for word in ("truncated", "not a valid .npy"))
    assert not out.exists()


@pytest.mark.parametrize(
    "damage",
    [
        pytest.param(lambda data: data[: len(data) // 2], id="cut-in-half"),
        pytest.param(lambda data: b"PAR1" + bytes(range(256)) * 2 + b"PAR1", id="garbage"),
        pytest.param(lambda data: data[:1500] + b"\xff" * 400 + data[1900:], id="pages"),
        pytest.param(lambda data: data[:-12] + b"\x00" * 8 + data[-4:], id="footer-length"),
    ],
)
@pytest.mark.parametrize("via", ["file", "stdin"])
def test_corrupt_parquet(invoke: Invoke, tmp_path, damage, via):
    buffer = io.BytesIO()
    pq.write_table(pa.table({"a": np.arange(1000) * 7 % 13, "b": np.arange(1000) / 3}),
                   buffer, row_group_size=100)
    data = damage(buffer.getvalue())
    path = tmp_path / "bad.parquet"
    path.write_bytes(data)
    out = tmp_path / "out.parquet"
    if via == "file":
        assert_error(invoke("cumsum", str(path), "-o", str(out)), 1, str(path), "parquet")
    else:
        assert_error(invoke("cumsum", "--from", "parquet", "-o", str(out), input=data), 1,
                     "standard input", "parquet")
    assert not out.exists()


def test_corrupt_gzip(invoke: Invoke, tmp_path):
    data = gzip.compress(b"a,b\n" + b"1,2\n" * 50_000)
    path = tmp_path / "bad.csv.gz"
    path.write_bytes(data[: len(data) // 2])
    assert_error(invoke("cumsum", str(path), "-o", str(tmp_path / "o.csv")), 1, str(path))
    assert not (tmp_path / "o.csv").exists()


# Overflow --------------------------------------------------------------------------------------


@pytest.mark.parametrize("batch_rows", ["1", "2", "1000"])
def test_integer_overflow_names_column_and_row(invoke: Invoke, write_file, batch_rows):
    big = 2**62
    path = write_file("money.csv", f"id,total\n1,{big}\n2,{big}\n3,{big}\n4,1\n")
    message = assert_error(invoke("cumsum", str(path), "--batch-rows", batch_rows), 1,
                           str(path), "'total'", "row 2", "--overflow wrap")
    assert "int64" in message


def test_integer_overflow_across_columns_names_row_and_column(invoke: Invoke, write_file):
    big = 2**62
    path = write_file("wide.csv", f"x,y,z\n1,2,3\n{big},{big},{big}\n")
    # x + y = 2**63 is the first sum that does not fit.
    assert_error(invoke("cumsum", str(path), "-a", "columns"), 1, str(path), "row 2",
                 "'y'")


def test_integer_overflow_of_cumprod(invoke: Invoke, write_file):
    path = write_file("p.csv", "f\n" + "1000\n" * 8)
    assert_error(invoke("cumprod", str(path)), 1, str(path), "'f'", "row 7", "cumprod")


@pytest.mark.parametrize("batch_rows", ["1", "3"])
def test_integer_overflow_in_an_array_names_the_index(invoke: Invoke, tmp_path, batch_rows):
    array = np.zeros((4, 3), dtype=np.int8)
    array[:, 2] = 60
    path = tmp_path / "a.npy"
    np.save(path, array)
    assert_error(invoke("cumsum", str(path), "-t", "int8", "--batch-rows", batch_rows), 1,
                 str(path), "(2, 2)", "int8")


def test_dtype_cast_that_does_not_fit(invoke: Invoke, write_file):
    path = write_file("c.csv", "a\n1\n300\n")
    assert_error(invoke("cumsum", str(path), "-t", "int8"), 1, str(path), "'a'", "row 2",
                 "300")


# Messages stay one line ----------------------------------------------------------------------


def test_a_newline_in_a_column_name_does_not_break_the_one_line_rule(invoke: Invoke,
                                                                     write_file):
    path = write_file("n.csv", '"two\nlines",b\n1,2\n')
    message = assert_error(invoke("cumsum", str(path), "-c", "zz"), 1, "'zz'")
    assert "two\\nlines" in message  # shown escaped, as Python would write it


@pytest.mark.parametrize(
    ("content", "where"),
    [
        pytest.param(b'a"b,c\n1",2\n3,4\n', "in the header", id="stray-quotes-pairing-up"),
        pytest.param(b'size,n\n1,2\n5" screen,3\n', "near row 2", id="inch-mark"),
        pytest.param(b'a,b\n"x"y,1\n', "near row 1", id="text-after-closing-quote"),
        pytest.param(b'a,b\r\n1,2\r\n3,x"\r\n', "near row 2", id="crlf"),
    ],
)
def test_a_quote_csv_does_not_allow_is_refused_not_read_as_a_field(
        invoke: Invoke, write_file, content: bytes, where: str) -> None:
    """polars pairs such quotes into one field and silently drops the rows between."""
    path = write_file("quotes.csv", content)
    assert_error(invoke("cumsum", str(path)), 1, str(path), "quote", where)
    assert_error(invoke("cumsum", input=content), 1, "standard input", where)


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        pytest.param(b'a,b\n"x ""y"" z",1\n"",2\n', ['"x ""y"" z",1', '"",3'], id="escaped"),
        pytest.param(b'a,b\r\n"p\r\nq",1\r\n"r",2\r\n', ['"p\r\nq",1', "r,3"], id="crlf-newline"),
        pytest.param(b'a,b\n"1,5",1\n,2', ['"1,5",1', ",3"], id="delimiter-no-final-newline"),
    ],
)
def test_quoting_csv_allows_is_read(invoke: Invoke, write_file, content: bytes,
                                    expected: list[str]) -> None:
    result = invoke("cumsum", "-c", "b", str(write_file("ok.csv", content)))
    assert result.exit_code == 0, result.stderr
    body = result.stdout_bytes.decode().split("\n", 1)[1]
    assert body == "".join(line + "\n" for line in expected)


@pytest.mark.parametrize(("args", "message"), [
    pytest.param(["--to", "bogus"], "--to 'bogus' is not a format", id="to"),
    pytest.param(["--from", "xml"], "--from 'xml' is not a format", id="from"),
    pytest.param(["--dtype", "float"], "--dtype 'float' is ambiguous", id="dtype"),
    pytest.param(["-o", "out.parquet.gz"], "gzip compression is for csv and tsv output only",
                 id="compressed-parquet"),
    pytest.param(["-o", "out.weird"], "cannot tell the output format from 'out.weird'",
                 id="unknown-extension"),
    pytest.param(["--decimal-comma", "--out-delimiter", ","], "--decimal-comma writes 1,5",
                 id="decimal-comma-delimiter"),
    pytest.param(["--encoding", "utf-16"], "does not keep ASCII", id="encoding"),
    pytest.param(["--batch-rows", "0"], "--batch-rows", id="batch-rows"),
])
def test_options_are_checked_before_the_input_is_opened(invoke: Invoke, tmp_path, args,
                                                        message):
    """The input does not exist: the option, not the file, must be what is reported."""
    result = invoke("cumsum", str(tmp_path / "missing.csv"), *args)
    assert result.exit_code == 2, result.stderr
    assert result.stderr.startswith("Error: ") and message in result.stderr
    assert "missing.csv: no such file" not in result.stderr


def test_table_options_on_a_named_npy_file_are_refused_before_it_is_opened(invoke: Invoke,
                                                                          tmp_path):
    result = invoke("cumsum", str(tmp_path / "missing.npy"), "--by", "k")
    assert result.exit_code == 2
    assert result.stderr == (f"Error: --by is for tables, not arrays; "
                             f"{tmp_path / 'missing.npy'} is read as npy\n")


@pytest.mark.parametrize("extra", [[], ["--batch-rows", "1"]], ids=["one-batch", "batches"])
def test_a_character_the_output_encoding_lacks_is_named(invoke: Invoke, write_file, tmp_path,
                                                        extra):
    """--out-encoding ascii on a cell 'é': one line naming the output, the character and
    the option (it was Python's UnicodeEncodeError text), and no output file."""
    path = write_file("enc.csv", "a,t\n1,x\n2,\u00e9\n".encode())
    out = tmp_path / "out.csv"
    result = invoke("cumsum", "--out-encoding", "ascii", *extra, str(path), "-o", str(out))
    assert result.exit_code == 1
    assert result.stderr == (
        f"Error: cannot write {out}: '\u00e9' (U+00E9) cannot be written in ascii, the "
        "output's encoding; choose one that has it (--out-encoding utf-8)\n")
    assert not out.exists()
    assert list(tmp_path.iterdir()) == [path]


def test_a_character_map_encoding_is_named_as_given(invoke: Invoke):
    """cp1252's codec names itself "charmap", which the message said."""
    result = invoke("cumsum", "-", "--out-encoding", "cp1252", input="name,v\n\u5317,1\n")
    assert result.exit_code == 1
    assert result.stderr == (
        "Error: cannot write standard output: '\u5317' (U+5317) cannot be written in "
        "cp1252, the output's encoding; choose one that has it (--out-encoding utf-8)\n")


def test_a_batch_rows_beyond_a_batch_is_a_usage_error(invoke: Invoke, tmp_path):
    """Past 2**63 it was an internal error from pyarrow's readers (a C long)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    path = tmp_path / "t.parquet"
    pq.write_table(pa.table({"a": [1, 2, 3]}), path)
    result = invoke("cumsum", str(path), "--batch-rows", str(2**63), "--to", "csv")
    assert result.exit_code == 2
    assert result.stderr == usage_error(f"Invalid value for '--batch-rows': {2**63} is not "
                                        "in the range 1<=x<=2147483647.")
    assert invoke("cumsum", str(path), "--batch-rows", str(2**31 - 1),
                  "--to", "csv").stdout == "a\n1\n3\n6\n"


@pytest.mark.parametrize("suffix", ["csv", "parquet"])
def test_a_ddof_beyond_any_count_gives_nan(invoke: Invoke, tmp_path, suffix):
    """Past 2**64 it was an internal error (an int too big to convert)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    path = tmp_path / f"t.{suffix}"
    if suffix == "csv":
        path.write_text("a\n1\n2\n3\n")
    else:
        pq.write_table(pa.table({"a": [1, 2, 3]}), path)
    result = invoke("cumvar", str(path), "--ddof", "99999999999999999999", "--to", "csv")
    assert (result.exit_code, result.stdout, result.stderr) == (0, "a\nNaN\nNaN\nNaN\n", "")


def test_a_tiny_halflife_warns_nothing(write_file):
    """numpy's overflow warning was printed with its source line (a process of its own:
    pytest keeps warnings from standard error)."""
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-m", "cumtool", "ewma",
                           str(write_file("t.csv", "a\n1\n2\n3\n")), "--halflife", "1e-320"],
                          capture_output=True, text=True, timeout=60)
    assert (done.returncode, done.stdout, done.stderr) == (0, "a\n1.0\n2.0\n3.0\n", "")


def test_api_messages_spell_values_as_python_does():
    """Values named in the API's messages were quoted twice where the CLI's wording
    quoted them for a shell (period="'fortnight'"), numbers quoted (ddof='-2'), and
    repr() showed the front ends' markers (UsageError('\\x1fddof\\x1f ...'))."""
    import pyarrow as pa

    import cumtool

    table = pa.table({"t": ["2024-01-01", "2024-01-02"], "x": [1.0, 2.0]})
    for op, keywords, said in [
            ("cumsum", {"period": "fortnight", "time": "t"}, "period='fortnight' is not"),
            ("cumvar", {"ddof": -2}, "ddof=-2 is out of range"),
            ("ewma", {"halflife": "2 dayz", "times": "t"}, "halflife='2 dayz' is not")]:
        with pytest.raises(cumtool.UsageError) as raised:
            cumtool.scan(table, op, **keywords)
        assert str(raised.value).startswith(said)
        assert repr(raised.value) == f"UsageError({str(raised.value)!r})"
