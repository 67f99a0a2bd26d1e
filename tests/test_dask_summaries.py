"""--engine dask without a chain: integer cumsum, cummax/cummin (and their positions) and
cumcount are summarized per partition in parallel, the summaries applied on the client,
and every partition scanned from its carry. The local engine is the oracle: the same
bytes on standard output, the same exit code and the same `Error:` line, for overflows
in a later partition, only through the carry, and in several files."""

from __future__ import annotations

import os
import zlib
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

distributed = pytest.importorskip(
    "distributed", reason="dask is not installed: pip install 'cumtool[dask]'")

from cumtool import distributed as engine  # noqa: E402

# Every row group its own partition (and every 64 bytes of a CSV, unless a test says
# otherwise): conftest's tiny_partitions.
pytestmark = [pytest.mark.timeout(300), pytest.mark.usefixtures("tiny_partitions")]


@pytest.fixture
def no_chain(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Fails a run that builds the chain of carries (and counts the runs that do not)."""
    runs: list[int] = []
    summarized = engine._summarized_results

    def chain(*args, **kwargs):
        raise AssertionError("a chain of carries was built")

    def counted(*args, **kwargs):
        runs.append(1)
        return summarized(*args, **kwargs)

    monkeypatch.setattr(engine, "_chained_results", chain)
    monkeypatch.setattr(engine, "_summarized_results", counted)
    return runs


def _parquet(path: Path, columns: dict[str, object], group: int) -> Path:
    pq.write_table(pa.table(columns), path, row_group_size=group)
    assert pq.ParquetFile(path).metadata.num_row_groups > 1
    return path


def _both(invoke, scheduler: str, args: list[str]) -> tuple[object, object]:
    local = invoke(*args)
    dask = invoke(*args, "--engine", "dask", "--scheduler", scheduler)
    assert (dask.exit_code, dask.stderr) == (local.exit_code, local.stderr)
    if local.exit_code == 0:  # (after an error, standard output holds what came before)
        assert dask.stdout_bytes == local.stdout_bytes
    return local, dask


def _ints(rows: int, seed: int) -> dict[str, object]:
    rng = np.random.default_rng(seed)
    ties = rng.integers(-3, 4, rows)
    return {
        "i": pa.array(rng.integers(-10**6, 10**6, rows), pa.int64()),
        "t": pa.array(ties, pa.int16()),
        "m": pa.array([None if k % 7 == 2 else int(v) for k, v in enumerate(ties)],
                      pa.int64()),
        "b": pa.array(rng.random(rows) < 0.5),
        "f": pa.array(np.where(rng.random(rows) < 0.1, -0.0, rng.integers(-2, 3, rows)
                               ).astype(np.float64)),
        "s": pa.array([f"x{k}" for k in range(rows)]),
    }


@pytest.mark.parametrize("args", [
    pytest.param(["cumsum", "-c", "i,t,m,b"], id="cumsum"),
    pytest.param(["cummax", "--indices"], id="cummax-indices"),
    pytest.param(["cummin", "--indices", "--exclusive"], id="cummin-indices-exclusive",
                 marks=pytest.mark.slow),
    pytest.param(["cummax", "--skipna"], id="cummax-skipna",
                 marks=pytest.mark.slow),
    pytest.param(["cumcount"], id="cumcount"),
    pytest.param(["cumsum,cummax,cumcount", "-c", "i,m"], id="several-ops",
                 marks=pytest.mark.slow),
    pytest.param(["cumsum", "-c", "t", "--dtype", "int32", "--keep"], id="dtype",
                 marks=pytest.mark.slow),
    pytest.param(["cumsum", "-c", "i,t,m,b", "--exclusive"], id="cumsum-exclusive"),
    pytest.param(["cumsum", "-c", "t,m", "--exclusive", "--dtype", "int16"],
                 id="cumsum-exclusive-dtype", marks=pytest.mark.slow),
])
def test_associative_ops_give_the_local_bytes_without_a_chain(invoke, scheduler, no_chain,
                                                              tmp_path, args):
    path = _parquet(tmp_path / "n.parquet", _ints(400, 1), 23)
    _both(invoke, scheduler, [args[0], str(path), "--to", "csv", *args[1:]])
    assert no_chain == [1]


def test_floats_still_take_the_chain(invoke, scheduler, tmp_path, monkeypatch):
    built: list[int] = []
    chain = engine._chained_results
    monkeypatch.setattr(engine, "_chained_results",
                        lambda *a, **k: built.append(1) or chain(*a, **k))
    path = _parquet(tmp_path / "f.parquet", _ints(300, 2), 31)
    _both(invoke, scheduler, ["cumsum", str(path), "-c", "i,f", "--to", "csv"])
    assert built == [1]


def _overflowing(path: Path, at: dict[int, int], rows: int = 300, group: int = 20,
                 missing: tuple[int, ...] = ()) -> Path:
    values: list[int | None] = [1] * rows
    for row, value in at.items():
        values[row] = value
    for row in missing:
        values[row] = None
    return _parquet(path, {"n": pa.array(values, pa.int64())}, group)


BIG = 2**62


@pytest.mark.parametrize(("at", "row"), [
    # Each row group is in range alone; the carry takes row 150 past int64's top.
    pytest.param({40: BIG, 149: BIG}, 150, id="only-through-the-carry"),
    # Row group 15 (rows 301 on) overflows alone, but the carry overflows first, at 150.
    pytest.param({40: BIG, 149: BIG, 280: -BIG, 281: -BIG, 282: -BIG, 283: -BIG}, 150,
                 id="carry-before-a-later-partition"),
    # A later partition overflows alone, and nothing before it does.
    pytest.param({281: BIG, 282: BIG}, 283, id="a-later-partition-alone"),
    # Going down: past int64's bottom through the carry.
    pytest.param({10: -BIG, 70: -BIG, 130: -BIG}, 131, id="downwards",
                 marks=pytest.mark.slow),
])
def test_the_first_overflow_in_file_order(invoke, scheduler, no_chain, tmp_path, at, row):
    path = _overflowing(tmp_path / "o.parquet", at)
    local, _ = _both(invoke, scheduler, ["cumsum", str(path)])
    assert local.exit_code == 1
    assert f"row {row}:" in local.stderr


def test_a_carry_that_brings_a_partition_back_in_range(invoke, scheduler, no_chain,
                                                       tmp_path):
    """Rows 21-40 overflow if summed alone; after the first row group's -2**62 they do not:
    no error, the local bytes (a hybrid that tested each partition alone would fail)."""
    path = _overflowing(tmp_path / "o.parquet", {5: -BIG, 25: BIG, 26: BIG})
    local, _ = _both(invoke, scheduler, ["cumsum", str(path), "--to", "csv"])
    assert local.exit_code == 0


def test_a_narrow_dtype_overflows_through_the_carry(invoke, scheduler, no_chain, tmp_path):
    path = _parquet(tmp_path / "o.parquet", {"n": pa.array([1000] * 200, pa.int64())}, 10)
    local, _ = _both(invoke, scheduler, ["cumsum", str(path), "--dtype", "int16"])
    assert local.exit_code == 1
    assert "row 33:" in local.stderr  # 33 * 1000 > 32767


@pytest.mark.parametrize("args", [[], ["--overflow", "wrap"]])
def test_csv_byte_ranges_name_the_overflows_line(invoke, scheduler, no_chain, monkeypatch,
                                                 tmp_path, args):
    monkeypatch.setattr(engine, "PARTITION_BYTES", 256)
    lines = ["id,x"] + [f"{k},{BIG if k in (150, 260) else k}" for k in range(400)]
    path = tmp_path / "o.csv"
    path.write_text("\n".join(lines) + "\n")
    local, _ = _both(invoke, scheduler, ["cumsum", str(path), "-c", "x", *args])
    assert local.exit_code == (0 if args else 1)


def test_a_bad_cell_after_an_overflow_and_an_overflow_after_a_bad_cell(
        invoke, scheduler, no_chain, monkeypatch, tmp_path):
    monkeypatch.setattr(engine, "PARTITION_BYTES", 256)
    for bad, big in [(300, (100, 200)), (100, (200, 300))]:
        lines = ["x"] + ["oops" if k == bad else str(BIG if k in big else 1)
                         for k in range(400)]
        path = tmp_path / f"b{bad}.csv"
        path.write_text("\n".join(lines) + "\n")
        local, _ = _both(invoke, scheduler, ["cumsum", str(path), "-c", "x"])
        assert local.exit_code == 1
        assert f"row {bad + 1} (line {bad + 2})" in local.stderr  # a named column's text


def test_a_list_of_files_counts_rows_in_each(invoke, scheduler, no_chain, tmp_path):
    """The carry goes on from file to file; the overflow names the row in its own file."""
    first = _overflowing(tmp_path / "a.parquet", {10: BIG}, rows=100)
    second = _overflowing(tmp_path / "b.parquet", {70: BIG}, rows=100)
    for args in (["--to", "csv"], ["-o", str(tmp_path / "out") + "/"]):
        local = invoke("cumsum", str(first), str(second), *args)
        dask = invoke("cumsum", str(first), str(second), *args, "--engine", "dask",
                      "--scheduler", scheduler)
        assert (dask.exit_code, dask.stderr) == (local.exit_code, local.stderr)
        assert local.exit_code == 1
        assert f"{second}: column 'n', row 71:" in local.stderr
    assert not (tmp_path / "out").exists()


def test_indices_count_across_files(invoke, scheduler, no_chain, tmp_path):
    paths = [_parquet(tmp_path / f"p{k}.parquet", _ints(120, k), 17) for k in range(3)]
    _both(invoke, scheduler, ["cummax", *map(str, paths), "--indices", "--to", "csv"])
    assert no_chain == [1]


def test_dates_and_decimals(invoke, scheduler, no_chain, tmp_path):
    """A date column's extremes and a decimal column's exact sum, as the local engine's."""
    import datetime
    import decimal

    rng = np.random.default_rng(8)
    days = rng.integers(0, 3000, 200)
    path = _parquet(tmp_path / "d.parquet", {
        "day": pa.array([None if k % 13 == 5 else datetime.date(2020, 1, 1)
                         + datetime.timedelta(days=int(d)) for k, d in enumerate(days)]),
        "amount": pa.array([decimal.Decimal(int(v)) / 100 for v in
                            rng.integers(-10**6, 10**6, 200)], pa.decimal128(12, 2)),
    }, 17)
    for op in (["cummax", "-c", "day", "--indices"], ["cummin", "-c", "day"],
               ["cumsum", "-c", "amount"]):
        local, _ = _both(invoke, scheduler, [op[0], str(path), "--to", "csv", *op[1:]])
        assert local.exit_code == 0, local.stderr
    assert len(no_chain) == 3


def test_a_fault_in_a_summary_is_one_line_and_puts_nothing_in_place(
        invoke, scheduler, monkeypatch, tmp_path):
    path = _overflowing(tmp_path / "o.parquet", {})

    def broken(*_args):
        raise ZeroDivisionError("a fault inside the summary")

    monkeypatch.setattr(engine, "summarize_partition", broken)
    result = invoke("cumsum", str(path), "-o", str(tmp_path / "out.csv"), "--engine", "dask",
                    "--scheduler", scheduler)
    assert (result.exit_code, result.stderr) == (
        1, f"Error: {path}: a Dask task failed: ZeroDivisionError: a fault inside the "
           "summary\n")
    assert sorted(os.listdir(tmp_path)) == ["o.parquet"]


def _repeats(rows: int, seed: int) -> dict[str, object]:
    """Columns whose values recur across row groups: small sets, missing cells, NaN and
    -0.0, text (with an "NA"), integers that equal floats, booleans, dates, decimals."""
    import datetime
    import decimal

    rng = np.random.default_rng(seed)
    small = rng.integers(0, 40, rows)
    floats = rng.choice([0.0, -0.0, 1.0, 1.5, -2.0, np.nan, np.inf], rows)
    return {
        "i": pa.array([None if k % 9 == 4 else int(v) for k, v in enumerate(small)],
                      pa.int64()),
        "f": pa.array([None if k % 11 == 3 else float(v) for k, v in enumerate(floats)],
                      pa.float64()),
        # Grows through the file: later row groups meet both old and new values.
        "g": pa.array(np.where(rng.random(rows) < 0.5, np.arange(rows) // 3,
                               rng.integers(0, rows // 3 + 1, rows)).astype(np.float64)),
        "s": pa.array([None if k % 13 == 6 else ("NA" if k % 17 == 1 else f"s{v % 25}")
                       for k, v in enumerate(small)]),
        "b": pa.array([None if k % 7 == 0 else bool(v % 2) for k, v in enumerate(small)]),
        "d": pa.array([datetime.date(2024, 1, 1) + datetime.timedelta(days=int(v) % 30)
                       for v in small]),
        "m": pa.array([decimal.Decimal(int(v) % 20) / 4 for v in small],
                      pa.decimal128(8, 2)),
    }


@pytest.mark.parametrize("args", [
    pytest.param([], id="plain"),
    pytest.param(["--skipna"], id="skipna"),
    pytest.param(["--exclusive", "-c", "i,f,s"], id="exclusive", marks=pytest.mark.slow),
    pytest.param(["--dtype", "float64", "-c", "i,g"], id="dtype", marks=pytest.mark.slow),
])
def test_distinct_counts_give_the_local_bytes_without_a_chain(invoke, scheduler, no_chain,
                                                              tmp_path, args):
    path = _parquet(tmp_path / "u.parquet", _repeats(500, 3), 19)
    local, _ = _both(invoke, scheduler, ["cumnunique", str(path), "--to", "csv",
                                         *(args if "-c" in args else [*args, "-c",
                                                                      "i,f,g,s,b,d,m"])])
    assert local.exit_code == 0, local.stderr
    assert no_chain == [1]


def test_distinct_counts_of_csv_byte_ranges_and_files(invoke, scheduler, no_chain,
                                                      monkeypatch, tmp_path):
    """CSV partitions of 256 bytes: "NA" and an empty cell are missing in a text column
    too (--na), "nan" is one value, "-0" is 0; the union goes on from file to file; with
    another op (cummax) in the same run."""
    monkeypatch.setattr(engine, "PARTITION_BYTES", 256)
    rng = np.random.default_rng(5)
    paths = []
    for n in range(2):
        cells = [("" if k % 10 == 2 else "NA" if k % 10 == 5 else f"t{rng.integers(0, 30)}",
                  rng.choice(["nan", "-0", "0", "1.5", "", "2", "3e0"]),
                  str(rng.integers(0, 60)))
                 for k in range(300)]
        path = tmp_path / f"c{n}.csv"
        path.write_text("s,f,i\n" + "".join(",".join(row) + "\n" for row in cells))
        paths.append(str(path))
    for args in (["cumnunique", "-c", "s,f,i"], ["cumnunique", "-c", "s,f", "--na", "t3"],
                 ["cumnunique,cummax", "-c", "i"]):
        local, _ = _both(invoke, scheduler, [args[0], *paths, *args[1:]])
        assert local.exit_code == 0, local.stderr
    assert no_chain == [1, 1, 1]


def test_distinct_counts_along_a_chain(invoke, scheduler, tmp_path, monkeypatch):
    """With a float sum in the same run the chain is built: its links scan cumnunique's
    columns, and the bytes are the local engine's still."""
    built: list[int] = []
    chain = engine._chained_results
    monkeypatch.setattr(engine, "_chained_results",
                        lambda *a, **k: built.append(1) or chain(*a, **k))
    path = _parquet(tmp_path / "u.parquet", _repeats(200, 4), 23)
    local, _ = _both(invoke, scheduler, ["cumnunique,cumsum", str(path), "-c", "f,g",
                                         "--to", "csv"])
    assert local.exit_code == 0, local.stderr
    assert built == [1]


# Texts that look alike but are other bytes (no normalisation: the bytes decide), text
# that reads as a number, the empty text, a NUL, long text.
TEXTS = ["é", "e\u0301", "ß", "ss", "A", "a", "a\x00", "", " ", "\u00a0", "😀", "1", "01",
         "1.0", "nan", "NaN", "-0", "0", "NA", "x" * 300, "x" * 299 + "y"]


def _texts(rows: int, seed: int) -> dict[str, object]:
    """Text columns whose values recur across row groups, with missing cells and new
    values as the file goes on, and a column of nothing but missing cells."""
    rng = np.random.default_rng(seed)
    pool = [TEXTS[k] for k in rng.integers(0, len(TEXTS), rows)]
    grows = [f"g{k // 4}" if k % 3 else f"g{rng.integers(0, k // 4 + 1)}" for k in range(rows)]
    return {
        "t": pa.array([None if k % 9 == 4 else v for k, v in enumerate(pool)]),
        "g": pa.array([None if k % 13 == 6 else v for k, v in enumerate(grows)]),
        "u": pa.array([None if k % 5 == 1 else pool[-k] + grows[k] for k in range(rows)],
                      pa.large_string()),
        "n": pa.array([None] * rows, pa.string()),
    }


def _text_args(path: Path, args: list[str], columns: str = "t,g,u,n") -> list[str]:
    return ["cumnunique", str(path), "--to", "csv", "-c", columns, *args]


@pytest.mark.parametrize("args", [
    pytest.param([], id="plain"),
    pytest.param(["--exclusive"], id="exclusive", marks=pytest.mark.slow),
])
def test_distinct_text_counts_give_the_local_bytes_without_a_python_set(
        invoke, scheduler, no_chain, monkeypatch, tmp_path, args):
    """The client's union of text is numpy's (hashes in sorted runs, each checked against
    its text): no Python set of the values is made, and no hash is shared by two texts
    here, so none is looked up one by one."""
    from cumtool import carries

    split = carries.DistinctUnion.split
    texts: list[int] = []

    def numpy_only(union, keys):
        seen = split(union, keys)
        texts.append(keys.hashes is not None)
        assert union.members is None and not union.shared
        return seen

    monkeypatch.setattr(carries.DistinctUnion, "split", numpy_only)
    path = _parquet(tmp_path / "t.parquet", _texts(400, 6), 17)
    local, _ = _both(invoke, scheduler, _text_args(path, args))
    assert local.exit_code == 0, local.stderr
    assert no_chain == [1]
    assert len(texts) > 3 * 20 and all(texts)


@pytest.mark.parametrize("hashed", [
    # "a5", "b5" and "c5" share a hash: in one partition, or one in a partition and
    # another in a later one (a hash found whose stored text differs).
    pytest.param(lambda text: zlib.crc32(text[1:].encode()), id="all-but-the-first"),
    pytest.param(lambda text: len(text.encode()) % 3, id="length-mod-3",
                 marks=pytest.mark.slow),
    pytest.param(lambda text: 7, id="one-hash", marks=pytest.mark.slow),
])
def test_distinct_text_counts_whose_hashes_collide(invoke, scheduler, no_chain, monkeypatch,
                                                   tmp_path, hashed):
    """With a hash that many texts share, within a partition and across partitions, the
    counts are still the local engine's: no two texts count as one, no text twice."""
    from cumtool import carries, distinct

    def tiny(texts: pa.Array) -> np.ndarray:
        return np.array([hashed(text) for text in texts.to_pylist()], dtype=np.uint64)

    monkeypatch.setattr(distinct, "text_hashes", tiny)
    split = carries.DistinctUnion.split
    shared: list[int] = []
    monkeypatch.setattr(carries.DistinctUnion, "split",
                        lambda union, keys: (split(union, keys),
                                             shared.append(len(union.shared)))[0])
    rng = np.random.default_rng(9)
    table = _texts(300, 7)
    table["c"] = pa.array([None if k % 11 == 3 else f"{'abc'[v % 3]}{v // 3}"
                           for k, v in enumerate(rng.integers(0, 90, 300))])
    path = _parquet(tmp_path / "t.parquet", table, 13)
    local, _ = _both(invoke, scheduler, _text_args(path, [], "t,g,u,n,c"))
    assert local.exit_code == 0, local.stderr
    assert no_chain == [1]
    assert max(shared) >= 1


def test_distinct_text_counts_of_csv_partitions(invoke, scheduler, no_chain, monkeypatch,
                                                tmp_path):
    """CSV byte ranges: "NA" and empty cells are missing (--na), text that reads as a
    number among letters is text ("1", "01" and "1.0" are three values), unicode as its
    bytes."""
    monkeypatch.setattr(engine, "PARTITION_BYTES", 128)
    rng = np.random.default_rng(8)
    cells = ["é", "e\u0301", "ß", "ss", "1", "01", "1.0", "NA", "", "nan", "😀", "a b"]
    lines = [f"{cells[a]},{k},g{k // 5}" for k, a in
             enumerate(rng.integers(0, len(cells), 400))]
    path = tmp_path / "t.csv"
    path.write_text("s,k,g\n" + "\n".join(lines) + "\n", encoding="utf-8")
    for args in (["-c", "s,g"], ["-c", "s", "--na", "NA,1"]):
        local, _ = _both(invoke, scheduler, ["cumnunique", str(path), *args])
        assert local.exit_code == 0, local.stderr
    assert no_chain == [1, 1]


def test_a_distinct_count_and_an_overflow_in_one_run(invoke, scheduler, no_chain, tmp_path):
    """The sum's overflow in a later partition is the error, at its row; the distinct
    counts of the rows before it are not disturbed by it."""
    path = _parquet(tmp_path / "o.parquet", {
        "n": pa.array([BIG if k in (100, 200) else 1 for k in range(300)], pa.int64()),
        "s": pa.array([k % 37 for k in range(300)], pa.int64())}, 20)
    local, _ = _both(invoke, scheduler, ["cumnunique,cumsum", str(path), "-c", "n,s"])
    assert local.exit_code == 1
    assert "row 201:" in local.stderr


# --exclusive: a running sum is output at the next counted cell, so its overflow is an
# error there, maybe a partition or a file later, and none where no counted cell follows.

def _exclusive(invoke, scheduler, tmp_path, paths: list[Path], *args: str):
    """The local engine's and Dask's runs, to one output file: the same exit code and
    `Error:` line, the same bytes, and after an error no output in place."""
    out = tmp_path / "out.csv"
    results = []
    for engine_args in ([], ["--engine", "dask", "--scheduler", scheduler]):
        result = invoke("cumsum", *map(str, paths), "--exclusive", "-o", str(out), *args,
                        *engine_args)
        results.append((result.exit_code, result.stderr,
                        out.read_bytes() if out.exists() else None))
        if out.exists():
            out.unlink()
    assert results[1] == results[0]
    return results[0]


@pytest.mark.parametrize(("at", "missing", "row"), [
    # Rows 40 and 41 (from 0) take the sum past int64's top at row 41: output at row 42.
    pytest.param({40: BIG, 41: BIG}, (), 43, id="inside-a-partition"),
    # At a row group's last row (59): output at the next row group's first.
    pytest.param({58: BIG, 59: BIG}, (), 61, id="at-a-partitions-last-row"),
    # ... and that row group's first rows are missing: its third row.
    pytest.param({58: BIG, 59: BIG}, (60, 61), 63, id="next-cells-missing"),
    # Only through the carry, at a row group's last row; two row groups of missing cells
    # follow.
    pytest.param({30: BIG, 79: BIG}, tuple(range(80, 120)), 121,
                 id="row-groups-of-missing-cells-between"),
    # Missing cells after the overflow to the row group's end: the next one's first row.
    pytest.param({45: BIG, 50: BIG}, tuple(range(51, 60)), 61, id="missing-cells-after",
                 marks=pytest.mark.slow),
    # Going down, at a partition's last row.
    pytest.param({10: -BIG, 70: -BIG, 139: -BIG}, (), 141, id="downwards",
                 marks=pytest.mark.slow),
])
def test_an_exclusive_overflow_is_reported_at_the_next_counted_row(
        invoke, scheduler, no_chain, tmp_path, at, missing, row):
    path = _overflowing(tmp_path / "x.parquet", at, missing=missing)
    code, stderr, written = _exclusive(invoke, scheduler, tmp_path, [path])
    assert (code, stderr, written) == (
        1, f"Error: {path}: column 'n', row {row}: cumsum overflows int64; use --overflow "
           "wrap for wrap-around\n", None)
    assert no_chain == [1]


def test_an_exclusive_overflow_at_the_files_last_row_is_no_error(invoke, scheduler,
                                                                 no_chain, tmp_path):
    """Nothing outputs the overflowed sum: the run succeeds with the local bytes, also
    where only missing cells come after it."""
    for at, missing in [({298: BIG, 299: BIG}, ()), ({200: BIG, 250: BIG}, range(251, 300))]:
        path = _overflowing(tmp_path / "x.parquet", at, missing=tuple(missing))
        code, stderr, written = _exclusive(invoke, scheduler, tmp_path, [path])
        assert (code, stderr) == (0, "")
        assert written is not None and written.endswith(b"\n4611686018427388202\n" if not
                                                       missing else b'\n""\n')
    assert no_chain == [1, 1]


def test_an_exclusive_overflow_at_a_files_last_row_is_the_next_files_error(
        invoke, scheduler, no_chain, tmp_path):
    """The carry goes on from file to file: the overflow at the first file's last row is
    output at the second file's first counted row, and nothing is put in place, in one
    output or one per input."""
    first = _overflowing(tmp_path / "a.parquet", {298: BIG, 299: BIG})
    second = _overflowing(tmp_path / "b.parquet", {}, rows=100, missing=(0, 1))
    code, stderr, written = _exclusive(invoke, scheduler, tmp_path, [first, second])
    message = (f"Error: {second}: column 'n', row 3: cumsum overflows int64; use --overflow "
               "wrap for wrap-around\n")
    assert (code, stderr, written) == (1, message, None)
    args = ["cumsum", str(first), str(second), "--exclusive", "-o", str(tmp_path / "out") + "/"]
    local = invoke(*args)
    dask = invoke(*args, "--engine", "dask", "--scheduler", scheduler)
    assert (dask.exit_code, dask.stderr) == (local.exit_code, local.stderr) == (1, message)
    assert not (tmp_path / "out").exists()
    assert no_chain == [1, 1]


def test_an_exclusive_narrow_dtype_overflows_at_the_next_partition(invoke, scheduler,
                                                                   no_chain, tmp_path):
    """int16's range is left at row 33 (from 1), a row group's last: the error is at row
    34, the next row group's first, in int16's words."""
    path = _parquet(tmp_path / "o.parquet", {"n": pa.array([1000] * 200, pa.int64())}, 11)
    code, stderr, _ = _exclusive(invoke, scheduler, tmp_path, [path], "--dtype", "int16")
    assert (code, stderr) == (
        1, f"Error: {path}: column 'n', row 34: cumsum overflows int16; use --overflow "
           "wrap for wrap-around\n")
    assert no_chain == [1]
