"""The contract's reference examples, end to end through the command line.

Each example is written as a small CSV, .npy or Parquet file (or piped in on standard
input), run through `cumtool`, and the output parsed back. The expected numbers are the
ones SEMANTICS.md lists (torch's results, checked by hand), never cumtool's own output.
"""

from __future__ import annotations

import io
import itertools
import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from click.testing import Result
from helpers import along_axis, npy_bytes, ok

Invoke = Callable[..., Result]
WriteFile = Callable[[str, bytes | str], Path]

NAN = float("nan")
INT64_MIN = -(2**63)


# Helpers ---------------------------------------------------------------------------------


def cell_text(value: Any) -> str:
    if isinstance(value, float) and math.isnan(value):
        return "NaN"
    return repr(value) if isinstance(value, float) else str(value)


def csv_text(header: list[str], rows: list[list[Any]]) -> str:
    lines = [",".join(header)] + [",".join(cell_text(v) for v in row) for row in rows]
    return "\n".join(lines) + "\n"


def csv_rows(text: str) -> tuple[list[str], list[list[str]]]:
    lines = text.splitlines()
    return lines[0].split(","), [line.split(",") for line in lines[1:]]


def load_npy(data: bytes) -> np.ndarray:
    return np.load(io.BytesIO(data), allow_pickle=False)


def same(got: np.ndarray, expected: Any, dtype: Any) -> None:
    """dtype, shape and values equal (NaN equals NaN)."""
    assert got.dtype == np.dtype(dtype)
    np.testing.assert_array_equal(got, np.array(expected, dtype=dtype), strict=True)


def float_cells(cells: list[str]) -> list[float]:
    return [float(c) for c in cells]


def assert_float_cells(cells: list[str], expected: list[float]) -> None:
    got = float_cells(cells)
    assert len(got) == len(expected)
    for g, e in zip(got, expected, strict=True):
        assert (math.isnan(g) and math.isnan(e)) or g == e, (cells, expected)


# One-column reference examples, from CSV and .npy files and standard input ---------------

ONE_D = [
    pytest.param("cumprod", [3, 4, 2, 5], [3, 12, 24, 120], id="cumprod-growth"),
    pytest.param("cumprod", [3, 0, 5, 2], [3, 0, 0, 0], id="cumprod-zero"),
    pytest.param("cumprod", [12.0, NAN, 10.0, 34.0], [12.0, NAN, NAN, NAN], id="cumprod-nan"),
    pytest.param("cumprod", [-1, 2, -4], [-1, -2, 8], id="cumprod-signs"),
    pytest.param("cumsum", [1, 2, 3, 4], [1, 3, 6, 10], id="cumsum-counts"),
    pytest.param("cummax", [1, 3, 3, 2, 3], [1, 3, 3, 3, 3], id="cummax-ties"),
    pytest.param("cummin", [5, 7, 2, 9, 2], [5, 5, 2, 2, 2], id="cummin"),
    # log 3 is one ulp below math.log(3) in torch: log1p(exp(-log 2)) + log 2
    pytest.param("logcumsumexp", [0.0, 0.0, 0.0],
                 [0.0, math.log(2), math.log1p(0.5) + math.log(2)], id="logcumsumexp-zeros"),
]
SOURCES = ["csv-file", "csv-stdin", "npy-file", "npy-stdin"]


def run_one_column(invoke: Invoke, write_file: WriteFile, source: str, op: str,
                   data: list[Any], *options: str) -> Result:
    if source.startswith("csv"):
        content: bytes | str = csv_text(["x"], [[v] for v in data])
        name = "in.csv"
    else:
        content = npy_bytes(np.array(data))
        name = "in.npy"
    if source.endswith("stdin"):
        return ok(invoke(op, *options, input=content))
    return ok(invoke(op, str(write_file(name, content)), *options))


@pytest.mark.parametrize("source", SOURCES)
@pytest.mark.parametrize(("op", "data", "expected"), ONE_D)
def test_one_column_reference_examples(invoke, write_file, source, op, data, expected):
    result = run_one_column(invoke, write_file, source, op, data)
    integers = all(isinstance(v, int) for v in data) and op != "logcumsumexp"
    if source.startswith("npy"):
        same(load_npy(result.stdout_bytes), expected, "int64" if integers else "float64")
        return
    header, rows = csv_rows(result.stdout)
    assert header == ["x"]
    cells = [row[0] for row in rows]
    if integers:
        assert cells == [str(v) for v in expected]  # an integer column prints no ".0"
    else:
        assert_float_cells(cells, expected)


@pytest.mark.parametrize("source", SOURCES)
def test_logcumsumexp_of_zeros_is_log_2_and_log_3(invoke, write_file, source):
    result = run_one_column(invoke, write_file, source, "logcumsumexp", [0.0, 0.0, 0.0])
    if source.startswith("npy"):
        values = load_npy(result.stdout_bytes).tolist()
    else:
        values = float_cells([row[0] for row in csv_rows(result.stdout)[1]])
    assert values[0] == 0.0
    assert values[1] == math.log(2)
    assert math.isclose(values[2], math.log(3), rel_tol=3e-16)


