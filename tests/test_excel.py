"""Spreadsheets in (the `excel` extra, fastexcel): cell types kept, --sheet, the first of
several sheets with a note, and errors naming the file and the sheet. The workbooks are
written here: .xlsx with openpyxl (a test-only dependency), .ods by hand."""

from __future__ import annotations

import datetime
import io
import json
import subprocess
import sys
import zipfile
from pathlib import Path

import openpyxl
import pyarrow as pa
import pyarrow.ipc as ipc
import pyarrow.parquet as pq
import pytest
from helpers import ok

SALES = [
    ["date", "code", "units", "price", "note"],
    [datetime.date(2024, 3, 1), "007", 3, 1.5, "a"],
    [datetime.date(2024, 3, 2), "010", 4, None, None],
    [datetime.date(2024, 3, 3), "011", 5, 2.25, "c"],
]


def xlsx(path: Path, sheets: dict[str, list[list[object]]]) -> Path:
    book = openpyxl.Workbook()
    book.remove(book.active)
    for title, rows in sheets.items():
        sheet = book.create_sheet(title)
        for row in rows:
            sheet.append(row)
    book.save(path)
    return path


def ods(rows: list[list[object]]) -> bytes:
    """A minimal OpenDocument spreadsheet of strings and floats (None: an empty cell), one
    sheet `Data`."""
    def cell(value: object) -> str:
        if value is None:
            return "<table:table-cell/>"
        if isinstance(value, str):
            return (f'<table:table-cell office:value-type="string"><text:p>{value}</text:p>'
                    "</table:table-cell>")
        return (f'<table:table-cell office:value-type="float" office:value="{value}">'
                f"<text:p>{value}</text:p></table:table-cell>")
    body = "".join("<table:table-row>" + "".join(map(cell, row)) + "</table:table-row>"
                   for row in rows)
    ns = ('xmlns:office="urn:oasis:names:tc:opendocument:xmlns:office:1.0" '
          'xmlns:table="urn:oasis:names:tc:opendocument:xmlns:table:1.0" '
          'xmlns:text="urn:oasis:names:tc:opendocument:xmlns:text:1.0"')
    content = (f'<?xml version="1.0" encoding="UTF-8"?><office:document-content {ns} '
               'office:version="1.2"><office:body><office:spreadsheet>'
               f'<table:table table:name="Data">{body}</table:table>'
               "</office:spreadsheet></office:body></office:document-content>")
    manifest = ('<?xml version="1.0" encoding="UTF-8"?><manifest:manifest xmlns:manifest='
                '"urn:oasis:names:tc:opendocument:xmlns:manifest:1.0" manifest:version="1.2">'
                '<manifest:file-entry manifest:full-path="/" manifest:media-type='
                '"application/vnd.oasis.opendocument.spreadsheet"/><manifest:file-entry '
                'manifest:full-path="content.xml" manifest:media-type="text/xml"/>'
                "</manifest:manifest>")
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr(zipfile.ZipInfo("mimetype"),
                         "application/vnd.oasis.opendocument.spreadsheet")
        archive.writestr("META-INF/manifest.xml", manifest, zipfile.ZIP_DEFLATED)
        archive.writestr("content.xml", content, zipfile.ZIP_DEFLATED)
    return buffer.getvalue()


@pytest.fixture
def book(tmp_path: Path) -> Path:
    return xlsx(tmp_path / "book.xlsx", {"Sales": SALES, "Costs": [["x"], [1], [2]],
                                         "2": [["y"], [10], [20]]})


def test_cells_keep_their_types(invoke, book, tmp_path):
    out = tmp_path / "out.parquet"
    ok(invoke("cumsum", str(book), "--sheet", "Sales", "-o", str(out)))
    table = pq.read_table(out)
    assert table.schema == pa.schema([("date", pa.date32()), ("code", pa.string()),
                                      ("units", pa.int64()), ("price", pa.float64()),
                                      ("note", pa.string())])
    assert table.to_pydict() == {
        "date": [datetime.date(2024, 3, d) for d in (1, 2, 3)],
        "code": ["007", "010", "011"], "units": [3, 7, 12], "price": [1.5, None, 3.75],
        "note": ["a", None, "c"]}


def test_several_sheets_and_no_sheet_reads_the_first_and_says_so(invoke, book):
    result = invoke("cumsum", str(book), "--to", "csv")
    assert result.exit_code == 0
    assert result.stdout.splitlines()[0] == "date,code,units,price,note"
    assert result.stdout.splitlines()[1] == "2024-03-01,007,3,1.5,a"
    assert result.stderr == (f"note: {book} has 3 sheets; reading the first, 'Sales' (the "
                             "others: 'Costs', '2'; choose one with --sheet)\n")


