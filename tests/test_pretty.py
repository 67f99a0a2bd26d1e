"""The pretty table (`--to table`), rendered as plain text because the CLI's standard
output is not a terminal here: names and dtypes in the header, numbers right-aligned, a
caption with the op and the shape, bounded size for big results, `null` and `nan` told
apart, and no colour codes."""

from __future__ import annotations

import io
import re
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest
from click.testing import Result
from rich.console import Console

from cumtool.formats.table.pretty import PrettySink
from cumtool.view import View

SAMPLE_DATA = Path(__file__).resolve().parent.parent / "sample_data"

Invoke = Callable[..., Result]
ELLIPSIS = "…"


def render(invoke: Invoke, *args: str, input: bytes | str | None = None) -> str:
    result = invoke(*args, "--to", "table", input=input)
    assert result.exit_code == 0, result.stderr
    assert result.stderr == ""
    text = result.stdout
    assert "\x1b[" not in text
    return text


def raw_cells(line: str) -> list[str]:
    """The cells of one table line, padding included."""
    line = line.rstrip()
    return line[1:-1].split(line[0])


def numbered_rows(text: str) -> list[list[str]]:
    """The cells of each row, its number first; the line between head and tail is one
    cell."""
    return [[c.strip() for c in raw_cells(line)] for line in text.splitlines()
            if line.startswith("│")]


def table_rows(text: str) -> list[list[str]]:
    """The cells of each row without its number; the line between head and tail is one
    cell."""
    return [row[1:] if len(row) > 1 else row for row in numbered_rows(text)]


def header(text: str) -> tuple[list[str], list[str]]:
    """Names and dtypes, after the row numbers' column (`#` over nothing)."""
    lines = [line for line in text.splitlines() if line.startswith("┃")]
    assert len(lines) == 2, text
    names, dtypes = ([c.strip() for c in raw_cells(line)] for line in lines)
    assert (names[0], dtypes[0]) == ("#", "")
    return names[1:], dtypes[1:]


def six_digits(value: float) -> str:
    """A float as the table shows it by default: 6 significant digits, and a float even
    when it is a whole number."""
    text = f"{value:.6g}"
    return text if any(c in text for c in ".ein") else f"{text}.0"


def write_npy(path: Path, array: np.ndarray) -> Path:
    np.save(path, array)
    return path


# Header, alignment, caption ------------------------------------------------------------------


def test_header_names_and_dtypes(invoke: Invoke, write_file):
    path = write_file("t.csv", "n,x,label\n1,0.5,a\n2,1.5,b\n")
    names, dtypes = header(render(invoke, "cumsum", str(path)))
    assert names == ["n", "x", "label"]
    assert dtypes == ["int64", "float64", "str"]


def test_header_of_parquet_types(invoke: Invoke, tmp_path):
    import datetime

    import pyarrow.parquet as pq

    path = tmp_path / "t.parquet"
    pq.write_table(pa.table({
        "day": pa.array([datetime.date(2024, 1, 1)], pa.date32()),
        "small": pa.array([3], pa.int16()),
        "f32": pa.array([1.5], pa.float32()),
        "flag": pa.array([True]),
        "city": pa.array(["Oslo"]).dictionary_encode(),
    }), path)
    names, dtypes = header(render(invoke, "cummax", str(path)))
    assert names == ["day", "small", "f32", "flag", "city"]
    # cummax keeps each dtype; a bool column is not scanned and passes through; a
    # dictionary-encoded column shows the type of its values.
    assert dtypes == ["date32[day]", "int16", "float32", "bool", "str"]


def test_numbers_right_aligned_and_text_left_aligned(invoke: Invoke, write_file):
    path = write_file("t.csv", "n,label\n1,a\n1000,bbbbbbbb\n")
    text = render(invoke, "cumsum", str(path))
    rows = [raw_cells(line)[1:] for line in text.splitlines() if line.startswith("│")]
    assert [[c.strip() for c in row] for row in rows] == [["1", "a"], ["1001", "bbbbbbbb"]]
    first_n, first_label = rows[0]
    assert first_n.endswith("1 ") and first_n.startswith("  ")  # padded on the left
    assert first_label.startswith(" a ") and first_label.endswith("  ")  # on the right
    assert len(first_n) == len(rows[1][0])  # one column width