def test_empty_npy_gives_an_empty_array_of_the_output_dtype(invoke, write_file):
    path = write_file("empty.npy", npy_bytes(np.array([], dtype=np.int32)))
    same(load_npy(ok(invoke("cumsum", str(path))).stdout_bytes), [], "int64")
    same(load_npy(ok(invoke("cummax", str(path))).stdout_bytes), [], "int32")
    same(load_npy(ok(invoke("logcumsumexp", str(path))).stdout_bytes), [], "float64")
    empty_float = npy_bytes(np.array([], dtype=np.float32))
    same(load_npy(ok(invoke("cumprod", input=empty_float)).stdout_bytes), [], "float32")


@pytest.mark.parametrize("via_stdin", [False, True], ids=["file", "stdin"])
def test_empty_csv_gives_just_the_header(invoke, write_file, via_stdin):
    if via_stdin:
        result = ok(invoke("cumprod", input="value\n"))
    else:
        result = ok(invoke("cumprod", str(write_file("empty.csv", "value\n"))))
    assert result.stdout == "value\n"


def test_empty_int32_parquet_column_becomes_empty_int64(invoke, tmp_path):
    source = tmp_path / "empty.parquet"
    pq.write_table(pa.table({"x": pa.array([], pa.int32())}), source)
    out = tmp_path / "out.parquet"
    ok(invoke("cumsum", str(source), "-o", str(out)))
    table = pq.read_table(out)
    assert table.schema.field("x").type == pa.int64()
    assert table.num_rows == 0


# Two-dimensional reference examples and the axis aliases ---------------------------------

CUMPROD_MATRIX = [[10, 20, 30], [4, 5, 6]]
CUMSUM_MATRIX = [[5, 6, 7], [1, 2, 3]]
TWO_D = [
    pytest.param("cumprod", CUMPROD_MATRIX, "rows", [[10, 20, 30], [40, 100, 180]],
                 id="cumprod-rows"),
    pytest.param("cumprod", CUMPROD_MATRIX, "columns", [[10, 200, 6000], [4, 20, 120]],
                 id="cumprod-columns"),
    pytest.param("cumsum", CUMSUM_MATRIX, "columns", [[5, 11, 18], [1, 3, 6]],
                 id="cumsum-columns"),
    pytest.param("cumsum", CUMSUM_MATRIX, "rows", [[5, 6, 7], [6, 8, 10]], id="cumsum-rows"),
]
ALIASES = {"rows": [("--axis", "rows"), ("--axis", "index"), ("--axis", "0"), ("-a", "0"),
                    ("--dim", "0")],
           "columns": [("--axis", "columns"), ("--axis", "1"), ("--axis", "-1"),
                       ("--dim", "1"), ("-a", "columns")]}


@pytest.mark.parametrize("alias", range(5), ids=lambda i: f"alias{i}")
@pytest.mark.parametrize(("op", "matrix", "axis", "expected"), TWO_D)
def test_matrix_examples_from_csv_with_every_axis_spelling(invoke, write_file, op, matrix,
                                                           axis, expected, alias):
    option, value = ALIASES[axis][alias]
    path = write_file("m.csv", csv_text(["a", "b", "c"], matrix))
    header, rows = csv_rows(ok(invoke(op, str(path), option, value)).stdout)
    assert header == ["a", "b", "c"]
    assert rows == [[str(v) for v in row] for row in expected]


@pytest.mark.parametrize("alias", range(5), ids=lambda i: f"alias{i}")
@pytest.mark.parametrize(("op", "matrix", "axis", "expected"), TWO_D)
def test_matrix_examples_from_npy_with_every_axis_spelling(invoke, write_file, op, matrix,
                                                           axis, expected, alias):
    option, value = ALIASES[axis][alias]
    data = npy_bytes(np.array(matrix, dtype=np.int64))
    result = ok(invoke(op, "-", option, value, input=data))
    same(load_npy(result.stdout_bytes), expected, "int64")


def test_default_axis_is_rows(invoke, write_file):
    path = write_file("m.csv", csv_text(["a", "b", "c"], CUMSUM_MATRIX))
    assert csv_rows(ok(invoke("cumsum", str(path))).stdout)[1] == [["5", "6", "7"],
                                                                   ["6", "8", "10"]]


def test_matrix_example_through_parquet(invoke, tmp_path):
    source = tmp_path / "m.parquet"
    pq.write_table(pa.table({"a": [10, 4], "b": [20, 5], "c": [30, 6]}), source)
    out = tmp_path / "out.parquet"
    ok(invoke("cumprod", str(source), "--axis", "columns", "-o", str(out)))
    assert pq.read_table(out).to_pydict() == {"a": [10, 4], "b": [200, 20], "c": [6000, 120]}


