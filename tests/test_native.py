"""The C loops of cumtool/_ext/_sequential.c against the numpy and Python-float paths they
replace where the module is built (for cumsum and cumprod, numpy's accumulate down axis
0): the same bits on random blocks, carried across any split into batches, with missing
cells, NaN, infinities and wide (many-line) blocks."""

from __future__ import annotations

import shutil
import sysconfig

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cumtool import grouped, kernels, native
from cumtool.errors import ScanOverflowError

needs_c = pytest.mark.skipif(native.SEQUENTIAL is None,
                             reason="cumtool._ext._sequential is not built (no C compiler)")

OPTIONS = {"cumsum": {}, "cumprod": {}, "cummax": {}, "cummin": {}, "logcumsumexp": {},
           "cummean": {}, "cumvar": {}, "cumstd": {"ddof": 0},
           "ewma": {"com": 1 / 0.35 - 1}, "ewma-unadjusted": {"com": 3.0, "adjust": False},
           "ewma-slow": {"com": 2000.0}, "cumsum-compensated": {"compensated": True},
           "cummean-compensated": {"compensated": True}}


def test_the_c_loops_are_built_where_a_compiler_is():
    """pip builds the module wherever it finds a C compiler: missing here is a broken build,
    which the fallback would otherwise hide as a slow run."""
    compiler = (sysconfig.get_config_var("CC") or "cc").split()[0]
    if shutil.which(compiler) is None:
        pytest.skip(f"no C compiler ({compiler}) on this machine")
    assert native.SEQUENTIAL is not None


def scan_in_batches(op: str, x: np.ndarray, valid: np.ndarray | None,
                    cuts: list[int]) -> np.ndarray:
    options = OPTIONS[op]
    spec = kernels.make_spec(op.split("-")[0], x.dtype, **options)
    carry = kernels.initial_carry(spec, x.shape[1:])
    parts = []
    for lo, hi in zip([0, *cuts], [*cuts, x.shape[0]], strict=True):
        result = kernels.scan_block(spec, x[lo:hi], None if valid is None else valid[lo:hi],
                                    carry)
        parts.append(result.values)
    return np.concatenate(parts)


def both_paths(op: str, x: np.ndarray, valid: np.ndarray | None,
               cuts: list[int]) -> tuple[np.ndarray, np.ndarray]:
    fast = scan_in_batches(op, x, valid, cuts)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(native, "SEQUENTIAL", None)
        slow = scan_in_batches(op, x, valid, cuts)
    return fast, slow


def same_bits(a: np.ndarray, b: np.ndarray) -> bool:
    """Bit for bit, -0.0 apart from 0.0, with any NaN equal to any NaN: which NaN an
    operation on two NaNs gives depends on the compiler's operand order (numpy's own
    vectorised and scalar loops differ there too), and the contract does not fix it."""
    if a.dtype != b.dtype or a.shape != b.shape:
        return False
    nan = np.isnan(a)
    if not np.array_equal(nan, np.isnan(b)):
        return False
    return np.array_equal(a[~nan].view(np.int64), b[~nan].view(np.int64))


SPECIALS = [np.nan, np.inf, -np.inf, 0.0, -0.0, 1e308, -1e308, 5e-324]


@needs_c
@settings(max_examples=60, deadline=None)
@given(op=st.sampled_from(sorted(OPTIONS)),
       rows=st.integers(1, 40), lines=st.sampled_from([1, 3, 200]),
       seed=st.integers(0, 2**32 - 1), scale=st.sampled_from([1e-3, 1.0, 50.0, 1e200]),
       specials=st.floats(0, 0.3), missing=st.floats(0, 0.5),
       cuts=st.lists(st.integers(1, 39), max_size=4))
