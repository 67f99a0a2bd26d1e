"""Several inputs as one stream (files, globs, directories, hive-partitioned Parquet),
`-o DIR/`, `--filename-column` and resumable runs with `--state`.

The contract (SEMANTICS.md, difference 4): however the rows are split into files, batches
or runs resumed from a saved state, the output is the same, bit for bit. Expected values
are computed here with numpy or written out by hand.
"""

from __future__ import annotations

import json
import os
import struct
import tempfile
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from helpers import ok
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cumtool.cli import main


@pytest.fixture
def cli(runner, tmp_path, monkeypatch):
    """Run cumtool in tmp_path (relative paths, as a user types them)."""
    monkeypatch.chdir(tmp_path)

    def run(*args: str):
        return runner.invoke(main, list(args), catch_exceptions=False)

    return run


def write(path: str | Path, text: str) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def write_parquet(path: str | Path, table: pa.Table) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(table, path)
    return path


def csv_column(text: str, name: str) -> list[str]:
    lines = text.splitlines()
    at = lines[0].split(",").index(name)
    return [line.split(",")[at] for line in lines[1:]]


# Many inputs as one stream -------------------------------------------------------------

def test_several_files_give_the_running_total_of_their_rows_in_order(cli):
    write("a.csv", "x,note\n1,p\n2,q\n")
    write("b.csv", "x,note\n3,r\n")
    write("c.csv", "x,note\n4,s\n5,t\n")
    result = ok(cli("cumsum", "a.csv", "b.csv", "c.csv"))
    assert result.stdout == "x,note\n1,p\n3,q\n6,r\n10,s\n15,t\n"


def test_a_quoted_glob_is_expanded_in_natural_order(cli):
    for part in (10, 2, 1):
        write(f"logs/p-{part}.csv", f"x\n{part}\n")
    result = ok(cli("cumsum", "logs/p-*.csv", "--filename-column", "file"))
    assert result.stdout == ("file,x\nlogs/p-1.csv,1\nlogs/p-2.csv,3\nlogs/p-10.csv,13\n")


def test_a_missing_later_input_is_an_error_before_any_output(cli):
    write("a.csv", "x\n1\n")
    result = cli("cumsum", "a.csv", "nope.csv")
    assert result.exit_code == 1
    assert result.stdout == ""
    assert result.stderr == "Error: nope.csv: no such file\n"


def test_a_glob_that_matches_nothing_is_an_error(cli):
    result = cli("cumsum", "logs/*.csv")
    assert result.exit_code == 1
    assert result.stderr == "Error: logs/*.csv: no file matches\n"


def test_a_directory_is_read_recursively_skipping_hidden_and_underscore_names(cli):
    write("data/2026-01/day-9.csv", "x\n1\n")
    write("data/2026-01/day-10.csv", "x\n10\n")
    write("data/2026-02/day-1.csv", "x\n100\n")
    write("data/_SUCCESS", "")
    write("data/.day-0.csv.crc", "junk")
    result = ok(cli("cumsum", "data", "--filename-column", "f"))
    assert result.stdout == ("f,x\ndata/2026-01/day-9.csv,1\ndata/2026-01/day-10.csv,11\n"
                             "data/2026-02/day-1.csv,111\n")


def test_an_empty_directory_is_an_error(cli, tmp_path):
    (tmp_path / "empty").mkdir()
    result = cli("cumsum", "empty")
    assert result.exit_code == 1
    assert result.stderr == "Error: empty: the directory holds no files\n"


def test_hive_partitioned_parquet_gives_its_keys_as_text_columns(cli):
    table = pa.table({"x": pa.array([1.5, 2.0])})
    write_parquet("sales/year=2026/city=New%20York/part-0.parquet", table)
    write_parquet("sales/year=2026/city=__HIVE_DEFAULT_PARTITION__/part-0.parquet", table)
    write_parquet("sales/year=2025/city=Oslo/part-0.parquet", table)
    ok(cli("cumsum", "sales", "-o", "out.parquet"))
    out = pq.read_table("out.parquet")
    assert out.schema == pa.schema([("x", pa.float64()), ("year", pa.string()),
                                    ("city", pa.string())])
    assert out.to_pydict() == {
        "x": [1.5, 3.5, 5.0, 7.0, 8.5, 10.5],
        "year": ["2025", "2025", "2026", "2026", "2026", "2026"],
        # natural order of the folder names: "New%20York" < "__HIVE..." as text
        "city": ["Oslo", "Oslo", "New York", "New York", None, None],
    }


def test_parquet_files_give_the_bits_of_their_concatenation(cli):
    values = np.array([0.1, 0.2, 0.3, 1e16, 1.0, -1e16, 0.7], dtype=np.float64)
    write_parquet("p1.parquet", pa.table({"v": values[:3]}))
    write_parquet("p2.parquet", pa.table({"v": values[3:]}))
    ok(cli("cumsum", "p1.parquet", "p2.parquet", "-o", "out.parquet", "--batch-rows", "2"))
    got = pq.read_table("out.parquet").column("v").to_numpy()
    assert got.tobytes() == np.cumsum(values).tobytes()


