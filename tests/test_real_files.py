"""Real files stay as they were (SEMANTICS.md, "Tables: what is a number, and what is left
alone"): files shaped like R, pandas, Excel and government exports, made here by the tests
(pandas writes its own), go through cumtool; only the scanned columns may change.

Expected values are written out by hand or computed with Python's csv module and plain
sums, never taken from cumtool.
"""

from __future__ import annotations

import csv
import io
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cumtool.cli import main

ISSUE_FILE = "id,price,code,sci,flag\n007,1.50,0012,1e3,True\n008,2.00,0013,2E3,FALSE\n"


def rows(text: str, delimiter: str = ",") -> list[list[str]]:
    return list(csv.reader(io.StringIO(text), delimiter=delimiter))


# The issue's reproductions ---------------------------------------------------------------

def test_unscanned_columns_keep_their_exact_text(invoke, write_file):
    path = write_file("f.csv", ISSUE_FILE)
    result = invoke("cumsum", str(path), "-c", "price", "--to", "csv")
    assert result.exit_code == 0, result.stderr
    assert result.stdout == ("id,price,code,sci,flag\n007,1.5,0012,1e3,True\n"
                             "008,3.5,0013,2E3,FALSE\n")


def test_by_default_numbers_are_scanned_but_not_codes_or_flags(invoke, write_file):
    path = write_file("f.csv", ISSUE_FILE)
    result = invoke("cumsum", str(path), "--to", "csv")
    assert result.exit_code == 0, result.stderr
    # price and sci are numbers; id and code have leading zeros (codes); flag is boolean.
    assert result.stdout == ("id,price,code,sci,flag\n007,1.5,0012,1000.0,True\n"
                             "008,3.5,0013,3000.0,FALSE\n")


def test_keep_keeps_the_originals_as_text(invoke, write_file):
    path = write_file("f.csv", ISSUE_FILE)
    result = invoke("cumsum", str(path), "--keep", "--to", "csv")
    assert result.exit_code == 0, result.stderr
    assert result.stdout == ("id,price,code,sci,flag,price_cumsum,sci_cumsum\n"
                             "007,1.50,0012,1e3,True,1.5,1000.0\n"
                             "008,2.00,0013,2E3,FALSE,3.5,3000.0\n")


def test_naming_a_code_or_a_flag_scans_it(invoke, write_file):
    path = write_file("f.csv", ISSUE_FILE)
    result = invoke("cumsum", str(path), "-c", "code", "-c", "flag", "--to", "csv")
    assert result.exit_code == 0, result.stderr
    assert rows(result.stdout) == [["id", "price", "code", "sci", "flag"],
                                   ["007", "1.50", "12", "1e3", "1"],
                                   ["008", "2.00", "25", "2E3", "1"]]


def test_other_number_spellings_pass_through(invoke, write_file):
    text = "fips,value,rate,big\n01001,28.980,8.99E-05,4833\n01003,1,2,3\n"
    result = invoke("cummax", str(write_file("g.csv", text)), "-c", "value", "--to", "csv")
    assert result.exit_code == 0, result.stderr
    assert result.stdout == "fips,value,rate,big\n01001,28.98,8.99E-05,4833\n01003,28.98,2,3\n"


# Exports as R, pandas, Excel and statistics offices write them ------------------------------

R_WRITE_CSV = ('"","species","bill_length_mm","body_mass_g","sex","year"\n'
               '"1","Adelie",39.1,3750,"male",2007\n'
               '"2","Adelie",NA,NA,NA,2007\n'
               '"3","Gentoo",40.3,3250,"female",2008\n')


def test_r_write_csv(invoke, write_file):
    """R quotes strings, writes NA for missing and row names under an empty name."""
    result = invoke("cumsum", str(write_file("penguins.csv", R_WRITE_CSV)))
    assert result.exit_code == 0, result.stderr
    assert rows(result.stdout) == [
        ["", "species", "bill_length_mm", "body_mass_g", "sex", "year"],
        ["1", "Adelie", "39.1", "3750", "male", "2007"],
        # NA in a scanned column is a missing cell (written empty); in text it is text.
        ["2", "Adelie", "", "", "NA", "4014"],
        ["3", "Gentoo", "79.4", "7000", "female", "6022"],
    ]
    assert result.stdout.splitlines()[0] == ",species,bill_length_mm,body_mass_g,sex,year"