def test_c_and_python_paths_give_the_same_bits(op, rows, lines, seed, scale,
                                               specials, missing, cuts):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((rows, lines)) * scale
    # repeated values exercise ewma's "y != x" and logaddexp's "x == y" branches
    x[rng.random(x.shape) < 0.2] = 1.0
    special = rng.random(x.shape) < specials
    x[special] = rng.choice(SPECIALS, size=int(special.sum()))
    valid = None if missing == 0 else rng.random(x.shape) >= missing
    fast, slow = both_paths(op, x, valid, sorted(c for c in set(cuts) if c < rows))
    assert same_bits(fast, slow)


@needs_c
@settings(max_examples=60, deadline=None)
@given(op=st.sampled_from(["cumsum", "cumprod", "cummax", "cummin", "cummean", "cumvar"]),
       rows=st.integers(1, 300),
       seed=st.integers(0, 2**32 - 1), scale=st.sampled_from([1e-3, 1.0, 50.0, 1e200]),
       specials=st.floats(0, 0.3), missing=st.sampled_from([0.0, 0.1, 0.6]),
       cuts=st.lists(st.integers(1, 299), max_size=4))
def test_one_column_in_c_and_python_gives_the_same_bits(op, rows, seed, scale, specials,
                                                         missing, cuts):
    """A table's column (1-D), with missing cells or none: the C loop's running value in
    a register, numpy's accumulate through memory: the same bits, across batches."""
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(rows) * scale
    special = rng.random(rows) < specials
    x[special] = rng.choice(SPECIALS, size=int(special.sum()))
    valid = None if missing == 0 else rng.random(rows) >= missing
    fast, slow = both_paths(op, x, valid, sorted(c for c in set(cuts) if c < rows))
    assert fast.shape == slow.shape == (rows,)
    assert same_bits(fast, slow)
    start = np.array([rng.standard_normal() * scale])
    for product in (False, True):
        ufunc = np.multiply if product else np.add
        with np.errstate(over="ignore", invalid="ignore"):
            by_c = native.accumulate_rows(product, x, start)
            by_numpy = ufunc.accumulate(np.concatenate([ufunc(start, x[:1]), x[1:]]))
        assert by_c is not None and same_bits(by_c, by_numpy)


def int64_column_in_batches(x: np.ndarray, valid: np.ndarray | None, cuts: list[int],
                            overflow: str
                            ) -> tuple[list[np.ndarray], tuple[str, tuple[int, ...]] | None]:
    """cumsum of an int64 column batch by batch: the batches' values up to the first
    overflow, and that overflow's message and position in its batch (None: none)."""
    spec = kernels.make_spec("cumsum", x.dtype, overflow=overflow)
    carry = kernels.initial_carry(spec, ())
    parts = []
    for lo, hi in zip([0, *cuts], [*cuts, x.shape[0]], strict=True):
        try:
            parts.append(kernels.scan_block(spec, x[lo:hi], None if valid is None else
                                            valid[lo:hi], carry).values)
        except ScanOverflowError as error:
            return parts, (str(error), error.position)
    return parts, None


@needs_c
@settings(max_examples=80, deadline=None)
@given(rows=st.integers(1, 300), seed=st.integers(0, 2**32 - 1),
       scale=st.sampled_from([1000, 2**40, 2**58, 2**62]),
       overflow=st.sampled_from(["error", "wrap"]), missing=st.sampled_from([0.0, 0.3]),
       cuts=st.lists(st.integers(1, 299), max_size=4))
def test_an_int64_column_in_c_and_numpy_gives_the_same_sums_and_errors(rows, seed, scale,
                                                                      overflow, missing,
                                                                      cuts):
    """An int64 column's cumsum, the running value in a register in C, and numpy's way:
    the same values across batches (missing cells add nothing), wrapped the same, and
    with --overflow error the same first overflow (the C loop leaves a block that
    overflows to numpy, which names it)."""
    rng = np.random.default_rng(seed)
    x = rng.integers(-scale, scale, rows, dtype=np.int64)
    valid = None if missing == 0 else rng.random(rows) >= missing
    cut = sorted(c for c in set(cuts) if c < rows)
    fast = int64_column_in_batches(x, valid, cut, overflow)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(native, "SEQUENTIAL", None)
        slow = int64_column_in_batches(x, valid, cut, overflow)
    assert fast[1] == slow[1]
    assert [p.dtype for p in fast[0]] == [p.dtype for p in slow[0]]
    assert [p.tobytes() for p in fast[0]] == [p.tobytes() for p in slow[0]]
    if valid is not None:
        x = np.where(valid, x, 0)
    if overflow == "wrap" or fast[1] is None:
        assert len(fast[0]) == len(cut) + 1
        assert np.concatenate(fast[0]).tobytes() == np.add.accumulate(x).tobytes()


