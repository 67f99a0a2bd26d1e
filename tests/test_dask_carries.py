"""cumtool.carries: the carried state a distributed scan passes between partitions, without
a cluster. The oracle is always the local scan (kernels.scan_block) over the same cells:
a partition's summary applied to a carry, or its fold, must leave the carry exactly as
scanning the partition does (values bit for bit, indices, offsets), and a summary must say
"this scan fails" exactly where the scan raises."""

from __future__ import annotations

import copy
import warnings

import numpy as np
import pytest

from cumtool import carries, kernels
from cumtool.blocks import Carry, initial_carry
from cumtool.errors import ScanOverflowError

SPECIAL = [np.nan, np.inf, -np.inf, -0.0, 0.0]


def _bits(value: object) -> bytes:
    return np.asarray(value).tobytes()


def _floats(rng: np.random.Generator, rows: int, op: str) -> np.ndarray:
    if op == "cumprod":
        x = rng.choice([1.0001, 0.9999, -1.0, 1.0, 2.0, -0.0, 0.0], rows)
    else:
        x = rng.normal(0, 3, rows)
    for value in SPECIAL:
        if rows:
            x[rng.integers(0, rows)] = value
    return x


def _valid(rng: np.random.Generator, rows: int) -> np.ndarray | None:
    return None if rng.random() < 0.4 else rng.random(rows) > 0.2


def _scanned_alike(spec: kernels.ScanSpec, columns: list[tuple[np.ndarray, np.ndarray | None]],
                   folded: list[Carry], scanned: list[Carry]) -> None:
    """Scan each column from its carry in `scanned`; each must end where its fold in
    `folded` did, bit for bit, at the same offset."""
    for (x, valid), carry in zip(columns, scanned, strict=True):
        kernels.scan_block(spec, x, valid, carry)
    for a, b in zip(folded, scanned, strict=True):
        assert _bits(a.value) == _bits(b.value)
        assert a.offset == b.offset


@pytest.fixture(params=["c", "twin"])
def fold_path(request, monkeypatch) -> str:
    """The fold in C and in its numpy twin: both must give the local scan's bits."""
    if request.param == "twin":
        monkeypatch.setattr(carries, "SEQUENTIAL", None)
    elif carries.SEQUENTIAL is None:
        pytest.fail("the C extension _sequential is not built: run setup.py build_ext")
    return str(request.param)


@pytest.mark.parametrize("op", ["cumsum", "cumprod", "logcumsumexp"])
@pytest.mark.parametrize("skipna", [False, True])
def test_a_fold_leaves_the_carry_a_scan_leaves(fold_path, op, skipna):
    rng = np.random.default_rng(11)
    spec = kernels.make_spec(op, np.dtype(np.float64), skipna=skipna)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        for _ in range(60):
            rows, width = int(rng.integers(0, 400)), int(rng.integers(1, 12))
            columns = [(_floats(rng, rows, op), _valid(rng, rows)) for _ in range(width)]
            starts = rng.choice([0.0, -0.0, 1.5, -3.0, np.inf, -np.inf, np.nan], width)
            folded = [initial_carry(spec) for _ in range(width)]
            scanned = [initial_carry(spec) for _ in range(width)]
            for a, b, start in zip(folded, scanned, starts, strict=True):
                a.value = b.value = np.float64(start)
                a.offset = b.offset = 5
            carries.fold([spec] * width, columns, folded)
            _scanned_alike(spec, columns, folded, scanned)


@pytest.mark.parametrize("op", ["cumsum", "cumprod", "logcumsumexp"])
@pytest.mark.parametrize("width", [8, 17])
def test_whole_columns_eight_at_a_time(fold_path, op, width):
    """Columns with no cell skipped go eight at a time through the C fold's fast loop
    (the rest, and a strided column, through the general one)."""
    rng = np.random.default_rng(width)
    spec = kernels.make_spec(op, np.dtype(np.float64))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        for rows in (0, 1, 5, 1000):
            columns = [(_floats(rng, rows, op), None) for _ in range(width)]
            columns[-1] = (np.repeat(columns[-1][0], 2)[::2], None)  # strided
            folded = [initial_carry(spec) for _ in range(width)]
            scanned = [initial_carry(spec) for _ in range(width)]
            for a, b, start in zip(folded, scanned, rng.choice([0.0, -0.0, np.nan, -np.inf],
                                                               width), strict=True):
                a.value = b.value = np.float64(start)
            carries.fold([spec] * width, columns, folded)
            for (x, valid), carry in zip(columns, scanned, strict=True):
                kernels.scan_block(spec, x, valid, carry)
            assert [_bits(a.value) for a in folded] == [_bits(b.value) for b in scanned]


