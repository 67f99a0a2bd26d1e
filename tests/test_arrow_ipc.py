"""Arrow IPC in and out: the file format (.arrow, .feather) and the stream format
(.arrows, pipes), with every column's type kept exactly."""

from __future__ import annotations

import datetime
import decimal
import io

import pyarrow as pa
import pyarrow.ipc as ipc
import pytest
from helpers import ok, parquet_bytes

from cumtool.errors import UsageError
from cumtool.request import Request

TABLE = pa.table({
    "when": pa.array([datetime.datetime(2024, 3, 1, 12), None, datetime.datetime(2024, 3, 3)],
                     pa.timestamp("us", tz="Europe/Paris")),
    "store": pa.array(["north", "south", "north"]).dictionary_encode(),
    "price": pa.array([decimal.Decimal("19.99"), decimal.Decimal("0.01"), None],
                      pa.decimal128(10, 2)),
    "small": pa.array([100, 27, -5], pa.int8()),
    "ratio": pa.array([0.5, None, 1.25], pa.float32()),
    "day": pa.array([datetime.date(2024, 1, 1)] * 3, pa.date32()),
    "tags": pa.array([["a"], [], None], pa.list_(pa.string())),
    "note": pa.array(["x", None, "z"], pa.large_string()),
})


def file_bytes(table: pa.Table, *, stream: bool = False, chunk: int | None = None) -> bytes:
    sink = io.BytesIO()
    opener = ipc.new_stream if stream else ipc.new_file
    with opener(sink, table.schema) as writer:
        writer.write_table(table, max_chunksize=chunk)
    return sink.getvalue()


def read_ipc(data: bytes) -> pa.Table:
    if data.startswith(b"ARROW1"):
        return ipc.open_file(pa.BufferReader(data)).read_all()
    return ipc.open_stream(pa.BufferReader(data)).read_all()


@pytest.mark.parametrize(
    ("name", "to"),
    [pytest.param("in.arrow", "arrow", id="file"),
     pytest.param("in.feather", "arrow", id="feather"),
     pytest.param("in.arrows", "arrows", id="stream")])
def test_types_are_kept_exactly(invoke, write_file, name, to):
    data = file_bytes(TABLE, stream=name.endswith(".arrows"), chunk=2)
    result = ok(invoke("cumsum", str(write_file(name, data)), "-c", "small,price",
                       "--to", to))
    out = read_ipc(result.stdout_bytes)
    assert out.schema.field("when").type == pa.timestamp("us", tz="Europe/Paris")
    assert out.schema.field("store").type == pa.dictionary(pa.int32(), pa.string())
    # Passed-through columns are the input's, value for value and type for type.
    for name_ in ("when", "store", "ratio", "day", "tags", "note"):
        assert out.column(name_).equals(TABLE.column(name_)), name_
    # Decimals are summed exactly; a sum of int8 is int64 (as torch).
    assert out.column("price").to_pylist() == [decimal.Decimal("19.99"),
                                               decimal.Decimal("20.00"), None]
    assert out.schema.field("price").type == pa.decimal128(38, 2)
    assert out.column("small").to_pylist() == [100, 127, 122]
    assert out.schema.field("small").type == pa.int64()


@pytest.mark.parametrize("stream", [pytest.param(False, id="file"),
                                    pytest.param(True, id="stream")])
def test_stdin_is_recognised_by_its_magic_bytes(invoke, stream):
    data = file_bytes(TABLE, stream=stream)
    result = ok(invoke("cumsum", "-c", "small", input=data))
    # Standard output gets the input's format back.
    assert result.stdout_bytes.startswith(b"ARROW1") is not stream
    assert read_ipc(result.stdout_bytes).column("small").to_pylist() == [100, 127, 122]


def test_stream_output_to_a_pipe(invoke, write_file):
    path = write_file("in.csv", "a,b\n1,x\n2,y\n")
    data = ok(invoke("cumsum", str(path), "--to", "arrows")).stdout_bytes
    assert data.startswith(b"\xff\xff\xff\xff")
    assert read_ipc(data).to_pydict() == {"a": [1, 3], "b": ["x", "y"]}