@needs_c
@pytest.mark.parametrize("op", ["cummax", "cummin"])
@pytest.mark.parametrize("dtype", [np.float64, np.int64])
def test_running_extremes_in_c_keep_the_later_tie_and_the_nan(op, dtype):
    """cummax and cummin of a column in C: a tie takes the later element (-0.0 after 0.0),
    a NaN wins and stays, a carry from the batch before counts, as numpy's way with
    torch's ties gives; int64 columns near their limits too."""
    rng = np.random.default_rng(11)
    if dtype is np.float64:
        x = rng.choice([0.0, -0.0, 1.5, -1.5, np.inf, -np.inf, 2.0], 400)
        x[150], x[320] = np.nan, -np.nan  # each NaN takes over with its own sign (torch)
    else:
        x = rng.choice([0, -1, 2**63 - 1, -(2**63), 7], 400).astype(np.int64)
    x = x.astype(dtype)
    cuts = [1, 2, 77, 151, 152, 399]
    fast, slow = both_paths(op, x, None, cuts)
    assert same_bits(fast, slow)
    if dtype is np.float64:
        assert np.isnan(fast[150:]).all() and not np.isnan(fast[:150]).any()
        assert np.signbit(fast[150:]).tolist() == [False] * 170 + [True] * 80
        zero = np.flatnonzero(fast[:150] == 0)
        signs = np.signbit(fast[zero])
        # each zero out is the sign of the latest zero in, where no other value won
        assert signs.tolist() == [bool(np.signbit(x[:k + 1][x[:k + 1] == 0][-1]))
                                  for k in zero]


@needs_c
def test_the_int64_loop_stops_at_the_first_overflow():
    assert native.SEQUENTIAL is not None
    x = np.array([1, 2**62, 2**62, -5, 7], dtype=np.int64)
    out = np.zeros(5, dtype=np.int64)
    scan = native.SEQUENTIAL.scan_column
    assert scan(x, np.array([0]), out, 3, True) == 2  # checked
    assert scan(x, np.array([2**63 - 1]), out, 3, True) == 0
    assert scan(x, np.array([0]), out, 2, True) == -1  # wrapped
    assert out.tolist() == np.add.accumulate(x).tolist()
    assert native.scan_column(native.COLUMN_SUM_CHECKED, x, np.array(0)) is None
    with pytest.raises(TypeError):
        scan(x.astype(np.float64), np.array([0]), out, 3, True)
    with pytest.raises(ValueError):
        scan(x.astype(np.float64), np.array([0.0]), out.astype(np.float64), 3, False)


@needs_c
@pytest.mark.parametrize("op", sorted(OPTIONS))
def test_a_long_line_across_threads_and_batches(op):
    """Big enough for logcumsumexp to split its lines over threads; 3-D, scanned down
    axis 0, with a carry across an uneven cut."""
    rng = np.random.default_rng(7)
    x = rng.standard_normal((30_000, 3, 5)) * 20
    x[rng.random(x.shape) < 0.01] = -np.inf
    fast, slow = both_paths(op, x, None, [12_345])
    assert same_bits(fast, slow)


@needs_c
@settings(max_examples=200, deadline=None)
@given(x=st.floats(allow_nan=True, allow_infinity=True),
       gap=st.one_of(st.floats(35, 45), st.sampled_from([40.0, np.nextafter(40.0, 41)])),
       side=st.booleans())