def test_one_sheet_reads_without_a_note(invoke, tmp_path):
    path = xlsx(tmp_path / "one.xlsx", {"Only": [["v"], [1], [2]]})
    assert ok(invoke("cumsum", str(path), "--to", "csv")).stdout == "v\n1\n3\n"


@pytest.mark.parametrize(
    ("sheet", "expected"),
    [pytest.param("Costs", "x\n1\n3\n", id="name"),
     pytest.param("1", "units\n3\n7\n12\n", id="number-1"),
     pytest.param("3", "y\n10\n30\n", id="number"),
     pytest.param("2", "y\n10\n30\n", id="a-name-wins-over-a-number")])
def test_sheet_by_name_or_number(invoke, book, sheet, expected):
    column = expected.split("\n", 1)[0]
    result = ok(invoke("cumsum", str(book), "--sheet", sheet, "--to", "csv", "-c", column,
                       "--only-scanned"))
    assert result.stdout == expected


@pytest.mark.parametrize(
    ("sheet", "message"),
    [pytest.param("Nope", "no sheet named 'Nope'; its sheets: 'Sales', 'Costs', '2'",
                  id="name"),
     pytest.param("4", "--sheet 4: it has 3 sheets ('Sales', 'Costs', '2')", id="number")])
def test_a_bad_sheet_is_an_error_naming_file_and_sheet(invoke, book, tmp_path, sheet, message):
    out = tmp_path / "out.csv"
    result = invoke("cumsum", str(book), "--sheet", sheet, "-o", str(out))
    assert result.exit_code == 1
    assert result.stderr == f"Error: {book}: {message}\n"
    assert not out.exists()


@pytest.mark.parametrize(
    ("args", "message"),
    [pytest.param(["missing.xlsx", "--sheet", "0"], "--sheet 0: sheets are numbered from 1",
                  id="zero"),
     pytest.param(["missing.xlsx", "--sheet", " "], "--sheet needs a sheet name or a number from 1",
                  id="empty"),
     pytest.param(["missing.csv", "--sheet", "1"],
                  "--sheet is for spreadsheets (.xlsx, .xls, .ods); missing.csv is read as csv",
                  id="csv")])
def test_sheet_option_is_checked_before_the_file_is_opened(invoke, args, message):
    result = invoke("cumsum", *args)
    assert result.exit_code == 2
    assert result.stderr == f"Error: {message}\n"


def test_sheet_on_standard_input_that_is_not_a_spreadsheet(invoke):
    result = invoke("cumsum", "--sheet", "1", input="a\n1\n")
    assert result.exit_code == 2
    assert result.stderr == ("Error: --sheet is for spreadsheets (.xlsx, .xls, .ods); "
                             "standard input is read as csv\n")


@pytest.mark.parametrize("fmt", [pytest.param(f, id=f) for f in (
    "csv", "tsv", "parquet", "jsonl", "arrow", "arrows", "table")])
def test_every_output_format(invoke, tmp_path, fmt):
    path = xlsx(tmp_path / "in.xlsx", {"S": SALES})
    result = ok(invoke("cumsum", str(path), "--to", fmt, "-c", "units"))
    data = result.stdout_bytes
    if fmt == "csv":
        assert data.decode().splitlines()[1:] == ["2024-03-01,007,3,1.5,a",
                                                  "2024-03-02,010,7,,", "2024-03-03,011,12,2.25,c"]
    elif fmt == "tsv":
        assert data.decode().splitlines()[2] == "2024-03-02\t010\t7\t\t"
    elif fmt == "parquet":
        assert pq.read_table(pa.BufferReader(data)).column("units").to_pylist() == [3, 7, 12]
    elif fmt == "jsonl":
        assert json.loads(data.decode().splitlines()[1]) == {
            "date": "2024-03-02", "code": "010", "units": 7, "price": None, "note": None}
    elif fmt == "arrow":
        assert ipc.open_file(pa.BufferReader(data)).read_all().column("code").to_pylist() == [
            "007", "010", "011"]
    elif fmt == "arrows":
        table = ipc.open_stream(pa.BufferReader(data)).read_all()
        assert table.schema.field("date").type == pa.date32()
    else:
        assert "007" in data.decode() and "units" in data.decode()