def test_r_missing_cells_with_na_rep(invoke, write_file):
    result = invoke("cumsum", str(write_file("p.csv", R_WRITE_CSV)), "-c", "body_mass_g",
                    "--na-rep", "NA")
    assert result.exit_code == 0, result.stderr
    assert [r[3] for r in rows(result.stdout)[1:]] == ["3750", "NA", "7000"]


def test_pandas_to_csv_with_its_index(invoke, tmp_path):
    frame = pd.DataFrame({"store": ["a", "b", "a"], "units": [3, 4, None],
                          "price": [1.25, 2.5, 0.125]}, index=[10, 11, 12])
    path = tmp_path / "pandas.csv"
    frame.to_csv(path)  # header ",store,units,price"; units has a missing cell: float
    result = invoke("cumsum", str(path))
    assert result.exit_code == 0, result.stderr
    assert result.stdout == (",store,units,price\n10,a,3.0,1.25\n11,b,7.0,3.75\n"
                             "12,a,,3.875\n")
    back = pd.read_csv(io.StringIO(result.stdout), index_col=0)
    assert back.index.tolist() == [10, 11, 12]


def test_excel_style_semicolons_decimal_commas_bom_crlf(invoke, write_file):
    text = "\ufeffDatum;Betrag;Konto\r\n2024-01-02;1,50;0042\r\n2024-01-03;2,25;0042\r\n"
    path = write_file("excel.csv", text.encode("utf-8"))
    result = invoke("cumsum", str(path), "-d", ";", "--decimal-comma")
    assert result.exit_code == 0, result.stderr
    # Read and written with decimal commas; a csv with 1,5 in it is ;-separated.
    assert result.stdout == "Datum;Betrag;Konto\n2024-01-02;1,5;0042\n2024-01-03;3,75;0042\n"
    result = invoke("cumsum", str(path), "-d", ";", "--decimal-comma", "--to", "tsv")
    assert result.stdout == "Datum\tBetrag\tKonto\n2024-01-02\t1,5\t0042\n2024-01-03\t3,75\t0042\n"


def test_a_semicolon_file_without_d_says_to_pass_d(invoke, write_file):
    path = write_file("excel.csv", "a;b\n1,5;2\n")
    result = invoke("cumsum", str(path))
    assert result.exit_code == 1
    assert result.stderr == (f"Error: {path}: row 1 (line 2) has 2 fields, expected 1 like the "
                             "header; "
                             "the header holds ';': pass -d ';' (and --decimal-comma for 1,5)\n")
    result = invoke("cumsum", input="a;b\nx;y\n")
    assert result.exit_code == 1
    assert result.stderr.endswith("the header holds ';': pass -d ';' (and --decimal-comma "
                                  "for 1,5)\n")


def test_decimal_comma_refuses_a_comma_delimited_output(invoke, write_file):
    result = invoke("cumsum", "--decimal-comma", "--out-delimiter", ",", input="a\n1\n")
    assert result.exit_code == 2
    assert result.stderr.startswith("Error: --decimal-comma writes 1,5: the output's delimiter "
                                    "cannot be a comma too")


GOVERNMENT = ("STATE,COUNTY,NAME,POP2020,POP2021\n"
              "01,001,Autauga County,58805,59095\n"
              "01,003,Baldwin County,231767,239294\n"
              "02,013,Aleutians East Borough,3420,3390\n")


def test_government_table_codes_stay_codes(invoke, write_file, tmp_path):
    path = write_file("counties.csv", GOVERNMENT)
    result = invoke("cumsum", str(path))
    assert result.exit_code == 0, result.stderr
    assert rows(result.stdout) == [
        ["STATE", "COUNTY", "NAME", "POP2020", "POP2021"],
        ["01", "001", "Autauga County", "58805", "59095"],
        ["01", "003", "Baldwin County", "290572", "298389"],
        ["02", "013", "Aleutians East Borough", "293992", "301779"],
    ]
    # To Parquet: codes stay strings, numbers stay numbers.
    out = tmp_path / "counties.parquet"
    assert invoke("cumsum", str(path), "-c", "POP2020", "-o", str(out)).exit_code == 0
    table = pq.read_table(out)
    assert table.schema.field("STATE").type == pa.large_string()
    assert table.column("COUNTY").to_pylist() == ["001", "003", "013"]
    assert table.schema.field("POP2021").type == pa.int64()
    assert table.column("POP2021").to_pylist() == [59095, 239294, 3390]
    assert table.column("POP2020").to_pylist() == [58805, 290572, 293992]


