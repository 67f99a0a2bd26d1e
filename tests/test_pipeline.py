"""The compiled CSV pipeline (_csvtext.Pipeline) against its Python twin (fastcsv._Job's
own steps): the same bytes, messages and exit statuses at every thread count and chunk
size, across quoted newlines, CRLF, blank lines, missing cells, markers, spaces around
numbers, signed zeros, NaN and overflow; and it runs to the end where it should, or stops
where the Python steps must word or read a cell."""

from __future__ import annotations

import io
import itertools
import math
import os
import types
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cumtool.cli import main
from cumtool.formats.csv import fast as fastcsv
from cumtool.formats.csv import small

pytestmark = pytest.mark.skipif(getattr(small.TEXT, "Pipeline", None) is None,
                                reason="_csvtext is not built (CUMTOOL_PURE_PYTHON, or no "
                                       "compiler): the Python steps are all there is")


def _run(args: list[str], monkeypatch: pytest.MonkeyPatch, compiled: bool,
         chunk: int = 64, stdin: bytes | None = None) -> tuple[Any, ...]:
    """cumtool in this process on the fast path (the small path off), compiled or not,
    in chunks of about `chunk` bytes; its exit status, stdout, stderr, and the statuses
    the compiled pipelines ended with."""
    statuses: list[int] = []
    real = small.TEXT

    def pipeline(*a: Any, **keywords: Any) -> Any:
        pipe = real.Pipeline(*a, **keywords)
        made.append(pipe)
        return pipe

    made: list[Any] = []
    spy = types.SimpleNamespace(cut=real.cut, assemble=real.assemble, Pipeline=pipeline)
    with monkeypatch.context() as patch:
        patch.setattr(small, "SMALL_BYTES", -1)
        patch.setattr(fastcsv, "COMPILED", compiled)
        patch.setattr(fastcsv, "PIPELINE_CHUNK_BYTES", chunk)
        patch.setattr(fastcsv, "IN_FLIGHT_BYTES", chunk * 6)
        patch.setattr(fastcsv, "TEXT", spy)
        result = CliRunner().invoke(main, args, catch_exceptions=False, input=stdin)
    statuses = [pipe.status for pipe in made]
    return result.exit_code, result.stdout_bytes, result.stderr, statuses


def _both(args: list[str], monkeypatch: pytest.MonkeyPatch, threads: str = "2",
          chunk: int = 64, stdin: bytes | None = None) -> tuple[tuple[Any, ...], list[int]]:
    """The compiled run and the twin's, which must agree; the compiled one's statuses."""
    argv = [*args, "--threads", threads]
    compiled = _run(argv, monkeypatch, True, chunk, stdin)
    twin = _run(argv, monkeypatch, False, chunk, stdin)
    assert twin[3] == []  # the twin made no pipeline
    if compiled[0] == 0 or twin[0] == 0:
        assert compiled[:3] == twin[:3]
    else:  # an error: standard output before it is the streaming path's, cut off
        assert (compiled[0], compiled[2]) == (twin[0], twin[2])  # where either got to
        shorter, longer = sorted((compiled[1], twin[1]), key=len)
        assert longer.startswith(shorter)
    return compiled[:3], compiled[3]


HEADER = b"id,name,x,y\r\n"
MIXED = (b"1,plain,1.5,-0.0\r\n"
         b'2,"quoted, with comma",-0.0,0.0\r\n'
         b"\r\n"  # a blank line: skipped
         b'3,"two\r\nlines",,NA\r\n'
         b'4,"say ""hi""", 4 ,\t2.5\r\n'
         b"5,,nan,inf\r\n"
         b"6,x,-inf,1e308\r\n"
         b"7,y,2.25,1e308\r\n"
         b"8,z,NA,-1e-300\r\n")


# The running statistics the pipeline's serial step computes (fast._PIPELINE_STATS), with
# their options
STATS = ["cumcount", "cummean", "diff", "cumvar", "cumstd --ddof 0", "ewma --alpha 0.3",
         "ewma --span 4 --no-adjust", "ewma --halflife 2.5", "cumcount,cummean,diff",
         "cumsum,diff", "cumvar,cumstd --ddof 2"]


def _op(op: str, path: Path, *more: str) -> list[str]:
    """The command line of `op` (an op and its options) on `path`."""
    first, *options = op.split()
    return [first, str(path), *options, *more]


@pytest.mark.parametrize("op", ["cumsum", "cumprod", "cummax", "cummin", "logcumsumexp",
                                "cumsum,cummax", *STATS])
@pytest.mark.parametrize("threads", ["1", "2", "3", "16"])
@pytest.mark.parametrize("chunk", [1, 20, 1 << 20])
def test_mixed_cells_give_the_twins_bytes(tmp_path, monkeypatch, op, threads, chunk):
    path = tmp_path / "in.csv"
    path.write_bytes(HEADER + MIXED * 3)
    (code, out, err), statuses = _both(_op(op, path), monkeypatch, threads, chunk)
    assert (code, err) == (0, "")
    assert statuses == [0]  # the compiled pipeline wrote it all
    assert out.count(b"\n") == 1 + 8 * 3 + 3  # the header, the rows, 3 quoted newlines


