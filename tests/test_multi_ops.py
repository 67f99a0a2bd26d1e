"""Several ops in one pass (`cumtool cumsum,cummax FILE`): the input's columns are kept and
after them come, for each scanned column, `<name>_<op>` for each op, in the order given. Each
result must be what the op gives alone (with --keep), for every table option and batch
size; expected values come from those single-op runs and from numpy."""

from __future__ import annotations

import csv
import io

import numpy as np
import pyarrow.parquet as pq
import pytest

TABLE = ("k,r,x,y,note\n"
         "a,0,3,1.5,p\nb,0,-1,2.5,q\na,1,4,,r\nb,0,1,-0.5,s\na,0,-5,4.0,t\nb,1,9,0.25,u\n")


def table(text: str) -> dict[str, list[str]]:
    rows = list(csv.reader(io.StringIO(text)))
    return {name: [r[i] for r in rows[1:]] for i, name in enumerate(rows[0])}


def test_columns_follow_each_scanned_column_op_by_op(invoke):
    result = invoke("cumsum,cummax", "-c", "x,y", input=TABLE)
    assert result.exit_code == 0, result.stderr
    got = table(result.stdout)
    assert list(got) == ["k", "r", "x", "y", "note", "x_cumsum", "x_cummax", "y_cumsum",
                         "y_cummax"]
    x = np.array([3, -1, 4, 1, -5, 9])
    assert got["x_cumsum"] == [str(v) for v in np.cumsum(x)]
    assert got["x_cummax"] == [str(v) for v in np.maximum.accumulate(x)]
    assert got["x"] == ["3", "-1", "4", "1", "-5", "9"]  # the input, as it was
    assert got["y_cumsum"] == ["1.5", "4.0", "", "3.5", "7.5", "7.75"]


OPTIONS = [
    pytest.param([], id="plain"),
    pytest.param(["--by", "k"], id="by"),
    pytest.param(["--by", "k", "--reset", "r"], id="by-reset"),
    pytest.param(["--reverse"], id="reverse"),
    pytest.param(["--exclusive"], id="exclusive"),
    pytest.param(["--by", "k", "--reverse", "--exclusive"], id="by-reverse-exclusive"),
    pytest.param(["--indices"], id="indices"),
    pytest.param(["--axis", "columns"], id="across"),
]


@pytest.mark.parametrize("options", OPTIONS)
@pytest.mark.parametrize("ops", [["cumsum", "cummax"], ["cummin", "cumprod", "cumsum"],
                                 ["logcumsumexp", "cummax"],
                                 ["cumcount", "cummean", "cumstd", "cummax"]], ids="-".join)
@pytest.mark.parametrize("batch_rows", [  # the quick suite: 4 (CI: all three)
    pytest.param("1", marks=pytest.mark.slow), "4", pytest.param("1000", marks=pytest.mark.slow)])
def test_each_result_is_what_the_op_gives_alone(invoke, options, ops, batch_rows):
    if "--indices" in options and not {"cummax", "cummin"} & set(ops):
        pytest.skip("--indices means nothing for these ops")
    columns = ["-c", "x,y"]
    together = invoke(",".join(ops), *columns, *options, "--batch-rows", batch_rows,
                      input=TABLE)
    assert together.exit_code == 0, together.stderr
    got = table(together.stdout)
    for op in ops:
        extra = [o for o in options if o != "--indices" or op in ("cummax", "cummin")]
        alone = invoke(op, *columns, *extra, "--keep", "--batch-rows", batch_rows,
                       input=TABLE)
        assert alone.exit_code == 0, alone.stderr
        for name, cells in table(alone.stdout).items():
            assert got[name] == cells, (op, name)


def test_parquet_output_and_standard_input(invoke, tmp_path):
    out = tmp_path / "o.parquet"
    result = invoke("cumsum,cummin", "-o", str(out), input=TABLE)
    assert result.exit_code == 0, result.stderr
    got = pq.read_table(out)
    assert got.column_names == ["k", "r", "x", "y", "note", "r_cumsum", "r_cummin",
                                "x_cumsum", "x_cummin", "y_cumsum", "y_cummin"]
    assert got.column("x_cummin").to_pylist() == [3, -1, -1, -1, -5, -5]
    assert got.column("x").to_pylist() == [3, -1, 4, 1, -5, 9]


@pytest.mark.parametrize(("command", "message"), [
    pytest.param("cumsum,cumsum", "No such command 'cumsum,cumsum'", id="repeated"),
    pytest.param("cumsum,bogus", "No such command 'cumsum,bogus'", id="unknown"),
])
def test_a_bad_list_of_ops_is_a_usage_error(invoke, command, message):
    result = invoke(command, input=TABLE)
    assert result.exit_code == 2
    assert result.stderr.startswith(f"Error: {message}")