@pytest.mark.parametrize("axis", ["2", "-3"])
def test_npy_axis_out_of_range_is_a_usage_error_naming_the_range(invoke, write_file, axis):
    path = write_file("m.npy", npy_bytes(np.zeros((2, 3))))
    result = invoke("cumsum", str(path), "--axis", axis)
    assert result.exit_code == 2
    assert result.stderr.startswith("Error: ")
    assert "from -2 to 1" in result.stderr
    assert len(result.stderr.splitlines()) == 1


def test_an_axis_that_is_no_word_and_no_integer_is_refused_while_parsing(invoke, write_file):
    """Before the file is read, so the array's range is not known yet."""
    path = write_file("m.npy", npy_bytes(np.zeros((2, 3))))
    result = invoke("cumsum", str(path), "--axis", "sideways")
    assert result.exit_code == 2
    assert result.stderr == ("Error: --axis 'sideways' is not an axis; use rows (index, 0), "
                             "columns (1), or an integer axis of a .npy array\n")


def test_table_axis_out_of_range_is_a_usage_error(invoke, write_file):
    path = write_file("m.csv", csv_text(["a", "b"], [[1, 2]]))
    result = invoke("cumsum", str(path), "--axis", "2")
    assert result.exit_code == 2
    assert result.stderr.startswith("Error: ") and "'2'" in result.stderr


def test_npy_3d_any_axis(invoke, write_file):
    data = np.arange(24, dtype=np.int16).reshape(2, 3, 4) - 10
    path = write_file("cube.npy", npy_bytes(data))
    for axis in range(-3, 3):
        got = load_npy(ok(invoke("cumsum", str(path), "--axis", str(axis))).stdout_bytes)
        (expected,) = along_axis(data, axis,
                                 lambda line: (list(itertools.accumulate(line)),), np.int64)
        same(got, expected, "int64")


# --dtype examples -----------------------------------------------------------------------


@pytest.mark.parametrize("source", ["csv-file", "csv-stdin", "npy-file"])
def test_cumsum_of_halves_as_int32(invoke, write_file, tmp_path, source):
    out = tmp_path / "out.npy"
    run_one_column(invoke, write_file, source, "cumsum", [1.5, 2.5, 3.5],
                   "--dtype", "int32", "-o", str(out))
    got = np.load(out)
    if source.startswith("csv"):  # a table becomes a rows x columns array
        got = got[:, 0]
    same(got, [1, 3, 6], "int32")


def test_cumsum_of_halves_as_int32_keeps_int32_in_parquet_and_csv(invoke, write_file,
                                                                   tmp_path):
    path = write_file("h.csv", csv_text(["amount"], [[1.5], [2.5], [3.5]]))
    out = tmp_path / "out.parquet"
    ok(invoke("cumsum", str(path), "--dtype", "int32", "-o", str(out)))
    table = pq.read_table(out)
    assert table.schema.field("amount").type == pa.int32()
    assert table.column("amount").to_pylist() == [1, 3, 6]
    assert ok(invoke("cumsum", str(path), "-t", "torch.int32")).stdout == "amount\n1\n3\n6\n"


@pytest.mark.parametrize("via", ["npy-file", "npy-stdin", "parquet"])
def test_cumprod_of_int32_as_float32(invoke, write_file, tmp_path, via):
    data = np.array([1, 2, 3], dtype=np.int32)
    if via == "parquet":
        source = tmp_path / "i.parquet"
        pq.write_table(pa.table({"x": pa.array(data)}), source)
        out = tmp_path / "out.parquet"
        ok(invoke("cumprod", str(source), "--dtype", "float32", "-o", str(out)))
        table = pq.read_table(out)
        assert table.schema.field("x").type == pa.float32()
        assert table.column("x").to_pylist() == [1.0, 2.0, 6.0]
        return
    if via == "npy-stdin":
        result = ok(invoke("cumprod", "--dtype", "torch.float", input=npy_bytes(data)))
    else:
        result = ok(invoke("cumprod", str(write_file("i.npy", npy_bytes(data))), "--dtype",
                           "float32"))
    same(load_npy(result.stdout_bytes), [1.0, 2.0, 6.0], "float32")


MATRIX_3X3 = [[1, 2, 3], [4, 5, 6], [7, 8, 9]]
MATRIX_3X3_CUMPROD = [[1, 2, 3], [4, 10, 18], [28, 80, 162]]


def test_cumprod_of_float32_matrix_from_npy(invoke, write_file):
    path = write_file("m.npy", npy_bytes(np.array(MATRIX_3X3, dtype=np.float32)))
    for axis in ("rows", "0"):
        result = ok(invoke("cumprod", str(path), "--axis", axis))
        same(load_npy(result.stdout_bytes), MATRIX_3X3_CUMPROD, "float32")


def test_cumprod_of_float32_matrix_from_csv(invoke, write_file, tmp_path):
    path = write_file("m.csv", csv_text(["a", "b", "c"], MATRIX_3X3))
    out = tmp_path / "out.npy"
    ok(invoke("cumprod", str(path), "--dtype", "float32", "-o", str(out)))
    same(np.load(out), MATRIX_3X3_CUMPROD, "float32")
    text = ok(invoke("cumprod", str(path), "--dtype", "float32")).stdout
    rows = csv_rows(text)[1]
    assert [[float(c) for c in row] for row in rows] == MATRIX_3X3_CUMPROD


