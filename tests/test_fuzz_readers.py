"""Fuzzing every reader through the command line: random bytes, random text shaped like
CSV, and valid CSV, Parquet and .npy files truncated, with bytes flipped or junk inserted.

Whatever the input, a run ends in exactly one of two ways:
- exit 0, nothing on standard error, and a result that is right for what the input holds
  (judged by an independent reader: numpy for .npy, pyarrow for Parquet, Python's csv
  module for CSV);
- exit 1 or 2 and a single line `Error: ...` that names the file (or standard input).
Never a traceback (the `invoke` fixture does not catch exceptions), another exit status,
a warning on standard error, or a hang (subprocess cases run under a timeout and a memory
limit).

More examples: CUMTOOL_HYPOTHESIS_PROFILE=cumtool-deep python -m pytest tests/test_fuzz_readers.py
"""

from __future__ import annotations

import csv
import gzip
import io
import os
import resource
import struct
import subprocess
import sys
import tempfile
import warnings
from collections.abc import Callable
from pathlib import Path

import helpers
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from click.testing import Result
from helpers import parquet_bytes
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from reference import ReferenceOverflow, reference_scan

# Fuzz tests: random and mutated input through every reader: `-m 'not slow'` leaves them out.
pytestmark = pytest.mark.slow

Invoke = Callable[..., Result]

settings.register_profile(
    "cumtool-fast", max_examples=100, deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                           HealthCheck.function_scoped_fixture],
)
settings.register_profile(
    "cumtool-deep", max_examples=2000, deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                           HealthCheck.function_scoped_fixture],
)
PROFILE = settings.get_profile(os.environ.get("CUMTOOL_HYPOTHESIS_PROFILE", "cumtool-fast"))

SUBPROCESS_TIMEOUT = 60  # seconds: far above a normal run, far below a hang
MEMORY_LIMIT = 3 << 30  # bytes of address space for the subprocess cases


def assert_clean_outcome(result: Result, name: str) -> None:
    """Exit 0 with a silent standard error, or 1/2 with one `Error:` line naming `name`."""
    assert result.exit_code in (0, 1, 2), (result.exit_code, result.stderr)
    if result.exit_code == 0:
        assert result.stderr == "", result.stderr
        return
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("Error: "), result.stderr
    assert name in lines[0], (name, result.stderr)


def run_file(invoke: Invoke, content: bytes, filename: str, *args: str,
             via: str = "file") -> tuple[Result, str]:
    """Run cumtool on `content` as a file called `filename`, or on standard input."""
    if via == "stdin":
        result = invoke(*args, "-", input=content)
        assert_clean_outcome(result, "standard input")
        return result, "standard input"
    with tempfile.TemporaryDirectory() as directory:
        path = Path(directory) / filename
        path.write_bytes(content)
        result = invoke(*args, str(path))
        assert_clean_outcome(result, filename)
        assert path.read_bytes() == content, "the input file was changed"
    return result, filename


@st.composite
def mutated(draw: st.DrawFn, original: bytes) -> bytes:
    """`original` truncated, with bytes flipped, or with junk inserted (one or more)."""
    data = bytearray(original)
    for _ in range(draw(st.integers(1, 3))):
        how = draw(st.sampled_from(["truncate", "flip", "insert", "delete"]))
        at = draw(st.integers(0, max(len(data) - 1, 0)))
        if how == "truncate":
            del data[at:]
        elif how == "flip" and data:
            data[at] ^= draw(st.integers(1, 255))
        elif how == "insert":
            data[at:at] = draw(st.binary(min_size=1, max_size=16))
        elif data:
            del data[at:at + draw(st.integers(1, 16))]
    return bytes(data)


# CSV ----------------------------------------------------------------------------------------

CELLS = st.one_of(
    st.integers(-(2**70), 2**70).map(str),
    st.floats().map(repr),
    st.sampled_from(["", "nan", "NaN", "inf", "-Inf", "1e400", "-1e400", "1e-400",
                     "99999999999999999999999", "-9223372036854775808",
                     "9223372036854775808", "true", "False", "0x10", "1_000", " 1 ", "1,5",
                     '"1"', '"a,b"', '"multi\nline"', '"unterminated', 'quo"te', "é",
                     "\u00a0", "\x00", "∞", "\ufeffx"]),
    st.text(max_size=8),
)


