"""SEMANTICS.md, difference 4: a result is identical, bit for bit, however the input is split.

Every op (and cummax/cummin with --indices, and --skipna) runs on the same small data as
CSV (file and standard input), Parquet (with row groups that do not line up with the
batches) and .npy (2-D and 3-D), along rows and along another axis, with --batch-rows 1,
2, 7 and one batch for the whole input. The data has float32 values whose running sums
round differently if the carry between batches were rounded to float32, missing cells,
and NaNs. Each batched output must equal the one-batch output byte for byte (.npz and
Parquet are compared by content: a zip entry carries a timestamp, and Parquet writes
one row group per batch). The one-batch outputs themselves are checked against a plain
Python loop for the float32 sums, so "identical" cannot mean "identically wrong".

The CSV and Parquet sweeps are marked slow: `-m "not slow"` keeps the .npy sweeps and the
float32 carry checks, CI runs all of them.
"""

from __future__ import annotations

import functools
import io
import math
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner, Result

from cumtool.cli import main

ROWS = 150
WHOLE = 1_000_000
BATCHES = [pytest.param(1, id="batch1"), pytest.param(2, id="batch2"),
           pytest.param(7, id="batch7"), pytest.param(WHOLE, id="batch-large")]
# The same, with batches of 1 and 2 rows left to CI (test_npy: 400 cases, 5 s in all).
SMALLEST_BATCHES_SLOW = [pytest.param(*b.values, id=b.id, marks=pytest.mark.slow)
                         if b.values[0] < 7 else b for b in BATCHES]

RUNS = [
    pytest.param("cumsum", (), id="cumsum"),
    pytest.param("cumprod", (), id="cumprod"),
    pytest.param("cummax", (), id="cummax"),
    pytest.param("cummin", (), id="cummin"),
    pytest.param("logcumsumexp", (), id="logcumsumexp"),
    pytest.param("cummax", ("--indices",), id="cummax-indices"),
    pytest.param("cummin", ("--indices",), id="cummin-indices"),
    pytest.param("cumsum", ("--skipna",), id="cumsum-skipna"),
    pytest.param("cummax", ("--indices", "--skipna"), id="cummax-indices-skipna"),
    pytest.param("cumcount", (), id="cumcount"),
    pytest.param("cummean", (), id="cummean"),
    pytest.param("cummean", ("--skipna", "--compensated"), id="cummean-skipna-compensated"),
    pytest.param("cumstd", ("--ddof", "0"), id="cumstd-ddof0"),
    pytest.param("ewma", ("--alpha", "0.35"), id="ewma"),
    pytest.param("ewma", ("--halflife", "2", "--no-adjust", "--skipna"), id="ewma-no-adjust"),
    pytest.param("diff", (), id="diff"),
    pytest.param("cumsum", ("--compensated",), id="cumsum-compensated"),
]


# The data ---------------------------------------------------------------------------------


def _data() -> dict[str, np.ndarray]:
    rng = np.random.default_rng(20240301)
    # Integers: mostly +-1 with some 2s, so that cumprod stays far from int64's edge.
    ints = rng.choice(np.array([-1, 1, 1, 1, 2]), ROWS)
    assert (ints == 2).sum() < 60
    return {
        "ints": ints.astype(np.int64),
        "int_missing": (np.arange(ROWS) % 11 == 3),
        # near 1, so cumprod neither overflows nor underflows; float32-exact values
        "growth": rng.uniform(0.8, 1.25, ROWS).astype(np.float32),
        "growth_missing": (np.arange(ROWS) % 13 == 5),
        # tenths and thirds: float32 sums that round on every step
        "small": (rng.integers(1, 30, ROWS) / rng.choice([3.0, 10.0], ROWS)).astype(np.float32),
        "noisy": rng.standard_normal(ROWS).astype(np.float32),
        "nan_at": np.isin(np.arange(ROWS), [61, 97, 98]),
    }


DATA = _data()


def _noisy_with_nans() -> np.ndarray:
    noisy = DATA["noisy"].copy()
    noisy[DATA["nan_at"]] = np.nan
    return noisy


def _cell(value: float | int, missing: bool) -> str:
    if missing:
        return ""
    if isinstance(value, float) and math.isnan(value):
        return "NaN"
    return repr(value)


def _csv_text() -> str:
    noisy = _noisy_with_nans()
    lines = ["label,ints,growth,small,noisy"]
    for k in range(ROWS):
        lines.append(",".join([
            f"row{k}",
            _cell(int(DATA["ints"][k]), bool(DATA["int_missing"][k])),
            _cell(float(DATA["growth"][k]), bool(DATA["growth_missing"][k])),
            _cell(float(DATA["small"][k]), False),
            _cell(float(noisy[k]), False),
        ]))
    return "\n".join(lines) + "\n"