@pytest.mark.parametrize("source", ["npy-file", "npy-stdin", "csv-stdin"])
def test_logcumsumexp_of_large_float32_is_finite(invoke, write_file, source):
    data = np.array([88, 89, 90], dtype=np.float32)
    if source == "csv-stdin":
        text = ok(invoke("logcumsumexp", "--dtype", "float32",
                         input="x\n88\n89\n90\n")).stdout
        got = np.array([np.float32(c) for c in text.splitlines()[1:]], dtype=np.float32)
    elif source == "npy-stdin":
        got = load_npy(ok(invoke("logcumsumexp", input=npy_bytes(data))).stdout_bytes)
    else:
        path = write_file("big.npy", npy_bytes(data))
        got = load_npy(ok(invoke("logcumsumexp", str(path))).stdout_bytes)
    assert got.dtype == np.float32
    assert np.isfinite(got).all()
    expected = [88.0, 89 + math.log1p(math.exp(-1)),
                90 + math.log(1 + math.exp(-1) + math.exp(-2))]
    for g, e in zip(got.tolist(), expected, strict=True):
        assert math.isclose(g, e, rel_tol=1e-7)


def test_int8_overflow_with_dtype_is_an_error_and_wraps_on_request(invoke, write_file):
    path = write_file("i8.npy", npy_bytes(np.array([100, 100, 100], dtype=np.int8)))
    result = invoke("cumsum", str(path), "--dtype", "int8")
    assert result.exit_code == 1
    assert result.stderr.startswith("Error: ") and "index (1,)" in result.stderr
    wrapped = ok(invoke("cumsum", str(path), "--dtype", "int8", "--overflow", "wrap"))
    same(load_npy(wrapped.stdout_bytes), [100, -56, 44], "int8")


@pytest.mark.parametrize("name", ["bool", "uint16", "uint32", "uint64", "bfloat16"])
def test_refused_dtype_is_a_usage_error_listing_accepted_names(invoke, name):
    result = invoke("cumsum", "--dtype", name, input="x\n1\n")
    assert result.exit_code == 2
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"Error: --dtype '{name}'")
    for accepted in ("int8", "int16", "int32", "int64", "uint8", "float16", "float32",
                     "float64", "complex64", "complex128", "long", "double", "half"):
        assert accepted in lines[0]
    assert result.stdout == ""


# Complex .npy --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("op", "expected"),
    [
        pytest.param("cumsum", [1 + 2j, 4 + 1j, 4.5 + 1.5j], id="cumsum"),
        pytest.param("cumprod", [1 + 2j, 5 + 5j, 5j], id="cumprod"),
    ],
)
@pytest.mark.parametrize("dtype", ["complex64", "complex128"])
def test_complex_npy_sum_and_product(invoke, write_file, op, expected, dtype):
    path = write_file("c.npy", npy_bytes(np.array([1 + 2j, 3 - 1j, 0.5 + 0.5j], dtype=dtype)))
    same(load_npy(ok(invoke(op, str(path))).stdout_bytes), expected, dtype)


@pytest.mark.parametrize("dtype", ["complex64", "complex128"])
def test_complex_npy_logcumsumexp(invoke, write_file, dtype):
    import cmath

    data = [1 + 2j, 3 - 1j, 0.5 + 0.5j]
    path = write_file("c.npy", npy_bytes(np.array(data, dtype=dtype)))
    got = load_npy(ok(invoke("logcumsumexp", str(path))).stdout_bytes)
    assert got.dtype == np.dtype(dtype)
    running = 0j
    for value, z in zip(got.tolist(), data, strict=True):
        running += cmath.exp(z)
        assert cmath.isclose(cmath.exp(value), running, rel_tol=1e-5)


@pytest.mark.parametrize("op", ["cummax", "cummin"])
def test_complex_npy_cummax_cummin_are_refused(invoke, write_file, op):
    path = write_file("c.npy", npy_bytes(np.array([1 + 2j], dtype=np.complex64)))
    result = invoke(op, str(path))
    assert result.exit_code == 1
    assert result.stderr.startswith("Error: ") and "not defined for complex" in result.stderr
    assert "c.npy" in result.stderr


def test_complex_cannot_be_written_as_csv(invoke, write_file):
    path = write_file("c.npy", npy_bytes(np.array([1 + 2j], dtype=np.complex64)))
    result = invoke("cumsum", str(path), "--to", "csv")
    assert result.exit_code == 2
    assert result.stderr.startswith("Error: ") and "write .npy" in result.stderr


# --indices --------------------------------------------------------------------------------


