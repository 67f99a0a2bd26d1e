"""Every format in and out, through the command line.

Inputs are written here with pyarrow and numpy, outputs are read back with pyarrow, the
csv and gzip modules and numpy (cumtool itself writes CSV with polars), and every value
and dtype is compared with numpy's own scans of the same data (`ref_scan`), never with
cumtool's output.
"""

from __future__ import annotations

import csv
import gzip
import io
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.parquet as pq
import pytest
from click.testing import Result
from helpers import along_axis, npy_bytes

Invoke = Callable[..., Result]

OPS = ("cumsum", "cumprod", "cummax", "cummin", "logcumsumexp")
INPUTS = ("csv", "tsv", "csv.gz", "tsv.gz", "parquet", "npy")
OUTPUTS = ("csv", "tsv", "csv.gz", "parquet", "npy", "table")
I64, F64 = np.dtype(np.int64), np.dtype(np.float64)
UFUNCS = {"cumsum": np.add, "cumprod": np.multiply, "cummax": np.maximum,
          "cummin": np.minimum, "logcumsumexp": np.logaddexp}

# The table every matrix case scans: an int64 column and a float64 column.
COL_I = np.array([3, -1, 4, 1, -5, 9, 2], dtype=np.int64)
COL_F = np.array([0.5, -1.25, 2.0, 0.75, -0.5, 1.5, 3.25])
ARRAY = np.column_stack([COL_I, COL_F])  # what the .npy input holds (float64)


# Reference -----------------------------------------------------------------------------


def out_dtype(op: str, dtype: np.dtype) -> np.dtype:
    """SEMANTICS.md's output dtype table (no --dtype)."""
    if dtype.kind in "biu":
        return {"cumsum": I64, "cumprod": I64, "logcumsumexp": F64}.get(op, dtype)
    return dtype


def ref_scan(op: str, x: np.ndarray, axis: int = 0) -> np.ndarray:
    """numpy's accumulate in the output dtype (float64 for logcumsumexp of integers)."""
    out = out_dtype(op, x.dtype)
    return UFUNCS[op].accumulate(x.astype(out), axis=axis).astype(out)


def expected(op: str, axis: str, fmt: str) -> dict[str, np.ndarray]:
    """Column name -> expected result column for the matrix data in input format `fmt`."""
    if fmt == "npy":
        result = ref_scan(op, ARRAY, 0 if axis == "rows" else 1)
        return {"0": result[:, 0], "1": result[:, 1]}
    if axis == "rows":
        return {"i": ref_scan(op, COL_I), "f": ref_scan(op, COL_F)}
    common = np.column_stack([COL_I, COL_F]).astype(np.result_type(COL_I, COL_F))
    result = ref_scan(op, common, 1)
    return {"i": result[:, 0], "f": result[:, 1]}


def assert_same(got: np.ndarray, want: np.ndarray, op: str) -> None:
    assert got.dtype == want.dtype, (got.dtype, want.dtype)
    if op == "logcumsumexp":
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=0)
    else:
        np.testing.assert_array_equal(got, want)


# Writing inputs, reading outputs ----------------------------------------------------------


def delimited(columns: dict[str, np.ndarray], delimiter: str) -> bytes:
    names = list(columns)
    lines = [delimiter.join(names)]
    for row in zip(*(columns[n].tolist() for n in names), strict=True):
        lines.append(delimiter.join(repr(v) if isinstance(v, float) else str(v) for v in row))
    return ("\n".join(lines) + "\n").encode()


def input_bytes(fmt: str) -> bytes:
    columns = {"i": COL_I, "f": COL_F}
    if fmt in ("csv", "tsv", "csv.gz", "tsv.gz"):
        data = delimited(columns, "\t" if fmt.startswith("tsv") else ",")
        return gzip.compress(data) if fmt.endswith(".gz") else data
    buffer = io.BytesIO()
    if fmt == "parquet":
        pq.write_table(pa.table(columns), buffer)
    else:
        np.save(buffer, ARRAY)
    return buffer.getvalue()


def write_input(directory: Path, fmt: str, name: str = "input") -> Path:
    path = directory / f"{name}.{fmt}"
    path.write_bytes(input_bytes(fmt))
    return path


def read_delimited(data: bytes, delimiter: str) -> dict[str, np.ndarray]:
    table = pacsv.read_csv(io.BytesIO(data),
                           parse_options=pacsv.ParseOptions(delimiter=delimiter))
    return {name: table.column(name).to_numpy() for name in table.column_names}


def parse_pretty(text: str) -> tuple[list[str], list[str], list[list[str]]]:
    """Column names, dtype labels and cell texts of a plain-text rich table."""

    def cells(line: str) -> list[str]:
        return [cell.strip() for cell in line.strip()[1:-1].split(line.strip()[0])]

    header = [line for line in text.splitlines() if line.startswith("┃")]
    rows = [cells(line)[1:] for line in text.splitlines() if line.startswith("│")]
    assert len(header) == 2, text
    return cells(header[0])[1:], cells(header[1])[1:], rows  # after the row numbers


def read_output(fmt: str, data: bytes) -> dict[str, np.ndarray] | np.ndarray:
    """A table output as {name: column}, an .npy output as the array."""
    if fmt == "csv":
        return read_delimited(data, ",")
    if fmt == "tsv":
        return read_delimited(data, "\t")
    if fmt == "csv.gz":
        assert data[:2] == b"\x1f\x8b", "not gzip-compressed"
        return read_delimited(gzip.decompress(data), ",")
    if fmt == "parquet":
        table = pq.read_table(io.BytesIO(data))
        return {name: table.column(name).to_numpy() for name in table.column_names}
    assert fmt == "npy"
    return np.load(io.BytesIO(data), allow_pickle=False)