@st.composite
def csv_texts(draw: st.DrawFn) -> bytes:
    """Text shaped like CSV: a header (names may repeat or be empty), ragged rows, odd
    cells, mixed line endings, sometimes Latin-1 or UTF-16 instead of UTF-8."""
    width = draw(st.integers(1, 4))
    header = draw(st.lists(st.sampled_from(["a", "b", "a", "", "x y", "é", "0"]),
                           min_size=width, max_size=width))
    rows = draw(st.lists(st.lists(CELLS, min_size=max(width - 1, 0), max_size=width + 1),
                         max_size=8))
    newline = draw(st.sampled_from(["\n", "\r\n"]))  # CR alone: see the issue report
    text = newline.join(",".join(cells) for cells in [header, *rows])
    if draw(st.booleans()):
        text += newline
    encoding = draw(st.sampled_from(["utf-8", "utf-8", "utf-8", "latin-1", "utf-16"]))
    return text.encode(encoding, errors="replace")


def csv_records(content: bytes) -> list[list[str]] | None:
    """Python's csv module on the same bytes (None: not UTF-8 text it can read)."""
    try:
        text = content.decode("utf-8").removeprefix("\ufeff")
    except UnicodeDecodeError:
        return None
    try:
        # Records with something in them: a blank line between rows is a row of missing
        # cells to cumtool (polars) and nothing to the csv module; both are fine.
        return [r for r in csv.reader(io.StringIO(text, newline=""), strict=True) if any(r)]
    except csv.Error:
        return None


def rfc4180_quoting(content: bytes) -> bool:
    """Whether every quote is where RFC 4180 allows one: opening a field, closing it
    (before a comma, a line end or the end), or doubled inside a quoted field."""
    text = content.decode("utf-8", errors="replace")
    quoted, field_start, i = False, True, 0
    while i < len(text):
        c = text[i]
        if quoted:
            if c == '"':
                if text[i + 1:i + 2] == '"':
                    i += 2
                    continue
                quoted = False
                if text[i + 1:i + 2] not in (",", "\n", "\r", ""):
                    return False
        elif c == '"':
            if not field_start:
                return False
            quoted, field_start = True, False
        else:
            field_start = c in ",\n\r"
        i += 1
    return not quoted


def check_csv_result(result: Result, content: bytes) -> None:
    """A successful run of cummax keeps the header and one output row per input row."""
    if result.exit_code != 0:
        return
    records = csv_records(content)
    out = csv_records(result.stdout_bytes)
    assert out is not None, result.stdout
    if records is None or b"\r" in content.replace(b"\r\n", b""):
        return  # a lone CR ends no line for polars (see the issue report), one for Python
    if not rfc4180_quoting(content):
        return  # a stray quote: polars may silently drop rows (see the issue report)
    assert len(out) == len(records), (records, out)


@PROFILE
@given(content=st.binary(max_size=400))
def test_random_bytes_as_csv(invoke: Invoke, content: bytes) -> None:
    result, _ = run_file(invoke, content, "random.csv", "cummax")
    check_csv_result(result, content)


@PROFILE
@given(content=csv_texts(), op=st.sampled_from(["cumsum", "cummax", "logcumsumexp"]),
       via=st.sampled_from(["file", "stdin"]))
def test_csv_shaped_text(invoke: Invoke, content: bytes, op: str, via: str) -> None:
    # On standard input, say it is CSV: the first bytes might look like TSV.
    result, _ = run_file(invoke, content, "shaped.csv", op, "--from", "csv", via=via)
    if op == "cummax":
        check_csv_result(result, content)


VALID_CSV = b"day,units,price,name\n1,10,2.5,apple\n2,,3.25,pear\n3,7,nan,\"fig, dried\"\n" \
            b"4,-2,1e300,kiwi\n5,9,-0.0,lime\n"


@PROFILE
@given(content=mutated(VALID_CSV), via=st.sampled_from(["file", "stdin"]))
def test_mutated_csv(invoke: Invoke, content: bytes, via: str) -> None:
    result, _ = run_file(invoke, content, "sales.csv", "cummax", "--from", "csv", via=via)
    check_csv_result(result, content)


@PROFILE
@given(content=mutated(gzip.compress(VALID_CSV, mtime=0)))
def test_mutated_gzip_csv(invoke: Invoke, content: bytes) -> None:
    run_file(invoke, content, "sales.csv.gz", "cumsum")


