"""Column types that do not fail silently (issue 33, item 5): a column of numbers left
unscanned for a few text cells gets a note; a column empty in every judged row is judged
from its first values; a late decimal in an integer column reruns a file-to-file scan
with that column as float64, and elsewhere is an error whose hint works. Every CSV path
(small, fast, the streaming reader with --batch-rows, standard input, wide files) says
and writes the same."""

from __future__ import annotations

import itertools
import shlex

import pytest
import small_reference

from cumtool.formats.csv import fast as fastcsv
from cumtool.formats.csv import small

JUDGED = small.INFER_ROWS  # rows a column is judged from
NA = "NA,N/A,n/a,NULL,null,None,<NA>,#N/A"


def _floats(values):
    """Running sums as float64, as the CSV writer writes them."""
    return [repr(v) for v in itertools.accumulate(float(x) for x in values)]


def _ints(values):
    return [str(v) for v in itertools.accumulate(values)]


# (a) a column of numbers with a text cell ------------------------------------------------

def _twelve(rows: int) -> str:
    return "id,amount\n1,5\n2,twelve\n" + "".join(f"{i},{i % 10}\n" for i in range(3, rows + 1))


def _note_twelve() -> str:
    return ("note: column 'amount' is not scanned: its first rows hold numbers, but row 2 "
            f"(line 3) holds 'twelve'; to scan it, pass -c id,amount --na '{NA},twelve'\n")


def _expected_twelve(rows: int) -> bytes:
    amounts = ["5", "twelve", *(str(i % 10) for i in range(3, rows + 1))]
    ids = _ints(range(1, rows + 1))
    return ("id,amount\n" + "".join(f"{i},{a}\n" for i, a in zip(ids, amounts, strict=True))
            ).encode()


@pytest.mark.parametrize("how", ["small", "batches", "stdin", "stdin-batches"])
def test_a_column_left_out_for_a_text_cell_gets_a_note(invoke, write_file, how):
    data = _twelve(40)
    path = write_file("a.csv", data)
    args = ["--batch-rows", "7"] if how.endswith("batches") else []
    if how.startswith("stdin"):
        result = invoke("cumsum", *args, input=data)
    else:
        result = invoke("cumsum", str(path), *args)
    assert result.exit_code == 0, result.stderr
    assert result.stdout_bytes == _expected_twelve(40)
    assert result.stderr == _note_twelve()


@pytest.mark.parametrize("how", ["small", "batches", "stdin"])
def test_the_first_column_left_out_gets_its_note_too(invoke, write_file, how):
    """The first column is column 0: the small and fast paths once asked any() of the
    noted columns' positions, and lost its note (the streaming path said it)."""
    data = "amount,id\n5,1\ntwelve,2\n" + "".join(f"{i % 10},{i}\n" for i in range(3, 41))
    path = write_file("a.csv", data)
    args = ["--batch-rows", "7"] if how == "batches" else []
    result = (invoke("cumsum", *args, input=data) if how == "stdin"
              else invoke("cumsum", str(path), *args))
    assert result.exit_code == 0, result.stderr
    assert result.stdout_bytes == ("amount,id\n5,1\ntwelve,3\n" + "".join(
        f"{i % 10},{total}\n" for i, total in zip(range(3, 41), _ints(range(1, 41))[2:],
                                                 strict=True))).encode()
    assert result.stderr == (
        "note: column 'amount' is not scanned: its first rows hold numbers, but row 2 "
        f"(line 3) holds 'twelve'; to scan it, pass -c amount,id --na '{NA},twelve'\n")


@pytest.mark.parametrize("stdin", [False, True])
def test_a_large_input_gets_the_same_note(invoke, write_file, stdin):
    rows = 130_000  # past small.SMALL_BYTES: the fast pipeline judges it
    data = _twelve(rows)
    assert len(data) > small.SMALL_BYTES
    path = write_file("a.csv", data)
    result = invoke("cumsum", input=data) if stdin else invoke("cumsum", str(path))
    assert result.exit_code == 0, result.stderr
    assert result.stdout_bytes == _expected_twelve(rows)
    assert result.stderr == _note_twelve()