def test_a_later_csv_with_other_columns_is_an_error_naming_both_files(cli):
    write("a.csv", "x,y\n1,2\n")
    write("b.csv", "x,z\n1,2\n")
    write("c.csv", "x\n1\n")
    result = cli("cumsum", "a.csv", "b.csv", "-o", "out.csv")
    assert result.exit_code == 1
    assert result.stderr == ("Error: b.csv: its columns differ from a.csv's (column 2 is "
                             "'z', not 'y'); the inputs must share a schema\n")
    assert not os.path.exists("out.csv")
    result = cli("cumsum", "a.csv", "c.csv")
    assert result.stderr.endswith("Error: c.csv: its columns differ from a.csv's (1 column, "
                                  "not 2); the inputs must share a schema\n")


def test_a_later_parquet_column_of_another_type_is_an_error_naming_both_files(cli):
    write_parquet("a.parquet", pa.table({"x": pa.array([1], pa.int64())}))
    write_parquet("b.parquet", pa.table({"x": pa.array([1.5])}))
    result = cli("cumsum", "a.parquet", "b.parquet", "-o", "out.parquet")
    assert result.exit_code == 1
    assert result.stderr == ("Error: b.parquet: column 'x' is double, but in a.parquet it "
                             "is int64; the inputs must share a schema\n")


def test_inputs_of_different_formats_are_an_error(cli):
    write("a.csv", "x\n1\n")
    write_parquet("b.parquet", pa.table({"x": [1]}))
    result = cli("cumsum", "a.csv", "b.parquet", "-o", "out.csv")
    assert result.exit_code == 1
    assert result.stderr == ("Error: b.parquet: is parquet, but a.csv is csv; the inputs "
                             "must share a format and schema\n")


@pytest.mark.parametrize("empty_first", [pytest.param(True, id="empty-first"),
                                         pytest.param(False, id="empty-later")])
def test_an_empty_parquet_file_with_a_null_typed_column_joins_the_others(cli, empty_first):
    empty = pa.table({"x": pa.array([], pa.int64()), "t": pa.array([], pa.null())})
    full = pa.table({"x": pa.array([1, 2]), "t": pa.array(["a", None])})
    names = ["0.parquet", "1.parquet"]
    write_parquet(names[0], empty if empty_first else full)
    write_parquet(names[1], full if empty_first else empty)
    ok(cli("cumsum", *names, "-o", "out.parquet"))
    out = pq.read_table("out.parquet")
    assert out.schema.field("t").type == pa.string()
    assert out.to_pydict() == {"x": [1, 3], "t": ["a", None]}


def test_csv_column_kinds_come_from_the_first_file_with_a_value_in_them(cli):
    write("0.csv", "k,x\n")  # no rows: nothing to judge from
    write("1.csv", "k,x\na,\n")  # x all missing
    write("2.csv", "k,x\nb,2\nc,3\n")
    result = ok(cli("cumsum", "0.csv", "1.csv", "2.csv"))
    assert result.stdout == "k,x\na,\nb,2\nc,5\n"


@pytest.mark.parametrize("options", [pytest.param([], id="plain"),
                                     pytest.param(["--by", "k"], id="by"),
                                     pytest.param(["--batch-rows", "1"], id="batches")])
def test_an_overflow_names_the_file_and_the_row_within_it(cli, options):
    write("a.csv", "k,x\na,9223372036854775000\n")
    write("b.csv", "k,x\nb,1\na,2000\n")
    result = cli("cumsum", "a.csv", "b.csv", "-o", "out.csv", "-c", "x", *options)
    assert result.exit_code == 1
    assert result.stderr == ("Error: b.csv: column 'x', row 2 (line 3): cumsum overflows int64 "
                             "(adding 2000); use --overflow wrap for wrap-around\n")


def test_a_bad_cell_names_the_file_and_the_row_within_it(cli):
    write("a.csv", "x\n1\n2\n")
    write("b.csv", "x\n1\nzz\n")
    result = cli("cumsum", "a.csv", "b.csv", "-o", "out.csv")
    assert result.exit_code == 1
    assert result.stderr.startswith("Error: b.csv: row 2 (line 3), column 'x': 'zz' is not an "
                                    "integer like the first rows")


def test_standard_input_cannot_be_one_of_several_inputs(cli):
    write("a.csv", "x\n1\n")
    result = cli("cumsum", "-", "a.csv")
    assert result.exit_code == 2
    assert result.stderr == ("Error: standard input ('-') can only be the one input, not "
                             "one of several\n")


def test_several_npy_inputs_are_refused(cli):
    np.save("a.npy", np.arange(3))
    np.save("b.npy", np.arange(3))
    result = cli("cumsum", "a.npy", "b.npy", "-o", "out.npy")
    assert result.exit_code == 2
    assert "a.npy: several inputs, directories and --filename-column work on tables" in (
        result.stderr)


# -o DIR/: one output per input ---------------------------------------------------------

def test_a_daily_state_run_into_a_directory_keeps_the_earlier_days_outputs(cli):
    """Each day's run rewrote the earlier days' outputs as their header alone: their rows
    were consumed, so none was written."""
    write("days/1.csv", "v\n1\n2\n")
    ok(cli("cumsum", "days", "--state", "s.json", "-o", "out/"))
    assert Path("out/1.csv").read_text() == "v\n1\n3\n"
    write("days/2.csv", "v\n5\n")
    ok(cli("cumsum", "days", "--state", "s.json", "-o", "out/"))
    assert Path("out/1.csv").read_text() == "v\n1\n3\n"
    assert Path("out/2.csv").read_text() == "v\n8\n"
    ok(cli("cumsum", "days", "--state", "s.json", "-o", "out/"))  # a retry: the same
    assert (Path("out/1.csv").read_text(), Path("out/2.csv").read_text()) == (
        "v\n1\n3\n", "v\n8\n")
    write("days/3.csv", "v\n7\n")
    ok(cli("cumsum", "days", "--state", "s.json", "-o", "out/"))
    assert [Path(f"out/{d}.csv").read_text() for d in (1, 2, 3)] == [
        "v\n1\n3\n", "v\n8\n", "v\n15\n"]
    assert sorted(p.name for p in Path("out").iterdir()) == ["1.csv", "2.csv", "3.csv"]


