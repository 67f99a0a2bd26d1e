"""--by's group ids: the C hash tables (cumtool._ext._sequential.KeyTable, through
groups.GroupKeys) against the polars joins they replace, which run where the module is not
built. Both must give the same ids batch by batch, the same count, and the same keys for
--state, byte for byte as the state file saves them, whatever the key types, missing
cells, NaN and -0.0, slices and cuts into batches; and a state saved by either must resume
in the other."""

from __future__ import annotations

import itertools
import json

import numpy as np
import pyarrow as pa
import pytest
from helpers import ok
from hypothesis import given, settings
from hypothesis import strategies as st

from cumtool import grouped, groups, kernels, native, state

needs_c = pytest.mark.skipif(native.SEQUENTIAL is None,
                             reason="cumtool._ext._sequential is not built (no C compiler)")

ODD_NAN = np.frombuffer(np.uint64(0x7FF8000000000123).tobytes(), np.float64)[0]
TYPES = ["text", "large_text", "binary", "int64", "int8", "uint64", "float64", "float32",
         "bool", "date32", "timestamp"]


def key_column(kind: str, rng: np.random.Generator, n: int, distinct: int,
               missing: float) -> pa.Array:
    """n keys of one type drawn from `distinct` values, some missing, "" and "\\0" among
    the texts, NaN (of several payloads), infinities and -0.0 among the floats."""
    codes = rng.integers(0, distinct, n)
    mask = rng.random(n) < missing if missing else None
    if kind in ("text", "large_text", "binary"):
        words = ["", "a", "\0", "a\0", "ab", "abcdefgh", "abcdefgh\0", "abcdefghi",
                 "abcdefghij", "é", "12345678901234567"]
        values = [words[c] if c < len(words) else f"k{c}" for c in codes]
        if kind == "binary":
            return pa.array([v.encode() for v in values], pa.binary(), mask=mask)
        return pa.array(values, pa.large_string() if kind == "large_text" else pa.string(),
                        mask=mask)
    if kind in ("float64", "float32"):
        specials = np.array([0.0, -0.0, np.nan, ODD_NAN, -np.nan, np.inf, -np.inf, 1.5])
        values = np.where(codes < specials.size, specials[np.minimum(codes, 7)],
                          codes.astype(np.float64))
        return pa.array(values.astype(kind), mask=mask)
    if kind == "bool":
        return pa.array(codes % 2 == 1, mask=mask)
    if kind == "date32":
        return pa.array(codes.astype(np.int32), pa.int32(), mask=mask).cast(pa.date32())
    if kind == "timestamp":
        return pa.array(codes * 1_000_003, pa.timestamp("us", tz="UTC"), mask=mask)
    return pa.array((codes - distinct // 2).astype(kind) if kind != "uint64"
                    else codes.astype(np.uint64) * np.uint64(2**40), mask=mask)


def run_keys(batches: list[list[pa.Array]], empty_is_missing: bool, hashed: bool,
             restore: tuple[object, int] | None = None) -> tuple[list[np.ndarray], object, int]:
    with pytest.MonkeyPatch.context() as patch:
        if not hashed:
            patch.setattr(native, "SEQUENTIAL", None)
        keys = groups.GroupKeys(list(range(len(batches[0]))), empty_is_missing)
        if restore is not None:
            keys.restore(*restore)  # type: ignore[arg-type]
        ids = [keys.ids(pa.RecordBatch.from_arrays(
            columns, names=[f"c{i}" for i in range(len(columns))])) for columns in batches]
        expected = groups._HashedKeys if hashed else groups._JoinedKeys
        assert isinstance(keys._keys, expected)
        return ids, keys.known(), keys.count


def saved(known: object) -> object:
    """The keys as --state writes them (floats by their bits)."""
    return None if known is None else state._encode_frame(known)


def cut(columns: list[pa.Array], cuts: list[int]) -> list[list[pa.Array]]:
    n = len(columns[0])
    bounds = [0, *sorted(c for c in set(cuts) if 0 < c < n), n]
    return [[c.slice(lo, hi - lo) for c in columns] for lo, hi in itertools.pairwise(bounds)]


@needs_c
@settings(max_examples=150, deadline=None)
@given(kinds=st.lists(st.sampled_from(TYPES), min_size=1, max_size=3),
       rows=st.integers(0, 200), distinct=st.sampled_from([1, 3, 12, 150]),
       missing=st.sampled_from([0.0, 0.1, 0.5]), empty_is_missing=st.booleans(),
       seed=st.integers(0, 2**32 - 1), cuts=st.lists(st.integers(1, 199), max_size=4))
def test_hashed_and_joined_keys_agree(kinds, rows, distinct, missing, empty_is_missing,
                                      seed, cuts):
    rng = np.random.default_rng(seed)
    columns = [key_column(k, rng, rows, distinct, missing) for k in kinds]
    batches = cut(columns, cuts) if rows else [columns]
    fast = run_keys(batches, empty_is_missing, hashed=True)
    slow = run_keys(batches, empty_is_missing, hashed=False)
    for a, b in zip(fast[0], slow[0], strict=True):
        assert a.dtype == b.dtype == np.int64
        assert a.tolist() == b.tolist()
    assert fast[2] == slow[2]
    assert saved(fast[1]) == saved(slow[1])


@needs_c
@pytest.mark.parametrize("kinds", [["text"], ["float64"], ["int64", "text"], ["bool"],
                                   ["float32", "date32"]])
@pytest.mark.parametrize(("first", "then"), [(True, False), (False, True), (True, True)])
def test_a_state_saved_by_either_resumes_in_the_other(kinds, first, then):
    rng = np.random.default_rng(5)
    columns = [key_column(k, rng, 300, 40, 0.1) for k in kinds]
    before, after = cut(columns, [120])
    _, known, count = run_keys([before], True, hashed=first)
    restored = state._decode_frame(state._encode_frame(known))
    resumed = run_keys([after], True, hashed=then, restore=(restored, count))
    straight = run_keys([before, after], True, hashed=False)
    assert resumed[0][0].tolist() == straight[0][1].tolist()
    assert resumed[2] == straight[2]
    assert saved(resumed[1]) == saved(straight[1])


@needs_c
def test_keys_of_another_type_hand_over_to_the_joins():
    """A batch whose key types differ from the first one's goes to polars' joins with the
    keys seen so far: what it does then is what it did before the tables."""
    text = [pa.array(["a", "b", None])]
    with pytest.MonkeyPatch.context():
        keys = groups.GroupKeys([0])
        keys.ids(pa.RecordBatch.from_arrays(text, names=["k"]))
        assert isinstance(keys._keys, groups._HashedKeys)
        ids = keys.ids(pa.RecordBatch.from_arrays(
            [pa.array(["b", "c"], pa.string_view())], names=["k"]))
        assert isinstance(keys._keys, groups._JoinedKeys)
    assert ids.tolist() == [1, 3] and keys.count == 4


@needs_c
@pytest.mark.parametrize("kind", [pa.int64(), pa.float64(), pa.bool_()])
def test_a_first_batch_of_no_rows_without_buffers(kind):
    """Arrow lets an empty array have no values buffer: its keys are none, of its type."""
    empty = pa.Array.from_buffers(kind, 0, [None, None])
    batches = [[empty], [pa.array([None], kind)]]
    fast = run_keys(batches, False, hashed=True)
    slow = run_keys(batches, False, hashed=False)
    assert [a.tolist() for a in fast[0]] == [[], [0]] == [a.tolist() for a in slow[0]]
    assert saved(fast[1]) == saved(slow[1])


@needs_c
def test_key_table_numbers_bytes_in_order_of_first_appearance():
    assert native.SEQUENTIAL is not None
    table = native.SEQUENTIAL.KeyTable(0)
    words = [b"", b"ab", b"ab\0", b"abcdefgh", b"abcdefgh\0", b"abcdefghX", b"abcdefghY",
             b"ab", b"", b"abcdefghY"]
    offsets = np.cumsum([0, *map(len, words)]).astype(np.int64)
    out, firsts = np.empty(len(words), np.int64), np.empty(len(words), np.int64)
    valid = np.ones(len(words), bool)
    valid[3] = False
    new = table.encode(b"".join(words), offsets, valid, False, out, firsts)
    assert out.tolist() == [0, 1, 2, 3, 4, 5, 6, 1, 0, 6] and new == 7 == table.count
    assert firsts[:new].tolist() == [0, 1, 2, 3, 4, 5, 6]
    new = table.encode(b"".join(words), offsets, None, True, out, firsts)
    assert out.tolist() == [3, 1, 2, 7, 4, 5, 6, 1, 3, 6] and new == 1
    assert firsts[:1].tolist() == [3]


@needs_c
def test_key_table_grows_past_many_keys():
    """Ten growths of the index, keys longer and shorter than a slot's 8 bytes."""
    assert native.SEQUENTIAL is not None
    rng = np.random.default_rng(11)
    words = [f"{v:0{int(w)}d}".encode() for v, w in
             zip(rng.integers(0, 300_000, 400_000), rng.integers(1, 12, 400_000), strict=True)]
    offsets = np.cumsum([0, *map(len, words)]).astype(np.int64)
    table = native.SEQUENTIAL.KeyTable(0)
    out, firsts = np.empty(len(words), np.int64), np.empty(len(words), np.int64)
    data = b"".join(words)
    half = len(words) // 2
    table.encode(data, offsets[:half + 1], None, False, out[:half], firsts)
    table.encode(data, offsets[half:], None, False, out[half:], firsts)
    first_seen: dict[bytes, int] = {}
    expected = [first_seen.setdefault(w, len(first_seen)) for w in words]
    assert out.tolist() == expected and table.count == len(first_seen)
    fixed = native.SEQUENTIAL.KeyTable(8)
    values = rng.integers(-(2**62), 2**62, 300_000) // 7
    fixed.encode(values.view(np.uint8), None, None, False, out[:300_000], firsts)
    _, index, inverse = np.unique(values, return_index=True, return_inverse=True)
    rank = np.empty(index.size, np.int64)
    rank[np.argsort(index)] = np.arange(index.size)
    assert out[:300_000].tolist() == rank[inverse].tolist()


@needs_c
def test_key_table_refuses_what_it_cannot_read_and_stays_as_it_was():
    assert native.SEQUENTIAL is not None
    table = native.SEQUENTIAL.KeyTable(0)
    out, firsts = np.empty(2, np.int64), np.empty(2, np.int64)
    table.encode(b"ab", np.array([0, 1, 2]), None, False, out, firsts)
    cases = [
        ((b"ab", np.array([0, 2, 1]), None, False, out, firsts), ValueError, "decreasing"),
        ((b"ab", np.array([0, 1, 3]), None, False, out, firsts), ValueError, "out of"),
        ((b"ab", np.array([-1, 1, 2]), None, False, out, firsts), ValueError, "out of"),
        ((b"ab", np.array([0, 1]), None, False, out, firsts), ValueError, "one entry"),
        ((b"ab", np.array([0, 1, 2]), None, False, out, firsts[:1]), ValueError, "one entry"),
        ((b"ab", None, None, False, out, firsts), ValueError, "fixed width"),
        ((b"ab", np.array([0, 1, 2], np.int32), None, False, out, firsts), TypeError,
         "offsets"),
        ((b"ab", np.array([0, 1, 2]), np.ones(2, np.int8), False, out, firsts), TypeError,
         "valid"),
        ((b"ab", np.array([0, 1, 2]), None, False, out.astype(np.int32), firsts), TypeError,
         "out"),
    ]
    for args, error, words in cases:
        with pytest.raises(error, match=words):
            table.encode(*args)
    assert table.count == 2
    fixed = native.SEQUENTIAL.KeyTable(8)
    with pytest.raises(ValueError, match="fewer bytes"):
        fixed.encode(np.zeros(3, np.uint8), None, None, False, out, firsts)
    with pytest.raises(ValueError, match="width"):
        native.SEQUENTIAL.KeyTable(-1)
    table.encode(b"ba", np.array([0, 1, 2]), None, False, out, firsts)
    assert out.tolist() == [1, 0] and table.count == 2


@needs_c
def test_key_table_takes_cells_by_their_bounds():
    """With `ends`, row i's key is data[offsets[i]:ends[i]]: cells cut from text, in any
    order and overlapping, numbered as the same bytes laid end to end."""
    assert native.SEQUENTIAL is not None
    data = b"ab,abcdefghX,,ab,abcdefghX"
    starts = np.array([0, 3, 13, 13, 14, 17, 0], np.int64)
    ends = np.array([2, 12, 13, 13, 16, 26, 1], np.int64)
    out, firsts = np.empty(7, np.int64), np.empty(7, np.int64)
    table = native.SEQUENTIAL.KeyTable(0)
    assert table.encode(data, starts, None, True, out, firsts, ends) == 4
    assert out.tolist() == [0, 1, 2, 2, 0, 1, 3] and firsts[:4].tolist() == [0, 1, 2, 6]
    cases = [
        ((starts, None, False, out, firsts, ends[:6]), "one entry"),
        ((np.append(starts, 0), None, False, out, firsts, ends), "one entry"),
        ((starts, None, False, out, firsts, np.where(ends == 1, 27, ends)), "out of"),
        ((np.where(starts == 17, 18, starts), None, False, out, firsts,
          np.where(ends == 26, 17, ends)), "out of"),
    ]
    for args, words in cases:
        with pytest.raises(ValueError, match=words):
            table.encode(data, *args)
    with pytest.raises(ValueError, match="only with offsets"):
        native.SEQUENTIAL.KeyTable(8).encode(np.zeros(56, np.uint8), None, None, False, out,
                                             firsts, ends)
    assert table.count == 4


def test_group_carries_grow_by_doubling_and_keep_their_values():
    """Many groups, new ones in every block: the carried arrays are views of room that
    doubles (a few reallocations, not one a block), every group keeps its value, a new
    one starts at the identity, and a carry set from outside (a restored state, a scan
    rolled back) grows from what it holds."""
    spec = kernels.make_spec("cumsum", np.dtype(np.int64), None, what="column 'v'")
    carry = grouped.GroupCarry(spec)
    rooms = set()
    for count in range(1, 5001, 7):
        carry.grow(count)
        rooms.add(id(carry.room))
        carry.value[count - 1] = count
    assert len(carry.value) == len(carry.index) == len(carry.pending) == 4999
    assert len(rooms) <= 12  # 16, 32, ..., 8192
    expected = np.zeros(4999, np.int64)
    expected[np.arange(0, 4999, 7)] = np.arange(1, 5000, 7)
    assert carry.value.tolist() == expected.tolist()
    assert carry.index.tolist() == [-1] * 4999 and not carry.pending.any()
    carry.value = carry.value.copy()  # as state.restore sets it
    carry.grow(5000)
    assert carry.value[:4999].tolist() == expected.tolist() and carry.value[4999] == 0


_CELL_WORDS = [b"", b"a", b"1", b"01", b" 1", b"a\"\"b", b"abcdefgh", b"abcdefghi", b"\xc3\xa9",
               b"k,v"]


@needs_c
@settings(max_examples=200, deadline=None)
@given(rows=st.lists(st.lists(st.sampled_from(_CELL_WORDS), min_size=3, max_size=3),
                     max_size=40),
       columns=st.sampled_from([[0], [1, 2], [2, 0, 1]]), cut=st.integers(0, 40))
def test_cell_keys_in_c_and_in_python_agree(rows, columns, cut):
    """grouped.CellKeys: the C tables and the dict give the same ids and count, block
    after block; an empty cell is missing, equal bytes one key."""
    data = b"".join(b"".join(row) for row in rows)
    bounds = np.cumsum([0, *(len(cell) for row in rows for cell in row)]).astype(np.int64)
    starts = bounds[:-1].reshape(-1, 3).T.copy() if rows else np.zeros((3, 0), np.int64)
    ends = bounds[1:].reshape(-1, 3).T.copy() if rows else np.zeros((3, 0), np.int64)
    got = []
    for compiled in (True, False):
        keys = grouped.CellKeys(len(columns), compiled=compiled)
        ids = [keys.ids(data, [starts[k, lo:hi] for k in columns],
                        [ends[k, lo:hi] for k in columns])
               for lo, hi in ((0, cut), (cut, len(rows)))]
        got.append(([a.tolist() for a in ids], keys.count))
    seen: dict[tuple[bytes | None, ...], int] = {}
    expected = [seen.setdefault(tuple(row[k] or None for k in columns), len(seen))
                for row in rows]
    assert got[0] == got[1]
    assert got[0][0][0] + got[0][0][1] == expected and got[0][1] == len(seen)


CSV = ("k,f,x,r\n"
       "a,1.5,1,0\n,-0.0,2,0\n\"\",0.0,3,1\nb,NaN,4,0\na,,5,0\nb,nan,6,0\n"
       "é,1.5,7,0\n\"a\",2.5,8,1\nlonger than eight,0.0,9,0\n,NaN,10,0\n"
       "longer than eight!,1.5,11,0\na,-0.0,12,0\n")


@needs_c
@pytest.mark.parametrize("by", ["k", "f", "k,f"])
@pytest.mark.parametrize("extra", [[], ["--reset", "r"], ["--batch-rows", "2"]])
def test_the_command_gives_the_same_bytes_and_state_with_and_without_c(
        invoke, tmp_path, by, extra):
    """End to end, over three days of a CSV resumed with --state: text keys ("" and a
    missing cell one key), float keys (NaN, -0.0) and both. With the tables, with the
    joins, and with the two in turn, each day's output and the saved state are the same
    bytes."""
    header, *rows = CSV.splitlines(keepends=True)
    days = []
    for n, cut in enumerate([rows[:5], rows[5:9], rows[9:]]):
        days.append(tmp_path / f"day-{n}.csv")
        days[-1].write_text(header + "".join(cut))

    def run(name: str, hashed: list[bool]) -> tuple[list[bytes], object]:
        state = tmp_path / f"{name}.json"
        outputs = []
        for source, fast in zip(days, hashed, strict=True):
            with pytest.MonkeyPatch.context() as patch:
                if not fast:
                    patch.setattr(native, "SEQUENTIAL", None)
                out = tmp_path / f"{name}-{source.name}"
                ok(invoke("cumsum", str(source), "-c", "x", "--by", by, "--state",
                          str(state), "-o", str(out), *extra))
                outputs.append(out.read_bytes())
        return outputs, json.loads(state.read_text())["plans"]

    joins = run("joins", [False, False, False])
    assert run("tables", [True, True, True]) == joins
    assert run("mixed", [True, False, True]) == joins
    assert run("mixed-too", [False, True, False]) == joins