def test_caption_names_op_axis_input_shape_and_scanned_columns(invoke: Invoke, write_file):
    path = write_file("sales.csv", "a,b,c\n1,2,x\n3,4,y\n5,6,z\n")
    text = render(invoke, "cumprod", str(path))
    assert text.rstrip("\n").splitlines()[-1] == (
        f"cumprod along rows of {path}, 3 rows x 3 columns; scanned: a, b")
    text = render(invoke, "cummin", str(path), "-a", "columns", "-c", "b")
    assert text.rstrip("\n").splitlines()[-1] == (
        f"cummin along columns of {path}, 3 rows x 3 columns; scanned: b")


def test_caption_names_six_scanned_columns_and_counts_the_rest(invoke: Invoke, write_file):
    names = [f"v{i}" for i in range(9)]
    path = write_file("n.csv", ",".join(names) + "\n" + ",".join("1" * 9) + "\n")
    text = render(invoke, "cumsum", str(path))
    assert text.rstrip("\n").splitlines()[-1] == (
        f"cumsum along rows of {path}, 1 row x 9 columns; "
        "scanned: v0, v1, v2, v3, v4, v5 and 3 more")


def test_caption_of_an_array(invoke: Invoke, tmp_path):
    path = write_npy(tmp_path / "cube.npy", np.zeros((2, 3, 4), dtype=np.float32))
    text = render(invoke, "logcumsumexp", str(path), "--axis", "-1")
    assert f"logcumsumexp along axis 2 of {path}, shape (2, 3, 4)" in text


def test_a_long_caption_stays_on_one_line(invoke: Invoke, tmp_path):
    deep = tmp_path / ("a-rather-long-directory-name-" * 3) / "and-another-level"
    deep.mkdir(parents=True)
    path = deep / "quarterly_revenue_by_region_and_product_line.csv"
    path.write_text("a\n1\n2\n")
    text = render(invoke, "cumsum", str(path))
    caption = f"cumsum along rows of {path}, 2 rows x 1 column; scanned: a"
    assert len(caption) > 120
    assert caption in text.splitlines()


def test_caption_from_standard_input(invoke: Invoke):
    text = render(invoke, "cumsum", input="a\n1\n")
    assert "cumsum along rows of standard input, 1 row x 1 column; scanned: a" in text


def test_output_file_holds_the_same_text(invoke: Invoke, write_file, tmp_path):
    path = write_file("t.csv", "a,b\n1,x\n2,y\n")
    out = tmp_path / "view.txt"
    result = invoke("cumsum", str(path), "--to", "table", "-o", str(out))
    assert result.exit_code == 0, result.stderr
    assert result.stdout == ""
    assert out.read_text() == render(invoke, "cumsum", str(path))


def test_wide_output_is_not_squeezed_to_80_columns(invoke: Invoke, write_file):
    names = [f"measurement_{i:02d}" for i in range(10)]
    path = write_file("wide.csv", ",".join(names) + "\n" + ",".join(["1"] * 10) + "\n")
    text = render(invoke, "cumsum", str(path))
    got, _ = header(text)
    assert got[:6] == names[:6]  # whole names, not wrapped or cut
    assert max(len(line) for line in text.splitlines()) > 80


# Big results are bounded ---------------------------------------------------------------------


def test_a_1000_row_result_shows_first_and_last_rows(invoke: Invoke, write_file):
    values = np.arange(1000) % 17 - 8
    path = write_file("long.csv", "v\n" + "".join(f"{v}\n" for v in values))
    text = render(invoke, "cumsum", str(path))
    rows = numbered_rows(text)
    want = np.cumsum(values)
    assert len(text.splitlines()) < 40
    assert len(rows) == 21
    assert rows[:10] == [[str(i + 1), str(v)] for i, v in enumerate(want[:10])]
    assert rows[10] == [f"{ELLIPSIS} 980 rows {ELLIPSIS}"]
    assert rows[11:] == [[str(i + 991), str(v)] for i, v in enumerate(want[-10:])]
    assert "1000 rows x 1 column" in text


def test_the_rows_line_spans_the_table(invoke: Invoke, write_file):
    path = write_file("long.csv", "value,note\n" + "1,x\n" * 30)
    lines = render(invoke, "cumsum", str(path)).splitlines()
    width = len(lines[0])
    assert lines[14] == "│" + f"{ELLIPSIS} 10 rows {ELLIPSIS}".center(width - 2) + "│"
    assert lines[13].startswith("│ 10 │") and lines[15].startswith("│ 21 │")