def test_output_directory_gets_one_output_per_input_under_the_same_relative_names(cli):
    write("in/2026/a.csv", "x\n1\n2\n")
    write("in/2026/b.csv.gz", "")  # replaced below by real gzip
    import gzip

    Path("in/2026/b.csv.gz").write_bytes(gzip.compress(b"x\n3\n"))
    write("in/c.csv", "x\n4\n")
    ok(cli("cumsum", "in", "-o", "out/"))
    assert sorted(str(p.relative_to("out")) for p in Path("out").rglob("*")) == [
        "2026", "2026/a.csv", "2026/b.csv.gz", "c.csv"]
    assert Path("out/2026/a.csv").read_text() == "x\n1\n3\n"
    assert gzip.decompress(Path("out/2026/b.csv.gz").read_bytes()) == b"x\n6\n"
    assert Path("out/c.csv").read_text() == "x\n10\n"


@pytest.mark.parametrize("output", ["out.csv", "out/"])
def test_output_directory_notes_a_column_left_out_as_one_output_does(cli, output):
    """A column of numbers left unscanned for one text cell is said once on standard
    error, whether the run writes one output or one per input (-o DIR/ said nothing)."""
    write("a.csv", "x,y\n" + "".join(f"{k},{k}\n" for k in range(9)) + "9,-\n")
    write("b.csv", "x,y\n3,4\n")
    result = cli("cumsum", "a.csv", "b.csv", "-o", output)
    assert result.exit_code == 0
    assert result.stderr == ("note: column 'y' is not scanned: its first rows hold numbers, "
                             "but row 10 (line 11) holds '-'; to scan it, pass -c x,y --na "
                             "'NA,N/A,n/a,NULL,null,None,<NA>,#N/A,-'\n")


def test_output_directory_with_to_changes_each_extension(cli):
    write("a.csv", "x\n1\n")
    write("b.csv", "x\n2\n")
    ok(cli("cumsum", "a.csv", "b.csv", "-o", "out/", "--to", "parquet"))
    assert sorted(os.listdir("out")) == ["a.parquet", "b.parquet"]
    assert pq.read_table("out/b.parquet").to_pydict() == {"x": [3]}


def test_two_inputs_with_one_relative_name_are_refused(cli):
    write("p/a.csv", "x\n1\n")
    write("q/a.csv", "x\n2\n")
    result = cli("cumsum", "p/a.csv", "q/a.csv", "-o", "out/")
    assert result.exit_code == 2
    assert result.stderr == ("Error: -o out/ would write a.csv twice: from p/a.csv and "
                             "from q/a.csv\n")
    assert not os.path.exists("out")


def test_a_failure_midway_leaves_every_earlier_output_as_it_was(cli):
    write("in/1.csv", "x\n1\n")
    write("in/2.csv", "x\n2\n")
    write("in/3.csv", "x\n9223372036854775807\n")
    write("out/1.csv", "old one\n")
    write("out/2.csv", "old two\n")
    result = cli("cumsum", "in", "-o", "out/")
    assert result.exit_code == 1
    assert result.stderr.startswith("Error: in/3.csv: column 'x', row 1 (line 2): cumsum overflows")
    assert sorted(os.listdir("out")) == ["1.csv", "2.csv"]  # no staging folder left
    assert Path("out/1.csv").read_text() == "old one\n"
    assert Path("out/2.csv").read_text() == "old two\n"


def test_a_failed_run_removes_the_output_directory_it_made(cli):
    write("in/1.csv", "x\n9223372036854775807\n1\n")
    result = cli("cumsum", "in", "-o", "new/")
    assert result.exit_code == 1
    assert not os.path.exists("new")


@pytest.mark.parametrize("args, message", [
    pytest.param(["-"], "-o out/ writes one output per input file; standard input has no "
                 "file name: give files, or -o FILE", id="stdin"),
    pytest.param(["a.csv", "--reverse"], "--reverse cannot be used with -o out/ (one output "
                 "per input): the scan would run from the last file", id="reverse"),
    pytest.param(["a.csv", "--to", "table"], "-o out/ writes files; --to table is for the "
                 "terminal", id="table"),
])
def test_output_directory_usage_errors(cli, args, message):
    write("a.csv", "x\n1\n")
    result = cli("cumsum", *args, "-o", "out/")
    assert result.exit_code == 2
    assert result.stderr == f"Error: {message}\n"


# --filename-column ---------------------------------------------------------------------

def test_filename_column_comes_first_and_by_it_gives_a_total_per_file(cli):
    write("a.csv", "x\n1\n2\n")
    write("b.csv", "x\n10\n20\n")
    result = ok(cli("cumsum", "a.csv", "b.csv", "--filename-column", "src", "--by", "src"))
    assert result.stdout == "src,x\na.csv,1\na.csv,3\nb.csv,10\nb.csv,30\n"