def test_a_running_nan_keeps_its_sign(fold_path):
    """-inf + inf makes x86's default NaN (sign set); a later NaN cell (sign clear) must
    not replace it, as the scan keeps the running value's NaN."""
    spec = kernels.make_spec("cumsum", np.dtype(np.float64))
    x = np.array([np.inf, 1.0, np.nan, 2.0])
    folded, scanned = initial_carry(spec), initial_carry(spec)
    folded.value = scanned.value = np.float64(-np.inf)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        carries.fold([spec], [(x, None)], [folded])
        kernels.scan_block(spec, x, None, scanned)
    assert _bits(folded.value) == _bits(scanned.value)


def test_float32_and_a_dtype_cast_fold_in_float64(fold_path):
    rng = np.random.default_rng(5)
    x = rng.normal(0, 1e3, 1000)
    for source, dtype in [(np.float32, None), (np.float64, np.dtype(np.float32))]:
        spec = kernels.make_spec("cumsum", np.dtype(source), dtype)
        folded, scanned = initial_carry(spec), initial_carry(spec)
        carries.fold([spec], [(x.astype(source), None)], [folded])
        kernels.scan_block(spec, x.astype(source), None, scanned)
        assert _bits(folded.value) == _bits(scanned.value)


# Integer sums --------------------------------------------------------------------------

def _exact(terms: np.ndarray) -> tuple[int, int, int]:
    running, low, high = 0, 0, 0
    for term in terms.tolist():
        running += term
        low, high = min(low, running), max(high, running)
    return running, low, high


@pytest.mark.parametrize("scale", [10, 2**40, 2**61, 2**63 - 1])
def test_an_integer_summary_is_exact_past_int64(scale):
    rng = np.random.default_rng(scale % 1000)
    for _ in range(20):
        rows = int(rng.integers(0, 300))
        terms = rng.integers(-scale, scale, rows, dtype=np.int64, endpoint=True)
        if rng.random() < 0.3:  # a run of one sign: wraps the same way several times
            terms = np.abs(terms)
        summary = carries.sum_summary(terms)
        assert (summary.total, summary.low, summary.high) == _exact(terms)


def _terms(rng: np.random.Generator, rows: int, source: np.dtype,
           out: np.dtype) -> np.ndarray:
    """Terms of about a third of the output's range, so that a few partitions overflow."""
    if source.kind == "b":
        return rng.random(rows) < 0.9
    top = min(int(np.iinfo(source).max), int(np.iinfo(out).max)) // 3
    bottom = -top if np.iinfo(source).min < 0 else 0
    return rng.integers(bottom, top, rows, endpoint=True).astype(source)


def _scan_fails(spec, x, valid, carry) -> bool:
    try:
        kernels.scan_block(spec, x, valid, carry)
    except ScanOverflowError:
        return True
    return False


def _pending(carry) -> bool:
    return carry.pending is not None and bool(carry.pending)


@pytest.mark.parametrize("exclusive", [False, True])
@pytest.mark.parametrize(("source", "dtype", "overflow"), [
    (np.int64, None, "error"), (np.int64, None, "wrap"), (np.int32, np.dtype(np.int32), "error"),
    (np.int64, np.dtype(np.int16), "error"), (np.int16, np.dtype(np.int16), "wrap"),
    (np.bool_, np.dtype(np.int8), "error"), (np.uint8, np.dtype(np.uint8), "error"),
])
def test_a_sum_summary_fails_exactly_where_the_scan_fails(source, dtype, overflow, exclusive):
    """Partitions chained through their summaries: every carry is the scan's, and the
    first partition whose scan raises is the first whose summary says so, whether its
    own sum overflows or only the carry takes it out of range. With --exclusive an
    overflow at a partition's last counted cell is pending: the error is the next
    partition's that counts a cell (partitions of missing cells only are frequent here)."""
    rng = np.random.default_rng(3)
    spec = kernels.make_spec("cumsum", np.dtype(source), dtype, overflow=overflow,
                             exclusive=exclusive)
    outcomes, pending = set(), 0
    for _ in range(60 if exclusive else 40):
        applied, scanned = initial_carry(spec), initial_carry(spec)
        for _ in range(int(rng.integers(1, 12))):
            rows = int(rng.integers(0, 60 if rng.random() < 0.7 else 3))
            x = _terms(rng, rows, np.dtype(source), spec.out_dtype)
            valid = _valid(rng, rows)
            if exclusive and rows and rng.random() < 0.3:  # none, or only the first, counted
                valid = np.zeros(rows, dtype=bool)
                valid[0] = rng.random() < 0.5
            summary = carries.summarize(spec, x, valid)
            expected = copy.deepcopy(scanned)
            fails = _scan_fails(spec, x, valid, scanned)
            outcomes.add(fails)
            assert carries.advance(spec, applied, summary, rows) is not fails
            if fails:
                assert _bits(applied.value) == _bits(expected.value)  # left as it was
                break
            assert _bits(applied.value) == _bits(scanned.value)
            assert applied.offset == scanned.offset
            assert _pending(applied) == _pending(scanned)
            pending += _pending(scanned)
    assert outcomes == ({False} if overflow == "wrap" else {False, True})
    assert (pending > 0) == (exclusive and overflow == "error")