def _arrow_table() -> pa.Table:
    return pa.table({
        "label": [f"row{k}" for k in range(ROWS)],
        "ints": pa.array(DATA["ints"], mask=DATA["int_missing"]),
        "ints32": pa.array(DATA["ints"].astype(np.int32)),
        "growth": pa.array(DATA["growth"], mask=DATA["growth_missing"]),
        "small": pa.array(DATA["small"]),
        "noisy": pa.array(_noisy_with_nans()),
    })


def _matrix() -> np.ndarray:
    """rows x 4 float32: the float columns and a NaN column."""
    return np.column_stack([DATA["growth"], DATA["small"], _noisy_with_nans(),
                            DATA["ints"].astype(np.float32)]).astype(np.float32)


def _cube() -> np.ndarray:
    return _matrix()[:, :3].reshape(ROWS // 5, 5, 3)


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("batches")
    paths = {
        "csv": folder / "data.csv",
        "parquet": folder / "data.parquet",
        "npy": folder / "matrix.npy",
        "npy_int": folder / "ints.npy",
        "cube": folder / "cube.npy",
    }
    paths["csv"].write_text(_csv_text())
    pq.write_table(_arrow_table(), paths["parquet"], row_group_size=13)
    np.save(paths["npy"], _matrix())
    np.save(paths["npy_int"], np.column_stack([DATA["ints"], DATA["ints"][::-1]]))
    np.save(paths["cube"], _cube())
    return paths


# Running ----------------------------------------------------------------------------------

_RUNNER = CliRunner()


def _run(*args: str, input: bytes | None = None) -> Result:
    result = _RUNNER.invoke(main, list(args), input=input, catch_exceptions=False)
    assert result.exit_code == 0, result.stderr
    return result


@functools.cache
def _stdout(args: tuple[str, ...], input: bytes | None = None) -> bytes:
    """Cached: the one-batch run each batched run is compared with."""
    return _run(*args, input=input).stdout_bytes


def _npz_arrays(data: bytes) -> dict[str, bytes]:
    archive = np.load(io.BytesIO(data))
    return {name: archive[name].dtype.str.encode() + archive[name].tobytes()
            for name in archive.files}


def _parquet_content(path: Path) -> list[tuple[str, str, bytes, bytes | None]]:
    """Each column's name, type, value bytes and validity bytes."""
    table = pq.read_table(path)
    out = []
    for field, column in zip(table.schema, table.columns, strict=True):
        array = column.combine_chunks()
        if pa.types.is_string(field.type) or pa.types.is_large_string(field.type):
            values = "\n".join(str(v) for v in array.to_pylist()).encode()
        else:
            values = array.fill_null(0).to_numpy(zero_copy_only=False).tobytes()
        validity = array.is_valid().to_numpy(zero_copy_only=False).tobytes()
        out.append((field.name, str(field.type), values, validity))
    return out


def _options(batch: int) -> tuple[str, ...]:
    return ("--batch-rows", str(batch))


# Tables ---------------------------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize("batch", BATCHES)
@pytest.mark.parametrize(("op", "extra"), RUNS)
@pytest.mark.parametrize("axis", ["rows", "columns"])
def test_csv_file(files, op, extra, axis, batch):
    columns = ("-c", "growth,small,noisy") if axis == "columns" else ()
    args = (op, str(files["csv"]), "--axis", axis, *columns, *extra)
    whole = _stdout((*args, *_options(WHOLE)))
    assert _run(*args, *_options(batch)).stdout_bytes == whole


@pytest.mark.slow
@pytest.mark.parametrize("batch", BATCHES)
@pytest.mark.parametrize(("op", "extra"), RUNS)
def test_csv_as_float32(files, op, extra, batch):
    """--dtype float32: the running value is carried in float64 between batches."""
    args = (op, str(files["csv"]), "-c", "growth,small,noisy", "--dtype", "float32", *extra)
    whole = _stdout((*args, *_options(WHOLE)))
    assert _run(*args, *_options(batch)).stdout_bytes == whole


@pytest.mark.slow
@pytest.mark.parametrize("batch", BATCHES)
@pytest.mark.parametrize(("op", "extra"), RUNS)
def test_csv_standard_input(files, op, extra, batch):
    content = files["csv"].read_bytes()
    whole = _stdout((op, *extra, *_options(WHOLE)), content)
    assert _run(op, *extra, *_options(batch), input=content).stdout_bytes == whole
    # standard input and a file give the same bytes
    assert whole == _stdout((op, str(files["csv"]), *extra, *_options(WHOLE)))


@pytest.mark.slow
@pytest.mark.parametrize("batch", BATCHES)
@pytest.mark.parametrize(("op", "extra"), RUNS)
@pytest.mark.parametrize("axis", ["rows", "columns"])
def test_parquet(files, tmp_path, op, extra, axis, batch):
    columns = ("-c", "growth,small,noisy") if axis == "columns" else ()
    args = (op, str(files["parquet"]), "--axis", axis, *columns, *extra)
    whole_csv = _stdout((*args, "--to", "csv", *_options(WHOLE)))
    assert _run(*args, "--to", "csv", *_options(batch)).stdout_bytes == whole_csv
    whole, batched = tmp_path / "whole.parquet", tmp_path / "batched.parquet"
    _run(*args, "-o", str(whole), *_options(WHOLE))
    _run(*args, "-o", str(batched), *_options(batch))
    assert _parquet_content(batched) == _parquet_content(whole)


# Arrays -----------------------------------------------------------------------------------------


def _array_output(args: tuple[str, ...], indices: bool) -> bytes | dict[str, bytes]:
    data = _run(*args).stdout_bytes
    return _npz_arrays(data) if indices else data


@pytest.mark.parametrize("batch", SMALLEST_BATCHES_SLOW)
@pytest.mark.parametrize(("op", "extra"), RUNS)
@pytest.mark.parametrize(("name", "axis"), [
    pytest.param("npy", "0", id="2d-axis0"),
    pytest.param("npy", "1", id="2d-axis1"),
    pytest.param("npy_int", "0", id="2d-int-axis0"),
    pytest.param("cube", "0", id="3d-axis0"),
    pytest.param("cube", "-1", id="3d-axis-1"),
    pytest.param("cube", "1", id="3d-axis1"),
])
def test_npy(files, op, extra, name, axis, batch):
    indices = "--indices" in extra
    args = (op, str(files[name]), "--axis", axis, *extra)
    whole = _array_output((*args, *_options(WHOLE)), indices)
    assert _array_output((*args, *_options(batch)), indices) == whole


@pytest.mark.slow
@pytest.mark.parametrize("batch", BATCHES)
@pytest.mark.parametrize(("op", "extra"), RUNS)
def test_npy_standard_input(files, op, extra, batch):
    indices = "--indices" in extra
    content = files["npy"].read_bytes()

    def output(rows: int) -> bytes | dict[str, bytes]:
        data = _run(op, *extra, *_options(rows), input=content).stdout_bytes
        return _npz_arrays(data) if indices else data

    assert output(batch) == output(WHOLE)


# The one-batch results are right, not just consistent -----------------------------------------


def _float32_cumsum(values: np.ndarray) -> list[np.float32]:
    running = 0.0
    out = []
    for v in values.tolist():
        running += v
        out.append(np.float32(running))
    return out


def test_whole_npy_float32_cumsum_matches_a_wide_loop(files):
    got = np.load(io.BytesIO(_stdout(("cumsum", str(files["npy"]), *_options(WHOLE)))))
    assert got.dtype == np.float32
    for column in range(2):
        assert got[:, column].tolist() == _float32_cumsum(_matrix()[:, column])
    # and the data is such that a float32 running sum would differ
    assert not np.array_equal(np.cumsum(_matrix()[:, 1]), got[:, 1])


def test_whole_csv_float32_cumsum_matches_a_wide_loop(files):
    text = _stdout(("cumsum", str(files["csv"]), "-c", "small", "--dtype", "float32",
                    *_options(WHOLE))).decode()
    header = text.splitlines()[0].split(",")
    column = header.index("small")
    cells = [line.split(",")[column] for line in text.splitlines()[1:]]
    assert [np.float32(c) for c in cells] == _float32_cumsum(DATA["small"])


def test_whole_csv_missing_ints_are_skipped(files):
    text = _stdout(("cumsum", str(files["csv"]), "-c", "ints", *_options(WHOLE))).decode()
    cells = [line.split(",")[1] for line in text.splitlines()[1:]]
    running = 0
    for cell, value, missing in zip(cells, DATA["ints"].tolist(),
                                    DATA["int_missing"].tolist(), strict=True):
        if missing:
            assert cell == ""
        else:
            running += value
            assert cell == str(running)


@pytest.mark.parametrize("batch", ["1", "2", "3", "7", "1000"])
@pytest.mark.parametrize(("op", "dtype", "message"), [
    ("cumprod", "int16", "row 3 (line 4): cumprod reaches 6000000, which does not fit int16"),
    ("cumprod", "int32", "row 4 (line 5): cumprod reaches 2400000000, which does not fit "
                         "int32"),
])
def test_the_first_overflow_in_file_order_whatever_the_batch(tmp_path, op, dtype, message,
                                                              batch):
    """The int64 check and --dtype's range check name one row, the first at fault: on
    100, 200, ... 800 a whole block named row 8 (int64 overflows there) where blocks of
    3 rows named row 3."""
    path = tmp_path / "p.csv"
    path.write_text("v\n" + "".join(f"{i}00\n" for i in range(1, 9)))
    result = CliRunner().invoke(main, [op, str(path), "-t", dtype, "--batch-rows", batch])
    assert result.exit_code == 1
    assert result.stderr == (f"Error: {path}: column 'v', {message}; use --overflow wrap for "
                             "wrap-around\n")


@pytest.mark.parametrize("batch", ["1", "2", "1000"])
def test_a_casts_first_bad_cell_whatever_its_fault_whatever_the_batch(tmp_path, batch):
    """-t uint8 of -1 then inf: -1 is first. A block was checked for values that are
    not finite before values out of range, so one batch named inf at row 2."""
    path = tmp_path / "u.csv"
    path.write_text("x\n-1\ninf\n")
    result = CliRunner().invoke(main, ["cumsum", str(path), "-t", "uint8",
                                       "--batch-rows", batch])
    assert result.exit_code == 1
    assert result.stderr == (f"Error: {path}: column 'x', row 1 (line 2): value -1.0 does not "
                             "fit uint8; use --overflow wrap for wrap-around\n")


@pytest.mark.parametrize("batch", ["1", "2", "3", "5", "7", "1000"])
def test_a_reversed_scans_first_error_is_the_one_it_meets_first_whatever_the_batch(
        tmp_path, batch):
    """--reverse scans from the last row: the error named is the first the scan meets
    (then the leftmost column). Whole, or in batches of 3 or more, it named the error of
    the batch's first row in the file: column c's -999 at row 3 (where column a's
    reversed total reaches 130 at row 4 too), which the scan meets after row 5's inf."""
    path = tmp_path / "r.csv"
    path.write_text("a,b,c\n" + "".join(f"{k},{'inf' if k == 5 else 1},"
                                        f"{-999 if k == 3 else 1}\n" for k in range(1, 17)))
    result = CliRunner().invoke(main, ["cumsum", str(path), "--reverse", "-t", "int8",
                                       "--batch-rows", batch])
    assert result.exit_code == 1
    assert result.stderr == (f"Error: {path}: column 'b', row 5 (line 6): value inf cannot be "
                             "cast to int8; use --overflow wrap for wrap-around\n")


@pytest.mark.parametrize("batch", ["1", "2", "3", "4", "1000"])
@pytest.mark.parametrize(("dtype", "by", "row"), [
    ("int16", False, "row 4 (line 5)"), ("int32", False, "row 5 (line 6)"),
    ("int64", False, "row 9 (line 10)"), ("int16", True, "row 4 (line 5)"),
    ("int32", True, "row 5 (line 6)"),
])
def test_an_exclusive_overflow_names_the_row_that_outputs_it(tmp_path, dtype, by, row,
                                                             batch):
    """With --exclusive a running value is output at the next row: the error names that
    row, with the same message, whether the value was reached in the same block or an
    earlier one (one block named row 3 "reaches 6000000, which does not fit int16",
    blocks of 3 rows named row 4 "overflows int16")."""
    path = tmp_path / "p.csv"
    path.write_text("g,v\n" + "".join(f"a,{i}00\n" for i in range(1, 10)))
    result = CliRunner().invoke(main, ["cumprod", str(path), "-c", "v", "--exclusive",
                                       "-t", dtype, "--batch-rows", batch,
                                       *(["--by", "g"] if by else [])])
    assert result.exit_code == 1
    assert result.stderr == (f"Error: {path}: column 'v', {row}: cumprod overflows {dtype}; "
                             "use --overflow wrap for wrap-around\n")


@pytest.mark.parametrize("batch", ["1", "2", "3", "1000"])
def test_exclusive_overflows_are_ordered_by_the_row_that_outputs_them(tmp_path, batch):
    """Column a's total overflows at row 2 but is output at row 6 (missing cells between);
    b's overflows at row 4 and is output at row 5: b, row 5, comes first in file order."""
    big = 2**62
    path = tmp_path / "o.csv"
    path.write_text(f"a,b\n{big},1\n{big},1\n,{big}\n,{big}\n,1\n1,1\n")
    result = CliRunner().invoke(main, ["cumsum", str(path), "--exclusive",
                                       "--batch-rows", batch])
    assert result.exit_code == 1
    assert result.stderr == (f"Error: {path}: column 'b', row 5 (line 6): cumsum overflows "
                             "int64; use --overflow wrap for wrap-around\n")