@pytest.mark.parametrize("kind", [pytest.param(k, id=k) for k in ("xlsx", "ods")])
def test_standard_input_is_recognised(invoke, tmp_path, kind):
    if kind == "xlsx":
        data = xlsx(tmp_path / "in.xlsx", {"Data": [["code", "n"], ["007", 2], ["010", 3.5]]}
                    ).read_bytes()
    else:
        data = ods([["code", "n"], ["007", 2], ["010", 3.5]])
    result = ok(invoke("cumsum", "--to", "csv", input=data))
    assert result.stdout == "code,n\n007,2.0\n010,5.5\n"


def test_from_names_the_format_when_the_name_does_not(invoke, tmp_path):
    path = tmp_path / "export.bin"
    xlsx(tmp_path / "in.xlsx", {"D": [["n"], [1], [2]]}).rename(path)
    assert ok(invoke("cumsum", str(path), "--from", "xlsx", "--to", "csv")).stdout == (
        "n\n1\n3\n")


def test_no_header_names_columns_from_1(invoke, tmp_path):
    path = xlsx(tmp_path / "in.xlsx", {"D": [[1, "a"], [2, "b"]]})
    out = ok(invoke("cumsum", str(path), "--no-header", "--to", "jsonl")).stdout
    assert out == '{"1":1,"2":"a"}\n{"1":3,"2":"b"}\n'


def test_piped_output_of_a_spreadsheet_is_csv(invoke, tmp_path):
    path = xlsx(tmp_path / "in.xlsx", {"D": [["n"], [1], [2]]})
    assert ok(invoke("cumsum", str(path))).stdout == "n\n1\n3\n"


def test_writing_a_spreadsheet_is_refused(invoke, tmp_path):
    path = xlsx(tmp_path / "in.xlsx", {"D": [["n"], [1]]})
    result = invoke("cumsum", str(path), "-o", str(tmp_path / "out.xlsx"))
    assert result.exit_code == 2
    assert "cannot tell the output format from" in result.stderr
    result = invoke("cumsum", str(path), "--to", "xlsx")
    assert result.exit_code == 2
    assert "--to 'xlsx' is not a format" in result.stderr


def test_a_damaged_spreadsheet_is_an_error_naming_it(invoke, write_file):
    path = write_file("bad.xlsx", b"PK\x03\x04 not really a zip")
    result = invoke("cumsum", str(path))
    assert result.exit_code == 1
    assert result.stderr.startswith(f"Error: {path}: cannot read as a spreadsheet: ")
    assert result.stderr.count("\n") == 1


def test_without_the_extra_the_error_says_how_to_install_it(invoke, book, monkeypatch):
    monkeypatch.setitem(sys.modules, "fastexcel", None)  # import fastexcel fails
    result = invoke("cumsum", str(book))
    assert result.exit_code == 1  # as for every missing extra (tests/test_cli.py)
    assert result.stderr == ("Error: reading spreadsheets needs the optional extra 'excel': "
                             "pip install 'cumtool[excel]' (from a checkout: pip install "
                             "'.[excel]')\n")


def test_other_formats_do_not_import_fastexcel(tmp_path):
    path = tmp_path / "in.csv"
    path.write_text("a\n1\n")
    code = ("import sys\nfrom cumtool.cli import main\n"
            f"try:\n    main(['cumsum', {str(path)!r}])\nexcept SystemExit:\n    pass\n"
            "print('fastexcel' in sys.modules, 'openpyxl' in sys.modules)\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True)
    assert done.stdout.strip().splitlines()[-1] == "False False"


def test_times_flags_empty_columns_and_error_cells(invoke, tmp_path):
    path = xlsx(tmp_path / "odd.xlsx", {"S": [
        ["t", "flag", "empty", "err", "n"],
        [datetime.time(12, 30), True, None, "#DIV/0!", 1],
        [datetime.time(13, 0), False, None, 5, 2],
    ]})
    out = tmp_path / "out.parquet"
    result = invoke("cumsum", str(path), "-o", str(out))
    # fastexcel's own warning (an empty column read as text) stays off standard error.
    assert result.exit_code == 0 and result.stderr == ""
    table = pq.read_table(out)
    assert table.schema.field("t").type == pa.time64("us")
    assert table.column("t").to_pylist() == [datetime.time(12, 30), datetime.time(13, 0)]
    assert table.column("flag").to_pylist() == [True, False]
    assert table.column("empty").to_pylist() == [None, None]
    # An error cell is a missing cell, as polars and pandas read it.
    assert table.column("err").to_pylist() == [None, 5]
    assert table.column("n").to_pylist() == [1, 3]