@pytest.mark.parametrize("via_stdin", [False, True], ids=["file", "stdin"])
@pytest.mark.parametrize(
    ("op", "data", "values", "indices"),
    [
        pytest.param("cummax", [1, 3, 3, 2, 3], ["1", "3", "3", "3", "3"], [0, 1, 2, 2, 4],
                     id="cummax-ties"),
        pytest.param("cummax", [1.0, NAN, 3.0, NAN, 2.0], [1.0, NAN, NAN, NAN, NAN],
                     [0, 1, 1, 3, 3], id="cummax-nan"),
        pytest.param("cummin", [1.0, NAN, 3.0, NAN, 2.0], [1.0, NAN, NAN, NAN, NAN],
                     [0, 1, 1, 3, 3], id="cummin-nan"),
        pytest.param("cummin", [4, 2, 2, 5, 1], ["4", "2", "2", "2", "1"], [0, 1, 2, 2, 4],
                     id="cummin-ties"),
    ],
)
def test_indices_column_follows_each_result_column(invoke, write_file, op, data, values,
                                                   indices, via_stdin):
    rows = [[f"day{i}", v, i * 10] for i, v in enumerate(data)]
    content = csv_text(["label", "score", "other"], rows)
    if via_stdin:
        result = ok(invoke(op, "--indices", "-c", "score", input=content))
    else:
        result = ok(invoke(op, str(write_file("s.csv", content)), "--indices", "-c", "score"))
    header, out = csv_rows(result.stdout)
    assert header == ["label", "score", "score_index", "other"]
    assert [row[0] for row in out] == [f"day{i}" for i in range(len(data))]
    assert [row[2] for row in out] == [str(i) for i in indices]
    assert [row[3] for row in out] == [str(i * 10) for i in range(len(data))]
    if isinstance(values[0], str):
        assert [row[1] for row in out] == values
    else:
        assert_float_cells([row[1] for row in out], values)


def test_indices_for_every_scanned_column_and_parquet_int64(invoke, write_file, tmp_path):
    path = write_file("s.csv", csv_text(["a", "b"], [[1, 9], [5, 2], [5, 7]]))
    out = tmp_path / "out.parquet"
    ok(invoke("cummin", str(path), "--indices", "-o", str(out)))
    table = pq.read_table(out)
    assert table.schema.names == ["a", "a_index", "b", "b_index"]
    assert table.schema.field("a_index").type == pa.int64()
    assert table.schema.field("b_index").type == pa.int64()
    assert table.to_pydict() == {"a": [1, 1, 1], "a_index": [0, 0, 0],
                                 "b": [9, 2, 2], "b_index": [0, 1, 1]}


@pytest.mark.parametrize("to_file", [False, True], ids=["stdout", "file"])
def test_indices_of_npy_input_give_npz(invoke, write_file, tmp_path, to_file):
    data = np.array([[1.0, NAN, 3.0, 3.0], [4.0, 5.0, 0.5, 5.0]])
    path = write_file("a.npy", npy_bytes(data))
    args = ["cummax", str(path), "--indices", "--axis", "1"]
    if to_file:
        out = tmp_path / "out.npz"
        ok(invoke(*args, "-o", str(out)))
        archive = np.load(out)
    else:
        archive = np.load(io.BytesIO(ok(invoke(*args)).stdout_bytes))
    assert sorted(archive.files) == ["indices", "values"]
    same(archive["values"], [[1.0, NAN, NAN, NAN], [4.0, 5.0, 5.0, 5.0]], "float64")
    same(archive["indices"], [[0, 1, 1, 1], [0, 1, 1, 3]], "int64")


def test_indices_of_npy_along_rows(invoke, write_file):
    data = np.array([[3, 1], [3, 4], [1, 4]], dtype=np.int16)
    archive = np.load(io.BytesIO(ok(invoke("cummax", "--indices",
                                           input=npy_bytes(data))).stdout_bytes))
    same(archive["values"], [[3, 1], [3, 4], [3, 4]], "int16")
    same(archive["indices"], [[0, 0], [1, 1], [1, 2]], "int64")


def test_indices_on_the_columns_axis_of_a_table(invoke, write_file):
    path = write_file("s.csv", csv_text(["a", "b", "c"], [[1, 3, 3], [9, NAN, 2]]))
    header, rows = csv_rows(ok(invoke("cummax", str(path), "--indices", "--axis",
                                      "columns")).stdout)
    assert header == ["a", "a_index", "b", "b_index", "c", "c_index"]
    # int, float and int columns scan as their common dtype, float64
    assert_float_cells(rows[0][0::2], [1.0, 3.0, 3.0])
    assert_float_cells(rows[1][0::2], [9.0, NAN, NAN])
    assert [row[1::2] for row in rows] == [["0", "1", "2"], ["0", "1", "1"]]
    assert rows[1][2] == "NaN" and rows[1][4] == "NaN"


@pytest.mark.parametrize("op", ["cumsum", "cumprod", "logcumsumexp"])
def test_indices_is_only_for_cummax_and_cummin(invoke, op):
    result = invoke(op, "--indices", input="x\n1\n")
    assert result.exit_code == 2
    assert "--indices" in result.stderr


# Missing cells and --skipna -----------------------------------------------------------------


