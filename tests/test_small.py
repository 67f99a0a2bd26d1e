"""The small-input path (cumtool/formats/csv/small.py) against the streaming path: the same stdout
bytes, output file, error message and exit status, on chosen and on random files; and it
runs without polars and pyarrow."""

from __future__ import annotations

import io
import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import small_reference
from click.testing import CliRunner
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from cumtool.cli import main
from cumtool.errors import CumtoolError
from cumtool.formats import DEFAULT_NA
from cumtool.formats.csv import fast as fastcsv
from cumtool.formats.csv import small

FORCE_STREAMING = -1  # as SMALL_BYTES: no input is small


def run_both(tmp_path: Path, data: bytes, args: list[str], stdin: bool = False,
             output: str | None = None) -> tuple[tuple[Any, ...], tuple[Any, ...], bool]:
    """Run cumtool on `data` (a file, or standard input) on the small path where it
    applies, then forced onto the streaming path: each run's exit status, stdout bytes,
    stderr and output file, and whether the small path wrote the first. The small path
    runs twice, through the pipeline (fastcsv.render_whole) and through the reference
    (small_reference.render) in its place: both must give the same."""
    runs = []
    taken = []

    def reference(*a: Any) -> bytes | None:
        try:
            rendered = small_reference.render(*a)
        except (small.Handover, CumtoolError):
            return None
        taken.append(True)
        return rendered

    for limit, whole, directory in ((small.SMALL_BYTES, False, "small"),
                                    (small.SMALL_BYTES, True, "whole"),
                                    (FORCE_STREAMING, True, "streaming")):
        where = tmp_path / directory
        where.mkdir()
        source = where / "in.csv"
        source.write_bytes(data)
        argv = [*args, "-" if stdin else str(source)]
        out = where / output if output else None
        if out is not None:
            argv += ["-o", str(out)]
        saved = small.SMALL_BYTES, fastcsv.render_whole, fastcsv.try_fast
        small.SMALL_BYTES = limit
        if not whole:
            fastcsv.render_whole = reference  # type: ignore[assignment]
        if limit == FORCE_STREAMING:  # the general path itself, not the pipeline
            fastcsv.try_fast = lambda request, stdin: (False, stdin)  # type: ignore[assignment]
        try:
            result = CliRunner().invoke(main, argv, input=data if stdin else None,
                                        catch_exceptions=False)
        finally:
            (small.SMALL_BYTES, fastcsv.render_whole,  # type: ignore[assignment]
             fastcsv.try_fast) = saved
        written = out.read_bytes() if out is not None and out.exists() else None
        stderr = result.stderr.replace(str(where), "<dir>")
        runs.append((result.exit_code, result.stdout_bytes, stderr, written))
        if directory == "small":
            reference_taken = bool(taken)
    assert runs[1] == runs[0]  # the pipeline on a small input, as the reference
    return runs[0], runs[2], reference_taken


# Chosen cases: each must be taken by the small path and agree ------------------------

# Keys as text: "01" and "1" differ, a quoted and a bare 1 do not, "" and an empty cell
# are one missing key, NA is a key (not missing) and " 1" differs from "1".
_KEYED = (b'k,v,t\n01,1,x\n1,2,"y,z"\n"1",3,x\n,4.5,\n"",5,""\nNA,6,x\n,7,"y,z"\n'
          b'NA,NA,x\n 1,9,x\n1.0,10,"a""b"\n01,-2,"a""b"\n1,,y\n')

