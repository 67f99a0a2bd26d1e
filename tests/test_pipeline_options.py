"""The compiled CSV pipeline's --skipna, --exclusive and --overflow wrap (issue 34) against
its Python twin (fastcsv._Job's own steps, the kernels): the same bytes, messages and exit
statuses at every thread count and chunk size, with missing cells, NaN of either sign,
+-inf, signed zeros, --by groups, and int64 overflow mid-file; and the run took the
pipeline (the statuses of the Pipelines it made: [0], it wrote everything)."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cumtool.formats.csv import small
from tests.test_pipeline import _both, _op

pytestmark = pytest.mark.skipif(getattr(small.TEXT, "Pipeline", None) is None,
                                reason="_csvtext is not built (CUMTOOL_PURE_PYTHON, or no "
                                       "compiler): the Python steps are all there is")

# k: the --by key; x, y: float64 (NaN, -nan, +-inf, -0.0, missing, a marker, spaces, a
# quoted number); n: int64 with missing cells
HEADER = b"k,x,y,n\n"
ROWS = (b"a,1.5,-0.0,3\n"
        b"b,nan,0.0,-2\n"
        b'a,,"2.5",\n'
        b"b,-inf,NA,7\n"
        b"a,2,nan,0\n"
        b"c,NA,-nan,5\n"
        b"a,-nan,1e308,-1\n"
        b"b,inf,1e308,\n"
        b"c, 4 ,-inf,2\n"
        b"a,-0.0,,9\n"
        b"c,nan,inf,-4\n")

PLAIN = ["cumsum", "cumprod", "cummax", "cummin", "cumsum,cummax,cumprod"]
STATS = ["cumcount", "cummean", "cumvar", "cumstd --ddof 0", "ewma --alpha 0.3",
         "ewma --span 4 --no-adjust", "cumcount,cummean,cumvar"]


def _table(path: Path, repeat: int = 3) -> Path:
    path.write_bytes(HEADER + ROWS * repeat)
    return path


def _same(op: str, path: Path, options: list[str], threads: str, chunk: int, by: bool,
          columns: str | None = None) -> bytes:
    """The compiled run and the twin's: the same bytes; the compiled one wrote it all."""
    more = [*options, *(["--by", "k"] if by else []), *(["-c", columns] if columns else [])]
    (code, out, err), statuses = _both(_op(op, path, *more), pytest.MonkeyPatch(), threads,
                                       chunk)
    assert (code, err) == (0, ""), err
    assert statuses == [0]  # the compiled pipeline took the run, and wrote it all
    return out


@pytest.mark.parametrize("by", [False, True], ids=["", "by"])
@pytest.mark.parametrize("threads,chunk", [("1", 1), ("2", 29), ("3", 7), ("16", 1),
                                           ("16", 1 << 20)])
@pytest.mark.parametrize("options", [["--skipna"], ["--exclusive"],
                                     ["--skipna", "--exclusive"]], ids=" ".join)
@pytest.mark.parametrize("op", [*PLAIN, *STATS, "logcumsumexp"])
def test_options_give_the_twins_bytes(tmp_path, op, options, threads, chunk, by):
    out = _same(op, _table(tmp_path / "in.csv"), options, threads, chunk, by)
    assert out.count(b"\n") == 1 + 11 * 3


@pytest.mark.parametrize("threads", ["1", "2", "3", "16"])
@pytest.mark.parametrize("op", ["diff", "diff --overflow wrap", "cumcount,diff"])
def test_diff_skipna_gives_the_twins_bytes(tmp_path, op, threads):
    for by in (False, True):
        _same(op, _table(tmp_path / "in.csv"), ["--skipna"], threads, 9, by)