@pytest.mark.parametrize("args", [["-q"], ["--quiet", "--batch-rows", "5"]])
def test_quiet_silences_the_note(invoke, write_file, args):
    path = write_file("a.csv", _twelve(40))
    result = invoke("cumsum", str(path), *args)
    assert result.exit_code == 0
    assert result.stdout_bytes == _expected_twelve(40)
    assert result.stderr == ""


@pytest.mark.parametrize("args", [["-c", "id"], ["--exclude", "amount"], ["-c", "!amount"]])
def test_no_note_where_the_columns_were_chosen(invoke, write_file, args):
    path = write_file("a.csv", _twelve(40))
    result = invoke("cumsum", str(path), *args)
    assert result.exit_code == 0
    assert result.stderr == ""


def test_no_note_for_a_column_of_text_with_some_numbers(invoke, write_file):
    # 8 numbers of 10 cells: 80%, under the 90% that makes a column mostly numbers.
    body = "".join(f"{i},{'x' if i in (3, 7) else i}\n" for i in range(1, 11))
    for args in ([], ["--batch-rows", "3"]):
        result = invoke("cumsum", str(write_file("a.csv", "id,amount\n" + body)), *args)
        assert result.exit_code == 0
        assert result.stderr == ""


def test_the_notes_command_scans_the_column_with_the_others(invoke, write_file):
    path = write_file("a.csv", _twelve(40))
    note = invoke("cumsum", str(path)).stderr
    hinted = shlex.split(note.split("to scan it, pass ", 1)[1])
    result = invoke("cumsum", str(path), *hinted)
    assert result.exit_code == 0, result.stderr
    # The columns the plain run scans (id) and the one the note is about, together.
    amounts = [5, None, *(i % 10 for i in range(3, 41))]
    total, ids, lines = 0, 0, []
    for i, amount in enumerate(amounts, 1):
        ids += i
        if amount is not None:
            total += amount
        lines.append(f"{ids},{'' if amount is None else total}\n")
    assert result.stdout_bytes == ("id,amount\n" + "".join(lines)).encode()
    assert result.stderr == ""


def test_several_text_cells_are_all_in_the_na_list(invoke, write_file):
    body = "".join(f"{i},{ {4: '-', 9: '?', 12: '-'}.get(i, i)}\n" for i in range(1, 41))
    path = write_file("a.csv", "id,n-1\n" + body)
    result = invoke("cumsum", str(path))
    assert result.stderr == (
        "note: column 'n-1' is not scanned: its first rows hold numbers, but row 4 (line 5) "
        f"holds '-'; to scan it, pass -c id,n-1 --na '{NA},-,?'\n")
    hinted = shlex.split(result.stderr.split("to scan it, pass ", 1)[1])
    assert invoke("cumsum", str(path), *hinted).exit_code == 0


def test_a_name_that_c_reads_otherwise_is_chosen_by_position(invoke, write_file):
    body = "".join(f"{i},{'oops' if i == 2 else i}\n" for i in range(1, 21))
    path = write_file("a.csv", "id,2024\n" + body)
    result = invoke("cumsum", str(path))
    assert result.stderr == (
        "note: column '2024' is not scanned: its first rows hold numbers, but row 2 (line 3) "
        f"holds 'oops'; to scan it, pass -c 1,2 --na '{NA},oops'\n")


def test_a_wide_file_gets_the_same_note(invoke, write_file):
    width = 8200  # past formats/csv/wide.WIDE_COLUMNS: read column group by column group
    header = ",".join(f"c{j}" for j in range(width))
    rows = [",".join(str(r + j % 3) for j in range(width)) for r in range(12)]
    rows[3] = rows[3].split(",", 1)[0] + ",lots" + "," + rows[3].split(",", 2)[2]
    result = invoke("cumsum", str(write_file("w.csv", "\n".join([header, *rows]) + "\n")))
    assert result.exit_code == 0, result.stderr
    assert result.stderr == (
        "note: column 'c1' is not scanned: its first rows hold numbers, but row 4 (line 5) "
        f"holds 'lots'; to scan it, pass -c c1 --na '{NA},lots'\n")
    assert result.stdout_bytes.split(b"\n")[12].split(b",")[:3] == [b"66", b"12", b"90"]


