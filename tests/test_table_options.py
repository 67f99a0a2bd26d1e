"""The table options of SEMANTICS.md "Options beyond torch": --by, --reset, --reverse,
--exclusive, --keep and --decimal (with Parquet decimals), through the command line.

Expected values never come from cumtool. They come from pandas' groupby().cum*(), polars'
.cum_*().over(key), numpy flips, Python's decimal.Decimal, and the plain loop `ref_scan`
below, which walks each run of rows one element at a time with Python scalars and the
contract's rules (a reset row starts a run; --reverse scans each run from its end;
--exclusive reports the running value from before the element; ties and NaN take the
latest element in scan order).

Every table run is repeated with --batch-rows 1, 2, 7 and the default: the output must be
byte for byte the same, so the per-group state carried across batches is exercised.
"""

from __future__ import annotations

import csv
import io
import math
import random
from collections.abc import Callable, Sequence
from decimal import Decimal
from typing import Any

import numpy as np
import pandas as pd
import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from click.testing import Result
from helpers import along_axis, npy_bytes, ok, parquet_bytes

OPS = ("cumsum", "cumprod", "cummax", "cummin", "logcumsumexp")
INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1
BATCHES = (["--batch-rows", "1"], ["--batch-rows", "2"], ["--batch-rows", "7"], [])
NAN = float("nan")
INF = float("inf")

Invoke = Callable[..., Result]


# The reference loop ----------------------------------------------------------------------


class _NanKey:
    """NaN as a group key: equal to itself (NaN != NaN would make every NaN row a group)."""

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _NanKey)

    def __hash__(self) -> int:
        return 0


def _key(values: Sequence[Any]) -> tuple[Any, ...]:
    return tuple(_NanKey() if isinstance(v, float) and math.isnan(v) else v for v in values)


def _isnan(x: Any) -> bool:
    return isinstance(x, float) and math.isnan(x)


def identity(op: str, integer: bool) -> Any:
    if op == "cumsum":
        return 0 if integer else 0.0
    if op == "cumprod":
        return 1 if integer else 1.0
    if op == "logcumsumexp":
        return -INF
    if op == "cummax":
        return INT64_MIN if integer else -INF
    return INT64_MAX if integer else INF


def log_add_exp(a: float, b: float) -> float:
    if math.isnan(a) or math.isnan(b):
        return NAN
    high, low = max(a, b), min(a, b)
    if low == -INF or high == INF:
        return high
    return high + math.log1p(math.exp(low - high))


def step(op: str, state: Any, where: int | None, x: Any, i: int) -> tuple[Any, int | None]:
    """One element of the scan: the new running value and (cummax/cummin) its position."""
    if op == "cumsum":
        return state + x, None
    if op == "cumprod":
        return state * x, None
    if op == "logcumsumexp":
        return log_add_exp(state, float(x)), None
    if _isnan(state):  # a NaN wins and stays; the latest NaN gives the index
        return (state, i) if _isnan(x) else (state, where)
    if _isnan(x):
        return x, i
    better = x >= state if op == "cummax" else x <= state  # ties: the latest element
    return (x, i) if better else (state, where)


def ref_scan(values: Sequence[Any], op: str, *, keys: Sequence[Sequence[Any]] | None = None,
             resets: Sequence[Any] | None = None, reverse: bool = False,
             exclusive: bool = False, skipna: bool = False,
             integer: bool | None = None) -> tuple[list[Any], list[int | None]]:
    """Values and positions of `op` over `values` (None: missing), per group and run."""
    n = len(values)
    if integer is None:
        integer = all(isinstance(v, int) for v in values if v is not None)
    runs: list[list[int]] = []
    current: dict[tuple[Any, ...], list[int]] = {}
    for i in range(n):
        key = _key(keys[i]) if keys is not None else ()
        if key not in current or (resets is not None and resets[i]):
            current[key] = []
            runs.append(current[key])
        current[key].append(i)
    out: list[Any] = [None] * n
    positions: list[int | None] = [None] * n
    for run in runs:
        state, where = identity(op, integer), None
        for i in reversed(run) if reverse else run:
            x = values[i]
            if x is None or (skipna and _isnan(x)):
                out[i] = x  # missing stays missing, a skipped NaN stays NaN
                continue
            before = (state, where)
            state, where = step(op, state, where, x, i)
            out[i], positions[i] = before if exclusive else (state, where)
    return out, positions


def assert_cells(got: Sequence[Any], expected: Sequence[Any], approx: bool = False,
                 what: str = "") -> None:
    """Equal cell by cell: None for None, NaN for NaN, same Python type (int or float)."""
    assert len(got) == len(expected), what
    for row, (g, e) in enumerate(zip(got, expected, strict=True)):
        where = f"{what} row {row}: got {g!r}, expected {e!r}"
        if e is None or g is None:
            assert g is None and e is None, where
        elif _isnan(e):
            assert _isnan(g), where
        else:
            assert type(g) is type(e), where
            if approx and isinstance(e, float) and math.isfinite(e):
                assert g == pytest.approx(e, rel=1e-13, abs=1e-300), where
            else:
                assert g == e, where


# Input and output helpers ---------------------------------------------------------------


def cell_text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, float):
        return "NaN" if math.isnan(value) else repr(value)
    return str(value)


def csv_text(columns: dict[str, Sequence[Any]]) -> str:
    names = list(columns)
    lines = [",".join(names)]
    for row in zip(*columns.values(), strict=True):
        lines.append(",".join(cell_text(v) for v in row))
    return "\n".join(lines) + "\n"


def parse_cell(text: str) -> Any:
    if text == "":
        return None
    try:
        return int(text)
    except ValueError:
        pass
    try:
        return float(text)
    except ValueError:
        return text


def read_csv_output(data: bytes | str) -> dict[str, list[Any]]:
    """CSV output as {column: cells}, numbers parsed (int if the text is an integer)."""
    text = data.decode() if isinstance(data, bytes) else data
    rows = list(csv.reader(io.StringIO(text)))
    header, body = rows[0], rows[1:]
    return {name: [parse_cell(r[i]) for r in body] for i, name in enumerate(header)}


def read_csv_text(data: bytes | str) -> dict[str, list[str]]:
    text = data.decode() if isinstance(data, bytes) else data
    rows = list(csv.reader(io.StringIO(text)))
    return {name: [r[i] for r in rows[1:]] for i, name in enumerate(rows[0])}


def run_all_batches(invoke: Invoke, *args: str, input: bytes | str | None = None) -> bytes:
    """Run with every batch size; all outputs must be the same (CSV: the same bytes;
    Parquet, whose pages follow the batches: the same table). Returns the first."""
    outputs = [ok(invoke(*args, *batch, input=input)).stdout_bytes for batch in BATCHES]
    for batch, output in zip(BATCHES[1:], outputs[1:], strict=True):
        if output.startswith(b"PAR1"):
            got, first = read_parquet_bytes(output), read_parquet_bytes(outputs[0])
            assert got.schema == first.schema, f"{batch} differs from --batch-rows 1"
            for name in got.column_names:
                assert_cells(got.column(name).to_pylist(), first.column(name).to_pylist(),
                             what=f"{name} with {batch}")
        else:
            assert output == outputs[0], f"{batch} differs from --batch-rows 1"
    return outputs[0]