def test_indices_is_refused_only_when_no_op_has_them(invoke):
    result = invoke("cumsum,cumprod", "--indices", input=TABLE)
    assert result.exit_code == 2
    assert "No such option '--indices'" in result.stderr
    result = invoke("cumsum,cummin", "--indices", "-c", "x", input=TABLE)
    assert result.exit_code == 0, result.stderr
    assert list(table(result.stdout)) == ["k", "r", "x", "y", "note", "x_cumsum",
                                          "x_cummin", "x_cummin_index"]


ARRAY = np.array([[3, 1, -2], [-1, 5, 0], [4, -2, 7], [2, 2, -9]], dtype=np.int32)


def npy_result(data: bytes) -> dict[str, np.ndarray]:
    with np.load(io.BytesIO(data)) as archive:
        return {name: archive[name] for name in archive.files}


@pytest.mark.parametrize("options", [
    pytest.param([], id="plain"),
    pytest.param(["--axis", "1"], id="axis-1"),
    pytest.param(["--reverse"], id="reverse"),
    pytest.param(["--reverse", "--exclusive", "--indices"], id="reverse-exclusive-indices"),
    pytest.param(["--dtype", "float32"], id="dtype"),
])
@pytest.mark.parametrize("batch_rows", ["1", "3", "1000"])
def test_an_array_gives_a_npz_with_one_array_per_op(invoke, tmp_path, options, batch_rows):
    path = tmp_path / "a.npy"
    np.save(path, ARRAY)
    ops = ["cumsum", "cummax", "logcumsumexp"]
    together = invoke(",".join(ops), str(path), *options, "--batch-rows", batch_rows,
                      "--to", "npy")
    assert together.exit_code == 0, together.stderr
    got = npy_result(together.stdout_bytes)
    names = [n for op in ops for n in (op, *([f"{op}_indices"] if "--indices" in options
                                              and op == "cummax" else []))]
    assert list(got) == names
    for op in ops:
        extra = [o for o in options if o != "--indices" or op == "cummax"]
        alone = invoke(op, str(path), *extra, "--batch-rows", batch_rows, "--to", "npy")
        assert alone.exit_code == 0, alone.stderr
        if "--indices" in extra:
            single = npy_result(alone.stdout_bytes)
            np.testing.assert_array_equal(got[f"{op}_indices"], single["indices"])
            single_values = single["values"]
        else:
            single_values = np.load(io.BytesIO(alone.stdout_bytes))
        assert got[op].dtype == single_values.dtype
        np.testing.assert_array_equal(got[op], single_values)


def test_an_array_from_standard_input_to_a_npz_file(invoke, tmp_path):
    buffer = io.BytesIO()
    np.save(buffer, ARRAY)
    out = tmp_path / "o.npz"
    result = invoke("cummin,cumprod", "-o", str(out), input=buffer.getvalue())
    assert result.exit_code == 0, result.stderr
    with np.load(out) as archive:
        assert archive.files == ["cummin", "cumprod"]
        np.testing.assert_array_equal(archive["cummin"], np.minimum.accumulate(ARRAY))
        np.testing.assert_array_equal(archive["cumprod"], np.cumprod(ARRAY, axis=0))


@pytest.mark.parametrize("target", ["o.npy", "o.csv"])
def test_several_ops_on_an_array_need_a_npz(invoke, tmp_path, target):
    path = tmp_path / "a.npy"
    np.save(path, ARRAY)
    out = tmp_path / target
    result = invoke("cumsum,cummax", str(path), "-o", str(out))
    assert result.exit_code == 2
    assert result.stderr.startswith("Error: several ops on an array write a .npz")
    assert not out.exists()


def test_an_overflow_in_any_op_writes_nothing(invoke, tmp_path):
    path = tmp_path / "a.npy"
    np.save(path, np.array([2**62, 2**62], dtype=np.int64))
    out = tmp_path / "o.npz"
    result = invoke("cummax,cumsum", str(path), "-o", str(out))
    assert result.exit_code == 1
    assert "at index (1,): cumsum overflows int64" in result.stderr
    assert not out.exists() and list(tmp_path.iterdir()) == [path]


def test_the_python_api_takes_several_ops_too():
    import pyarrow as pa

    import cumtool

    got = cumtool.scan(pa.table({"k": ["a", "b", "a"], "x": [1, 2, 3]}), "cumsum,cummax",
                       by="k", reverse=True)
    assert got.column_names == ["k", "x", "x_cumsum", "x_cummax"]
    assert got.column("x_cumsum").to_pylist() == [4, 2, 3]
    assert got.column("x_cummax").to_pylist() == [3, 2, 3]
