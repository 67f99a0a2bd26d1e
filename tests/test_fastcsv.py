"""The streaming pipeline without polars (cumtool/formats/csv/fast.py) against the streaming path:
the same stdout bytes, output file, error message and exit status, with tiny blocks, on
chosen and on random files; what it hands over, option by option; its C loops against
their Python twins; and that it imports neither polars nor pyarrow."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_small import HANDED_OVER, TAKEN, _tables

from cumtool import native, numtext
from cumtool.cli import main
from cumtool.formats.csv import fast as fastcsv
from cumtool.formats.csv import small


def run_both(tmp_path: Path, data: bytes, args: list[str], output: str | None = None,
             chunk_rows: int = 3, chunk_bytes: int = 7, cores: int = 2, stdin: bool = False
             ) -> tuple[tuple[Any, ...], tuple[Any, ...], bool]:
    """Run cumtool on `data` (a file) with the small path off: on the fast path (blocks
    of `chunk_rows` rows, reads of `chunk_bytes`), then on the streaming path; each run's
    exit status, stdout bytes, stderr and output file, and whether the fast path wrote
    the first run's output to the end. `cores` 1: blocks are cut, scanned and rendered
    one after another; more: on that many workers. `stdin`: the data come through
    standard input."""
    runs = []
    finished = []
    pieces = fastcsv._Job.pieces

    def spy(self: Any) -> Any:
        yield from pieces(self)
        finished.append(True)

    for fast, directory in ((True, "fast"), (False, "streaming")):
        where = tmp_path / directory
        where.mkdir()
        source = where / "in.csv"
        source.write_bytes(data)
        argv = [*args, "-" if stdin else str(source)]
        out = where / output if output else None
        if out is not None:
            argv += ["-o", str(out)]
        saved = (small.SMALL_BYTES, fastcsv.CHUNK_ROWS, fastcsv.CHUNK_BYTES,
                 fastcsv.PIPELINE_CHUNK_BYTES, fastcsv._Job.pieces, native.CORES)
        small.SMALL_BYTES = -1
        native.CORES = cores
        fastcsv.CHUNK_ROWS, fastcsv.CHUNK_BYTES = chunk_rows, chunk_bytes
        fastcsv.PIPELINE_CHUNK_BYTES = chunk_bytes
        fastcsv._Job.pieces = spy  # type: ignore[method-assign]
        try_fast = fastcsv.try_fast
        if not fast:
            fastcsv.try_fast = lambda request, stdin: (False, stdin)  # type: ignore[assignment]
        try:
            result = CliRunner().invoke(main, argv, catch_exceptions=False,
                                        input=data if stdin else None)
        finally:
            (small.SMALL_BYTES, fastcsv.CHUNK_ROWS, fastcsv.CHUNK_BYTES,
             fastcsv.PIPELINE_CHUNK_BYTES, fastcsv._Job.pieces,
             native.CORES) = saved  # type: ignore[method-assign]
            fastcsv.try_fast = try_fast
        written = out.read_bytes() if out is not None and out.exists() else None
        stderr = result.stderr.replace(str(where), "<dir>")
        stdout = result.stdout_bytes.replace(str(where).encode(), b"<dir>")
        runs.append((result.exit_code, stdout, stderr, written))
    return runs[0], runs[1], bool(finished)


def same(fast: tuple[Any, ...], streamed: tuple[Any, ...]) -> None:
    """Equal outcomes; after an error, the stdout written before it may differ only in how
    far each path got (both are the streaming path's bytes, cut off)."""
    if fast[0] == 0 or streamed[0] == 0:
        assert fast == streamed
        return
    assert (fast[0], fast[2], fast[3]) == (streamed[0], streamed[2], streamed[3])
    shorter, longer = sorted((fast[1], streamed[1]), key=len)
    assert longer.startswith(shorter)


# Chosen cases: the small path's, through the fast one in blocks of 1 to 3 rows --------

@pytest.mark.parametrize(("data", "args"), TAKEN)
@pytest.mark.parametrize("rows", [1, 3])
def test_fast_path_agrees_on_the_small_paths_cases(tmp_path, data, args, rows):
    fast, streamed, _finished = run_both(tmp_path, data, args, chunk_rows=rows)
    assert fast == streamed
    assert fast[0] == 0, fast[2]


def _wide_or_float16(args: list[str]) -> bool:
    return "float16" in args or "int16" in args


# The small path's cases the pipeline takes (not: dtypes it does not write, heads wider
# than HEAD_CELLS, missing markers that are numbers).
PIPELINE_TAKES = [
    case for case in TAKEN if not _wide_or_float16(case.values[1])
    and case.id not in ("wide-repeated-names", "na-zero", "na-numbers",
                        "na-numbers-keep-na-rep", "na-zero-whole-column",
                        "na-zero-replaces-the-default-list", "bigint-float32")]


@pytest.mark.parametrize(("data", "args"), PIPELINE_TAKES)
@pytest.mark.parametrize("cores", [1, 3])
@pytest.mark.parametrize("stdin", [False, True], ids=["file", "stdin"])
def test_fast_path_takes_the_plain_cases(tmp_path, data, args, cores, stdin):
    """Not an empty check: what fits the fast path is taken, to the end."""
    fast, streamed, finished = run_both(tmp_path, data, args, cores=cores, stdin=stdin)
    assert finished
    assert fast == streamed


@pytest.mark.parametrize(("data", "args"), PIPELINE_TAKES)
def test_small_inputs_go_through_the_pipeline(tmp_path, data, args):
    """A small input is rendered whole by the pipeline (one worker): test_small.py
    compares the bytes with the reference's (tests/small_reference.py) and the
    streaming path's."""
    whole = fastcsv.render_whole
    rendered: list[bytes | None] = []

    def spy(*a: Any) -> bytes | None:
        rendered.append(whole(*a))
        return rendered[-1]

    source = tmp_path / "in.csv"
    source.write_bytes(data)
    fastcsv.render_whole = spy  # type: ignore[assignment]
    try:
        result = CliRunner().invoke(main, [*args, str(source)], catch_exceptions=False)
    finally:
        fastcsv.render_whole = whole  # type: ignore[assignment]
    assert result.exit_code == 0, result.stderr
    assert rendered == [result.stdout_bytes]


@pytest.mark.parametrize(("data", "args"), HANDED_OVER)
@pytest.mark.parametrize("stdin", [False, True], ids=["file", "stdin"])
def test_fast_path_hands_over_and_agrees(tmp_path, data, args, stdin):
    fast, streamed, finished = run_both(tmp_path, data, args, stdin=stdin)
    assert not finished
    same(fast, streamed)


# Option by option: every option the fast path does not implement hands over -----------

_PLAIN = b"a,b,t\n1,2.5,x\n3,4,y\n5,,z\n"


@pytest.mark.parametrize("args", [
    ["cumsum", "--reverse"], ["cummax", "--indices"], ["cumsum", "--by", "t", "--reset", "a"],
    ["cumsum", "--reset", "a"], ["cumsum", "--decimal"], ["cumsum", "--decimal-comma"],
    ["cumsum", "--encoding", "latin-1"], ["cumsum", "--max-record-size", "1M"],
    ["cumsum", "--line-buffered"], ["cumsum", "--out-encoding", "latin-1"],
    ["cumsum", "--out-decimal", "comma", "--out-delimiter", ";"],
    ["cumsum", "--batch-rows", "2"], ["cumsum", "--axis", "columns"],
    ["cumsum", "--filename-column", "f"], ["cumsum", "--to", "parquet", "-o", "-"],
    ["cumsum", "--to", "jsonl", "--out-delimiter", ";"], ["cumsum", "--dtype", "float32"],
    ["cumsum", "--dtype", "float16"], ["cumsum", "--dtype", "uint64"],
    ["cumsum", "--dtype", "int16", "--to", "jsonl"], ["cumsum", "--dtype", "complex64"],
    ["cumsum", "--from", "tsv"],
    ["cumsum", "-d", "\u00a7"], ["cumsum", "--out-delimiter", "\u00a7"],
], ids=lambda args: " ".join(args[1:]))
def test_options_the_fast_path_does_not_cover_hand_over(tmp_path, args):
    fast, streamed, finished = run_both(tmp_path, _PLAIN, args)
    assert not finished
    same(fast, streamed)


@pytest.mark.parametrize("args", [
    ["cumsum"], ["cumsum", "--keep"], ["cumsum,cummax", "--only-scanned"],
    ["cumprod", "--exclusive"], ["cummin", "--skipna"], ["logcumsumexp"],
    ["cumsum", "--na-rep", "NA"], ["cumsum", "-c", "a"],
    ["cumsum", "--exclude", "a"], ["cumsum", "--dtype", "float64"],
    ["cumsum", "--overflow", "wrap"], ["cumsum", "--out-delimiter", "|"],
    ["cumsum", "--to", "tsv"], ["cummean"], ["cumvar", "--ddof", "0"], ["cumcount"],
    ["ewma", "--alpha", "0.5"], ["diff"], ["cumsum", "--compensated"], ["cumsum", "--by", "t"],
    ["cumstd", "--skipna"], ["cumcount", "--exclusive"], ["ewma", "--alpha", "1e-9"],
    ["cummean,cumprod", "--by", "t,a", "--keep"], ["cumsum", "--to", "jsonl"],
    ["cumsum", "--to", "jsonl", "--keep", "--by", "t"], ["cumsum", "--dtype", "int16"],
    ["cumsum", "--dtype", "uint8", "--keep"], ["cumsum", "--na", "1"],
], ids=lambda args: " ".join(args))
def test_options_the_fast_path_covers_are_taken(tmp_path, args):
    fast, streamed, finished = run_both(tmp_path, _PLAIN, args, chunk_rows=2)
    assert finished
    assert fast == streamed


# Markers that read as numbers: a cell is missing where its text is the marker, spaces
# around it aside; a cell of the same number written otherwise is that number.
_MARKED = (b'a,b,c\n-999,1.5,nan\n-999.0,-999,NaN\n" -999 ",2,1\n7,-999.5,nan\n'
           b'1,-999.50,inf\n')


@pytest.mark.parametrize("args", [["cumsum", "--na", "-999"], ["cumsum", "--na", "-999.5,nan"],
                                  ["cummax", "--na", "NA,-999", "--skipna"],
                                  ["cumsum", "--na", "nan", "--to", "jsonl"]],
                         ids=lambda args: " ".join(args))
@pytest.mark.parametrize("cores", [1, 3])
def test_markers_that_are_numbers_are_missing_cells(tmp_path, args, cores):
    fast, streamed, finished = run_both(tmp_path, _MARKED, args, chunk_rows=2, cores=cores)
    assert finished
    assert fast == streamed
    assert fast[0] == 0


# JSON Lines out: the results alone, as JsonlSink writes them ---------------------------

_JSON = ["--to", "jsonl"]


@pytest.mark.parametrize(("data", "args"), PIPELINE_TAKES)
@pytest.mark.parametrize("cores", [1, 3])
def test_json_lines_output_agrees_on_the_plain_cases(tmp_path, data, args, cores):
    fast, streamed, _finished = run_both(tmp_path, data, [*args, *_JSON], cores=cores)
    same(fast, streamed)


_TEXT = ('a,t,u\n1,x,7\n2,,8\n3,"",NA\n4,"q""r",\n5,\u00e9\\n,"  9 "\n'
         '6,"line\r\nbreak",1.50\n7,tab\there,x\n8,"back\\\\slash\x7f",\u2028\n'
         '9,\U0001f389,"a,b"\n').encode()


@pytest.mark.parametrize("args", [["cumsum", "-c", "a"], ["cumsum", "--keep"],
                                  ["cumsum", "--by", "t"], ["cumcount", "--by", "t,u"]],
                         ids=lambda args: " ".join(args))
@pytest.mark.parametrize("stdin", [False, True], ids=["file", "stdin"])
def test_json_lines_output_of_text_cells_is_the_streaming_paths(tmp_path, args, stdin):
    """Input cells are JSON strings of their text (null where empty and unquoted), with
    json's escapes: quotes, backslashes, CR, LF, tab; other bytes as they are. (Other
    control characters hand over: test_jsonl_lines.py has them.)"""
    fast, streamed, finished = run_both(tmp_path, _TEXT, [*args, *_JSON], chunk_rows=2,
                                        stdin=stdin)
    assert finished
    assert fast == streamed
    assert fast[0] == 0, fast[2]


@pytest.mark.parametrize("args", [
    ["cumsum"], ["cumsum,cummax"], ["cumprod", "--exclusive"], ["logcumsumexp"],
    ["cummean"], ["cumvar", "--ddof", "0"], ["cumcount"], ["ewma", "--alpha", "0.5"],
    ["diff"], ["cumsum", "--by", "t"], ["cummean,cumprod", "--by", "t,a"], ["cumsum", "-c", "a"],
    ["cumsum", "--exclusive"], ["cumsum", "--keep"], ["cumsum", "--na", "x"],
], ids=lambda args: " ".join(args))
@pytest.mark.parametrize("output", [None, "out.jsonl"])
def test_json_lines_output_is_taken(tmp_path, args, output):
    data = b"a,b,t\n1,2.5,x\n3,4,y\n5,,z\n,1e-5,z\n-7,inf,y\n2,nan,x\n"
    fast, streamed, finished = run_both(tmp_path, data, [*args, *_JSON], output,
                                        chunk_rows=2)
    assert finished
    assert fast == streamed
    assert fast[0] == 0, fast[2]


def test_json_lines_output_writes_what_json_writes(tmp_path):
    data = b"a,b\n1,2.5\n3,\n,1e-5\n-7,inf\n"
    fast, _streamed, finished = run_both(tmp_path, data, ["cumsum", "--to", "jsonl"])
    assert finished
    assert fast[1] == (b'{"a":1,"b":2.5}\n{"a":4,"b":null}\n{"a":null,"b":2.50001}\n'
                       b'{"a":-3,"b":Infinity}\n')


@pytest.mark.parametrize(("data", "args"), [
    (b"a,a,b\n1,2,3\n", ["cumsum", "--to", "jsonl"]),
    (_PLAIN, ["cumsum", "--to", "jsonl", "--out-delimiter", ";"]),
    (_PLAIN, ["cumsum", "-o", "out.jsonl.gz"]),
], ids=["repeated-names", "out-delimiter", "compressed"])
def test_json_lines_output_the_pipeline_does_not_write_hands_over(tmp_path, data, args):
    fast, streamed, finished = run_both(tmp_path, data, args)
    assert not finished
    same(fast, streamed)


def test_json_lines_output_of_a_header_alone_is_empty(tmp_path):
    fast, streamed, _finished = run_both(tmp_path, b"a,b\n", ["cumsum", "--to", "jsonl"])
    assert fast == streamed
    assert fast[:2] == (0, b"")


# Later rows: a problem after output has started --------------------------------------

def _long(late: bytes, rows: int = small.INFER_ROWS + 50) -> bytes:
    body = b"".join(b"%d,%d.5,x%d\n" % (i, i % 97, i) for i in range(rows))
    return b"a,b,t\n" + body + late + b"7,8.5,y\n"


@pytest.mark.parametrize(("late", "ok"), [
    pytest.param(b"1,2.5,z\n", True, id="plain"),
    pytest.param(b"NA,,z\n", True, id="missing"),
    pytest.param(b" 4 ,\t2.5,z\n", True, id="spaces"),
    pytest.param(b'"5","6.5","q""r"\n', True, id="quoted"),
    pytest.param(b"1.5,2,z\n", "rerun", id="float-in-int-column"),
    pytest.param(b"1,oops,z\n", False, id="text-in-float-column"),
    pytest.param(b"99999999999999999999,2,z\n", False, id="beyond-int64"),
    pytest.param(b"9223372036854775807,2,z\n", False, id="overflow"),
    pytest.param(b"1,2\n", False, id="ragged"),
    pytest.param(b'1,2,x"y\n', False, id="stray-quote"),
    pytest.param(b"1,2,\xff\n", False, id="not-utf8"),
    pytest.param(b"1,2,\x1f\n", True, id="unit-separator"),
    pytest.param(b"1,2,a\rb\n", True, id="lone-cr"),
])
@pytest.mark.parametrize("output", [None, "out.csv"])
@pytest.mark.parametrize(("cores", "stdin"), [(1, False), (2, False), (2, True)],
                         ids=["1-core", "2-cores", "stdin"])
def test_late_problems_end_as_on_the_streaming_path(tmp_path, late, ok, output, cores,
                                                    stdin):
    fast, streamed, _finished = run_both(tmp_path, _long(late), ["cumsum"], output,
                                         chunk_rows=4096, chunk_bytes=1 << 16, cores=cores,
                                         stdin=stdin)
    same(fast, streamed)
    # A late decimal in an integer column: a file output from a file is scanned again.
    assert (fast[0] == 0) == (bool(output) and not stdin if ok == "rerun" else ok), fast[2]


# The running statistics on the compiled pipeline's serial step ------------------------

def _stats_table(late: bytes, rows: int = small.INFER_ROWS + 300) -> bytes:
    """An int64 column whose diffs come near int64's ends (a: +-2**62 and small
    values), floats with missing cells, NaN, inf and -0.0 (b), and keys of many groups
    (k)."""
    cells = [b"1.5", b"", b"-0.0", b"nan", b"inf", b"-inf", b"0.0", b"NA", b"2.25e-300"]

    def a(i: int) -> int:
        if i % 5 == 0:
            return i % 7 - 3
        return 2**62 - 1 - i % 1000 if i % 2 else -(2**62) + i % 1000

    body = b"".join(b"%d,%s,g%d\n" % (a(i), cells[i % len(cells)], (i * 7919) % 1500)
                    for i in range(rows))
    return b"a,b,k\n" + body + late + b"7,8.5,g1\n"


@pytest.mark.parametrize(("late", "ok"), [
    pytest.param(b"", True, id="plain"),
    pytest.param(b"NA,,\n", True, id="missing"),
    pytest.param(b"1,oops,g2\n", False, id="text-in-float-column"),
    pytest.param(b"0,1,g3\n-9223372036854775808,1,g3\n9223372036854775807,2,g3\n", "diff",
                 id="int64-diff-overflow"),
])
@pytest.mark.parametrize("op", ["cumcount", "cummean", "diff", "cumcount,cummean,diff",
                                "cumvar", "cumstd --ddof 0", "ewma --alpha 0.2",
                                "ewma --span 3 --no-adjust"])
@pytest.mark.parametrize("by", [[], ["--by", "k"]], ids=["plain", "by"])
@pytest.mark.parametrize("threads", ["1", "2", "3", "16"])
def test_statistics_on_the_compiled_pipeline_are_the_streaming_paths(
        tmp_path, monkeypatch, late, ok, op, by, threads):
    """The running statistics run in the compiled pipeline (its serial step, across many
    small chunks), with the streaming path's bytes; an error late in the file ends as on
    the streaming path (the Python steps word it, the bytes before it the same)."""
    compiled: list[bool] = []
    real = fastcsv._Job._run_compiled

    def spy(self: Any, plan: dict[str, Any]) -> Any:
        compiled.append(False)
        yield from real(self, plan)
        compiled[-1] = True  # the pipeline wrote it all

    monkeypatch.setattr(fastcsv._Job, "_run_compiled", spy)
    fast, streamed, _finished = run_both(tmp_path, _stats_table(late),
                                         [*op.split(), *by, "--threads", threads],
                                         chunk_rows=4096, chunk_bytes=1 << 10)
    same(fast, streamed)
    fails = ok is False or (ok == "diff" and "diff" in op)
    assert (fast[0] == 0) == (not fails), fast[2]
    assert compiled == [not fails]  # taken by the pipeline, to the end where no error
    if ok == "diff" and "diff" in op:
        assert "diff overflows int64 (9223372036854775807 - -9223372036854775808)" in fast[2]


@pytest.mark.parametrize(("late", "ok"), [
    pytest.param(b"1,2.5,z\n", True, id="plain"),
    pytest.param(b"NA,,z\n", True, id="missing"),
    pytest.param(b"1.5,2,z\n", "rerun", id="float-in-int-column"),
    pytest.param(b"9223372036854775807,2,z\n", False, id="overflow"),
    pytest.param(b'1,2,x"y\n', False, id="stray-quote"),
])
@pytest.mark.parametrize("output", [None, "out.jsonl"])
@pytest.mark.parametrize(("cores", "stdin"), [(1, False), (2, True)], ids=["1-core", "stdin"])
def test_late_problems_in_json_lines_end_as_on_the_streaming_path(tmp_path, late, ok, output,
                                                                  cores, stdin):
    fast, streamed, _finished = run_both(tmp_path, _long(late), ["cumsum", *_JSON], output,
                                         chunk_rows=4096, chunk_bytes=1 << 16, cores=cores,
                                         stdin=stdin)
    same(fast, streamed)
    # A late decimal in an integer column: a file output from a file is scanned again.
    assert (fast[0] == 0) == (bool(output) and not stdin if ok == "rerun" else ok), fast[2]


@pytest.mark.parametrize("cores", [1, 2])
def test_rows_far_shorter_than_the_heads_fill_more_pieces(tmp_path, cores):
    """Cell arrays are sized from the head's row length: later rows a hundred times
    shorter overflow them, and the block goes on in further pieces, every row once."""
    head = b"".join(b"%d,%s\n" % (i, b"x" * 200) for i in range(small.INFER_ROWS + 10))
    data = b"a,t\n" + head + b"".join(b"%d,\n" % (i % 10) for i in range(30_000))
    fast, streamed, finished = run_both(tmp_path, data, ["cumsum"], chunk_rows=4096,
                                        chunk_bytes=1 << 16, cores=cores)
    assert finished
    assert fast == streamed
    total = sum(range(small.INFER_ROWS + 10)) + sum(i % 10 for i in range(30_000))
    assert fast[1].endswith(b"\n%d,\n" % total)


def test_a_late_bad_cell_is_named_with_its_row_and_line(tmp_path):
    fast, streamed, _finished = run_both(tmp_path, _long(b"1,oops,z\n"), ["cumsum"],
                                         chunk_rows=4096, chunk_bytes=1 << 10)
    same(fast, streamed)
    row = small.INFER_ROWS + 51
    assert f"row {row} (line {row + 1}), column 'b': 'oops' is not" in fast[2]
    assert fast[1].startswith(b"a,b,t\n0,0.5,x0\n")  # written before the problem


# Random files ------------------------------------------------------------------------

@pytest.mark.slow
@settings(max_examples=int(os.environ.get("CUMTOOL_SMALL_EXAMPLES", "400")), deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                 HealthCheck.function_scoped_fixture])
@given(case=_tables(), rows=st.integers(1, 4), read=st.integers(1, 64),
       cores=st.integers(1, 3))