@pytest.mark.parametrize("count", [19, 20, 21])
def test_no_ellipsis_unless_rows_are_left_out(invoke: Invoke, write_file, count):
    path = write_file("n.csv", "v\n" + "1\n" * count)
    rows = numbered_rows(render(invoke, "cumsum", str(path), "--batch-rows", "3"))
    if count <= 20:
        assert rows == [[str(i), str(i)] for i in range(1, count + 1)]
    else:
        assert rows == [*([str(i), str(i)] for i in range(1, 11)),
                        [f"{ELLIPSIS} 1 row {ELLIPSIS}"],
                        *([str(i), str(i)] for i in range(12, 22))]


@pytest.mark.parametrize(("rows", "head", "tail"), [
    pytest.param("6", 3, 3, id="even"),
    pytest.param("5", 3, 2, id="odd"),
    pytest.param("1", 1, 0, id="one"),
    pytest.param("all", 30, 0, id="all"),
    pytest.param("0", 30, 0, id="zero"),
])
def test_rows_option_shows_the_first_and_last_half(invoke: Invoke, write_file, rows, head,
                                                   tail):
    path = write_file("n.csv", "v\n" + "2\n" * 30)
    got = numbered_rows(render(invoke, "cumsum", str(path), "-n", rows, "--batch-rows", "4"))
    want = [[str(i), str(2 * i)] for i in range(1, head + 1)]
    if head + tail < 30:
        want.append([f"{ELLIPSIS} {30 - head - tail} rows {ELLIPSIS}"])
    want += [[str(i), str(2 * i)] for i in range(31 - tail, 31)]
    assert got == want
    assert render(invoke, "cumsum", str(path), "--rows", rows) == render(
        invoke, "cumsum", str(path), "-n", rows)


def test_rows_option_refuses_what_is_not_a_count(invoke: Invoke, write_file):
    result = invoke("cumsum", str(write_file("n.csv", "v\n1\n")), "-n", "-3")
    assert result.exit_code == 2
    assert result.stderr == ("Error: Invalid value for '-n' / '--rows': '-3' is not a number "
                             "of rows or 'all'. Try 'main cumsum --help'.\n")


def test_not_on_a_terminal_every_column_shows(invoke: Invoke, write_file):
    names = [f"c{i}" for i in range(30)]
    path = write_file("w.csv", ",".join(names) + "\n" + ",".join(map(str, range(30))) + "\n")
    text = render(invoke, "cumsum", str(path))
    assert header(text) == (names, ["int64"] * 30)
    assert table_rows(text) == [[str(i) for i in range(30)]]
    assert "more column" not in text
    assert "1 row x 30 columns" in text


def test_not_on_a_terminal_columns_are_bounded(invoke: Invoke, write_file):
    names = [f"c{i}" for i in range(150)]
    path = write_file("w.csv", ",".join(names) + "\n" + ",".join(map(str, range(150))) + "\n")
    lines = render(invoke, "cumsum", str(path)).splitlines()
    assert header("\n".join(lines))[0] == names[:100]
    assert lines[-2] == f"{ELLIPSIS} 50 more columns not shown: c100, c101, c102, c103, c104, …"


def test_a_long_1d_array(invoke: Invoke, tmp_path):
    array = np.linspace(-1, 1, 500)
    text = render(invoke, "cummax", str(write_npy(tmp_path / "v.npy", array)))
    rows = table_rows(text)
    want = np.maximum.accumulate(array)
    assert len(rows) == 21
    assert [r[0] for r in rows[:10]] == [six_digits(v) for v in want[:10]]
    assert rows[10] == [f"{ELLIPSIS} 480 rows {ELLIPSIS}"]
    assert [r[0] for r in rows[11:]] == [six_digits(v) for v in want[-10:]]
    # An array's rows are numbered by their index, as its columns are.
    assert [r[0] for r in numbered_rows(text)[11:]] == [str(i) for i in range(490, 500)]
    assert "shape (500,)" in text


# N-d arrays ---------------------------------------------------------------------------------