def test_filename_column_on_parquet_is_text_and_not_scanned(cli):
    write_parquet("d/p.parquet", pa.table({"x": [1, 2]}))
    ok(cli("cumsum", "d/p.parquet", "--filename-column", "f", "-o", "out.parquet"))
    out = pq.read_table("out.parquet")
    assert out.schema == pa.schema([("f", pa.string()), ("x", pa.int64())])
    assert out.to_pydict() == {"f": ["d/p.parquet"] * 2, "x": [1, 3]}


def test_filename_column_that_clashes_with_a_column_is_an_error(cli):
    write("a.csv", "x,f\n1,2\n")
    result = cli("cumsum", "a.csv", "--filename-column", "f")
    assert result.exit_code == 1
    assert result.stderr == ("Error: --filename-column f: the input already has a column "
                             "'f'\n")


# A name whose bytes are not UTF-8 (Linux takes any): Python keeps them as lone surrogates.
NOT_UTF8 = os.fsdecode(b"caf\xe9")


def test_filename_column_writes_a_name_not_utf8_as_messages_show_it(cli):
    write("d/b.csv", "x\n5\n")
    write(f"d/{NOT_UTF8}.csv", "x\n1\n2\n")
    result = ok(cli("cumsum", "d", "--filename-column", "src"))
    assert result.stdout_bytes == b"src,x\nd/b.csv,5\nd/caf\\xe9.csv,6\nd/caf\\xe9.csv,8\n"


# --state -------------------------------------------------------------------------------

DAYS = ["k,x,y,r\na,1,0.1,0\nb,2,0.2,0\na,3,nan,0\n",
        "k,x,y,r\nb,-4,0.3,1\na,5,-0.0,0\n",
        "k,x,y,r\na,6,inf,0\nb,7,-2.5,0\n"]


@pytest.mark.parametrize("options", [
    pytest.param(["cumsum"], id="cumsum"),
    pytest.param(["cumsum", "--by", "k"], id="by"),
    pytest.param(["cumsum", "--by", "k", "--reset", "r"], id="by-reset"),
    pytest.param(["cummax", "--indices", "--by", "k"], id="cummax-indices-by"),
    pytest.param(["cummin", "--indices"], id="cummin-indices"),
    pytest.param(["cumsum", "--exclusive", "--by", "k"], id="exclusive-by"),
    pytest.param(["cumsum,cummax", "--skipna"], id="two-ops-skipna"),
    pytest.param(["logcumsumexp", "-c", "y"], id="logcumsumexp"),
    # The running statistics carry record arrays (count, mean, M2, weights ...).
    pytest.param(["cumcount,cummean,cumvar,cumstd,diff", "--by", "k"], id="statistics-by"),
    pytest.param(["ewma", "--alpha", "0.35", "-c", "x", "--skipna"], id="ewma"),
    pytest.param(["ewma", "--span", "3", "--no-adjust", "--by", "k"], id="ewma-no-adjust-by"),
    pytest.param(["cumsum,cummean", "--compensated", "-c", "y"], id="compensated"),
    pytest.param(["cumstd", "--ddof", "0", "--exclusive"], id="cumstd-exclusive"),
])
def test_day_by_day_with_state_gives_the_bytes_of_one_run(cli, options):
    for day, text in enumerate(DAYS):
        write(f"day{day}.csv", text)
    whole = ok(cli(*options, "day0.csv", "day1.csv", "day2.csv")).stdout
    pieces = []
    for day in range(len(DAYS)):
        out = ok(cli(*options, f"day{day}.csv", "--state", "run.state")).stdout
        pieces.append(out if day == 0 else out.split("\n", 1)[1])
    assert "".join(pieces) == whole


@pytest.mark.parametrize("out", [pytest.param("csv", id="csv"),
                                 pytest.param("parquet", id="parquet")])
def test_a_day_with_no_rows_keeps_the_column_types_of_the_state(cli, out):
    write("day0.csv", "k,x,y\na,1,0.5\n")
    write("day1.csv", "k,x,y\n")
    write("day2.csv", "k,x,y\na,2,1.5\n")
    for day in range(3):
        ok(cli("cumsum", f"day{day}.csv", "--by", "k", "--state", "s.json",
               "-o", f"out{day}.{out}"))
    if out == "parquet":
        empty = pq.read_table("out1.parquet")
        assert empty.num_rows == 0
        assert empty.schema.field("y").type == pa.float64()
        assert pq.read_table("out2.parquet").to_pydict() == {"k": ["a"], "x": [3], "y": [2.0]}
    else:
        assert Path("out1.csv").read_text() == "k,x,y\n"
        assert Path("out2.csv").read_text() == "k,x,y\na,3,2.0\n"


def test_state_is_saved_only_when_the_run_succeeds(cli):
    write("day0.csv", "x\n1\n")
    write("day1.csv", "x\n9223372036854775807\n")
    ok(cli("cumsum", "day0.csv", "--state", "s.json"))
    before = Path("s.json").read_bytes()
    result = cli("cumsum", "day1.csv", "--state", "s.json", "-o", "out.csv")
    assert result.exit_code == 1
    assert result.stderr.startswith(
        "Error: day1.csv: column 'x', row 1 (line 2): cumsum overflows")
    assert Path("s.json").read_bytes() == before
    assert not os.path.exists("out.csv")