def check_output(fmt: str, data: bytes, want: dict[str, np.ndarray], op: str,
                 caption: str) -> None:
    if fmt == "table":
        text = data.decode("utf-8")
        assert "\x1b[" not in text
        names, dtypes, rows = parse_pretty(text)
        assert names == list(want)
        assert dtypes == [str(column.dtype) for column in want.values()]
        for j, column in enumerate(want.values()):
            got = np.array([float(row[j]) for row in rows])
            assert_same(got, column.astype(np.float64), op)
        assert caption in text
        return
    got = read_output(fmt, data)
    if fmt == "npy":
        assert isinstance(got, np.ndarray)
        common = np.result_type(*want.values())
        assert_same(got, np.column_stack(list(want.values())).astype(common), op)
        return
    assert isinstance(got, dict)
    assert list(got) == list(want)
    for name, column in want.items():
        assert_same(got[name], column, op)


# The matrix -----------------------------------------------------------------------------


MATRIX_IN = [
    pytest.param(op, axis, fmt, via, id=f"{op}-{axis}-{fmt}-{via}")
    for op in OPS for axis in ("rows", "columns") for fmt in INPUTS for via in ("file", "stdin")
]


@pytest.mark.parametrize(("op", "axis", "fmt", "via"), MATRIX_IN)
def test_every_op_axis_and_input_format(invoke: Invoke, tmp_path, op, axis, fmt, via):
    """Each op along each axis of each input format, from a file and from standard input
    (format sniffed from the bytes), written to Parquet, which keeps dtypes exactly."""
    path = write_input(tmp_path, fmt)
    out = tmp_path / "out.parquet"
    if via == "file":
        result = invoke(op, str(path), "--axis", axis, "-o", str(out))
    else:
        result = invoke(op, "-", "--axis", axis, "-o", str(out), input=path.read_bytes())
    assert result.exit_code == 0, result.stderr
    assert result.stderr == ""
    check_output("parquet", out.read_bytes(), expected(op, axis, fmt), op, "")


def _output_cases() -> list:
    cases = []
    number = 0
    for fmt in INPUTS:
        for output in OUTPUTS:
            for dest in ("file", "stdout"):
                if output == "csv.gz" and dest == "stdout":
                    continue  # --to has no compressed formats: gzip is chosen by -o's name
                op = OPS[number % len(OPS)]
                axis = ("rows", "columns")[number // len(OPS) % 2]
                number += 1
                cases.append(pytest.param(fmt, output, dest, op, axis,
                                          id=f"{fmt}-to-{output}-{dest}-{op}-{axis}"))
    return cases


@pytest.mark.parametrize(("fmt", "output", "dest", "op", "axis"), _output_cases())
def test_every_input_to_every_output(invoke: Invoke, tmp_path, fmt, output, dest, op, axis):
    path = write_input(tmp_path, fmt)
    if dest == "file":
        out = tmp_path / ("out.txt" if output == "table" else f"out.{output}")
        # --precision 17: the table shows each float whole, to be compared exactly.
        extra = ["--to", "table", "--precision", "17"] if output == "table" else []
        result = invoke(op, str(path), "-a", axis, "-o", str(out), *extra)
        assert result.exit_code == 0, result.stderr
        assert result.stdout_bytes == b""
        data = out.read_bytes()
    else:
        result = invoke(op, str(path), "-a", axis, "--to", output, "--precision", "17")
        assert result.exit_code == 0, result.stderr
        data = result.stdout_bytes
    assert result.stderr == ""
    caption = f"{op} along {axis if fmt != 'npy' else 'axis ' + str(int(axis == 'columns'))}"
    check_output(output, data, expected(op, axis, fmt), op, caption)


@pytest.mark.parametrize(
    ("fmt", "expected_start"),
    [
        pytest.param("csv", b"i,f\n", id="csv"),
        pytest.param("tsv", b"i\tf\n", id="tsv"),
        pytest.param("csv.gz", b"i,f\n", id="csv.gz-decompressed"),
        pytest.param("parquet", b"PAR1", id="parquet"),
        pytest.param("npy", b"\x93NUMPY", id="npy"),
    ],
)
def test_standard_output_defaults_to_the_input_format(invoke: Invoke, tmp_path, fmt,
                                                      expected_start):
    result = invoke("cumsum", str(write_input(tmp_path, fmt)))
    assert result.exit_code == 0, result.stderr
    assert result.stdout_bytes.startswith(expected_start)


# Format detection ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("fmt", "name"),
    [
        pytest.param("csv", "data.txt", id="txt-is-csv"),
        pytest.param("tsv", "data.tab", id="tab-is-tsv"),
        pytest.param("parquet", "data.pq", id="pq-is-parquet"),
        pytest.param("parquet", "DATA.PARQUET", id="upper-case-extension"),
        pytest.param("csv.gz", "data.CSV.GZ", id="upper-case-gz"),
        pytest.param("tsv.gz", "data.tsv.gz", id="tsv.gz"),
    ],
)
def test_format_by_extension(invoke: Invoke, tmp_path, fmt, name):
    path = tmp_path / name
    path.write_bytes(input_bytes(fmt))
    out = tmp_path / "out.parquet"
    result = invoke("cummax", str(path), "-o", str(out))
    assert result.exit_code == 0, result.stderr
    check_output("parquet", out.read_bytes(), expected("cummax", "rows", fmt), "cummax", "")