def read_parquet_bytes(data: bytes) -> pa.Table:
    return pq.read_table(io.BytesIO(data))


# The shared table ------------------------------------------------------------------------
# 23 rows: a string key with missing cells, an int key, a 0/1 reset flag, an int column
# with missing cells, a float column with missing cells and NaN. Products stay small.

REGION = ["n", "s", "n", None, "e", "s", "n", None, "e", "e", "s", "n",
          "n", None, "s", "e", "n", "s", None, "e", "n", "s", "e"]
STORE = [1, 2, 1, 1, 3, 2, 2, 3, 1, 3, 2, 1, 2, 1, 3, 3, 1, 2, 2, 1, 3, 1, 2]
FLAG = [0, 0, 0, 1, 0, 1, 0, 0, 1, 0, 0, 1, 0, 0, 0, 1, 0, 0, 1, 0, 1, 0, 0]
QTY: list[int | None] = [3, -1, 2, 4, None, 2, 3, -2, 1, 2, None, 3,
                         1, 2, -3, 2, 2, 1, 3, None, -1, 2, 2]
PRICE: list[float | None] = [1.5, 2.25, None, -0.5, 3.0, NAN, 1.25, 2.0, -1.5, 0.75, 2.5,
                             None, 1.5, 3.25, -2.0, NAN, 0.5, 1.75, 2.0, -0.25, 1.0,
                             2.5, 3.0]
COLUMNS = {"region": REGION, "store": STORE, "flag": FLAG, "qty": QTY, "price": PRICE}
TABLE_CSV = csv_text(COLUMNS)


def keys_of(names: Sequence[str]) -> list[tuple[Any, ...]] | None:
    if not names:
        return None
    return [tuple(COLUMNS[name][i] for name in names) for i in range(len(REGION))]


# (id, CLI options, by columns, reset column, reverse, exclusive, skipna)
OPTION_SETS = [
    ("by_string_key", ["--by", "region"], ["region"], None, False, False, False),
    ("by_int_key", ["--by", "store"], ["store"], None, False, False, False),
    ("by_two_keys", ["--by", "region,store"], ["region", "store"], None, False, False, False),
    ("reset", ["--reset", "flag"], [], "flag", False, False, False),
    ("reverse", ["--reverse"], [], None, True, False, False),
    ("exclusive", ["--exclusive"], [], None, False, True, False),
    ("reverse_exclusive", ["--reverse", "--exclusive"], [], None, True, True, False),
    ("by_reset", ["--by", "region", "--reset", "flag"], ["region"], "flag", False, False,
     False),
    ("by_reset_reverse", ["--by", "region", "--reset", "flag", "--reverse"], ["region"],
     "flag", True, False, False),
    ("by_exclusive", ["--by", "region", "--exclusive"], ["region"], None, False, True, False),
    ("by_reverse_exclusive", ["--by", "store", "--reverse", "--exclusive"], ["store"], None,
     True, True, False),
    ("reset_reverse_exclusive", ["--reset", "flag", "--reverse", "--exclusive"], [], "flag",
     True, True, False),
    ("by_skipna", ["--by", "region", "--skipna"], ["region"], None, False, False, True),
    ("by_reset_reverse_exclusive_skipna",
     ["--by", "region", "--reset", "flag", "--reverse", "--exclusive", "--skipna"],
     ["region"], "flag", True, True, True),
]


def expected_table(op: str, by: list[str], reset: str | None, reverse: bool,
                   exclusive: bool, skipna: bool) -> dict[str, list[Any]]:
    """The whole output table (qty and price scanned, the rest passed through)."""
    resets = COLUMNS[reset] if reset else None
    out: dict[str, list[Any]] = {}
    for name, cells in COLUMNS.items():
        if name not in ("qty", "price"):
            out[name] = list(cells)
            continue
        values, positions = ref_scan(cells, op, keys=keys_of(by), resets=resets,
                                     reverse=reverse, exclusive=exclusive, skipna=skipna,
                                     integer=name == "qty")
        if op == "logcumsumexp":
            values = [v if v is None or isinstance(v, float) else float(v) for v in values]
        out[name] = values
        if op in ("cummax", "cummin"):
            out[f"{name}_index"] = positions
    return out


def option_params() -> list[Any]:
    """Every op with every set; the quick suite runs cumsum's (CI: all)."""
    return [pytest.param(op, *rest, id=f"{op}-{rest[0]}",
                         marks=() if op == "cumsum" else pytest.mark.slow)
            for op in OPS for rest in OPTION_SETS]


@pytest.mark.parametrize(("op", "name", "options", "by", "reset", "reverse", "exclusive",
                          "skipna"), option_params())
def test_csv_options_match_the_reference_for_every_batch_size(
        invoke, write_file, op, name, options, by, reset, reverse, exclusive, skipna):
    path = write_file("t.csv", TABLE_CSV)
    indices = ["--indices"] if op in ("cummax", "cummin") else []
    output = run_all_batches(invoke, op, str(path), "--columns", "qty,price", *options,
                             *indices)
    got = read_csv_output(output)
    expected = expected_table(op, by, reset, reverse, exclusive, skipna)
    assert list(got) == list(expected)
    for column in expected:
        assert_cells(got[column], expected[column], approx=op == "logcumsumexp", what=column)


PARQUET_SETS = [s for s in OPTION_SETS if s[0] in (
    "by_two_keys", "by_reset_reverse", "by_reverse_exclusive", "reset_reverse_exclusive",
    "by_reset_reverse_exclusive_skipna")]


def _parquet_table() -> pa.Table:
    return pa.table({
        "region": pa.array(REGION, pa.string()), "store": pa.array(STORE, pa.int64()),
        "flag": pa.array([bool(f) for f in FLAG]), "qty": pa.array(QTY, pa.int64()),
        "price": pa.array(PRICE, pa.float64()),
    })


@pytest.mark.parametrize("via_stdin", [pytest.param(False, id="file"),
                                       pytest.param(True, id="stdin", marks=pytest.mark.slow)])
@pytest.mark.parametrize(("op", "name", "options", "by", "reset", "reverse", "exclusive",
                          "skipna"),
                         [pytest.param(op, *rest, id=f"{op}-{rest[0]}",  # quick: 2 ops
                                       marks=() if op in ("cumsum", "cummax")
                                       else pytest.mark.slow)
                          for op in OPS for rest in PARQUET_SETS])