def test_sums_are_the_expected_numbers(tmp_path, monkeypatch):
    path = tmp_path / "in.csv"
    path.write_bytes(b"a,b,t\n1,0.1,x\n,0.2,y\n3,,z\n-0,-0.0,w\n")
    (code, out, err), statuses = _both(["cumsum", str(path)], monkeypatch)
    assert (code, err, statuses) == (0, "", [0])
    # a missing cell stays missing; -0.0 + 0.0 is 0.0 (numpy's accumulate from 0.0)
    assert out == (b"a,b,t\n1,0.1,x\n,0.30000000000000004,y\n4,,z\n"
                   b"4,0.30000000000000004,w\n")


def test_signed_zeros_and_nan_in_cummax(tmp_path, monkeypatch):
    path = tmp_path / "in.csv"
    path.write_bytes(b"v\n-0.0\n0.0\n-0.0\nnan\n5\n")
    (code, out, _err), statuses = _both(["cummax", str(path)], monkeypatch)
    # ties take the latest (torch), and a NaN wins and stays
    assert (code, statuses) == (0, [0])
    assert out == b"v\n-0.0\n0.0\n-0.0\nNaN\nNaN\n"


def test_statistics_are_the_expected_numbers(tmp_path, monkeypatch):
    path = tmp_path / "in.csv"
    path.write_bytes(b"a,b,t\n1,0.1,x\n,0.2,y\n4,,z\n-2,-0.0,w\n7,nan,v\n")
    expected = {
        # a count of the cells present so far; a missing cell stays missing
        "cumcount": b"a,b,t\n1,1,x\n,2,y\n2,,z\n3,3,w\n4,4,v\n",
        # the running sum in float64 divided by the count: (0.1 + 0.2) / 2, and
        # (0.30000000000000004 + -0.0) / 3; a NaN stays
        "cummean": b"a,b,t\n1.0,0.1,x\n,0.15000000000000002,y\n2.5,,z\n"
                   b"1.0,0.10000000000000002,w\n2.5,NaN,v\n",
        # less the last present value (the first: itself); int64 stays int64
        "diff": b"a,b,t\n1,0.1,x\n,0.1,y\n3,,z\n-6,-0.2,w\n9,NaN,v\n",
        # Welford's M2 / (n - 1): NaN at one value; of 1, 4: 4.5; of 1, 4, -2: 9.0; of
        # 1, 4, -2, 7: 45 / 3 (pandas' expanding().var() gives the same bits)
        "cumvar": b"a,b,t\nNaN,NaN,x\n,0.004999999999999999,y\n4.5,,z\n"
                  b"9.0,0.010000000000000002,w\n15.0,NaN,v\n",
        # --ddof 0: the square root of M2 / n (1, 4: 1.5; 1, 4, -2, 7: sqrt(45 / 4))
        "cumstd --ddof 0": b"a,b,t\n0.0,0.0,x\n,0.049999999999999996,y\n1.5,,z\n"
                           b"2.449489742783178,0.08164965809277261,w\n"
                           b"3.3541019662496847,NaN,v\n",
        # the old weight after c values decayed by 0.5, the new one 1, missing cells
        # skipped: (0.5 * 1 + 4) / 1.5, (0.75 * 3 - 2) / 1.75, (0.875 * y + 7) / 1.875
        "ewma --alpha 0.5": b"a,b,t\n1.0,0.1,x\n,0.16666666666666666,y\n3.0,,z\n"
                            b"0.14285714285714285,0.07142857142857142,w\n3.8,NaN,v\n",
    }
    for op, out in expected.items():
        (code, got, err), statuses = _both(_op(op, path), monkeypatch)
        assert (code, err, statuses, got) == (0, "", [0], out), op


@pytest.mark.parametrize("threads", ["1", "2", "16"])
def test_an_int64_diff_overflow_stops_the_pipeline_and_is_worded_as_the_twin_words_it(
        tmp_path, monkeypatch, threads):
    # the extremes of int64 apart are diffs that fit (1 - -2**63 does not)
    rows = [b"%d" % v for v in (2**63 - 1, -1, -(2**63), -1, 0, 2**63 - 1, 0)] * 5
    rows += [b"-9223372036854775808", b"1", b"2"]
    path = tmp_path / "in.csv"
    path.write_bytes(b"n\n" + b"\n".join(rows) + b"\n")
    (code, _out, err), statuses = _both(["diff", str(path)], monkeypatch, threads, chunk=8)
    assert code == 1
    assert err == (f"Error: {path}: column 'n', row 37 (line 38): diff overflows int64 "
                   "(1 - -9223372036854775808); use --overflow wrap for wrap-around\n")
    assert statuses == [2]  # stopped by the scan, and the twin's words (and bytes) follow


def test_int64_diffs_at_the_edges_of_int64(tmp_path, monkeypatch):
    values = [2**63 - 1, -1, -(2**63) + 1, 0, 2**63 - 1, 0, -(2**63), -1]
    path = tmp_path / "in.csv"
    path.write_bytes(b"n\n" + b"".join(b"%d\n" % v for v in values))
    (code, out, err), statuses = _both(["diff", str(path)], monkeypatch, "3", chunk=8)
    assert (code, err, statuses) == (0, "", [0])
    diffs = [values[0]] + [b - a for a, b in itertools.pairwise(values)]
    assert out == b"n\n" + b"".join(b"%d\n" % d for d in diffs)


