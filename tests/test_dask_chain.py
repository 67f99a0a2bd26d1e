"""--engine dask along the chain of carries (floats): each link is a call of the Folder
actor on the worker that read the partition, which folds the carry in C. The local
engine is the oracle: the same bytes, and the same `Error:` line when a link fails."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

distributed = pytest.importorskip(
    "distributed", reason="dask is not installed: pip install 'cumtool[dask]'")

from cumtool import distributed as engine  # noqa: E402
from cumtool.errors import DataError  # noqa: E402

# Every row group its own partition (and every 64 bytes of a CSV, unless a test says
# otherwise): conftest's tiny_partitions.
pytestmark = [pytest.mark.timeout(300), pytest.mark.usefixtures("tiny_partitions")]


@pytest.fixture
def data(tmp_path: Path) -> Path:
    rng = np.random.default_rng(4)
    rows = 500
    x = rng.normal(0, 10, rows)
    x[[3, 77, 201]] = [np.nan, -0.0, np.inf]
    y = rng.normal(1, 1e-3, rows)
    missing = [None if k % 9 == 4 else float(v) for k, v in enumerate(rng.normal(0, 1, rows))]
    path = tmp_path / "f.parquet"
    pq.write_table(pa.table({"x": x, "y": y, "m": pa.array(missing, pa.float64()),
                             "f32": x.astype(np.float32),
                             "i": pa.array(rng.integers(-9, 10, rows), pa.int64()),
                             "s": [f"t{k}" for k in range(rows)]}), path,
                   row_group_size=29)
    return path


@pytest.fixture
def folds(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Counts the links the Folder actors fold."""
    calls: list[int] = []
    fold = engine.Folder.fold

    def counted(self, *args):
        calls.append(1)
        return fold(self, *args)

    monkeypatch.setattr(engine.Folder, "fold", counted)
    return calls


def _both(invoke, scheduler: str, args: list[str]):
    local = invoke(*args)
    dask = invoke(*args, "--engine", "dask", "--scheduler", scheduler)
    assert (dask.exit_code, dask.stderr) == (local.exit_code, local.stderr)
    if local.exit_code == 0:
        assert dask.stdout_bytes == local.stdout_bytes
    return local


@pytest.mark.parametrize("args", [
    pytest.param(["cumsum"], id="cumsum-with-integers"),
    pytest.param(["cumprod", "-c", "y,m"], id="cumprod",
                 marks=pytest.mark.slow),
    pytest.param(["logcumsumexp", "-c", "x,y,m,f32"], id="logcumsumexp"),
    pytest.param(["cumsum", "--skipna", "--exclusive", "-c", "x,m"], id="skipna-exclusive",
                 marks=pytest.mark.slow),
    pytest.param(["cummean,cumsum", "-c", "x,i"], id="cummean-and-cumsum",
                 marks=pytest.mark.slow),
    pytest.param(["cumsum", "--dtype", "float32"], id="dtype-float32",
                 marks=pytest.mark.slow),
])
def test_links_fold_in_the_actors_and_give_the_local_bytes(invoke, scheduler, data, folds,
                                                           args):
    _both(invoke, scheduler, [args[0], str(data), "--to", "csv", *args[1:]])
    partitions = pq.ParquetFile(data).metadata.num_row_groups
    assert len(folds) == partitions - 1  # the last partition's carry is not wanted


@pytest.mark.parametrize("args", [
    pytest.param(["cummean", "-c", "x,y,m,f32,i"], id="cummean"),
    pytest.param(["cumvar", "--skipna", "-c", "x,m,i"], id="cumvar-skipna"),
    pytest.param(["cummean", "--compensated", "-c", "x,y,m,f32,i"], id="cummean-compensated"),
    pytest.param(["cummean", "--compensated", "--skipna", "-c", "x,m", "--batch-rows", "7"],
                 id="cummean-compensated-skipna-batches", marks=pytest.mark.slow),
    pytest.param(["cumstd,cummean", "--ddof", "0", "-c", "x,m", "--batch-rows", "7"],
                 id="cumstd-and-cummean-batches", marks=pytest.mark.slow),
    pytest.param(["ewma", "--span", "5", "-c", "x,y,m,i"], id="ewma"),
    pytest.param(["ewma", "--alpha", "0.3", "--no-adjust", "--skipna", "-c", "x,m"],
                 id="ewma-no-adjust-skipna", marks=pytest.mark.slow),
])
def test_statistics_links_fold_in_c_and_give_the_local_bytes(invoke, scheduler, data, folds,
                                                             monkeypatch, args):
    """The links of cummean (--compensated too), cumvar, cumstd and ewma fold in C
    (carries.fold_stats): no
    column is scanned in a link, and the bytes are the local engine's."""
    from cumtool import carries

    if carries.SEQUENTIAL is None:
        pytest.fail("the C extension _sequential is not built: run setup.py build_ext")
    folded: list[int] = []
    fold_stats = carries.fold_stats
    monkeypatch.setattr(carries, "fold_stats",
                        lambda *a: folded.append(len(a[0])) or fold_stats(*a))

    def scanned(*_args):
        raise AssertionError("a link scanned a column")

    monkeypatch.setattr(engine, "_scan_columns", scanned)
    _both(invoke, scheduler, [args[0], str(data), "--to", "csv", *args[1:]])
    partitions = pq.ParquetFile(data).metadata.num_row_groups
    assert len(folds) == partitions - 1
    columns = len(args[args.index("-c") + 1].split(","))
    assert sum(folded) == (partitions - 1) * columns * len(args[0].split(",")) * (
        1 if "--batch-rows" not in args else 5)  # 29-row partitions: 5 batches of 7 or less