@pytest.mark.parametrize(
    ("fmt", "name"),
    [
        pytest.param("parquet", "data", id="parquet-no-extension"),
        pytest.param("parquet", "data.csv", id="parquet-named-csv"),
        pytest.param("parquet", "data.npy", id="parquet-named-npy"),
        pytest.param("npy", "data", id="npy-no-extension"),
        pytest.param("npy", "data.csv", id="npy-named-csv"),
        pytest.param("npy", "data.parquet", id="npy-named-parquet"),
        pytest.param("csv.gz", "data", id="gzip-csv-no-extension"),
        pytest.param("csv.gz", "data.csv", id="gzip-csv-named-csv"),
        pytest.param("csv.gz", "data.gz", id="gzip-csv-named-gz"),
        pytest.param("tsv.gz", "data", id="gzip-tsv-no-extension"),
        pytest.param("tsv", "data", id="tsv-no-extension"),
        pytest.param("csv", "data", id="csv-no-extension"),
    ],
)
def test_format_by_magic_bytes(invoke: Invoke, tmp_path, fmt, name):
    path = tmp_path / name
    path.write_bytes(input_bytes(fmt))
    out = tmp_path / "out.parquet"
    result = invoke("cumsum", str(path), "-o", str(out))
    assert result.exit_code == 0, result.stderr
    check_output("parquet", out.read_bytes(), expected("cumsum", "rows", fmt), "cumsum", "")


@pytest.mark.parametrize("fmt", [pytest.param(f, id=f) for f in ("parquet", "npy", "csv", "tsv")])
def test_gzip_around_any_format_on_standard_input(invoke: Invoke, fmt):
    """gzip on standard input is unwrapped and what is inside is sniffed in turn."""
    result = invoke("cumsum", "--to", "parquet", input=gzip.compress(input_bytes(fmt)))
    assert result.exit_code == 0, result.stderr
    check_output("parquet", result.stdout_bytes, expected("cumsum", "rows", fmt), "cumsum",
                 "")


@pytest.mark.parametrize("via", ["stdin", "no-extension", "gzip-stdin"])
def test_tsv_is_sniffed_from_the_whole_first_line(invoke: Invoke, tmp_path, via):
    """The first tab may come well after the first few bytes."""
    data = b"temperature_in_kelvin\tpressure\n1\t2\n3\t4\n"
    if via == "stdin":
        result = invoke("cumsum", input=data)
    elif via == "gzip-stdin":
        result = invoke("cumsum", "--to", "tsv", input=gzip.compress(data))
    else:
        path = tmp_path / "readings"
        path.write_bytes(data)
        result = invoke("cumsum", str(path))
    assert result.exit_code == 0, result.stderr
    assert result.stdout_bytes == b"temperature_in_kelvin\tpressure\n1\t2\n4\t6\n"


def test_a_csv_whose_header_starts_like_parquet_is_csv(invoke: Invoke, write_file):
    path = write_file("par.csv", "PAR1,b\n1,2\n3,4\n")
    result = invoke("cumsum", str(path))
    assert result.exit_code == 0, result.stderr
    assert result.stdout.splitlines() == ["PAR1,b", "1,2", "4,6"]


@pytest.mark.parametrize(
    ("content", "name", "given", "delimiter"),
    [
        pytest.param("csv", "data.dat", ["--from", "csv"], ",", id="csv-unknown-extension"),
        pytest.param("tsv", "data.csv", ["--from", "tsv"], "\t", id="tsv-named-csv"),
        pytest.param("csv", "data.tsv", ["--from", "csv"], ",", id="csv-named-tsv"),
        pytest.param("csv.gz", "data.bin", ["--from", "csv"], ",", id="gzip-csv-unknown"),
    ],
)
def test_from_overrides_the_name(invoke: Invoke, tmp_path, content, name, given, delimiter):
    path = tmp_path / name
    path.write_bytes(input_bytes(content))
    result = invoke("cumsum", str(path), *given, "--to", "csv")
    assert result.exit_code == 0, result.stderr
    got = read_output("csv", result.stdout_bytes)
    assert isinstance(got, dict)
    assert list(got) == ["i", "f"]
    np.testing.assert_array_equal(got["i"], np.cumsum(COL_I))


def test_from_overrides_the_magic_bytes_on_standard_input(invoke: Invoke):
    # tsv text with a comma in a cell: sniffing would say csv, --from says tsv.
    data = b"i\tnote\n1\ta,b\n2\tc\n"
    result = invoke("cumsum", "--from", "tsv", input=data)
    assert result.exit_code == 0, result.stderr
    assert result.stdout_bytes == b"i\tnote\n1\ta,b\n3\tc\n"


@pytest.mark.parametrize(
    ("name", "to", "reader"),
    [
        pytest.param("out.csv", "parquet", "parquet", id="parquet-in-a-csv-name"),
        pytest.param("out.parquet", "csv", "csv", id="csv-in-a-parquet-name"),
        pytest.param("out.data", "npy", "npy", id="npy-unknown-extension"),
        pytest.param("out.data", "tsv", "tsv", id="tsv-unknown-extension"),
        pytest.param("out.csv.gz", "csv", "csv.gz", id="gzip-kept-from-the-name"),
    ],
)
def test_to_overrides_the_output_name(invoke: Invoke, tmp_path, name, to, reader):
    path = write_input(tmp_path, "csv")
    out = tmp_path / name
    result = invoke("cumsum", str(path), "-o", str(out), "--to", to)
    assert result.exit_code == 0, result.stderr
    check_output(reader, out.read_bytes(), expected("cumsum", "rows", "csv"), "cumsum", "")