def test_fast_path_agrees_with_streaming_on_random_files(tmp_path_factory, case, rows, read,
                                                         cores):
    data, args, stdin, output = case
    tmp_path = tmp_path_factory.mktemp("case")
    fast, streamed, _finished = run_both(tmp_path, data, args, output, rows, read, cores,
                                         stdin)
    same(fast, streamed)


@pytest.mark.slow
@settings(max_examples=40, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                 HealthCheck.function_scoped_fixture])
@given(case=_tables(), rows=st.integers(1, 4), read=st.integers(1, 64))
def test_fast_path_agrees_on_some_random_files(tmp_path_factory, case, rows, read):
    data, args, _stdin, output = case
    fast, streamed, _finished = run_both(tmp_path_factory.mktemp("case"), data, args,
                                         output, rows, read)
    same(fast, streamed)


# The C loops against the Python ones -------------------------------------------------

needs_c = pytest.mark.skipif(small.TEXT is None or numtext.NATIVE is None,
                             reason="cumtool._ext._csvtext or _numtext is not built")


def _cut_both(data: bytes, begin: int, delimiter: str, width: int, final: bool,
              capacity: int) -> tuple[Any, Any]:
    outs = []
    for function in (fastcsv.cut, fastcsv.cut_py):
        arrays = [np.zeros((width, capacity), np.int64), np.zeros((width, capacity), np.int64),
                  np.zeros((width, capacity), np.uint8)]
        got = function(data, begin, delimiter, width, final, *arrays)
        rows = got[0]
        outs.append((got, [a[:, :rows].tolist() for a in arrays]))
    return outs[0], outs[1]