def test_csv_numbers_become_arrow_numbers(invoke, write_file, tmp_path):
    path = write_file("in.csv", "a,code,flag,f\n1,007,true,0.5\n2,010,false,\n")
    out = tmp_path / "out.arrow"
    ok(invoke("cumsum", str(path), "-c", "a", "-o", str(out)))
    table = ipc.open_file(str(out)).read_all()
    assert table.schema == pa.schema([("a", pa.int64()), ("code", pa.large_string()),
                                      ("flag", pa.bool_()), ("f", pa.float64())])
    assert table.column("code").to_pylist() == ["007", "010"]


def test_a_stream_named_arrow_is_read_as_a_stream(invoke, write_file):
    path = write_file("mislabelled.arrow", file_bytes(TABLE, stream=True))
    result = ok(invoke("cumsum", str(path), "-c", "small", "--to", "csv",
                       "--only-scanned"))
    assert result.stdout == "small\n100\n127\n122\n"


@pytest.mark.parametrize("rows", [pytest.param(n, id=f"batch-{n}") for n in (1, 2, 5)])
def test_batches_do_not_change_the_output(invoke, write_file, rows):
    path = write_file("in.arrow", file_bytes(TABLE))
    whole = read_ipc(ok(invoke("cummax", str(path), "-c", "small,ratio",
                               "--to", "arrow")).stdout_bytes)
    sliced = read_ipc(ok(invoke("cummax", str(path), "-c", "small,ratio", "--to", "arrow",
                                "--batch-rows", str(rows))).stdout_bytes)
    assert sliced.equals(whole)
    assert whole.column("ratio").to_pylist() == [0.5, None, 1.25]


def test_changing_dictionaries_are_written_to_one_file(invoke, write_file, tmp_path):
    first = pa.record_batch({"k": pa.array(["a", "b"]).dictionary_encode(), "x": [1, 2]})
    second = pa.record_batch({"k": pa.array(["c", "a"]).dictionary_encode(), "x": [3, 4]})
    sink = io.BytesIO()
    with ipc.new_stream(sink, first.schema) as writer:
        writer.write_batch(first)
        writer.write_batch(second)
    out = tmp_path / "out.arrow"
    ok(invoke("cumsum", str(write_file("in.arrows", sink.getvalue())), "-o", str(out)))
    table = ipc.open_file(str(out)).read_all()
    assert table.column("k").to_pylist() == ["a", "b", "c", "a"]
    assert table.column("x").to_pylist() == [1, 3, 6, 10]
    assert pa.types.is_dictionary(table.schema.field("k").type)


def test_parquet_to_arrow_and_back(invoke, write_file, tmp_path):
    plain = TABLE.drop_columns(["store"])
    path = write_file("in.parquet", parquet_bytes(plain))
    data = ok(invoke("cumsum", str(path), "-c", "small", "--to", "arrows")).stdout_bytes
    back = ok(invoke("cumsum", "-c", "small", "--exclusive", "--to", "parquet",
                     input=data)).stdout_bytes
    import pyarrow.parquet as pq

    table = pq.read_table(pa.BufferReader(back))
    assert table.column("small").to_pylist() == [0, 100, 227]
    assert table.column("when").equals(plain.column("when"))


@pytest.mark.parametrize(
    ("data", "fmt"),
    [pytest.param(b"ARROW1\x00\x00garbage", "arrow", id="file"),
     pytest.param(b"\xff\xff\xff\xff\x10\x00\x00\x00garbage", "arrows", id="stream")])
def test_a_damaged_file_is_an_error_naming_it(invoke, write_file, data, fmt):
    path = write_file("bad.bin", data)
    result = invoke("cumsum", str(path))
    assert result.exit_code == 1
    assert result.stderr.startswith(f"Error: {path}: cannot read as {fmt}: ")
    assert result.stderr.count("\n") == 1


