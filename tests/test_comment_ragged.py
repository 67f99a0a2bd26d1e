"""--comment CHAR and --ragged (issue 33): comment lines are skipped as blank lines are,
short rows end in missing cells, on every path a CSV/TSV run may take (the small and
compiled paths hand such runs to the streaming reader, which knows both)."""

from __future__ import annotations

import io
import random
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import Result

from cumtool.completion import header_names
from cumtool.formats import CsvReadOptions
from cumtool.formats.csv import fast as fastcsv
from cumtool.formats.csv import small
from cumtool.formats.csv.csv import CsvSource
from cumtool.formats.csv.wide import WIDE_COLUMNS
from cumtool.formats.records import Chunker
from cumtool.request import Request

Invoke = Callable[..., Result]

# As matplotlib's sample data Stocks.csv begins: comment lines, then the header.
STOCKS = (b"# Data source: https://www.stoxx.com/data-index-download\n"
          b"# Data source: https://finance.yahoo.com\n"
          b"Date,IBM,AAPL,MSFT\n"
          b"1990-01-01,10.9,1.5,0.6\n"
          b"1990-02-01,11.1,1.25,0.6\n"
          b"1990-03-01,12.0,1.5,0.75\n")
STOCKS_OUT = (b"Date,IBM,AAPL,MSFT\n"
              b"1990-01-01,10.9,1.5,0.6\n"
              b"1990-02-01,22.0,2.75,1.2\n"
              b"1990-03-01,34.0,4.25,1.95\n")

# Comments before the header and between rows, a # inside a quoted cell (also at the
# start of its second line) and in the middle of a line: those are data.
MIXED = (b"# first\n"
         b"\n"
         b"a,b,c\n"
         b"1,2,x#y\n"
         b"# between rows, with a stray \" quote and, commas\n"
         b"3,4,\"two\n"
         b"# lines\"\n"
         b"#\n"
         b"5,6,#z\n")
MIXED_OUT = (b"a,b,c\n"
             b"1,2,x#y\n"
             b"4,6,\"two\n"
             b"# lines\"\n"
             b"9,12,#z\n")

# Comments as wide as the rows, in a file without a header: a reader that missed them
# would read them as rows, without an error to hand the run over on.
EVEN = b"#c,1\nx,1\n#y,100\nz,2\n"
EVEN_OUT = b"x,1\nz,3\n"

RAGGED = b"a,b,c\n1,2,3\n4\n\n5,6\n7,8,9\n"
RAGGED_OUT = b"a,b,c\n1,2,3\n5,,\n10,8,\n17,16,12\n"

BOTH = (b"# made by hand\n"
        b"a,b,c\n"
        b"1,2,3\n"
        b"# a short row follows\n"
        b"4\n"
        b"5,6\n"
        b"#7,8,9,10\n"
        b"7,8,9\n")
BOTH_OUT = b"a,b,c\n1,2,3\n5,,\n10,8,\n17,16,12\n"


def _ok(result: Result) -> bytes:
    assert result.exit_code == 0, result.stderr
    assert result.stderr == ""
    return result.stdout_bytes


# What the options do ----------------------------------------------------------------

def test_a_file_that_starts_with_comment_lines(invoke: Invoke, write_file) -> None:
    path = write_file("Stocks.csv", STOCKS)
    assert _ok(invoke("cumsum", str(path), "--comment", "#")) == STOCKS_OUT


def test_without_comment_the_error_names_the_option(invoke: Invoke, write_file) -> None:
    path = write_file("Stocks.csv", STOCKS)
    result = invoke("cumsum", str(path))
    assert result.exit_code == 1
    assert result.stderr == (f"Error: {path}: row 2 (line 3) has 4 fields, expected 1 like "
                             "the header; its first line starts with '#': give --comment '#' "
                             "to skip such lines\n")


def test_comments_between_rows_and_data_that_holds_the_character(
        invoke: Invoke, write_file) -> None:
    path = write_file("mixed.csv", MIXED)
    assert _ok(invoke("cumsum", str(path), "--comment", "#")) == MIXED_OUT


@pytest.mark.parametrize("end", [b"\r\n", b"\r"], ids=["crlf", "lone-cr"])
@pytest.mark.parametrize("bom", [b"", b"\xef\xbb\xbf"], ids=["plain", "bom"])
def test_comments_with_every_line_end(invoke: Invoke, write_file, end: bytes,
                                      bom: bytes) -> None:
    path = write_file("ends.csv", bom + STOCKS.replace(b"\n", end))
    assert _ok(invoke("cumsum", str(path), "--comment", "#")) == STOCKS_OUT