@needs_c
@settings(max_examples=400, deadline=None)
@given(text=st.lists(st.sampled_from([b"a", b"b", b",", b";", b"\t", b'"', b"\n", b"\r",
                                      b"\xc3", b"\xa9", b"\0", b"\x1f", b"\xff", b"1"]),
                     max_size=40).map(b"".join),
    delimiter=st.sampled_from([",", ";", "\t"]), width=st.integers(1, 3),
    final=st.booleans(), capacity=st.integers(1, 5), begin=st.integers(0, 3))
def test_cut_is_cut_py(text, delimiter, width, final, capacity, begin):
    begin = min(begin, len(text))
    mine, theirs = _cut_both(text, begin, delimiter, width, final, capacity)
    assert mine == theirs


@needs_c
@settings(max_examples=200, deadline=None)
@given(text=st.text(alphabet=st.sampled_from(list('ab,;\t"\n é')), max_size=40),
       delimiter=st.sampled_from([",", ";", "\t"]), out=st.sampled_from([",", "|", "\t"]),
       by_sink=st.booleans(), single=st.booleans(),
       floats=st.lists(st.floats(allow_nan=True, allow_infinity=True), min_size=8, max_size=8),
       ints=st.lists(st.integers(-(2**63), 2**63 - 1), min_size=8, max_size=8),
       gone=st.lists(st.booleans(), min_size=8, max_size=8),
       null=st.sampled_from([b"", b"NA", b'"N,A"', b"N" * 40]))  # longer than a number
