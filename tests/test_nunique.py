"""cumnunique, the running count of distinct values (SEMANTICS.md, "cumnunique"), against
pandas' `(~s.duplicated()).cumsum()` over the non-missing cells of each group: random text,
floats (NaN, -0.0), integers, missing cells and groups, across batch sizes and --state
splits; exact outputs for --exclusive, --reverse and --reset; what is refused."""

from __future__ import annotations

import csv
import io
import random
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from helpers import ok, parquet_bytes

TEXTS = ["foo", "Foo", "bar", "a,b", 'say "hi"', " foo", "nan", "0"]
FLOATS = ["1.5", "-0.0", "0.0", "nan", "NaN", "2.0", "1e300", "-1.5"]
INTS = ["1", "2", "3", "-7", "10"]


def random_rows(seed: int, n: int) -> list[list[str | None]]:
    """Rows of (g, t, f, i): None is a missing (empty) cell."""
    rng = random.Random(seed)

    def cell(values: list[str]) -> str | None:
        return None if rng.random() < 0.2 else rng.choice(values)

    return [[rng.choice("abc"), cell(TEXTS), cell(FLOATS), cell(INTS)] for _ in range(n)]


def csv_text(rows: list[list[str | None]], header: bool = True) -> str:
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    if header:
        writer.writerow(["g", "t", "f", "i"])
    writer.writerows([["" if v is None else v for v in row] for row in rows])
    return out.getvalue()


def reference(values: list[object], groups: list[str] | None = None) -> list[str]:
    """pandas: (~s.duplicated()).cumsum() on the non-missing cells (each group apart),
    placed back; a missing cell's result is missing ("")."""
    s = pd.Series(values, dtype=object)
    present = s.notna() | s.map(lambda v: isinstance(v, float))  # NaN is a value here
    out = pd.Series([""] * len(s), dtype=object)
    keys = pd.Series(["all"] * len(s) if groups is None else groups)
    for _, rows in s[present].groupby(keys[present], sort=False):
        counts = (~rows.duplicated()).cumsum()
        out[counts.index] = counts.astype(str)
    return out.tolist()


def as_values(rows: list[list[str | None]], column: int) -> list[object]:
    if column == 1:
        return [row[1] for row in rows]
    if column == 2:
        return [None if row[2] is None else float(row[2]) for row in rows]
    return [None if row[3] is None else int(row[3]) for row in rows]


def table(text: str) -> list[list[str]]:
    return list(csv.reader(io.StringIO(text)))


@pytest.mark.parametrize("batch_rows", ["1", "3", "1000"])
@pytest.mark.parametrize("seed", [1, 2])
def test_random_columns_by_group_are_pandas(invoke, write_file, batch_rows, seed):
    rows = random_rows(seed, 300)
    path = write_file("x.csv", csv_text(rows))
    result = ok(invoke("cumnunique", str(path), "-c", "t,f,i", "--by", "g",
                       "--batch-rows", batch_rows))
    got = table(result.stdout)
    assert got[0] == ["g", "t", "f", "i"]
    groups = [row[0] for row in rows]
    for column in (1, 2, 3):
        assert [r[column] for r in got[1:]] == reference(as_values(rows, column), groups)


@pytest.mark.parametrize("batch_rows", ["1", "3", "1000"])
def test_random_columns_without_groups_are_pandas(invoke, write_file, batch_rows):
    rows = random_rows(3, 200)
    path = write_file("x.csv", csv_text(rows))
    result = ok(invoke("cumnunique", str(path), "-c", "t,f,i", "--keep",
                       "--batch-rows", batch_rows))
    got = table(result.stdout)
    assert got[0] == ["g", "t", "f", "i", "t_cumnunique", "f_cumnunique", "i_cumnunique"]
    for column in (1, 2, 3):
        assert [r[3 + column] for r in got[1:]] == reference(as_values(rows, column))