TAKEN = [
    pytest.param(b"a,b\n1,2.5\n3,4\n5,6\n7,8.25\n", ["cumsum"], id="four-rows"),
    pytest.param(b'a,b,c\n1,x,1e-7\n3,"y,z",2.5e-5\n,"",1e20\n', ["cumsum"],
                 id="float-forms-quoted-text"),
    pytest.param(b'a,b,c\n1,x,1e-7\n3,"y,z",2.5e-5\n,"",1e20\n', ["cumsum", "--na-rep", "NA"],
                 id="na-rep"),
    pytest.param(b'a,b\n1,x\n,"y,z"\n', ["cumsum", "--na-rep", "N,A"], id="na-rep-quoted"),
    pytest.param(b'a\n1\n\n2\n""\n', ["cumsum", "-c", "a"], id="one-column-blank-line"),
    pytest.param(b'a\n1\n\n2\n\n', ["cumsum"], id="one-column-blank-lines"),
    pytest.param(b"a,b\n1,007\n2,010\n", ["cumsum"], id="code-not-scanned"),
    pytest.param(b"a,b\n1,007\n2,010\n", ["cumsum", "-c", "b", "--keep"], id="code-named-keep"),
    pytest.param(b"a,b\n1,99999999999999999999\n2,1\n", ["cumsum"], id="bigint-id"),
    pytest.param(b"a,b\n1,99999999999999999999\n2,1\n", ["cumsum", "--dtype", "float32"],
                 id="bigint-float32"),
    pytest.param(b"a,b\n1,2\n3,4\n", ["cumsum,cummax,logcumsumexp"], id="several-ops"),
    pytest.param(b"a,b\n1,2\n3,4\n", ["cumsum", "--dtype", "float16"], id="float16"),
    pytest.param(b"a,b\n1,2\n300,4\n", ["cumsum", "--dtype", "int16"], id="int16"),
    pytest.param(b"a,b\n1.5,NA\n3,4\nnan,inf\n", ["cummax", "--skipna", "--exclusive"],
                 id="nan-inf-na-skipna-exclusive"),
    pytest.param(b"a,b\n 1 ,2\n3,\t4\n", ["cumsum"], id="spaces-around-numbers"),
    pytest.param(b"a\tb\n1\t2\n3\t4\n", ["cumsum", "-d", "\\t"], id="tab-delimited"),
    pytest.param(b"a,b\r\n1,2\r\n3,4\r\n", ["cumsum"], id="crlf"),
    pytest.param(b"\xef\xbb\xbfa,b\n\n1,2\n3,4", ["cumsum"], id="bom-no-final-newline"),
    pytest.param(b"a,b,t\n1,2,x\n3,4,y\n", ["cumprod", "--only-scanned"], id="only-scanned"),
    pytest.param(b"1,2,x\n3,4,y\n", ["cummin", "--no-header"], id="no-header"),
    pytest.param(b"a,b\n1,-\n3,4\n", ["cumsum", "--na", "-"], id="na-list"),
    # Markers that are numbers: a small path that judged or read them as values would
    # differ (only the slow random test met them before).
    pytest.param(b"a,b,c\n1,0,2.5\n0,-1,-1\n3,999,0\n-1,4,-1.0\n999,0.0,0.5\n",
                 ["cumsum", "--na", "0"], id="na-zero"),
    pytest.param(b"a,b,c\n1,0,2.5\n0,-1,-1\n3,999,0\n-1,4,-1.0\n999,0.0,0.5\n",
                 ["cumsum", "--na", "-1,999"], id="na-numbers"),
    pytest.param(b"a,b,c\n1,0,2.5\n0,-1,-1\n3,999,0\n-1,4,-1.0\n999,0.0,0.5\n",
                 ["cummax", "--na", "-1,999", "--na-rep", "NA", "--keep", "--skipna"],
                 id="na-numbers-keep-na-rep"),
    pytest.param(b"a,b\n0,1\n0,2\n", ["cumsum", "--na", "0"], id="na-zero-whole-column"),
    pytest.param(b"a,b\n0,1\nNA,2\n,3\n", ["cumsum", "--na", "0", "--exclusive"],
                 id="na-zero-replaces-the-default-list"),
    pytest.param(b"a,b\n1,2\n3,4\n", ["cumsum", "--exclude", "a"], id="exclude"),
    pytest.param(b"a,b\n1,2\n3,4\n", ["cumsum", "--out-delimiter", ";"], id="out-delimiter"),
    pytest.param(b"a,b\n0.1,1e-7\n0.2,1e22\n1e-300,5e-324\n", ["cumsum"], id="float-edges"),
    pytest.param(b"a,b,c\n", ["cumsum"], id="header-only"),
    pytest.param(b"a,,__index_level_0__\n1,2,3\n", ["cumsum"], id="unnamed-and-index"),
    pytest.param(b"a,a\n1,2\n3,4\n", ["cumsum", "-c", "a[1]"], id="repeated-name"),
    pytest.param(",".join(f"c{i % 1500}" for i in range(3000)).encode() + b"\n"
                 + (",".join(str(i) for i in range(3000)) + "\n").encode() * 3,
                 ["cumsum"], id="wide-repeated-names"),
    pytest.param(b"a\n" + b"7\n" * 20_000, ["cumprod", "--overflow", "wrap"], id="long"),
    # --by: a key is its cells' text, an empty cell (quoted or not) missing, which is a key
    pytest.param(_KEYED, ["cumsum", "--by", "k"], id="by"),
    pytest.param(_KEYED, ["cumsum", "--by", "k", "-c", "v", "--keep"], id="by-keep"),
    pytest.param(_KEYED, ["cumsum", "--by", "k,t"], id="by-two-keys"),
    pytest.param(_KEYED, ["cumsum", "--by", "t", "--by", "k"], id="by-twice"),
    pytest.param(_KEYED, ["cumprod,cummax,cummean,cumstd", "--by", "1", "--exclusive"],
                 id="by-ops-exclusive"),
    pytest.param(_KEYED, ["ewma", "--alpha", "0.5", "--by", "k", "--skipna"],
                 id="by-ewma-skipna"),
    pytest.param(_KEYED, ["diff,cumcount,logcumsumexp", "--by", "k", "--only-scanned"],
                 id="by-only-scanned"),
    pytest.param(b"k,v\n" + b"".join(b"%d,%d\n" % (i % 3, 1 << 61) for i in range(9)),
                 ["cumsum", "--by", "k", "--overflow", "wrap"], id="by-wrap"),
    # a Turkish dotless i: text, not inf (a regex under IGNORECASE alone takes it for "i")
    pytest.param("a,b\n1,\u0131nf\n2,3\n".encode(), ["cumsum"], id="dotless-i-text"),
]