# (b) a column empty in every judged row --------------------------------------------------

def _late(rows_after: int, extra: int = 0) -> tuple[str, bytes]:
    """A column `late` empty in the first JUDGED + extra rows, then numbers."""
    before = JUDGED + extra
    data = "id,late,t\n" + "".join(f"{i},,x\n" for i in range(1, before + 1)) + "".join(
        f"{i},{i % 5},y\n" for i in range(before + 1, before + rows_after + 1))
    ids = _ints(range(1, before + rows_after + 1))
    lates = [""] * before + _ints(i % 5 for i in range(before + 1, before + rows_after + 1))
    ts = ["x"] * before + ["y"] * rows_after
    expected = "id,late,t\n" + "".join(f"{i},{late},{t}\n"
                                       for i, late, t in zip(ids, lates, ts, strict=True))
    return data, expected.encode()


@pytest.mark.parametrize("how", ["small", "batches", "stdin"])
def test_a_column_empty_in_the_judged_rows_is_judged_from_its_first_values(invoke, write_file,
                                                                           how):
    data, expected = _late(30)
    path = write_file("b.csv", data)
    if how == "stdin":
        result = invoke("cumsum", input=data)
    else:
        result = invoke("cumsum", str(path), *(["--batch-rows", "999"] if how == "batches"
                                               else []))
    assert result.exit_code == 0, result.stderr
    assert result.stdout_bytes == expected
    assert result.stderr == ""


def test_small_render_judges_an_empty_column_from_its_first_values(invoke, write_file,
                                                                   monkeypatch):
    """small_reference.render, the small path's reference (in the pipeline's place)."""
    monkeypatch.setattr(fastcsv, "render_whole", small_reference.render)
    data, expected = _late(30)
    result = invoke("cumsum", str(write_file("b.csv", data)))
    assert result.exit_code == 0, result.stderr
    assert result.stdout_bytes == expected


@pytest.mark.parametrize("stdin", [False, True])
@pytest.mark.parametrize(("extra", "ahead", "native"), [
    (0, fastcsv.AHEAD_BYTES, True),
    (30_000, fastcsv.AHEAD_BYTES, True),  # its first value in a later read
    (30_000, 1 << 16, False),  # past AHEAD_BYTES: the streaming path reads on
])
def test_the_fast_pipeline_judges_an_empty_column_from_its_first_values(
        invoke, write_file, monkeypatch, stdin, extra, ahead, native):
    finished = []
    pieces = fastcsv._Job.pieces

    def spy(self):
        yield from pieces(self)
        finished.append(True)

    monkeypatch.setattr(small, "SMALL_BYTES", -1)  # not read whole: the fast pipeline
    monkeypatch.setattr(fastcsv._Job, "pieces", spy)
    monkeypatch.setattr(fastcsv, "CHUNK_BYTES", 1 << 15)  # read in many pieces
    monkeypatch.setattr(fastcsv, "AHEAD_BYTES", ahead)
    data, expected = _late(30, extra)
    if stdin:
        result = invoke("cumsum", input=data)
    else:
        result = invoke("cumsum", str(write_file("b.csv", data)))
    assert result.exit_code == 0, result.stderr
    assert result.stdout_bytes == expected
    assert finished == ([True] if native else [])