@pytest.mark.parametrize(("content", "expected"), [
    pytest.param(b"a\n" + b"1" * (1 << 20) + b"\n2\n", None, id="one-megabyte-number"),
    pytest.param(b"a,b\n" + b"x" * (1 << 20) + b",1\ny,2\n", "a,b\nx" , id="one-megabyte-text"),
    pytest.param(b"a\n1e400\n1\n", "a\ninf\ninf\n", id="1e400-is-inf"),
    pytest.param(b"a\n-1e400\n1\n", "a\n-inf\n-inf\n", id="minus-1e400"),
    pytest.param(b"a\n1e-400\n1\n", "a\n0.0\n1.0\n", id="1e-400-is-zero"),
    pytest.param(b"a,b\n", "a,b\n", id="header-only"),
    pytest.param(b"a,b\r\n1,2\r\n3,4\r\n", "a,b\n1,2\n4,6\n", id="crlf"),
    pytest.param(b"\xef\xbb\xbfa,b\n1,2\n3,4\n", "a,b\n1,2\n4,6\n", id="utf8-bom"),
    pytest.param(b"a,b\n1,2\n3,4", "a,b\n1,2\n4,6\n", id="no-final-newline"),
    pytest.param(b'a,"b\nc"\n1,2\n3,4\n', 'a,"b\nc"\n1,2\n4,6\n', id="newline-in-header"),
])
def test_odd_but_valid_csv(invoke: Invoke, tmp_path: Path, content: bytes,
                           expected: str | None) -> None:
    path = tmp_path / "odd.csv"
    path.write_bytes(content)
    result = invoke("cumsum", str(path))
    assert_clean_outcome(result, "odd.csv")
    if expected is None:
        # An integer beyond int64 is an id, not a count: text, not scanned by default.
        assert result.exit_code == 1
        assert "no numeric columns to scan; columns: a" in result.stderr
        return
    assert result.exit_code == 0, result.stderr
    if expected == "a,b\nx":
        assert result.stdout == "a,b\n" + "x" * (1 << 20) + ",1\ny,3\n"
    else:
        assert result.stdout == expected


@pytest.mark.parametrize("via", ["file", "stdin"])
def test_stray_quotes_never_drop_a_row_silently(invoke: Invoke, via: str) -> None:
    result, _ = run_file(invoke, b'a"b,c\n1",2\n3,4\n', "stray.csv", "cumsum", via=via)
    if result.exit_code == 0:  # read as the csv module reads it: two rows
        assert csv_records(result.stdout_bytes) == [['a"b', "c"], ['1"', "2"], ["3", "6"]]


def test_huge_integer_text_is_never_rounded(invoke: Invoke, tmp_path: Path) -> None:
    """99999999999999999999999 does not fit int64: the column stays text, nothing is
    silently turned into a float."""
    path = tmp_path / "big.csv"
    path.write_bytes(b"id,n\n99999999999999999999999,1\n1,2\n")
    result = invoke("cumsum", str(path))
    assert result.exit_code == 0, result.stderr
    assert result.stdout == "id,n\n99999999999999999999999,1\n1,3\n"


@pytest.mark.parametrize(("header", "expected"), [
    pytest.param(b"a,a", b"a,a\n1,1\n2,2\n", id="a-a"),
    # Empty names are an index (R row names, pandas): kept, not scanned by default.
    pytest.param(b"a,,", b"a,,\n1,1,1\n2,1,1\n", id="two-empty"),
    pytest.param(b"x,a,b,a", b"x,a,b,a\n1,1,1,1\n2,2,2,2\n", id="apart"),
])
def test_duplicate_header_names_pass_through(invoke: Invoke, tmp_path: Path, header: bytes,
                                            expected: bytes) -> None:
    """polars would rename the second 'a' to 'a_duplicated_0': the output's header would
    silently differ from the input's. cumtool keeps the header as it is."""
    path = tmp_path / "dup.csv"
    row = b",".join([b"1"] * (header.count(b",") + 1)) + b"\n"
    path.write_bytes(header + b"\n" + row * 2)
    result = invoke("cumsum", str(path))
    assert_clean_outcome(result, "dup.csv")
    assert result.exit_code == 0, result.stderr
    assert result.stdout_bytes == expected


def test_duplicate_parquet_column_names_pass_through(invoke: Invoke, tmp_path: Path) -> None:
    path = tmp_path / "dup.parquet"
    pq.write_table(pa.Table.from_arrays([pa.array([1, 2]), pa.array([3, 4])],
                                        names=["a", "a"]), path)
    result = invoke("cumsum", str(path), "--to", "csv")
    assert_clean_outcome(result, "dup.parquet")
    assert result.exit_code == 0, result.stderr
    assert result.stdout == "a,a\n1,3\n3,7\n"
    result = invoke("cumsum", str(path), "--to", "csv", "-c", "a")
    assert result.exit_code == 1
    assert "-c 'a' is ambiguous: the header repeats it at positions 1, 2" in result.stderr
    result = invoke("cumsum", str(path), "--to", "csv", "-c", "a[1]")
    assert result.exit_code == 0, result.stderr
    assert result.stdout == "a,a\n1,3\n2,7\n"