def test_a_comment_character_other_than_hash(invoke: Invoke, write_file) -> None:
    path = write_file("percent.csv", b"%% from a tool\na,b\n1,#\n% note\n2,#\n")
    assert _ok(invoke("cumsum", str(path), "--comment", "%")) == b"a,b\n1,#\n3,#\n"
    # '#' is not the comment there: "%% from a tool" is the header
    result = invoke("cumsum", str(path), "--comment", "#")
    assert result.exit_code == 1
    assert result.stderr == (f"Error: {path}: row 1 (line 2) has 2 fields, expected 1 like "
                             "the header\n")


def test_a_file_of_comments_only_is_empty(invoke: Invoke, write_file) -> None:
    path = write_file("notes.csv", b"# one\n# two\n")
    result = invoke("cumsum", str(path), "--comment", "#")
    assert result.exit_code == 1
    assert result.stderr == f"Error: {path}: the file is empty (no header, no rows)\n"


def test_errors_count_data_rows_and_physical_lines(invoke: Invoke, write_file) -> None:
    path = write_file("late.csv", b"# c1\na,b\n# c2\n1,2\n\n# c3\n3,x\n")
    result = invoke("cumsum", str(path), "--comment", "#", "-c", "b")
    assert result.exit_code == 1
    assert result.stderr == (f"Error: {path}: column 'b' is not numeric: row 2 (line 7) "
                             "holds 'x'; numeric columns: a\n")
    result = invoke("cumsum", "--comment", "#", "--line-buffered",
                    input=b"# c1\na\n# c2\n1\n\n# c3\n2.5\n")
    assert result.exit_code == 1
    assert result.stderr == ("Error: standard input: row 2 (line 7), column 'a': '2.5' is "
                             "not an integer like the first rows; pass --dtype float64 if "
                             "the column holds floats\n")
    path = write_file("long.csv", b"# c1\na,b\n# c2\n1,2\n# c3\n3,4,5\n")
    result = invoke("cumsum", str(path), "--comment", "#")
    assert result.exit_code == 1
    assert result.stderr == (f"Error: {path}: row 2 (line 6) has 3 fields, expected 2 like "
                             "the header\n")


def test_short_rows_are_filled_with_missing_cells(invoke: Invoke, write_file) -> None:
    path = write_file("ragged.csv", RAGGED)
    assert _ok(invoke("cumsum", str(path), "--ragged")) == RAGGED_OUT


def test_a_row_longer_than_the_header_is_still_an_error(invoke: Invoke, write_file) -> None:
    path = write_file("long.csv", b"a,b,c\n1,2,3\n4\n\n5,6,7,8\n")
    result = invoke("cumsum", str(path), "--ragged")
    assert result.exit_code == 1
    assert result.stderr == (f"Error: {path}: row 3 (line 5) has 4 fields, expected at most "
                             "3 like the header\n")


def test_without_ragged_a_short_row_is_an_error_naming_ragged(invoke: Invoke, write_file) -> None:
    path = write_file("ragged.csv", RAGGED)
    result = invoke("cumsum", str(path))
    assert result.exit_code == 1
    assert result.stderr == (f"Error: {path}: row 2 (line 3) has 1 field, expected 3 like "
                             "the header; give --ragged to fill short rows with missing "
                             "cells\n")


def test_ragged_without_a_header_is_measured_by_the_first_row(
        invoke: Invoke, write_file) -> None:
    path = write_file("plain.csv", b"1,2\n3\n4,5,6\n")
    result = invoke("cumsum", str(path), "--ragged", "--no-header")
    assert result.exit_code == 1
    assert result.stderr == (f"Error: {path}: row 3 (line 3) has 3 fields, expected at most "
                             "2 like the first row\n")
    path = write_file("plain.csv", b"1,2\n3\n4,5\n")
    assert _ok(invoke("cumsum", str(path), "--ragged", "--no-header")) == b"1,2\n4,\n8,7\n"


# Every path a run may take ------------------------------------------------------------

PATHS = {
    "small-file": ((), False),
    "batches-of-2": (("--batch-rows", "2"), False),
    "standard-input": ((), True),
    "line-buffered": (("--line-buffered",), True),
    "line-buffered-file": (("--line-buffered",), False),
}


