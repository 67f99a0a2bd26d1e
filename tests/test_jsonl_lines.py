"""formats/jsonl/lines.py: the JSON Lines writer's loop in C (_ext/_jsonl.c's write_lines)
against json.dumps and against its Python twin, byte for byte: the hard floats, random
doubles (10^5 here, 10^7 under -m slow), masks of null and absent, keys that need escapes;
and the writer through the CLI, from CSV, JSON Lines and Parquet."""

from __future__ import annotations

import io
import json
import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cumtool.formats.jsonl import jsonl, lines

C = lines.NATIVE
needs_c = pytest.mark.skipif(C is None, reason="cumtool._ext._jsonl is not built")

HARD = [0.0, -0.0, 1e-4, 1e-5, -1e-5, 0.00012, 9.999999999999999e-05, 1e-7, 1.5e-10,
        5e-324, 2.2250738585072014e-308, 1.7976931348623157e308, 1e16, 9999999999999998.0,
        1e22, 1e23, 0.1 + 0.2, 123456789012345678.0, 1.0, 12.0, -105.56, math.nan, math.inf,
        -math.inf, 1e-100, 1e100, 2.0**53, 2.0**53 + 2]


def expected(rows: int, columns: list[lines.LineColumn]) -> bytes:
    """json.dumps of each row's object, members in column order."""
    out = []
    for r in range(rows):
        members = []
        for key, values, missing, absent in columns:
            if absent is not None and absent[r]:
                continue
            value = None if missing is not None and missing[r] else values[r].item()
            members.append(key.decode() + json.dumps(value))
        out.append("{" + ",".join(members) + "}\n")
    return "".join(out).encode()


def random_doubles(rng: np.random.Generator, count: int) -> np.ndarray:
    """Random bit patterns, and short decimals of every magnitude (the common case)."""
    half = count // 2
    raw = rng.integers(0, 2**64, size=half, dtype=np.uint64).view(np.float64)
    short = np.round(rng.normal(size=count - half), 2) * 10.0 ** rng.integers(
        -12, 20, size=count - half)
    return np.concatenate([raw, short])


@needs_c
@pytest.mark.parametrize("value", HARD, ids=[repr(v) for v in HARD])
def test_hard_floats_are_written_as_json_writes_them(value: float) -> None:
    column = (b'"x":', np.array([value]), None, None)
    assert lines.write_lines(1, [column]) == f'{{"x":{json.dumps(value)}}}\n'.encode()
    assert lines.write_lines_py(1, [column]) == f'{{"x":{json.dumps(value)}}}\n'.encode()


@needs_c
def test_random_doubles_as_json_writes_them_in_c_and_in_python() -> None:
    rng = np.random.default_rng(25)
    values = random_doubles(rng, 100_000)
    column = [(b'"v":', values, None, None)]
    written = lines.write_lines(len(values), column)
    assert written == expected(len(values), column)
    assert written == lines.write_lines_py(len(values), column)


@needs_c
@pytest.mark.slow
def test_ten_million_random_doubles_as_json_writes_them() -> None:
    rng = np.random.default_rng(2026)
    for _ in range(20):
        values = random_doubles(rng, 500_000)
        written = lines.write_lines(len(values), [(b'"v":', values, None, None)])
        assert written.decode().splitlines() == [
            '{"v":' + json.dumps(v) + "}" for v in values.tolist()]


@st.composite
def tables(draw: st.DrawFn) -> tuple[int, list[lines.LineColumn]]:
    rows = draw(st.integers(0, 12))
    count = draw(st.integers(0, 4))
    columns = []
    for k in range(count):
        kind = draw(st.sampled_from(["d", "q", "?"]))
        if kind == "d":
            values = np.array(draw(st.lists(st.floats(width=64), min_size=rows,
                                            max_size=rows)), dtype=np.float64)
        elif kind == "q":
            values = np.array(draw(st.lists(st.integers(-(2**63), 2**63 - 1), min_size=rows,
                                            max_size=rows)), dtype=np.int64)
        else:
            values = np.array(draw(st.lists(st.booleans(), min_size=rows, max_size=rows)),
                              dtype=np.bool_)
        masks = []
        for _ in range(2):
            if draw(st.booleans()):
                masks.append(np.array(draw(st.lists(st.booleans(), min_size=rows,
                                                    max_size=rows)), dtype=np.bool_))
            else:
                masks.append(None)
        name = draw(st.sampled_from(["a", 'q"uote', "back\\slash", "tab\t", "é", "🎉",
                                     f"c{k}", ""]))
        columns.append((lines.key_text(name), values, masks[0], masks[1]))
    return rows, columns