def slices(text: str) -> dict[str, list[list[str]]]:
    """Each labelled slice `[i, j, :, :]` and the cells of its rows."""
    found: dict[str, list[list[str]]] = {}
    current = None
    for line in text.splitlines():
        label = re.fullmatch(r"\s*(\[[\d, ]+, :, :\])\s*", line)
        if label:
            current = label.group(1)
            found[current] = []
        elif line.startswith("│") and current is not None:
            found[current].append([c.strip() for c in raw_cells(line)][1:])
    return found


@pytest.mark.parametrize("axis", [0, 1, 2])
def test_3d_array_shows_labelled_2d_slices(invoke: Invoke, tmp_path, axis):
    cube = np.arange(24, dtype=np.int32).reshape(2, 3, 4) % 5
    text = render(invoke, "cumsum", str(write_npy(tmp_path / "c.npy", cube)), "-a", str(axis))
    want = np.cumsum(cube, axis=axis)
    found = slices(text)
    assert list(found) == ["[0, :, :]", "[1, :, :]"]
    for i, label in enumerate(found):
        assert [[int(c) for c in row] for row in found[label]] == want[i].tolist()
    names, dtypes = header(text.split("[1, :, :]")[0])
    assert names == ["0", "1", "2", "3"]
    assert dtypes == ["int64"] * 4
    # The labels are centred over their table, with no blanks at the end of a line.
    assert text.splitlines()[0] == " " * 14 + "[0, :, :]"
    assert all(line == line.rstrip() for line in text.splitlines())


def test_4d_array_slices_are_labelled_by_both_leading_indices(invoke: Invoke, tmp_path):
    array = np.arange(2 * 2 * 2 * 3, dtype=np.float64).reshape(2, 2, 2, 3)
    text = render(invoke, "cumprod", str(write_npy(tmp_path / "h.npy", array)), "-a", "1")
    found = slices(text)
    assert list(found) == ["[0, 0, :, :]", "[0, 1, :, :]", "[1, 0, :, :]", "[1, 1, :, :]"]
    want = np.cumprod(array, axis=1)
    assert [[float(c) for c in row] for row in found["[1, 0, :, :]"]] == want[1, 0].tolist()


def test_a_big_nd_array_is_bounded(invoke: Invoke, tmp_path):
    array = np.ones((40, 30, 50), dtype=np.int16)
    text = render(invoke, "cumsum", str(write_npy(tmp_path / "big.npy", array)),
                  "--batch-rows", "7")
    lines = text.splitlines()
    assert len(lines) < 200
    found = slices(text)
    assert list(found) == ["[0, :, :]", "[1, :, :]", "[38, :, :]", "[39, :, :]"]
    assert any(re.fullmatch(rf"{ELLIPSIS} 36 more slices {ELLIPSIS}", line) for line in lines)
    want = np.cumsum(array, axis=0, dtype=np.int64)
    last = found["[39, :, :]"]
    assert len(last) == 21  # 10 rows, the line between them, 10 rows
    assert last[10] == []  # the line `… 10 rows …`: one cell, the row number's dropped
    assert f"│{ELLIPSIS} 10 rows {ELLIPSIS}".replace(" ", "") in text.replace(" ", "")
    assert last[0] == [str(v) for v in want[39, 0]]  # not on a terminal: every column
    assert "shape (40, 30, 50)" in text


def test_a_wide_2d_array_is_bounded_in_both_directions(invoke: Invoke, tmp_path):
    array = np.arange(300 * 200, dtype=np.int64).reshape(300, 200)
    text = render(invoke, "cummin", str(write_npy(tmp_path / "m.npy", array)), "-a", "1")
    names, _ = header(text)
    assert names == [str(i) for i in range(100)]
    rows = table_rows(text)
    assert len(rows) == 21
    assert rows[-1] == [str(array[-1, 0])] * 100
    assert f"{ELLIPSIS} 100 more columns not shown: 100, 101, 102, 103, 104, …" in text


def test_zero_d_and_empty_arrays(invoke: Invoke, tmp_path):
    text = render(invoke, "cumsum", str(write_npy(tmp_path / "s.npy", np.array(7, np.int8))))
    assert table_rows(text) == [["7"]]
    assert header(text)[1] == ["int64"]
    assert "shape ()" in text
    text = render(invoke, "cumsum", str(write_npy(tmp_path / "e.npy", np.zeros((0, 3)))))
    assert header(text) == (["0", "1", "2"], ["float64"] * 3)
    assert table_rows(text) == []
    assert "shape (0, 3)" in text


