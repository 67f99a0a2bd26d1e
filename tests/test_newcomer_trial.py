"""A new user's trial with messy real files: what pandas, R, Excel and government
exports look like, and what such a user checks (the header kept, which columns are
scanned, one-line errors that say what to do, -q silencing notes). Each test here was a
defect found in that trial."""

from __future__ import annotations

import datetime
import os
import subprocess
import sys
from pathlib import Path

import openpyxl
import pandas as pd
import pytest
from helpers import ok


@pytest.fixture
def cli_at(tmp_path, monkeypatch):
    """`cumtool ARGS...` as a process in tmp_path (its working directory)."""
    monkeypatch.chdir(tmp_path)
    root = str(Path(__file__).resolve().parents[1])
    env = {**os.environ, "PYTHONPATH": root}

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "cumtool", *args], capture_output=True,
                              text=True, env=env, timeout=120, check=False)

    return run


def _xlsx(path: Path, rows: list[list[object]], sheets: int = 1) -> Path:
    book = openpyxl.Workbook()
    book.remove(book.active)
    for number in range(sheets):
        sheet = book.create_sheet(f"S{number + 1}")
        for row in rows:
            sheet.append(row)
    book.save(path)
    return path


def test_a_pandas_to_excel_index_keeps_its_empty_name_and_is_not_scanned(invoke, tmp_path):
    """pandas writes its index under an empty header cell, as to_csv does; read from CSV
    the index passes through, so read from the workbook it must too (it was named
    `__UNNAMED__0` and summed: 10, 30, 60)."""
    path = tmp_path / "report.xlsx"
    frame = pd.DataFrame({"x": [1.5, 2.5, 3.0], "n": [1, 2, 3]}, index=[10, 20, 30])
    frame.to_excel(path)
    frame.to_csv(tmp_path / "report.csv")
    from_csv = ok(invoke("cumsum", str(tmp_path / "report.csv"))).stdout
    assert from_csv == ",x,n\n10,1.5,1\n20,4.0,3\n30,7.0,6\n"
    assert ok(invoke("cumsum", str(path), "--to", "csv")).stdout == from_csv


def test_spreadsheet_header_cells_are_the_header_as_the_sheet_shows_it(invoke, tmp_path):
    """The header row is the input's, names unchanged, empty and repeated ones included
    (SEMANTICS.md, Tables): not fastexcel's `b_1`, `__UNNAMED__N` for a date or a flag."""
    path = _xlsx(tmp_path / "h.xlsx", [
        ["b", "b", 2024, 1.5, datetime.date(2024, 1, 1), True, None],
        [1, 2, 3, 4, 5, 6, 7],
        [1, 2, 3, 4, 5, 6, 7],
    ])
    result = ok(invoke("cumsum", str(path), "--to", "csv"))
    assert result.stdout == ("b,b,2024,1.5,2024-01-01,TRUE,\n"
                             "1,2,3,4,5,6,7\n"
                             "2,4,6,8,10,12,7\n")
    # A repeated name is chosen as a CSV's is: by its occurrence.
    picked = ok(invoke("cumsum", str(path), "--to", "csv", "-c", "b[1]")).stdout
    assert picked.splitlines()[2] == "1,4,3,4,5,6,7"


def test_quiet_silences_the_note_on_a_workbook_of_several_sheets(invoke, tmp_path):
    """Every note is a `note: ` line that -q silences; this one began `Note: ` and came
    out under -q (and from the Python API, which shows no notes)."""
    path = _xlsx(tmp_path / "two.xlsx", [["v"], [1], [2]], sheets=2)
    loud = invoke("cumsum", str(path), "--to", "csv")
    assert (loud.exit_code, loud.stdout) == (0, "v\n1\n3\n")
    assert loud.stderr == (f"note: {path} has 2 sheets; reading the first, 'S1' (the "
                           "others: 'S2'; choose one with --sheet)\n")
    quiet = ok(invoke("cumsum", str(path), "--to", "csv", "-q"))
    assert quiet.stdout == "v\n1\n3\n"