@pytest.mark.parametrize("args", [
    ["cummean", "--compensated"], ["diff", "--dtype", "float32"],
    ["cummean", "--dtype", "float32"], ["cumsum", "--compensated"],
    ["cumcount,cumsum", "--compensated"],
    # weights that settle only after billions of values
    ["ewma", "--alpha", "1e-9"],
], ids=" ".join)
def test_statistics_the_serial_step_does_not_compute_run_on_the_python_steps(
        tmp_path, monkeypatch, args):
    path = tmp_path / "in.csv"
    # n: int64 (--skipna changes nothing there); x: float64
    path.write_bytes(b"n,x\n1,nan\n,2.5\n-3,\n4,-0.0\n5,nan\n6,inf\n")
    (code, _out, err), statuses = _both([args[0], str(path), "-c", "n,x", *args[1:]],
                                        monkeypatch, "2", chunk=8)
    assert (code, err) == (0, "")
    assert statuses == []  # _compiled said no: no pipeline was made


@pytest.mark.parametrize("op", [op for op in STATS if "cumsum" not in op])  # the stats'
def test_skipna_on_an_int64_column_is_the_pipelines(tmp_path, monkeypatch, op):
    path = tmp_path / "in.csv"
    path.write_bytes(b"n,t\n1,a\n,b\n-3,c\n4,d\n")
    (code, out, err), statuses = _both(_op(op, path, "--skipna"), monkeypatch, chunk=8)
    assert (code, err, statuses) == (0, "", [0])
    plain, _statuses = _both(_op(op, path), monkeypatch, chunk=8)
    assert out == plain[1]


@pytest.mark.parametrize("options", [["--only-scanned"], ["--keep"], ["--na-rep", "NULL"],
                                     ["--out-delimiter", ";"], ["--na", "NA,-"],
                                     ["-c", "x"], ["--dtype", "float64"]])
def test_options_on_the_pipeline(tmp_path, monkeypatch, options):
    path = tmp_path / "in.csv"
    path.write_bytes(HEADER + MIXED.replace(b"NA", b"-") + MIXED)
    (code, _out, _err), statuses = _both(["cumsum", str(path), *options], monkeypatch,
                                         chunk=32)
    assert code in (0, 1)
    assert statuses in ([], [0], [1])


def test_tsv_without_a_last_line_end(tmp_path, monkeypatch):
    path = tmp_path / "in.tsv"
    path.write_bytes(b"a\tb\n1\tx y\n2\t\"q\"\n3\tz")
    (code, out, _err), statuses = _both(["cumsum", str(path)], monkeypatch, chunk=4)
    assert (code, statuses) == (0, [0])
    assert out == b"a\tb\n1\tx y\n3\tq\n6\tz\n"


def test_standard_input(monkeypatch):
    data = b"a,b\n" + b"".join(b"%d,%d.5\n" % (i, i) for i in range(500))
    (code, out, _err), statuses = _both(["cumsum", "-"], monkeypatch, chunk=100,
                                        stdin=data)
    assert (code, statuses) == (0, [0])
    assert out.endswith(b"\n124750,125000.0\n")


@pytest.mark.parametrize("threads", ["1", "2", "16"])
def test_an_overflow_stops_the_pipeline_and_is_worded_as_the_twin_words_it(
        tmp_path, monkeypatch, threads):
    rows = [b"%d" % (2**62) for _ in range(20)]
    path = tmp_path / "in.csv"
    path.write_bytes(b"n\n" + b"\n".join(rows) + b"\n")
    (code, _out, err), statuses = _both(["cumsum", str(path)], monkeypatch, threads,
                                        chunk=8)
    assert code == 1
    assert err == (f"Error: {path}: column 'n', row 2 (line 3): cumsum overflows int64 "
                   "(adding 4611686018427387904); use --overflow wrap for wrap-around\n")
    assert statuses == [2]  # stopped by the scan, and the twin's words (and bytes) follow


def test_text_in_a_number_column_is_handed_over(tmp_path, monkeypatch):
    body = b"".join(b"%d\n" % i for i in range(small.INFER_ROWS + 40))
    path = tmp_path / "in.csv"
    path.write_bytes(b"n\n" + body + b"oops\n1\n")
    (code, _out, err), statuses = _both(["cumsum", str(path)], monkeypatch, chunk=256)
    assert code == 1 and "'oops'" in err
    assert statuses == [1]


# logcumsumexp, cumvar, cumstd and ewma scan a column a lane (_csvtext.c's Lane: any
# free thread scans a lane's next chunk, and lanes run at once); the plain ops,
# cumcount, diff and cummean share one. Mixes of both, and --skipna / --exclusive.
LANES = ["logcumsumexp", "cummean", "cumvar", "cumstd --ddof 0", "ewma --alpha 0.3",
         "logcumsumexp,cumsum,cummean", "cumcount,cumvar,diff", "cummean --skipna",
         "logcumsumexp --exclusive"]
LANE_ROWS = 400