def test_assemble_is_assemble_py(text, delimiter, out, by_sink, single, floats, ints, gone,
                                 null):
    data = text.encode()
    try:
        records = small.records(data, delimiter, False)[1] if data.strip(b"\r\n") else []
    except small.Handover:
        return
    width = len(records[0]) if records else 1
    capacity = 8
    arrays = [np.zeros((width, capacity), np.int64), np.zeros((width, capacity), np.int64),
              np.zeros((width, capacity), np.uint8)]
    try:
        rows, _end, _status = fastcsv.cut(data, 0, delimiter, width, True, *arrays)
    except small.Handover:
        return
    missing = np.array(gone[:rows], bool)
    columns = [*range(width), (np.arange(rows, dtype=np.float64) / 3, None, b""), 0,
               (np.array(floats[:rows], np.float64), missing, null),
               (np.array(ints[:rows], np.int64), None, null),
               (np.array(ints[:rows], np.int64), missing, null)]
    assert small.TEXT is not None
    text = small.TEXT.assemble(data, *arrays, capacity, rows, columns, out, by_sink, single)
    assert text == fastcsv.assemble_py(data, *arrays, capacity, rows, columns, out, by_sink,
                                       single)
    # into a reused buffer (CsvSink's): bigger or smaller than the text, in C and Python
    for write in (small.TEXT.assemble, fastcsv.assemble_py):
        for junk in (b"~" * (len(text) + 5), b"~"):
            into = bytearray(junk)
            assert write(data, *arrays, capacity, rows, columns, out, by_sink, single,
                         into) == len(text)
            assert bytes(into[:len(text)]) == text
            assert len(into) >= len(junk)  # grown where needed, never shrunk