def test_state_day_by_day_writes_the_bytes_of_one_run(invoke, tmp_path):
    rows = random_rows(4, 240)
    days = [rows[k * 60:(k + 1) * 60] for k in range(4)]
    (tmp_path / "all.csv").write_text(csv_text(rows))
    args = ["-c", "t,f,i", "--by", "g"]
    ok(invoke("cumnunique", str(tmp_path / "all.csv"), *args, "-o", str(tmp_path / "one.csv")))
    whole = (tmp_path / "one.csv").read_text().splitlines()
    state = str(tmp_path / "s.json")
    lines: list[str] = []
    for k, day in enumerate(days):
        path = tmp_path / f"day-{k}.csv"
        path.write_text(csv_text(day))
        out = tmp_path / f"out-{k}.csv"
        ok(invoke("cumnunique", str(path), *args, "--state", state, "-o", str(out),
                  "--batch-rows", "7"))
        first = out.read_bytes()
        ok(invoke("cumnunique", str(path), *args, "--state", state, "-o", str(out)))
        assert out.read_bytes() == first  # a retry starts from the same values
        lines.extend(out.read_text().splitlines()[1:])
    assert lines == whole[1:]


def test_state_saves_the_values_themselves(invoke, tmp_path):
    (tmp_path / "x.csv").write_text("t,f\nfoo,-0.0\nbar,nan\nfoo,0.0\n")
    state = tmp_path / "s.json"
    ok(invoke("cumnunique", str(tmp_path / "x.csv"), "-c", "t,f", "--state", str(state)))
    text = state.read_text()
    assert '"seen": {"list": [{"list": ["foo", "bar"]}]}' in text
    assert '{"list": [{"float": "0x0.0p+0"}, "nan"]}' in text


@pytest.mark.parametrize(("args", "expected"), [
    pytest.param([], ["1", "2", "", "2", "3", "3"], id="plain"),
    pytest.param(["--exclusive"], ["0", "1", "", "2", "2", "3"], id="exclusive"),
    pytest.param(["--reverse"], ["3", "3", "", "3", "2", "1"], id="reverse"),
    pytest.param(["--reverse", "--exclusive"], ["3", "3", "", "2", "1", "0"],
                 id="reverse-exclusive"),
])
def test_exact_outputs(invoke, args, expected):
    data = "k,x\n1,foo\n2,bar\n3,\n4,foo\n5,baz\n6,bar\n"
    for batch_rows in ("1", "2", "100"):
        result = ok(invoke("cumnunique", "-c", "x", *args, "--batch-rows", batch_rows,
                           input=data))
        assert [line.split(",")[1] for line in result.stdout.splitlines()] == [
            "x", *expected]


def test_reset_starts_from_no_values(invoke):
    data = "r,x\n0,a\n0,b\n1,a\n0,a\n0,c\n1,c\n"
    result = ok(invoke("cumnunique", "-c", "x", "--reset", "r", "--batch-rows", "2",
                       input=data))
    assert [line.split(",")[1] for line in result.stdout.splitlines()[1:]] == [
        "1", "2", "1", "1", "2", "1"]
    result = ok(invoke("cumnunique", "-c", "x", "--reset", "r", "--reverse", input=data))
    # backwards, a run starts at the row after a reset row (in input order)
    assert [line.split(",")[1] for line in result.stdout.splitlines()[1:]] == [
        "2", "1", "2", "2", "1", "1"]


def test_nan_is_one_value_and_negative_zero_is_zero(invoke):
    result = ok(invoke("cumnunique", input="x\nnan\n-0.0\nNaN\n0.0\n-nan\n1\n"))
    assert result.stdout.splitlines() == ["x", "1", "2", "2", "2", "2", "3"]
    result = ok(invoke("cumnunique", "--skipna", input="x\nnan\n-0.0\n0.0\n1\n"))
    assert result.stdout.splitlines() == ["x", '""', "1", "1", "2"]  # "": a missing cell


def test_decimals_are_compared_by_value(invoke):
    result = ok(invoke("cumnunique", "--decimal", input="x\n1.50\n1.5\n2\n2.000\n"))
    assert result.stdout.splitlines() == ["x", "1", "1", "2", "2"]


def test_several_ops_in_one_pass(invoke):
    result = ok(invoke("cumsum,cumnunique", "-c", "x", input="k,x\na,1\nb,2\nc,1\nd,\ne,3\n"))
    assert result.stdout.splitlines() == [
        "k,x,x_cumsum,x_cumnunique", "a,1,1,1", "b,2,3,2", "c,1,4,2", "d,,,", "e,3,7,3"]