@pytest.mark.parametrize("name", [pytest.param(n, id=n) for n in ("out.xlsx", "out", "out.json")])
def test_unknown_output_extension_without_to_is_a_usage_error(invoke: Invoke, tmp_path, name):
    path = write_input(tmp_path, "csv")
    result = invoke("cumsum", str(path), "-o", str(tmp_path / name))
    assert result.exit_code == 2
    assert result.stderr.startswith("Error: ")
    assert name in result.stderr
    assert "--to" in result.stderr
    assert not (tmp_path / name).exists()


# CSV details -------------------------------------------------------------------------------


def test_quoted_fields_with_delimiters_quotes_and_newlines(invoke: Invoke, write_file):
    text = ('n,note,x\n'
            '1,"a, b",0.5\n'
            '2,"two\nlines",1.5\n'
            '3,"say ""hi""",2.0\n'
            '4,plain,-1.0\n')
    for source in ("file", "stdin"):
        if source == "file":
            result = invoke("cumsum", str(write_file("q.csv", text)))
        else:
            result = invoke("cumsum", input=text)
        assert result.exit_code == 0, result.stderr
        rows = list(csv.reader(io.StringIO(result.stdout, newline="")))
        assert rows == [
            ["n", "note", "x"],
            ["1", "a, b", "0.5"],
            ["3", "two\nlines", "2.0"],
            ["6", 'say "hi"', "4.0"],
            ["10", "plain", "3.0"],
        ], source


@pytest.mark.parametrize("source", ["file", "stdin", "gzip"])
def test_crlf_line_endings(invoke: Invoke, write_file, source):
    data = b"a,b,name\r\n1,2.5,x\r\n2,0.5,y\r\n3,1.0,z\r\n"
    if source == "file":
        result = invoke("cumsum", str(write_file("crlf.csv", data)))
    elif source == "stdin":
        result = invoke("cumsum", input=data)
    else:
        result = invoke("cumsum", str(write_file("crlf.csv.gz", gzip.compress(data))),
                        "--to", "csv")
    assert result.exit_code == 0, result.stderr
    # The last column must not keep a stray \r: name is text, b is a number.
    assert result.stdout_bytes == b"a,b,name\n1,2.5,x\n3,3.0,y\n6,4.0,z\n"


@pytest.mark.parametrize("source", ["file", "stdin", "gzip"])
def test_utf8_bom_is_not_part_of_the_first_name(invoke: Invoke, write_file, tmp_path, source):
    data = "\ufeffamount,b\n1,2\n3,4\n".encode()
    out = tmp_path / "out.parquet"
    if source == "file":
        result = invoke("cumsum", str(write_file("bom.csv", data)), "-o", str(out))
    elif source == "stdin":
        result = invoke("cumsum", "-o", str(out), input=data)
    else:
        result = invoke("cumsum", str(write_file("bom.csv.gz", gzip.compress(data))),
                        "-o", str(out))
    assert result.exit_code == 0, result.stderr
    table = pq.read_table(out)
    assert table.column_names == ["amount", "b"]
    assert table.column("amount").to_pylist() == [1, 4]


def test_utf8_text_passes_through(invoke: Invoke, write_file):
    text = "city,n\nZürich,1\n東京,2\nSão Paulo,3\n"
    result = invoke("cumsum", str(write_file("u.csv", text)))
    assert result.exit_code == 0, result.stderr
    assert result.stdout == "city,n\nZürich,1\n東京,3\nSão Paulo,6\n"


@pytest.mark.parametrize("source", ["file", "stdin"])
def test_empty_cells_stay_missing_and_integers_stay_integers(invoke: Invoke, write_file,
                                                             tmp_path, source):
    text = "a,b,c\n1,,x\n,2.5,\n3,1.5,z\n4,,w\n"
    out = tmp_path / "out.parquet"
    if source == "file":
        result = invoke("cumsum", str(write_file("m.csv", text)), "-o", str(out))
        csv_result = invoke("cumsum", str(write_file("m.csv", text)))
    else:
        result = invoke("cumsum", "-o", str(out), input=text)
        csv_result = invoke("cumsum", input=text)
    assert result.exit_code == 0, result.stderr
    table = pq.read_table(out)
    assert table.schema.field("a").type == pa.int64()
    assert table.schema.field("b").type == pa.float64()
    # The running value carries over a missing cell, which stays missing.
    assert table.column("a").to_pylist() == [1, None, 4, 8]
    assert table.column("b").to_pylist() == [None, 2.5, 4.0, None]
    assert table.column("c").to_pylist() == ["x", None, "z", "w"]
    # In CSV: still empty, and the integer column prints without ".0".
    assert csv_result.stdout == "a,b,c\n1,,x\n,2.5,\n4,4.0,z\n8,,w\n"


def test_text_and_date_columns_pass_through_in_place(invoke: Invoke, write_file):
    text = ("date,store,units,when,revenue\n"
            "2024-03-01,north,12,2024-03-01T10:00:00,149.88\n"
            "2024-03-02,south,9,2024-03-02T11:30:00,112.41\n"
            "2024-03-03,north,15,2024-03-03T09:15:00,187.35\n")
    result = invoke("cumsum", str(write_file("sales.csv", text)))
    assert result.exit_code == 0, result.stderr
    rows = list(csv.reader(io.StringIO(result.stdout)))
    assert rows[0] == ["date", "store", "units", "when", "revenue"]
    assert [r[0] for r in rows[1:]] == ["2024-03-01", "2024-03-02", "2024-03-03"]
    assert [r[1] for r in rows[1:]] == ["north", "south", "north"]
    assert [r[3] for r in rows[1:]] == ["2024-03-01T10:00:00", "2024-03-02T11:30:00",
                                        "2024-03-03T09:15:00"]
    assert [int(r[2]) for r in rows[1:]] == [12, 21, 36]
    assert [float(r[4]) for r in rows[1:]] == np.cumsum([149.88, 112.41, 187.35]).tolist()