def test_parquet_with_a_pandas_index(invoke, tmp_path):
    frame = pd.DataFrame({"units": [1, 2, 3], "price": [0.5, 0.25, 0.125]},
                         index=pd.Index([7, 8, 9], name="row_id"))
    source = tmp_path / "indexed.parquet"
    frame.to_parquet(source)
    frame.reset_index(drop=True).set_axis(pd.Index([70, 80, 90])).to_parquet(
        tmp_path / "unnamed.parquet")
    out = tmp_path / "out.parquet"
    result = invoke("cumsum", str(source), "-o", str(out))
    assert result.exit_code == 0, result.stderr
    back = pd.read_parquet(out)
    assert back.index.tolist() == [7, 8, 9] and back.index.name == "row_id"
    assert back["units"].tolist() == [1, 3, 6]
    assert back["price"].tolist() == [0.5, 0.75, 0.875]
    # An unnamed index is stored as __index_level_0__: passed through, never scanned.
    result = invoke("cumsum", str(tmp_path / "unnamed.parquet"), "--to", "csv")
    assert result.exit_code == 0, result.stderr
    assert result.stdout == "units,price,__index_level_0__\n1,0.5,70\n3,0.75,80\n6,0.875,90\n"


# Missing cells ------------------------------------------------------------------------------

@pytest.mark.parametrize("marker", ["", "NA", "N/A", "n/a", "NULL", "null", "None", "<NA>",
                                    "#N/A"])
def test_missing_markers_are_missing_cells(invoke, marker):
    result = invoke("cumsum", input=f"x,t\n1,a\n{marker},{marker}\n2,b\n")
    assert result.exit_code == 0, result.stderr
    # x skips the missing cell and writes it empty; t is text and keeps the marker.
    assert rows(result.stdout) == [["x", "t"], ["1", "a"], ["", marker], ["3", "b"]]


def test_nan_and_inf_are_float_values(invoke):
    result = invoke("cumsum", input="x\n1\nnan\n2\n")
    assert rows(result.stdout) == [["x"], ["1.0"], ["NaN"], ["NaN"]]
    result = invoke("cummax", input="x\n1\ninf\n-Infinity\n")
    assert rows(result.stdout) == [["x"], ["1.0"], ["inf"], ["inf"]]


@pytest.mark.parametrize("batch_rows", [[], ["--batch-rows", "1"]], ids=["small", "streaming"])
@pytest.mark.parametrize(("na_rep", "written"), [("N,A", '"N,A"'), ('"', '""""'),
                                                 ("two\nlines", '"two\nlines"')])
def test_na_rep_is_quoted_where_the_output_needs_it(invoke, batch_rows, na_rep, written):
    # Written as it was, a comma in it added a field to the row.
    result = invoke("cumsum", "--na-rep", na_rep, *batch_rows, input="x,y\n1,a\n,c\n")
    assert result.exit_code == 0, result.stderr
    assert result.stdout == f"x,y\n1,a\n{written},c\n"


@pytest.mark.parametrize("pad", [10, 200], ids=["small-file", "long-rows"])
@pytest.mark.parametrize("cell", ["1.5", "007"])
def test_columns_are_judged_from_10000_rows_however_long(invoke, tmp_path, pad, cell):
    # 1 MiB held only about 5,000 rows of 200 bytes: a float at row 7,001 was refused as
    # "not an integer", and a code 007 there read as the number 7.
    path = tmp_path / "long.csv"
    path.write_text("x,t\n" + "".join(f"{cell if i == 7000 else 1},{'p' * pad}\n"
                                      for i in range(12_000)))
    result = invoke("cumsum", str(path))
    if cell == "1.5":
        assert result.exit_code == 0, result.stderr
        assert result.stdout.split("\n")[7001:7003] == [f"7001.5,{'p' * pad}",
                                                        f"7002.5,{'p' * pad}"]
    else:  # a code: x is text, and there is nothing to scan
        assert result.exit_code == 1
        assert result.stderr == (f"Error: {path}: no numeric columns to scan; columns: x, t; "
                                 "column 'x' holds codes with leading zeros, scanned only "
                                 "where named: -c x\n")


def test_na_replaces_the_markers(invoke):
    # With --na '-', NA is no longer missing: the column holds text and is not scanned.
    result = invoke("cumsum", "--na", "-", input="x,y\n1,1\n-,NA\n2,3\n")
    assert result.exit_code == 0, result.stderr
    assert rows(result.stdout) == [["x", "y"], ["1", "1"], ["", "NA"], ["3", "3"]]