def test_header_only_table(invoke: Invoke, write_file):
    text = render(invoke, "cumsum", str(write_file("h.csv", "a,b\n")))
    assert header(text) == (["a", "b"], ["int64", "int64"])
    assert table_rows(text) == []
    assert "0 rows x 2 columns" in text


# Cells ----------------------------------------------------------------------------------------


def test_missing_and_nan_look_different(invoke: Invoke, write_file):
    path = write_file("m.csv", "a,b\n1.5,x\n,y\nnan,z\n2.0,w\n")
    rows = table_rows(render(invoke, "cumsum", str(path)))
    assert [r[0] for r in rows] == ["1.5", "null", "nan", "nan"]


def test_missing_and_nan_look_different_in_arrays_and_with_skipna(invoke: Invoke, write_file):
    path = write_file("m.csv", "a\n1.0\nNA\nnan\n2.0\n")
    rows = table_rows(render(invoke, "cumsum", str(path), "--skipna"))
    # --skipna: NaN is skipped by the scan but stays in place, like the missing cell.
    assert [r[0] for r in rows] == ["1.0", "null", "nan", "3.0"]


def test_infinities_and_float32_text(invoke: Invoke, tmp_path):
    array = np.array([0.1, 0.2, np.inf, -np.inf], dtype=np.float32)
    rows = table_rows(render(invoke, "cumsum", str(write_npy(tmp_path / "f.npy", array))))
    with np.errstate(invalid="ignore"):  # inf + -inf
        wide = np.cumsum(array.astype(np.float64)).astype(np.float32)
    # float32 cells print as float32's own shortest text (0.3), not float64's.
    assert [r[0] for r in rows] == [str(v) for v in wide]
    assert [r[0] for r in rows] == ["0.1", "0.3", "inf", "nan"]


def test_complex_cells(invoke: Invoke, tmp_path):
    array = np.array([1 + 2j, 0.5 - 1j], dtype=np.complex128)
    rows = table_rows(render(invoke, "cumsum", str(write_npy(tmp_path / "c.npy", array))))
    assert [r[0] for r in rows] == ["1+2j", "1.5+1j"]


def test_indices_columns(invoke: Invoke, write_file, tmp_path):
    path = write_file("t.csv", "a\n2\n1\n2\n")
    text = render(invoke, "cummax", str(path), "--indices")
    assert header(text) == (["a", "a_index"], ["int64", "int64"])
    assert table_rows(text) == [["2", "0"], ["2", "0"], ["2", "2"]]
    array = write_npy(tmp_path / "v.npy", np.array([[3, 1], [1, 4]]))
    text = render(invoke, "cummin", str(array), "--indices")
    assert header(text)[0] == ["0", "0_index", "1", "1_index"]
    assert table_rows(text) == [["3", "0", "1", "0"], ["1", "1", "1", "0"]]


def test_names_and_cells_are_never_read_as_markup(invoke: Invoke, write_file):
    path = write_file("m.csv", 'n,"[bold]name[/bold]",t\n1,2,[/oops]\n3,4,:smile: [red]x\n')
    text = render(invoke, "cumsum", str(path))
    assert header(text)[0] == ["n", "[bold]name[/bold]", "t"]
    assert table_rows(text) == [["1", "2", "[/oops]"], ["4", "6", ":smile: [red]x"]]


# Colour --------------------------------------------------------------------------------------


def test_no_colour_codes_even_when_colour_is_forced(invoke: Invoke, write_file, monkeypatch):
    monkeypatch.setenv("FORCE_COLOR", "1")
    monkeypatch.setenv("TERM", "xterm-256color")
    monkeypatch.delenv("NO_COLOR", raising=False)
    path = write_file("m.csv", "a\n1.0\nNA\nnan\n")
    text = render(invoke, "cumsum", str(path))  # asserts there is no escape code
    assert [r[0] for r in table_rows(text)] == ["1.0", "null", "nan"]