def _lane_table(path: Path, rows: int = LANE_ROWS, bad: bytes | None = None,
                at: int = 300) -> Path:
    """id (int64), n (int64, some cells missing), x (float64: NaN, missing, signed
    zeros, infinities), a text column; `bad` as the cells of row `at` + 1 (1-based)."""
    lines = [b"id,n,x,name"]
    for i in range(rows):
        if bad is not None and i == at:
            lines.append(bad)
            continue
        n = b"" if i % 13 == 5 else b"%d" % ((i * 7919) % 201 - 100)
        x = [b"nan", b"", b"-0.0", b"inf" if i > 350 else b"1.5", b"%d.%03d" % (i % 9 - 4, i)][
            i % 17 % 5] if i % 17 < 5 else b"%.6g" % ((i * 0.618034) % 3.0 - 1.5)
        lines.append(b"%d,%s,%s,t%d" % (i, n, x, i % 10))
    path.write_bytes(b"\n".join(lines) + b"\n")
    return path


@pytest.mark.parametrize("op", LANES)
def test_a_column_a_lane_gives_the_same_bytes_at_every_thread_count(tmp_path, monkeypatch,
                                                                     op):
    path = _lane_table(tmp_path / "in.csv")
    outs = []
    for threads in ("1", "2", "3", "16"):  # 40-byte chunks: ~250 of them, each lane's own
        (code, out, err), statuses = _both(_op(op, path), monkeypatch, threads, chunk=40)
        assert (code, err, statuses) == (0, "", [0])  # the pipeline wrote it all
        outs.append(out)
    assert outs[0].count(b"\n") == 1 + LANE_ROWS
    assert outs[1] == outs[0] and outs[2] == outs[0] and outs[3] == outs[0]


def test_logcumsumexp_of_an_int_column_is_of_its_values_as_float64(tmp_path, monkeypatch):
    path = tmp_path / "in.csv"
    values = [3, None, -2, 700, 0, None, 12]  # 700: exp overflows; the scan must not
    path.write_bytes(b"n,k\n" + b"".join(b",k\n" if v is None else b"%d,k\n" % v
                                        for v in values))
    (code, out, err), statuses = _both(["logcumsumexp", str(path)], monkeypatch, "3",
                                       chunk=4)
    assert (code, err, statuses) == (0, "", [0])
    lines = out.decode().split("\n")
    assert lines[0] == "n,k" and lines[2] == ",k" and lines[6] == ",k" and lines[8] == ""
    got = [float(lines[i].split(",")[0]) for i in (1, 3, 4, 5, 7)]
    assert got[0] == 3.0
    assert got[1] == pytest.approx(math.log(math.exp(3) + math.exp(-2)), rel=1e-15)
    assert got[2] == 700.0 and got[3] == 700.0 and got[4] == 700.0  # e^-688 is below


@pytest.mark.parametrize("threads", ["1", "2", "3", "16"])
def test_a_stop_in_one_lane_while_the_others_run_ahead_is_worded_as_the_twin_words_it(
        tmp_path, monkeypatch, threads):
    # diff (the shared lane) overflows at row 302; logcumsumexp and cumvar (a lane each)
    # may be chunks past it by then: nothing of that row's chunk or after is written
    path = _lane_table(tmp_path / "in.csv",
                       bad=b"300,100,1.0,t\n301,-9223372036854775808,2.0,t")
    args = ["logcumsumexp,cumvar,diff", str(path), "-c", "n,x"]
    (code, out, err), statuses = _both(args, monkeypatch, threads, chunk=40)
    assert code == 1
    assert err == (f"Error: {path}: column 'n', row 302 (line 303): diff overflows int64 "
                   "(-9223372036854775808 - 100); use --overflow wrap for "
                   "wrap-around\n")
    assert statuses == [2]  # stopped by the scan
    # what was written is the run's own over the rows before the overflow: the chunks
    # before the overflow's, not nothing
    _wrote_the_start_of(out, tmp_path, monkeypatch, args, threads, 40, 290, rows=301,
                        bad=b"300,100,1.0,t")


@pytest.mark.parametrize("threads", ["1", "2", "16"])
def test_text_mid_file_in_a_lane_of_its_own_is_handed_over(tmp_path, monkeypatch, threads):
    at = small.INFER_ROWS + 100  # past the rows judged: the pipeline's cut finds it
    path = _lane_table(tmp_path / "in.csv", rows=at + 100, bad=b"0,oops,1.0,t", at=at)
    args = ["logcumsumexp,cummean", str(path), "-c", "n,x"]
    (code, out, err), statuses = _both(args, monkeypatch, threads, chunk=2000)
    assert code == 1
    assert err == (f"Error: {path}: row {at + 1} (line {at + 2}), column 'n': 'oops' is not "
                   "an integer like the first rows; if 'oops' means a missing cell, pass --na "
                   "'NA,N/A,n/a,NULL,null,None,<NA>,#N/A,oops'\n")
    assert statuses == [1]  # handed over where the cut found it
    # the rows before the cut's chunk
    _wrote_the_start_of(out, tmp_path, monkeypatch, args, threads, 2000, small.INFER_ROWS,
                        rows=at)


def _wrote_the_start_of(out: bytes, tmp_path, monkeypatch, args: list[str], threads: str,
                        chunk: int, lines: int, **table) -> None:
    """`out`, a stopped run's output, is the start of a whole run's over the rows before
    the stop (the input `_lane_table(**table)` makes), and at least `lines` lines."""
    head = _lane_table(tmp_path / "head.csv", **table)
    (_code, whole, _err), _statuses = _both([args[0], str(head), *args[2:]], monkeypatch,
                                            threads, chunk=chunk)
    assert whole.startswith(out)
    assert out.count(b"\n") >= lines