@pytest.mark.parametrize("path_options, stdin", PATHS.values(), ids=PATHS.keys())
@pytest.mark.parametrize("data, options, expected", [
    pytest.param(STOCKS, ("--comment", "#"), STOCKS_OUT, id="comment"),
    pytest.param(MIXED, ("--comment", "#"), MIXED_OUT, id="comment-in-data"),
    pytest.param(EVEN, ("--comment", "#", "--no-header"), EVEN_OUT,
                 id="comment-as-wide-as-rows"),
    pytest.param(RAGGED, ("--ragged",), RAGGED_OUT, id="ragged"),
    pytest.param(BOTH, ("--comment", "#", "--ragged"), BOTH_OUT, id="both"),
])
def test_every_path_honours_both_options(
        invoke: Invoke, write_file, path_options: tuple[str, ...], stdin: bool,
        data: bytes, options: tuple[str, ...], expected: bytes) -> None:
    if stdin:
        result = invoke("cumsum", *options, *path_options, input=data)
    else:
        result = invoke("cumsum", str(write_file("in.csv", data)), *options, *path_options)
    assert _ok(result) == expected


@pytest.mark.parametrize("stdin", [False, True], ids=["file", "standard-input"])
def test_tsv(invoke: Invoke, write_file, stdin: bool) -> None:
    data = BOTH.replace(b",", b"\t")
    options = ("--comment", "#", "--ragged")
    if stdin:
        # told from its first line that is not a comment, as a file without a name is
        result = invoke("cumsum", *options, input=data)
    else:
        result = invoke("cumsum", str(write_file("in.tsv", data)), *options)
    assert _ok(result) == BOTH_OUT.replace(b",", b"\t")


def test_a_wide_file(invoke: Invoke, write_file) -> None:
    """More columns than WIDE_COLUMNS: read by formats/csv/wide.py, group by group."""
    width = WIDE_COLUMNS + 2
    header = ",".join(f"c{i}" for i in range(width)).encode()
    ones = ",".join(["1"] * width).encode()
    path = write_file("wide.csv", b"# a, b, c\n" + header + b"\n" + ones + b"\n#,\n1,2\n"
                      + ones + b"\n")
    out = _ok(invoke("cumsum", str(path), "--comment", "#", "--ragged"))
    assert out == (header + b"\n" + ones + b"\n2,3" + b"," * (width - 2) + b"\n"
                   + b"3,4," + ",".join(["2"] * (width - 2)).encode() + b"\n")
    path = write_file("wide.csv", header + b"\n" + ones + b"\n" + ones + b",1\n")
    result = invoke("cumsum", str(path), "--ragged")
    assert result.exit_code == 1
    assert result.stderr == (f"Error: {path}: row 2 (line 3) has {width + 1} fields, "
                             f"expected at most {width} like the header\n")


def test_the_small_and_compiled_paths_hand_the_run_over() -> None:
    """They do not know comments or short rows: such runs go to the streaming reader
    (on every file under a MiB, a forgotten option would be silently ignored)."""
    for given in ({"comment": "#"}, {"ragged": True}):
        request = Request(op="cumsum", input="in.csv", **given)  # type: ignore[arg-type]
        assert not small.options_fit(request)
        assert fastcsv.try_fast(request, None) == (False, None)
        assert fastcsv.try_small(request) == (False, None)
    assert small.options_fit(Request(op="cumsum", input="in.csv"))


def test_dask_reads_a_commented_file_whole() -> None:
    """A comment's quotes do not count: byte ranges cannot tell records apart."""
    from cumtool.formats.csv.partitions import splittable

    assert splittable(Request(op="cumsum", input="a.csv"), None)
    assert not splittable(Request(op="cumsum", input="a.csv", comment="#"), None)


# Comments cut across reads ------------------------------------------------------------

class _Trickle(io.RawIOBase):
    """A stream that gives a few bytes a read (one byte of a byte-order mark too)."""

    def __init__(self, data: bytes, most: int, seed: int) -> None:
        self._data = data
        self._at = 0
        self._most = most
        self._random = random.Random(seed)

    def readable(self) -> bool:
        return True

    def read1(self, size: int = -1) -> bytes:
        count = self._random.randint(1, self._most)
        piece = self._data[self._at:self._at + min(count, size if size > 0 else count)]
        self._at += len(piece)
        return piece

    read = read1


def _uncommented(data: bytes, comment: bytes) -> bytes:
    """The rule, byte by byte: a line starting with `comment` outside quotes loses its
    bytes up to its newline (a comment ends at its line end whatever quotes it holds)."""
    out = bytearray()
    at, quoted, line_start = 0, False, True
    if data.startswith(b"\xef\xbb\xbf"):
        out += data[:3]
        at = 3
    while at < len(data):
        byte = data[at:at + 1]
        if line_start and not quoted and byte == comment:
            end = data.find(b"\n", at)
            if end < 0:
                break
            at, line_start = end, False
            continue
        out += byte
        quoted ^= byte == b'"'
        line_start = byte == b"\n" and not quoted
        at += 1
    return bytes(out)