def test_parquet_options_match_the_reference_with_exact_types(
        invoke, write_file, via_stdin, op, name, options, by, reset, reverse, exclusive,
        skipna):
    data = parquet_bytes(_parquet_table())  # flag is a boolean column here
    indices = ["--indices"] if op in ("cummax", "cummin") else []
    args = [op, "--columns", "qty,price", *options, *indices, "--to", "parquet"]
    if via_stdin:
        output = run_all_batches(invoke, *args, input=data)
    else:
        output = run_all_batches(invoke, *args, str(write_file("t.parquet", data)))
    table = read_parquet_bytes(output)
    expected = expected_table(op, by, reset, reverse, exclusive, skipna)
    expected["flag"] = [bool(f) for f in FLAG]
    assert table.column_names == list(expected)
    qty_type = pa.float64() if op == "logcumsumexp" else pa.int64()
    assert table.schema.field("qty").type == qty_type
    assert table.schema.field("price").type == pa.float64()
    assert table.schema.field("flag").type == pa.bool_()
    if indices:
        assert table.schema.field("qty_index").type == pa.int64()
    for column in expected:
        assert_cells(table.column(column).to_pylist(), expected[column],
                     approx=op == "logcumsumexp", what=column)


# Independent libraries: pandas and polars -------------------------------------------------


def _random_columns(rows: int, groups: int, seed: int, small: bool = False
                    ) -> dict[str, list[Any]]:
    """An int key, a string key (some missing), ints, and floats with missing and NaN."""
    rng = random.Random(seed)
    keys = [rng.randrange(groups) for _ in range(rows)]
    return {
        "key": keys,
        "name": [None if k == 0 else f"g{k % (groups // 2 + 1)}" for k in keys],
        "x": [rng.choice([-2, -1, 1, 2] if small else [-2, -1, 1, 2, 3]) for _ in range(rows)],
        "y": [None if rng.random() < 0.1 else NAN if rng.random() < 0.05
              else rng.choice([0.5, -1.25, 2.0, 0.75]) for _ in range(rows)],
    }


def _pandas_expected(columns: dict[str, list[Any]], grouped: Any, op: str,
                     column: str) -> list[Any]:
    """pandas' result, with a missing cell (NaN to pandas) back to missing."""
    result = getattr(grouped[column], op)().tolist()
    return [None if cell is None else float(v) if column == "y" else int(v)
            for cell, v in zip(columns[column], result, strict=True)]


PANDAS_OPS = ("cumsum", "cumprod", "cummax", "cummin")


@pytest.mark.slow
@pytest.mark.parametrize("op", [pytest.param(op, id=op) for op in PANDAS_OPS])
@pytest.mark.parametrize("key", [pytest.param("key", id="int-key"),
                                 pytest.param("name", id="string-key-with-missing")])
def test_by_with_skipna_equals_pandas_groupby(invoke, write_file, op, key):
    """pandas skips NaN (--skipna) and keeps a missing key as a group with dropna=False."""
    columns = _random_columns(60, 9, seed=1, small=op == "cumprod")
    assert None in columns["y"] and any(_isnan(v) for v in columns["y"])
    path = write_file("t.csv", csv_text(columns))
    got = read_csv_output(run_all_batches(invoke, op, str(path), "--by", key, "--skipna",
                                          "--columns", "x,y"))
    grouped = pd.DataFrame(columns).groupby(key, dropna=False, sort=False)
    assert got["x"] == _pandas_expected(columns, grouped, op, "x")
    assert_cells(got["y"], _pandas_expected(columns, grouped, op, "y"))


@pytest.mark.slow
def test_a_thousand_groups_equal_pandas_at_small_batches(invoke, write_file):
    columns = _random_columns(2600, 1300, seed=7)
    assert len(set(columns["key"])) > 1000
    path = write_file("t.csv", csv_text(columns))
    grouped = pd.DataFrame(columns).groupby("key", sort=False)
    for batch in ("7", "64"):
        got = read_csv_output(ok(invoke("cumsum", str(path), "--by", "key", "--skipna",
                                        "--columns", "x,y", "--batch-rows", batch)).stdout)
        assert got["x"] == _pandas_expected(columns, grouped, "cumsum", "x")
        assert_cells(got["y"], _pandas_expected(columns, grouped, "cumsum", "y"))
    got = read_csv_output(ok(invoke("cummax", str(path), "--by", "key", "--reverse",
                                    "--columns", "x", "--batch-rows", "7")).stdout)
    flipped = pd.DataFrame(columns).iloc[::-1]
    assert got["x"] == flipped.groupby("key", sort=False)["x"].cummax().iloc[::-1].tolist()


POLARS_OPS = {"cumsum": "cum_sum", "cumprod": "cum_prod", "cummax": "cum_max",
              "cummin": "cum_min"}


@pytest.mark.slow
@pytest.mark.parametrize("reverse", [pytest.param(False, id="forward"),
                                     pytest.param(True, id="reverse")])
@pytest.mark.parametrize("op", [pytest.param(op, id=op) for op in POLARS_OPS])
def test_by_equals_polars_cum_over_key_with_missing_cells(invoke, write_file, op, reverse):
    """polars keeps nulls in place and carries the running value over them, as cumtool."""
    rng = random.Random(3)
    frame = pl.DataFrame({
        "k": [rng.choice(["a", "b", "c", None]) for _ in range(50)],
        "k2": [rng.randrange(3) for _ in range(50)],
        "v": [None if rng.random() < 0.15 else rng.choice([-2, -1, 1, 2]) for _ in range(50)],
        "w": [None if rng.random() < 0.15 else rng.choice([0.5, -1.5, 2.25])
              for _ in range(50)],
    })
    path = write_file("t.csv", csv_text(frame.to_dict(as_series=False)))
    args = [op, str(path), "--by", "k,k2", *(["--reverse"] if reverse else [])]
    got = read_csv_output(run_all_batches(invoke, *args))
    method = POLARS_OPS[op]
    expected = frame.select(
        getattr(pl.col("v"), method)(reverse=reverse).over(["k", "k2"]),
        getattr(pl.col("w"), method)(reverse=reverse).over(["k", "k2"]),
    )
    assert got["v"] == expected["v"].to_list()
    assert got["w"] == expected["w"].to_list()
    assert got["k2"] == frame["k2"].to_list()  # keys are not scanned


# Default columns, keys, missing keys ----------------------------------------------------


def test_default_columns_exclude_the_by_keys_and_the_reset_column(invoke, write_file):
    path = write_file("t.csv", TABLE_CSV)
    got = read_csv_output(run_all_batches(invoke, "cumsum", str(path), "--by", "store",
                                          "--reset", "flag"))
    assert got["store"] == STORE
    assert got["flag"] == FLAG
    resets = FLAG
    assert got["qty"] == ref_scan(QTY, "cumsum", keys=keys_of(["store"]), resets=resets)[0]
    assert_cells(got["price"], ref_scan(PRICE, "cumsum", keys=keys_of(["store"]),
                                        resets=resets)[0])


def test_without_by_a_numeric_key_column_is_scanned_like_any_other(invoke, write_file):
    path = write_file("t.csv", TABLE_CSV)
    got = read_csv_output(ok(invoke("cumsum", str(path), "--reset", "flag")).stdout)
    assert got["store"] == ref_scan(STORE, "cumsum", resets=FLAG)[0]
    assert got["flag"] == FLAG


def test_a_key_can_be_scanned_when_named_in_columns(invoke, write_file):
    path = write_file("t.csv", "k,x\n1,5\n2,6\n1,7\n2,8\n")
    got = read_csv_output(ok(invoke("cumsum", str(path), "--by", "k", "--columns",
                                    "k,x")).stdout)
    assert got == {"k": [1, 2, 2, 4], "x": [5, 6, 12, 14]}