@pytest.mark.parametrize(("data", "args"), TAKEN)
@pytest.mark.parametrize("stdin", [False, True], ids=["file", "stdin"])
def test_small_path_takes_and_agrees(tmp_path, data, args, stdin):
    fast, streamed, taken = run_both(tmp_path, data, args, stdin)
    assert taken
    assert fast == streamed
    assert fast[0] == 0, fast[2]


_WIDE = (",".join(f"c{j}" for j in range(300)) + "\n"
         + "\n".join(",".join(str(r * j % 7) for j in range(300)) for r in range(3)) + "\n"
         ).encode()


@pytest.mark.parametrize(("data", "args"), [
    pytest.param(b"a,b\n1,2.5\n3,NA\n5,6.25\n", ["cumsum", "-t", "float32"], id="float32"),
    pytest.param(b"a,b\n1,2.5\n3,NA\n5,6.25\n", ["cumsum", "-t", "float16", "--na-rep", "NA"],
                 id="float16-na-rep"),
    pytest.param(b"b\n2.5\nNA\n6.25\n", ["cumsum", "-t", "float16"], id="float16-alone"),
    pytest.param(b"a,b\n100,2.5\n20,-1\n-1,6.25\n", ["cumsum", "-t", "int8", "--keep"],
                 id="int8"),
    pytest.param(b"a,b\n1,2\n3,4\n", ["cumsum", "-t", "uint8", "--na-rep", "-"], id="uint8"),
    pytest.param(_WIDE, ["cumsum"], id="300-columns"),
    pytest.param(_WIDE, ["cummax", "--keep", "-c", "c1,c299"], id="300-columns-keep"),
])
def test_the_pipeline_takes_what_only_the_reference_took(tmp_path, monkeypatch, data, args):
    """Narrow dtypes and heads of many columns, once written by the reference alone: the
    pipeline on one worker writes them, the streaming path's bytes."""
    rendered = []
    pipeline = fastcsv.render_whole

    def spy(*a: Any) -> bytes | None:
        rendered.append(pipeline(*a))
        return rendered[-1]

    monkeypatch.setattr(fastcsv, "render_whole", spy)
    fast, streamed, taken = run_both(tmp_path, data, args)
    assert taken
    assert rendered and rendered[0] is not None
    assert fast == streamed
    assert fast[0] == 0, fast[2]


def test_a_missing_float16_is_written_as_na_rep(invoke, write_file):
    """Every path writes float16 as text (polars has none), and a missing one as any
    missing number: --na-rep, not an empty text."""
    path = write_file("h.csv", b"a,b\n1,2.5\n3,NA\n5,6.25\n")
    for extra in ([], ["--batch-rows", "2"]):
        result = invoke("cumsum", "-t", "float16", "--na-rep", "NA", *extra, str(path))
        assert result.exit_code == 0, result.stderr
        assert result.stdout_bytes == b"a,b\n1.0,2.5\n4.0,NA\n9.0,8.75\n"


@pytest.mark.parametrize(("na", "expected"), [
    pytest.param("0", b"a,b,c\n1,,2.5\n,-1.0,1.5\n4,998.0,\n3,1002.0,0.5\n1002,1002.0,1.0\n",
                 id="zero"),
    pytest.param("-1,999", b"a,b,c\n1,0.0,2.5\n1,,\n4,,2.5\n,4.0,1.5\n,4.0,2.0\n",
                 id="minus-one-and-999"),
])
def test_numeric_na_markers_are_missing_cells_on_both_paths(tmp_path, na, expected):
    """A marker is matched on the cell's text: `0` is missing and `0.0` a value with
    --na 0; `-1` is missing and `-1.0` a value with --na -1,999."""
    data = b"a,b,c\n1,0,2.5\n0,-1,-1\n3,999,0\n-1,4,-1.0\n999,0.0,0.5\n"
    fast, streamed, taken = run_both(tmp_path, data, ["cumsum", "--na", na])
    assert taken
    assert fast == (0, expected, "", None)
    assert streamed == fast