@pytest.mark.parametrize("batch_rows", ["1", "2", "1000"])
@pytest.mark.parametrize(("markers", "text", "expected"), [
    pytest.param("0", "a,b\n0,1\n5,2\n", [["a", "b"], ["", "1"], ["5", "3"]], id="zero"),
    pytest.param("0,NA", "a,b\n0,1\n5,2\nNA,3\n",
                 [["a", "b"], ["", "1"], ["5", "3"], ["", "6"]], id="zero-and-NA"),
    pytest.param("nan", "a\n1.5\nnan\n2\n", [["a"], ["1.5"], [""], ["3.5"]], id="nan"),
])
def test_a_marker_that_is_also_a_number_is_missing_in_every_batch(
        invoke, markers, text, expected, batch_rows):
    # Whether a batch held some other bad cell must not decide whether `0` is missing.
    result = invoke("cumsum", "--na", markers, "--batch-rows", batch_rows, input=text)
    assert result.exit_code == 0, result.stderr
    assert rows(result.stdout) == expected


# Rows, lines and delimiters -----------------------------------------------------------------

@pytest.mark.parametrize(("text", "message"), [
    pytest.param("a,b\n1,2\n3\n5,6\n", "row 2 (line 3) has 1 field, expected 2", id="short"),
    pytest.param("a,b\n1,2\n3,4,5\n", "row 2 (line 3) has 3 fields, expected 2", id="long"),
    pytest.param('a,b\n"x\n,y",2\n3\n', "row 2 (line 4) has 1 field, expected 2",
                 id="after-quoted"),
    pytest.param("a,b\n\n1,2\n\n3\n", "row 2 (line 5) has 1 field, expected 2",
                 id="after-blank"),
    pytest.param("a,b,c\n1,2,3\n4,5\n", "row 2 (line 3) has 2 fields, expected 3",
                 id="two-of-three"),
])
@pytest.mark.parametrize("batch_rows", ["1", "1000"])
def test_ragged_rows_are_errors_naming_row_and_counts(invoke, text, message, batch_rows):
    result = invoke("cumsum", "--batch-rows", batch_rows, input=text)
    assert result.exit_code == 1
    hint = "; give --ragged to fill short rows with missing cells" if "3 fields" not in (
        message) else ""
    assert result.stderr == f"Error: standard input: {message} like the header{hint}\n"


@pytest.mark.parametrize(("text", "message"), [
    pytest.param("1,2\n3\n", "row 2 (line 2) has 1 field, expected 2", id="one"),
    pytest.param("1,2\n3,4,5\n", "row 2 (line 2) has 3 fields, expected 2", id="three"),
])
def test_ragged_rows_without_a_header_are_counted_against_the_first_row(invoke, text,
                                                                         message):
    result = invoke("cumsum", "--no-header", input=text)
    assert result.exit_code == 1
    hint = "; give --ragged to fill short rows with missing cells" if "1 field," in (
        message) else ""
    assert result.stderr == f"Error: standard input: {message} like the first row{hint}\n"


@pytest.mark.parametrize("text", [
    pytest.param("a,b\n\n1,2\n\n\n3,4\n\n", id="lf"),
    pytest.param("\n\na,b\r\n1,2\r\n\r\n3,4\r\n\r\n", id="crlf-and-leading"),
    pytest.param("a,b\r1,2\r\r3,4\r", id="lone-cr"),
])
def test_blank_lines_are_skipped_wherever_they_stand(invoke, write_file, text):
    for source in ([str(write_file("b.csv", text))], []):
        result = invoke("cumsum", *source, input=None if source else text)
        assert result.exit_code == 0, result.stderr
        assert result.stdout == "a,b\n1,2\n4,6\n"


def test_a_quoted_empty_cell_of_a_one_column_table_is_a_row(invoke):
    result = invoke("cumsum", input='x\n1\n""\n2\n')
    assert result.exit_code == 0, result.stderr
    # Written back as "" too: an empty line would be read as no row.
    assert result.stdout == 'x\n1\n""\n3\n'


def test_one_column_empty_cells_are_rows_past_the_first_chunk(invoke, tmp_path):
    # Later chunks were parsed straight to numbers, where "" and a blank line are both
    # null: the "" rows (and rows of spaces) were dropped as blank lines.
    path = tmp_path / "one.csv"
    path.write_text("x\n" + "1\n" * 600_000 + '""\n  \n\n' + "1\n" * 3)
    result = invoke("cumsum", str(path))
    assert result.exit_code == 0, result.stderr
    assert result.stdout.endswith('\n600000\n""\n""\n600001\n600002\n600003\n')
    assert result.stdout.count("\n") == 1 + 600_000 + 2 + 3