@needs_c
@settings(max_examples=300, deadline=None)
@given(tables())
def test_any_table_of_numbers_and_flags_as_json_dumps_and_the_twin(
        table: tuple[int, list[lines.LineColumn]]) -> None:
    rows, columns = table
    written = lines.write_lines(rows, columns)
    assert written == lines.write_lines_py(rows, columns)
    assert written == expected(rows, columns)
    _written_into_too(rows, columns, written)


def _written_into_too(rows: int, columns: list[lines.LineColumn], written: bytes) -> None:
    """The same text written into a reused buffer (the writer's put_into), in C and in
    Python: its size returned, the text at its start, what follows left as it was."""
    assert lines.NATIVE is not None
    with pytest.raises(TypeError, match="into must be a bytearray or None"):
        lines.NATIVE.write_lines(rows, columns, b"room")
    for write in (lines.NATIVE.write_lines, lambda r, c, into: lines.written_into(
            into, lines.write_lines_py(r, c))):
        into = bytearray(b"~" * (len(written) + 7))
        assert write(rows, columns, into) == len(written)
        assert bytes(into[:len(written)]) == written
        assert len(into) >= len(written) + 7  # grown where needed, never shrunk
        small = bytearray(b"~")
        assert write(rows, columns, small) == len(written)
        assert bytes(small[:len(written)]) == written


@st.composite
def cell_columns(draw: st.DrawFn) -> tuple[int, list[lines.LineColumn]]:
    """Cells as fastcsv.cut leaves them: bounds into one buffer, flag 0 (bare), 1 (quoted)
    or 2 (quoted, its quotes doubled), beside a number column."""
    texts = draw(st.lists(st.text(st.characters(codec="utf-8", exclude_categories=["Cs"]),
                                  max_size=8), max_size=10))
    flags = [draw(st.sampled_from([0, 1, 2]) if '"' not in t else st.just(2)) for t in texts]
    data = b""
    starts, ends = [], []
    for text, flag in zip(texts, flags, strict=True):
        raw = (text.replace('"', '""') if flag == 2 else text).encode()
        data += b"," + raw
        starts.append(len(data) - len(raw))
        ends.append(len(data))
    rows = len(texts)
    return rows, [(b'"n":', np.arange(rows, dtype=np.int64), None, None),
                  (lines.key_text("t"), data, np.array(starts, dtype=np.int64),
                   np.array(ends, dtype=np.int64), np.array(flags, dtype=np.uint8))]


@needs_c
@settings(max_examples=300, deadline=None)
@given(cell_columns())
def test_cells_are_the_json_strings_of_their_text_in_c_and_in_python(
        table: tuple[int, list[lines.LineColumn]]) -> None:
    rows, columns = table
    written = lines.write_lines(rows, columns)
    assert written == lines.write_lines_py(rows, columns)
    _written_into_too(rows, columns, written)
    _key, data, starts, ends, flags = columns[1]
    for line, start, end, flag in zip(written.decode().split("\n")[:-1], starts.tolist(),
                                      ends.tolist(), flags.tolist(), strict=True):
        text = data[start:end].decode()
        want = None if start == end and not flag else \
            text.replace('""', '"') if flag == 2 else text
        assert json.loads(line)["t"] == want
        if want is not None:
            assert line.endswith('"t":' + json.dumps(want, ensure_ascii=False) + "}")


def test_the_python_twin_writes_null_and_leaves_the_absent_out() -> None:
    columns = [(b'"a":', np.array([1, 2, 3], dtype=np.int64),
                np.array([False, True, True]), np.array([False, False, True])),
               (b'"b":', np.array([True, False, True]), None, np.array([True, False, False]))]
    assert lines.write_lines_py(3, columns) == \
        b'{"a":1}\n{"a":null,"b":false}\n{"b":true}\n'
    assert lines.write_lines_py(2, []) == b"{}\n{}\n"


@needs_c
@pytest.mark.parametrize("column, message", [
    ((b'"a":', np.array([1, 2], dtype=np.int32), None, None), "float64s, int64s or bools"),
    ((b'"a":', np.array([1.0]), None, None), "float64s, int64s or bools"),
    ((b'"a":', np.array([1.0, 2.0]), np.array([True]), None), "mask"),
    ((b'"a":', np.array([1.0, 2.0]), None, np.array([1, 0], dtype=np.int8)), "mask"),
], ids=["int32", "too-short", "short-mask", "int8-mask"])
def test_write_lines_refuses_what_it_cannot_write(column: lines.LineColumn,
                                                  message: str) -> None:
    assert C is not None
    with pytest.raises(ValueError, match=message):
        C.write_lines(2, [column])


# Through the CLI -----------------------------------------------------------------------

def cumtool(*args: str, stdin: bytes | None = None) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run([sys.executable, "-m", "cumtool", *args], input=stdin,
                          capture_output=True, check=False)