@pytest.mark.parametrize("output", ["out.csv", "out.tsv", "out.txt"])
def test_small_path_writes_files_as_streaming(tmp_path, output):
    fast, streamed, taken = run_both(tmp_path, b'a,b,t\n1,2.5,"x\ty"\n3,,z\n', ["cumsum"],
                                     output=output)
    assert taken
    assert fast == streamed
    assert fast[3] is not None and fast[3].startswith(b"a")


HANDED_OVER = [
    pytest.param(b"a,b\n1,2\n3\n", ["cumsum"], id="ragged"),
    pytest.param(b"a,b\n1,2\n3,x\n", ["cumsum", "-c", "b"], id="named-text"),
    pytest.param("a,b\n1,\u0131nf\n".encode(), ["cumsum", "-c", "b"], id="named-dotless-i"),
    pytest.param(b"a,b\n9223372036854775807,2\n3,4\n", ["cumsum"], id="overflow"),
    pytest.param(b'a,b\n1,x"y\n', ["cumsum"], id="stray-quote"),
    pytest.param(b"a,b\n1,\xff\n", ["cumsum"], id="not-utf8"),
    pytest.param(b"a,b\n1,\0\n", ["cumsum"], id="nul"),
    pytest.param(b"a,b\r1,2\r", ["cumsum"], id="lone-cr"),
    pytest.param(b"a,b\n1,true\n2,false\n", ["cummax", "-c", "b"], id="flags"),
    pytest.param(b"a,b\n1,2\n3,4\n", ["cumsum", "--reverse"], id="reverse-option"),
    pytest.param(b"a,b\n1,2\n3,4\n", ["cummax", "--indices"], id="indices-option"),
    pytest.param(b"a,b\n1,2\n3,4\n", ["cumsum", "-c", "a,b", "--by", "b"], id="by-scanned"),
    pytest.param(b"a,b\n1,2\n3,4\n", ["cumsum", "--by", "b", "--reset", "a"],
                 id="by-reset"),
    pytest.param(b"a,b\n1,2\n3,4\n", ["cumsum", "--by", "z"], id="by-no-such-column"),
    pytest.param(b"t,b\nx,y\n", ["cumsum"], id="no-numeric-column"),
    pytest.param(b"", ["cumsum"], id="empty"),
    pytest.param(b"a,a_cumsum\n1,2\n", ["cumsum", "--keep"], id="keep-clash"),
    pytest.param(b"a,b\n1,2\n", ["logcumsumexp", "--dtype", "int8"], id="usage-error"),
    pytest.param(b"a,b\n1,2\n", ["cumsum", "--to", "parquet", "-o", "-"], id="parquet-out"),
]


@pytest.mark.parametrize(("data", "args"), HANDED_OVER)
def test_small_path_hands_over_and_agrees(tmp_path, data, args):
    fast, streamed, taken = run_both(tmp_path, data, args)
    assert not taken
    assert fast == streamed


@pytest.mark.parametrize(("data", "message"), [
    pytest.param(b"a,b\n1,2\n3\n", "row 2 (line 3) has 1 field, expected 2 like the header; "
                 "give --ragged to fill short rows with missing cells", id="one-field"),
    pytest.param(b"a,b\n1,2\n3,4,5\n", "row 2 (line 3) has 3 fields, expected 2 like the "
                 "header", id="three-fields"),
])
def test_a_ragged_row_is_named_as_on_the_streaming_path(tmp_path, data, message):
    """The small path hands a ragged file over; the message is the streaming path's."""
    fast, streamed, taken = run_both(tmp_path, data, ["cumsum"])
    assert not taken
    assert fast == (1, b"", f"Error: <dir>/in.csv: {message}\n", None)
    assert streamed == fast


