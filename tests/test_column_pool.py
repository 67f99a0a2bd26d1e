"""A batch's scanned columns on a pool of threads (tables._each_column): the same bytes
and the same error as one thread, every --threads."""

from __future__ import annotations

import threading

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from helpers import ok

from cumtool import tables


def _scanning_threads(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The names of the threads that scan columns, as they scan them."""
    names: list[str] = []
    scan = tables.TablePlan.scan_column

    def spied(self, *arguments, **keywords):
        names.append(threading.current_thread().name)
        return scan(self, *arguments, **keywords)

    monkeypatch.setattr(tables.TablePlan, "scan_column", spied)
    return names


@pytest.fixture
def pooled(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every batch on the pool (its thresholds at one row); the threads that scanned."""
    monkeypatch.setattr(tables, "POOL_ROWS", 1)
    monkeypatch.setattr(tables, "POOL_ROWS_SPARE", 1)
    return _scanning_threads(monkeypatch)


def _parquet(path, columns):
    pq.write_table(pa.table(columns), path, row_group_size=4)
    return str(path)


@pytest.mark.parametrize("op", ["cumsum", "cummax", "cummean,cumprod", "cumnunique"])
def test_the_pool_gives_one_threads_bytes(invoke, tmp_path, pooled, op):
    path = _parquet(tmp_path / "in.parquet", {
        "a": [1, 2, None, 4, 5, 6, 7, 8, 9], "b": [0.5, -1.0, 2.5, None, float("nan"), 3.0,
                                                  1e300, 1e300, -2.0],
        "k": ["x", "y", "x", "x", "y", "z", "x", "y", "y"], "c": list(range(9))})
    args = [op, path, "--to", "csv", "--batch-rows", "4"]
    one = ok(invoke(*args, "--threads", "1")).stdout
    assert not any(name.startswith("cumtool-scan") for name in pooled)
    for threads in ("2", "3", "16"):
        pooled.clear()
        assert ok(invoke(*args, "--threads", threads)).stdout == one
        assert any(name.startswith("cumtool-scan") for name in pooled)
        pooled.clear()
        assert ok(invoke(*args, "--by", "k", "--threads", threads)).stdout == ok(
            invoke(*args, "--by", "k", "--threads", "1")).stdout


def test_the_pool_names_the_overflow_the_scan_meets_first(invoke, tmp_path, pooled):
    """Two columns overflow in one batch: the error names the row met first (column b's,
    row 3), whatever thread finished first, as one thread does."""
    big = 2**62
    path = _parquet(tmp_path / "in.parquet", {"a": [1, 1, 1, big, big, big],
                                              "b": [1, big, big, 1, 1, 1]})
    results = [invoke("cumsum", path, "--to", "csv", "--threads", threads)
               for threads in ("1", "3", "16")]
    assert {(r.exit_code, r.stderr) for r in results} == {(1, results[0].stderr)}
    assert "row 3" in results[0].stderr and "'b'" in results[0].stderr


@pytest.mark.parametrize("usable, threads, pool", [
    (2, "2", False), (16, "2", False), (4, "4", True), (16, "16", True), (2, "16", False)])
def test_shorter_batches_go_to_the_pool_where_there_are_cores_to_spare(
        invoke, tmp_path, monkeypatch, usable, threads, pool):
    """Batches between POOL_ROWS_SPARE and POOL_ROWS rows: scanned on the pool from
    POOL_CORES usable cores and threads on, else on the thread that reads them; the same
    bytes either way. Batches of POOL_ROWS rows go to the pool on 2 cores too."""
    from cumtool import native

    monkeypatch.setattr(native, "USABLE", usable)
    monkeypatch.setattr(tables, "POOL_ROWS", 8)
    monkeypatch.setattr(tables, "POOL_ROWS_SPARE", 4)
    names = _scanning_threads(monkeypatch)
    path = _parquet(tmp_path / "in.parquet", {"a": list(range(12)), "b": [0.5] * 12})
    want = ok(invoke("cumsum", path, "--to", "csv", "--threads", "1")).stdout
    names.clear()
    assert ok(invoke("cumsum", path, "--to", "csv", "--batch-rows", "5", "--threads",
                     threads)).stdout == want
    assert any(name.startswith("cumtool-scan") for name in names) is pool
    names.clear()
    assert ok(invoke("cumsum", path, "--to", "csv", "--batch-rows", "8", "--threads",
                     threads)).stdout == want
    assert any(name.startswith("cumtool-scan") for name in names) is (
        native.ahead_workers(int(threads), 2) > 1)