def test_a_truncated_stream_is_an_error(invoke, write_file, tmp_path):
    data = file_bytes(TABLE, stream=True, chunk=1)
    out = tmp_path / "out.arrows"
    result = invoke("cumsum", "-c", "small", str(write_file("in.arrows", data[:-200])),
                    "-o", str(out))
    assert result.exit_code == 1
    assert "cannot read as arrows" in result.stderr
    assert not out.exists()


@pytest.mark.parametrize("fmt", [pytest.param(f, id=f) for f in ("arrow", "arrows")])
def test_binary_output_is_not_written_to_a_terminal(fmt):
    with pytest.raises(UsageError, match=f"{fmt} output is binary"):
        Request(op="cumsum", input="in.csv", to_format=fmt, stdout_is_terminal=True).check()


def test_compressed_arrow_output_is_refused(invoke, write_file, tmp_path):
    result = invoke("cumsum", str(write_file("in.csv", "a\n1\n")), "-o",
                    str(tmp_path / "out.arrow.gz"))
    assert result.exit_code == 2
    assert "compression is for csv and tsv output only, not arrow" in result.stderr


@pytest.mark.parametrize(
    ("stream", "given"),
    [pytest.param(True, "arrow", id="stream-as-arrow"),
     pytest.param(False, "arrows", id="file-as-arrows")])
def test_from_either_ipc_name_reads_what_the_bytes_are(invoke, stream, given):
    data = file_bytes(TABLE, stream=stream)
    result = ok(invoke("cumsum", "--from", given, "-c", "small", "--to", "csv",
                       "--only-scanned", input=data))
    assert result.stdout == "small\n100\n127\n122\n"


def test_an_arrow_file_of_polars_text_views(invoke, tmp_path):
    """An Arrow file as polars writes it holds its text as string views: --reverse and a
    chart's --x of dates read them as text (an internal error and a refusal before), and
    the output holds them as large strings."""
    import polars as pl

    path = tmp_path / "v.arrow"
    pl.DataFrame({"day": ["2024-01-30", "2024-01-31", "2024-02-01"],
                  "city": ["Oslo", None, "Lima"], "n": [1, 2, 3]}).write_ipc(path)
    assert ipc.open_file(str(path)).schema.field("day").type == pa.string_view()
    result = ok(invoke("cumsum", str(path), "--reverse", "--to", "csv"))
    assert result.stdout == "day,city,n\n2024-01-30,Oslo,6\n2024-01-31,,5\n2024-02-01,Lima,3\n"
    chart = ok(invoke("cumsum", str(path), "--to", "chart", "--x", "day", "--width", "40",
                      "--height", "10"))
    assert "2024-01-30" in chart.stdout
    out = tmp_path / "out.arrow"
    ok(invoke("cumsum", str(path), "--by", "city", "-o", str(out)))
    table = ipc.open_file(str(out)).read_all()
    assert table.schema.field("city").type == pa.large_string()
    assert table.to_pydict() == {"day": ["2024-01-30", "2024-01-31", "2024-02-01"],
                                 "city": ["Oslo", None, "Lima"], "n": [1, 2, 3]}


def test_a_file_cut_short_while_it_is_read_is_an_error(tmp_path):
    """Memory-mapped, the batches past the new end were a SIGBUS: the run died with no
    word, its temporary file left."""
    import pyarrow.ipc as ipc
    import pytest

    from cumtool.errors import CumtoolError
    from cumtool.formats.arrow.arrow_ipc import ArrowSource

    path = tmp_path / "a.arrow"
    table = pa.table({"a": list(range(30_000))})
    with ipc.new_file(path, table.schema) as writer:
        writer.write_table(table, max_chunksize=10_000)
    source = ArrowSource(str(path), str(path), file_format=True, batch_rows=None)
    assert source.num_rows == 30_000
    batches = source.batches()
    assert next(batches).num_rows == 10_000
    with open(path, "r+b") as cut:
        cut.truncate(100_000)
    with pytest.raises(CumtoolError, match=f"^{path}: "):
        list(batches)