def test_stdin_larger_than_small_streams_all_of_it(tmp_path):
    """What the small path read of standard input is replayed to the streaming path."""
    count = small.SMALL_BYTES // 5  # rows of at least 5 bytes: past SMALL_BYTES
    rows = b"".join(b"%d,%d\n" % (i, i % 7) for i in range(count))
    assert len(rows) > small.SMALL_BYTES
    fast, streamed, taken = run_both(tmp_path, b"a,b\n" + rows, ["cumsum"], stdin=True)
    assert not taken
    assert fast == streamed
    last = b"%d,%d\n" % (count * (count - 1) // 2, sum(i % 7 for i in range(count)))
    assert fast[1].endswith(b"\n" + last)


def _past_inference(late: bytes) -> bytes:
    """More rows than INFER_ROWS (the columns are judged from the first ones), with one
    later row `late`: files this size take the small path since its limit is 1 MiB."""
    rows = b"".join(b"%d,%d.5,x%d\n" % (i, i % 97, i) for i in range(small.INFER_ROWS + 500))
    return b"a,b,t\n" + rows + late + b"7,8.5,y\n"


@pytest.mark.parametrize(("late", "taken"), [
    pytest.param(b"1,2.5,z\n", True, id="plain"),
    pytest.param(b"NA,,z\n", True, id="missing"),
    pytest.param(b"1.5,2,z\n", False, id="float-in-int-column"),
    pytest.param(b"1,oops,z\n", False, id="text-in-float-column"),
    pytest.param(b"99999999999999999999,2,z\n", False, id="beyond-int64"),
])
def test_rows_past_inference_agree(tmp_path, late, taken):
    data = _past_inference(late)
    assert len(data) <= small.SMALL_BYTES
    fast, streamed, was_taken = run_both(tmp_path, data, ["cumsum"])
    assert was_taken == taken
    assert fast == streamed


# Random files ------------------------------------------------------------------------

_NUMBERS = st.one_of(
    st.integers(-10**6, 10**6).map(str),
    st.integers(-10**25, 10**25).map(str),
    st.sampled_from(["9223372036854775807", "-9223372036854775808", "9223372036854775808",
                     "18446744073709551616", "0", "-0", "+1", "007", "-01", "00.5"]),
    st.floats(allow_nan=True, allow_infinity=True).map(repr),
    st.floats(-1e6, 1e6).map(lambda x: f"{x:.3f}"),
    st.floats(allow_nan=False, allow_infinity=False).map(lambda x: f"{x:g}"),
    st.floats(1e-320, 1e308).map(lambda x: f"{x:.17e}"),
    st.sampled_from(["nan", "NaN", "-nan", "inf", "-inf", "+inf", "Infinity", "1e5", "1E-3",
                     ".5", "5.", "+.5", "1.e5", "1_000", "0x10", "1e", "e5", "1,5", "\u0661",
                     "1e400", "-1e400", "1e-400"]),
)
_TEXT = st.one_of(
    st.sampled_from([*DEFAULT_NA, "nan", "true", "False", "2024-01-05", "2024-02-30", "x",
                     "a b", " ", "\t"]),
    st.text(alphabet=st.sampled_from(list('ab ,;\t"\n\r1.-e\u00e9\u2028\x1f')), max_size=6),
)
_CELLS = st.one_of(
    _NUMBERS, _NUMBERS, _TEXT,
    st.tuples(st.sampled_from([" ", "\t", "\u00a0"]), _NUMBERS).map("".join),
    st.tuples(_NUMBERS, st.sampled_from([" ", "\t"])).map("".join),
)
_NAMES = st.sampled_from(["a", "b", "c1", "", "a,b", "x y", "__index_level_0__", "1",
                          "a_cumsum", '"q'])
_OPTIONS = st.sampled_from([
    [], ["--keep"], ["--skipna"], ["--exclusive"], ["--only-scanned"], ["--no-header"],
    ["--na-rep", "NA"], ["--na-rep", "-"], ["--na-rep", "N,A"], ["--na-rep", '"'],
    ["--dtype", "int8"], ["--dtype", "int32"],
    ["--dtype", "uint8"], ["--dtype", "float16"], ["--dtype", "float32"],
    ["--dtype", "float64"], ["-c", "1"], ["-c", "a"], ["-c", "2-3"], ["-c", "!1"],
    ["-c", "x"], ["--exclude", "1"], ["--na", "NA,-,nan"], ["--overflow", "wrap"],
    ["--out-delimiter", "|"], ["--reverse"], ["--na", "0,NA"], ["--na", "-1"],
    ["--by", "1"], ["--by", "a"], ["--by", "2,3"], ["--by", "b", "-c", "1"],
])


@st.composite
def _tables(draw: st.DrawFn) -> tuple[bytes, list[str], bool, str | None]:
    delimiter = draw(st.sampled_from([",", ",", ";", "\t"]))
    width = draw(st.integers(1, 4))
    rows = draw(st.lists(st.lists(_CELLS, min_size=width, max_size=width), max_size=8))
    header = draw(st.lists(_NAMES, min_size=width, max_size=width))
    ending = draw(st.sampled_from(["\n", "\n", "\r\n"]))

    def field(cell: str) -> str:
        needs = any(c in cell for c in (delimiter, '"', "\n", "\r")) or not cell
        if (needs and draw(st.integers(0, 19)) > 0) or draw(st.integers(0, 5)) == 0:
            return '"' + cell.replace('"', '""') + '"'
        return cell  # sometimes unquoted though it needs quotes: broken, or a blank cell

    lines = [delimiter.join(field(c) for c in row) for row in [header, *rows]]
    if lines and draw(st.integers(0, 5)) == 0:  # a blank line, or a ragged row
        at = draw(st.integers(0, len(lines)))
        lines.insert(at, draw(st.sampled_from(["", "1", f"1{delimiter}2{delimiter}3"])))
    text = ending.join(lines) + (ending if draw(st.booleans()) else "")
    data = text.encode()
    damage = draw(st.integers(0, 15))
    if damage == 0:
        data = b"\xef\xbb\xbf" + data
    elif damage == 1 and data:
        at = draw(st.integers(0, len(data) - 1))
        data = data[:at] + draw(st.sampled_from([b"\xff", b"\0", b"\r", b"\xc3"])) + data[at:]
    options = [*draw(_OPTIONS), *draw(_OPTIONS)]
    if delimiter != ",":
        options += ["-d", "\\t" if delimiter == "\t" else delimiter]
    op = draw(st.sampled_from(["cumsum", "cumprod", "cummax", "cummin", "logcumsumexp",
                               "cumsum,cummax", "cummin,cumsum,logcumsumexp", "cumcount",
                               "cummean", "cumvar", "cumstd", "diff", "cumsum,cummean,cumstd",
                               "ewma"]))
    if "ewma" in op:
        options += draw(st.sampled_from([["--alpha", "0.35"], ["--span", "3", "--no-adjust"]]))
    output = draw(st.sampled_from([None, None, "out.csv", "out.tsv"]))
    return data, [op, *options], draw(st.booleans()), output


@pytest.mark.slow
@settings(max_examples=int(os.environ.get("CUMTOOL_SMALL_EXAMPLES", "400")), deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                 HealthCheck.function_scoped_fixture])
@given(case=_tables())
def test_small_path_agrees_with_streaming_on_random_files(tmp_path_factory, case):
    data, args, stdin, output = case
    tmp_path = tmp_path_factory.mktemp("case")
    fast, streamed, _taken = run_both(tmp_path, data, args, stdin, output)
    assert fast == streamed


