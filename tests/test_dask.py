"""--engine dask: the same bytes as the local engine, for every op and option it supports,
on an in-process cluster (worker threads) with partitions made tiny so that every file is
cut into many; one test with worker processes (slow)."""

from __future__ import annotations

import gzip
import io
import math
import os
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from helpers import ok
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cumtool.formats import FileKind
from cumtool.formats.registry import FORMATS, PARTITIONINGS

distributed = pytest.importorskip(
    "distributed", reason="dask is not installed: pip install 'cumtool[dask]'")

from cumtool import distributed as engine  # noqa: E402
from cumtool.request import Request  # noqa: E402

# A scheduler that stops answering must fail its test, not hang the suite (one run here
# hung once waiting on a future, before the client kept its carries to the end).
pytestmark = pytest.mark.timeout(300)

OPS = ["cumsum", "cumprod", "cummax", "cummin", "logcumsumexp"]


def _floats(rows: int, seed: int) -> np.ndarray:
    values = np.random.default_rng(seed).normal(0, 1e3, rows)
    values[5] = np.nan
    values[7] = -0.0
    values[8] = 0.0
    values[20] = -0.0
    return values


def _table(rows: int = 300) -> pa.Table:
    ints = np.random.default_rng(1).integers(-50, 50, rows)
    # cumprod stays in range: about 30 factors of 2 or -2, the rest 1
    draws = np.random.default_rng(2).random(rows)
    small = np.where(draws < 0.05, 2, np.where(draws < 0.1, -2, 1))
    ties = np.repeat(np.arange(rows // 10), 10).astype(np.float64)[::-1].copy()
    missing = [None if i % 7 == 3 else float(i % 11) - 5.5 for i in range(rows)]
    return pa.table({
        "f": _floats(rows, 3),
        "i": pa.array(ints, pa.int64()),
        "p": pa.array(small, pa.int64()),
        "t": ties,
        "m": pa.array(missing, pa.float64()),
        "s": pa.array([f"x{i}" for i in range(rows)]),
        "f32": pa.array(_floats(rows, 4).astype(np.float32)),
    })


def _csv_text(table: pa.Table) -> str:
    lines = [",".join(table.column_names)]
    for row in table.to_pylist():
        cells = []
        for value in row.values():
            if value is None:
                cells.append("")
            elif isinstance(value, float) and math.isnan(value):
                cells.append("NaN")
            else:
                cells.append(repr(value) if isinstance(value, float) else str(value))
        lines.append(",".join(cells))
    return "\n".join(lines) + "\n"


@pytest.fixture
def parquet_file(tmp_path: Path) -> Path:
    path = tmp_path / "data.parquet"
    pq.write_table(_table(), path, row_group_size=37)
    return path


@pytest.fixture
def csv_file(tmp_path: Path) -> Path:
    path = tmp_path / "data.csv"
    path.write_text(_csv_text(_table()))
    return path


def _same(invoke, args: list[str], scheduler: str) -> bytes:
    local = invoke(*args)
    dask = invoke(*args, "--engine", "dask", "--scheduler", scheduler)
    assert local.exit_code == 0, local.stderr
    ok(dask)
    assert dask.stdout_bytes == local.stdout_bytes
    return dask.stdout_bytes


def _fitting(op: str, options: list[str]) -> list[str]:
    """cumprod of column i overflows int64 (an error, tested apart): leave it out."""
    return ["--exclude", "i"] if op == "cumprod" and "-c" not in options else []


OPTIONS = [
    pytest.param([], id="plain"),
    pytest.param(["--skipna"], id="skipna"),
    pytest.param(["--exclusive"], id="exclusive"),
    pytest.param(["--keep"], id="keep"),
    pytest.param(["--dtype", "float32"], id="dtype-float32"),
    pytest.param(["--overflow", "wrap", "-c", "i", "-c", "p"], id="wrap"),
    pytest.param(["--batch-rows", "5"], id="batch-rows-5"),
]


def _quick_cases(plain: Sequence[str] = OPS) -> list[object]:
    """Every op with every option, but the quick suite runs the plain case of the ops
    `plain` and cumsum in batches of 5 (CI runs them all): at 0.15 s to 0.7 s a case
    through a cluster, the whole product would be most of the quick suite's minute."""
    return [pytest.param(op, option.values[0], id=f"{op}-{option.id}",
                         marks=() if (option.id == "plain" and op in plain)
                         or (op, option.id) == ("cumsum", "batch-rows-5")
                         else pytest.mark.slow)
            for op in OPS for option in OPTIONS]


@pytest.mark.parametrize(("op", "options"), _quick_cases(("cumsum",)))
def test_parquet_row_groups_give_the_local_bytes(invoke, scheduler, tiny_partitions,
                                                 parquet_file, op, options):
    out = _same(invoke, [op, str(parquet_file), "--to", "csv", *options, *_fitting(op, options)],
                scheduler)
    assert out.count(b"\n") == 301


@pytest.fixture
def small_partitions(monkeypatch: pytest.MonkeyPatch) -> None:
    """About ten rows of the CSV file per partition, each cut in the middle of a row: 30
    tasks, not the 330 of 64-byte ones, which cost 6 s a case (those have a test below)."""
    monkeypatch.setattr(engine, "PARTITION_BYTES", 700)


@pytest.mark.parametrize(("op", "options"), _quick_cases(("cumsum",)))
def test_csv_byte_ranges_give_the_local_bytes(invoke, scheduler, small_partitions, csv_file,
                                              op, options):
    out = _same(invoke, [op, str(csv_file), *options, *_fitting(op, options)], scheduler)
    assert out.count(b"\n") == 301


@pytest.mark.parametrize("op", [pytest.param("cumsum", marks=pytest.mark.slow),
                                "cummax,logcumsumexp"])
def test_byte_ranges_shorter_than_a_row(invoke, scheduler, tiny_partitions, tmp_path, op):
    """64-byte partitions: most hold no start of a row, and so no row of their own."""
    path = tmp_path / "data.csv"
    path.write_text(_csv_text(_table(40)))
    out = _same(invoke, [op, str(path), "--skipna"], scheduler)
    assert out.count(b"\n") == 41


@pytest.mark.parametrize("op", [pytest.param("cummax", marks=pytest.mark.slow),
                                pytest.param("cummin", marks=pytest.mark.slow),
                                "cumsum,cummax", "cummin,logcumsumexp"])
@pytest.mark.parametrize("options", [
    pytest.param([], id="plain"),
    pytest.param(["--exclusive"], id="exclusive", marks=pytest.mark.slow),
    pytest.param(["--skipna"], id="skipna", marks=pytest.mark.slow),
])
def test_indices_and_several_ops(invoke, scheduler, tiny_partitions, parquet_file, op,
                                 options):
    out = _same(invoke, [op, str(parquet_file), "--indices", "--to", "csv", *options],
                scheduler)
    assert b"_index" in out.split(b"\n", 1)[0]


def test_parquet_output_holds_the_local_values(invoke, scheduler, tiny_partitions,
                                               parquet_file, tmp_path):
    local, dask = tmp_path / "local.parquet", tmp_path / "dask.parquet"
    ok(invoke("cumsum", str(parquet_file), "-o", str(local)))
    ok(invoke("cumsum", str(parquet_file), "-o", str(dask), "--engine", "dask",
              "--scheduler", scheduler))
    # repr: NaN equals NaN, and -0.0 differs from 0.0
    assert pq.read_table(dask).schema == pq.read_table(local).schema
    assert repr(pq.read_table(dask).to_pylist()) == repr(pq.read_table(local).to_pylist())


def test_the_scheduler_comes_from_the_environment(invoke, scheduler, tiny_partitions,
                                                  parquet_file, monkeypatch):
    monkeypatch.setenv("DASK_SCHEDULER_ADDRESS", scheduler)
    local = invoke("cumsum", str(parquet_file), "--to", "csv")
    dask = ok(invoke("cumsum", str(parquet_file), "--to", "csv", "--engine", "dask"))
    assert dask.stdout_bytes == local.stdout_bytes


# CSV boundaries --------------------------------------------------------------------------

def test_quoted_newlines_do_not_cut_a_record(invoke, scheduler, tiny_partitions, write_file):
    rows = ["id,note,x"]
    for i in range(60):
        note = f'"line one\nline ""two"", {i}\n\nend"' if i % 3 == 0 else f"plain {i}"
        rows.append(f"{i},{note},{i * 0.1}")
    path = write_file("quoted.csv", "\r\n".join(rows) + "\r\n")
    out = _same(invoke, ["cumsum", str(path), "-c", "x"], scheduler)
    assert out.count(b'"line one') == 20
    with distributed.Client(scheduler) as client:
        parts = engine.split_file(client, Request("cumsum", str(path)), str(path),
                                  FileKind("csv"))
    assert len(parts) > 10
    data = path.read_bytes()
    for part in parts[1:]:  # each starts right after a record's end, outside quotes
        assert data[part.start - 2:part.start] == b"\r\n"
        assert data[:part.start].count(b'"') % 2 == 0


def test_no_header_byte_ranges(invoke, scheduler, tiny_partitions, write_file):
    path = write_file("nh.csv", "".join(f"{i},{i * 1.5}\n" for i in range(80)))
    _same(invoke, ["cumsum", str(path), "--no-header"], scheduler)


def test_a_bad_cell_names_its_row_in_the_file(invoke, scheduler, write_file, monkeypatch):
    """Beyond the 10,000 rows that say what a column holds, in a later partition."""
    monkeypatch.setattr(engine, "PARTITION_BYTES", 16 << 10)
    lines = ["a,b"] + [f"{i},{i}" for i in range(12000)]
    lines[11077] = "11076,oops"
    path = write_file("bad.csv", "\n".join(lines) + "\n")
    local = invoke("cumsum", str(path))
    dask = invoke("cumsum", str(path), "--engine", "dask", "--scheduler", scheduler)
    assert local.exit_code == dask.exit_code == 1
    assert "row 11077 (line 11078), column 'b'" in local.stderr
    assert dask.stderr == local.stderr


def test_a_ragged_row_without_header(invoke, scheduler, tiny_partitions, write_file):
    lines = [f"{i},{i}" for i in range(100)]
    lines[60] = "1,2,3"
    path = write_file("ragged.csv", "\n".join(lines) + "\n")
    local = invoke("cumsum", str(path), "--no-header")
    dask = invoke("cumsum", str(path), "--no-header", "--engine", "dask",
                  "--scheduler", scheduler)
    assert local.exit_code == dask.exit_code == 1
    assert dask.stderr == local.stderr


# Errors in input order -------------------------------------------------------------------

def test_the_first_overflow_in_file_order_is_reported(invoke, scheduler, tiny_partitions,
                                                      tmp_path):
    """Each of two later row groups overflows on its own (a partition summed alone would
    report the last one's); only the running total reaches int64's end first at row 150."""
    big = 2**62
    values = [1] * 400
    values[100] = big
    values[149] = big  # the running total passes 2**63 - 1 here, row 150
    values[300] = big
    values[301] = big  # this row group overflows alone
    values[302] = big
    path = tmp_path / "o.parquet"
    pq.write_table(pa.table({"n": pa.array(values, pa.int64())}), path, row_group_size=50)
    local = invoke("cumsum", str(path))
    dask = invoke("cumsum", str(path), "--engine", "dask", "--scheduler", scheduler)
    assert local.exit_code == dask.exit_code == 1
    assert "row 150" in local.stderr
    assert dask.stderr == local.stderr


@pytest.mark.parametrize("name", ["late.csv", "late.csv.gz"])
def test_an_overflow_names_its_line_as_the_local_engine(invoke, scheduler, small_partitions,
                                                       tmp_path, name):
    """In a later partition of a CSV with blank lines and newlines in quotes (and in a
    .csv.gz, read whole): "row 241 (line 268)", not "row 241"."""
    rows = ["id,note,x"]
    for i in range(300):
        note = '"two\nlines"' if i % 17 == 0 else "n"
        rows.append(f"{i},{note},{2**62 if i in (200, 240) else 1}")
        if i % 23 == 0:
            rows.append("")
    text = ("\n".join(rows) + "\n").encode()
    path = tmp_path / name
    path.write_bytes(gzip.compress(text) if name.endswith(".gz") else text)
    local = invoke("cumsum", str(path), "-c", "x")
    dask = invoke("cumsum", str(path), "-c", "x", "--engine", "dask", "--scheduler", scheduler)
    assert (dask.exit_code, dask.stderr) == (local.exit_code, local.stderr) == (
        1, f"Error: {path}: column 'x', row 241 (line 268): cumsum overflows int64 (adding "
           "4611686018427387904); use --overflow wrap for wrap-around\n")


def test_a_failed_run_leaves_the_output_as_it_was(invoke, scheduler, tiny_partitions,
                                                  tmp_path):
    path = tmp_path / "o.parquet"
    pq.write_table(pa.table({"n": pa.array([2**62] * 4 + [1] * 100, pa.int64())}), path,
                   row_group_size=10)
    out = tmp_path / "out.csv"
    out.write_text("precious\n")
    result = invoke("cumsum", str(path), "-o", str(out), "--engine", "dask",
                    "--scheduler", scheduler)
    assert result.exit_code == 1
    assert out.read_text() == "precious\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["o.parquet", "out.csv"]


# Empty partitions and lists of files -----------------------------------------------------

def test_empty_row_groups(invoke, scheduler, tiny_partitions, tmp_path):
    path = tmp_path / "e.parquet"
    table = pa.table({"x": pa.array([1.5, -0.0, 2.25, float("nan")]), "s": ["a", "b", "c", "d"]})
    with pq.ParquetWriter(path, table.schema) as writer:
        writer.write_table(table.slice(0, 0))
        writer.write_table(table.slice(0, 2))
        writer.write_table(table.slice(0, 0))
        writer.write_table(table.slice(2))
    assert pq.ParquetFile(path).metadata.num_row_groups >= 3
    out = _same(invoke, ["cumsum", str(path), "--to", "csv"], scheduler)
    assert out == b"x,s\n1.5,a\n1.5,b\n3.75,c\nNaN,d\n"


def _files(tmp_path: Path) -> list[str]:
    table = _table(120)
    names = []
    for k, (start, rows) in enumerate([(0, 50), (50, 0), (50, 70)]):
        part = tmp_path / "in" / f"p-{k}.parquet"
        part.parent.mkdir(exist_ok=True)
        piece = table.slice(start, rows)
        if rows == 0:  # an empty file's text column reads back as type null
            piece = pa.table({n: pa.nulls(0, pa.null() if n == "s" else c.type)
                              for n, c in zip(table.column_names, table.columns, strict=True)})
        pq.write_table(piece, part, row_group_size=16)
        names.append(str(part))
    pq.write_table(table, tmp_path / "whole.parquet")
    return names


def _request(op: str, scheduler: str, **options) -> Request:
    return Request(op, output=options.pop("output", None), engine="dask", scheduler=scheduler,
                   **options)


@pytest.mark.parametrize("op", [op if op == "cumsum" else pytest.param(op, marks=pytest.mark.slow)
                                for op in OPS])
def test_a_list_of_files_is_one_stream(scheduler, tiny_partitions, tmp_path, op, capfdbinary):
    names = _files(tmp_path)
    whole = tmp_path / "whole.csv"
    out = tmp_path / "list.csv"
    from cumtool.engine import run

    wrap = {"overflow": "wrap"} if op == "cumprod" else {}
    run(Request(op, str(tmp_path / "whole.parquet"), output=str(whole), **wrap))
    engine.run_paths(_request(op, scheduler, output=str(out), **wrap), names)
    assert out.read_bytes() == whole.read_bytes()


def test_a_list_of_files_to_a_folder(scheduler, tmp_path):
    names = _files(tmp_path)
    folder = tmp_path / "out"
    engine.run_paths(_request("cumsum", scheduler), names, output_dir=str(folder))
    assert sorted(os.listdir(folder)) == ["p-0.parquet", "p-1.parquet", "p-2.parquet"]
    got = pa.concat_tables([pq.read_table(folder / f"p-{k}.parquet") for k in range(3)],
                           promote_options="permissive")
    from cumtool.engine import run

    run(Request("cumsum", str(tmp_path / "whole.parquet"), output=str(tmp_path / "w.parquet")))
    want = pq.read_table(tmp_path / "w.parquet")
    assert repr(got.select(["f", "i"]).to_pylist()) == repr(want.select(["f", "i"]).to_pylist())


def test_a_failed_list_leaves_the_folder_as_it_was(scheduler, tmp_path):
    names = _files(tmp_path)
    other = tmp_path / "in" / "z.parquet"
    pq.write_table(pa.table({"n": pa.array([2**62] * 4, pa.int64())}), other)
    folder = tmp_path / "out"
    folder.mkdir()
    (folder / "p-0.parquet").write_bytes(b"old")
    from cumtool.errors import DataError

    with pytest.raises(DataError, match="differ from those of"):
        engine.run_paths(_request("cumsum", scheduler), [*names, str(other)],
                         output_dir=str(folder))
    assert os.listdir(folder) == ["p-0.parquet"]
    assert (folder / "p-0.parquet").read_bytes() == b"old"


def test_each_file_names_its_own_rows(scheduler, tmp_path):
    first, second = tmp_path / "a.csv", tmp_path / "b.csv"
    first.write_text("n\n1\n2\n")
    second.write_text("n\n3\nx\n")
    from cumtool.errors import DataError

    with pytest.raises(DataError, match=r"^.*b\.csv: row 2 \(line 3\), column 'n'"):
        engine.run_paths(_request("cumsum", scheduler, output=str(tmp_path / "o.csv")),
                         [str(first), str(second)])


@pytest.mark.parametrize("given", [
    pytest.param(lambda d: [str(d)], id="folder"),
    pytest.param(lambda d: [str(d / "p-*.csv")], id="glob"),
    pytest.param(lambda d: [str(d / "p-1.csv"), str(d / "p-2.csv"), str(d / "p-10.csv")],
                 id="files"),
])
def test_globs_folders_and_lists_as_the_local_engine_reads_them(invoke, scheduler, tmp_path,
                                                              given):
    folder = tmp_path / "drops"
    folder.mkdir()
    for name, text in {"p-1.csv": "x,y\n1,0.1\n2,0.2\n", "p-2.csv": "x,y\n3,0.3\n",
                       "p-10.csv": "x,y\n4,0.4\n"}.items():
        (folder / name).write_text(text)
    out = _same(invoke, ["cumsum", *given(folder)], scheduler)
    # natural order: p-10 last
    assert out == b"x,y\n1,0.1\n3,0.30000000000000004\n6,0.6000000000000001\n10,1.0\n"


def test_one_output_per_input_into_a_folder(invoke, scheduler, tmp_path):
    folder = tmp_path / "drops"
    folder.mkdir()
    (folder / "a.csv").write_text("x\n1\n2\n")
    (folder / "b.csv").write_text("x\n3\n")
    ok(invoke("cumsum", str(folder), "--engine", "dask", "--scheduler", scheduler,
              "-o", f"{tmp_path / 'out'}/"))
    assert (tmp_path / "out" / "a.csv").read_text() == "x\n1\n3\n"
    assert (tmp_path / "out" / "b.csv").read_text() == "x\n6\n"


# Every output format: the local engine's bytes, or its schema and values ------------------

def _output(path: Path, fmt: str) -> object:
    """What an output holds: its bytes for a text format (and .npy, whose header is its
    dtype and shape); for Arrow and Parquet its schema and each column's cells (the
    batches' sizes follow the partitions): which are missing, and the bits of the rest
    (NaN's payload, -0.0), or a text column's strings."""
    if fmt == "parquet":
        table = pq.read_table(path)
    elif fmt in ("arrow", "arrows"):
        with pa.memory_map(str(path)) as source:
            reader = pa.ipc.open_file(source) if fmt == "arrow" else pa.ipc.open_stream(source)
            table = reader.read_all()
    else:
        return path.read_bytes()
    return table.schema, [_cells_held(column.combine_chunks()) for column in table.columns]


def _cells_held(column: pa.Array) -> object:
    missing = column.is_null().to_pylist()
    if pa.types.is_integer(column.type) or pa.types.is_floating(column.type):
        bits = column.fill_null(0).to_numpy(zero_copy_only=False)
        return missing, bits.view(f"u{bits.dtype.itemsize}").tolist()
    return missing, column.to_pylist()


# Every file format cumtool writes, from the format registry: a new one is tested here
# with no change (the terminal table and the chart are views, not files to compare).
OUTPUTS = [f.name for f in FORMATS if f.writes and f.kind != "view"]


def test_the_outputs_are_the_registrys_files() -> None:
    assert OUTPUTS == ["csv", "tsv", "parquet", "npy", "jsonl", "arrow", "arrows"]


def _inputs(folder: Path, fmt: str) -> list[Path]:
    """Two CSV files whose first column (an integer) is not scanned: a typed output keeps
    it a number. .npy holds numbers only: no text column there."""
    folder.mkdir()
    paths = []
    for k, rows in enumerate((range(0, 30), range(30, 45))):
        text = "id,units,score" + ("" if fmt == "npy" else ",name") + "\n"
        for i in rows:
            text += f"{i},{i % 7 - 2},{i / 4}" + ("" if fmt == "npy" else f",n{i}") + "\n"
        path = folder / f"in-{k}.csv"
        path.write_text(text)
        paths.append(path)
    return paths


def _mixed(rows: int = 40) -> str:
    """A table of every kind of column: an integer id (not scanned), text (quoted where it
    holds a comma; some cells missing), integers and floats with missing cells, NaN, -0.0
    and a float that needs all 17 digits."""
    lines = ["id,name,units,price"]
    for i in range(rows):
        name = "" if i % 9 == 4 else f'"n{i}, x"' if i % 5 == 0 else f"n{i}"
        units = "" if i % 7 == 3 else str(i % 11 - 5)
        price = ("" if i % 6 == 2 else "NaN" if i == 13 else "-0.0" if i == 17
                 else "0.1" if i % 4 == 1 else repr(i / 3 - 4))
        lines.append(f"{i},{name},{units},{price}")
    return "\n".join(lines) + "\n"


@pytest.mark.parametrize("fmt", OUTPUTS)
@pytest.mark.parametrize("options", [
    pytest.param(["-c", "units,price"], id="text-passes"),
    pytest.param(["-c", "units,price", "--only-scanned"], id="only-scanned"),
    pytest.param(["-c", "units,price", "--keep"], id="keep"),
    pytest.param([], id="every-number"),
])
@pytest.mark.parametrize("cut", ["tiny", "whole"])
def test_every_output_format_holds_the_local_output(invoke, scheduler, monkeypatch, tmp_path,
                                                    fmt, options, cut):
    """Each output format from a table of text, integers and floats with missing cells,
    and from one whose output columns are all scanned numbers (--only-scanned; every
    column a number): the local engine's error, or its output. Cut into partitions of
    64 bytes, Arrow and Parquet hold the same cells in other batches (a batch per
    partition); read in one partition, every format is the local engine's bytes."""
    if cut == "tiny":
        monkeypatch.setattr(engine, "PARTITION_BYTES", 64)
    path = tmp_path / "in.csv"
    # Every column a number, none missing: .npy holds it too.
    path.write_text(_mixed() if options else "x,y\n1,2\n3,4\n-5,0.5\n7,-0.0\n")
    local, dask = tmp_path / f"local.{fmt}", tmp_path / f"dask.{fmt}"
    done = invoke("cumsum", str(path), *options, "-o", str(local))
    result = invoke("cumsum", str(path), *options, "-o", str(dask), "--engine", "dask",
                    "--scheduler", scheduler)
    assert (result.exit_code, result.stderr) == (done.exit_code, done.stderr)
    if done.exit_code == 0 and cut == "whole":
        assert dask.read_bytes() == local.read_bytes()
    elif done.exit_code == 0:
        assert _output(dask, fmt) == _output(local, fmt)
    else:  # .npy holds numbers only, none missing
        assert fmt == "npy" and not dask.exists()


@pytest.mark.parametrize("fmt", OUTPUTS)
def test_every_output_format_several_inputs_to_one_output(invoke, scheduler, tiny_partitions,
                                                          tmp_path, fmt):
    inputs = [str(p) for p in _inputs(tmp_path / "in", fmt)]
    local, dask = tmp_path / f"local.{fmt}", tmp_path / f"dask.{fmt}"
    ok(invoke("cumsum", *inputs, "-c", "units", "-o", str(local)))
    ok(invoke("cumsum", *inputs, "-c", "units", "-o", str(dask), "--engine", "dask",
              "--scheduler", scheduler))
    assert _output(dask, fmt) == _output(local, fmt)


@pytest.mark.parametrize("fmt", OUTPUTS)
def test_every_output_format_one_output_per_input(invoke, scheduler, tmp_path, fmt):
    inputs = [str(p) for p in _inputs(tmp_path / "in", fmt)]
    for engine_name in ("local", "dask"):
        ok(invoke("cumsum", *inputs, "-c", "units", "--to", fmt, "-o",
                  f"{tmp_path / engine_name}/", "--engine", engine_name,
                  *(["--scheduler", scheduler] if engine_name == "dask" else [])))
    names = [f"in-0.{fmt}", f"in-1.{fmt}"]
    assert sorted(os.listdir(tmp_path / "dask")) == sorted(os.listdir(tmp_path / "local"))
    assert sorted(os.listdir(tmp_path / "dask")) == names
    for name in names:
        assert _output(tmp_path / "dask" / name, fmt) == _output(tmp_path / "local" / name, fmt)


# Every input format: read by the registry's partitioning, the local engine's output --------

# Each format Dask reads, as the registry declares how (cumtool.formats.Partitioning).
READABLE = list(PARTITIONINGS)


def test_the_readable_formats_are_the_registrys_tables() -> None:
    assert READABLE == ["csv", "tsv", "parquet", "jsonl", "arrow", "arrows", "xlsx", "xls",
                        "ods"]
    assert {name: p.how for name, p in PARTITIONINGS.items()
            if p.how != "whole files"} == {"csv": "byte ranges", "tsv": "byte ranges",
                                           "parquet": "row groups"}


def _rows(start: int, stop: int) -> list[list[object]]:
    """Text, integers and floats, each with missing cells (NaN too where it can be)."""
    return [[f"n{i}" if i % 5 != 2 else None, i % 9 - 4 if i % 7 != 3 else None,
             None if i % 6 == 2 else 0.1 if i % 4 == 1 else i / 3 - 4]
            for i in range(start, stop)]


def _write_input(path: Path, fmt: str, rows: list[list[object]]) -> None:
    import json

    names = ["name", "units", "price"]
    table = pa.table({n: pa.array([r[k] for r in rows],
                                  [pa.string(), pa.int64(), pa.float64()][k])
                      for k, n in enumerate(names)})
    if fmt in ("csv", "tsv"):
        sep = "," if fmt == "csv" else "\t"
        path.write_text("".join(sep.join("" if c is None else str(c) for c in r) + "\n"
                                for r in [names, *rows]))
    elif fmt == "parquet":
        pq.write_table(table, path, row_group_size=4)
    elif fmt == "jsonl":
        path.write_text("".join(json.dumps(dict(zip(names, r, strict=True))) + "\n"
                                for r in rows))
    elif fmt in ("arrow", "arrows"):
        open_ipc = pa.ipc.new_file if fmt == "arrow" else pa.ipc.new_stream
        with open_ipc(path, table.schema) as writer:
            writer.write_table(table, max_chunksize=4)
    elif fmt == "xlsx":
        pytest.importorskip("openpyxl")
        from test_excel import xlsx

        xlsx(path, {"Data": [names, *rows]})
    elif fmt == "ods":
        from test_excel import ods

        path.write_bytes(ods([names, *rows]))
    else:  # a format added to the registry gets a writer here
        raise AssertionError(f"no {fmt} writer in this test")


# xls: nothing here writes the old binary format; fastexcel reads it as it reads xlsx
# and ods, which run.
@pytest.mark.parametrize("fmt", [fmt for fmt in READABLE if fmt != "xls"])
def test_every_input_format_gives_the_local_output(invoke, scheduler, tiny_partitions,
                                                   tmp_path, fmt):
    """Two files of each readable format as one stream, and one output per input: the
    local engine's bytes (partitions of 64 bytes: CSV cut in byte ranges, Parquet a
    partition per row group)."""
    if fmt in ("xlsx", "xls", "ods"):
        pytest.importorskip("fastexcel")
    folder = tmp_path / "in"
    folder.mkdir()
    paths = [folder / f"a.{fmt}", folder / f"b.{fmt}"]
    _write_input(paths[0], fmt, _rows(0, 23))
    _write_input(paths[1], fmt, _rows(23, 40))
    inputs = [str(p) for p in paths]
    common = ["cumsum", *inputs, "-c", "units,price", "--to", "csv"]
    _same(invoke, common, scheduler)
    for engine_name in ("local", "dask"):
        ok(invoke(*common, "-o", f"{tmp_path / engine_name}/", "--engine", engine_name,
                  *(["--scheduler", scheduler] if engine_name == "dask" else [])))
    for name in ("a.csv", "b.csv"):
        assert (tmp_path / "dask" / name).read_bytes() == (tmp_path / "local" / name
                                                            ).read_bytes()
    assert sorted(os.listdir(tmp_path / "dask")) == ["a.csv", "b.csv"]


def test_json_lines_nulls_and_absent_keys(invoke, scheduler, tmp_path):
    """A JSON Lines column with both null and absent cells: written back to JSON Lines
    row by row only by the local engine (its reader hands the writer which was which), so
    Dask refuses that by name; to any other format it gives the local engine's bytes."""
    path = tmp_path / "n.jsonl"
    path.write_text('{"a": 1, "b": 2}\n{"a": null, "b": 3}\n{"b": 4}\n')
    refused = invoke("cumsum", str(path), "-o", str(tmp_path / "d.jsonl"), "--engine", "dask",
                     "--scheduler", scheduler)
    assert (refused.exit_code, refused.stderr) == (
        2, f"Error: {path}: column 'a' holds both null and absent values, which --engine "
           "dask cannot write back to JSON Lines row by row; run it on the local engine "
           "(--engine local), or write another format\n")
    assert sorted(os.listdir(tmp_path)) == ["n.jsonl"]
    assert _same(invoke, ["cumsum", str(path), "--to", "csv"], scheduler) == (
        b"a,b\n1,2\n,5\n,9\n")


@pytest.mark.parametrize("to", ["file", "folder"])
def test_a_read_failure_in_a_worker_is_the_local_engines_line(invoke, scheduler, tmp_path,
                                                              to):
    """A later file that does not parse, read whole by a worker: the local engine's one
    line naming it, exit 1, and no output nor staging folder left."""
    first, second = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    first.write_text('{"x": 1}\n{"x": 2}\n')
    second.write_text('{"x": 3}\nnot json\n')
    where = ["-o", str(tmp_path / "out.csv")] if to == "file" else [
        "-o", f"{tmp_path / 'drop'}/"]
    common = ["cumsum", str(first), str(second), *where]
    local = invoke(*common)
    dask = invoke(*common, "--engine", "dask", "--scheduler", scheduler)
    assert (dask.exit_code, dask.stderr) == (local.exit_code, local.stderr) == (
        1, f"Error: {second}: line 2 is not JSON: Expecting value (at character 1)\n")
    assert sorted(os.listdir(tmp_path)) == ["a.jsonl", "b.jsonl"]


@pytest.mark.parametrize("to", ["file", "folder"])
def test_a_writers_failure_is_the_local_engines_line(invoke, scheduler, tmp_path, to):
    """A writer's own failure (--na-rep € in latin-1: UnicodeEncodeError), on the client
    (one output) or in a worker (one output per input): the local engine's line."""
    source = tmp_path / "e.csv"
    source.write_text("a,b\n1,\n2,3\n")
    where = ["-o", str(tmp_path / "out.csv")] if to == "file" else [
        "-o", f"{tmp_path / 'drop'}/"]
    common = ["cumsum", str(source), "--encoding", "latin-1", "--na-rep", "€", *where]
    local = invoke(*common)
    dask = invoke(*common, "--engine", "dask", "--scheduler", scheduler)
    named = tmp_path / ("out.csv" if to == "file" else "drop/e.csv")
    assert (dask.exit_code, dask.stderr) == (local.exit_code, local.stderr) == (
        1, f"Error: cannot write {named}: '\u20ac' (U+20AC) cannot be written in latin-1, "
           "the output's encoding; choose one that has it (--out-encoding utf-8)\n")
    assert sorted(os.listdir(tmp_path)) == ["e.csv"]  # nor the folder -o DIR/ would make


@pytest.mark.parametrize("to", ["file", "folder", "new-folder"])
def test_a_fault_inside_a_task_is_one_line_naming_the_partitions_file(
        invoke, scheduler, tmp_path, monkeypatch, to):
    """An exception no layer words, raised in a worker's scan task (worker threads here:
    the patched function is theirs too) for the second file, is one line naming that
    file, never a traceback; nothing is written: a folder that was there holds what it
    held, one the run would make is not left, nor is the staging folder."""
    first, source = tmp_path / "a.csv", tmp_path / "e.csv"
    first.write_text("a,b\n0,1\n")
    source.write_text("a,b\n1,2\n2,3\n")
    scan = engine.scan_partition

    def broken(job, part, *args):
        if part.name == str(source):
            raise ZeroDivisionError("a fault inside the scan")
        return scan(job, part, *args)

    monkeypatch.setattr(engine, "scan_partition", broken)
    drop = tmp_path / "drop"
    if to == "folder":
        drop.mkdir()
        (drop / "a.csv").write_text("old\n")
    where = str(tmp_path / "out.csv") if to == "file" else f"{drop}/"
    result = invoke("cumsum", str(first), str(source), "--engine", "dask", "--scheduler",
                    scheduler, "-o", where)
    assert (result.exit_code, result.stderr) == (
        1, f"Error: {source}: a Dask task failed: ZeroDivisionError: a fault inside the "
           "scan\n")
    if to == "folder":
        assert os.listdir(drop) == ["a.csv"]
        assert (drop / "a.csv").read_text() == "old\n"
        drop.joinpath("a.csv").unlink()
        drop.rmdir()
    assert sorted(os.listdir(tmp_path)) == ["a.csv", "e.csv"]


# What it refuses --------------------------------------------------------------------------

@pytest.mark.parametrize("args, message", [
    pytest.param(["--by", "s"], "--by is not supported with --engine dask", id="by"),
    pytest.param(["--reset", "i"], "--reset is not supported with --engine dask", id="reset"),
    pytest.param(["--reverse"], "--reverse is not supported with --engine dask", id="reverse"),
    pytest.param(["--axis", "columns"], "--axis columns is not supported with --engine dask",
                 id="axis-columns"),
    pytest.param(["--state", "s.json"], "--state is not supported with --engine dask",
                 id="state"),
    pytest.param(["--filename-column", "f"],
                 "--filename-column is not supported with --engine dask", id="filename-column"),
])
def test_refused_options(invoke, parquet_file, args, message):
    result = invoke("cumsum", str(parquet_file), "--engine", "dask", *args)
    assert result.exit_code == 2
    assert result.stderr.splitlines()[0] == (
        f"Error: {message}; run it on the local engine (--engine local)"
        if "axis" not in message else
        f"Error: {message}: rows are independent, run it on the local engine")


def test_standard_input_is_refused(invoke):
    result = invoke("cumsum", "-", "--engine", "dask", input="a\n1\n")
    assert result.exit_code == 2
    assert result.stderr == ("Error: --engine dask reads files or URLs, which its workers open "
                             "themselves; it cannot read standard input\n")


def test_arrays_are_refused(invoke, write_file):
    buffer = io.BytesIO()
    np.save(buffer, np.arange(3))
    path = write_file("a.npy", buffer.getvalue())
    result = invoke("cumsum", str(path), "--engine", "dask")
    assert result.exit_code == 2
    assert result.stderr == (f"Error: --engine dask scans tables ({', '.join(PARTITIONINGS)}); "
                             f"{path} is an array: run it on the local engine\n")


def test_scheduler_needs_the_dask_engine(invoke, parquet_file):
    result = invoke("cumsum", str(parquet_file), "--scheduler", "tcp://127.0.0.1:1")
    assert result.exit_code == 2
    assert result.stderr == "Error: --scheduler names a Dask scheduler: use it with --engine dask\n"


def test_an_unreachable_scheduler_is_one_error(invoke, parquet_file, monkeypatch):
    monkeypatch.setattr(engine, "CONNECT_TIMEOUT", "1s")  # 10 s for users
    result = invoke("cumsum", str(parquet_file), "--engine", "dask", "--scheduler",
                    "tcp://127.0.0.1:9")
    assert result.exit_code == 1
    assert result.stderr.startswith("Error: cannot reach the Dask scheduler at tcp://127.0.0.1:9")
    assert len(result.stderr.splitlines()) == 1


def test_the_plain_cli_does_not_import_dask_or_fsspec():
    code = ("import sys\nfrom cumtool.cli import main\n"
            "try:\n    main(['cumsum', '--help'])\nexcept SystemExit:\n    pass\n"
            "print([m for m in ('dask', 'distributed', 'fsspec', 's3fs') if m in sys.modules])")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True)
    assert done.stdout.strip().splitlines()[-1] == "[]"


@pytest.mark.slow
def test_worker_processes(tmp_path):
    """A LocalCluster of worker processes (the default without a scheduler): the plan and
    the carried state cross process boundaries pickled."""
    path = tmp_path / "d.parquet"
    pq.write_table(_table(2000), path, row_group_size=100)
    env = {**os.environ, "DASK_SCHEDULER_ADDRESS": ""}
    common = [sys.executable, "-m", "cumtool", "cummax,cumsum", str(path), "--indices",
              "--to", "csv"]
    local = subprocess.run(common, capture_output=True, check=True, env=env)
    # Worker processes are spawned: they import the main module again, so it is guarded.
    code = ("import sys\nfrom cumtool import distributed\ndistributed.PARTITION_BYTES = 1024\n"
            "from cumtool.cli import main\nif __name__ == '__main__':\n    main(sys.argv[1:])\n")
    script = tmp_path / "run.py"
    script.write_text(code)
    dask = subprocess.run([sys.executable, str(script), *common[3:], "--engine", "dask"],
                          capture_output=True, check=True, env=env, timeout=300)
    assert dask.stdout == local.stdout
    assert dask.stdout.count(b"\n") == 2001


# A property: any cut gives the same bytes --------------------------------------------------

_cells = st.one_of(
    st.floats(allow_nan=True, allow_infinity=False, width=64).map(repr),
    st.sampled_from(["", "NA", '"quoted, with comma"', '"two\nlines"', '"say ""hi"""']))


@settings(max_examples=15, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(rows=st.lists(st.tuples(_cells, _cells), min_size=1, max_size=60),
       size=st.integers(min_value=8, max_value=300),
       op=st.sampled_from(["cumsum", "cummax", "cumsum,cummin"]))
def test_any_cut_of_a_csv_gives_the_local_bytes(invoke, scheduler, tmp_path, rows, size, op):
    text = "x,note\n" + "".join(f"{a},{b}\n" for a, b in rows)
    path = tmp_path / "p.csv"
    path.write_text(text)
    previous = engine.PARTITION_BYTES
    engine.PARTITION_BYTES = size
    try:
        local = invoke(op, str(path), "-c", "x")
        dask = invoke(op, str(path), "-c", "x", "--engine", "dask", "--scheduler", scheduler)
    finally:
        engine.PARTITION_BYTES = previous
    assert (dask.exit_code, dask.stderr) == (local.exit_code, local.stderr)
    if local.exit_code == 0:
        assert dask.stdout_bytes == local.stdout_bytes


def test_a_folder_of_subfolders_is_named_as_the_local_engine_names_it(invoke, scheduler,
                                                                      tmp_path):
    data = tmp_path / "data" / "2024"
    data.mkdir(parents=True)
    (data / "x.csv").write_bytes(b"a\n1\n2\n")
    (data / "y.csv").write_bytes(b"a\n3\n")
    local = invoke("cumsum", str(tmp_path / "data"), "-o", str(tmp_path / "local") + "/")
    dask = invoke("cumsum", str(tmp_path / "data"), "-o", str(tmp_path / "dask") + "/",
                  "--engine", "dask", "--scheduler", scheduler)
    assert (local.exit_code, dask.exit_code) == (0, 0)
    for name in ("2024/x.csv", "2024/y.csv"):
        assert (tmp_path / "dask" / name).read_bytes() == (tmp_path / "local" / name
                                                            ).read_bytes()
    assert (tmp_path / "dask" / "2024" / "x.csv").read_bytes() == b"a\n1\n3\n"


def test_two_inputs_of_one_name_are_refused_as_the_local_engine_refuses_them(
        invoke, scheduler, tmp_path):
    for sub, value in (("a", b"1"), ("b", b"2")):
        (tmp_path / sub).mkdir()
        (tmp_path / sub / "z.csv").write_bytes(b"a\n" + value + b"\n")
    args = [str(tmp_path / "a" / "z.csv"), str(tmp_path / "b" / "z.csv"), "-o",
            str(tmp_path / "out") + "/"]
    local = invoke("cumsum", *args)
    dask = invoke("cumsum", *args, "--engine", "dask", "--scheduler", scheduler)
    assert local.exit_code == dask.exit_code == 2
    assert local.stderr == dask.stderr == (
        f"Error: -o {tmp_path / 'out'}/ would write z.csv twice: from "
        f"{tmp_path / 'a' / 'z.csv'} and from {tmp_path / 'b' / 'z.csv'}\n")
    assert not (tmp_path / "out").exists()


def test_a_late_decimal_is_scanned_again_as_locally(invoke, scheduler, small_partitions,
                                                    tmp_path):
    """A decimal after the judged rows, in a later partition: to a file, the run scans the
    input again with that column as float64, as the local engine does; to standard
    output, the local error. It was a Dask task's TypeError (the error could not be
    rebuilt with its row counted from the file's start), naming no row or column."""
    path = tmp_path / "late.csv"
    path.write_text("x\n" + "1\n" * 10000 + "1.5\n")
    outputs = {}
    for engine_flags in ([], ["--engine", "dask", "--scheduler", scheduler]):
        target = tmp_path / f"out{len(engine_flags)}.csv"
        result = invoke("cumsum", str(path), "-o", str(target), *engine_flags)
        assert (result.exit_code, result.stderr) == (0, (
            f"note: {path}: row 10001 (line 10002), column 'x': '1.5' is not an integer "
            "like the first rows; scanning the input again with that column read as "
            "float64\n"))
        outputs[len(engine_flags)] = target.read_bytes()
        piped = invoke("cumsum", str(path), *engine_flags)
        assert piped.exit_code == 1
        assert piped.stderr == (
            f"Error: {path}: row 10001 (line 10002), column 'x': '1.5' is not an integer "
            "like the first rows; pass --dtype float64 if the column holds floats\n")
    assert outputs[0] == outputs[4]
    assert outputs[0].endswith(b"\n10000.0\n10001.5\n")