EXPECTED = {
    "--skipna": (b"x,t\n1.5,a\nnan,b\n,c\n2,d\n-nan,e\ninf,f\n", "2", 8, {
        # a NaN is skipped and kept in place; a missing cell stays missing
        "cumsum": b"x,t\n1.5,a\nNaN,b\n,c\n3.5,d\nNaN,e\ninf,f\n",
        "cummax": b"x,t\n1.5,a\nNaN,b\n,c\n2.0,d\nNaN,e\ninf,f\n",
        # cumcount's int64 holds no NaN: the skipped cell is missing
        "cumcount": b"x,t\n1,a\n,b\n,c\n2,d\n,e\n3,f\n",
        "cummean": b"x,t\n1.5,a\nNaN,b\n,c\n1.75,d\nNaN,e\ninf,f\n",
        "diff": b"x,t\n1.5,a\nNaN,b\n,c\n0.5,d\nNaN,e\ninf,f\n",
    }),
    "--exclusive": (b"x,t\n1.5,a\nnan,b\n,c\n2,d\n", "3", 5, {
        # out[0] the identity; a missing cell stays missing
        "cumsum": b"x,t\n0.0,a\n1.5,b\n,c\nNaN,d\n",
        "cummax": b"x,t\n-inf,a\n1.5,b\n,c\nNaN,d\n",
        "cumcount": b"x,t\n0,a\n1,b\n,c\n2,d\n",
        # a statistic of nothing is missing
        "cummean": b"x,t\n,a\n1.5,b\n,c\nNaN,d\n",
        "cumvar": b"x,t\n,a\nNaN,b\n,c\nNaN,d\n",
    }),
    # with both: a NaN skipped at the start is its own NaN, not a missing cell
    "--exclusive --skipna": (b"x,t\nnan,a\n3,b\nnan,c\n5,d\n", "2", 5, {
        "cummean": b"x,t\nNaN,a\n,b\nNaN,c\n3.0,d\n",
        "cumcount": b"x,t\n,a\n0,b\n,c\n1,d\n",
    }),
}


@pytest.mark.parametrize("options", list(EXPECTED))
def test_options_are_the_expected_numbers(tmp_path, options):
    data, threads, chunk, expected = EXPECTED[options]
    path = tmp_path / "in.csv"
    path.write_bytes(data)
    for op, out in expected.items():
        assert _same(op, path, options.split(), threads, chunk, False) == out, op


def test_an_int64_column_with_skipna_is_the_plain_scan(tmp_path):
    path = tmp_path / "in.csv"
    path.write_bytes(b"n,k\n1,a\n,b\n-3,a\n4,b\n")
    for op in [*PLAIN, *STATS, "diff"]:
        for by in (False, True):
            assert (_same(op, path, ["--skipna"], "2", 8, by)
                    == _same(op, path, [], "2", 8, by)), op


def _overflowing(path: Path, rows: list[bytes]) -> Path:
    path.write_bytes(b"k,n\n" + b"".join(rows))
    return path


@pytest.mark.parametrize("threads", ["1", "2", "3", "16"])
@pytest.mark.parametrize("op", ["cumsum", "cumprod"])
def test_an_exclusive_overflow_stops_where_its_value_would_be_written(tmp_path, op,
                                                                      threads):
    """The running value that left int64 is written at the group's next present cell
    (kernels._raise_exclusive): the error is there, rows after the overflow."""
    big = b"%d" % (2**62)
    rows = [b"a,2\n", b"b,1\n"] * 20 + [b"a,%s\n" % big, b"a,%s\n" % big, b"b,3\n",
                                        b"a,\n", b"b,4\n", b"a,5\n", b"b,6\n"]
    path = _overflowing(tmp_path / "in.csv", rows)
    # cumsum: 60 + 2**62 + 2**62 leaves int64 at row 42, and b's 3 comes next (by a
    # alone: a's 5, row 46); cumprod: 2**20 * 2**62 at row 41, and a's 2**62 next
    for by, row in zip((False, True), {"cumsum": (43, 46), "cumprod": (42, 42)}[op],
                       strict=True):
        more = ["--exclusive", *(["--by", "k"] if by else [])]
        (code, _out, err), statuses = _both([op, str(path), "-c", "n", *more],
                                            pytest.MonkeyPatch(), threads, chunk=16)
        assert code == 1
        assert err == (f"Error: {path}: column 'n', row {row} (line {row + 1}): {op} "
                       "overflows int64; use --overflow wrap for wrap-around\n")
        assert statuses == [2]  # the scan stopped it; the twin's words (and bytes) follow


@pytest.mark.parametrize("threads", ["1", "2", "16"])
def test_an_exclusive_overflow_never_written_is_no_error(tmp_path, threads):
    # the value past int64 would be written at a's next present cell: there is none
    big = b"%d" % (2**62)
    rows = [b"a,1\n", b"b,2\n"] * 30 + [b"a,%s\n" % big, b"a,%s\n" % big, b"b,3\n",
                                        b"a,\n", b"b,4\n"]
    path = _overflowing(tmp_path / "in.csv", rows)
    out = _same("cumsum", path, ["--exclusive"], threads, 16, True, "n")
    assert out.endswith(b"a,%d\nb,60\na,\nb,63\n" % (30 + 2**62))