def test_parquet_dates_booleans_text_and_decimals(invoke, write_file):
    import datetime
    import decimal

    import pyarrow as pa

    day = datetime.date
    t = pa.table({
        "d": pa.array([day(2024, 1, 1), None, day(2024, 1, 1), day(2024, 1, 2)]),
        "b": pa.array([True, False, None, True]),
        "m": pa.array([decimal.Decimal("1.50"), decimal.Decimal("1.5"),
                       decimal.Decimal("2.00"), None], pa.decimal128(10, 2)),
        "s": pa.array(["x", None, "y", "x"]),
        "n": pa.array([1.0, 2.0, 3.0, 1.0]),
    })
    path = write_file("t.parquet", parquet_bytes(t))
    result = ok(invoke("cumnunique", str(path), "-c", "d,b,m,s", "--to", "csv"))
    assert result.stdout.splitlines() == [
        "d,b,m,s,n", "1,1,1,1,1.0", ",2,1,,2.0", "1,,2,2,3.0", "2,2,,2,1.0"]
    # numbers only by default, as for every op
    result = ok(invoke("cumnunique", str(path), "--to", "csv"))
    assert [line.split(",")[-1] for line in result.stdout.splitlines()] == [
        "n", "1", "2", "3", "3"]


def test_text_needs_c_and_other_ops_still_refuse_it(invoke):
    result = ok(invoke("cumnunique", input="t,x\na,1\nb,1\n"))
    assert result.stdout.splitlines() == ["t,x", "a,1", "b,1"]
    result = invoke("cumsum,cumnunique", "-c", "t", input="t,x\na,1\nb,1\n")
    assert result.exit_code != 0
    assert "is not numeric" in result.stderr


@pytest.mark.parametrize(("args", "message"), [
    (["--axis", "columns"], "down the rows"),
    (["-c", "t", "--dtype", "float64"], "leave --dtype out"),
])
def test_refusals(invoke, args, message):
    result = invoke("cumnunique", *args, input="t,x\na,1\nb,1\n")
    assert result.exit_code == 2
    assert message in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


def test_arrays_are_refused_by_name(invoke, write_file):
    """(--engine dask counts distinct values too: tests/test_dask_summaries.py.)"""
    path = write_file("a.npy", b"")
    np.save(path, np.array([1, 2, 1]))
    result = invoke("cumnunique", str(path))
    assert result.exit_code == 2
    assert "cumnunique" in result.stderr and "array" in result.stderr
    assert result.stdout == ""


def test_an_array_from_standard_input_is_refused_naming_it(invoke):
    """As every message names it: standard input, not '-'."""
    result = invoke("cumnunique", "-", "--from", "npy", input=b"")
    assert (result.exit_code, result.stderr) == (2, (
        "Error: cumnunique counts the distinct values of a table's columns (CSV, TSV, "
        "Parquet ...), and standard input is an array\n"))


def test_the_small_path_hands_over(invoke, write_file):
    """Without --batch-rows a small CSV may take the small path
    (cumtool/formats/csv/small.py), which hands cumnunique over to the streaming one: the
    same bytes."""
    path = write_file("x.csv", csv_text(random_rows(5, 50)))
    small = ok(invoke("cumnunique", str(path), "-c", "t,f,i"))
    streamed = ok(invoke("cumnunique", str(path), "-c", "t,f,i", "--batch-rows", "4"))
    assert small.stdout_bytes == streamed.stdout_bytes


def test_memory_is_the_distinct_values_not_the_rows(invoke, tmp_path):
    (tmp_path / "x.csv").write_text("x\n" + "1\n2\n" * 5000)
    state = tmp_path / "s.json"
    ok(invoke("cumnunique", str(tmp_path / "x.csv"), "--state", str(state), "-o",
              str(tmp_path / "o.csv")))
    assert '"seen": {"list": [{"list": [1, 2]}]}' in state.read_text()
    assert Path(tmp_path / "o.csv").read_text().splitlines()[-1] == "2"


def exclusive_of(inclusive: list[str], groups: list[str]) -> list[str]:
    """The count before each present cell: its group's last count so far (or 0)."""
    last: dict[str, str] = {}
    out = []
    for count, group in zip(inclusive, groups, strict=True):
        out.append("" if count == "" else last.get(group, "0"))
        if count != "":
            last[group] = count
    return out