def test_random_files_reach_the_small_path(tmp_path_factory):
    """The random test above is no empty check: most plain files are taken."""
    taken = []

    @settings(max_examples=30, deadline=None, database=None,
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
    @given(rows=st.lists(st.lists(_NUMBERS, min_size=2, max_size=2), min_size=1, max_size=5))
    def plain(rows: list[list[str]]) -> None:
        data = ("a,b\n" + "".join(f"{x},{y}\n" for x, y in rows)).encode()
        fast, streamed, was_taken = run_both(tmp_path_factory.mktemp("plain"), data,
                                             ["cumsum"])
        assert fast == streamed
        taken.append(was_taken)

    plain()
    assert sum(taken) >= len(taken) // 3, taken


# The C loops (_csvtext.c) against the Python ones -----------------------------------

needs_c = pytest.mark.skipif(small.TEXT is None, reason="cumtool._ext._csvtext is not built")


def test_the_text_loops_are_built_where_a_compiler_is():
    """Missing where pip found a compiler is a broken build, which the fallback would
    otherwise hide as a slow run."""
    compiler = (sysconfig.get_config_var("CC") or "cc").split()[0]
    if shutil.which(compiler) is None:
        pytest.skip(f"no C compiler ({compiler}) on this machine")
    assert small.TEXT is not None


def outcome(function: Any, *args: Any) -> Any:
    """What a call returns, or Handover."""
    try:
        return function(*args)
    except small.Handover:
        return small.Handover


def in_python(function: Any, *args: Any) -> Any:
    saved = small.TEXT
    small.TEXT = None
    try:
        return outcome(function, *args)
    finally:
        small.TEXT = saved


@needs_c
@settings(max_examples=200, deadline=None)
@given(text=st.text(alphabet=st.sampled_from(list('ab,;\t"\n\r é')), max_size=40),
       delimiter=st.sampled_from([",", ";", "\t", "a"]))
def test_records_are_cut_as_in_python(text, delimiter):
    # records() hands a lone CR over before either cutter runs (the C one refuses most,
    # the dialect's rule keeps one inside a line as the streaming path does): the twins
    # agree on the texts they are given
    assume(text.count("\r") == text.count("\r\n"))
    data = text.encode()
    assert outcome(small._cut, data, text, delimiter) == \
        in_python(small._cut, data, text, delimiter)


def _bounds(cells: list[str | None]) -> tuple[bytes, list[np.ndarray]]:
    """Cells laid out as fastcsv.cut gives them: text with bounds and flags (an empty
    unquoted cell for None, quotes doubled inside a quoted cell that holds one)."""
    data, starts, ends, flags = b"", [], [], []
    for k, cell in enumerate(cells):
        quoted = cell is not None and ('"' in cell or k % 3 == 0)
        raw = b"" if cell is None else (cell.replace('"', '""') if '"' in cell
                                         else cell).encode()
        data += b"<"  # bytes between cells: bounds need not follow one another
        starts.append(len(data))
        data += raw
        ends.append(len(data))
        flags.append(0 if not quoted else 2 if '"' in (cell or "") else 1)
    return data, [np.array(starts, np.int64), np.array(ends, np.int64),
                  np.array(flags, np.uint8)]


@needs_c
@settings(max_examples=300, deadline=None)
@given(cells=st.lists(st.one_of(_CELLS, st.none(), st.sampled_from(
           ["\u0131nf", "NA", "0", "\u00a01", " 01 ", '1"', '""', "\u20281\u2028"])),
           max_size=12),
       markers=st.sampled_from([{""}, {"", "NA", "-"}, {"", "0", "nan"}, {"", "\u00e9", "1"}]),
       floats=st.booleans())
def test_cut_columns_are_judged_as_their_text(cells, markers, floats):
    """judge_cut (cells by their bounds, _csvtext.judge_bounds or its Python twin,
    numtext.judge_bounds_py) judges a column as judge() judges its text."""
    from cumtool import numtext

    data, bounds = _bounds(cells)
    expected = small_reference.judge([[cell] for cell in cells], 0, markers, floats)
    found = small.judge_cut(data, *bounds, markers, floats)
    saved = numtext.CELLS
    numtext.CELLS = None
    try:
        twin = small.judge_cut(data, *bounds, markers, floats)
    finally:
        numtext.CELLS = saved
    for hint in (found, twin):
        assert (hint.dtype, hint.by_default) == (expected.dtype, expected.by_default)


@needs_c
@settings(max_examples=100, deadline=None)
@given(bits=st.lists(st.integers(0, (1 << 64) - 1), min_size=1, max_size=20),
       decimals=st.lists(st.floats(allow_nan=False).map(lambda x: round(x, 3)), max_size=10),
       gaps=st.integers(0, (1 << 30) - 1), null=st.sampled_from(["", "NA", '""']))
def test_floats_are_written_as_in_python(bits, decimals, gaps, null):
    values = np.concatenate([np.array(bits, np.uint64).view(np.float64),
                             np.array(decimals, np.float64)])
    missing = np.array([(gaps >> (k % 30)) & 1 == 1 for k in range(len(values))])
    for gone in (None, missing):
        assert small._numbers(values, gone, null) == in_python(small._numbers, values, gone,
                                                                null)


@needs_c
def test_text_loops_refuse_what_they_cannot_read():
    """Wrong arguments are errors, not crashes or garbage."""
    text = small.TEXT
    assert text is not None
    with pytest.raises(ValueError):
        text.records(b"a,b\n", '"')
    with pytest.raises(TypeError):
        text.records(b"a,b\n", ",,")
    with pytest.raises(TypeError):
        text.float_texts(np.empty(2, np.float32), None, "")
    with pytest.raises(TypeError):
        text.float_texts(np.empty(2), np.zeros(3, bool), "")


@needs_c
def test_records_are_cut_at_a_nul_delimiter():
    """Found in review: a NUL delimiter."""
    data = b"a\nb\n"
    assert small._cut(data, data.decode(), "\0") == [["a"], ["b"]]


@needs_c
@settings(max_examples=int(os.environ.get("CUMTOOL_SMALL_EXAMPLES", "400")) // 8,
          deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                HealthCheck.data_too_large])
