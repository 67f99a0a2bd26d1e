"""A new user's trial with messy real files: what pandas, R, Excel and government
exports look like, and what such a user checks (the header kept, which columns are
scanned, one-line errors that say what to do, -q silencing notes). Each test here was a
defect found in that trial."""

from __future__ import annotations

import datetime
from pathlib import Path

import openpyxl
import pandas as pd
import pytest
from helpers import ok


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