def test_an_empty_header_name_is_kept(invoke: Invoke, tmp_path: Path) -> None:
    """pandas writes its index under an empty name: it stays empty, not 'column_1'."""
    path = tmp_path / "index.csv"
    path.write_bytes(b",a\n0,1\n1,2\n")
    result = invoke("cumsum", str(path), "-c", "a")
    assert result.exit_code == 0, result.stderr
    assert result.stdout == ",a\n0,1\n1,3\n"


@pytest.mark.parametrize(("content", "message"), [
    pytest.param(b"", "empty", id="empty"),
    pytest.param(b"\n\n\n", "empty", id="blank-lines"),
    pytest.param(b"a,b\n1,2\n3,4,5\n", "row 2", id="ragged-long"),
    pytest.param(b"a,b\n1,2\n\x00\x01\x02\x03,\xff\xfe\n", "sales.csv", id="binary-row"),
    pytest.param(b"\x00\x01\x02garbage\xff\n", "sales.csv", id="binary-header"),
    pytest.param("a,b\n1,2\n".encode("utf-16"), "sales.csv", id="utf-16"),
    pytest.param(b"a,b\n\xe9t\xe9,2\n", "sales.csv", id="latin-1-cell"),
    pytest.param(b"a\n\"1\n2\n", "sales.csv", id="unterminated-quote"),
    # polars read a header with a stray quote, then no rows at all: an empty result.
    pytest.param(b'd"y,a\n1,2\n3,4\n', "stray quote", id="stray-quote-in-header"),
    # polars panics exporting a column name with a NUL; the header need not be line 1.
    pytest.param(b"\n\x00\n1\n", "NUL", id="nul-name-after-blank-line"),
    pytest.param(b'"\n\x00",b\n1,2\n', "NUL", id="nul-in-quoted-name"),
])
@pytest.mark.parametrize("via", ["file", "stdin"])
def test_broken_csv_is_one_error_line(invoke: Invoke, content: bytes, message: str,
                                      via: str) -> None:
    result, name = run_file(invoke, content, "sales.csv", "cumsum", via=via)
    if result.exit_code == 0:
        # Readable after all (e.g. a Latin-1 text cell passes through): the numbers are
        # still scanned right and nothing is lost.
        assert message == "sales.csv", result.stdout
        return
    assert message in result.stderr or name in result.stderr


def test_control_characters_in_a_message_are_shown_not_obeyed(invoke: Invoke) -> None:
    """A column name is printed in some messages: a terminal escape sequence in it must
    not reach the terminal, and a line separator must not split the one line."""
    result = invoke("cumsum", input="\x1b[2J\x1c\u2028x\ny\n".encode())
    assert result.exit_code == 1
    assert result.stderr.count("\n") == 1
    assert result.stderr.endswith("\n") and result.stderr[:-1].isprintable(), result.stderr
    assert "\\x1b[2J\\x1c" in result.stderr


# Parquet ------------------------------------------------------------------------------------

VALID_TABLE = pa.table({
    "i": pa.array([1, None, 3, -4, 5], pa.int32()),
    "f": pa.array([0.5, 1.5, None, float("nan"), -2.0], pa.float64()),
    "s": pa.array(["a", "b", None, "d", "e"]),
})
VALID_PARQUET = {
    "plain": parquet_bytes(VALID_TABLE, compression="none", use_dictionary=False),
    "snappy": parquet_bytes(VALID_TABLE, compression="snappy", row_group_size=2),
}


def expected_parquet_cummax(content: bytes) -> pa.Table | None:
    """What pyarrow reads from the bytes, scanned by the reference; None if pyarrow
    cannot read them either (then cumtool may fail too)."""
    try:
        table = pq.read_table(io.BytesIO(content))
    except Exception:
        return None
    columns = {}
    for name, column in zip(table.column_names, table.columns, strict=True):
        kind = column.type
        if not (pa.types.is_integer(kind) or pa.types.is_floating(kind)):
            columns[name] = column
            continue
        valid = column.is_valid().to_numpy(zero_copy_only=False)
        values = column.fill_null(pa.scalar(0, kind)).to_numpy(zero_copy_only=False)
        try:
            result = reference_scan(values, "cummax", valid=valid)
        except ReferenceOverflow:
            return None
        columns[name] = pa.array(result.values, mask=~valid)
    return pa.table(columns)


@PROFILE
@given(which=st.sampled_from(sorted(VALID_PARQUET)), data=st.data(),
       via=st.sampled_from(["file", "stdin"]), to=st.sampled_from(["csv", "table"]))