@pytest.mark.parametrize("reverse", [False, True])
@pytest.mark.parametrize("exclusive", [False, True])
def test_random_reverse_and_exclusive_by_group(invoke, write_file, reverse, exclusive):
    rows = random_rows(6, 200)
    path = write_file("x.csv", csv_text(rows))
    flags = [*(["--reverse"] if reverse else []), *(["--exclusive"] if exclusive else [])]
    result = ok(invoke("cumnunique", str(path), "-c", "t,f,i", "--by", "g", *flags,
                       "--batch-rows", "3"))
    got = table(result.stdout)[1:]
    order = rows[::-1] if reverse else rows
    groups = [row[0] for row in order]
    for column in (1, 2, 3):
        expected = reference(as_values(order, column), groups)
        if exclusive:
            expected = exclusive_of(expected, groups)
        assert [r[column] for r in (got[::-1] if reverse else got)] == expected


def test_dictionary_columns_and_types_it_cannot_compare(invoke, write_file):
    import pyarrow as pa

    t = pa.table({
        "c": pa.array(["x", "y", "x", None]).dictionary_encode(),
        "f": pa.array([-0.0, 0.0, float("nan"), float("nan")]).dictionary_encode(),
        "tm": pa.array([1, 2, 1, 2], pa.time64("us")),
    })
    path = write_file("t.parquet", parquet_bytes(t))
    result = ok(invoke("cumnunique", str(path), "-c", "c,f", "--only-scanned", "--to", "csv"))
    assert result.stdout.splitlines() == ["c,f", "1,1", "2,1", "2,2", ",2"]
    result = invoke("cumnunique", str(path), "-c", "tm", "--to", "csv")
    assert result.exit_code != 0
    assert "column 'tm' holds time64[us], which cumnunique cannot compare" in result.stderr


def test_na_markers_of_a_csv_text_column_are_missing_cells(invoke, write_file):
    """Missing cells are not values (the contract's NA list, or --na), in a text column
    of a CSV too; in JSON Lines only null is missing, and "NA" is a value."""
    path = write_file("c.csv", "c\nx\nNA\ny\n\nx\nN/A\nz\n")
    assert invoke("cumnunique", str(path), "-c", "c").stdout == 'c\n1\n""\n2\n2\n""\n3\n'
    assert invoke("cumnunique", str(path), "-c", "c", "--na", "").stdout == (
        "c\n1\n2\n3\n3\n4\n5\n")
    lines = write_file("c.jsonl", '{"c": "NA"}\n{"c": null}\n{"c": "x"}\n')
    assert invoke("cumnunique", str(lines), "-c", "c").stdout == (
        '{"c":1}\n{"c":null}\n{"c":2}\n')


@pytest.mark.parametrize("batch_rows", [None, "1", "2"])
def test_na_markers_are_missing_whichever_cell_starts_the_batch(invoke, write_file,
                                                               batch_rows):
    """A batch whose first text cell is missing still takes "NA" as a missing cell (the
    markers were once looked for only where a batch's first cell was text)."""
    path = write_file("c.csv", "c,i\n,1\nNA,2\nx,3\ny,4\nNA,5\n")
    args = ["--batch-rows", batch_rows] if batch_rows else []
    assert invoke("cumnunique", str(path), "-c", "c", *args).stdout == (
        "c,i\n,1\n,2\n1,3\n2,4\n,5\n")


def test_cumtool_scan_of_a_csv_counts_as_the_cli(write_file):
    """cumtool.scan reads a CSV file as the CLI does: NA markers in a text column are
    missing cells, not values (it counted 1, 2, 3); JSON Lines keep "NA" as a value."""
    import cumtool

    path = write_file("nu.csv", "city,n\nOslo,1\nNA,2\nLima,3\n")
    counted = cumtool.scan(str(path), "cumnunique", columns=["city"])
    assert counted.column("city").to_pylist() == [1, None, 2]
    with open(path, "rb") as stream:  # a file object, as the CLI's standard input
        assert cumtool.scan(stream, "cumnunique", columns=["city"]).column(
            "city").to_pylist() == [1, None, 2]
    lines = write_file("nu.jsonl", '{"city": "Oslo"}\n{"city": "NA"}\n{"city": null}\n')
    assert cumtool.scan(str(lines), "cumnunique", columns=["city"]).column(
        "city").to_pylist() == [1, 2, None]