@pytest.mark.parametrize("fast", [False, True])
def test_a_late_column_of_text_stays_text_with_its_note(invoke, write_file, monkeypatch, fast):
    if fast:
        monkeypatch.setattr(small, "SMALL_BYTES", -1)  # not read whole: the fast pipeline
    data = ("id,late\n" + "".join(f"{i},\n" for i in range(1, JUDGED + 1))
            + "".join(f"{i},{i}\n" for i in range(JUDGED + 1, JUDGED + 20)) + "20000,oops\n")
    for args in ([], ["--batch-rows", "500"]):
        result = invoke("cumsum", str(write_file("b.csv", data)), *args)
        assert result.exit_code == 0
        assert result.stdout_bytes.endswith(b",oops\n")
        assert result.stderr == (
            f"note: column 'late' is not scanned: its first rows hold numbers, but row "
            f"{JUDGED + 20} (line {JUDGED + 21}) holds 'oops'; to scan it, pass -c id,late "
            f"--na '{NA},oops'\n")


# (c) a late decimal in an integer column -------------------------------------------------

def _decimal(rows: int = JUDGED + 20, late: str = "12.5") -> tuple[str, list[int], list]:
    ids = list(range(1, rows + 1))
    values: list = [i % 7 for i in ids]
    values[JUDGED + 5] = late  # row JUDGED + 6, line JUDGED + 7
    data = "id,v\n" + "".join(f"{i},{v}\n" for i, v in zip(ids, values, strict=True))
    return data, ids, values


def _widened(ids: list[int], values: list) -> bytes:
    lines = zip(_ints(ids), _floats(values), strict=True)
    return ("id,v\n" + "".join(f"{i},{v}\n" for i, v in lines)).encode()


@pytest.mark.parametrize("args", [[], ["--batch-rows", "1000"]])
@pytest.mark.parametrize("rows", [JUDGED + 20, 120_000])
def test_a_late_decimal_reruns_a_file_output_with_the_column_widened(invoke, write_file,
                                                                     tmp_path, args, rows):
    data, ids, values = _decimal(rows)
    path = write_file("c.csv", data)
    out = tmp_path / "out.csv"
    result = invoke("cumsum", str(path), "-o", str(out), *args)
    assert result.exit_code == 0, result.stderr
    assert result.stderr == (
        f"note: {path}: row {JUDGED + 6} (line {JUDGED + 7}), column 'v': '12.5' is not an "
        "integer like the first rows; scanning the input again with that column read as "
        "float64\n")
    assert out.read_bytes() == _widened(ids, values)
    assert result.stdout_bytes == b""
    assert sorted(p.name for p in tmp_path.iterdir()) == ["c.csv", "out.csv"]  # nothing else


def test_the_rerun_matches_the_column_read_as_floats(invoke, write_file, tmp_path):
    data, _ids, _values = _decimal()
    path = write_file("c.csv", data)
    out = tmp_path / "out.csv"
    assert invoke("cumsum", str(path), "-o", str(out), "-c", "v", "-q").exit_code == 0
    floats = invoke("cumsum", str(path), "-c", "v", "--dtype", "float64")
    assert out.read_bytes() == floats.stdout_bytes


def test_a_late_decimal_on_standard_output_is_an_error_with_a_working_hint(invoke,
                                                                           write_file):
    data, ids, values = _decimal()
    path = write_file("c.csv", data)
    for args in ([], ["--batch-rows", "1000"]):
        result = invoke("cumsum", str(path), *args)
        assert result.exit_code == 1
        assert result.stderr == (
            f"Error: {path}: row {JUDGED + 6} (line {JUDGED + 7}), column 'v': '12.5' is not "
            "an integer like the first rows; pass --dtype float64 if the column holds "
            "floats\n")
    hinted = invoke("cumsum", str(path), "--dtype", "float64")
    assert hinted.exit_code == 0
    lines = zip(_floats(ids), _floats(values), strict=True)
    assert hinted.stdout_bytes == ("id,v\n" + "".join(f"{i},{v}\n" for i, v in lines)).encode()