def test_logaddexp_shortcut_is_numpys_bits(x, gap, side):
    """A gap just over 40 returns the larger value without exp and log1p: the same bits
    as numpy's logaddexp, on either side and around |x| = 1."""
    assert native.SEQUENTIAL is not None
    with np.errstate(all="ignore"):
        other = x - gap
        start, block = (x, other) if side else (other, x)
        expected = np.logaddexp(np.float64(start), np.float64(block))
        acc = np.array([[block]], dtype=np.float64)
        native.SEQUENTIAL.logaddexp_accumulate(acc, np.array([start]), 0, 1)
    assert same_bits(acc.reshape(-1), np.array([expected]))


@needs_c
def test_bad_arguments_are_type_errors_not_crashes():
    assert native.SEQUENTIAL is not None
    block = np.zeros((4, 2))
    with pytest.raises(TypeError, match="block"):
        native.SEQUENTIAL.logaddexp_accumulate(block.astype(np.float32), np.zeros(2), 0, 2)
    with pytest.raises(ValueError, match="one per line"):
        native.SEQUENTIAL.logaddexp_accumulate(block, np.zeros(3), 0, 2)
    with pytest.raises(ValueError, match="line range"):
        native.SEQUENTIAL.logaddexp_accumulate(block, np.zeros(2), 0, 3)
    starts = (np.zeros(2), np.zeros(2, np.int64), np.zeros(2))
    with pytest.raises(ValueError, match="shape"):
        native.SEQUENTIAL.welford(block, None, *starts, np.zeros((3, 2)), np.zeros((4, 2)))
    with pytest.raises(ValueError, match="out M2"):
        native.SEQUENTIAL.welford(block, None, *starts, np.zeros((4, 2)), np.zeros((4, 3)))
    with pytest.raises(ValueError, match="start M2"):
        native.SEQUENTIAL.welford(block, None, *starts[:2], np.zeros(3), np.zeros((4, 2)),
                                  np.zeros((4, 2)))
    with pytest.raises(TypeError, match="present"):
        native.SEQUENTIAL.welford(block, block, *starts, np.zeros((4, 2)), np.zeros((4, 2)))
    with pytest.raises(ValueError):  # read-only output
        out = np.zeros((4, 2))
        out.flags.writeable = False
        native.SEQUENTIAL.welford(block, None, *starts, out, np.zeros((4, 2)))
    with pytest.raises(ValueError, match="op must be"):
        native.SEQUENTIAL.accumulate_rows(2, block, np.zeros(2), np.zeros((4, 2)))
    with pytest.raises(ValueError, match="out"):
        native.SEQUENTIAL.accumulate_rows(0, block, np.zeros(2), np.zeros((4, 3)))
    with pytest.raises(ValueError, match="one per line"):
        native.SEQUENTIAL.accumulate_rows(0, block, np.zeros(3), np.zeros((4, 2)))
    with pytest.raises(TypeError, match="x"):
        native.SEQUENTIAL.accumulate_rows(0, block.astype(np.int64), np.zeros(2),
                                          np.zeros((4, 2)))


@needs_c
def test_sums_by_rows_are_numpys_accumulate_in_place_too():
    """out may be x itself; a strided (transposed) block is read as it lies."""
    assert native.SEQUENTIAL is not None
    rng = np.random.default_rng(3)
    x = rng.standard_normal((50, 7)) * 1e3
    start = rng.standard_normal(7)
    expected = np.add.accumulate(np.concatenate([start[None] + x[:1], x[1:]]), axis=0)
    in_place = x.copy()
    native.SEQUENTIAL.accumulate_rows(0, in_place, start, in_place)
    assert in_place.tobytes() == expected.tobytes()
    strided = np.asfortranarray(x)
    out = np.empty((50, 7))
    native.SEQUENTIAL.accumulate_rows(0, strided, start, out)
    assert out.tobytes() == expected.tobytes()