def test_a_semicolon_export_with_a_quoted_cell_read_without_d_says_to_pass_d(invoke,
                                                                            write_file):
    """Excel's `;` export quotes a cell holding the decimal comma's thousands (`"1.234,50"`).
    Read with the default `,` that quote stands inside a field; the error named only the
    quoting rule, where the fix is -d ';' (as the error for the same file without quotes
    says)."""
    path = write_file("export.csv", b"\xef\xbb\xbfDatum;Menge\r\n01.02.2024;3\r\n"
                                    b'03.02.2024;"1.234,50"\r\n')
    result = invoke("cumsum", str(path))
    assert (result.exit_code, result.stdout) == (1, "")
    assert result.stderr == (
        f"Error: {path}: a quote inside an unquoted field, near row 2 (line 3) "
        "('03.02.2024;\"1.234,50\"\\r'); quote the whole field (\"a \"\"b\"\" c\") as CSV "
        "requires; the header holds ';': pass -d ';' (and --decimal-comma for 1,5)\n")


def test_a_stray_quote_in_a_file_read_with_its_own_delimiter_gets_no_delimiter_hint(
        invoke, write_file):
    path = write_file("q.csv", 'a;b\n1;"x"y\n')
    result = invoke("cumsum", str(path), "-d", ";")
    assert result.exit_code == 1
    assert result.stderr == (f"Error: {path}: a quote inside an unquoted field, near row 1 "
                             "(line 2) ('1;\"x\"y'); quote the whole field (\"a \"\"b\"\" c\") "
                             "as CSV requires\n")


@pytest.mark.parametrize(("cells", "first"), [
    (('"1,234"', '"2,000"', '"12,500.75"'), "1,234"),  # Excel's thousands, quoted
    (("$1.50", "$2.00", "$3.25"), "$1.50"),  # a currency format
    (("15%", "20%", "7.5%"), "15%"),  # a percent format
    # European formats: a currency after the number, thousands in groups of three
    # apart (a space, a no-break space, a narrow one), a Swiss apostrophe.
    (('"12,50 \u20ac"', '"3,00 \u20ac"', '"1 000,00 \u20ac"'), "12,50 \u20ac"),
    (("10 000", "20 000", "1 250 000"), "10 000"),
    (('"1\u00a0234,50"', "2\u00a0000", '"7\u202f500,25"'), "1\u00a0234,50"),
    (("1'234.50", "2'000", "12'500.75"), "1'234.50"),
])
def test_a_column_of_formatted_numbers_left_unscanned_gets_a_note(invoke, write_file, cells,
                                                                   first):
    """Nothing that looks numeric is left out silently: `amount` holds numbers as a
    spreadsheet formats them, which cumtool does not read as numbers. The rows come out
    right (qty summed, amount as it was), but a user sees no reason why amount was not
    summed; a note names the column and its first cell, as for a column with a few text
    cells."""
    rows = "".join(f"r{i},{cell},{i}\n" for i, cell in enumerate(cells, 1))
    path = write_file("formatted.csv", "name,amount,qty\n" + rows)
    result = invoke("cumsum", str(path))
    assert result.exit_code == 0
    assert result.stdout.splitlines()[1:] == [f"r1,{cells[0]},1", f"r2,{cells[1]},3",
                                              f"r3,{cells[2]},6"]
    assert result.stderr.count("\n") == 1
    assert result.stderr.startswith("note: column 'amount' is not scanned")
    assert f"row 1 (line 2) holds {first!r}" in result.stderr


def test_a_column_with_decimal_commas_gets_a_note_naming_decimal_comma(invoke, write_file):
    """'1,5' is a decimal comma, not a thousands separator: the note said to export plain
    numbers, where --decimal-comma reads them."""
    path = write_file("sc.csv", "n;v\n1;1,5\n2;2,25\n")
    result = invoke("cumsum", str(path), "-d", ";")
    assert (result.exit_code, result.stderr) == (0, (
        "note: column 'v' is not scanned: its numbers are written with a decimal comma "
        "(row 1 (line 2) holds '1,5'); to scan it, pass --decimal-comma\n"))
    assert ok(invoke("cumsum", str(path), "-d", ";", "--decimal-comma")).stdout == (
        "n;v\n1;1,5\n3;3,75\n")