@given(case=_tables())
def test_c_and_python_small_paths_write_the_same_bytes(case):
    data, args, _stdin, _output = case
    request_args = [*args, "-"]

    def run() -> tuple[int, bytes, str]:
        result = CliRunner().invoke(main, request_args, input=data, catch_exceptions=False)
        return result.exit_code, result.stdout_bytes, result.stderr

    assert run() == in_python(run)


# Imports -----------------------------------------------------------------------------

def _python(code: str, *args: str, stdin: bytes | None = None,
            cwd: Path | None = None) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run([sys.executable, *args, "-c", code] if code else
                          [sys.executable, *args], input=stdin, capture_output=True,
                          check=True, cwd=cwd)


@pytest.mark.parametrize("stdin", [False, True], ids=["file", "stdin"])
def test_small_csv_imports_neither_polars_nor_pyarrow(tmp_path, stdin):
    (tmp_path / "s4.csv").write_bytes(b"a,b\n1,2.5\n3,4\n5,6\n7,8.25\n")
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "cumtool", "cumsum",
         "-" if stdin else "s4.csv"], input=b"a,b\n1,2.5\n3,4\n5,6\n7,8.25\n" if stdin
        else None, capture_output=True, check=True, cwd=tmp_path)
    assert done.stdout == b"a,b\n1,2.5\n4,6.5\n9,12.5\n16,20.75\n"
    imported = {line.split("|")[-1].strip() for line in done.stderr.decode().splitlines()}
    assert "numpy" in imported  # the check can fail: this run imports what it needs
    assert not {m for m in imported if m.split(".")[0] in ("polars", "pyarrow")}