def test_missing_cells_are_skipped_and_stay_missing(invoke, write_file):
    content = "a,b\n1,1.5\n,2.5\n3,\n4,0.25\n"
    for result in (ok(invoke("cumsum", str(write_file("m.csv", content)))),
                   ok(invoke("cumsum", input=content))):
        assert result.stdout == "a,b\n1,1.5\n,4.0\n4,\n8,4.25\n"


@pytest.mark.parametrize("op", ["cumsum", "cumprod", "cummax", "cummin"])
def test_integer_column_with_missing_cells_stays_integer(invoke, write_file, tmp_path, op):
    data = [3, None, 2, None, 5, 1]
    content = "k,n\n" + "".join(f"{i},{'' if v is None else v}\n" for i, v in enumerate(data))
    running: int | None = None
    expected: list[int | None] = []
    for v in data:
        if v is not None:
            running = v if running is None else {
                "cumsum": running + v, "cumprod": running * v,
                "cummax": max(running, v), "cummin": min(running, v)}[op]
        expected.append(None if v is None else running)
    path = write_file("m.csv", content)
    _, rows = csv_rows(ok(invoke(op, str(path), "-c", "n")).stdout)
    assert [row[1] for row in rows] == ["" if e is None else str(e) for e in expected]
    out = tmp_path / "out.parquet"
    ok(invoke(op, str(path), "-c", "n", "-o", str(out)))
    table = pq.read_table(out)
    assert table.schema.field("n").type == pa.int64()
    assert table.column("n").to_pylist() == expected


def test_parquet_nulls_are_skipped_and_kept(invoke, tmp_path):
    source = tmp_path / "n.parquet"
    pq.write_table(pa.table({"x": pa.array([1, None, 3, None, 4], pa.int32()),
                             "f": pa.array([0.5, None, 2.0, NAN, 1.0])}), source)
    out = tmp_path / "out.parquet"
    ok(invoke("cumsum", str(source), "-o", str(out)))
    table = pq.read_table(out)
    assert table.schema.field("x").type == pa.int64()
    assert table.column("x").to_pylist() == [1, None, 4, None, 8]
    f = table.column("f").to_pylist()
    assert f[:3] == [0.5, None, 2.5] and math.isnan(f[3]) and math.isnan(f[4])
    ok(invoke("cumsum", str(source), "-o", str(out), "--skipna"))
    f = pq.read_table(out).column("f").to_pylist()
    assert f[:3] == [0.5, None, 2.5] and math.isnan(f[3]) and f[4] == 3.5


def test_missing_cells_get_no_index(invoke, write_file):
    content = "a,b\n2,1\n,2\n5,3\n"
    header, rows = csv_rows(ok(invoke("cummax", str(write_file("m.csv", content)),
                                      "--indices", "-c", "a")).stdout)
    assert header == ["a", "a_index", "b"]
    assert rows == [["2", "0", "1"], ["", "", "2"], ["5", "2", "3"]]


@pytest.mark.parametrize("via_stdin", [False, True], ids=["file", "stdin"])
@pytest.mark.parametrize(
    ("op", "expected_plain", "expected_skipna"),
    [
        pytest.param("cumsum", [12.0, NAN, NAN, NAN], [12.0, NAN, 22.0, 56.0], id="cumsum"),
        pytest.param("cumprod", [12.0, NAN, NAN, NAN], [12.0, NAN, 120.0, 4080.0],
                     id="cumprod"),
        pytest.param("cummax", [12.0, NAN, NAN, NAN], [12.0, NAN, 12.0, 34.0], id="cummax"),
        pytest.param("cummin", [12.0, NAN, NAN, NAN], [12.0, NAN, 10.0, 10.0], id="cummin"),
    ],
)
def test_skipna_treats_nan_like_a_missing_cell(invoke, write_file, op, expected_plain,
                                               expected_skipna, via_stdin):
    content = "reading\n12\nNaN\n10\n34\n"

    def run(*options: str) -> list[str]:
        if via_stdin:
            return [row[0] for row in csv_rows(ok(invoke(op, *options, input=content)).stdout)[1]]
        path = write_file("r.csv", content)
        return [row[0] for row in csv_rows(ok(invoke(op, str(path), *options)).stdout)[1]]

    assert_float_cells(run(), expected_plain)
    assert_float_cells(run("--skipna"), expected_skipna)


def test_skipna_with_indices_on_npy(invoke, write_file):
    path = write_file("r.npy", npy_bytes(np.array([12.0, NAN, 10.0, 34.0])))
    archive = np.load(io.BytesIO(ok(invoke("cummin", str(path), "--skipna",
                                           "--indices")).stdout_bytes))
    same(archive["values"], [12.0, NAN, 10.0, 10.0], "float64")
    same(archive["indices"], [0, -1, 2, 2], "int64")


# Float text round-trips ---------------------------------------------------------------------