def test_parquet_date_and_string_columns_keep_their_types(invoke: Invoke, tmp_path):
    import datetime

    days = [datetime.date(2024, 3, d) for d in (1, 2, 3)]
    source = pa.table({"day": pa.array(days, pa.date32()), "store": ["n", "s", "n"],
                       "units": pa.array([12, 9, 15], pa.int32()),
                       "price": pa.array([1.5, 2.25, 0.25], pa.float32())})
    path = tmp_path / "in.parquet"
    pq.write_table(source, path)
    out = tmp_path / "out.parquet"
    result = invoke("cumsum", str(path), "-o", str(out))
    assert result.exit_code == 0, result.stderr
    table = pq.read_table(out)
    assert table.schema.names == ["day", "store", "units", "price"]
    assert table.schema.field("day").type == pa.date32()
    assert table.column("day").to_pylist() == days
    assert table.column("store").to_pylist() == ["n", "s", "n"]
    # int32 cumsum -> int64; float32 stays float32 (accumulated in float64, rounded once).
    assert table.schema.field("units").type == pa.int64()
    assert table.column("units").to_pylist() == [12, 21, 36]
    assert table.schema.field("price").type == pa.float32()
    want = np.cumsum(np.array([1.5, 2.25, 0.25], np.float32).astype(np.float64))
    np.testing.assert_array_equal(table.column("price").to_numpy(), want.astype(np.float32))


def test_columns_selection_leaves_other_numbers_alone(invoke: Invoke, write_file, tmp_path):
    path = write_file("t.csv", "a,b,c\n1,10,100\n2,20,200\n3,30,300\n")
    out = tmp_path / "out.parquet"
    result = invoke("cumprod", str(path), "-c", "c,a", "-o", str(out))
    assert result.exit_code == 0, result.stderr
    table = pq.read_table(out)
    assert table.column_names == ["a", "b", "c"]  # input order, not -c order
    assert table.column("a").to_pylist() == [1, 2, 6]
    assert table.column("b").to_pylist() == [10, 20, 30]
    assert table.column("c").to_pylist() == [100, 20000, 6000000]


def test_no_header_input_and_output(invoke: Invoke, write_file):
    result = invoke("cummax", str(write_file("t.csv", "1,5\n3,4\n2,6\n")), "--no-header")
    assert result.exit_code == 0, result.stderr
    assert result.stdout == "1,5\n3,5\n3,6\n"
    result = invoke("cummax", "--no-header", "-c", "1", input="1,5\n3,4\n2,6\n")
    assert result.exit_code == 0, result.stderr
    assert result.stdout == "1,5\n3,4\n3,6\n"


@pytest.mark.parametrize(("names", "expected"), [
    ("a,a", "1,2\n4,6\n"),
    # An empty name is an index (R's row names, pandas' index): kept, not scanned.
    (",b", "1,2\n3,6\n"),
], ids=["repeated", "empty"])
def test_header_names_pass_through_unchanged(invoke: Invoke, write_file, names, expected):
    result = invoke("cumsum", str(write_file("h.csv", f"{names}\n1,2\n3,4\n")))
    assert result.exit_code == 0, result.stderr
    assert result.stdout == f"{names}\n{expected}"


def test_header_only_csv_gives_an_empty_result_with_the_header(invoke: Invoke, write_file,
                                                               tmp_path):
    path = write_file("h.csv", "a,b\n")
    result = invoke("cumsum", str(path))
    assert result.exit_code == 0, result.stderr
    assert result.stdout == "a,b\n"
    result = invoke("cumsum", input="a,b\n")
    assert result.exit_code == 0, result.stderr
    assert result.stdout == "a,b\n"
    out = tmp_path / "out.parquet"
    result = invoke("cumsum", str(path), "-o", str(out))
    assert result.exit_code == 0, result.stderr
    table = pq.read_table(out)
    assert table.column_names == ["a", "b"]
    assert table.num_rows == 0


def test_tsv_output_of_csv_input_with_tabs_in_text(invoke: Invoke, write_file):
    path = write_file("t.csv", 'n,note\n1,"tab\there"\n2,x\n')
    result = invoke("cumsum", str(path), "--to", "tsv")
    assert result.exit_code == 0, result.stderr
    rows = list(csv.reader(io.StringIO(result.stdout), delimiter="\t"))
    assert rows == [["n", "note"], ["1", "tab\there"], ["3", "x"]]


@pytest.mark.parametrize("codec", ["gz", "bz2", "zst", "lz4"])
def test_compressed_csv_output_and_input(invoke: Invoke, tmp_path, codec):
    path = write_input(tmp_path, "csv")
    out = tmp_path / f"out.csv.{codec}"
    result = invoke("cumsum", str(path), "-o", str(out))
    assert result.exit_code == 0, result.stderr
    if codec == "gz":
        text = gzip.decompress(out.read_bytes())
    elif codec == "bz2":
        import bz2

        text = bz2.decompress(out.read_bytes())
    else:
        name = {"zst": "zstd", "lz4": "lz4"}[codec]
        with pa.CompressedInputStream(pa.OSFile(str(out)), name) as stream:
            text = stream.read()
    check_output("csv", text, expected("cumsum", "rows", "csv"), "cumsum", "")
    # ... and it reads back in.
    again = invoke("cummax", str(out), "--to", "csv")
    assert again.exit_code == 0, again.stderr
    check_output("csv", again.stdout_bytes,
                 {n: np.maximum.accumulate(c) for n, c in expected("cumsum", "rows",
                                                                   "csv").items()},
                 "cummax", "")