def test_an_overflow_after_a_resume_names_the_row_within_the_file(cli):
    write("day0.csv", "x\n1\n2\n3\n")
    write("day1.csv", "x\n1\n9223372036854775801\n")
    ok(cli("cumsum", "day0.csv", "--state", "s.json"))
    result = cli("cumsum", "day1.csv", "--state", "s.json")
    assert result.exit_code == 1
    assert result.stderr == ("Error: day1.csv: column 'x', row 2 (line 3): cumsum overflows "
                             "int64 "
                             "(adding 9223372036854775801); use --overflow wrap for "
                             "wrap-around\n")


@pytest.mark.parametrize("first, then, message", [
    pytest.param(["cumsum"], ["cumprod"], "--state s.json was made by cumsum, and this run "
                 "is cumprod; use another state file for another op", id="op"),
    pytest.param(["cumsum"], ["cumsum", "--skipna"], "--state s.json was made with no "
                 "--skipna, and this run has --skipna; give the same options, or another "
                 "state file", id="skipna"),
    pytest.param(["cumsum", "--overflow", "wrap"], ["cumsum"], "--state s.json was made "
                 "with --overflow wrap, and this run has --overflow error; give the same "
                 "options, or another state file", id="overflow"),
    pytest.param(["cumsum", "--by", "k"], ["cumsum"], "--state s.json was made with --by "
                 "k, and this run has no --by; give the same options, or another state "
                 "file", id="by"),
    pytest.param(["cumsum"], ["cumsum", "-c", "x"], "--state s.json was made for columns "
                 "'x', 'y', and this run scans 'x'; choose the same with -c", id="columns"),
    pytest.param(["cumsum"], ["cumsum", "--dtype", "float32"], "--state s.json was made "
                 "with no --dtype, and this run has --dtype float32; give the same options, "
                 "or another state file", id="dtype"),
    pytest.param(["cummax"], ["cummax", "--indices"], "--state s.json was made with no "
                 "--indices, and this run has --indices; give the same options, or another "
                 "state file", id="indices"),
])
def test_a_state_made_with_other_options_is_refused_naming_the_difference(
        cli, first, then, message):
    write("d.csv", "k,x,y\na,1,0.5\n")
    ok(cli(*first, "d.csv", "--state", "s.json"))
    before = Path("s.json").read_bytes()
    result = cli(*then, "d.csv", "--state", "s.json")
    assert result.exit_code == 2
    assert result.stderr == f"Error: {message}\n"
    assert Path("s.json").read_bytes() == before


def test_a_column_whose_type_changed_is_refused(cli):
    write("day0.csv", "x\n1\n")
    write("day1.csv", "x\n1.5\n")
    ok(cli("cumsum", "day0.csv", "--state", "s.json"))
    result = cli("cumsum", "day1.csv", "--state", "s.json")
    assert result.exit_code == 1
    assert result.stderr == ("Error: --state s.json was made when column 'x' held int64, "
                             "and it holds float64 now; add --dtype float64 to go on in "
                             "float64 (the saved values convert exactly up to 2**53)\n")


def test_state_with_reverse_is_a_usage_error(cli):
    write("d.csv", "x\n1\n")
    result = cli("cumsum", "d.csv", "--state", "s.json", "--reverse")
    assert result.exit_code == 2
    assert result.stderr == ("Error: --state cannot be used with --reverse: a reversed scan "
                             "starts from the last row, so it cannot be resumed\n")


def test_state_on_an_array_is_a_usage_error(cli):
    np.save("a.npy", np.arange(3))
    result = cli("cumsum", "a.npy", "--state", "s.json", "-o", "out.npy")
    assert result.exit_code == 2
    assert result.stderr == "Error: --state is for tables, not arrays; a.npy is read as npy\n"


@pytest.mark.parametrize("content, why", [
    pytest.param("{not json", "not JSON", id="not-json"),
    pytest.param('{"format": "other"}', 'no "format": "cumtool-state"', id="format"),
    pytest.param('{"format": "cumtool-state", "version": 99}',
                 "version 99, this cumtool reads versions 1 and 2", id="version"),
])
def test_a_state_file_that_is_not_ours_is_an_error(cli, content, why):
    write("d.csv", "x\n1\n")
    write("s.json", content)
    result = cli("cumsum", "d.csv", "--state", "s.json")
    assert result.exit_code == 1
    assert result.stderr.startswith(f"Error: s.json: not a cumtool state file that this "
                                    f"version can use ({why}")


@pytest.mark.parametrize("op", ["ewma", "cumvar", "cumcount"])
def test_a_state_file_with_a_negative_count_is_an_error_not_a_crash(cli, op):
    """An edited count once indexed ewma's weights below their start (a crash in C)."""
    write("d.csv", "x\n1\n2\n")
    write("next.csv", "x\n3\n")
    extra = ["--alpha", "0.5"] if op == "ewma" else []
    ok(cli(op, "d.csv", "--state", "s.json", *extra))
    state = json.loads(Path("s.json").read_text())
    state["plans"][0]["columns"][0]["carry"]["value"]["fields"]["n"]["values"] = [-10**8]
    Path("s.json").write_text(json.dumps(state))
    result = cli(op, "next.csv", "--state", "s.json", *extra)
    assert result.exit_code == 1
    assert result.stderr.startswith("Error: s.json: not a cumtool state file that this "
                                    "version can use (field 'value' holds a count below 0)")