def test_float64_output_is_the_shortest_round_trip_text(invoke):
    result = ok(invoke("cumsum", input="x\n0.1\n0.2\n0.3\n"))
    assert result.stdout.splitlines() == ["x", "0.1", "0.30000000000000004",
                                          repr(0.1 + 0.2 + 0.3)]


def significant_digits(text: str) -> str:
    mantissa = text.lower().split("e")[0].lstrip("-")
    return mantissa.replace(".", "").strip("0")


def test_float_output_reads_back_to_the_same_float64(invoke, write_file):
    rng = np.random.default_rng(2)
    data = (rng.standard_normal(50) * 10.0 ** rng.integers(-8, 8, 50)).tolist()
    path = write_file("r.csv", "x\n" + "".join(f"{v!r}\n" for v in data))
    cells = ok(invoke("cumsum", str(path))).stdout.splitlines()[1:]
    running = 0.0
    for cell, v in zip(cells, data, strict=True):
        running += v
        assert float(cell) == running
        assert significant_digits(cell) == significant_digits(repr(running))


def test_float32_output_is_the_shortest_float32_text(invoke):
    result = ok(invoke("cumsum", "--dtype", "float32", input="x\n0.1\n0.2\n0.125\n"))
    cells = result.stdout.splitlines()[1:]
    # float32 sums, accumulated in float64 and rounded once each:
    want = [np.float32(0.1),
            np.float32(float(np.float32(0.1)) + float(np.float32(0.2))),
            np.float32(float(np.float32(0.1)) + float(np.float32(0.2)) + 0.125)]
    assert [np.float32(c) for c in cells] == want
    assert cells[:2] == ["0.1", "0.3"]
    for cell, value in zip(cells, want, strict=True):
        assert significant_digits(cell) == significant_digits(str(value))  # shortest


# Integer overflow through the CLI -------------------------------------------------------------

OVERFLOW_CSV = "id,bytes\na,4611686018427387904\nb,4611686018427387904\nc,1\n"


@pytest.mark.parametrize("via_stdin", [False, True], ids=["file", "stdin"])
def test_integer_overflow_names_column_and_row(invoke, write_file, via_stdin):
    if via_stdin:
        result = invoke("cumsum", input=OVERFLOW_CSV)
    else:
        result = invoke("cumsum", str(write_file("o.csv", OVERFLOW_CSV)))
    assert result.exit_code == 1
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: ")
    assert "'bytes'" in lines[0] and "row 2" in lines[0]
    assert "--overflow wrap" in lines[0]


def test_integer_overflow_writes_no_file_and_keeps_an_existing_one(invoke, write_file,
                                                                   tmp_path):
    path = write_file("o.csv", OVERFLOW_CSV)
    fresh = tmp_path / "fresh.csv"
    assert invoke("cumsum", str(path), "-o", str(fresh), "--batch-rows", "1").exit_code == 1
    assert not fresh.exists()
    existing = write_file("existing.parquet", b"keep me")
    assert invoke("cumsum", str(path), "-o", str(existing)).exit_code == 1
    assert existing.read_bytes() == b"keep me"


def test_overflow_wrap_gives_twos_complement(invoke, write_file):
    result = ok(invoke("cumsum", str(write_file("o.csv", OVERFLOW_CSV)), "--overflow", "wrap"))
    assert csv_rows(result.stdout)[1] == [["a", str(2**62)], ["b", str(INT64_MIN)],
                                          ["c", str(INT64_MIN + 1)]]


def test_cumprod_overflow_names_column_and_row(invoke):
    content = "g\n4294967296\n2147483648\n2\n"
    result = invoke("cumprod", input=content)
    assert result.exit_code == 1
    assert "'g'" in result.stderr and "row 2" in result.stderr
    wrapped = ok(invoke("cumprod", "--overflow", "wrap", input=content))
    assert wrapped.stdout.splitlines() == ["g", "4294967296", str(INT64_MIN), "0"]


def test_overflow_on_the_columns_axis_names_row_and_column(invoke):
    content = "x,y,z\n1,2,3\n4,9223372036854775807,0\n"
    result = invoke("cumsum", "--axis", "columns", input=content)
    assert result.exit_code == 1
    assert "row 2" in result.stderr and "'y'" in result.stderr


def test_narrow_dtype_overflow_in_csv(invoke):
    result = invoke("cumsum", "--dtype", "int8", input="v\n100\n100\n100\n")
    assert result.exit_code == 1
    assert "'v'" in result.stderr and "row 2" in result.stderr
    wrapped = ok(invoke("cumsum", "--dtype", "int8", "--overflow", "wrap",
                        input="v\n100\n100\n100\n"))
    assert wrapped.stdout == "v\n100\n-56\n44\n"


def test_uint64_npy_above_int64_is_an_overflow(invoke, write_file):
    path = write_file("u.npy", npy_bytes(np.array([1, 2**63, 3], dtype=np.uint64)))
    result = invoke("cumsum", str(path))
    assert result.exit_code == 1
    assert "index (1,)" in result.stderr
    wrapped = ok(invoke("cumsum", str(path), "--overflow", "wrap"))
    same(load_npy(wrapped.stdout_bytes), [1, INT64_MIN + 1, INT64_MIN + 4], "int64")
    cummax = ok(invoke("cummax", str(path)))
    same(load_npy(cummax.stdout_bytes), [1, 2**63, 2**63], "uint64")