def test_a_carry_can_bring_a_partition_back_in_range():
    """A partition whose own running sum passes int64's top does not overflow after a
    negative carry: a summary that said it fails would report an error the local engine
    never raises."""
    spec = kernels.make_spec("cumsum", np.dtype(np.int64))
    x = np.array([2**62, 2**62, 5], dtype=np.int64)
    alone = initial_carry(spec)
    assert _scan_fails(spec, x, None, alone)
    carry = initial_carry(spec)
    carry.value = np.int64(-(2**62))
    scanned = copy.deepcopy(carry)
    assert carries.advance(spec, carry, carries.summarize(spec, x, None), 3)
    kernels.scan_block(spec, x, None, scanned)
    assert _bits(carry.value) == _bits(scanned.value) == _bits(np.int64(2**62 + 5))


def test_a_cell_that_does_not_fit_fails_the_summary():
    spec = kernels.make_spec("cumsum", np.dtype(np.int64), np.dtype(np.int8))
    with pytest.raises(ScanOverflowError, match="does not fit int8"):
        carries.summarize(spec, np.array([1, 300], dtype=np.int64), None)


# Extremes and counts ----------------------------------------------------------------

def _extreme_values(rng: np.random.Generator, rows: int, kind: str) -> np.ndarray:
    if kind == "f":
        x = rng.choice([-1.5, -0.0, 0.0, 2.0, 3.0, np.inf, -np.inf], rows)
        if rows and rng.random() < 0.3:
            x[rng.integers(0, rows)] = np.nan
        return x
    if kind == "b":
        return rng.random(rows) < 0.3
    return rng.integers(-3, 4, rows)


@pytest.mark.parametrize("op", ["cummax", "cummin"])
@pytest.mark.parametrize("kind", ["f", "i", "b"])
@pytest.mark.parametrize("options", [{}, {"indices": True}, {"skipna": True},
                                     {"indices": True, "exclusive": True}])
def test_extremes_and_their_positions_through_summaries(op, kind, options):
    rng = np.random.default_rng(len(op) + ord(kind))
    source = {"f": np.float64, "i": np.int64, "b": np.bool_}[kind]
    spec = kernels.make_spec(op, np.dtype(source), **options)
    for _ in range(40):
        applied, scanned = initial_carry(spec), initial_carry(spec)
        for _ in range(int(rng.integers(1, 7))):
            rows = int(rng.integers(0, 12))
            x, valid = _extreme_values(rng, rows, kind), _valid(rng, rows)
            summary = carries.summarize(spec, x, valid)
            assert carries.advance(spec, applied, summary, rows)
            kernels.scan_block(spec, x, valid, scanned)
            assert _bits(applied.value) == _bits(scanned.value)
            if options.get("indices"):
                assert int(applied.index) == int(scanned.index)
            assert applied.offset == scanned.offset


@pytest.mark.parametrize("options", [{}, {"skipna": True}, {"exclusive": True}])
def test_counts_through_summaries(options):
    rng = np.random.default_rng(9)
    spec = kernels.make_spec("cumcount", np.dtype(np.float64), **options)
    applied, scanned = initial_carry(spec), initial_carry(spec)
    for _ in range(30):
        rows = int(rng.integers(0, 50))
        x, valid = _floats(rng, rows, "cumsum"), _valid(rng, rows)
        assert carries.advance(spec, applied, carries.summarize(spec, x, valid), rows)
        kernels.scan_block(spec, x, valid, scanned)
        assert _bits(applied.value) == _bits(scanned.value)
        assert applied.offset == scanned.offset