@pytest.mark.parametrize("offset", [-5, "3", 1.5, True, 2**63])
def test_a_state_file_with_an_edited_offset_is_an_error_not_a_crash(cli, offset):
    """A carry's positions scanned (offset), edited to text or below 0, once gave an
    internal error in the next run, or carried on from a position never scanned."""
    write("d.csv", "x\n1\n2\n")
    write("next.csv", "x\n3\n")
    ok(cli("cummax", "d.csv", "--state", "s.json", "--indices"))
    state = json.loads(Path("s.json").read_text())
    state["plans"][0]["columns"][0]["carry"]["offset"] = offset
    Path("s.json").write_text(json.dumps(state))
    result = cli("cummax", "next.csv", "--state", "s.json", "--indices")
    assert result.exit_code == 1
    assert result.stderr.startswith("Error: s.json: not a cumtool state file that this "
                                    "version can use (field 'offset' is not a count of "
                                    "positions)")


def _float_bits(values: list[float | None]) -> list[bytes | None]:
    return [None if v is None else struct.pack("<d", v) for v in values]


@pytest.mark.parametrize("op, day0, day1, carried", [
    pytest.param("cumsum", [0.1, 0.2], [1.0], "0x1.3333333333334p-2", id="0.1+0.2"),
    pytest.param("cummax", [-0.0], [0.0, -0.0], "-0x0.0p+0", id="minus-zero"),
    pytest.param("cumsum", [np.inf], [1.0], "inf", id="inf"),
    pytest.param("cumsum", [np.inf, -np.inf], [1.0], "nan:0xfff8000000000000",
                 id="nan-from-inf-minus-inf"),
    pytest.param("cummax", [float(np.array(0x7FF8000000000123, np.uint64).view(np.float64))],
                 [5.0], "nan:0x7ff8000000000123", id="nan-payload"),
])
def test_floats_are_stored_exactly_and_resume_to_the_same_bits(cli, op, day0, day1, carried):
    write_parquet("day0.parquet", pa.table({"v": pa.array(day0, pa.float64())}))
    write_parquet("day1.parquet", pa.table({"v": pa.array(day1, pa.float64())}))
    ok(cli(op, "day0.parquet", "--state", "s.json", "-o", "o0.parquet"))
    state = json.loads(Path("s.json").read_text())
    assert state["plans"][0]["columns"][0]["carry"]["value"]["values"] == [carried]
    ok(cli(op, "day1.parquet", "--state", "s.json", "-o", "o1.parquet"))
    ok(cli(op, "day0.parquet", "day1.parquet", "-o", "whole.parquet"))
    resumed = (pq.read_table("o0.parquet").column("v").to_pylist()
               + pq.read_table("o1.parquet").column("v").to_pylist())
    assert _float_bits(resumed) == _float_bits(pq.read_table("whole.parquet")
                                               .column("v").to_pylist())


def test_state_keeps_parquet_group_keys_of_every_type(cli):
    keys = pa.array([1.5, float("nan"), None, 1.5], pa.float64())
    dates = pa.array([1, 2, None, 1], pa.date32())
    table = pa.table({"k": keys, "d": dates, "x": pa.array([1, 2, 3, 4])})
    write_parquet("day0.parquet", table.slice(0, 2))
    write_parquet("day1.parquet", table.slice(2))
    ok(cli("cumsum", "day0.parquet", "--by", "k,d", "--state", "s.json", "-o", "a.csv"))
    ok(cli("cumsum", "day1.parquet", "--by", "k,d", "--state", "s.json", "-o", "b.csv"))
    assert csv_column(Path("a.csv").read_text(), "x") == ["1", "2"]
    assert csv_column(Path("b.csv").read_text(), "x") == ["3", "5"]


# The property: any split gives the same bytes ------------------------------------------

_FLOATS = st.sampled_from([0.1, 0.2, 0.3, -0.0, 0.0, 1e308, -1e308, 2.5, -7.25, 1e-300,
                           float("nan"), float("inf"), float("-inf"), None])
# The first row has a float: a first CSV file (or day) whose y is all missing cannot tell
# that y holds floats (and a kept y is then written to Parquet as text).
_ROWS = st.lists(st.tuples(st.sampled_from(["a", "b", "c"]), st.integers(-3, 3), _FLOATS),
                 min_size=1, max_size=14).map(
    lambda rows: [(*rows[0][:2], 0.5 if rows[0][2] is None else rows[0][2]), *rows[1:]])
_OPTIONS = st.sampled_from([
    ("cumsum",), ("cumsum", "--by", "k"), ("cumprod",), ("cummax", "--indices"),
    ("cummin", "--indices", "--by", "k"), ("cumsum", "--exclusive"),
    ("cumsum,cummin", "--by", "k"), ("logcumsumexp", "--skipna"),
])


def _cuts(draw, n: int, first_rows: int) -> list[int]:
    """Where to split n rows into parts (some may be empty); the first part has at least
    `first_rows` rows."""
    cuts = sorted(draw(st.lists(st.integers(min(first_rows, n), n), max_size=4)))
    return [0, *cuts, n]


def _write_part(path: Path, rows: list, fmt: str) -> None:
    if fmt == "csv":
        lines = ["k,x,y"] + [f"{k},{x},{'' if y is None else repr(y)}" for k, x, y in rows]
        path.write_text("\n".join(lines) + "\n")
    else:
        pq.write_table(pa.table({
            "k": pa.array([r[0] for r in rows], pa.string()),
            "x": pa.array([r[1] for r in rows], pa.int64()),
            "y": pa.array([r[2] for r in rows], pa.float64())}), path)