def test_delimiter_is_the_inputs_and_out_delimiter_the_outputs(invoke, tmp_path):
    text = "a|b\n1|x,y\n2|z\n"
    result = invoke("cumsum", "-d", "|", input=text)
    assert result.stdout == 'a,b\n1,"x,y"\n3,z\n'
    result = invoke("cumsum", "-d", "|", "--out-delimiter", "\\t", input=text)
    assert result.stdout == "a\tb\n1\tx,y\n3\tz\n"
    out = tmp_path / "o.csv"
    assert invoke("cumsum", "-d", "|", "-o", str(out), input=text).exit_code == 0
    assert out.read_text() == 'a,b\n1,"x,y"\n3,z\n'


def test_text_is_quoted_only_where_the_output_needs_it(invoke):
    text = 'n,t\n1,"plain"\n2,"a,b"\n3,"say ""hi"""\n4,"two\nlines"\n5,\n'
    result = invoke("cumsum", input=text)
    assert result.stdout == 'n,t\n1,plain\n3,"a,b"\n6,"say ""hi"""\n10,"two\nlines"\n15,\n'
    result = invoke("cumsum", "--to", "tsv", input=text)
    assert result.stdout == 'n\tt\n1\tplain\n3\ta,b\n6\t"say ""hi"""\n10\t"two\nlines"\n15\t\n'


# Choosing columns ---------------------------------------------------------------------------

WIDE = "id,units,revenue,\"price, usd\",units,note\n1,2,3,4,5,x\n2,3,4,5,6,y\n"


@pytest.mark.parametrize(("args", "scanned"), [
    pytest.param(["-c", "revenue"], [2], id="name"),
    pytest.param(["-c", "3"], [2], id="position"),
    pytest.param(["-c", "3-4"], [2, 3], id="range"),
    pytest.param(["-c", "id-revenue"], [0, 1, 2], id="name-range"),
    pytest.param(["-c", '"price, usd"'], [3], id="quoted-comma"),
    pytest.param(["-c", "units[1]"], [4], id="occurrence"),
    pytest.param(["-c", "1", "-c", "revenue"], [0, 2], id="repeated-adds"),
    pytest.param(["--exclude", "id,2"], [2, 3, 4], id="exclude"),
    pytest.param(["-c", "!id,2"], [2, 3, 4], id="negated"),
    pytest.param(["-c", "5-5"], [4], id="one-column-range"),
    pytest.param(["-c", "-2"], [0, 1], id="open-start"),
])
def test_column_selection(invoke, args, scanned):
    result = invoke("cumsum", *args, input=WIDE)
    assert result.exit_code == 0, result.stderr
    got = rows(result.stdout)
    assert got[0] == ["id", "units", "revenue", "price, usd", "units", "note"]
    first, second = [int(c) if c.isdigit() else c for c in got[1]], got[2]
    original = [["1", "2", "3", "4", "5", "x"], ["2", "3", "4", "5", "6", "y"]]
    for i in range(6):
        want = (str(int(original[0][i]) + int(original[1][i])) if i in scanned
                else original[1][i])
        assert second[i] == want, (i, got)
        assert str(first[i]) == original[0][i]


def test_ambiguous_name_lists_its_positions(invoke):
    result = invoke("cumsum", "-c", "units", input=WIDE)
    assert result.exit_code == 1
    assert result.stderr == ("Error: standard input: -c 'units' is ambiguous: the header "
                             "repeats it at positions 2, 5; choose one by position or as "
                             "'units[0]' .. 'units[1]'\n")


@pytest.mark.parametrize(("args", "message"), [
    pytest.param(["-c", "9"], "-c 9: no column at that position; it has 6 columns",
                 id="position"),
    pytest.param(["-c", "nope"], "no column 'nope'; columns: id, units, revenue, "
                 "'price, usd', units, note", id="name"),
    pytest.param(["-c", "note"], "column 'note' is not numeric: row 1 (line 2) holds 'x'",
                 id="text"),
])
def test_bad_column_choices_name_what_is_wrong(invoke, args, message):
    result = invoke("cumsum", *args, input=WIDE)
    assert result.exit_code == 1
    assert message in result.stderr and result.stderr.count("\n") == 1