def test_a_wide_pass_through_and_a_long_record(tmp_path, monkeypatch):
    long_cell = b'"' + b"x," * 3000 + b'"'
    path = tmp_path / "in.csv"
    path.write_bytes(b"t,n\n" + b"".join(b"%s,%d\n" % (long_cell if i == 7 else b"s", i)
                                         for i in range(30)))
    (code, out, _err), statuses = _both(["cumsum", str(path)], monkeypatch, chunk=50)
    assert (code, statuses) == (0, [0])
    assert out.count(long_cell) == 1


_CELLS = st.sampled_from([b"", b"NA", b"1", b"-2", b"3.5", b"-0.0", b"0.0", b"nan", b" 7 ",
                          b"1e300", b"-1e300", b"9", b"x", b'"q,"', b'"a\nb"', b'"5"',
                          b"4611686018427387904"])


@pytest.mark.slow
@settings(max_examples=int(os.environ.get("CUMTOOL_PIPELINE_EXAMPLES", "150")), deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(rows=st.lists(st.lists(_CELLS, min_size=3, max_size=3), min_size=1, max_size=40),
       op=st.sampled_from(["cumsum", "cumprod", "cummax", "cummin", "logcumsumexp",
                           "cumsum,cummin", *STATS]),
       threads=st.sampled_from(["1", "2", "3", "16"]), chunk=st.integers(1, 200),
       crlf=st.booleans(), by=st.booleans())
def test_random_tables_give_the_twins_bytes(tmp_path_factory, monkeypatch, rows, op,
                                            threads, chunk, crlf, by):
    end = b"\r\n" if crlf else b"\n"
    data = b"a,b,c" + end + b"".join(b",".join(row) + end for row in rows)
    path: Path = tmp_path_factory.mktemp("case") / "in.csv"
    path.write_bytes(data)
    _both(_op(op, path, *(["--by", "c"] if by else [])), monkeypatch, threads, chunk)


def _pipeline(read: Any, threads: int = 3, chunk: int = 16) -> Any:
    """A Pipeline summing column 0 of `a,b` rows, column 1 copied through."""
    return small.TEXT.Pipeline(b"", read, lambda: True, ",", 2, ",", [(0, True)],
                               [(0, 0, 0)], [(-1, 0), (1, -1)], [b""], b"", False, False,
                               threads, chunk, 1 << 20)


def test_a_read_error_reaches_the_caller_and_the_threads_stop():
    data = io.BytesIO(b"1,x\n2,y\n" * 4)

    def read(size: int) -> bytes:
        got = data.read(size)
        if not got:  # where the input would end, the device fails
            raise OSError(5, "Input/output error")
        return got

    pipe = _pipeline(read)
    with pytest.raises(OSError, match="Input/output error"):
        list(pipe)
    assert pipe.status == 0  # an exception, not a stop


def test_a_pipeline_left_half_read_is_closed():
    data = io.BytesIO(b"".join(b"%d,x\n" % i for i in range(10000)))
    pipe = _pipeline(data.read, threads=4, chunk=8)
    first = bytes(next(pipe))
    assert first.startswith(b"0,x\n1,x\n")
    pipe.close()  # joins the threads: no hang, and no more output
    assert list(pipe) == []


@pytest.mark.parametrize("threads", ["1", "2", "16"])
@pytest.mark.parametrize("op", ["cumsum", "cumprod", "cummax", "cummin", "logcumsumexp",
                                "cumsum,cummax", *STATS])
def test_groups_give_the_twins_bytes(tmp_path, monkeypatch, threads, op):
    # keys whose bytes run into each other across columns ("a","bc" and "ab","c"), quoted
    # and empty keys, and more groups than the first tables hold (4,096 slots, 1,024 keys)
    keys = [(b"a", b"bc"), (b"ab", b"c"), (b'"a,"', b""), (b"", b'"x""y"'), (b"", b"")]
    rows = [b"%s,%s,%d,%s" % (*keys[i % 5], i % 7 - 3, b"" if i % 11 == 0 else b"%d.25" % i)
            for i in range(60)]
    rows += [b"g%d,h,%d,-0.0" % (i, i) for i in range(3000)]
    path = tmp_path / "in.csv"
    path.write_bytes(b"k1,k2,n,x\n" + b"\n".join(rows) + b"\n")
    (code, out, err), statuses = _both(_op(op, path, "--by", "k1,k2"), monkeypatch,
                                       threads, chunk=500)
    assert (code, err, statuses) == (0, "", [0])
    lines = out.split(b"\n")
    if op == "cumsum":  # the groups ("a","bc") and ("ab","c") are apart
        assert lines[1:7] == [b"a,bc,-3,", b"ab,c,-2,1.25", b'"a,",,-1,2.25',
                              b',"x""y",0,3.25', b",,1,4.25", b"a,bc,-1,5.25"]


@pytest.mark.parametrize("threads", ["1", "2", "16"])
def test_groups_the_pool_finds_give_the_twins_bytes(tmp_path, monkeypatch, threads):
    # the pool numbers the rows of keys that earlier chunks brought, the serial step the
    # rest: keys that come back chunk after chunk, while the table grows (4,000 groups),
    # and keys whose bytes run into each other ("g1","2h" and "g12","h")
    rows = []
    for i in range(12000):
        g = (i * 7919) % 4000 if i % 3 else i % 37
        rows.append(b"g%d,%dh,%d,%s" % (g // 10, g % 10, i % 5 - 2,
                                        b"" if i % 13 == 0 else b"%d.5" % (i % 101)))
    rows += [b"g1,2h,1,1", b"g12,h,1,1", b"g1,2h,1,1"]
    path = tmp_path / "in.csv"
    path.write_bytes(b"k1,k2,n,x\n" + b"\n".join(rows) + b"\n")
    (code, out, err), statuses = _both(["cumsum", str(path), "--by", "k1,k2", "-c", "n,x"],
                                       monkeypatch, threads, chunk=700)
    assert (code, err, statuses) == (0, "", [0])
    assert out.split(b"\n")[-3] == b"g12,h,1,1.0"  # a group of its own


def test_an_overflow_in_one_group_is_worded_as_the_twin_words_it(tmp_path, monkeypatch):
    rows = b"".join(b"%s,%d\n" % (b"ab"[i % 2:i % 2 + 1], 2**62) for i in range(12))
    path = tmp_path / "in.csv"
    path.write_bytes(b"k,n\n" + rows)
    (code, _out, err), statuses = _both(["cumsum", str(path), "--by", "k"], monkeypatch,
                                        "3", chunk=8)
    assert code == 1 and "row 3 (line 4)" in err and "overflows int64" in err
    assert statuses == [2]


@pytest.mark.skipif(not hasattr(__import__("fcntl"), "F_GETPIPE_SZ"),
                    reason="pipe sizes are Linux's")
def test_standard_input_from_a_pipe_gets_a_wider_buffer():
    import fcntl
    import os

    from cumtool import sources

    read, write = os.pipe()
    try:
        sources.widen_pipe(read)
        assert fcntl.fcntl(read, fcntl.F_GETPIPE_SZ) == sources.PIPE_BYTES
    finally:
        os.close(read)
        os.close(write)


@pytest.mark.parametrize("width", [3, 90])  # 90 columns: fewer rows a batch (655)
def test_many_batches_in_one_chunk_give_the_twins_bytes(tmp_path, monkeypatch, width):
    header = b",".join(b"c%d" % j for j in range(width))
    rows = [b",".join(b"" if (i + j) % 17 == 0 else b"%d.%d" % (i - j, j % 10)
                      for j in range(width)) for i in range(5000)]
    path = tmp_path / "in.csv"
    path.write_bytes(header + b"\n" + b"\n".join(rows) + b"\n")
    (code, out, err), statuses = _both(["cumsum", str(path)], monkeypatch, "2",
                                       chunk=1 << 22)
    assert (code, err, statuses) == (0, "", [0])
    assert out.count(b"\n") == 5001


# To a file, the pipeline writes the rest on a thread of its own (Pipeline.write_rest) -----

def _table(rows: int) -> bytes:
    return b"id,name,x,n\n" + b"".join(
        b"%d,k%d,%d.%03d,%d\n" % (r, r % 7, r % 1000 - 500, r % 997, r % 13 - 6)
        for r in range(rows))


@pytest.mark.parametrize("threads", ["1", "2", "3", "16"])
@pytest.mark.parametrize("op", ["cumsum", "cummax,cumprod", "cumsum --by name"])
def test_a_file_output_written_by_the_pipelines_writer_has_the_twins_bytes(
        tmp_path, monkeypatch, threads, op):
    from cumtool import output

    taken: list[int | None] = []
    real = output._GuardedStream.write_directly

    def spy(self: Any, writer: Any) -> int | None:
        count = real(self, writer)
        taken.append(count)
        return count

    monkeypatch.setattr(output._GuardedStream, "write_directly", spy)
    path = tmp_path / "in.csv"
    path.write_bytes(_table(3000))
    outputs = []
    for compiled in (True, False):
        out = tmp_path / f"out-{compiled}.csv"
        code, stdout, err, statuses = _run([*op.split()[:1], str(path), *op.split()[1:],
                                            "-o", str(out), "--threads", threads],
                                           monkeypatch, compiled, chunk=4096)
        assert (code, err, stdout) == (0, "", b"")
        assert statuses == ([0] if compiled else [])  # the pipeline ran to the end
        outputs.append(out.read_bytes())
    assert outputs[0] == outputs[1]
    assert outputs[0].count(b"\n") == 3001
    # the compiled run's writer wrote all but the header and the first chunk; one
    # thread asks for its chunks itself (None: write() writes them); the twin has no
    # pipeline to hand the file to
    assert len(taken) == 1
    if threads == "1":
        assert taken == [None]
    else:
        assert len(outputs[0]) - 4096 * 3 < taken[0] < len(outputs[0])


def _subprocess(args: list[str], cwd: Path, **keywords: Any) -> Any:
    """cumtool of this checkout in a process of its own."""
    import subprocess
    import sys

    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
    return subprocess.run([sys.executable, "-m", "cumtool", *args], cwd=cwd, env=env,
                          capture_output="stdout" not in keywords, timeout=120, check=False,
                          **keywords)


def test_standard_output_to_a_file_is_written_by_the_pipelines_writer(tmp_path):
    (tmp_path / "in.csv").write_bytes(_table(200_000))
    assert _subprocess(["cumsum", "in.csv", "-o", "o.csv", "--threads", "3"],
                       tmp_path).returncode == 0
    with open(tmp_path / "stdout.csv", "wb") as stdout:
        done = _subprocess(["cumsum", "in.csv", "--threads", "3", "-q", "--to", "csv"],
                           tmp_path, stdout=stdout, stderr=-1)
    assert (done.returncode, done.stderr) == (0, b"")
    assert (tmp_path / "stdout.csv").read_bytes() == (tmp_path / "o.csv").read_bytes()


def test_a_write_that_fails_on_the_writers_thread_is_one_line_and_no_file(tmp_path):
    """A file size limit (RLIMIT_FSIZE; Python ignores SIGXFSZ, so write() fails with
    EFBIG) met by the writer thread, past the first chunk the caller wrote itself."""
    import resource

    (tmp_path / "in.csv").write_bytes(_table(200_000))  # ~4.5 MB in, more out
    limit = 3 << 20

    def limited() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    done = _subprocess(["cumsum", "in.csv", "-o", "out.csv", "--threads", "3"], tmp_path,
                       preexec_fn=limited)
    assert done.returncode == 1
    assert done.stderr == b"Error: cannot write out.csv: File too large\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.csv"]  # no file, no temp