@pytest.mark.parametrize("fmt", ["parquet", "npy"])
def test_gzipped_binary_inputs_by_name(invoke: Invoke, tmp_path, fmt):
    path = tmp_path / f"in.{fmt}.gz"
    path.write_bytes(gzip.compress(input_bytes(fmt)))
    result = invoke("cumsum", str(path), "--to", "parquet")
    assert result.exit_code == 0, result.stderr
    check_output("parquet", result.stdout_bytes, expected("cumsum", "rows", fmt), "cumsum",
                 "")


def test_csv_gz_output_is_gzip_and_reads_back(invoke: Invoke, tmp_path):
    path = write_input(tmp_path, "tsv")
    out = tmp_path / "out.tsv.gz"
    result = invoke("cummin", str(path), "-o", str(out))
    assert result.exit_code == 0, result.stderr
    text = gzip.decompress(out.read_bytes())
    got = read_delimited(text, "\t")
    np.testing.assert_array_equal(got["i"], np.minimum.accumulate(COL_I))
    np.testing.assert_array_equal(got["f"], np.minimum.accumulate(COL_F))


# .npy arrays ---------------------------------------------------------------------------------


CUBE = (np.arange(24, dtype=np.int32).reshape(2, 3, 4) * np.array([1, -1, 2, -2])) % 7 - 3


@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("axis", [0, 1, 2, -1, -2, -3])
def test_3d_npy_every_axis(invoke: Invoke, tmp_path, op, axis):
    path = tmp_path / "cube.npy"
    np.save(path, CUBE.astype(np.int32))
    result = invoke(op, str(path), "--axis", str(axis), "--batch-rows", "1")
    assert result.exit_code == 0, result.stderr
    got = np.load(io.BytesIO(result.stdout_bytes))
    assert got.shape == CUBE.shape
    assert_same(got, ref_scan(op, CUBE.astype(np.int32), axis), op)


@pytest.mark.parametrize("via", ["file", "stdin"])
@pytest.mark.parametrize("axis", [0, 1, 2])
def test_fortran_order_npy(invoke: Invoke, tmp_path, via, axis):
    cube = CUBE.astype(np.float64) / 4
    data = npy_bytes(cube, fortran=True)
    assert np.load(io.BytesIO(data)).flags.f_contiguous  # the input really is Fortran order
    if via == "file":
        path = tmp_path / "f.npy"
        path.write_bytes(data)
        result = invoke("cumsum", str(path), "-a", str(axis), "--batch-rows", "1")
    else:
        result = invoke("cumsum", "-a", str(axis), input=data)
    assert result.exit_code == 0, result.stderr
    got = np.load(io.BytesIO(result.stdout_bytes))
    assert_same(got, ref_scan("cumsum", cube, axis), "cumsum")


@pytest.mark.parametrize(
    ("dtype", "op"),
    [
        pytest.param(">i4", "cumsum", id="int32-big-endian-cumsum"),
        pytest.param(">i2", "cummax", id="int16-big-endian-cummax"),
        pytest.param(">f8", "cumprod", id="float64-big-endian-cumprod"),
        pytest.param(">f4", "cummin", id="float32-big-endian-cummin"),
        pytest.param(">u2", "cumsum", id="uint16-big-endian-cumsum"),
    ],
)
@pytest.mark.parametrize("via", ["file", "stdin"])
def test_big_endian_npy(invoke: Invoke, tmp_path, dtype, op, via):
    values = np.array([[3, 1], [2, 5], [7, 0], [1, 4]])
    array = values.astype(dtype)
    assert array.dtype.byteorder == ">"
    if via == "file":
        path = tmp_path / "be.npy"
        np.save(path, array)
        result = invoke(op, str(path), "--batch-rows", "3")
    else:
        result = invoke(op, input=npy_bytes(array))
    assert result.exit_code == 0, result.stderr
    got = np.load(io.BytesIO(result.stdout_bytes))
    native = values.astype(np.dtype(dtype).newbyteorder("="))
    want = ref_scan(op, native)
    assert got.dtype == want.dtype  # written in native byte order
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize(
    ("dtype", "op", "want_dtype"),
    [
        pytest.param("int16", "cumsum", "int64", id="int16-cumsum"),
        pytest.param("int16", "cummax", "int16", id="int16-cummax"),
        pytest.param("int16", "logcumsumexp", "float64", id="int16-logcumsumexp"),
        pytest.param("float32", "cumprod", "float32", id="float32-cumprod"),
        pytest.param("uint8", "cummin", "uint8", id="uint8-cummin"),
    ],
)
def test_zero_d_npy_is_returned_unchanged(invoke: Invoke, tmp_path, dtype, op, want_dtype):
    path = tmp_path / "scalar.npy"
    np.save(path, np.array(5, dtype=dtype))
    for result in (invoke(op, str(path)), invoke(op, input=path.read_bytes())):
        assert result.exit_code == 0, result.stderr
        got = np.load(io.BytesIO(result.stdout_bytes))
        assert got.shape == ()
        assert got.dtype == np.dtype(want_dtype)
        assert got == 5


@pytest.mark.parametrize("shape", [(0,), (0, 3), (3, 0), (2, 0, 4)], ids=str)
@pytest.mark.parametrize(("op", "want_dtype"), [("cumsum", "int64"), ("cummax", "int32"),
                                                ("logcumsumexp", "float64")])