@needs_c
@settings(max_examples=100, deadline=None)
@given(values=st.lists(st.integers(-(1 << 63), (1 << 63) - 1), max_size=20),
       gaps=st.integers(0, (1 << 20) - 1), null=st.sampled_from([b"", b"NA", b'""']))
def test_format_ints_is_str(values, gaps, null):
    array = np.array(values, np.int64)
    missing = np.array([(gaps >> (k % 20)) & 1 == 1 for k in range(len(values))], bool)
    for gone in (None, missing):
        text, offsets = numtext.format_ints(array, gone, null)
        their_text, their_offsets = numtext.format_ints_py(array, gone, null)
        assert text == their_text
        assert offsets.tolist() == their_offsets.tolist()


@needs_c
def test_the_c_loops_refuse_what_they_cannot_read():
    text = small.TEXT
    assert text is not None
    arrays = [np.zeros((2, 4), np.int64), np.zeros((2, 4), np.int64), np.zeros((2, 4), np.uint8)]
    with pytest.raises(ValueError):
        text.cut(b"a,b\n", 0, '"', 2, True, *arrays)
    with pytest.raises(ValueError):
        text.cut(b"a,b\n", 9, ",", 2, True, *arrays)
    with pytest.raises(ValueError):
        text.cut(b"a,b\n", 0, ",", 2, True, arrays[0], arrays[1], np.zeros(3, np.uint8))
    assert text.cut(b"a,b\n", 0, ",", 2, True, *arrays) == (1, 4, 0)
    with pytest.raises(ValueError):  # a cell outside the data
        text.assemble(b"a", *arrays, 4, 1, [0], ",", False, False)
    with pytest.raises(ValueError):
        text.assemble(b"a,b\n", *arrays, 4, 1, [5], ",", False, False)
    with pytest.raises(TypeError):
        text.assemble(b"a,b\n", *arrays, 4, 1, ["x"], ",", False, False)
    with pytest.raises(TypeError, match="an int, "):  # a result: numbers, or text
        text.assemble(b"a,b\n", *arrays, 4, 1, [(b"12",)], ",", False, False)
    with pytest.raises(TypeError, match="into must be a bytearray or None"):
        text.assemble(b"a,b\n", *arrays, 4, 1, [0], ",", False, False, b"room")
    # a result's text: row r's cell text[offsets[r]:offsets[r + 1]], checked
    assert text.assemble(b"a,b\n", *arrays, 4, 1, [(b"12", np.array([0, 2], np.int64)), 1],
                         ",", False, False) == b"12,b\n"
    for offsets, error in [(np.array([0, 5], np.int64), "outside the data"),  # past the text
                           (np.array([2, 1], np.int64), "outside the data"),  # backwards
                           (np.array([-1, 1], np.int64), "outside the data"),
                           (np.array([0, 1, 2], np.int64), "offsets"),  # not rows + 1
                           (np.array([0, 1], np.int32), "offsets")]:
        with pytest.raises(ValueError, match=error):
            text.assemble(b"a,b\n", *arrays, 4, 1, [(b"12", offsets)], ",", False, False)
    for numbers in [(np.zeros(2, np.float64), None, b""),  # not one a row
                    (np.zeros(1, np.float32), None, b""),  # neither float64 nor int64
                    (np.zeros(1, np.float64), np.zeros(2, bool), b""),
                    (np.zeros(1, np.float64), np.zeros(1, np.uint8), b""),
                    (np.zeros((1, 1), np.float64), None, b"")]:
        with pytest.raises(ValueError, match="a result's values"):
            text.assemble(b"a,b\n", *arrays, 4, 1, [numbers], ",", False, False)
    with pytest.raises(TypeError):
        text.assemble(b"a,b\n", *arrays, 4, 1, [(np.zeros(1), None, "NA")], ",", False, False)
    assert text.assemble(b"a,b\n", *arrays, 4, 1, [0, (np.array([2.5]), None, b"")], ",",
                         False, False) == b"a,2.5\n"
    with pytest.raises(TypeError):
        numtext.NATIVE.format_ints(np.zeros(2, np.float64), None, b"")  # type: ignore[union-attr]