def test_a_terminal_gets_styles(write_file):
    """The counterpart: on a terminal console, null and nan are styled (so the plain-text
    checks above do test something)."""
    out = io.StringIO()
    console = Console(file=out, force_terminal=True, color_system="truecolor", width=100)
    sink = PrettySink(io.BytesIO(), View("cumsum", "rows", "x"), console=console)
    sink.write(pa.record_batch({"a": pa.array([1.0, None, float("nan")])}))
    sink.close()
    text = out.getvalue()
    assert "\x1b[" in text
    plain = re.sub(r"\x1b\[[0-9;]*m", "", text)
    assert [r[0] for r in table_rows(plain)] == ["1.0", "null", "nan"]


# On a terminal: the table fits its width ------------------------------------------------------


def on_console(width: int, batch: pa.RecordBatch, view: View | None = None) -> str:
    """What a terminal `width` columns wide shows of `batch` (plain text: no colours)."""
    out = io.StringIO()
    console = Console(width=width, file=out, force_terminal=False, color_system=None)
    sink = PrettySink(io.BytesIO(), view or View("cumsum", "rows", "wide.csv"),
                      console=console, schema=batch.schema)
    sink.write(batch)
    sink.close()
    return out.getvalue()


WIDE = pa.record_batch({f"c{i:02d}": pa.array([1_000_000 + i, 2_000_000 + i, 3_000_000 + i])
                        for i in range(30)})


@pytest.mark.parametrize(("width", "count"), [(40, 3), (80, 7), (200, 19)])
def test_whole_columns_as_far_as_the_width_allows(width, count):
    # Each column: 7 characters (a value, wider than its name and dtype) + 3; the row
    # numbers: 1 + 3, and the left edge 1. So (width - 5) // 10 columns fit.
    text = on_console(width, WIDE)
    lines = text.splitlines()
    assert max(len(line) for line in lines[:-2]) == 5 + 10 * count <= width
    names = [f"c{i:02d}" for i in range(count)]
    assert header(text) == (names, ["int64"] * count)
    assert numbered_rows(text) == [[str(row), *(str(row * 1_000_000 + i) for i in range(count))]
                                   for row in (1, 2, 3)]
    hidden = ", ".join(f"c{i:02d}" for i in range(count, count + 5))
    assert lines[-2] == f"{ELLIPSIS} {30 - count} more columns not shown: {hidden}, {ELLIPSIS}"
    assert lines[-1] == "cumsum along rows of wide.csv, 3 rows x 30 columns"


def test_results_are_chosen_first_and_shown_in_input_order():
    view = View("cumsum", "rows", "wide.csv", ("c20", "c27"), frozenset({"c20", "c27"}))
    text = on_console(80, WIDE, view)
    assert header(text)[0] == ["c00", "c01", "c02", "c03", "c04", "c20", "c27"]
    assert text.splitlines()[-2] == (
        f"{ELLIPSIS} 23 more columns not shown: c05, c06, c07, c08, c09, {ELLIPSIS}")
    assert text.splitlines()[-1] == ("cumsum along rows of wide.csv, 3 rows x 30 columns; "
                                     "scanned: c20, c27")


def test_by_keys_stay_in_view_on_a_narrow_terminal():
    """--by store: the key comes before the results and the rest, whatever the width."""
    view = View("cumsum", "rows", "wide.csv", ("c20", "c27"), frozenset({"c20", "c27"}))
    out = io.StringIO()
    console = Console(width=80, file=out, force_terminal=False, color_system=None)
    sink = PrettySink(io.BytesIO(), view, console=console, schema=WIDE.schema,
                      keys=frozenset({"c25"}))
    sink.write(WIDE)
    sink.close()
    assert header(out.getvalue())[0] == ["c00", "c01", "c02", "c03", "c20", "c25", "c27"]


def test_the_by_keys_of_a_run_reach_the_table(monkeypatch: pytest.MonkeyPatch):
    from cumtool import sinks
    from cumtool.columns import parse
    from cumtool.formats import FileKind
    from cumtool.request import Request

    seen: dict[str, object] = {}

    class Spy(PrettySink):
        def __init__(self, *args: object, **options: object) -> None:
            seen.update(options)
            super().__init__(*args, **options)  # type: ignore[arg-type]

    monkeypatch.setattr("cumtool.formats.table.pretty.PrettySink", Spy)
    schema = pa.schema([("date", pa.string()), ("store", pa.string()), ("units", pa.int64())])
    request = Request(op="cumsum", by=(parse("store", "--by"),))
    sinks.table_sink(request, FileKind("table"), io.BytesIO(), schema,
                     View("cumsum", "rows", "x.csv"), "x.csv")
    assert seen["keys"] == frozenset({"store"})