@pytest.mark.parametrize("threads", ["1", "2", "3", "16"])
@pytest.mark.parametrize("op", ["cumsum", "cumprod", "diff", "cumsum,cumprod,diff"])
@pytest.mark.parametrize("exclusive", [False, True], ids=["", "exclusive"])
def test_overflow_wrap_gives_the_twins_bytes(tmp_path, op, exclusive, threads):
    if exclusive and "diff" in op:
        return  # diff refuses --exclusive
    values = [2**63 - 1, 3, -(2**63), -1, 0, 2**62, 7, 2**63 - 1, -5, 2**62 + 1]
    rows = [b"%s,%s\n" % (b"ab"[i % 2:i % 2 + 1], b"" if i % 7 == 3 else b"%d" % v)
            for i, v in enumerate(values * 4)]
    path = _overflowing(tmp_path / "in.csv", rows)
    options = ["--overflow", "wrap", *(["--exclusive"] if exclusive else [])]
    for by in (False, True):
        _same(op, path, options, threads, 11, by, "n")


def test_wrap_is_numpys_wrap_around(tmp_path):
    values = np.array([2**63 - 1, 3, -(2**63), -1, 2**62, 5], dtype=np.int64)
    path = _overflowing(tmp_path / "in.csv", [b"a,%d\n" % v for v in values.tolist()])
    with np.errstate(over="ignore"):
        sums, products = np.cumsum(values), np.cumprod(values)
        diffs = np.concatenate([values[:1], np.diff(values)])
    for op, expected in (("cumsum", sums), ("cumprod", products), ("diff", diffs)):
        out = _same(op, path, ["--overflow", "wrap"], "2", 8, False, "n")
        assert out == b"k,n\n" + b"".join(b"a,%d\n" % v for v in expected.tolist()), op


@pytest.mark.parametrize("threads", ["1", "2", "16"])
def test_an_overflow_mid_file_with_skipna_is_worded_as_the_twin_words_it(tmp_path,
                                                                         threads):
    rows = [b"%d,%s\n" % (2**62, b"nan" if i % 3 else b"1.5") for i in range(20)]
    path = tmp_path / "in.csv"
    path.write_bytes(b"n,x\n" + b"".join(rows))
    (code, _out, err), statuses = _both(["cumsum", str(path), "--skipna"],
                                        pytest.MonkeyPatch(), threads, chunk=8)
    assert code == 1
    assert err == (f"Error: {path}: column 'n', row 2 (line 3): cumsum overflows int64 "
                   "(adding 4611686018427387904); use --overflow wrap for wrap-around\n")
    assert statuses == [2]


def test_many_groups_keep_their_own_state(tmp_path):
    # more groups than the first tables hold (1,024 running values a scan), each with
    # its own overflow flag (--exclusive int64) and statistics
    rows = [b"g%d,%s,%s\n" % (i % 3000, b"nan" if i % 5 == 0 else b"%d.5" % (i % 17),
                             b"" if i % 7 == 0 else b"%d" % (i % 11 - 5))
            for i in range(9000)]
    path = tmp_path / "in.csv"
    path.write_bytes(b"k,x,n\n" + b"".join(rows))
    for op in ("cumsum,cummax", "cumcount,cummean,cumstd"):
        for options in (["--skipna"], ["--exclusive"], ["--skipna", "--exclusive"]):
            _same(op, path, options, "3", 4000, True)


_CELLS = st.sampled_from([b"", b"NA", b"1", b"-2", b"3.5", b"-0.0", b"0.0", b"nan", b"-nan",
                          b"inf", b"-inf", b" 7 ", b"1e300", b"-1e300", b"9", b'"5"',
                          b"4611686018427387904", b"-9223372036854775808"])


@pytest.mark.slow
@settings(max_examples=int(os.environ.get("CUMTOOL_PIPELINE_EXAMPLES", "150")), deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(rows=st.lists(st.tuples(st.sampled_from([b"a", b"b", b""]), _CELLS, _CELLS),
                     min_size=1, max_size=40),
       op=st.sampled_from(["cumsum", "cumprod", "cummax", "cummin", "cumsum,cummin",
                           *STATS, "diff"]),
       options=st.sampled_from([["--skipna"], ["--exclusive"], ["--skipna", "--exclusive"],
                                ["--overflow", "wrap"], ["--overflow", "wrap", "--skipna"],
                                ["--overflow", "wrap", "--exclusive"]]),
       threads=st.sampled_from(["1", "2", "3", "16"]), chunk=st.integers(1, 200),
       by=st.booleans())
def test_random_tables_with_options_give_the_twins_bytes(tmp_path_factory, rows, op,
                                                         options, threads, chunk, by):
    if "--exclusive" in options and "diff" in op:
        options = [option for option in options if option != "--exclusive"]
    path: Path = tmp_path_factory.mktemp("case") / "in.csv"
    path.write_bytes(b"k,a,b\n" + b"".join(b",".join(row) + b"\n" for row in rows))
    _both(_op(op, path, *options, *(["--by", "k"] if by else [])), pytest.MonkeyPatch(),
          threads, chunk)