def grouped_in_batches(op: str, x: np.ndarray, valid: np.ndarray | None, ids: np.ndarray,
                       resets: np.ndarray | None, cuts: list[int],
                       overflow: str = "error", exclusive: bool = False,
                       skipna: bool = False) -> tuple[np.ndarray, ...]:
    """A --by scan of one column, batch by batch: its values and the carried states."""
    spec = kernels.make_spec(op, x.dtype, overflow=overflow, exclusive=exclusive,
                             skipna=skipna)
    carry = grouped.GroupCarry(spec)
    carry.grow(int(ids.max()) + 1)
    parts = []
    for lo, hi in zip([0, *cuts], [*cuts, x.shape[0]], strict=True):
        batch = grouped.BatchGroups(ids[lo:hi], None if resets is None else resets[lo:hi])
        result = grouped.scan_runs(spec, x[lo:hi], None if valid is None else valid[lo:hi],
                                  batch, carry, None)
        masked = np.nan if result.values.dtype.kind == "f" else 0  # missing: not compared
        parts.append(result.values if valid is None else
                     np.where(valid[lo:hi], result.values, masked))
    return np.concatenate(parts), carry.value


@needs_c
@settings(max_examples=80, deadline=None)
@given(op=st.sampled_from(["cumsum", "cumprod"]), rows=st.integers(1, 300),
       group_count=st.sampled_from([1, 2, 7, 1000]), seed=st.integers(0, 2**32 - 1),
       specials=st.floats(0, 0.3), missing=st.floats(0, 0.5), reset_rate=st.floats(0, 0.3),
       cuts=st.lists(st.integers(1, 299), max_size=4), exclusive=st.booleans(),
       skipna=st.booleans())
def test_grouped_scans_in_c_and_through_runs_give_the_same_bits(
        op, rows, group_count, seed, specials, missing, reset_rate, cuts, exclusive, skipna):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(rows) * (1.5 if op == "cumprod" else 100.0)
    special = rng.random(rows) < specials
    x[special] = rng.choice(SPECIALS, size=int(special.sum()))
    valid = None if missing == 0 else rng.random(rows) >= missing
    ids = rng.integers(0, group_count, rows)
    resets = None if reset_rate == 0 else rng.random(rows) < reset_rate
    cuts = sorted(c for c in set(cuts) if c < rows)
    options = {"exclusive": exclusive, "skipna": skipna}
    fast = grouped_in_batches(op, x, valid, ids, resets, cuts, **options)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(native, "SEQUENTIAL", None)
        slow = grouped_in_batches(op, x, valid, ids, resets, cuts, **options)
    assert same_bits(fast[0], slow[0])
    assert same_bits(fast[1], slow[1])  # the carried running values, for the next batch


@needs_c
def test_grouped_bad_arguments_are_errors_not_crashes():
    assert native.SEQUENTIAL is not None
    accumulate = native.SEQUENTIAL.grouped_accumulate
    values, state, out = np.zeros(3), np.zeros(2), np.zeros(3)
    ids = np.zeros(3, np.int64)
    with pytest.raises(ValueError, match="out of range"):
        accumulate(0, False, values, None, np.array([0, 2, 1]), None, state, out)
    with pytest.raises(ValueError, match="one entry per value"):
        accumulate(0, False, values, None, ids[:2], None, state, out)
    with pytest.raises(ValueError, match="op"):
        accumulate(2, False, values, None, ids, None, state, out)
    with pytest.raises(TypeError, match="groups"):
        accumulate(0, False, values, None, np.zeros(3), None, state, out)
    with pytest.raises(TypeError, match="state"):  # int64 values, a float64 state
        accumulate(0, False, ids, None, ids, None, state, out)


def grouped_outcome(*args: object, **options: object) -> tuple[object, ...]:
    """grouped_in_batches' values and carry, or the overflow it reported."""
    try:
        return grouped_in_batches(*args, **options)  # type: ignore[arg-type]
    except ScanOverflowError as error:
        return ("overflow", str(error), error.position)