def test_a_larger_csv_still_streams_with_polars(tmp_path):
    """The check above can fail: past SMALL_BYTES, with an option the fast path
    (fastcsv.py) does not cover either, the same run imports polars."""
    rows = b"".join(b"%d,1\n" % i for i in range(small.SMALL_BYTES // 4))
    (tmp_path / "big.csv").write_bytes(b"a,b\n" + rows)
    code = ("import sys\nfrom cumtool.cli import main\ntry:\n    main(['cumsum', "
            "'big.csv', '--reverse', '-o', 'out.csv'])\nexcept SystemExit:\n    pass\n"
            "print('polars' in sys.modules)\n")
    assert _python(code, cwd=tmp_path).stdout.split()[-1] == b"True"


def test_kernels_import_without_pyarrow_or_polars():
    code = ("import sys, cumtool.kernels, cumtool.formats.csv.small\n"
            "print(sorted(m for m in ('pyarrow', 'polars') if m in sys.modules))\n")
    assert _python(code).stdout.strip() == b"[]"


def test_constants_match_the_streaming_path():
    from cumtool import sources
    from cumtool.formats.csv import judge

    assert small.INFER_ROWS == judge.INFER_ROWS
    assert small.SNIFF_BYTES == sources.SNIFF_BYTES


@pytest.mark.parametrize("cell", [
    "1", "+1", "-0", "007", "1e5", "1.", ".5", "+.5", "1.e5", "inf", "-Infinity", "+nan",
    "NAN", "1_000", "0x10", " 1", "1 ", "1e", "e5", ".", "+", "1,5", "\u0661", "infinit",
    "nana", "9223372036854775807", "9223372036854775808", "-9223372036854775809",
    "-9223372036854775808", "0" * 5000 + "12", "9" * 5000, "-" + "0" * 30,
    "\u0131nf", "\u0130NF", "nan\u212a",
], ids=lambda cell: repr(cell[:30]))
def test_number_grammar_is_polars_cast(cell):
    """What small.py reads as a number is what polars' casts read (the module says so)."""
    import polars as pl

    cells = pl.Series([cell])
    as_int = cells.cast(pl.Int64, strict=False)[0]
    as_float = cells.cast(pl.Float64, strict=False)[0]
    assert small.number(cell, small._INT64) == as_int
    mine = small.number(cell, small._FLOAT64)
    assert (mine is None) == (as_float is None)
    if mine is not None:
        assert repr(mine) == repr(as_float)


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_float_text_is_polars_write_csv(dtype):
    """Numbers written as CsvSink (polars) writes them, on random bit patterns (NaN and
    inf among them), rounded decimals and powers of ten."""
    import io

    import numpy as np
    import polars as pl

    rng = np.random.default_rng(7)
    width = np.uint64 if dtype == "float64" else np.uint32
    with np.errstate(all="ignore"):  # float32 of 1e39 is inf, as meant
        values = np.concatenate([
            rng.integers(0, np.iinfo(width).max, 20_000, dtype=width).view(dtype),
            np.concatenate([np.round(rng.normal(0, 1000, 2000), k) for k in range(6)]),
            np.array([m * 10.0**k for k in range(-40, 40) for m in (1, 1.5, 9.99, 0.3)]),
        ]).astype(dtype)
    rendered = io.BytesIO()
    pl.DataFrame({"x": values}).write_csv(rendered, include_header=False)
    assert small._numbers(values, None, "") == \
        rendered.getvalue().decode().split("\n")[:-1]


def test_replayed_stdin_keeps_its_descriptor(tmp_path):
    """The streaming reader asks the descriptor whether more input is ready: standard
    input handed over after the small path read some keeps it (else a paused producer
    would hold back the rows already read)."""
    with open(tmp_path / "rest", "w+b") as rest:
        rest.write(b"3,4\n")
        rest.seek(0)
        replay = small.PrefixedStream(b"a,b\n1,2\n", rest)
        assert replay.fileno() == rest.fileno()
        import io

        assert io.BufferedReader(replay).read() == b"a,b\n1,2\n3,4\n"


@pytest.mark.parametrize("size", [1, 3, 5, 64])
@pytest.mark.parametrize("spooled", [False, True], ids=["bytes", "spool"])
def test_prefixed_stream_read1_gives_the_head_then_the_rest(size, spooled):
    """read1 (what the CSV splitter reads with): the head, from bytes or a spool file, then
    the rest as it comes, every byte once and in order."""
    head = io.BytesIO(b"a,b\n1,2\n") if spooled else b"a,b\n1,2\n"
    stream = small.PrefixedStream(head, io.BytesIO(b"3,4\n5,6\n"))
    pieces = []
    while piece := stream.read1(size):
        assert 0 < len(piece) <= size and isinstance(piece, bytes)
        pieces.append(piece)
    assert b"".join(pieces) == b"a,b\n1,2\n3,4\n5,6\n"
    assert stream.read1(size) == b""