def test_a_late_decimal_from_standard_input_stays_an_error(invoke, tmp_path):
    data, _ids, _values = _decimal()
    out = tmp_path / "out.csv"
    result = invoke("cumsum", "-", "-o", str(out), input=data)
    assert result.exit_code == 1
    assert result.stderr == (
        f"Error: standard input: row {JUDGED + 6} (line {JUDGED + 7}), column 'v': '12.5' is "
        "not an integer like the first rows; pass --dtype float64 if the column holds "
        "floats\n")
    assert not out.exists()


def test_a_late_decimal_with_state_is_not_rerun(invoke, write_file, tmp_path):
    data, _ids, _values = _decimal()
    path = write_file("c.csv", data)
    out = tmp_path / "out.csv"
    result = invoke("cumsum", str(path), "-o", str(out), "--state", str(tmp_path / "s.json"))
    assert result.exit_code == 1
    assert "'12.5' is not an integer like the first rows; pass --dtype float64" in result.stderr
    assert "note:" not in result.stderr
    assert not out.exists()


@pytest.mark.parametrize("marker", ["-", "--", " ? ", ".", "n.a."])
def test_a_late_marker_hints_at_an_na_list_that_works(invoke, write_file, marker):
    data, ids, values = _decimal(late=marker)
    path = write_file("d.csv", data)
    result = invoke("cumsum", str(path))
    assert result.exit_code == 1
    shown = marker.strip()
    markers = f"{NA},{shown}"
    assert result.stderr == (
        f"Error: {path}: row {JUDGED + 6} (line {JUDGED + 7}), column 'v': {shown!r} is not "
        f"an integer like the first rows; if {shown!r} means a missing cell, pass --na "
        f"{shlex.quote(markers)}\n")
    hinted = shlex.split(result.stderr.split(" pass ", 1)[1])
    rerun = invoke("cumsum", str(path), *hinted)
    assert rerun.exit_code == 0, rerun.stderr
    total, lines = 0, []
    for i, v in zip(_ints(ids), values, strict=True):
        if isinstance(v, int):
            total += v
        lines.append(f"{i},{total if isinstance(v, int) else ''}\n")
    assert rerun.stdout_bytes == ("id,v\n" + "".join(lines)).encode()


# Wide files (formats/csv/wide.py): judged from the rows in their first MiB ----------------

WIDE = 8200  # columns: past formats/csv/wide.WIDE_COLUMNS
WIDE_ROWS = 85  # rows of 16 kB: the first 60 or so are judged


def _wide(column: list[str]) -> str:
    """A wide file of ones, its column c1 `column`."""
    header = ",".join(f"c{j}" for j in range(WIDE))
    rest = ",1" * (WIDE - 2)
    return "\n".join([header, *(f"1,{cell}{rest}" for cell in column)]) + "\n"


def _wide_result(column: list[str]) -> bytes:
    header = ",".join(f"c{j}" for j in range(WIDE))
    lines = []
    for r, cell in enumerate(column, 1):
        lines.append(f"{r},{cell}" + f",{r}" * (WIDE - 2))
    return ("\n".join([header, *lines]) + "\n").encode()


def test_a_wide_file_judges_an_empty_column_from_its_first_values(invoke, write_file):
    column = [""] * 80 + [str(r) for r in range(80, WIDE_ROWS)]
    data = _wide(column)
    for args in ([], ["--batch-rows", "7"]):
        result = invoke("cumsum", str(write_file("w.csv", data)), *args)
        assert result.exit_code == 0, result.stderr
        assert result.stdout_bytes == _wide_result([""] * 80 + _ints(range(80, WIDE_ROWS)))
    assert invoke("cumsum", input=data).stdout_bytes == result.stdout_bytes