def test_thousands_points_under_decimal_comma_get_the_note(invoke, write_file):
    """With --decimal-comma, '1.000' is a thousand as a spreadsheet writes it: the column
    was left out with no word."""
    path = write_file("m.csv", "Konto;Betrag;Menge\n1;1,5;1.000\n2;2,25;2.500\n")
    result = invoke("cumsum", str(path), "-d", ";", "--decimal-comma")
    assert (result.exit_code, result.stdout) == (
        0, "Konto;Betrag;Menge\n1;1,5;1.000\n3;3,75;2.500\n")
    assert result.stderr == (
        "note: column 'Menge' is not scanned: its numbers are written as a spreadsheet "
        "formats them (row 1 (line 2) holds '1.000'), with thousands separators, a "
        "currency or a percent sign, which cumtool does not read; to scan it, export it "
        "as plain numbers (1234.5)\n")


def test_a_column_empty_in_the_first_row_under_line_buffered_gets_a_note(invoke):
    """--line-buffered judges the columns from the first row: one empty there was left
    out with no word, and a `tail -f` pipeline never summed it."""
    result = invoke("cumsum", "-", "--line-buffered", input="a,b\n1,\n2,3\n4,5.5\n")
    assert (result.exit_code, result.stdout) == (0, "a,b\n1,\n3,3\n7,5.5\n")
    assert result.stderr == (
        "note: column 'b' is not scanned: --line-buffered judges each column from the first "
        "row, where it is empty; to scan it, pass -c a,b\n")
    scanned = invoke("cumsum", "-", "--line-buffered", "-c", "a,b",
                     input="a,b\n1,\n2,3\n4,5.5\n")
    assert (scanned.exit_code, scanned.stdout) == (0, "a,b\n1,\n3,3.0\n7,8.5\n")


@pytest.mark.parametrize(("encoding", "named"), [("utf-16", "UTF-16"), ("utf-32", "UTF-32")])
@pytest.mark.parametrize("extra", [(), ("--from", "tsv")])
def test_excel_unicode_text_export_is_named_utf16_with_the_command_that_converts_it(
        invoke, write_file, encoding, named, extra):
    """Excel's "Unicode Text" export is tab-separated UTF-16 with a byte order mark. It was
    refused as `the header holds a NUL byte (a binary file?)`, which sends a user looking
    for corruption; the BOM says what it is, and iconv reads it."""
    path = write_file("export.txt", "name\tval\r\nä\t1\r\n".encode(encoding))
    result = invoke("cumsum", str(path), *extra)
    assert (result.exit_code, result.stdout) == (1, "")
    assert result.stderr == (
        f"Error: {path}: the text is {named} (it starts with a {named} byte order mark), "
        f"which cumtool does not read; convert it to UTF-8 on the way: iconv -f {named} "
        f"-t UTF-8 {path} | cumtool cumsum\n")
    converted = invoke("cumsum", "-", input=path.read_bytes().decode(encoding))
    assert ok(converted).stdout == "name\tval\nä\t1\n"


def test_no_numeric_column_but_one_of_integers_beyond_int64_says_how_to_scan_it(
        invoke, write_file):
    """A column of 20-digit integers is an id by default (not scanned); where it is the
    only column of numbers, 'no numeric columns to scan' left a user with numbers before
    their eyes; the -c error's hint, --dtype float64, is the way, so it is said here too."""
    path = write_file("counts.csv", "bytes\n99999999999999999999\n1\n")
    result = invoke("cumsum", str(path))
    assert (result.exit_code, result.stdout) == (1, "")
    assert result.stderr == (f"Error: {path}: no numeric columns to scan; columns: bytes; "
                             "column 'bytes' holds integers beyond int64: pass --dtype "
                             "float64 to scan them as floats\n")
    assert ok(invoke("cumsum", str(path), "--dtype", "float64")).stdout == (
        "bytes\n1e+20\n1e+20\n")