@pytest.mark.parametrize("args", [["cumsum,cummax", "--keep"], ["cumsum,cummean", "--by", "t"]],
                         ids=["plain", "by"])
def test_fast_path_runs_without_the_c_loops(tmp_path, monkeypatch, args):
    """The Python twins take over where _csvtext, _numtext and _sequential are not built:
    the same bytes."""
    data = _long(b'"5","6.5","q""r"\n', rows=300).replace(b",x", b",x1")
    monkeypatch.setattr(fastcsv, "TEXT", None)
    monkeypatch.setattr(numtext, "NATIVE", None)
    monkeypatch.setattr(native, "SEQUENTIAL", None)
    fast, streamed, finished = run_both(tmp_path, data, args, chunk_rows=64,
                                        chunk_bytes=1000)
    assert finished
    assert fast == streamed


def _keyed_long(late: bytes, rows: int = small.INFER_ROWS + 50) -> bytes:
    body = b"".join(b"k%d,%d,%d.5\n" % (i % 7, i, i % 97) for i in range(rows))
    return b"key,a,b\n" + body + late + b"k1,8,8.5\n"


@pytest.mark.parametrize(("late", "ok"), [
    pytest.param(b'"k1",1,2.5\n', True, id="plain"),
    pytest.param(b",1,2.5\n\"\",2,3.5\n", True, id="missing-keys"),
    pytest.param(b"k2,9223372036854775807,2\n", False, id="overflow"),
    pytest.param(b"k2,1,oops\n", False, id="bad-cell"),
    pytest.param(b"k\rb,1,2.5\n", True, id="lone-cr-in-a-key"),
])
@pytest.mark.parametrize("output", [None, "out.csv"])
@pytest.mark.parametrize(("cores", "stdin"), [(1, False), (2, True)], ids=["1-core", "stdin"])
def test_grouped_late_problems_end_as_on_the_streaming_path(tmp_path, late, ok, output,
                                                            cores, stdin):
    """--by over many blocks: each group's carry goes on from block to block, and a
    problem late in the file ends as it does on the streaming path."""
    fast, streamed, finished = run_both(tmp_path, _keyed_long(late), ["cumsum", "--by", "key"],
                                        output, chunk_rows=512, chunk_bytes=1 << 14,
                                        cores=cores, stdin=stdin)
    same(fast, streamed)
    # A late decimal in an integer column: a file output from a file is scanned again.
    assert (fast[0] == 0) == (bool(output) and not stdin if ok == "rerun" else ok), fast[2]
    assert finished == (ok and b"\r" not in late)