def test_missing_key_is_a_key_of_its_own(invoke, write_file):
    # Quoted "" is an empty cell as a bare empty field is (the text after unquoting):
    # both are the missing key, one group apart from "a".
    path = write_file("t.csv", 'k,x\n"",1\n,2\na,3\n"",4\n,5\n')
    got = ok(invoke("cumsum", str(path), "--by", "k", "--batch-rows", "1")).stdout
    assert read_csv_output(got)["x"] == [1, 3, 3, 7, 12]


@pytest.mark.parametrize("batch", [pytest.param(b, id=f"batch{b or 'default'}")
                                   for b in ("1", "2", "")])
def test_nan_float_key_is_one_group_apart_from_missing_keys(invoke, write_file, batch):
    path = write_file("t.csv", "k,x\n1.5,1\nNaN,2\n,3\nNaN,4\n1.5,5\n,6\nNaN,7\n")
    args = ["--batch-rows", batch] if batch else []
    result = invoke("cumsum", str(path), "--by", "k", *args)
    assert result.exit_code == 0, result.stderr
    assert read_csv_output(result.stdout)["x"] == [1, 2, 3, 6, 6, 9, 13]


def test_a_key_named_twice_is_one_key(invoke):
    got = read_csv_output(ok(invoke("cumsum", "--by", "k,k", input="k,x\na,1\nb,2\na,3\n"))
                          .stdout)
    assert got == {"k": ["a", "b", "a"], "x": [1, 2, 4]}


def test_boolean_and_float_keys(invoke, write_file):
    path = write_file("t.csv", "b,f,x\ntrue,0.5,1\nfalse,0.5,2\n,0.5,3\ntrue,1.5,4\n"
                               "true,0.5,5\n,0.5,6\n")
    got = read_csv_output(run_all_batches(invoke, "cumsum", str(path), "--by", "b,f"))
    assert got["x"] == [1, 2, 3, 4, 6, 9]


@pytest.mark.parametrize(("flags", "expected"), [
    pytest.param(["1", "0", "2", "0", "-1", "0"], [1, 3, 3, 7, 5, 11], id="nonzero-int"),
    pytest.param(["true", "false", "true", "false", "false", ""], [1, 3, 3, 7, 12, 18],
                 id="bool-with-missing"),
    pytest.param(["0.5", "0", "0.0", "", "1e3", "0"], [1, 3, 6, 10, 5, 11], id="float"),
])
def test_reset_starts_a_run_where_the_flag_is_true_or_nonzero(invoke, write_file, flags,
                                                              expected):
    lines = ["r,x"] + [f"{f},{x}" for f, x in zip(flags, range(1, 7), strict=True)]
    path = write_file("t.csv", "\n".join(lines) + "\n")
    got = read_csv_output(run_all_batches(invoke, "cumsum", str(path), "--reset", "r"))
    assert got["x"] == expected


def test_reset_on_the_first_row_and_on_every_row(invoke, write_file):
    path = write_file("t.csv", "r,x\n1,2\n1,3\n1,4\n")
    for extra in ([], ["--reverse"], ["--exclusive"]):
        got = read_csv_output(run_all_batches(invoke, "cumsum", str(path), "--reset", "r",
                                              *extra))
        assert got["x"] == ([0, 0, 0] if extra == ["--exclusive"] else [2, 3, 4])


def test_reset_with_reverse_scans_each_run_from_its_end(invoke, write_file):
    """Runs are defined in input order (a reset row starts one); each is summed from its
    last row back to its reset row."""
    path = write_file("t.csv", "g,r,x\na,0,1\na,0,2\nb,0,10\na,1,4\nb,1,20\na,0,8\nb,0,40\n")
    got = read_csv_output(run_all_batches(invoke, "cumsum", str(path), "--by", "g",
                                          "--reset", "r", "--reverse"))
    assert got["x"] == [3, 2, 10, 12, 60, 8, 40]


def test_tied_zeros_within_by_groups(invoke, write_file):
    """--by scans groups whose rows are not contiguous: the sign of a tied zero still
    comes from the group's own last tied row (worked by hand per group)."""
    path = write_file("by.csv", "k,v\na,-0.0\nb,1\na,0.0\na,-1\nb,-0.0\na,-0.0\n")
    got = run_all_batches(invoke, "cummax", str(path), "--by", "k", "--indices")
    assert got.decode().splitlines() == [
        "k,v,v_index", "a,-0.0,0", "b,1.0,1", "a,0.0,2", "a,0.0,2", "b,1.0,1", "a,-0.0,5"]


# --exclusive ----------------------------------------------------------------------------


def test_exclusive_cumsum_starts_at_zero(invoke):
    got = read_csv_output(ok(invoke("cumsum", "--exclusive", input="x\n3\n4\n2\n")).stdout)
    assert got["x"] == [0, 3, 7]


@pytest.mark.parametrize(("op", "first"), [
    pytest.param("cumsum", (0, 0.0), id="cumsum"),
    pytest.param("cumprod", (1, 1.0), id="cumprod"),
    pytest.param("cummax", (INT64_MIN, -INF), id="cummax"),
    pytest.param("cummin", (INT64_MAX, INF), id="cummin"),
    pytest.param("logcumsumexp", (-INF, -INF), id="logcumsumexp"),
])
def test_exclusive_first_cell_is_the_identity(invoke, op, first):
    got = read_csv_output(ok(invoke(op, "--exclusive", input="i,f\n3,1.5\n4,2.5\n")).stdout)
    assert got["i"][0] == first[0] and type(got["i"][0]) is type(first[0])
    assert got["f"][0] == first[1]


def test_exclusive_index_of_the_identity_is_missing_in_tables(invoke):
    got = read_csv_text(ok(invoke("cummax", "--exclusive", "--indices",
                                  input="x\n3\n5\n")).stdout)
    assert got == {"x": [str(INT64_MIN), "3"], "x_index": ["", "0"]}


def test_exclusive_index_after_a_missing_cell_is_the_running_index(invoke):
    """The missing cell stays missing; the cell after it reports the running maximum from
    before it, and where that came from (not the missing cell's own empty index)."""
    got = read_csv_output(run_all_batches(invoke, "cummax", "--exclusive", "--indices",
                                          input='x\n1.5\n2.5\n""\n4.0\n-1.0\n'))
    assert_cells(got["x"], [-INF, 1.5, None, 2.5, 4.0])
    assert got["x_index"] == [None, 0, None, 1, 3]


@pytest.mark.parametrize("op", [pytest.param(op, id=op) for op in OPS])
def test_exclusive_with_skipna_keeps_nan_in_place_and_the_scan_goes_on(invoke, op):
    data = [1.5, NAN, 2.0, 0.5, NAN, 3.0]
    text = "x\n" + "\n".join(cell_text(v) for v in data) + "\n"
    extra = ["--indices"] if op in ("cummax", "cummin") else []
    got = read_csv_output(run_all_batches(invoke, op, "--exclusive", "--skipna", *extra,
                                          input=text))
    values, positions = ref_scan(data, op, exclusive=True, skipna=True)
    assert_cells(got["x"], values, approx=op == "logcumsumexp")
    if extra:
        assert got["x_index"] == positions