def test_which_ops_have_summaries():
    f8, i8 = np.dtype(np.float64), np.dtype(np.int64)
    kinds = {(op, dtype.name[0], tuple(options.items())): carries.summary_kind(
        kernels.make_spec(op, dtype, **options))
        for op in ("cumsum", "cumprod", "cummax", "cumcount", "logcumsumexp", "cummean")
        for dtype in (f8, i8) for options in ({}, {"exclusive": True})}
    assert kinds[("cumsum", "i", ())] == "sum"
    assert kinds[("cumsum", "i", (("exclusive", True),))] == "sum"
    assert kinds[("cumsum", "f", ())] is None
    assert kinds[("cumprod", "i", ())] is None
    assert kinds[("cummax", "f", (("exclusive", True),))] == "extreme"
    assert kinds[("cumcount", "f", ())] == "count"
    assert kinds[("cummean", "i", ())] is None
    assert carries.foldable(kernels.make_spec("logcumsumexp", f8))
    assert not carries.foldable(kernels.make_spec("cumsum", f8, compensated=True))


def _distinct_cells(rng: np.random.Generator, kind: str, rows: int, step: int):
    """A partition's cells: recurring values, and new ones as the partitions go on."""
    import pyarrow as pa

    if kind == "f":
        values = rng.choice([0.0, -0.0, np.nan, -np.nan, 1.0, 2.5, np.inf,
                             *rng.integers(0, 50 * step + 1, 4)], rows)
    elif kind == "i":
        values = rng.integers(-20, 20 * step, rows)
    elif kind == "u":
        values = rng.choice(np.array([0, 1, 2**63, 2**64 - 1, 7 * step], dtype=np.uint64),
                            rows)
    elif kind == "b":
        values = rng.random(rows) < 0.5
    else:
        return pa.array([["NA", "", "a", "b", f"t{step}", f"u{rng.integers(0, 99)}"][k]
                         for k in rng.integers(0, 6, rows)],
                        mask=rng.random(rows) < 0.2)
    return pa.array(values, mask=rng.random(rows) < 0.2)


@pytest.mark.parametrize("kind", ["f", "i", "u", "b", "text"])
@pytest.mark.parametrize("options", [{}, {"exclusive": True}, {"skipna": True}])
def test_a_distinct_count_scanned_from_its_partitions_own_carry(kind, options):
    """Each partition scanned from advance_distinct's carry (the count before it and only
    the values it holds, made the scan's carry on its worker by `opened`) counts as the
    local scan from the whole set does; the union is the local carry's set, the carry
    sent holds no value outside its partition, and its pickled size is the partition's
    keys, not Python objects."""
    import pickle

    from cumtool import distinct

    rng = np.random.default_rng(len(kind) + len(options))
    dtype = {"f": np.float64, "i": np.int64, "u": np.uint64, "b": np.bool_}.get(kind,
                                                                               np.float64)
    spec = kernels.make_spec("cumnunique", np.dtype(dtype), **options)
    na = frozenset({"NA", ""}) if kind == "text" else frozenset()
    local = distinct.DistinctCarry(1)
    union = carries.DistinctUnion(distinct.DistinctCarry(1))
    recurring = elsewhere = 0
    for step in range(60):
        data = _distinct_cells(rng, kind, int(rng.integers(0, 40)), step)
        summary = carries.DistinctSummary(distinct.key_array(spec, data, na))
        assert sorted(map(str, summary.values.python())) == sorted(
            map(str, distinct.distinct_values(spec, data, na)))
        sent = pickle.loads(pickle.dumps(carries.advance_distinct(union, summary)))
        assert set(sent.known.python()) <= set(summary.values.python())
        recurring += len(sent.known) > 0
        elsewhere += sent.elsewhere > 0
        got = distinct.scan(spec, data, carries.opened(sent), text_na=na)
        want = distinct.scan(spec, data, local, text_na=na)
        assert got[0].tolist() == want[0].tolist()
        assert _bits(got[1]) == _bits(want[1])
        assert union.keys() == local.line(0).members
    if kind in "fi":  # (sorted runs, merged as they grow)
        assert union.members is None and 1 < len(union.runs) < 8
    if kind == "text":  # (hashes in sorted runs: no Python set, no hash of two texts)
        assert union.members is None and 1 < len(union.text_runs) < 8
        assert not union.shared
    # Values recur across partitions (sent), and others are counted, not sent.
    assert recurring > 30 and (elsewhere > 30 or kind == "b")