@pytest.mark.parametrize("to", ["-o", "stdout"])
def test_an_overflow_after_the_writer_wrote_is_the_one_thread_runs(tmp_path, to):
    """The pipeline stops on an overflow chunks after its writer began: the file output
    is dropped and the streaming path words the error; standard output (a file) holds
    what one thread's run leaves there, byte for byte."""
    rows = [b"%d,1\n" % r for r in range(200_000)]
    rows[150_000] = b"150000,%d\n" % (2**63 - 1)
    (tmp_path / "in.csv").write_bytes(b"id,n\n" + b"".join(rows))
    results = []
    for threads in ("3", "1"):
        args = ["cumsum", "in.csv", "--threads", threads]
        if to == "-o":
            done = _subprocess([*args, "-o", f"out{threads}.csv"], tmp_path)
            left = sorted(p.name for p in tmp_path.iterdir())
            results.append((done.returncode, done.stderr, left))
        else:
            with open(tmp_path / f"out{threads}.csv", "wb") as stdout:
                done = _subprocess([*args, "--to", "csv"], tmp_path, stdout=stdout,
                                   stderr=-1)
            text = (tmp_path / f"out{threads}.csv").read_bytes()
            results.append((done.returncode, done.stderr, text))
    assert results[0] == results[1]
    assert results[0][0] == 1
    assert results[0][1] == (b"Error: in.csv: column 'n', row 150001 (line 150002): cumsum "
                             b"overflows int64 (adding 9223372036854775807); use --overflow "
                             b"wrap for wrap-around\n")
    if to == "-o":
        assert results[0][2] == ["in.csv"]