@pytest.mark.parametrize(("op", "listed"), [("cumsum", "units"), ("cummean", "units"),
                                            ("cummax", "date, units")])
def test_the_columns_an_op_can_scan_are_listed_without_dates_it_refuses(invoke, write_file,
                                                                        op, listed):
    """`-c store` names a text column; the error lists what can be scanned instead. It
    listed `date` for cumsum, which then refuses dates (cummax and cummin take them)."""
    path = write_file("sales.csv", "date,store,units\n2024-03-01,Riverside,3\n"
                                   "2024-03-02,Harbor,4\n")
    result = invoke(op, str(path), "-c", "store")
    assert (result.exit_code, result.stdout) == (1, "")
    said = ("is not numeric nor a date (YYYY-MM-DD)", "columns cummax can scan") if (
        op == "cummax") else ("is not numeric", "numeric columns")
    assert result.stderr == (f"Error: {path}: column 'store' {said[0]}: row 1 (line 2) "
                             f"holds 'Riverside'; {said[1]}: {listed}\n")


@pytest.mark.parametrize(("state", "inputs", "output", "role"), [
    ("log.csv", ("log.csv",), (), "an input"),
    ("log.csv", ("*.csv",), (), "an input"),  # a quoted glob that takes it in
    ("out.csv", ("log.csv",), ("-o", "out.csv"), "the output"),
])
def test_a_state_that_is_the_data_is_refused_before_it_is_touched(invoke, tmp_path,
                                                                  monkeypatch, state, inputs,
                                                                  output, role):
    """`--state log.csv` for `--state log.state`: the error was the one for a broken state
    file, 'remove it to start afresh' -- the user's data -- and a log.csv.lock was left."""
    monkeypatch.chdir(tmp_path)
    Path("log.csv").write_text("kwh\n1\n2\n")
    Path("out.csv").write_text("kept\n")
    result = invoke("cumsum", *inputs, "--state", state, *output)
    assert (result.exit_code, result.stdout) == (2, "")
    assert result.stderr == (f"Error: --state {state} is {role}: give the state a file of "
                             f"its own (e.g. {state}.state)\n")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["log.csv", "out.csv"]
    assert (Path("log.csv").read_text(), Path("out.csv").read_text()) == ("kwh\n1\n2\n",
                                                                          "kept\n")


def test_a_growing_log_whose_header_is_being_written_waits_as_the_note_says(cli_at):
    """The first cron run can find the log just created, its header half written. The run
    said the line waits for the next run, then failed with 'the file is empty' (exit 1,
    cron mails an error); the next run, with the header whole, worked."""
    Path("app.log").write_text("ts,by")
    hour = ["cumsum", "app.log", "--from", "csv", "--growing", "--state", "s.json",
            "-o", "out.csv", "--run-id"]
    first = cli_at(*hour, "h1")
    assert (first.returncode, first.stderr) == (0, (
        "note: app.log: its last line has no line end yet (it is being written); it waits "
        "for the next run\n"))
    # Nothing scanned: nothing written, no state saved (the lock file stays, as they do).
    assert sorted(p.name for p in Path().iterdir()) == ["app.log", "s.json.lock"]
    with open("app.log", "a") as log:
        log.write("tes\n1,10\n2,20\n")
    second = cli_at(*hour, "h2")
    assert (second.returncode, second.stderr) == (0, "")
    assert Path("out.csv").read_text() == "ts,bytes\n1,10\n3,30\n"