def test_mutated_parquet_to_text(invoke: Invoke, which: str, data: st.DataObject, via: str,
                                 to: str) -> None:
    """Whatever bytes a damaged string column decodes to, the text writers cope."""
    content = data.draw(mutated(VALID_PARQUET[which]))
    run_file(invoke, content, "table.parquet", "cummax", "--to", to, via=via)


@PROFILE
@given(which=st.sampled_from(sorted(VALID_PARQUET)), data=st.data(),
       via=st.sampled_from(["file", "stdin"]))
def test_mutated_parquet(invoke: Invoke, which: str, data: st.DataObject, via: str) -> None:
    content = data.draw(mutated(VALID_PARQUET[which]))
    with tempfile.TemporaryDirectory() as directory:
        out = Path(directory) / "out.parquet"
        result, _ = run_file(invoke, content, "table.parquet", "cummax", "-o", str(out),
                             via=via)
        if result.exit_code != 0:
            assert not out.exists()
            return
        got = pq.read_table(out)
    expected = expected_parquet_cummax(content)
    if expected is not None:
        assert got.column_names == expected.column_names
        for name in got.column_names:
            column, want = got.column(name), expected.column(name)
            assert column.type == want.type, name
            if pa.types.is_floating(column.type):  # NaN == NaN here, unlike in Arrow
                assert np.array_equal(column.is_null(), want.is_null())
                assert np.array_equal(column.fill_null(0).to_numpy(),
                                      want.fill_null(0).to_numpy(), equal_nan=True), name
            else:  # text compared as bytes: a damaged cell need not be valid UTF-8
                assert column.equals(want), name


def test_parquet_with_a_damaged_leading_magic(invoke: Invoke, tmp_path: Path) -> None:
    """Parquet is read from its footer: a damaged first magic number still reads (as
    pyarrow does), and the result is the right one."""
    path = tmp_path / "table.parquet"
    path.write_bytes(b"PAR2" + VALID_PARQUET["plain"][4:])
    result = invoke("cummax", str(path), "-c", "i", "--to", "csv")
    assert_clean_outcome(result, "table.parquet")
    assert result.exit_code == 0
    assert result.stdout == "i,f,s\n1,0.5,a\n,1.5,b\n3,,\n3,NaN,d\n5,-2.0,e\n"


@pytest.mark.parametrize("to", ["csv", "tsv", "table", "parquet"])
def test_parquet_text_that_is_not_utf8_passes_through(invoke: Invoke, tmp_path: Path,
                                                      to: str) -> None:
    """A damaged file's text column need not be valid UTF-8: the numbers are scanned and
    the text is passed on (bytes as they are; on screen, with replacement characters).
    The pretty table raised UnicodeDecodeError."""
    text = pa.array([b"ok", b"\xe9t\xe9", None], pa.binary()).view(pa.string())
    path = tmp_path / "latin1.parquet"
    pq.write_table(pa.table({"s": text, "n": [1, 2, 3]}), path)
    result = invoke("cumsum", str(path), "--to", to)
    assert_clean_outcome(result, "latin1.parquet")
    assert result.exit_code == 0
    if to == "parquet":
        table = pq.read_table(io.BytesIO(result.stdout_bytes))
        assert table.column("n").to_pylist() == [1, 3, 6]
        assert table.column("s").cast(pa.binary()).to_pylist() == [b"ok", b"\xe9t\xe9", None]
    elif to == "table":
        assert "\ufffdt\ufffd" in result.stdout_bytes.decode()
    else:
        sep = b"," if to == "csv" else b"\t"
        assert result.stdout_bytes.splitlines() == [
            b"s" + sep + b"n", b"ok" + sep + b"1", b"\xe9t\xe9" + sep + b"3", sep + b"6"]


def parquet_with_a_non_utf8_column_name() -> bytes:
    """The plain file with column 'i' renamed to the lone byte 0xE9 in the footer's
    schema (pyarrow raised UnicodeDecodeError, which escaped as a traceback)."""
    content = VALID_PARQUET["plain"]
    at = content.index(b"\x18\x01i\x00", content.index(b"schema"))
    return content[:at] + b"\x18\x01\xe9\x00" + content[at + 4:]