def test_csv_to_json_lines_writes_numbers_as_json_does(tmp_path: Path) -> None:
    source = tmp_path / "in.csv"
    source.write_text("a,b,c\n1e-5,1,\n1e300,2,x\n,3,\nnan,4,y\n")
    out = tmp_path / "out.jsonl"
    done = cumtool("cumsum", str(source), "-o", str(out))
    assert done.returncode == 0, done.stderr
    assert out.read_bytes() == (b'{"a":1e-05,"b":1,"c":null}\n'
                                b'{"a":1e+300,"b":3,"c":"x"}\n'
                                b'{"a":null,"b":6,"c":null}\n'
                                b'{"a":NaN,"b":10,"c":"y"}\n')


def test_json_lines_keep_null_and_absent_through_a_number_column(tmp_path: Path) -> None:
    source = tmp_path / "in.jsonl"
    source.write_text('{"a":1,"b":true}\n{"a":null}\n{"b":false}\n{"a":2.5,"b":null}\n')
    done = cumtool("cumsum", str(source), "--to", "jsonl", "-o", "-")
    assert done.returncode == 0, done.stderr
    assert done.stdout == (b'{"a":1.0,"b":true}\n{"a":null}\n{"b":false}\n'
                           b'{"a":3.5,"b":null}\n')


def test_parquet_numbers_of_every_width_to_json_lines(tmp_path: Path) -> None:
    table = pa.table({
        "i8": pa.array([-1, None, 3], pa.int8()),
        "u64": pa.array([1, 2, 3], pa.uint64()),
        "f32": pa.array([0.1, None, 1e-6], pa.float32()),
        "flag": pa.array([True, None, False]),
        "nothing": pa.nulls(3),
    })
    source = tmp_path / "in.parquet"
    pq.write_table(table, source)
    done = cumtool("cumsum", str(source), "-c", "i8", "--to", "jsonl", "-o", "-")
    assert done.returncode == 0, done.stderr
    f32 = [float(np.float32(0.1)), None, float(np.float32(1e-6))]
    want = [{"i8": -1, "u64": 1, "f32": f32[0], "flag": True, "nothing": None},
            {"i8": None, "u64": 2, "f32": None, "flag": None, "nothing": None},
            {"i8": 2, "u64": 3, "f32": f32[2], "flag": False, "nothing": None}]
    assert done.stdout == "".join(json.dumps(row, separators=(",", ":")) + "\n"
                                  for row in want).encode()


def test_uint64_beyond_int64_is_written_exactly(tmp_path: Path) -> None:
    table = pa.table({"big": pa.array([2**64 - 1, 5], pa.uint64()),
                      "x": pa.array([1, 2], pa.int64())})
    source = tmp_path / "in.parquet"
    pq.write_table(table, source)
    done = cumtool("cumsum", str(source), "-c", "x", "--to", "jsonl", "-o", "-")
    assert done.returncode == 0, done.stderr
    assert done.stdout == b'{"big":18446744073709551615,"x":1}\n{"big":5,"x":3}\n'


def test_a_column_without_a_name_keeps_its_empty_key(tmp_path: Path) -> None:
    """polars' NDJSON writer named it column_1; the general path writes the key as it is."""
    source = tmp_path / "in.csv"
    source.write_text("a,,__index_level_0__\n1,x,3\n")
    for path in ([], ["--batch-rows", "65536"]):
        done = cumtool("cumsum", str(source), "-c", "a", "--to", "jsonl", *path)
        assert done.returncode == 0, done.stderr
        assert done.stdout == b'{"a":1,"":"x","__index_level_0__":"3"}\n'


STRINGS = ["plain", "", 'q"uote', "back\\slash", "tab\there", "line\nbreak", "\r\x01\x1f\x7f",
           "é", "🎉", "\u2028", "\x85", None]


@pytest.mark.parametrize("large", [False, True], ids=["string", "large_string"])
def test_strings_are_written_as_json_writes_them(tmp_path: Path, large: bool) -> None:
    """Arrow strings with null cells, through Parquet (which rebases a sliced column's
    offsets: test_the_c_path_writes_what_the_polars_paths_write slices past 0)."""
    kind = pa.large_string() if large else pa.string()
    table = pa.table({"s": pa.array(["skipped", *STRINGS], kind),
                      "n": pa.array(range(len(STRINGS) + 1), pa.int64())}).slice(1)
    source = tmp_path / "in.parquet"
    pq.write_table(table, source)
    done = cumtool("cumsum", str(source), "--to", "jsonl", "-o", "-")
    assert done.returncode == 0, done.stderr
    sums = np.cumsum(np.arange(1, len(STRINGS) + 1)).tolist()
    assert done.stdout == "".join(
        json.dumps({"s": s, "n": n}, ensure_ascii=False, separators=(",", ":")) + "\n"
        for s, n in zip(STRINGS, sums, strict=True)).encode()