@pytest.mark.parametrize("hashed", [
    pytest.param(lambda text: len(text) % 3, id="length-mod-3"),
    pytest.param(lambda text: 0, id="one-hash"),
    pytest.param(lambda text: text[1:], id="all-but-the-first"),
])
def test_a_text_union_whose_hashes_collide_is_exact(monkeypatch, hashed):
    """Texts that share a hash, in one partition or across partitions, are told apart by
    their texts: the union is the local carry's set after every partition, and each
    partition's count is the local scan's."""
    import zlib

    import pyarrow as pa

    from cumtool import distinct

    def tiny(texts: pa.Array) -> np.ndarray:
        return np.array([zlib.crc32(str(hashed(text)).encode()) for text in texts.to_pylist()],
                        dtype=np.uint64)

    monkeypatch.setattr(distinct, "text_hashes", tiny)
    rng = np.random.default_rng(4)
    spec = kernels.make_spec("cumnunique", np.dtype(np.float64))
    local = distinct.DistinctCarry(1)
    union = carries.DistinctUnion(distinct.DistinctCarry(1))
    for step in range(40):
        rows = int(rng.integers(0, 12))
        data = pa.array([f"{'abc'[v % 3]}{v // 3}" for v in rng.integers(0, 4 * step + 6, rows)],
                        mask=rng.random(rows) < 0.2)
        sent = carries.advance_distinct(union, carries.DistinctSummary(
            distinct.key_array(spec, data)))
        got = distinct.scan(spec, data, carries.opened(sent))
        want = distinct.scan(spec, data, local)
        assert got[0].tolist() == want[0].tolist()
        assert union.keys() == local.line(0).members
        assert len(union) == len(local.line(0).members)
    assert union.members is None and union.shared


def test_a_union_of_two_kinds_of_keys_keeps_the_local_engines_equality():
    """Keys of another kind than before (which one column cannot give: its type is
    fixed) go to a Python set, where an int and a float of one value are one key, as in
    the local scan's set."""
    from cumtool import distinct

    union = carries.DistinctUnion(distinct.DistinctCarry(1))
    ints = distinct.KeyArray(np.array([1, 2, 2**53 + 1], dtype=np.int64))
    floats = distinct.KeyArray(np.array([1.0, 2.5, 2.0**53]).view(np.int64), floats=True)
    assert union.split(ints).tolist() == [False, False, False]
    assert union.split(floats).tolist() == [True, False, False]
    assert union.keys() == {1, 2, 2**53 + 1, 2.5, 2.0**53}


def test_a_union_of_text_and_numbers_keeps_the_local_engines_equality():
    """Text and then numbers (a restored or odd carry): the text's runs go to the set too,
    where the text "1" and the number 1 are two keys."""
    import pyarrow as pa

    from cumtool import distinct

    spec = kernels.make_spec("cumnunique", np.dtype(np.float64))
    union = carries.DistinctUnion(distinct.DistinctCarry(1))
    texts = distinct.key_array(spec, pa.array(["1", "b", "a", None, "b"]))
    assert sorted(texts.values.to_pylist()) == ["1", "a", "b"]
    assert union.split(texts).tolist() == [False, False, False]
    more = distinct.key_array(spec, pa.array(["a", "c"]))  # (in hash order)
    assert dict(zip(more.values.to_pylist(), union.split(more).tolist(), strict=True)) == {
        "a": True, "c": False}
    assert union.members is None and len(union) == 4
    ints = distinct.KeyArray(np.array([1, 2], dtype=np.int64))
    assert union.split(ints).tolist() == [False, False]
    assert union.keys() == {"1", "a", "b", "c", 1, 2}
    assert union.split(texts).tolist() == [True, True, True]