# A regular file's blocks read by the pipeline's pool (Pipeline.blocks) ------------------

def _no_read(size: int) -> bytes:
    raise AssertionError("the pool reads the file: the caller's read() is never called")


def _file_pipeline(stream: Any, offset: int, threads: int, chunk: int,
                   max_record: int = 1 << 20) -> Any:
    """_pipeline's sums, the file's blocks read by the pool from `offset` on."""
    return small.TEXT.Pipeline(b"", _no_read, lambda: True, ",", 2, ",", [(0, True)],
                               [(0, 0, 0)], [(-1, 0), (1, -1)], [b""], b"", False, False,
                               threads, chunk, max_record, steady=True,
                               in_fd=stream.fileno(), in_offset=offset)


QUOTED_ROWS = b"".join(b'%d,"say ""%d""\nand, on"\n' % (i, i) if i % 3 == 0
                       else b"%d,plain%d\r\n" % (i, i) for i in range(400))


@pytest.mark.parametrize("threads", [1, 3, 16])
@pytest.mark.parametrize("chunk", [1, 7, 64, 4096])
def test_a_files_blocks_read_by_the_pool_give_the_bytes_the_callers_reads_give(
        tmp_path, threads, chunk):
    # the quoted fields' LFs and quotes fall on every side of the blocks' edges
    skipped = b'not,"a row\n"\n'  # before the offset: never read
    path = tmp_path / "in.csv"
    path.write_bytes(skipped + QUOTED_ROWS)
    with open(path, "rb") as stream:
        pipe = _file_pipeline(stream, len(skipped), threads, chunk)
        out = b"".join(bytes(piece) for piece in pipe)
    assert (pipe.blocks, pipe.status, pipe.rows) == (1, 0, 400)
    twin = _pipeline(io.BytesIO(QUOTED_ROWS).read, threads, chunk)
    assert out == b"".join(bytes(piece) for piece in twin)
    assert twin.blocks == 0
    assert out.startswith(b'0,"say ""0""\nand, on"\n1,plain1\n')
    assert out.endswith(b'%d,"say ""399""\nand, on"\n' % sum(range(400)))