@pytest.mark.parametrize(("damage", "content"), [
    pytest.param("non-utf8-name", parquet_with_a_non_utf8_column_name(), id="non-utf8-name"),
    pytest.param("no-footer", VALID_PARQUET["plain"][:-8], id="no-footer"),
    pytest.param("corrupt-footer-length",
                 VALID_PARQUET["plain"][:-8] + struct.pack("<I", 2**31 - 1) + b"PAR1",
                 id="footer-length-huge"),
    pytest.param("footer-garbage",
                 VALID_PARQUET["plain"][:-40] + b"\xff" * 32 + VALID_PARQUET["plain"][-8:],
                 id="footer-garbage"),
    pytest.param("magic-only", b"PAR1PAR1", id="magic-only"),
    pytest.param("magic", b"PAR1", id="only-magic"),
    pytest.param("half", VALID_PARQUET["snappy"][: len(VALID_PARQUET["snappy"]) // 2],
                 id="truncated-half"),
])
@pytest.mark.parametrize("via", ["file", "stdin"])
def test_broken_parquet_is_one_error_line(invoke: Invoke, damage: str, content: bytes,
                                          via: str) -> None:
    result, name = run_file(invoke, content, "table.parquet", "cumsum", via=via)
    assert result.exit_code == 1, (damage, result.stdout_bytes[:200])
    assert name in result.stderr


# .npy ---------------------------------------------------------------------------------------

def npy_bytes(array: np.ndarray) -> bytes:
    return helpers.npy_bytes(array, allow_pickle=False)


def npy_with_header(header: str, data: bytes = b"", version: int = 1) -> bytes:
    """A .npy file with a hand-written header dict (padded as the format requires)."""
    size_format = "<H" if version == 1 else "<I"
    prefix_length = 8 + struct.calcsize(size_format)
    padded = header + " " * ((-(prefix_length + len(header) + 1)) % 64) + "\n"
    return (b"\x93NUMPY" + bytes([version, 0]) + struct.pack(size_format, len(padded))
            + padded.encode("latin-1") + data)


VALID_NPY = {
    "float64-2d": npy_bytes(np.array([[1.5, -2.0, 3.0], [np.nan, 4.0, -0.0]])),
    "int32-1d": npy_bytes(np.arange(-5, 7, dtype=np.int32)),
    "uint8-3d": npy_bytes(np.arange(24, dtype=np.uint8).reshape(2, 3, 4)),
    "fortran": npy_bytes(np.asfortranarray(np.arange(12.0).reshape(3, 4))),
    "big-endian": npy_bytes(np.arange(6, dtype=">i8")),
}


def expected_npy_cummax(content: bytes) -> np.ndarray | None:
    """numpy's own reader (no pickles) on the bytes, scanned by the reference."""
    try:
        with warnings.catch_warnings():
            # A mutated header may read as "created on Python 2": numpy warns, the oracle
            # still reads it (cumtool, which ignores that warning too, is judged by it).
            warnings.simplefilter("ignore", UserWarning)
            array = np.load(io.BytesIO(content), allow_pickle=False)
    except Exception:
        return None
    if not isinstance(array, np.ndarray):
        return None
    try:
        return reference_scan(array, "cummax").values
    except Exception:
        return None


@PROFILE
@given(which=st.sampled_from(sorted(VALID_NPY)), data=st.data(),
       via=st.sampled_from(["file", "stdin"]))
def test_mutated_npy(invoke: Invoke, which: str, data: st.DataObject, via: str) -> None:
    content = data.draw(mutated(VALID_NPY[which]))
    result, _ = run_file(invoke, content, "array.npy", "cummax", "--from", "npy", via=via)
    if result.exit_code != 0:
        return
    got = np.load(io.BytesIO(result.stdout_bytes), allow_pickle=False)
    expected = expected_npy_cummax(content)
    assert expected is not None, "cumtool read a .npy that numpy refuses"
    assert got.dtype == expected.dtype
    assert np.array_equal(got, expected, equal_nan=got.dtype.kind == "f")


@PROFILE
@given(content=st.binary(max_size=300).map(lambda tail: b"\x93NUMPY" + tail),
       via=st.sampled_from(["file", "stdin"]))
def test_random_bytes_after_npy_magic(invoke: Invoke, content: bytes, via: str) -> None:
    result, _ = run_file(invoke, content, "array.npy", "cumsum", via=via)
    if result.exit_code == 0:
        assert expected_npy_cummax(content) is not None


HEADERS = {
    "corrupt-dict": "{'descr': '<f8', 'fortran_order': False, 'shape': (3,",
    "not-a-dict": "[1, 2, 3]",
    "missing-key": "{'descr': '<f8', 'shape': (3,), }",
    "extra-key": "{'descr': '<f8', 'fortran_order': False, 'shape': (3,), 'x': 1, }",
    "bad-descr": "{'descr': 'no such dtype', 'fortran_order': False, 'shape': (3,), }",
    "shape-text": "{'descr': '<f8', 'fortran_order': False, 'shape': 'big', }",
    "shape-float": "{'descr': '<f8', 'fortran_order': False, 'shape': (1.5,), }",
    "negative-shape": "{'descr': '<f8', 'fortran_order': False, 'shape': (3, -4), }",
    "fortran-text": "{'descr': '<f8', 'fortran_order': 'yes', 'shape': (3,), }",
    "code": "{'descr': '<f8', 'fortran_order': False, 'shape': "
            "__import__('os').system('touch CANARY'), }",
    "object": "{'descr': '|O', 'fortran_order': False, 'shape': (3,), }",
    "structured": "{'descr': [('a', '<i4'), ('b', '<f8')], 'fortran_order': False, "
                  "'shape': (3,), }",
    "subarray": "{'descr': ('<f8', (3,)), 'fortran_order': False, 'shape': (2,), }",
    "nested-object": "{'descr': [('a', '|O')], 'fortran_order': False, 'shape': (2,), }",
    "text": "{'descr': '<U3', 'fortran_order': False, 'shape': (2,), }",
    "datetime": "{'descr': '<M8[D]', 'fortran_order': False, 'shape': (2,), }",
    "longdouble": "{'descr': '<f16', 'fortran_order': False, 'shape': (2,), }",
    "void": "{'descr': '|V8', 'fortran_order': False, 'shape': (2,), }",
    "giant": "{'descr': '<f8', 'fortran_order': False, 'shape': (1000000000000, 1000000), }",
    "giant-fortran": "{'descr': '<f8', 'fortran_order': True, 'shape': "
                     "(1000000000000, 1000000), }",
    "giant-row": "{'descr': '<f8', 'fortran_order': False, 'shape': (2, 1000000000000), }",
    "giant-rank": "{'descr': '<f8', 'fortran_order': False, 'shape': (10000000000, "
                  "10000000000, 10000000000), }",
    "giant-empty-rows": "{'descr': '<f8', 'fortran_order': False, 'shape': "
                        "(1000000000000000000, 0), }",
    "giant-empty-columns": "{'descr': '<f8', 'fortran_order': False, 'shape': "
                           "(0, 1000000000000000000), }",
}
RAW_HEADERS = {  # whole files: a length field claiming more than the file holds
    "giant-header-length": b"\x93NUMPY\x02\x00" + struct.pack("<I", 2**32 - 16) + b"{" * 80,
}


HOSTILE_RUNS = [
    pytest.param(header, args, id=f"{header}-{label}")
    for header in sorted(HEADERS) + sorted(RAW_HEADERS)
    for label, args in [
        ("cumsum", ("cumsum",)),
        # Every output path sizes something from the shape: try them on the giants.
        ("cummax-last-axis", ("cummax", "--indices", "--axis", "-1", "--to", "npy")),
        ("to-csv", ("cumsum", "--to", "csv")),
    ]
    if label == "cumsum" or header.startswith("giant")
]


@pytest.mark.parametrize(("header", "args"), HOSTILE_RUNS)
@pytest.mark.parametrize("via", ["file", "stdin"])
def test_hostile_npy_headers_fail_fast_in_bounded_memory(tmp_path: Path, header: str,
                                                          via: str, args: tuple[str, ...]
                                                          ) -> None:
    """In a subprocess with a time limit and an address-space limit: a header claiming a
    gigantic shape must fail on the missing data, never try to allocate what it claims;
    a header is never evaluated as code."""
    content = RAW_HEADERS.get(header) or npy_with_header(HEADERS[header], b"\0" * 64)
    path = tmp_path / "hostile.npy"
    path.write_bytes(content)

    def limit_memory() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT, MEMORY_LIMIT))

    command = [sys.executable, "-m", "cumtool", *args, "-" if via == "stdin" else str(path)]
    completed = subprocess.run(
        command, input=content if via == "stdin" else None, capture_output=True,
        timeout=SUBPROCESS_TIMEOUT, preexec_fn=limit_memory, cwd=tmp_path, check=False)
    stderr = completed.stderr.decode()
    assert completed.returncode in (1, 2), (completed.returncode, stderr)
    assert stderr.startswith("Error: ") and stderr.count("\n") == 1, stderr
    assert ("standard input" if via == "stdin" else "hostile.npy") in stderr
    assert completed.stdout == b""
    assert not (tmp_path / "CANARY").exists()