# --keep ---------------------------------------------------------------------------------


def test_keep_appends_results_named_after_the_op(invoke, write_file):
    path = write_file("t.csv", "name,a,b\nx,1,0.5\ny,2,\nz,3,1.5\n")
    got = read_csv_output(run_all_batches(invoke, "cumsum", str(path), "--keep"))
    assert list(got) == ["name", "a", "b", "a_cumsum", "b_cumsum"]
    assert got["a"] == [1, 2, 3] and got["b"] == [0.5, None, 1.5]
    assert got["a_cumsum"] == [1, 3, 6] and got["b_cumsum"] == [0.5, None, 2.0]


def test_keep_follows_the_order_of_columns(invoke, write_file):
    path = write_file("t.csv", "a,b,c\n1,2,3\n4,5,6\n")
    got = read_csv_output(ok(invoke("cumprod", str(path), "--keep", "--columns",
                                    "c,a")).stdout)
    assert list(got) == ["a", "b", "c", "c_cumprod", "a_cumprod"]
    assert got["c_cumprod"] == [3, 18] and got["a_cumprod"] == [1, 4]


@pytest.mark.parametrize(("keep", "names"), [
    pytest.param(True, ["a", "b", "a_cummin", "a_cummin_index"], id="keep"),
    pytest.param(False, ["a", "a_index", "b"], id="in-place"),
])
def test_index_column_is_named_after_the_result_column(invoke, keep, names):
    args = ["cummin", "--indices", "--columns", "a", *(["--keep"] if keep else [])]
    got = read_csv_output(ok(invoke(*args, input="a,b\n3,x\n1,y\n2,z\n")).stdout)
    assert list(got) == names
    result = "a_cummin" if keep else "a"
    assert got[result] == [3, 1, 1] and got[f"{result}_index"] == [0, 1, 1]


def test_keep_with_by_reverse_and_exclusive(invoke, write_file):
    path = write_file("t.csv", TABLE_CSV)
    got = read_csv_output(run_all_batches(
        invoke, "cumsum", str(path), "--keep", "--by", "region", "--reverse", "--exclusive"))
    assert list(got) == [*COLUMNS, "store_cumsum", "flag_cumsum", "qty_cumsum",
                         "price_cumsum"]
    for name in COLUMNS:
        if name != "region":
            assert_cells(got[name], COLUMNS[name], what=name)
    for name in ("store", "flag", "qty", "price"):
        assert_cells(got[f"{name}_cumsum"],
                     ref_scan(COLUMNS[name], "cumsum", keys=keys_of(["region"]),
                              reverse=True, exclusive=True)[0], what=name)


def test_keep_with_axis_columns_appends_the_row_scans(invoke):
    got = read_csv_output(ok(invoke("cumsum", "--keep", "--axis", "columns",
                                    input="a,b\n1,2\n3,4\n")).stdout)
    assert got == {"a": [1, 3], "b": [2, 4], "a_cumsum": [1, 3], "b_cumsum": [3, 7]}


def test_keep_refuses_to_duplicate_an_existing_column(invoke, tmp_path):
    out = tmp_path / "out.csv"
    out.write_text("untouched\n")
    result = invoke("cumsum", "--keep", "-o", str(out), input="x,x_cumsum\n1,2\n")
    assert result.exit_code == 1
    assert result.stderr == ("Error: standard input: --keep would add column 'x_cumsum', "
                             "which the input already has\n")
    assert out.read_text() == "untouched\n"


@pytest.mark.parametrize(("args", "header", "adder", "column"), [
    pytest.param(("cumsum,cummax",), "x,x_cumsum", "several ops (cumsum,cummax)", "x_cumsum",
                 id="several-ops"),
    pytest.param(("cumsum,cummax", "--keep"), "x,x_cummax", "several ops (cumsum,cummax)",
                 "x_cummax", id="several-ops-keep"),
    pytest.param(("cummax", "--keep", "--indices"), "x,x_cummax_index", "--indices",
                 "x_cummax_index", id="keep-indices"),
    pytest.param(("cummax,cummin", "--indices"), "x,x_cummin_index", "--indices",
                 "x_cummin_index", id="several-ops-indices"),
])
def test_a_column_clash_names_what_adds_the_column(invoke, args, header, adder, column):
    result = invoke(*args, "-c", "x", input=f"{header}\n1,2\n")
    assert result.exit_code == 1
    assert result.stdout == ""
    assert result.stderr == (f"Error: standard input: {adder} would add column {column!r}, "
                             "which the input already has\n")


# --reverse ------------------------------------------------------------------------------


@pytest.mark.parametrize("op", [pytest.param(op, id=op) for op in ("cummax", "cummin")])
def test_reverse_ties_go_to_the_earliest_input_position(invoke, op):
    got = read_csv_output(run_all_batches(invoke, op, "--reverse", "--indices",
                                          input="x\n3\n1\n3\n1\n2\n"))
    if op == "cummax":
        assert got == {"x": [3, 3, 3, 2, 2], "x_index": [0, 2, 2, 4, 4]}
    else:
        assert got == {"x": [1, 1, 1, 1, 2], "x_index": [1, 1, 3, 3, 4]}


def test_reverse_nan_index_is_the_earliest_nan(invoke):
    got = read_csv_output(run_all_batches(invoke, "cummax", "--reverse", "--indices",
                                          input="x\n1.0\nNaN\n3.0\nNaN\n2.0\n"))
    assert_cells(got["x"], [NAN, NAN, NAN, NAN, 2.0])
    assert got["x_index"] == [1, 1, 3, 3, 4]


def test_reverse_from_stdin_with_missing_cells(invoke):
    got = read_csv_output(run_all_batches(invoke, "cumsum", "--reverse",
                                          input="a,b\n1,\n2,0.5\n,1.5\n4,\n"))
    assert got == {"a": [7, 6, None, 4], "b": [None, 2.0, 1.5, None]}


def test_reverse_overflow_names_the_input_row(invoke, tmp_path):
    out = tmp_path / "out.csv"
    result = invoke("cumsum", "--reverse", "-o", str(out), "--batch-rows", "1",
                    input=f"x\n{2**62}\n{2**62}\n1\n5\n")
    assert result.exit_code == 1
    assert result.stderr.startswith("Error: standard input: column 'x', row 1 (line 2): ")
    assert "--overflow wrap" in result.stderr
    assert not out.exists()


def test_by_overflow_names_the_input_row_and_column(invoke):
    result = invoke("cumsum", "--by", "k", "--batch-rows", "2",
                    input=f"k,x\na,1\nb,{2**62}\nb,{2**62}\na,1\n")
    assert result.exit_code == 1
    assert result.stderr.startswith("Error: standard input: column 'x', row 3 (line 4): ")


# --axis columns with --reverse and --exclusive --------------------------------------------