def test_a_file_that_grows_while_its_blocks_are_read_is_read_to_its_new_end(tmp_path):
    path = tmp_path / "log.csv"
    path.write_bytes(b"".join(b"%d,a\n" % i for i in range(100)))
    with open(path, "rb") as stream:
        pipe = _file_pipeline(stream, 0, threads=1, chunk=64)  # nothing read yet
        with open(path, "ab") as log:
            log.write(b"".join(b"%d,b\n" % i for i in range(100, 150)))
        out = b"".join(bytes(piece) for piece in pipe)
    assert pipe.rows == 150
    assert out.endswith(b"%d,b\n" % sum(range(150)))


@pytest.mark.parametrize("threads", [1, 3])
def test_a_record_longer_than_the_room_before_a_block_moves_the_block(tmp_path, threads):
    # 100 KiB of a record begun in blocks before: more than the 64 KiB kept before each
    rows = [b"%d,x\n" % i for i in range(40)]
    rows[20] = b'20,"' + b"y\n" * 50_000 + b'"\n'
    data = b"".join(rows)
    path = tmp_path / "in.csv"
    path.write_bytes(data)
    with open(path, "rb") as stream:
        pipe = _file_pipeline(stream, 0, threads, chunk=4096)
        out = b"".join(bytes(piece) for piece in pipe)
    assert (pipe.status, pipe.rows) == (0, 40)
    assert out == b"".join(bytes(piece) for piece in _pipeline(io.BytesIO(data).read,
                                                                threads, 4096))
    assert out.endswith(b"%d,x\n" % sum(range(40)))
    assert b'210,"' + b"y\n" * 50_000 + b'"\n' in out


def test_a_record_longer_than_the_limit_across_blocks_stops_the_pipeline(tmp_path):
    path = tmp_path / "in.csv"
    rows = [b"%d,x\n" % i for i in range(20)]
    rows[12] = b'12,"' + b"y" * 300 + b'"\n'
    path.write_bytes(b"".join(rows))
    with open(path, "rb") as stream:
        pipe = _file_pipeline(stream, 0, threads=3, chunk=16, max_record=100)
        out = b"".join(bytes(piece) for piece in pipe)
    assert pipe.status == 1  # the Python steps name the record
    assert out == b"".join(b"%d,x\n" % sum(range(i + 1)) for i in range(pipe.rows))
    assert 9 <= pipe.rows <= 12  # the chunks before the record's, whole


def test_a_file_is_read_by_the_pool_and_standard_input_by_the_caller(tmp_path,
                                                                      monkeypatch):
    made: list[Any] = []
    real = small.TEXT

    def pipeline(*a: Any, **keywords: Any) -> Any:
        made.append(real.Pipeline(*a, **keywords))
        return made[-1]

    spy = types.SimpleNamespace(cut=real.cut, assemble=real.assemble, Pipeline=pipeline)
    path = tmp_path / "in.csv"
    path.write_bytes(HEADER + MIXED * 50)
    outputs = []
    for source, stdin in ((str(path), None), ("-", path.read_bytes())):
        with monkeypatch.context() as patch:
            patch.setattr(small, "SMALL_BYTES", -1)
            patch.setattr(fastcsv, "PIPELINE_CHUNK_BYTES", 100)
            patch.setattr(fastcsv, "TEXT", spy)
            result = CliRunner().invoke(main, ["cumsum", source, "--threads", "3"],
                                        input=stdin, catch_exceptions=False)
        assert result.exit_code == 0
        outputs.append(result.stdout_bytes)
    assert [(pipe.blocks, pipe.status) for pipe in made] == [(1, 0), (0, 0)]
    assert outputs[0] == outputs[1]
    assert outputs[0].count(b"\n") == 1 + 8 * 50 + 50  # the header, rows, quoted LFs


class _Gathering:
    def __init__(self) -> None:
        self.batches: list[Any] = []
        self.ends: list[str] = []

    def write(self, batch: Any) -> None:
        self.batches.append(batch)

    def close(self) -> None:
        self.ends.append("close")

    def drain(self) -> None:
        self.ends.append("drain")

    def abort(self) -> None:
        self.ends.append("abort")


@pytest.mark.parametrize("seed", range(5))
def test_regrouped_batches_hold_fixed_rows_however_they_came(seed):
    import random

    import pyarrow as pa

    from cumtool.pipeline import Regrouped

    rng = random.Random(seed)
    table = pa.table({"x": list(range(1000)), "s": [f"r{k}" for k in range(1000)]})
    cuts = [*sorted(rng.sample(range(1, 1000), 30)), 1000]
    for end in ("close", "drain"):
        inner = _Gathering()
        sink = Regrouped(inner, 64)
        start = 0
        for cut in cuts:
            sink.write(pa.RecordBatch.from_pylist(table.slice(start, cut - start).to_pylist(),
                                                  schema=table.schema))
            start = cut
        sink.write(pa.RecordBatch.from_pylist([], schema=table.schema))  # an empty batch
        getattr(sink, end)()
        assert [b.num_rows for b in inner.batches] == [64] * 15 + [40]
        assert pa.Table.from_batches(inner.batches).equals(table)
        assert inner.ends == [end]