def python2_style_npy() -> bytes:
    """A valid .npy whose header's newline sits early (as old writers left it): numpy
    reads it with a UserWarning, which must not reach standard error."""
    valid = VALID_NPY["float64-2d"]
    length = struct.unpack("<H", valid[8:10])[0]
    header = valid[10:10 + length].decode("latin-1")
    moved = header.rstrip("\n").replace("}", "}\n", 1)
    assert len(moved) == length
    return valid[:10] + moved.encode("latin-1") + valid[10 + length:]


@pytest.mark.parametrize("via", ["file", "stdin"])
@pytest.mark.parametrize(("content", "expected"), [
    pytest.param(python2_style_npy(), [[1.5, -2.0, 3.0], [np.nan, 4.0, 3.0]],
                 id="python2-header"),
    pytest.param(b"\x93NUMPY\x03\x00" + npy_bytes(np.arange(3.0))[8:], None,
                 id="version-3-with-a-2-byte-length"),
    pytest.param(b"\x93NUMPY\x00\x00", None, id="version-0"),
    pytest.param(b"\x93NUMPY\x09\x00" + b"\x00" * 80, None, id="version-9"),
    pytest.param(b"\x93NUMPY\x02\x00" + struct.pack("<I", 2**32 - 16) + b"{" * 80, None,
                 id="header-length-4-GiB"),
])
def test_npy_versions_and_header_lengths(invoke: Invoke, content: bytes,
                                         expected: list[list[float]] | None,
                                         via: str) -> None:
    result, _ = run_file(invoke, content, "array.npy", "cummax", via=via)
    if expected is None:
        assert result.exit_code == 1
        assert "not a valid .npy file" in result.stderr
        return
    assert result.exit_code == 0, result.stderr
    got = np.load(io.BytesIO(result.stdout_bytes))
    assert np.array_equal(got, np.array(expected), equal_nan=True)