def _output(path: Path, fmt: str, with_header: bool) -> list:
    """An output as comparable rows: CSV lines, or Parquet cells with floats as bits."""
    if fmt == "csv":
        lines = path.read_text().splitlines()
        return lines if with_header else lines[1:]
    table = pq.read_table(path)
    rows = [tuple(struct.pack("<d", v) if isinstance(v, float) else v for v in row.values())
            for row in table.to_pylist()]
    return ([tuple(f"{f.name}:{f.type}" for f in table.schema)] if with_header else []) + rows


@pytest.mark.slow
@settings(max_examples=80, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data(), rows=_ROWS, options=_OPTIONS,
       fmt=st.sampled_from(["csv", "parquet"]), out=st.sampled_from(["csv", "parquet"]))
def test_any_split_into_files_batches_or_resumed_runs_gives_the_same_bytes(
        runner, tmp_path, data, rows, options, fmt, out):
    """One run over the whole table; one run over it split into files, in small batches;
    and one run per part resumed with --state: the same output, bit for bit."""
    folder = Path(tempfile.mkdtemp(dir=tmp_path))
    op, *flags = options

    def run(*args: str | Path) -> None:
        ok(runner.invoke(main, [op, *map(str, args), *flags, "-c", "x,y", "--to", out],
                         catch_exceptions=False))

    _write_part(folder / f"whole.{fmt}", rows, fmt)
    run(folder / f"whole.{fmt}", "-o", folder / f"whole.{out}")
    expected = _output(folder / f"whole.{out}", out, True)

    file_cuts = _cuts(data.draw, len(rows), 0)
    files = []
    for k in range(len(file_cuts) - 1):
        files.append(folder / f"part-{k}.{fmt}")
        _write_part(files[-1], rows[file_cuts[k]:file_cuts[k + 1]], fmt)
    batch = data.draw(st.integers(1, 4))
    run(*files, "--batch-rows", str(batch), "-o", folder / f"files.{out}")
    assert _output(folder / f"files.{out}", out, True) == expected
    run(*files, "-o", f"{folder / 'each'}/")  # one output per file, carried across them
    each: list = []
    for k in range(len(files)):
        each += _output(folder / "each" / f"part-{k}.{out}", out, k == 0)
    assert each == expected

    # Resumed runs: the first CSV day needs a row to tell what its columns hold; a later
    # day with none takes what they hold from the state.
    day_cuts = _cuts(data.draw, len(rows), 1 if fmt == "csv" else 0)
    resumed: list = []
    for k in range(len(day_cuts) - 1):
        day = folder / f"day-{k}.{fmt}"
        _write_part(day, rows[day_cuts[k]:day_cuts[k + 1]], fmt)
        run(day, "--state", folder / "run.state", "-o", folder / f"day-{k}.out.{out}")
        resumed += _output(folder / f"day-{k}.out.{out}", out, k == 0)
    assert resumed == expected


def test_by_on_a_csv_with_a_header_and_no_rows_writes_the_header(cli):
    write("empty.csv", "k,x\n")
    result = ok(cli("cumsum", "empty.csv", "--by", "k", "-c", "x"))
    assert result.stdout == "k,x\n"


def test_state_in_a_missing_directory_is_an_error_before_anything_is_written(cli):
    write("d.csv", "x\n1\n")
    result = cli("cumsum", "d.csv", "--state", "nowhere/s.json", "-o", "out.csv")
    assert result.exit_code == 1
    assert result.stderr == (f"Error: cannot write nowhere/s.json: directory "
                             f"{os.path.abspath('nowhere')} does not exist\n")
    assert not os.path.exists("out.csv")


def test_hive_folders_of_csv_files_give_their_keys_too(cli):
    write("d/site=a/1.csv", "x\n1\n")
    write("d/site=b/1.csv", "x\n2\n")
    result = ok(cli("cumsum", "d", "--by", "site"))
    assert result.stdout == "x,site\n1,a\n2,b\n"


def test_a_hive_folder_not_utf8_gives_its_key_as_messages_show_it(cli):
    write(f"d/k={NOT_UTF8}/1.csv", "x\n1\n2\n")
    assert ok(cli("cumsum", "d")).stdout_bytes == b"x,k\n1,caf\\xe9\n3,caf\\xe9\n"


def test_a_hive_folder_whose_escape_is_not_utf8_is_an_error(cli):
    write("d/k=%E9/1.csv", "x\n1\n")
    result = cli("cumsum", "d")
    assert result.exit_code == 1
    assert result.stdout == ""
    assert result.stderr == ("Error: d/k=%E9/1.csv: cannot read its key=value folders: "
                             "Partition segment was not valid UTF-8 after URL decoding: %E9\n")


def test_an_output_directory_without_its_slash_says_how_to_write_into_it(cli, tmp_path):
    write("a.csv", "x\n1\n")
    (tmp_path / "out").mkdir()
    result = cli("cumsum", "a.csv", "-o", "out")
    assert result.exit_code == 1
    assert result.stderr == ("Error: cannot write out: it is a directory; end it with a "
                             "slash (-o out/) to write one output per input into it\n")