def test_a_bad_selection_is_a_usage_error_before_the_input_is_read(invoke, tmp_path):
    result = invoke("cumsum", str(tmp_path / "missing.csv"), "-c", '"open')
    assert result.exit_code == 2
    assert "a quote is not closed" in result.stderr


def test_only_scanned_writes_npy_from_a_csv_with_text(invoke, tmp_path):
    out = tmp_path / "o.npy"
    result = invoke("cumsum", "-c", "2,3", "--only-scanned", "-o", str(out), input=WIDE)
    assert result.exit_code == 0, result.stderr
    assert np.load(out).tolist() == [[2, 3], [5, 7]]
    result = invoke("cumsum", "-c", "revenue", "--only-scanned", "--keep", input=WIDE)
    assert result.stdout == "revenue,revenue_cumsum\n3,3\n4,7\n"
    result = invoke("cumsum", "-o", str(tmp_path / "x.npy"), input=WIDE)
    assert result.exit_code == 2
    assert "--only-scanned" in result.stderr


# Dates --------------------------------------------------------------------------------------

def test_cummax_of_dates_is_the_latest_so_far(invoke, tmp_path):
    text = "day,n\n2024-03-02,1\n2024-01-15,2\n,3\n2024-05-01,4\n"
    result = invoke("cummax", "-c", "day", input=text)
    assert result.exit_code == 0, result.stderr
    assert result.stdout == "day,n\n2024-03-02,1\n2024-03-02,2\n,3\n2024-05-01,4\n"
    table = pa.table({"t": pa.array([3, 1, 5], pa.timestamp("us", tz="UTC")),
                      "d": pa.array([20, 10, 30], pa.date32())})
    pq.write_table(table, tmp_path / "t.parquet")
    out = tmp_path / "o.parquet"
    result = invoke("cummin", str(tmp_path / "t.parquet"), "-c", "t,d", "-o", str(out))
    assert result.exit_code == 0, result.stderr
    got = pq.read_table(out)
    assert got.schema == table.schema
    assert got.column("t").cast(pa.int64()).to_pylist() == [3, 1, 1]
    assert got.column("d").cast(pa.int32()).to_pylist() == [20, 10, 10]


def test_cumsum_of_dates_is_a_clear_error(invoke):
    result = invoke("cumsum", "-c", "day", input="day\n2024-03-02\n")
    assert result.exit_code == 2
    assert result.stderr == ("Error: standard input: cumsum is not defined for dates and "
                             "times (column 'day'); cummax and cummin are\n")


# Properties ---------------------------------------------------------------------------------

CELL = st.one_of(
    st.text(alphabet=st.characters(codec="utf-8", exclude_categories=("Cs",),
                                   exclude_characters="\0\r"), max_size=6),
    st.integers(-10**6, 10**6).map(str),
    st.floats(allow_nan=True, allow_infinity=True, width=64).map(repr),
    st.sampled_from(["007", "0012", "01001", "TRUE", "false", "NA", "N/A", "NULL", "",
                     "#N/A", "<NA>", "1.50", "8.99E-05", "2024-01-02", " 3 "]),
)


@st.composite
def csv_tables(draw: st.DrawFn) -> tuple[list[str], list[list[str]], list[str]]:
    width = draw(st.integers(1, 4))
    height = draw(st.integers(1, 12))
    header = [draw(st.sampled_from(["a", "b", "", "a", "x, y", 'q"'])) for _ in range(width)]
    # A numeric column to scan, so the run has something to do.
    body = [[str(draw(st.integers(-1000, 1000)))] + [draw(CELL) for _ in range(width)]
            for _ in range(height)]
    return ["n", *header], body, [draw(st.sampled_from(["csv", "tsv"]))]


def _write_csv(header: list[str], body: list[list[str]]) -> str:
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n", quoting=csv.QUOTE_MINIMAL)
    writer.writerow(header)
    for row in body:
        # A lone empty field of the last row in a one-cell row never happens (n is first).
        writer.writerow(row)
    return out.getvalue()