# Imports -----------------------------------------------------------------------------

@pytest.mark.parametrize("by", [[], ["--by", "t"]], ids=["plain", "by"])
def test_a_large_csv_imports_neither_polars_nor_pyarrow(tmp_path, by):
    count = small.SMALL_BYTES // 6
    rows = b"".join(b"%d,x\n" % i for i in range(count))
    (tmp_path / "big.csv").write_bytes(b"a,t\n" + rows)
    code = ("import sys\nfrom cumtool.cli import main\ntry:\n    main(['cumsum', "
            f"'big.csv', '-o', 'out.csv', *{by!r}])\nexcept SystemExit:\n    pass\n"
            "print(sorted(m for m in ('polars', 'pyarrow') if m in sys.modules))\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, check=True,
                          cwd=tmp_path)
    assert done.stdout.split(b"\n")[-2] == b"[]"
    out = (tmp_path / "out.csv").read_bytes()
    assert out.endswith(b"\n%d,x\n" % (count * (count - 1) // 2))


@pytest.mark.parametrize("late", [b"", b"1,2,a\rb\n", b"1,oops,z\n"],
                         ids=["plain", "lone-cr", "bad-cell"])
def test_a_pipe_gives_the_streaming_paths_bytes(tmp_path, late):
    """Through a real pipe, past the small path: the pipeline's output (polars never
    loaded), or after a late hand-over the streaming path's (polars loaded then)."""
    data = _long(late, rows=small.SMALL_BYTES // 10)
    env = dict(os.environ, PYTHONPROFILEIMPORTTIME="1")
    command = [sys.executable, "-m", "cumtool", "cumsum", "-"]
    piped = subprocess.run(command, input=data, capture_output=True, env=env)
    (tmp_path / "in.csv").write_bytes(data)
    streamed = subprocess.run([*command[:-1], str(tmp_path / "in.csv"), "--batch-rows", "9999"],
                              capture_output=True)
    imports = [line for line in piped.stderr.splitlines() if line.startswith(b"import time:")]
    stderr = b"".join(line + b"\n" for line in piped.stderr.splitlines()
                      if not line.startswith(b"import time:"))
    same((piped.returncode, piped.stdout, stderr, None),
         (streamed.returncode, streamed.stdout,
          streamed.stderr.replace(str(tmp_path / "in.csv").encode(), b"standard input"), None))
    assert piped.returncode == (1 if b"oops" in late else 0)
    loaded = {line.rsplit(b"|", 1)[-1].strip() for line in imports}
    assert (b"polars" in loaded) == bool(late)


def test_a_pipe_that_pauses_has_its_rows_written_before_it_goes_on(tmp_path):
    """A producer that writes a few blocks and then waits: every row so far is out
    before the pipeline reads on (it does not sit on finished blocks)."""
    rows = small.SMALL_BYTES // 7  # past the small path, several blocks
    body = b"".join(b"%d,%d\n" % (i, i % 7) for i in range(rows))
    last = b"%d,%d\n" % (rows * (rows - 1) // 2, sum(i % 7 for i in range(rows)))
    process = subprocess.Popen([sys.executable, "-m", "cumtool", "cumsum", "-"],
                               stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE)
    assert process.stdin is not None and process.stdout is not None
    seen = bytearray()
    arrived = threading.Event()

    def read() -> None:  # from the start: output fills its pipe while input is written
        assert process.stdout is not None
        while not seen.endswith(last):
            piece = process.stdout.read1(1 << 16)
            if not piece:
                break
            seen.extend(piece)
        arrived.set()

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    try:
        process.stdin.write(b"a,b\n" + body)
        process.stdin.flush()
        assert arrived.wait(60) and seen.endswith(last), "rows held back while input paused"
        assert process.poll() is None  # still waiting for more input
        process.stdin.write(b"1,1\n")
        process.stdin.close()
        rest = process.stdout.read()
        assert process.wait(60) == 0
        assert rest == b"%d,%d\n" % (rows * (rows - 1) // 2 + 1,
                                     sum(i % 7 for i in range(rows)) + 1)
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()


@pytest.mark.parametrize("path", [[], ["--batch-rows", "65536"]], ids=["pipeline", "general"])
def test_rows_that_trickle_in_without_a_pause_go_out_while_they_come(path):
    """A producer that never pauses as long as PAUSE_SECONDS (a row every 5 ms): its rows
    still go out while it writes (every FLUSH_SECONDS), not at the end of the input. The
    producer keeps writing until it sees the result of a row it wrote after the head, or
    for at most 60 s: only rows flushed while the input flows can end it early."""
    process = subprocess.Popen([sys.executable, "-m", "cumtool", "cumsum", "-", *path],
                               stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE)
    assert process.stdin is not None and process.stdout is not None
    head = 12_000  # past the rows the types are judged from
    seen = bytearray()
    arrived = threading.Event()
    marker = b"\n%d,1000001\n" % (head * (head - 1) // 2 + 7)  # the trickle's first row

    def read() -> None:
        assert process.stdout is not None
        while marker not in seen:
            piece = process.stdout.read1(1 << 16)
            if not piece:
                break
            seen.extend(piece)
        arrived.set()

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    try:
        process.stdin.write(b"a,b\n" + b"".join(b"%d,0\n" % i for i in range(head)))
        process.stdin.write(b"7,1000001\n")
        process.stdin.flush()
        written = 0
        while not arrived.wait(0.005) and written < 12_000:  # ~60 s at most
            process.stdin.write(b"0,0\n")
            process.stdin.flush()
            written += 1
        assert marker in seen, "rows held back while the input flowed"
        assert written < 12_000 and process.poll() is None  # it is still reading
        process.stdin.close()
        process.stdout.read()
        assert process.wait(60) == 0
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()


@pytest.mark.parametrize(("late", "ok"), [(b"1,2.5,z\n", True), (b"1,2,a\rb\n", False)],
                         ids=["plain", "lone-cr"])
def test_past_the_spool_limit_a_late_hand_over_is_an_error_naming_the_way_out(
        tmp_path, monkeypatch, late, ok):
    """An endless pipe must not fill the disk: past STDIN_SPOOL_BYTES, standard input is
    no longer kept, and a record the pipeline hands over is then an error (exit 1) that
    says how to read it, never a wrong or partial result silently."""
    monkeypatch.setattr(fastcsv, "STDIN_SPOOL_BYTES", 1000)
    monkeypatch.setattr(fastcsv, "CHUNK_BYTES", 4096)
    data = _long(late)
    fast, streamed, finished = run_both(tmp_path, data, ["cumsum"], stdin=True,
                                        chunk_rows=4096, chunk_bytes=1 << 16)
    if ok:
        assert finished
        assert fast == streamed
        return
    assert fast[0] == 1 and streamed[0] == 0
    found = re.fullmatch(
        r"Error: standard input: a record after row ([\d,]+) needs the general CSV reader, "
        r"and standard input, kept to hand it over, was let go \(past 1000 bytes, or TMPDIR "
        r"is full\); run again with --batch-rows 65536 \(the general reader from the "
        r"start\)\n",
        fast[2])
    assert found, fast[2]
    before = int(found.group(1).replace(",", ""))
    assert 0 < before <= small.INFER_ROWS + 50  # the late row is the 10,051st
    assert streamed[1].startswith(fast[1])
    assert fast[1].count(b"\n") >= before + 1  # those rows and the header went out