def test_float32_random_output_is_shortest_text(invoke, write_file):
    rng = np.random.default_rng(4)
    data = (rng.standard_normal(40) * 10.0 ** rng.integers(-6, 6, 40)).astype(np.float32)
    path = write_file("f.npy", npy_bytes(data))
    cells = ok(invoke("cumsum", str(path), "--to", "csv")).stdout.splitlines()[1:]
    running = 0.0
    for cell, v in zip(cells, data.tolist(), strict=True):
        running += v
        value = np.float32(running)
        assert np.float32(cell) == value
        assert significant_digits(cell) == significant_digits(str(value))


@pytest.mark.parametrize(
    ("data", "dtype", "expected"),
    [
        pytest.param([3e38, 3e38, -3e38], "float32", [3e38, np.inf, 3e38], id="float32"),
        pytest.param([2048, 1, 1, 1, 1], "float16", [2048, 2048, 2050, 2052, 2052],
                     id="float16"),
    ],
)
def test_wide_accumulation_through_npy(invoke, data, dtype, expected):
    result = ok(invoke("cumsum", input=npy_bytes(np.array(data, dtype=dtype))))
    same(load_npy(result.stdout_bytes), expected, dtype)


@pytest.mark.parametrize("via_stdin", [False, True], ids=["file", "stdin"])
@pytest.mark.parametrize(
    ("word", "expected"),
    [
        pytest.param("NaN", [12.0, NAN, NAN, NAN], id="NaN"),
        pytest.param("nan", [12.0, NAN, NAN, NAN], id="nan-numpy"),
        pytest.param("NAN", [12.0, NAN, NAN, NAN], id="NAN"),
        pytest.param("inf", [12.0, math.inf, math.inf, math.inf], id="inf"),
        pytest.param("Inf", [12.0, math.inf, math.inf, math.inf], id="Inf-R"),
        pytest.param("-Infinity", [12.0, -math.inf, -math.inf, -math.inf], id="-Infinity"),
    ],
)
def test_nan_and_infinity_spellings_make_a_float_column(invoke, write_file, word, expected,
                                                        via_stdin):
    content = f"reading,note\n12,a\n{word},b\n10,c\n34,d\n"
    if via_stdin:
        result = ok(invoke("cumprod", input=content))
    else:
        result = ok(invoke("cumprod", str(write_file("r.csv", content))))
    header, rows = csv_rows(result.stdout)
    assert header == ["reading", "note"]
    assert_float_cells([row[0] for row in rows], expected)
    assert [row[1] for row in rows] == ["a", "b", "c", "d"]


@pytest.mark.parametrize(
    ("a", "b", "out_type", "expected"),
    [
        pytest.param(np.array([1, 2], np.int32), np.array([2.5, 0.25], np.float32),
                     pa.float64(), [[1.0, 3.5], [2.0, 2.25]], id="int32-float32-is-float64"),
        pytest.param(np.array([1, 2], np.int8), np.array([3, 0], np.int16),
                     pa.int64(), [[1, 4], [2, 2]], id="int8-int16-sums-as-int64"),
        pytest.param(np.array([1.5, 2.0], np.float16), np.array([2.5, 0.25], np.float32),
                     pa.float32(), [[1.5, 4.0], [2.0, 2.25]], id="float16-float32-is-float32"),
    ],
)
def test_columns_axis_scans_in_the_common_dtype(invoke, tmp_path, a, b, out_type, expected):
    """numpy's result_type of the selected columns, then the output dtype table."""
    source = tmp_path / "t.parquet"
    pq.write_table(pa.table({"a": pa.array(a), "b": pa.array(b)}), source)
    out = tmp_path / "out.parquet"
    ok(invoke("cumsum", str(source), "--axis", "columns", "-o", str(out)))
    table = pq.read_table(out)
    assert [f.type for f in table.schema] == [out_type, out_type]
    assert [[table.column(c)[r].as_py() for c in ("a", "b")] for r in range(2)] == expected


@pytest.mark.parametrize(
    ("options", "expected"),
    [
        pytest.param(("--decimal",), "1.50,2\n3.75,5\n", id="decimal"),
        pytest.param(("--dtype", "float32"), "1.5,2.0\n3.75,5.0\n", id="float32"),
        pytest.param(("--decimal", "--dtype", "float64"), "1.5,2.0\n3.75,5.0\n",
                     id="decimal-float64"),
    ],
)
def test_no_header_csv_with_decimal_or_float_cast(invoke, options, expected):
    """--no-header names columns 0, 1, ...; the reader's per-column types follow them
    (this crashed with a traceback for --decimal)."""
    result = ok(invoke("cumsum", "--no-header", *options, input="1.50,2\n2.25,3\n"))
    assert result.stdout == expected