def test_empty_npy(invoke: Invoke, tmp_path, shape, op, want_dtype):
    path = tmp_path / "empty.npy"
    np.save(path, np.zeros(shape, dtype=np.int32))
    result = invoke(op, str(path), "-a", "-1")
    assert result.exit_code == 0, result.stderr
    got = np.load(io.BytesIO(result.stdout_bytes))
    assert got.shape == shape
    assert got.dtype == np.dtype(want_dtype)


@pytest.mark.parametrize(
    ("shape", "expected_header"),
    [
        pytest.param((0,), "0", id="1-d"),
        pytest.param((0, 3), "0,1,2", id="2-d"),
    ],
)
def test_empty_npy_to_csv_has_just_the_header(invoke: Invoke, tmp_path, shape,
                                              expected_header):
    path = tmp_path / "empty.npy"
    np.save(path, np.zeros(shape))
    result = invoke("cumsum", str(path), "--to", "csv")
    assert result.exit_code == 0, result.stderr
    assert result.stdout == expected_header + "\n"


@pytest.mark.parametrize("via", ["file", "stdin"])
def test_npy_1d_and_2d_to_csv_name_columns_by_position(invoke: Invoke, tmp_path, via):
    vector = np.array([1.5, -2.0, 4.25])
    data = npy_bytes(vector)
    if via == "file":
        path = tmp_path / "v.npy"
        path.write_bytes(data)
        result = invoke("cumsum", str(path), "--to", "csv")
    else:
        result = invoke("cumsum", "--to", "csv", input=data)
    assert result.exit_code == 0, result.stderr
    assert result.stdout == "0\n1.5\n-0.5\n3.75\n"


@pytest.mark.parametrize("op", ["cumsum", "cumprod", "logcumsumexp"])
@pytest.mark.parametrize("dtype", ["complex64", "complex128"])
def test_complex_npy(invoke: Invoke, tmp_path, op, dtype):
    array = np.array([[0.1 + 0.2j, 0.5], [-0.3 + 0.1j, 0.25j], [0.5 - 0.4j, -0.5]], dtype=dtype)
    path = tmp_path / "c.npy"
    np.save(path, array)
    result = invoke(op, str(path))
    assert result.exit_code == 0, result.stderr
    got = np.load(io.BytesIO(result.stdout_bytes))
    assert got.dtype == np.dtype(dtype)
    wide = array.astype(np.complex128)
    if op == "logcumsumexp":  # small values: the principal branch of log is the answer
        want = np.log(np.cumsum(np.exp(wide), axis=0))
        np.testing.assert_allclose(got, want.astype(dtype), rtol=1e-6 if dtype == "complex64"
                                   else 1e-12)
    else:
        want = UFUNCS[op].accumulate(wide, axis=0).astype(dtype)  # accumulated wide
        np.testing.assert_array_equal(got, want)


def test_3d_npy_to_csv_is_a_usage_error(invoke: Invoke, tmp_path):
    path = tmp_path / "cube.npy"
    np.save(path, CUBE)
    out = tmp_path / "out.csv"
    result = invoke("cumsum", str(path), "-o", str(out))
    assert result.exit_code == 2
    assert result.stderr.startswith("Error: ")
    assert "3-d" in result.stderr
    assert "Traceback" not in result.stderr
    assert not out.exists()


def ref_indices(values: np.ndarray, op: str, axis: int) -> np.ndarray:
    """Positions of the running max/min, the last of equal values, by a plain loop."""
    def line_indices(line: list) -> tuple[list[int]]:
        best, where, out = None, -1, []
        for i, x in enumerate(line):
            if best is None or (x >= best if op == "cummax" else x <= best):
                best, where = x, i
            out.append(where)
        return (out,)

    return along_axis(values, axis, line_indices, np.int64)[0]


@pytest.mark.parametrize("op", ["cummax", "cummin"])
@pytest.mark.parametrize(
    ("dest", "axis"),
    [
        pytest.param("stdout", "0", id="stdout-axis0"),
        pytest.param("out.npz", "2", id="npz-file-axis2"),
        pytest.param("out.npz", "-2", id="npz-file-axis-2"),
    ],
)
def test_npy_indices_give_an_npz_of_values_and_indices(invoke: Invoke, tmp_path, op, dest,
                                                       axis):
    path = tmp_path / "cube.npy"
    np.save(path, CUBE)
    if dest == "stdout":
        result = invoke(op, str(path), "--indices", "-a", axis, "--batch-rows", "1")
        data = result.stdout_bytes
    else:
        result = invoke(op, str(path), "--indices", "-a", axis, "-o", str(tmp_path / dest))
        data = (tmp_path / dest).read_bytes()
    assert result.exit_code == 0, result.stderr
    with np.load(io.BytesIO(data)) as npz:
        assert sorted(npz.files) == ["indices", "values"]
        values, indices = npz["values"], npz["indices"]
    assert_same(values, ref_scan(op, CUBE, int(axis)), op)
    assert indices.dtype == np.int64
    np.testing.assert_array_equal(indices, ref_indices(CUBE, op, int(axis)))


def test_table_indices_column_follows_each_result(invoke: Invoke, write_file, tmp_path):
    path = write_file("t.csv", "a,s,b\n1,x,5\n3,y,5\n2,z,7\n3,w,1\n")
    out = tmp_path / "out.parquet"
    result = invoke("cummax", str(path), "--indices", "-o", str(out))
    assert result.exit_code == 0, result.stderr
    table = pq.read_table(out)
    assert table.column_names == ["a", "a_index", "s", "b", "b_index"]
    assert table.schema.field("a_index").type == pa.int64()
    assert table.column("a").to_pylist() == [1, 3, 3, 3]
    assert table.column("a_index").to_pylist() == [0, 1, 1, 3]  # a tie: the last one wins
    assert table.column("b").to_pylist() == [5, 5, 7, 7]
    assert table.column("b_index").to_pylist() == [0, 1, 2, 2]