@pytest.mark.parametrize("output", [["-o", "out.csv"], ["-o", "outs/"]])
def test_with_several_logs_one_whose_header_is_being_written_waits_too(cli_at, output):
    """Several growing logs, one of them just created with its header half written: it
    waits for the next run, as the note says, and the others' rows are scanned (the
    run failed with 'the file is empty', exit 1, and scanned nothing). Where every log
    waits, nothing is written and no state is saved."""
    Path("a.log").write_text("ts,kb\n1,2\n")
    Path("b.log").write_text("ts,k")
    hour = ["cumsum", "a.log", "b.log", "--from", "csv", "--growing", "--state", "s.json",
            *output, "--run-id"]
    first = cli_at(*hour, "h1")
    assert (first.returncode, first.stderr) == (0, (
        "note: b.log: its last line has no line end yet (it is being written); it waits "
        "for the next run\n"))
    with open("b.log", "a") as log:
        log.write("b\n3,4\n")
    with open("a.log", "a") as log:
        log.write("5,6\n")
    second = cli_at(*hour, "h2")
    assert (second.returncode, second.stderr) == (0, "")
    if output == ["-o", "out.csv"]:
        assert Path("out.csv").read_text() == "ts,kb\n6,8\n9,12\n"
    else:  # each log's new rows to its own file, the running totals carried across
        assert (Path("outs/a.log").read_text(), Path("outs/b.log").read_text()) == (
            "ts,kb\n6,8\n", "ts,kb\n9,12\n")
    Path("c.log").write_text("ts,k")
    Path("d.log").write_text("")
    both = cli_at("cumsum", "c.log", "d.log", "--from", "csv", "--growing", "--state",
                  "t.json", "-o", "new.csv", "--run-id", "h1")
    assert both.returncode == 0, both.stderr
    assert not Path("new.csv").exists() and not Path("t.json").exists()


@pytest.mark.parametrize(("typed", "message"), [
    ("qty", "no column 'qty'; columns: id, ' amount ', Qty. Did you mean 'Qty'?"),
    ("amount", "no column 'amount'; columns: id, ' amount ', Qty. Did you mean "
               "'\" amount \"'?"),
    ("price", "no column 'price'; columns: id, ' amount ', Qty"),
])
def test_a_column_named_but_for_its_case_or_spaces_is_offered(invoke, write_file, typed,
                                                              message):
    """Hand-made exports pad their headers (` amount `) and capitalise them (`Qty`). The
    listing showed ` amount ` unquoted, its spaces invisible, and offered nothing; -c
    strips spaces around an item, so the name is offered quoted, as it is to be typed."""
    path = write_file("pads.csv", "id, amount ,Qty\n1,2,3\n4,5,6\n")
    result = invoke("cumsum", str(path), "-c", typed)
    assert (result.exit_code, result.stdout, result.stderr) == (
        1, "", f"Error: {path}: {message}\n")
    offered = ok(invoke("cumsum", str(path), "-c", '" amount "'))
    assert offered.stdout == "id, amount ,Qty\n1,2,3\n4,7,6\n"


@pytest.mark.parametrize(("extra", "hint"), [
    ((), "columns: sep=;; its first line, 'sep=;', is Excel's note of the delimiter, not a "
         "header: skip it (tail -n +2) and pass -d ';'"),
    (("-d", ";"), "columns: sep=, ''; its first line is Excel's sep= line, which names the "
                  "delimiter, not a header: skip it (tail -n +2)"),
])
def test_excel_sep_line_before_the_header_is_named_with_how_to_skip_it(invoke, write_file,
                                                                       extra, hint):
    """Excel writes (and reads) a first line `sep=;` naming the delimiter. Read as the
    header it left every column text: the error suggested -d ';', after which it listed
    the columns `sep=` and '' and said no more."""
    path = write_file("excel.csv", "sep=;\r\nDatum;Menge\r\n01.01.2024;3\r\n02.01.2024;4\r\n")
    result = invoke("cumsum", str(path), *extra)
    assert (result.exit_code, result.stdout) == (1, "")
    assert result.stderr == f"Error: {path}: no numeric columns to scan; {hint}\n"
    skipped = path.read_bytes().split(b"\n", 1)[1]
    assert ok(invoke("cumsum", "-", "-d", ";", input=skipped)).stdout == (
        "Datum,Menge\n01.01.2024,3\n02.01.2024,7\n")  # csv output: its own delimiter