def test_money_shows_the_places_its_cells_have(invoke: Invoke):
    text = render(invoke, "cumsum", str(SAMPLE_DATA / "daily_sales.csv"), "-n", "4")
    rows = table_rows(text)
    assert [row[-1] for row in rows] == ["264.27", "381.18", f"{ELLIPSIS} 56 rows {ELLIPSIS}",
                                         "16170.74", "16433.03"]


@pytest.mark.parametrize("op, cells, shown", [
    ("cumsum", "1e-20", ["1e-20"]),  # it was 0.0: one place "fitted" a tiny value
    ("cumsum", "0.1\n0.2\n-0.3", ["0.1", "0.3", "0.0"]),  # 5.6e-17 is the sum's rounding
    ("cumsum", "1.0000000000000002e-12\n0.001", ["1e-12", "0.001"]),  # numpy's "1.e-12"
], ids=["tiny", "rounding-residue", "scientific"])
def test_a_float_column_shows_its_tiny_values(invoke: Invoke, op, cells, shown):
    text = render(invoke, op, "-", input="p\n" + cells + "\n")
    assert [row[-1] for row in table_rows(text)] == shown


def test_a_column_that_is_not_scanned_is_labelled_as_read(invoke: Invoke):
    text = render(invoke, "cumsum", "-c", "amount", "-",
                  input="year,amount,code,flag\n2024,1.5,007,true\n2025,2.5,008,false\n")
    assert header(text) == (["year", "amount", "code", "flag"],
                            ["int64", "float64", "str", "bool"])
    assert table_rows(text) == [["2024", "1.5", "007", "True"], ["2025", "4.0", "008", "False"]]


def test_a_column_wider_than_the_terminal_shows_whole():
    name = "a_column_name_longer_than_the_terminal_is_wide"
    batch = pa.record_batch({name: pa.array([12345678901234, 2]), "b": pa.array([1, 2])})
    text = on_console(30, batch)
    assert header(text) == ([name], ["int64"])
    assert [row[1] for row in numbered_rows(text)] == ["12345678901234", "2"]
    assert text.splitlines()[-2] == f"{ELLIPSIS} 1 more column not shown: b"


def test_long_numbers_and_names_are_never_cut_on_a_narrow_terminal():
    batch = pa.record_batch({"total_revenue_eur": pa.array([2**62, -(2**62)]),
                             "x": pa.array([1.5, 2.25])})
    text = on_console(40, batch)
    assert header(text) == (["total_revenue_eur", "x"], ["int64", "float64"])
    # A float column shows its values to the same places, as many as they have.
    assert table_rows(text) == [[str(2**62), "1.50"], [str(-(2**62)), "2.25"]]
    assert max(len(line) for line in text.splitlines()[:-1]) <= 40


def test_the_row_numbers_column_grows_with_the_row_numbers():
    batch = pa.record_batch({"v": pa.array(range(12345))})
    rows = numbered_rows(on_console(80, batch))
    assert rows[0] == ["1", "0"]
    assert rows[10] == [f"{ELLIPSIS} 12325 rows {ELLIPSIS}"]
    assert rows[-1] == ["12345", "12344"]


def test_array_slices_fit_the_terminal_with_the_same_columns():
    sink_out = io.StringIO()
    console = Console(width=60, file=sink_out, force_terminal=False, color_system=None)
    sink = PrettySink(io.BytesIO(), View("cumsum", "axis 0", "cube.npy"), console=console)
    cube = np.arange(2 * 3 * 40, dtype=np.int64).reshape(2, 3, 40) * 1000
    sink.write_array(cube.shape, cube, None)
    sink.close()
    text = sink_out.getvalue()
    found = slices(text)
    assert list(found) == ["[0, :, :]", "[1, :, :]"]
    # Values are up to 6 wide: # (1 + 3) + edge 1, then 9 per column: 6 fit in 60.
    assert found["[1, :, :]"][2] == [str(v) for v in cube[1, 2, :6]]
    assert found["[0, :, :]"][0] == [str(v) for v in cube[0, 0, :6]]
    assert text.splitlines()[-2] == (
        f"{ELLIPSIS} 34 more columns not shown: 6, 7, 8, 9, 10, {ELLIPSIS}")