ROWS = [[1.5, 2.0, -0.5, 3.0], [None, 1.0, 4.0, None], [2.0, NAN, 1.0, 0.5],
        [-1.0, -2.0, -3.0, -4.0]]


@pytest.mark.parametrize("flags", [
    pytest.param(("--reverse",), id="reverse"),
    pytest.param(("--exclusive",), id="exclusive"),
    pytest.param(("--reverse", "--exclusive"), id="reverse-exclusive"),
    pytest.param(("--reverse", "--exclusive", "--skipna"), id="reverse-exclusive-skipna"),
])
@pytest.mark.parametrize("op", [pytest.param(op, id=op) for op in OPS])
def test_axis_columns_with_reverse_and_exclusive(invoke, write_file, op, flags):
    names = ["a", "b", "c", "d"]
    path = write_file("t.csv", csv_text({"label": ["p", "q", "r", "s"],
                                         **{n: [row[i] for row in ROWS]
                                            for i, n in enumerate(names)}}))
    extra = ["--indices"] if op in ("cummax", "cummin") else []
    got = read_csv_output(run_all_batches(invoke, op, str(path), "--axis", "columns",
                                          *flags, *extra))
    assert got["label"] == ["p", "q", "r", "s"]
    for r, row in enumerate(ROWS):
        values, positions = ref_scan(row, op, reverse="--reverse" in flags,
                                     exclusive="--exclusive" in flags,
                                     skipna="--skipna" in flags, integer=False)
        assert_cells([got[n][r] for n in names], values, approx=op == "logcumsumexp",
                     what=f"row {r}")
        if extra:
            assert [got[f"{n}_index"][r] for n in names] == positions, f"row {r}"


# .npy with --reverse and --exclusive --------------------------------------------------------


def _numpy_scan(array: np.ndarray, op: str, axis: int, reverse: bool,
                exclusive: bool) -> np.ndarray:
    """Values with numpy only: flip, accumulate, shift in the identity, flip back."""
    ufunc = {"cumsum": np.add, "cumprod": np.multiply, "cummax": np.maximum,
             "cummin": np.minimum, "logcumsumexp": np.logaddexp}[op]
    data = np.flip(array, axis) if reverse else array
    out = ufunc.accumulate(data, axis=axis)
    if exclusive:
        first = np.full_like(np.take(out, [0], axis=axis),
                             identity(op, array.dtype.kind == "i"))
        out = np.concatenate([first, np.take(out, range(out.shape[axis] - 1), axis=axis)],
                             axis=axis)
    return np.flip(out, axis) if reverse else out


def _loop_indices(array: np.ndarray, op: str, axis: int, reverse: bool,
                  exclusive: bool) -> np.ndarray:
    def line_indices(line: list[Any]) -> tuple[list[int]]:
        _, positions = ref_scan(line, op, reverse=reverse, exclusive=exclusive)
        return ([-1 if p is None else p for p in positions],)

    return along_axis(array, axis, line_indices, np.int64)[0]


@pytest.mark.parametrize("batch", [pytest.param(["--batch-rows", "1"], id="batch1"),
                                   pytest.param(["--batch-rows", "2"], id="batch2"),
                                   pytest.param([], id="default")])
@pytest.mark.parametrize("flags", [
    pytest.param(("--reverse",), id="reverse"),
    pytest.param(("--exclusive",), id="exclusive"),
    pytest.param(("--reverse", "--exclusive"), id="reverse-exclusive"),
])
@pytest.mark.parametrize("axis", [pytest.param(a, id=f"axis{a}") for a in (0, 1, 2, -1)])
@pytest.mark.parametrize("op", [pytest.param(op, id=op) for op in OPS])
def test_npy_reverse_and_exclusive_on_every_axis(invoke, op, axis, flags, batch):
    rng = np.random.default_rng(11)
    array = rng.integers(-3, 4, size=(3, 4, 5)).astype(np.int64)
    if op in ("cumprod", "logcumsumexp"):
        array = rng.choice([0.5, -1.5, 2.0, 1.25], size=(3, 4, 5))
    reverse, exclusive = "--reverse" in flags, "--exclusive" in flags
    result = ok(invoke(op, "--axis", str(axis), *flags, *batch, "--to", "npy",
                       input=npy_bytes(array)))
    got = np.load(io.BytesIO(result.stdout_bytes))
    expected = _numpy_scan(array, op, axis, reverse, exclusive)
    assert got.dtype == expected.dtype
    if op == "logcumsumexp":
        np.testing.assert_allclose(got, expected, rtol=1e-13)
    else:
        np.testing.assert_array_equal(got, expected)


@pytest.mark.parametrize("flags", [
    pytest.param(("--reverse",), id="reverse"),
    pytest.param(("--exclusive",), id="exclusive"),
    pytest.param(("--reverse", "--exclusive"), id="reverse-exclusive"),
])
@pytest.mark.parametrize("axis", [pytest.param(a, id=f"axis{a}") for a in (0, 1, -1)])
@pytest.mark.parametrize("op", [pytest.param(op, id=op) for op in ("cummax", "cummin")])
def test_npy_indices_with_reverse_and_exclusive(invoke, tmp_path, op, axis, flags):
    array = np.array([[[3, 1, 3], [2, 2, 0]], [[1, 3, 3], [0, 2, 2]],
                      [[3, 3, 1], [2, 0, 2]]], dtype=np.int64)
    out = tmp_path / "out.npz"
    ok(invoke(op, "--axis", str(axis), *flags, "--indices", "--batch-rows", "1",
              "--to", "npy", "-o", str(out), input=npy_bytes(array)))
    with np.load(out) as saved:
        values, indices = saved["values"], saved["indices"]
    reverse, exclusive = "--reverse" in flags, "--exclusive" in flags
    np.testing.assert_array_equal(values, _numpy_scan(array, op, axis, reverse, exclusive))
    np.testing.assert_array_equal(indices, _loop_indices(array, op, axis, reverse, exclusive))


# Usage errors ---------------------------------------------------------------------------


@pytest.mark.parametrize(("args", "message"), [
    pytest.param(["--by", "k"], "--by is for tables, not arrays; standard input is "
                 "read as npy", id="by-npy"),
    pytest.param(["--reset", "k"], "--reset is for tables, not arrays; standard input is "
                 "read as npy", id="reset-npy"),
    pytest.param(["--keep"], "--keep is for tables, not arrays; standard input is "
                 "read as npy", id="keep-npy"),
])
def test_table_options_on_npy_are_usage_errors(invoke, args, message):
    result = invoke("cumsum", *args, input=npy_bytes(np.arange(4)))
    assert result.exit_code == 2
    assert result.stderr == f"Error: {message}\n"
    assert result.stdout_bytes == b""


@pytest.mark.parametrize("args", [
    pytest.param(["--by", "k"], id="by"),
    pytest.param(["--reset", "r"], id="reset"),
    pytest.param(["--by", "k", "--reset", "r"], id="both"),
])
def test_by_and_reset_with_axis_columns_are_usage_errors(invoke, tmp_path, args):
    out = tmp_path / "out.csv"
    result = invoke("cumsum", "--axis", "columns", *args, "-o", str(out),
                    input="k,r,x\n1,0,2\n")
    assert result.exit_code == 2
    assert result.stderr == ("Error: --by and --reset work down the rows; they cannot be "
                             "used with --axis columns\n")
    assert not out.exists()