STATS = [
    pytest.param("cummean", {"compensated": False}, id="cummean"),
    pytest.param("cummean", {"compensated": True}, id="cummean-compensated"),
    pytest.param("cumvar", {"ddof": 1}, id="cumvar"),
    pytest.param("cumstd", {"ddof": 0}, id="cumstd"),
    pytest.param("ewma", {"com": 2.0, "adjust": True, "halflife_ns": None}, id="ewma"),
    pytest.param("ewma", {"com": 0.5, "adjust": False, "halflife_ns": None},
                 id="ewma-no-adjust"),
]


def _stat_columns(rng: np.random.Generator, rows: int) -> np.ndarray:
    pick = rng.random()
    if pick < 0.3:
        x = rng.choice([rng.normal(0, 1e3), 1e300, -1e300, 2.5, -0.0, 0.0], rows)
    elif pick < 0.45:  # where a compensated sum differs: huge and tiny terms, cancelling
        x = rng.choice([1e16, -1e16, 1.0, 0.1, 1e-300, 5e-324, -3.0, 1e308], rows)
    else:
        x = rng.normal(5, 3, rows)
    for value in SPECIAL if rng.random() < 0.5 else ():
        if rows:
            x[rng.integers(0, rows)] = value
    return x


@pytest.mark.parametrize(("op", "params"), STATS)
@pytest.mark.parametrize("skipna", [False, True])
def test_a_statistics_fold_leaves_the_carry_its_scan_leaves(monkeypatch, op, params, skipna):
    """_sequential.fold_stats (carries.fold_stats in C) against the scan: stats.scan_block
    with its own C loops, and with none (its Python recurrences, the fold's twin): the
    state's bytes, every field, the same after a chain of partitions."""
    from cumtool import native

    if carries.SEQUENTIAL is None:
        pytest.fail("the C extension _sequential is not built: run setup.py build_ext")
    rng = np.random.default_rng(17)
    spec = kernels.make_spec(op, np.dtype(np.float64), skipna=skipna, **params)
    assert carries.stat_foldable(spec)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        for _ in range(25):
            width = int(rng.integers(1, 11))
            folded = [initial_carry(spec) for _ in range(width)]
            scanned = copy.deepcopy(folded)
            twins = copy.deepcopy(folded)
            for _partition in range(int(rng.integers(1, 5))):
                rows = int(rng.integers(0, 300))
                columns = [(_stat_columns(rng, rows), _valid(rng, rows))
                           for _ in range(width)]
                carries.fold_stats([spec] * width, columns, folded)
                for (x, valid), a, b in zip(columns, scanned, twins, strict=True):
                    kernels.scan_block(spec, x, valid, a)
                    with monkeypatch.context() as patched:
                        patched.setattr(native, "SEQUENTIAL", None)
                        patched.setattr(carries, "SEQUENTIAL", None)
                        carries.fold_stats([spec], [(x, valid)], [b])
            for a, b, c in zip(folded, scanned, twins, strict=True):
                assert _bits(a.value) == _bits(b.value)
                assert _bits(b.value) == _bits(c.value)
                assert a.offset == b.offset == c.offset


def test_statistics_that_are_not_folded():
    assert not carries.stat_foldable(kernels.make_spec("cumcount", np.dtype(np.float64)))
    assert carries.stat_foldable(kernels.make_spec("cummean", np.dtype(np.int32),
                                                   compensated=False))


@pytest.mark.parametrize(("op", "params"), STATS[:3])
@pytest.mark.parametrize("width", [8, 17])
def test_whole_columns_of_a_statistic_eight_at_a_time(op, params, width):
    """Columns with no cell skipped: the mean's sum takes the sum's fast loop after its
    first row (eight columns at a time); the rest, the general one."""
    rng = np.random.default_rng(width)
    spec = kernels.make_spec(op, np.dtype(np.float64), **params)
    folded = [initial_carry(spec) for _ in range(width)]
    other_nan = np.array([0xFFF8000000000000], dtype=np.uint64).view(np.float64)[0]
    for k, carry in enumerate(folded):  # carried NaNs of another sign than the cells'
        state = np.zeros((), dtype=carry.value.dtype)
        state["n"] = 3
        state[state.dtype.names[1]] = other_nan if k % 2 else 1.5
        carry.value = state
    scanned = copy.deepcopy(folded)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        for rows in (1, 50, 0, 333):
            columns = [(_stat_columns(rng, rows), None) for _ in range(width)]
            for x, _ in columns[: width // 2]:
                x[:1] = np.nan
            carries.fold_stats([spec] * width, columns, folded)
            _scanned_alike(spec, columns, folded, scanned)