@needs_c
@settings(max_examples=80, deadline=None)
@given(op=st.sampled_from(["cumsum", "cumprod"]), rows=st.integers(1, 200),
       group_count=st.sampled_from([1, 3, 50]), seed=st.integers(0, 2**32 - 1),
       magnitude=st.sampled_from([10, 1 << 40, 1 << 62]), missing=st.floats(0, 0.5),
       reset_rate=st.floats(0, 0.3), overflow=st.sampled_from(["error", "wrap"]),
       cuts=st.lists(st.integers(1, 199), max_size=4), exclusive=st.booleans())
def test_grouped_int64_scans_in_c_and_through_runs_agree(
        op, rows, group_count, seed, magnitude, missing, reset_rate, overflow, cuts,
        exclusive):
    """The same int64 values, wrapped the same way, or the same overflow error (the C loop
    hands an overflowing batch back to the runs path, which words it)."""
    rng = np.random.default_rng(seed)
    x = rng.integers(-magnitude, magnitude, rows, dtype=np.int64)
    valid = None if missing == 0 else rng.random(rows) >= missing
    ids = rng.integers(0, group_count, rows)
    resets = None if reset_rate == 0 else rng.random(rows) < reset_rate
    cuts = sorted(c for c in set(cuts) if c < rows)
    options = {"overflow": overflow, "exclusive": exclusive}
    fast = grouped_outcome(op, x, valid, ids, resets, cuts, **options)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(native, "SEQUENTIAL", None)
        slow = grouped_outcome(op, x, valid, ids, resets, cuts, **options)
    if isinstance(fast[0], str) or isinstance(slow[0], str):
        assert fast == slow
    else:
        assert np.array_equal(fast[0], slow[0]) and fast[0].dtype == np.int64
        assert np.array_equal(fast[1], slow[1])


@needs_c
def test_buffers_the_loops_cannot_read_safely_are_refused():
    """Found in review: another byte order read as native, a negative carried count
    indexing ewma's weights, group ids rewritten by the loop's own writes."""
    assert native.SEQUENTIAL is not None
    accumulate = native.SEQUENTIAL.grouped_accumulate
    with pytest.raises(TypeError, match="values"):
        accumulate(0, True, np.array([1.0, 2.0], ">f8"), None, np.zeros(2, np.int64), None,
                   np.zeros(1), np.empty(2))
    with pytest.raises(TypeError, match="groups"):
        accumulate(0, True, np.ones(2), None, np.zeros(2, ">i8"), None, np.zeros(1),
                   np.empty(2))
    shared = np.array([1, 0], np.int64)  # groups and state are one buffer
    with pytest.raises(ValueError, match="out of range"):
        accumulate(0, True, np.array([100_000, 7]), None, shared, None, shared,
                   np.empty(2, np.int64))
    with pytest.raises(ValueError, match="below 0"):
        native.SEQUENTIAL.ewma_means(np.ones((2, 1)), None, np.zeros(1),
                                     np.array([-5], np.int64), np.ones(3), np.ones(3), 0.5,
                                     np.empty((2, 1)))


@pytest.mark.parametrize(("asked", "usable", "pools"), [(16, 2, "2"), (1, 2, "1"), (3, 8, "3")])
def test_the_libraries_pools_take_no_more_threads_than_the_cores(monkeypatch, asked, usable,
                                                                 pools):
    """--threads sizes polars' and Arrow's pools, but beyond the usable cores their threads
    would only queue, each holding memory."""
    monkeypatch.setattr(native, "USABLE", usable)
    monkeypatch.setenv("POLARS_MAX_THREADS", "99")
    monkeypatch.setenv("OMP_NUM_THREADS", "99")
    with native.threads(asked):
        assert asked == native.CORES  # cumtool's own workers: as asked
        assert native.os.environ["POLARS_MAX_THREADS"] == pools
        assert native.os.environ["OMP_NUM_THREADS"] == pools