@pytest.mark.parametrize("line_buffered", [False, True])
def test_a_late_integer_beyond_int64_is_called_one(invoke, line_buffered):
    """A byte counter that outgrows int64 after the rows its type is judged from (10,000;
    the first with --line-buffered): the error said '99999999999999999999' 'is not an
    integer', which it is."""
    rows = 1 if line_buffered else 20_000
    text = "v\n" + "".join(f"{i}\n" for i in range(rows)) + "99999999999999999999\n5\n"
    result = invoke("cumsum", "-", "-o", "-", *(["--line-buffered"] * line_buffered),
                    input=text)
    assert result.exit_code == 1
    assert result.stderr == (
        f"Error: standard input: row {rows + 1} (line {rows + 2}), column 'v': "
        "'99999999999999999999' is an integer beyond int64, unlike the first rows; pass "
        "--dtype float64 to scan the column as floats\n")


@pytest.mark.parametrize("rows", [3, 40_000], ids=["small", "pipeline"])
def test_a_few_formatted_numbers_among_plain_ones_get_the_formatted_note(invoke, write_file,
                                                                         rows):
    """A column of plain numbers but for a few a spreadsheet formatted ('1,234') is named
    as formatted numbers, not as text to make missing with --na, on the small path and
    the compiled pipeline's (a file over 1 MiB)."""
    body = "".join(f"r{i},{i}.5,{i}\n" for i in range(rows))
    path = write_file("mixed.csv", 'name,amount,qty\nr,"1,234",1\n' + body)
    result = invoke("cumsum", str(path))
    assert result.exit_code == 0
    assert result.stderr == (
        "note: column 'amount' is not scanned: its numbers are written as a spreadsheet "
        "formats them (row 1 (line 2) holds '1,234'), with thousands separators, a currency "
        "or a percent sign, which cumtool does not read; to scan it, export it as plain "
        "numbers (1234.5)\n")
    assert result.stdout.splitlines()[2] == "r0,0.5,1"  # amount as it was, qty summed


@pytest.mark.parametrize("rows", [3, 40_000], ids=["small", "pipeline"])
def test_missing_markers_among_formatted_numbers_do_not_hide_the_note(invoke, write_file,
                                                                      rows):
    """NA cells are neither numbers nor text: a column of 0s, NAs and one '1,5' is numbers
    a spreadsheet formatted, and gets the note the general reader gives it
    (`--batch-rows 1`), not none (the head's quick look counted the NAs as text)."""
    body = "".join("0,0\n" if i % 3 == 0 else "0,NA\n" for i in range(rows))  # NA most
    path = write_file("na.csv", 'a,b\n0,0\n0,NA\n0,"1,5"\n' + body)
    result = invoke("cumsum", str(path))
    general = invoke("cumsum", str(path), "--batch-rows", "1")
    assert result.exit_code == general.exit_code == 0
    assert result.stderr == general.stderr == (
        "note: column 'b' is not scanned: its numbers are written with a decimal comma "
        "(row 3 (line 4) holds '1,5'); to scan it, pass --decimal-comma\n")
    assert result.stdout == general.stdout


@pytest.mark.parametrize("extra", [(), ("-c", "x")])
def test_indices_refuse_an_index_column_the_input_has(invoke, extra):
    """cummax --indices adds x_index beside x; an input that has an x_index already got a
    second column of that name, where --keep refuses the same clash. Written only the
    scanned columns, there is no clash."""
    data = "x,x_index\n3,9\n1,8\n5,7\n"
    result = invoke("cummax", "--indices", *extra, input=data)
    assert (result.exit_code, result.stdout, result.stderr) == (
        1, "", "Error: standard input: --indices would add column 'x_index', which the "
               "input already has\n")
    alone = ok(invoke("cummax", "--indices", "-c", "x", "--only-scanned", input=data))
    assert alone.stdout == "x,x_index\n3,0\n3,0\n5,2\n"