@pytest.mark.parametrize("inputs", [["a.csv", "b.csv"], ["in"]], ids=["files", "folder"])
def test_an_output_folder_without_its_slash_is_asked_about(cli, inputs):
    """-o outdir (a folder that does not exist, no slash) with several inputs: most
    likely -o outdir/ was meant; nothing is written."""
    for name in ("a.csv", "b.csv", "in/c.csv", "in/d.csv"):
        write(name, "x\n1\n")
    result = cli("cumsum", *inputs, "-o", "outdir")
    assert result.exit_code == 2
    assert result.stderr == ("Error: cannot tell the output format from 'outdir', and there "
                             "are several inputs: did you mean -o outdir/ (a folder, one "
                             "output per input)? Else add --to or a known extension\n")
    assert not os.path.exists("outdir")
    ok(cli("cumsum", *inputs, "-o", "outdir", "--to", "csv"))  # one file, as asked
    assert open("outdir").read() == "x\n1\n2\n"


def test_state_saves_any_carry_fields_an_op_adds_exactly():
    """The state is taken from the carry objects' fields, not from a list of ops: a carry
    with more fields (a count, a compensation term, a nested object) round-trips."""
    from dataclasses import dataclass

    from cumtool import state

    @dataclass
    class Inner:
        weight: np.ndarray

    @dataclass
    class Carry:
        value: np.ndarray
        compensation: np.ndarray
        count: int
        mean: float
        flags: list
        inner: Inner

    nan = np.array([0xFFF8000000000001], np.uint64).view(np.float64)
    saved = Carry(np.array([0.1 + 0.2, -0.0, np.inf]), np.float32(1e-9) * np.ones(2, np.float32),
                  7, -0.0, [np.array([1, 2], np.int16), None], Inner(nan))
    record = json.loads(json.dumps(state._encode_object(saved)))
    fresh = Carry(np.zeros(3), np.zeros(2, np.float32), 0, 0.0, [], Inner(np.zeros(1)))
    state._restore_object("s.json", fresh, record)
    assert fresh.value.tobytes() == saved.value.tobytes()
    assert fresh.compensation.tobytes() == saved.compensation.tobytes()
    assert (fresh.count, struct.pack("<d", fresh.mean)) == (7, struct.pack("<d", -0.0))
    assert fresh.flags[0].dtype == np.int16 and fresh.flags[0].tolist() == [1, 2]
    assert fresh.flags[1] is None
    assert fresh.inner.weight.tobytes() == nan.tobytes()


def test_reverse_over_several_files_scans_their_concatenation_backwards(cli):
    write("a.csv", "x\n1\n2\n")
    write("b.csv", "x\n3\n4\n")
    result = ok(cli("cummax", "a.csv", "b.csv", "--reverse", "--indices"))
    assert result.stdout == "x,x_index\n4,3\n4,3\n4,3\n4,3\n"
    result = ok(cli("cumsum", "a.csv", "b.csv", "--reverse"))
    assert result.stdout == "x\n10\n9\n7\n4\n"


def test_filename_column_on_standard_input_is_a_dash(runner):
    result = ok(runner.invoke(main, ["cumsum", "-", "--filename-column", "f"],
                              input="x\n1\n2\n", catch_exceptions=False))
    assert result.stdout == "f,x\n-,1\n-,3\n"


def test_filename_column_on_standard_input_names_it_in_messages(runner):
    """The column holds '-' as given; an error names the input as every run from standard
    input does (it said `Error: -: ...`)."""
    result = runner.invoke(main, ["cumsum", "-", "--filename-column", "f"],
                           input="x\n9223372036854775807\n1\n", catch_exceptions=False)
    assert result.exit_code == 1
    assert result.stderr == ("Error: standard input: column 'x', row 2 (line 3): cumsum "
                             "overflows int64 (adding 1); use --overflow wrap for "
                             "wrap-around\n")


def test_output_directory_may_be_the_input_directory(cli):
    write("data/1.csv", "x\n1\n2\n")
    write("data/2.csv", "x\n3\n")
    ok(cli("cumsum", "data", "-o", "data/"))
    assert sorted(os.listdir("data")) == ["1.csv", "2.csv"]
    assert Path("data/1.csv").read_text() == "x\n1\n3\n"
    assert Path("data/2.csv").read_text() == "x\n6\n"


def test_an_overflow_in_a_later_input_names_its_file_row_and_line(cli):
    write("a1.csv", "x\n1\n")
    write("a2.csv", "x\n\n9223372036854775807\n")  # a blank line: row 1 is line 3
    result = cli("cumsum", "a1.csv", "a2.csv", "-o", "out.csv")
    assert result.exit_code == 1
    assert result.stderr == (
        "Error: a2.csv: column 'x', row 1 (line 3): cumsum overflows int64 (adding "
        "9223372036854775807); use --overflow wrap for wrap-around\n")


@pytest.mark.parametrize("given, named", [
    (["in"], "in"), (["in/*.csv"], "in/*.csv"), (["in/a.csv", "in/b.csv"],
                                                   "in/a.csv and in/b.csv"),
    (["in/a.csv", "in/b.csv", "in/c.csv"], "in/a.csv and 2 more"),
], ids=["folder", "glob", "two", "three"])
def test_the_tables_caption_names_what_was_given(cli, given, named):
    """It named the first file, with the rows of all of them."""
    for name, value in (("a", 1), ("b", 2), ("c", 3)):
        write(f"in/{name}.csv", f"x\n{value}\n")
    result = ok(cli("cumsum", *given, "--to", "table"))
    rows = 3 if len(given) != 2 else 2
    assert result.stdout.splitlines()[-1] == (
        f"cumsum along rows of {named}, {rows} rows x 1 column; scanned: x")