def test_a_wide_file_reruns_a_late_decimal(invoke, write_file, tmp_path, monkeypatch):
    # Rows are judged within 16 MiB (a thousand of these): here within 1 MiB, so that a
    # small file has a decimal past them.
    from cumtool.formats.csv import wide

    monkeypatch.setattr(wide, "JUDGE_LIMIT", 1 << 20)
    column = [str(r % 3) for r in range(WIDE_ROWS)]
    column[80] = "0.25"
    path = write_file("w.csv", _wide(column))
    out = tmp_path / "out.csv"
    result = invoke("cumsum", str(path), "-o", str(out))
    assert result.exit_code == 0, result.stderr
    assert result.stderr == (
        f"note: {path}: row 81 (line 82), column 'c1': '0.25' is not an integer like the "
        "first rows; scanning the input again with that column read as float64\n")
    assert out.read_bytes() == _wide_result(_floats(column))


# (a') JSON Lines: a key of numbers with a text value -------------------------------------

def _jsonl_twelve(rows: int, at: int = 2, every: int = 0) -> str:
    """Records {"id": i, "amount": i % 10}, with "twelve" as row `at`'s amount (and each
    `every`th row's after it, where `every`)."""
    lines = []
    for i in range(1, rows + 1):
        text = i == at or (every and i > at and i % every == 0)
        lines.append(f'{{"id":{i},"amount":{chr(34) + "twelve" + chr(34) if text else i % 10}}}\n')
    return "".join(lines)


_JSONL_NOTE = ("note: column 'amount' is not scanned: its first rows hold numbers, but row {row} "
               "(line {row}) holds 'twelve'; to scan it, write its values that are not numbers "
               "as null and pass -c id,amount\n")


@pytest.mark.parametrize("rows, at", [(40, 2), (200_000, 150_000)])
def test_a_json_lines_key_of_numbers_left_out_for_a_text_value_gets_a_note(
        invoke, write_file, rows, at):
    """As a CSV column does: the key is left out (it is JSON text), but not silently. The
    large input's text is blocks after its first, typed as numbers until then."""
    data = _jsonl_twelve(rows, at)
    result = invoke("cumsum", str(write_file("a.jsonl", data)))
    assert result.exit_code == 0, result.stderr
    assert result.stderr == _JSONL_NOTE.format(row=at)
    lines = result.stdout.splitlines()
    assert len(lines) == rows
    assert lines[at - 1] == f'{{"id":{at * (at + 1) // 2},"amount":"twelve"}}'


def test_no_note_for_a_json_lines_key_of_text_with_some_numbers(invoke, write_file):
    # 32 numbers of 40 values: 80%, under the 90% that makes a column mostly numbers.
    result = invoke("cumsum", str(write_file("a.jsonl", _jsonl_twelve(40, 5, every=5))))
    assert result.exit_code == 0
    assert result.stderr == ""


@pytest.mark.parametrize("args", [["-q"], ["-c", "id"], ["--exclude", "amount"]])
def test_json_lines_note_is_quiet_where_asked_or_chosen(invoke, write_file, args):
    result = invoke("cumsum", str(write_file("a.jsonl", _jsonl_twelve(40))), *args)
    assert result.exit_code == 0
    assert result.stderr == ""


def test_the_json_lines_notes_advice_scans_the_key(invoke, write_file):
    data = _jsonl_twelve(40)
    note = invoke("cumsum", str(write_file("a.jsonl", data))).stderr
    hinted = shlex.split(note.split(" and pass ", 1)[1])
    assert hinted == ["-c", "id,amount"]
    refused = invoke("cumsum", str(write_file("a.jsonl", data)), *hinted)
    assert refused.exit_code == 1
    assert refused.stderr == (f"Error: {write_file('a.jsonl', data)}: column 'amount' is not "
                              "numeric: row 2 (line 2) holds 'twelve'; numeric columns: id\n")
    fixed = data.replace('"twelve"', "null")
    result = invoke("cumsum", str(write_file("b.jsonl", fixed)), *hinted)
    assert result.exit_code == 0, result.stderr
    amounts = list(itertools.accumulate(0 if i == 2 else i % 10 for i in range(1, 41)))
    expected = [f'{{"id":{i * (i + 1) // 2},"amount":{"null" if i == 2 else amounts[i - 1]}}}'
                for i in range(1, 41)]
    assert result.stdout.splitlines() == expected
    assert result.stderr == ""