@pytest.mark.parametrize(("args", "message"), [
    pytest.param(["--by", "nope"], "standard input: no column 'nope'; columns: k, r, x",
                 id="by-unknown"),
    pytest.param(["--by", "k,nope"], "standard input: no column 'nope'; columns: k, r, x",
                 id="by-second-unknown"),
    pytest.param(["--reset", "nope"], "standard input: no column 'nope'; columns: k, r, x",
                 id="reset-unknown"),
    pytest.param(["--reset", "k"], "standard input: --reset column 'k' must be boolean or "
                 "numeric, not text", id="reset-text"),
])
def test_unknown_or_unusable_key_columns_are_errors_naming_them(invoke, args, message):
    result = invoke("cumsum", *args, input="k,r,x\na,0,2\n")
    assert result.exit_code == 1
    assert result.stderr == f"Error: {message}\n"


def test_empty_by_name_is_a_usage_error(invoke):
    result = invoke("cumsum", "--by", "k,", input="k,x\na,1\n")
    assert result.exit_code == 2
    assert result.stderr == ("Error: --by 'k,': an empty column name; quote it as '\"\"' to "
                             "choose a column whose name is empty. Try 'main cumsum --help'.\n")


def test_keys_alone_leave_nothing_to_scan(invoke):
    result = invoke("cumsum", "--by", "k", "--reset", "r", input="k,r\n1,0\n2,1\n")
    assert result.exit_code == 1
    assert result.stderr == ("Error: standard input: no numeric columns to scan; "
                             "columns: k, r\n")


# Exact decimals -------------------------------------------------------------------------


def _money_rows(n: int) -> list[tuple[str, str]]:
    return [("ab"[i % 2], "19.99" if i % 3 else "0.01") for i in range(n)]


@pytest.mark.slow
def test_money_running_balance_equals_decimal_arithmetic(invoke, write_file):
    rows = _money_rows(1000)
    path = write_file("m.csv", "k,amount\n" + "".join(f"{k},{a}\n" for k, a in rows))
    got = read_csv_text(run_all_batches(invoke, "cumsum", str(path), "--decimal"))
    total, expected = Decimal(0), []
    for _, amount in rows:
        total += Decimal(amount)
        expected.append(str(total))
    assert got["amount"] == expected
    assert got["amount"][-1] == "13316.68"  # 666 x 19.99 + 334 x 0.01
    # Without --decimal, floats drift: the same sum is not exact.
    plain = read_csv_output(ok(invoke("cumsum", str(path))).stdout)
    assert plain["amount"][-1] != 13316.68


def test_decimal_with_by_reverse_and_exclusive(invoke, write_file):
    rows = _money_rows(40)
    path = write_file("m.csv", "k,amount\n" + "".join(f"{k},{a}\n" for k, a in rows))
    got = read_csv_text(run_all_batches(invoke, "cumsum", str(path), "--decimal", "--by",
                                        "k", "--reverse", "--exclusive"))
    values = [Decimal(a) for _, a in rows]
    expected, _ = ref_scan(values, "cumsum", keys=[(k,) for k, _ in rows], reverse=True,
                           exclusive=True, integer=True)
    assert got["amount"] == [str(Decimal(0).quantize(Decimal("0.01")) + e) for e in expected]


def test_decimal_keeps_the_places_of_the_first_rows(invoke):
    got = read_csv_text(ok(invoke("cumsum", "--decimal",
                                  input="a,b\n1.5,19.99\n2.25,0.01\n3.125,\n-0.5,1.00\n"))
                        .stdout)
    assert got == {"a": ["1.500", "3.750", "6.875", "6.375"],
                   "b": ["19.99", "20.00", "", "21.00"]}


@pytest.mark.parametrize(("op", "expected"), [
    pytest.param("cummax", ["19.99", "19.99", "19.99", "19.99"], id="cummax"),
    pytest.param("cummin", ["19.99", "0.01", "0.01", "-0.25"], id="cummin"),
])
def test_decimal_cummax_cummin_stay_exact(invoke, op, expected):
    got = read_csv_text(ok(invoke(op, "--decimal", "--indices",
                                  input="x\n19.99\n0.01\n1.50\n-0.25\n")).stdout)
    assert got["x"] == expected


@pytest.mark.parametrize("op", [pytest.param(op, id=op) for op in ("cumprod",
                                                                   "logcumsumexp")])
def test_decimal_cumprod_and_logcumsumexp_compute_in_float64(invoke, op):
    cells = ["19.99", "0.01", "1.5", "-0.25"]
    got = read_csv_output(ok(invoke(op, "--decimal", input="x\n" + "\n".join(cells)
                                    + "\n")).stdout)
    expected, _ = ref_scan([float(c) for c in cells], op)
    assert_cells(got["x"], expected, approx=op == "logcumsumexp")


def test_decimal_leaves_integer_and_text_columns_alone(invoke):
    got = read_csv_text(ok(invoke("cumsum", "--decimal", input="n,t,x\n1,a,0.1\n2,b,0.2\n"
                                  )).stdout)
    assert got == {"n": ["1", "3"], "t": ["a", "b"], "x": ["0.1", "0.3"]}


def test_decimal_to_parquet_is_decimal128(invoke, tmp_path):
    out = tmp_path / "out.parquet"
    ok(invoke("cumsum", "--decimal", "-o", str(out), input='x\n0.10\n0.20\nNA\n0.30\n'))
    table = pq.read_table(out)
    assert table.schema.field("x").type == pa.decimal128(38, 2)
    assert table.column("x").to_pylist() == [Decimal("0.10"), Decimal("0.30"), None,
                                             Decimal("0.60")]


def test_decimal_overflow_is_an_error_and_writes_nothing(invoke, tmp_path):
    out = tmp_path / "out.csv"
    result = invoke("cumsum", "--decimal", "-o", str(out),
                    input="x\n92233720368547758.07\n0.01\n")
    assert result.exit_code == 1
    assert result.stderr.startswith("Error: standard input: column 'x', row 2 (line 3): ")
    assert not out.exists()


def test_decimal_cell_with_more_places_after_the_first_rows_is_an_error(invoke, tmp_path):
    out = tmp_path / "out.csv"
    cells = ["1.5"] * 10_000 + ["2.125"]
    result = invoke("cumsum", "--decimal", "-o", str(out), input="x\n" + "\n".join(cells)
                    + "\n")
    assert result.exit_code == 1
    assert result.stderr.startswith(
        "Error: standard input: row 10001 (line 10002), column 'x': '2.125'")
    assert "at most 1 places" in result.stderr
    assert len(result.stderr.splitlines()) == 1
    assert not out.exists()