@pytest.fixture
def in_tasks(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Counts the links folded by a task rather than by a Folder."""
    calls: list[int] = []
    fold = engine.fold_in_a_task

    def counted(*args):
        calls.append(1)
        return fold(*args)

    monkeypatch.setattr(engine, "fold_in_a_task", counted)
    return calls


def test_a_read_on_another_worker_is_folded_in_a_task(invoke, scheduler, data, monkeypatch,
                                                      in_tasks):
    """The scheduler may run a read elsewhere than asked (its worker lost, say): the actor
    does not find it and the link is folded by a task where the read is."""
    monkeypatch.setattr(engine.Folder, "fold", lambda self, *args: None)
    _both(invoke, scheduler, ["cumsum", str(data), "--to", "csv"])
    assert len(in_tasks) == pq.ParquetFile(data).metadata.num_row_groups - 1


@pytest.mark.slow
def test_worker_processes_fold_every_link_in_their_actors(data, in_tasks, tmp_path):
    """Worker processes (the plan, the job and the carries pickled): the reads are found on
    their Folders' workers, and the bytes are the local engine's. (A read the scheduler
    moves, stealing work, is folded in a task: allowed, but not for most links.)"""
    from cumtool.request import Request

    local = subprocess.run([sys.executable, "-m", "cumtool", "cumsum", str(data), "--to",
                            "csv"], capture_output=True, check=True).stdout
    out = tmp_path / "dask.csv"
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  **engine.QUIET_CLUSTER) as cluster:
        engine.run_paths(Request("cumsum", str(data), output=str(out), engine="dask",
                                 scheduler=cluster.scheduler_address), [str(data)])
    assert out.read_bytes() == local
    assert len(in_tasks) <= (pq.ParquetFile(data).metadata.num_row_groups - 1) // 4


def test_a_link_that_fails_alone_is_one_error_and_puts_nothing_in_place(
        invoke, scheduler, data, monkeypatch, tmp_path):
    """A fold that fails where the partition's scan does not (a fault): the run stops with
    one line, and no output is put in place."""
    fold = engine.fold_partition
    third = pq.ParquetFile(data).metadata.row_group(0).num_rows * 3

    def failing(job, part, read, state):
        if state[0]["rows_done"] >= third:
            raise DataError(f"{part.name}: the fold fails here")
        return fold(job, part, read, state)

    monkeypatch.setattr(engine, "fold_partition", failing)
    out = tmp_path / "out.parquet"
    result = invoke("cumsum", str(data), "-o", str(out), "--engine", "dask",
                    "--scheduler", scheduler)
    assert (result.exit_code, result.stderr) == (1, f"Error: {data}: the fold fails here\n")
    assert sorted(os.listdir(tmp_path)) == ["f.parquet"]


def test_a_fault_in_a_link_names_the_partitions_file(invoke, scheduler, data, monkeypatch):
    def broken(*_args):
        raise ZeroDivisionError("a fault inside the fold")

    monkeypatch.setattr(engine, "fold_partition", broken)
    result = invoke("cumsum", str(data), "--engine", "dask", "--scheduler", scheduler)
    assert (result.exit_code, result.stderr) == (
        1, f"Error: {data}: a Dask task failed: ZeroDivisionError: a fault inside the "
           "fold\n")


def test_an_integer_overflow_in_a_mixed_chain(invoke, scheduler, tmp_path, folds):
    """Floats take the chain; the integer column beside them is advanced by its summary
    in each link, and its overflow is the local engine's line."""
    values = [1] * 200
    values[50], values[120] = 2**62, 2**62
    path = tmp_path / "o.parquet"
    pq.write_table(pa.table({"x": np.linspace(0, 1, 200), "n": pa.array(values, pa.int64())}),
                   path, row_group_size=20)
    local = _both(invoke, scheduler, ["cumsum", str(path)])
    assert local.exit_code == 1
    assert "column 'n', row 121:" in local.stderr