def test_npy_version_3_is_read(invoke: Invoke) -> None:
    buffer = io.BytesIO()
    np.lib.format.write_array(buffer, np.arange(4.0), version=(3, 0))
    result, _ = run_file(invoke, buffer.getvalue(), "v3.npy", "cumsum")
    assert result.exit_code == 0, result.stderr
    assert np.load(io.BytesIO(result.stdout_bytes)).tolist() == [0.0, 1.0, 3.0, 6.0]


@pytest.mark.parametrize("via", ["file", "stdin"])
@pytest.mark.parametrize("name", ["data.csv", "data.parquet", "data.txt", "data"])
def test_npy_with_a_wrong_extension(invoke: Invoke, name: str, via: str) -> None:
    """A .npy named like something else: read by its magic bytes, or refused cleanly."""
    content = VALID_NPY["int32-1d"]
    result, _ = run_file(invoke, content, name, "cumsum", "--to", "npy", via=via)
    if result.exit_code == 0:
        got = np.load(io.BytesIO(result.stdout_bytes))
        assert got.tolist() == np.cumsum(np.arange(-5, 7)).tolist()


@pytest.mark.parametrize("via", ["file", "stdin"])
@pytest.mark.parametrize(("name", "content"), [
    pytest.param("data.npy", VALID_CSV, id="csv-named-npy"),
    pytest.param("data.parquet", VALID_CSV, id="csv-named-parquet"),
    pytest.param("data.csv", VALID_PARQUET["plain"], id="parquet-named-csv"),
    pytest.param("data.npy", VALID_PARQUET["plain"], id="parquet-named-npy"),
    pytest.param("data.csv.gz", VALID_CSV, id="plain-named-gz"),
    pytest.param("data.parquet", gzip.compress(VALID_CSV), id="gzip-named-parquet"),
])
def test_wrong_extension_is_read_by_content_or_refused(invoke: Invoke, name: str,
                                                       content: bytes, via: str) -> None:
    result, _ = run_file(invoke, content, name, "cumsum", "-c", "units", "--to", "csv",
                         via=via)
    if result.exit_code == 0:
        assert result.stdout.splitlines()[:3] == ["day,units,price,name", "1,10,2.5,apple",
                                                  "2,,3.25,pear"]


@PROFILE
@given(array=hnp.arrays(st.sampled_from([np.dtype(t) for t in ("<i8", ">f4", "<u2", ">c16")]),
                        hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=4)),
       fortran=st.booleans(), via=st.sampled_from(["file", "stdin"]))
def test_any_valid_npy_layout_is_read_exactly(invoke: Invoke, array: np.ndarray,
                                              fortran: bool, via: str) -> None:
    """Byte order and Fortran order are the file's business, not the result's."""
    if fortran:
        array = np.asfortranarray(array)
    result, _ = run_file(invoke, npy_bytes(array), "layout.npy", "cumsum", via=via)
    try:
        expected = reference_scan(array.astype(array.dtype.newbyteorder("=")),
                                  "cumsum").values
    except ReferenceOverflow:
        assert result.exit_code == 1, result.stdout_bytes
        assert "overflow" in result.stderr
        return
    assert result.exit_code == 0, result.stderr
    got = np.load(io.BytesIO(result.stdout_bytes))
    assert got.dtype == expected.dtype
    assert np.array_equal(got, expected, equal_nan=True)