def _decimal_parquet() -> pa.Table:
    amounts = [Decimal("19.99"), Decimal("0.01"), None, Decimal("-5.50"), Decimal("100.00"),
               Decimal("0.07"), Decimal("19.99"), None, Decimal("0.03")]
    return pa.table({
        "k": pa.array(["a", "b", "a", "b", None, "a", None, "b", "a"]),
        "amount": pa.array(amounts, pa.decimal128(10, 2)),
    })


@pytest.mark.parametrize("options", [
    pytest.param([], id="plain"),
    pytest.param(["--by", "k"], id="by"),
    pytest.param(["--by", "k", "--reverse"], id="by-reverse"),
    pytest.param(["--exclusive"], id="exclusive"),
])
def test_parquet_decimal_stays_decimal_with_exact_sums(invoke, write_file, options):
    table = _decimal_parquet()
    path = write_file("d.parquet", parquet_bytes(table))
    output = run_all_batches(invoke, "cumsum", str(path), *options, "--to", "parquet")
    got = read_parquet_bytes(output)
    assert got.schema.field("amount").type == pa.decimal128(38, 2)
    assert got.column("k").to_pylist() == table.column("k").to_pylist()
    by = "--by" in options
    expected, _ = ref_scan(table.column("amount").to_pylist(), "cumsum",
                           keys=[(k,) for k in table.column("k").to_pylist()] if by else None,
                           reverse="--reverse" in options,
                           exclusive="--exclusive" in options, integer=True)
    assert got.column("amount").to_pylist() == [
        None if e is None else Decimal(e).quantize(Decimal("0.01")) for e in expected]


def test_parquet_decimal_to_csv_prints_its_places(invoke, write_file):
    path = write_file("d.parquet", parquet_bytes(_decimal_parquet()))
    got = read_csv_text(ok(invoke("cumsum", str(path), "--to", "csv")).stdout)
    assert got["amount"] == ["19.99", "20.00", "", "14.50", "114.50", "114.57", "134.56",
                             "", "134.59"]


def test_decimal_columns_across_a_row_compute_in_float64(invoke, write_file):
    table = pa.table({"a": pa.array([Decimal("0.10")], pa.decimal128(5, 2)),
                      "b": pa.array([Decimal("0.20")], pa.decimal128(5, 2))})
    path = write_file("d.parquet", parquet_bytes(table))
    got = read_parquet_bytes(ok(invoke("cumsum", str(path), "--axis", "columns",
                                       "--to", "parquet")).stdout_bytes)
    assert got.schema.field("b").type == pa.float64()
    assert got.column("b").to_pylist() == [0.1 + 0.2]


@pytest.mark.parametrize("source", [pytest.param("csv", id="csv-decimal"),
                                    pytest.param("parquet", id="parquet-decimal")])
def test_decimal_to_npy_writes_values_not_scaled_integers(invoke, source):
    if source == "csv":
        result = ok(invoke("cumsum", "--decimal", "--to", "npy",
                           input="x,n\n19.99,1\n0.01,2\n"))
    else:
        table = pa.table({"x": pa.array([Decimal("19.99"), Decimal("0.01")],
                                        pa.decimal128(6, 2)), "n": [1, 2]})
        result = ok(invoke("cumsum", "--to", "npy", input=parquet_bytes(table)))
    got = np.load(io.BytesIO(result.stdout_bytes))
    assert got.dtype == np.float64
    assert got.tolist() == [[19.99, 1.0], [20.0, 3.0]]


@pytest.mark.slow
@pytest.mark.parametrize("seed", [pytest.param(s, id=f"seed{s}") for s in range(4)])
def test_random_keys_resets_and_flags_match_the_reference(invoke, write_file, seed):
    """Random groups, resets and missing cells; every combination of --reverse and
    --exclusive, at batch sizes 1, 2, 7 and the default."""
    rng = random.Random(seed)
    n = 90
    columns = {
        "g": [rng.choice(["a", "b", "c", "d", None]) for _ in range(n)],
        "r": [rng.random() < 0.15 for _ in range(n)],
        "x": [None if rng.random() < 0.1 else rng.randrange(-5, 6) for _ in range(n)],
    }
    path = write_file("t.csv", csv_text({**columns, "r": [str(v).lower()
                                                           for v in columns["r"]]}))
    for reverse in (False, True):
        for exclusive in (False, True):
            flags = [*(["--reverse"] if reverse else []), *(["--exclusive"] if exclusive
                                                             else [])]
            got = read_csv_output(run_all_batches(invoke, "cummax", str(path), "--by", "g",
                                                  "--reset", "r", "--indices", *flags))
            values, positions = ref_scan(columns["x"], "cummax",
                                         keys=[(k,) for k in columns["g"]],
                                         resets=columns["r"], reverse=reverse,
                                         exclusive=exclusive)
            assert got["x"] == values, flags
            assert got["x_index"] == positions, flags


@pytest.mark.parametrize("batch_rows", ["1", "2", "1000"])
def test_exclusive_does_not_fail_on_a_total_it_never_outputs(invoke, batch_rows):
    big = 2**62
    result = invoke("cumsum", "--exclusive", "--batch-rows", batch_rows,
                    input=f"x\n{big}\n{big}\n\n")
    assert result.exit_code == 0, result.stderr
    assert read_csv_output(result.stdout)["x"] == [0, big]
    # A missing cell after it outputs nothing either; per group, each group's own last.
    result = invoke("cumsum", "--exclusive", "--by", "g", "--batch-rows", batch_rows,
                    input=f"g,x\na,{big}\nb,1\na,{big}\nb,2\na,\n")
    assert result.exit_code == 0, result.stderr
    assert read_csv_output(result.stdout)["x"] == [0, 0, big, 1, None]


@pytest.mark.parametrize("batch_rows", ["1", "2", "1000"])
def test_exclusive_overflow_is_an_error_once_the_total_is_output(invoke, batch_rows):
    big = 2**62
    result = invoke("cumsum", "--exclusive", "--by", "g", "--batch-rows", batch_rows,
                    input=f"g,x\na,{big}\nb,1\na,{big}\nb,2\na,\na,5\n")
    assert result.exit_code == 1
    assert result.stderr.startswith("Error: standard input: column 'x', row ")
    assert "overflows int64" in result.stderr


@pytest.mark.parametrize(("typed", "meant"), [("stor", "store"), ("unit", "units"),
                                             ("dat", "date"), ("reveune", "revenue")])
def test_a_mistyped_column_is_offered_the_names_close_to_it(invoke, write_file, typed,
                                                            meant):
    path = write_file("sales.csv", "date,store,units,revenue\n2024-01-01,a,1,2.5\n")
    result = invoke("cumsum", str(path), "--by", typed)
    assert (result.exit_code, result.stderr) == (1, (
        f"Error: {path}: no column {typed!r}; columns: date, store, units, revenue. Did "
        f"you mean {meant!r}?\n"))


def test_a_name_far_from_every_column_is_offered_none(invoke, write_file):
    path = write_file("sales.csv", "date,store,units,revenue\n2024-01-01,a,1,2.5\n")
    result = invoke("cumsum", str(path), "-c", "x")
    assert result.stderr == (f"Error: {path}: no column 'x'; columns: date, store, units, "
                             "revenue\n")