# Floats at a readable precision ---------------------------------------------------------------


FLOATS = "x\n381.17999999999995\n0.1\n1234567.891\n0.00001234\n1e300\n-2.5\n"


@pytest.mark.parametrize(("args", "want"), [
    pytest.param([], ["381.18", "381.28", "1.23495e+06", "1.23495e+06", "1e+300", "1e+300"],
                 id="default-6"),
    pytest.param(["--precision", "3"], ["381", "381", "1.23e+06", "1.23e+06", "1e+300",
                                        "1e+300"], id="3"),
    pytest.param(["--precision", "17"], ["381.17999999999995", "381.28", "1234949.171",
                                         "1234949.17101234", "1e+300", "1e+300"], id="17"),
])
def test_floats_show_at_the_precision_asked(invoke: Invoke, write_file, args, want):
    path = write_file("f.csv", FLOATS)
    text = render(invoke, "cumsum", str(path), *args)
    assert [r[0] for r in table_rows(text)] == want
    # The same run to CSV keeps every digit.
    result = invoke("cumsum", str(path), "--to", "csv", *args)
    assert result.stdout.splitlines() == [
        "x", "381.17999999999995", "381.28", "1234949.171", "1234949.17101234", "1e+300",
        "1e+300"]


def test_precision_keeps_small_numbers_and_marks_whole_floats(invoke: Invoke, write_file):
    path = write_file("f.csv", "x,n\n0.000123456789,7\n2.0,8\n")
    text = render(invoke, "cummax", str(path))
    assert table_rows(text) == [["0.000123457", "7"], ["2.0", "8"]]


def test_float32_is_not_shown_with_more_digits_than_it_has(tmp_path, invoke: Invoke):
    path = write_npy(tmp_path / "f.npy", np.array([0.1, 0.2], dtype=np.float32))
    text = render(invoke, "cumsum", str(path), "--precision", "17")
    assert [r[0] for r in table_rows(text)] == ["0.1", "0.3"]


def test_decimals_are_exact_whatever_the_precision(invoke: Invoke, write_file):
    path = write_file("money.csv", "amount\n1234567.89\n0.01\n")
    text = render(invoke, "cumsum", str(path), "--decimal", "--precision", "2")
    assert [r[0] for r in table_rows(text)] == ["1234567.89", "1234567.90"]


def test_precision_out_of_range_is_a_usage_error(invoke: Invoke, write_file):
    result = invoke("cumsum", str(write_file("f.csv", "x\n1\n")), "--precision", "0")
    assert result.exit_code == 2
    assert result.stderr == ("Error: Invalid value for '--precision': 0 is not in the range "
                             "1<=x<=17. Try 'main cumsum --help'.\n")


@pytest.mark.parametrize(("value", "precision", "shown"), [
    # A value with more places than the precision: at that many significant digits.
    pytest.param("16432.999999999996", "6", "16433.0", id="rounded-up-to-a-zero-digit"),
    pytest.param("123456.0432101", "6", "123456", id="all-digits-before-the-point"),
    pytest.param("381.1812345", "3", "381", id="rounded-to-the-point"),
    pytest.param("99999.9499999", "6", "99999.9", id="stored-just-below-the-half"),
    pytest.param("999999.7000003", "6", "1e+06", id="rounded-into-scientific"),
    pytest.param("-0.00012345", "2", "-0.00012", id="small-negative"),
    # A value with at most that many places: with its places (money, a reading).
    pytest.param("123456.0", "6", "123456.0", id="places-all-digits-before-the-point"),
    pytest.param("381.18", "3", "381.18", id="places-beyond-the-significant-digits"),
    pytest.param("99999.95", "6", "99999.95", id="places-stored-just-below-the-half"),
    pytest.param("999999.7", "6", "999999.7", id="places-not-scientific"),
])
def test_the_last_digit_shown_is_within_the_precision(invoke: Invoke, write_file, value,
                                                      precision, shown):
    path = write_file("f.csv", f"x\n{value}\n")
    text = render(invoke, "cummax", str(path), "--precision", precision)
    assert table_rows(text) == [[shown]]