@pytest.mark.parametrize("seed", range(4))
def test_chunker_blanks_comments_cut_anywhere(seed: int) -> None:
    generator = random.Random(seed)
    for case in range(400):
        data = bytes(generator.choice(b'#a;"\n\n') for _ in range(generator.randint(0, 50)))
        if case % 5 == 0:
            data = b"\xef\xbb\xbf" + data
        comment = b"#" if case % 2 else b";"
        chunker = Chunker(_Trickle(data, 7, case), 5, comment=comment.decode())
        read = b"".join(chunker.chunks())
        assert read == _uncommented(data, comment), data


def test_the_reader_gives_the_same_rows_however_the_bytes_arrive() -> None:
    lines = [b"# generated", b"a,b,c"]
    for row in range(1, 400):
        if row % 7 == 0:
            lines.append(b"# comment \" with a quote, " + str(row).encode())
        cells = [str(row), str(row % 5), f'"x{row}\n# not a comment"']
        lines.append(",".join(cells[: 1 + row % 3]).encode())
    data = b"\n".join(lines) + b"\n"
    options = CsvReadOptions(comment="#", ragged=True)

    def rows(stream: io.RawIOBase | io.BytesIO) -> list[dict[str, object]]:
        source = CsvSource(stream, "in.csv", options)  # type: ignore[arg-type]
        return [row for batch in source.batches() for row in batch.to_pylist()]

    whole = rows(io.BytesIO(data))
    assert len(whole) == 399
    assert whole[1] == {"a": "2", "b": "2", "c": "x2\n# not a comment"}
    assert whole[2] == {"a": "3", "b": None, "c": None}
    assert rows(_Trickle(data, 9, 0)) == whole


# With other options ----------------------------------------------------------------

def test_column_names_complete_past_comment_lines(write_file) -> None:
    path = str(write_file("Stocks.csv", STOCKS))
    assert header_names(path, comment="#") == ["Date", "IBM", "AAPL", "MSFT"]
    assert header_names(path) == ["# Data source: https://www.stoxx.com/data-index-download"]
    assert header_names(str(write_file("notes.csv", b"# only\n")), comment="#") == []



def test_a_state_run_reads_on_past_comments(invoke: Invoke, tmp_path: Path) -> None:
    """Continued from a byte offset, the header put before the new rows is the file's
    header, not a comment (or blank line) before it."""
    path = tmp_path / "log.csv"
    state = str(tmp_path / "run.state")
    path.write_bytes(b"# kept by cron\n\na,b\n1,2\n# later\n")
    assert _ok(invoke("cumsum", str(path), "--comment", "#", "--state", state)) == \
        b"a,b\n1,2\n"
    with path.open("ab") as stream:
        stream.write(b"3,4\n# and more\n5,6\n")
    assert _ok(invoke("cumsum", str(path), "--comment", "#", "--state", state,
                      "--growing")) == \
        b"a,b\n4,6\n9,12\n"


def test_a_state_run_reads_on_past_blank_lines_before_the_header(
        invoke: Invoke, tmp_path: Path) -> None:
    path = tmp_path / "log.csv"
    state = str(tmp_path / "run.state")
    path.write_bytes(b"\n\na,b\n1,2\n")
    assert _ok(invoke("cumsum", str(path), "--state", state)) == b"a,b\n1,2\n"
    with path.open("ab") as stream:
        stream.write(b"3,4\n")
    assert _ok(invoke("cumsum", str(path), "--state", state, "--growing")) == b"a,b\n4,6\n"


@pytest.mark.parametrize("option", [("--comment", "#"), ("--ragged",)])
def test_refused_for_an_input_that_is_not_delimited_text(
        invoke: Invoke, write_file, tmp_path: Path, option: tuple[str, ...]) -> None:
    parquet = tmp_path / "t.parquet"
    _ok(invoke("cumsum", str(write_file("t.csv", b"a\n1\n")), "-o", str(parquet)))
    result = invoke("cumsum", str(parquet), *option)
    assert result.exit_code == 2
    assert result.stderr == (f"Error: {option[0]} is for CSV and TSV input; {parquet} is "
                             "read as parquet\n")


@pytest.mark.parametrize("given", ["##", "", ",", '"', "é"])
def test_a_comment_is_one_character_that_is_not_the_delimiter(
        invoke: Invoke, write_file, given: str) -> None:
    result = invoke("cumsum", str(write_file("t.csv", b"a\n1\n")), "--comment", given)
    assert result.exit_code == 2
    assert result.stderr == (f"Error: --comment {given!r} must be one ASCII character that "
                             "is not the delimiter, a quote or a line end (e.g. '#')\n")