@pytest.mark.slow
@settings(max_examples=60, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(table=csv_tables(), op=st.sampled_from(["cumsum", "cummax", "cumprod"]),
       batch_rows=st.sampled_from(["1", "3", "1000"]))
def test_unscanned_columns_are_the_input_cell_for_cell(table, op, batch_rows) -> None:
    from click.testing import CliRunner

    header, body, (fmt,) = table
    text = _write_csv(header, body)
    result = CliRunner().invoke(main, [op, "-c", "1", "--batch-rows", batch_rows, "--to", fmt,
                                       "--overflow", "wrap"], input=text.encode())
    assert result.exit_code == 0, (result.stderr, text)
    got = rows(result.stdout, "\t" if fmt == "tsv" else ",")
    assert got[0] == header
    assert len(got) == len(body) + 1
    for want, row in zip(body, got[1:], strict=True):
        assert row[1:] == want[1:], (text, result.stdout)


@pytest.mark.slow
@settings(max_examples=30, deadline=None)
@given(table=csv_tables(), batch_rows=st.sampled_from(["1", "1000"]))
def test_unscanned_text_reaches_parquet_unchanged(tmp_path_factory, table, batch_rows) -> None:
    from click.testing import CliRunner

    header, body, _ = table
    directory: Path = tmp_path_factory.mktemp("pq")
    out = directory / "o.parquet"
    result = CliRunner().invoke(main, ["cumsum", "-c", "1", "--batch-rows", batch_rows,
                                       "-o", str(out)], input=_write_csv(header, body).encode())
    assert result.exit_code == 0, result.stderr
    got = pq.ParquetFile(out).read()  # read_table refuses repeated names
    assert got.column_names == header
    for j in range(1, len(header)):
        column = got.column(j)
        if pa.types.is_large_string(column.type):
            # Text and codes stay text; an empty cell is a missing one (null).
            assert column.to_pylist() == [r[j] or None for r in body]


# Text encodings -----------------------------------------------------------------------------

def test_bytes_that_are_not_utf8_are_an_error_naming_row_and_column(invoke, write_file):
    path = write_file("latin.csv", b"a,b\n1,x\n2,caf\xe9\n")
    result = invoke("cumsum", str(path))
    assert result.exit_code == 1
    assert result.stderr == (f"Error: {path}: row 2 (line 3), column 'b': bytes e9 are not "
                             "UTF-8; pass "
                             "--encoding with the file's encoding (latin-1, cp1252, ...)\n")
    late = write_file("late.csv", b"a,b\n" + b"1,x\n" * 300_000 + b"2,caf\xe9\n")
    out = late.with_name("out.csv")
    result = invoke("cumsum", str(late), "-o", str(out))
    assert result.exit_code == 1
    assert "row 300001 (line 300002), column 'b': bytes e9 are not UTF-8" in result.stderr
    assert not out.exists()


@pytest.mark.parametrize("encoding", ["latin-1", "cp1252"])
def test_encoding_reads_and_writes_text_byte_for_byte(invoke, write_file, tmp_path, encoding):
    data = "Stadt;Menge\nKöln;1,5\nMünchen – Süd;2,25\n".encode(encoding, errors="replace")
    path = write_file("de.csv", data)
    out = tmp_path / "out.csv"
    result = invoke("cumsum", str(path), "-d", ";", "--decimal-comma", "--encoding", encoding,
                    "-o", str(out))
    assert result.exit_code == 0, result.stderr
    assert out.read_bytes() == data.replace(b"2,25", b"3,75")
    parquet = tmp_path / "out.parquet"
    assert invoke("cumsum", str(path), "-d", ";", "--decimal-comma", "--encoding", encoding,
                  "-o", str(parquet)).exit_code == 0
    assert pq.read_table(parquet).column("Stadt").to_pylist()[0] == "Köln"


@pytest.mark.parametrize("options", [[], ["--batch-rows", "1"], ["--keep"]],
                         ids=["default", "batches", "keep"])
def test_a_latin1_comma_file_becomes_utf8_with_points_in_one_pass(invoke, write_file,
                                                                 options):
    """--out-encoding and --out-decimal: the output's text and decimal mark, apart from
    the input's; unscanned cells are the same text, in the output's encoding."""
    path = write_file("de.csv", "Stadt;Menge\nKöln;1,5\nMünchen;2,25\n".encode("latin-1"))
    result = invoke("cumsum", str(path), "-d", ";", "--decimal-comma", "--encoding",
                    "latin-1", "--out-encoding", "utf-8", "--out-decimal", "point", *options)
    assert result.exit_code == 0, result.stderr
    if options == ["--keep"]:  # the kept input column is its text as read
        assert result.stdout_bytes == ("Stadt,Menge,Menge_cumsum\nKöln,\"1,5\",1.5\n"
                                       "München,\"2,25\",3.75\n").encode()
    else:
        assert result.stdout_bytes == "Stadt,Menge\nKöln,1.5\nMünchen,3.75\n".encode()


def test_the_output_keeps_the_input_encoding_and_mark_by_default(invoke, write_file):
    data = "Stadt;Menge\nKöln;1,5\nMünchen;2,25\n".encode("latin-1")
    path = write_file("de.csv", data)
    result = invoke("cumsum", str(path), "-d", ";", "--decimal-comma", "--encoding",
                    "latin-1")
    assert result.stdout_bytes == data.replace(b"2,25", b"3,75")
    result = invoke("cumsum", str(path), "-d", ";", "--decimal-comma", "--encoding",
                    "latin-1", "--out-decimal", "comma", "--out-encoding", "cp1252")
    assert result.stdout_bytes == data.replace(b"2,25", b"3,75")


def test_comma_decimals_out_of_a_point_file(invoke):
    result = invoke("cumsum", "--out-decimal", "comma", input="a,b\nx,1.5\ny,2.25\n")
    assert result.exit_code == 0, result.stderr
    assert result.stdout == "a;b\nx;1,5\ny;3,75\n"
    result = invoke("cumsum", "--out-decimal", "comma", "--out-delimiter", ",", input="a\n1\n")
    assert result.exit_code == 2
    assert result.stderr == ("Error: --out-decimal comma writes 1,5: the output's delimiter "
                             "cannot be a comma too; leave --out-delimiter out (csv output "
                             "then uses ';')\n")


@pytest.mark.parametrize(("encoding", "message"), [
    ("utf-16", "does not keep ASCII as it is"),
    ("no-such-codec", "is not an encoding Python knows"),
])
@pytest.mark.parametrize("option", ["--encoding", "--out-encoding"])
def test_unusable_encodings_are_usage_errors(invoke, tmp_path, encoding, message, option):
    result = invoke("cumsum", str(tmp_path / "missing.csv"), option, encoding)
    assert result.exit_code == 2
    assert f"Error: {option} {encoding!r} {message}" in result.stderr


# Chunks ------------------------------------------------------------------------------------

NUMBERISH = st.one_of(st.integers(-10**6, 10**6).map(str),
                      st.sampled_from(["", "NA", " 7 ", "nan", "1e3", "-0"]),
                      st.floats(allow_nan=False, allow_infinity=False).map(repr))


@pytest.mark.slow
@settings(max_examples=40, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(cells=st.lists(st.tuples(st.integers(-1000, 1000), NUMBERISH,
                                st.sampled_from(["x", "a,b", "", 'q"q'])), min_size=1,
                      max_size=60),
       keep=st.booleans(), op=st.sampled_from(["cumsum", "cummax"]))
def test_chunks_never_change_a_result(monkeypatch, cells, keep, op) -> None:
    """Later chunks parse their numbers straight away when they can (else as text): the
    output is byte for byte that of one chunk, missing markers and all."""
    from click.testing import CliRunner

    import cumtool.formats.csv.csv as csv_format
    from cumtool.formats import records

    # The first row says m holds floats, whatever the (tiny) first chunk holds besides.
    text = _write_csv(["n", "m", "t"], [["0", "0.5", "x"], *([str(n), m, t]
                                                              for n, m, t in cells)])
    args = [op, "--to", "csv", *(["--keep"] if keep else [])]
    whole = CliRunner().invoke(main, args, input=text.encode())
    with monkeypatch.context() as patch:
        patch.setattr(csv_format, "CHUNK_BYTES", 16)
        patch.setattr(csv_format, "MIN_CHUNK_BYTES", 16)
        patch.setattr(csv_format, "SAMPLE_BYTES", 16)
        patch.setattr(records, "READ_BYTES", 16)
        chunked = CliRunner().invoke(main, args, input=text.encode())
    assert (chunked.exit_code, chunked.stdout, chunked.stderr) == (
        whole.exit_code, whole.stdout, whole.stderr), text


@pytest.mark.parametrize("text", ["a,b\n1,2\n3,4,", 'a,b\n1,2\n3,"4",', "a,b\n3,4,"])
def test_a_last_record_without_a_line_end_that_ends_in_the_delimiter_has_its_field(
        invoke, text):
    """polars drops the empty field after a last record's final delimiter when no line
    end follows; it is counted, as with a line end: a third field, an error."""
    row = 1 if text.count("\n") == 1 else 2
    for whole in (text, text + "\n"):
        result = invoke("cumsum", input=whole)
        assert result.exit_code == 1
        assert result.stderr == (f"Error: standard input: row {row} (line {row + 1}) has 3 "
                                 "fields, expected 2 like the header\n")