# What is not a table: named as such, with the command that makes it one -----------------

JSON_ARRAY = b'[{"kwh": 1}, {"kwh": 2}]\n'
JSON_PRETTY = b'{\n  "kwh": 1\n}\n{\n  "kwh": 2\n}\n'


@pytest.mark.parametrize("name, data, message", [
    ("a.json", JSON_ARRAY, "a.json: this is JSON, not JSON Lines (one object per line), "
     "which cumtool reads; turn it into JSON Lines on the way: jq -c '.[]' a.json | cumtool "
     "cumsum (or jq -c . for objects one after another)"),
    ("p.json", JSON_PRETTY, "p.json: this is JSON, not JSON Lines (one object per line), "
     "which cumtool reads; turn it into JSON Lines on the way: jq -c '.[]' p.json | cumtool "
     "cumsum (or jq -c . for objects one after another)"),
    ("d.csv.xz", b"\xfd7zXZ\x00\x00\x04rest", "d.csv.xz: xz is a compression or archive "
     "cumtool does not read; unpack it on the way: xz -dc d.csv.xz | cumtool cumsum"),
    ("d.zip", b"PK\x03\x04\x14\x00data", "d.zip: zip is a compression or archive cumtool "
     "does not read; unpack it on the way: unzip -p d.zip | cumtool cumsum"),
], ids=["json-array", "json-pretty", "xz", "zip"])
def test_json_and_unread_compressions_are_named(invoke, write_file, name, data, message):
    path = write_file(name, data)
    result = invoke("cumsum", str(path))
    assert (result.exit_code, result.stdout) == (1, "")
    assert result.stderr == f"Error: {message.replace(name, str(path))}\n"
    piped = invoke("cumsum", input=data)
    assert piped.exit_code == 1
    assert piped.stderr.startswith("Error: standard input: ")
    assert "... | " in piped.stderr


def test_json_lines_named_json_is_read_as_json_lines(invoke, write_file):
    path = write_file("a.json", b'{"kwh": 1}\n{"kwh": 2}\n')
    assert invoke("cumsum", str(path)).stdout == '{"kwh":1}\n{"kwh":3}\n'


# Writers take any Arrow batch ------------------------------------------------------------


def _shifted(array: pa.Array) -> pa.Array:
    """The same array, its values in a buffer one byte past an aligned address: as Dask
    hands a table over the network (pickle's out-of-band buffers start anywhere)."""
    validity, data = array.buffers()
    raw = pa.py_buffer(b"\0" + data.to_pybytes()).slice(1)
    assert raw.address % 8 == 1
    return pa.Array.from_buffers(array.type, len(array), [validity, raw],
                                 null_count=array.null_count)


@pytest.mark.parametrize("fmt", ["csv", "tsv", "parquet", "npy", "jsonl", "arrow", "arrows"])
def test_a_batch_at_an_odd_address_is_written_as_any_other(fmt: str):
    from cumtool.formats import FileKind
    from cumtool.request import Request
    from cumtool.sinks import table_sink

    ints = pa.array([3, None, -7, 2**62], pa.int64()) if fmt != "npy" else pa.array(
        [3, 0, -7, 2**62], pa.int64())
    floats = pa.array([0.1, -0.0, float("nan"), 1e300])

    def written(batch: pa.RecordBatch) -> bytes:
        out = io.BytesIO()
        sink = table_sink(Request(op="cumsum", output=f"out.{fmt}"), FileKind(fmt), out,
                          batch.schema, None, "in.csv")
        sink.write(batch)
        sink.close()
        return out.getvalue()

    aligned = pa.RecordBatch.from_arrays([ints, floats], names=["i", "f"])
    shifted = pa.RecordBatch.from_arrays([_shifted(ints), _shifted(floats)], names=["i", "f"])
    assert written(shifted) == written(aligned)


def test_arrays_are_written_through_the_one_write_loop(invoke: Invoke, tmp_path,
                                                       monkeypatch: pytest.MonkeyPatch):
    """An array run's blocks go through runner.write_all, the write loop of every local
    driver (one op, and several ops into a .npz), block by block with the carry between
    them, and the result is the whole array's scan."""
    from cumtool import engine

    blocks: list[int] = []
    real = engine.write_all

    def counted(sink, items, done=lambda: None):
        def each():
            for item in items:
                blocks.append(len(item))
                yield item
        return real(sink, each(), done)

    monkeypatch.setattr(engine, "write_all", counted)
    values = np.arange(1, 8, dtype=np.int64).reshape(7, 1) * np.array([[1, -2]])
    path = tmp_path / "a.npy"
    np.save(path, values)
    result = invoke("cumsum", str(path), "--batch-rows", "3", "-o", str(tmp_path / "s.npy"))
    assert result.exit_code == 0, result.output
    assert blocks == [1, 1, 1]  # 3 + 3 + 1 rows, one op each
    np.testing.assert_array_equal(np.load(tmp_path / "s.npy"), np.cumsum(values, axis=0))
    blocks.clear()
    result = invoke("cummax,cummin", str(path), "--batch-rows", "3", "--reverse",
                    "-o", str(tmp_path / "m.npz"))
    assert result.exit_code == 0, result.output
    assert blocks == [2, 2, 2]
    with np.load(tmp_path / "m.npz") as npz:
        np.testing.assert_array_equal(
            npz["cummax"], np.maximum.accumulate(values[::-1], axis=0)[::-1])
        np.testing.assert_array_equal(
            npz["cummin"], np.minimum.accumulate(values[::-1], axis=0)[::-1])
