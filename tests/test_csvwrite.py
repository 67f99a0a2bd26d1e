"""formats/csv/csvwrite.py: a batch of int and float64 columns written by the C loop
(`_csvtext.assemble`) gives polars' bytes, byte for byte, with every option the sink
takes; any other batch goes to polars; and a run that writes only numbers to CSV does
not load polars."""

from __future__ import annotations

import io
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import cumtool.formats.csv.csvwrite as csvwrite
from cumtool.formats import CsvWriteOptions

needs_c = pytest.mark.skipif(csvwrite.TEXT is None, reason="cumtool._ext._csvtext is not built")

EDGES = [0.0, -0.0, 1e-4, 1e-5, 1e-7, 0.1 + 0.2, 1e15, 1e16, 1e22, 5e-324,
         1.7976931348623157e308, -105.56, float("nan"), float("inf"), float("-inf"), None]


def written(batch: pa.RecordBatch, by_c: bool, monkeypatch: pytest.MonkeyPatch,
            options: CsvWriteOptions, single: bool | None = None) -> bytes:
    monkeypatch.setattr(csvwrite, "BY_C", by_c)
    out = io.BytesIO()
    sink = csvwrite.CsvSink(out, batch.schema, options)
    if single is not None:
        sink.set_single(single)
    calls = []
    number_plan = sink._number_plan

    def spy(b: pa.RecordBatch) -> list[Any] | None:
        calls.append(number_plan(b))
        return calls[-1]

    sink._number_plan = spy  # type: ignore[method-assign]
    sink.write(batch)
    sink.write(batch.slice(1))  # a second batch, its arrays past offset 0
    sink.close()
    if by_c:
        # the C loop wrote every batch that has rows
        assert len(calls) == (batch.num_rows > 0) + (batch.num_rows > 1)
        assert all(c is not None for c in calls)
    return out.getvalue()


OPTIONS = [CsvWriteOptions(), CsvWriteOptions(delimiter="\t"), CsvWriteOptions(na_rep="NA"),
           CsvWriteOptions(na_rep="a,b"), CsvWriteOptions(header=False),
           CsvWriteOptions(encoding="utf-16")]


@needs_c
@pytest.mark.parametrize("options", OPTIONS, ids=["plain", "tab", "na-rep", "na-rep-quoted",
                                                  "no-header", "utf-16"])
def test_numbers_in_c_as_polars_writes_them(monkeypatch: pytest.MonkeyPatch,
                                            options: CsvWriteOptions) -> None:
    batch = pa.RecordBatch.from_pydict({
        "f": pa.array(EDGES, pa.float64()),
        "i8": pa.array([i - 8 if i % 5 else None for i in range(len(EDGES))], pa.int8()),
        "u64": pa.array([2**63 - 1 - i for i in range(len(EDGES))], pa.uint64()),
        "i": pa.array([-(2**63) + i if i % 3 else None for i in range(len(EDGES))]),
        "a,b": pa.array(range(len(EDGES)), pa.int32()),
    })
    assert written(batch, True, monkeypatch, options) == \
        written(batch, False, monkeypatch, options)


@needs_c
@pytest.mark.parametrize("single", [None, True, False], ids=["own", "alone", "one-of-many"])
def test_a_lone_number_column_writes_its_missing_cells_as_polars_does(
        monkeypatch: pytest.MonkeyPatch, single: bool | None) -> None:
    batch = pa.RecordBatch.from_pydict({"x": pa.array([1.5, None, 2.0, None])})
    ours = written(batch, True, monkeypatch, CsvWriteOptions(), single)
    assert ours == written(batch, False, monkeypatch, CsvWriteOptions(), single)
    assert ours.split(b"\n")[2] == (b"" if single is False else b'""')


@needs_c
@settings(max_examples=200, deadline=None)
@given(st.lists(st.one_of(st.none(), st.floats(width=64)), min_size=1, max_size=20),
       st.lists(st.one_of(st.none(), st.integers(-(2**63), 2**63 - 1)), min_size=20,
                max_size=20))
def test_any_numbers_in_c_as_polars_writes_them(floats: list[float | None],
                                                 ints: list[int | None]) -> None:
    batch = pa.RecordBatch.from_pydict({"f": pa.array(floats, pa.float64()),
                                        "i": pa.array(ints[:len(floats)], pa.int64())})
    with pytest.MonkeyPatch.context() as monkeypatch:
        assert written(batch, True, monkeypatch, CsvWriteOptions()) == \
            written(batch, False, monkeypatch, CsvWriteOptions())


@pytest.mark.parametrize("column", [
    pa.array([1.5, 2.5], pa.float32()), pa.array([True, False]), pa.array(["a", "b"]),
    pa.array([2**64 - 1, 1], pa.uint64()), pa.array([1, 2], pa.int64()),
], ids=["float32", "bool", "string", "uint64-beyond-int64", "int64-decimal-comma"])
def test_other_batches_go_to_polars(monkeypatch: pytest.MonkeyPatch,
                                    column: pa.Array) -> None:
    batch = pa.RecordBatch.from_pydict({"x": column})
    options = CsvWriteOptions(delimiter=";", decimal_comma=column.type == pa.int64())
    sink = csvwrite.CsvSink(io.BytesIO(), batch.schema, options)
    assert sink._number_plan(batch) is None


def test_a_run_writing_numbers_to_csv_does_not_load_polars(tmp_path: Path) -> None:
    source = tmp_path / "in.parquet"
    pq.write_table(pa.table({"a": np.arange(5, dtype=np.int32), "b": np.arange(5) / 4}),
                   source)
    code = ("import sys; from cumtool.cli import main\n"
            "try:\n    main(['cumsum', sys.argv[1], '--to', 'csv'])\n"
            "except SystemExit:\n    pass\n"
            "print('polars' in sys.modules, file=sys.stderr)")
    done = subprocess.run([sys.executable, "-c", code, str(source)], capture_output=True,
                          check=False)
    assert done.stdout == b"a,b\n0,0.0\n1,0.25\n3,0.75\n6,1.5\n10,2.5\n"
    expected = "False" if csvwrite.TEXT is not None else "True"
    assert done.stderr.decode().strip().splitlines()[-1] == expected