def test_json_lines_strings_keep_null_and_absent(tmp_path: Path) -> None:
    source = tmp_path / "in.jsonl"
    source.write_text('{"a":1,"s":"x\\"y"}\n{"a":2,"s":null}\n{"a":3}\n{"s":"\\u00e9\\t"}\n',
                      encoding="utf-8")
    done = cumtool("cumsum", str(source), "--to", "jsonl", "-o", "-")
    assert done.returncode == 0, done.stderr
    assert done.stdout == ('{"a":1,"s":"x\\"y"}\n{"a":3,"s":null}\n{"a":6}\n'
                           '{"s":"é\\t"}\n').encode()


# The writer's C path against its polars paths, on the rules of null and absent --------

MISSING_RULES = [None, b"null", b"absent", b"each"]


@st.composite
def sink_batches(draw: st.DrawFn) -> tuple[pa.RecordBatch, dict[int, np.ndarray]]:
    """A batch of numbers, flags and strings with nulls, its fields marked as a JSON Lines
    input marks them (FIELD_MISSING), some with explicit-null masks; sliced past 0."""
    rows = draw(st.integers(1, 12))
    skip = draw(st.integers(0, 3))
    fields, arrays, explicit = [], [], {}
    for k in range(draw(st.integers(1, 4))):
        kind = draw(st.sampled_from(["float64", "int64", "bool_", "string", "large_string"]))
        if kind == "float64":
            cell = st.floats(width=64)
        elif kind == "int64":
            cell = st.integers(-(2**63), 2**63 - 1)
        elif kind == "bool_":
            cell = st.booleans()
        else:
            cell = st.text(max_size=5)
        values = draw(st.lists(st.one_of(st.none(), cell), min_size=rows + skip,
                               max_size=rows + skip))
        rule = draw(st.sampled_from(MISSING_RULES))
        if rule == b"each":  # null or absent row by row: the source's masks say which
            rule = b"each token c%d" % k
            nulls = np.array([v is None for v in values[skip:]])
            explicit[k] = nulls & np.array(draw(st.lists(st.booleans(), min_size=rows,
                                                         max_size=rows)), dtype=bool)
        metadata = {jsonl.FIELD_MISSING: rule} if rule is not None else None
        fields.append(pa.field(f"c{k}", getattr(pa, kind)(), metadata=metadata))
        arrays.append(pa.array(values, getattr(pa, kind)()))
    batch = pa.RecordBatch.from_arrays(arrays, schema=pa.schema(fields)).slice(skip)
    return batch, explicit


@settings(max_examples=300, deadline=None)
@given(sink_batches())
def test_the_c_path_writes_what_the_polars_paths_write(
        case: tuple[pa.RecordBatch, dict[int, np.ndarray]]) -> None:
    batch, explicit = case
    sink = jsonl.JsonlSink(io.BytesIO(), batch.schema)
    native = sink._native_lines(batch, explicit)
    assert native is not None
    assert native == sink._lines(batch, explicit)
    assert native == bytes(sink._polars_lines(batch, explicit))


@needs_c
@pytest.mark.parametrize("column, message", [
    ((b'"a":', b"xy", np.array([1, 0]), np.array([0, 1]), np.zeros(2, np.uint8)), "outside"),
    ((b'"a":', b"xy", np.array([0, 1]), np.array([1, 3]), np.zeros(2, np.uint8)), "outside"),
    ((b'"a":', b"xy", np.array([-1, 0]), np.array([1, 1]), np.zeros(2, np.uint8)), "outside"),
    ((b'"a":', b"xy", np.array([0, 1], np.int32), np.array([1, 2], np.int32),
      np.zeros(2, np.uint8)), "int64s"),
    ((b'"a":', b"xy", np.array([0, 1]), np.array([1, 2]), np.zeros(2, np.int16)), "uint8s"),
    ((b'"a":', b"xy", np.array([0]), np.array([1]), np.zeros(1, np.uint8)), "int64s"),
    ((b'"a":', b"xy", np.array([0, 1]), np.array([1, 2]), np.zeros(2, np.uint8),
      np.array([True]), None), "mask"),
], ids=["start-after-end", "end-past-data", "negative", "int32-bounds", "int16-flags",
        "too-few", "short-mask"])
def test_write_lines_refuses_text_cells_it_cannot_write(column: tuple[object, ...],
                                                         message: str) -> None:
    assert C is not None
    with pytest.raises(ValueError, match=message):
        C.write_lines(2, [column])
    with pytest.raises(TypeError, match="a column is"):
        C.write_lines(2, [(*column[:5], None)])  # six: neither form