def test_the_json_lines_note_is_no_field_of_the_output(invoke, write_file, tmp_path):
    import pyarrow.parquet as pq

    out = tmp_path / "out.parquet"
    result = invoke("cumsum", str(write_file("a.jsonl", _jsonl_twelve(40))), "-o", str(out))
    assert result.exit_code == 0
    assert result.stderr == _JSONL_NOTE.format(row=2)
    metadata = pq.read_schema(out).field("amount").metadata
    assert metadata == {b"cumtool.json": b"1"}


@pytest.mark.parametrize("op, data, said", [
    ("cumsum", "flag\ntrue\nfalse\n", "column 'flag' holds booleans, scanned only where "
     "named: -c flag"),
    ("cumsum", "flag\n007\n010\n", "column 'flag' holds codes with leading zeros, scanned "
     "only where named: -c flag"),
    ("cummax", "flag\n2024-01-01\n2024-01-03\n", "column 'flag' holds dates, scanned only "
     "where named: -c flag"),
], ids=["booleans", "codes", "dates"])
def test_no_column_to_scan_but_one_that_only_c_scans_says_so(invoke, write_file, op, data,
                                                             said):
    """Booleans, codes and dates are scanned only where -c names them (tables.md); where
    nothing else was left to scan, the error named none of that."""
    path = write_file("only.csv", data)
    result = invoke(op, str(path))
    assert result.exit_code == 1
    assert result.stderr == (f"Error: {path}: no numeric columns to scan; columns: flag; "
                             f"{said}\n")
    if op == "cummax":  # cumsum takes no dates: nothing to say it would scan
        result = invoke("cumsum", str(path))
        assert result.stderr == f"Error: {path}: no numeric columns to scan; columns: flag\n"


@pytest.mark.parametrize("name, data, said", [
    ("few.csv", "k\n" + "".join(f"{'x' if i == 5 else i}\n" for i in range(20)),
     "column 'k' holds numbers, but row 6 (line 7) holds 'x': to scan it, name it with -c, "
     "its text cells missing (--na)"),
    ("few.jsonl", "".join(f'{{"k":{chr(34) + "x" + chr(34) if i == 5 else i}}}\n'
                          for i in range(20)),
     "column 'k' holds numbers, but row 6 (line 6) holds 'x': to scan it, name it with -c, "
     "its values that are not numbers null"),
    ("comma.csv", 'k\n"1,5"\n"2,5"\n',
     "column 'k' holds numbers with a decimal comma (row 1 (line 2) holds '1,5'): pass "
     "--decimal-comma"),
    ("money.csv", "k\n$1.50\n$2\n",
     "column 'k' holds numbers as a spreadsheet formats them (row 1 (line 2) holds '$1.50'): "
     "export them as plain numbers (1234.5)"),
], ids=["text-cell", "json-text", "decimal-comma", "formatted"])
def test_no_column_to_scan_but_one_that_looks_numeric_says_why(invoke, write_file, name,
                                                                data, said):
    """The note that names such a column comes with a plan: where no column was left to
    scan, the error named none of it."""
    path = write_file(name, data)
    result = invoke("cumsum", str(path))
    assert result.exit_code == 1
    assert result.stderr == f"Error: {path}: no numeric columns to scan; columns: k; {said}\n"


def test_a_column_cummax_cannot_scan_is_named_among_those_it_can(invoke, write_file):
    """cummax scans dates too: the columns it could scan were listed as 'numeric
    columns', a date among them."""
    path = write_file("t.csv", "d,t\n2024-01-02,2024-01-02T10:00:00\n")
    result = invoke("cummax", str(path), "-c", "d,t")
    assert result.exit_code == 1
    assert result.stderr == (f"Error: {path}: column 't' is not numeric nor a date "
                             "(YYYY-MM-DD): row 1 (line 2) holds '2024-01-02T10:00:00'; "
                             "columns cummax can scan: d\n")
