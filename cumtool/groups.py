"""Grouped and resetting scans (`--by`, `--reset`) on the rows axis, streamed batch by batch.

Each row belongs to a *run*: the rows of one group (a distinct combination of the key
columns) between two resets. A run is scanned from its group's carried state, or from the
identity if it starts at a reset. Runs of a batch are scanned together: they are bucketed
by length (powers of two), laid out as the columns of a 2-D block padded with skipped
cells, and scanned along axis 0 with one carry per column. So every run is summed left to
right with the carry folded in first: bit-identical to scanning each group on its own, with
a bounded number of numpy calls per batch (one per bucket) whatever the number of groups.
Memory grows with the number of groups, not rows.

Where the C loops are built, a float64 or int64 cumsum or cumprod (--exclusive and
--skipna too) skips the runs: one pass in row order adds each value to its group's running
value, the same operations in the same order.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa

from cumtool import kernels, native
from cumtool.errors import ScanOverflowError

if TYPE_CHECKING:
    import polars as pl

GROUP_ID = _GROUP = "__cumtool_group"  # the group-number column of the saved keys
_NAN = "__cumtool_nan"


class GroupKeys:
    """Dense group ids for key tuples, stable across batches (a missing key is a key),
    numbered in order of first appearance.

    Where the C loops are built and every key column holds text, bytes, integers, booleans,
    floats, dates, times or timestamps, hash tables in C number them (`_HashedKeys`: one
    pass over the rows); else, and where a batch's key types differ from the first one's,
    polars joins each batch with the keys seen so far (`_JoinedKeys`, the path the tests
    compare the tables with). Both give the same ids and the same known() frame."""

    def __init__(self, positions: list[int], empty_is_missing: bool = False) -> None:
        self.positions = positions
        self.empty_is_missing = empty_is_missing  # text read from CSV: "" is an empty cell
        self._keys: _HashedKeys | _JoinedKeys | None = None  # chosen at the first batch
        self._restored: pl.DataFrame | None = None
        self._restored_count = 0

    @property
    def count(self) -> int:
        return self._keys.count if self._keys is not None else self._restored_count

    def ids(self, batch: pa.RecordBatch) -> np.ndarray:
        columns = [batch.column(i) for i in self.positions]
        keys = self._keys
        if keys is None:
            keys = self._keys = self._choose(columns)
        if isinstance(keys, _HashedKeys) and not keys.takes(columns):
            keys = self._keys = _JoinedKeys(self.empty_is_missing, keys.known(), keys.count)
        return keys.ids(columns)

    def _choose(self, columns: list[pa.Array]) -> _HashedKeys | _JoinedKeys:
        if native.SEQUENTIAL is not None and all(map(_hashable, columns)):
            hashed = _HashedKeys(self.empty_is_missing, [c.type for c in columns])
            if self._restored is None or hashed.restore(self._restored,
                                                        self._restored_count):
                return hashed
        return _JoinedKeys(self.empty_is_missing, self._restored, self._restored_count)

    def known(self) -> pl.DataFrame | None:
        """The keys seen so far and their group ids (for --state); None before any row."""
        return self._keys.known() if self._keys is not None else self._restored

    def restore(self, known: pl.DataFrame | None, count: int) -> None:
        """Continue from keys saved by known() (a run resumed with --state)."""
        self._keys, self._restored, self._restored_count = None, known, count


class _JoinedKeys:
    """Group ids by polars joins of each batch's keys with the keys seen so far."""

    def __init__(self, empty_is_missing: bool, known: pl.DataFrame | None,
                 count: int) -> None:
        self.empty_is_missing = empty_is_missing
        self._known = known
        self.count = count

    def ids(self, columns: list[pa.Array]) -> np.ndarray:
        import polars as pl

        keys = _key_frame(columns, self.empty_is_missing)
        on = keys.columns
        if self._known is None:
            self._known = keys.head(0).with_columns(pl.lit(0, pl.Int64).alias(_GROUP))
        # Known keys are unique, so a left join keeps one row per batch row, in order.
        found = keys.join(self._known, on=on, how="left", nulls_equal=True,
                          maintain_order="left").get_column(_GROUP)
        if not found.null_count():
            return found.to_numpy()
        unseen = found.is_null()
        rows = keys.filter(unseen)
        new = rows.unique(maintain_order=True)  # numbered in order of first appearance
        new = new.with_columns(
            pl.int_range(self.count, self.count + new.height, dtype=pl.Int64).alias(_GROUP))
        self.count += new.height
        self._known = pl.concat([self._known, new])
        ids = found.fill_null(0).to_numpy().copy()
        ids[unseen.to_numpy()] = rows.join(new, on=on, how="left", nulls_equal=True,
                                           maintain_order="left").get_column(_GROUP).to_numpy()
        return ids

    def known(self) -> pl.DataFrame | None:
        return self._known


def _key_frame(columns: list[pa.Array], empty_is_missing: bool) -> pl.DataFrame:
    """Key columns as polars joins them: by position, under names of our own (a header
    may repeat a name or leave it empty), "" missing where empty_is_missing, and floats
    as _joinable makes them."""
    import polars as pl

    keys = pl.from_arrow(pa.RecordBatch.from_arrays(
        columns, names=[f"key{i}" for i in range(len(columns))]))
    assert isinstance(keys, pl.DataFrame)
    if empty_is_missing:  # a quoted "" is an empty cell, missing like a bare one
        keys = keys.with_columns(pl.col(n).replace("", None)
                                 for n, t in keys.schema.items() if t == pl.String)
    return _joinable(keys)


def _joinable(keys: pl.DataFrame) -> pl.DataFrame:
    """polars' joins do not reliably match a NaN key with NaN (a NaN row could find no
    group): a float key joins as its value with NaN made null, plus a flag that tells
    NaN from a missing key."""
    import polars as pl

    floats = [name for name, dtype in keys.schema.items() if dtype.is_float()]
    if not floats:
        return keys
    return keys.with_columns(
        *(pl.col(name).is_nan().alias(f"{name}{_NAN}") for name in floats),
        *(pl.col(name).fill_nan(None) for name in floats),
    )


# Key columns the C tables take, by the bytes that stand for a value: equal values, equal
# bytes. Text and bytes as they are (by offsets), fixed-width values by their bytes, floats
# with one NaN and 0.0 for -0.0 (polars' joins match them so). Read from the Arrow
# buffers with numpy: pyarrow.compute would cost its import (70 ms) to a CSV run.
_TEXT = (pa.types.is_string, pa.types.is_large_string)
_BYTES = (pa.types.is_binary, pa.types.is_large_binary)
_FIXED = (pa.types.is_integer, pa.types.is_date, pa.types.is_time, pa.types.is_timestamp,
          pa.types.is_duration)
_FLOATS = (pa.float32(), pa.float64())  # not float16: polars has none


def _hashable(column: pa.Array) -> bool:
    kind = column.type
    return (any(test(kind) for test in (*_TEXT, *_BYTES, *_FIXED))
            or pa.types.is_boolean(kind) or kind in _FLOATS)


def _kind(kind: pa.DataType) -> str:
    """A key column's type as polars' joins tell them apart: Arrow's text types are one
    polars type, and so are its binary ones."""
    if pa.types.is_string(kind) or pa.types.is_large_string(kind) or (
            pa.types.is_string_view(kind)):
        return "text"
    if pa.types.is_binary(kind) or pa.types.is_large_binary(kind) or (
            pa.types.is_binary_view(kind)):
        return "bytes"
    return str(kind)


def _width(kind: pa.DataType) -> int:
    """Bytes a key of this type, or 0: variable (text and binary)."""
    if any(test(kind) for test in (*_TEXT, *_BYTES)):
        return 0
    return 1 if pa.types.is_boolean(kind) else kind.bit_width // 8


def _bits(buffer: pa.Buffer | None, offset: int, n: int) -> np.ndarray:
    """n bits of an Arrow bitmap from bit `offset` on, as bools (no buffer: none set)."""
    if buffer is None:
        return np.zeros(n, dtype=bool)
    first = offset // 8
    raw = np.frombuffer(buffer, np.uint8, count=(offset + n + 7) // 8 - first, offset=first)
    return np.unpackbits(raw, bitorder="little")[offset % 8:offset % 8 + n].view(bool)


def _valid(column: pa.Array) -> np.ndarray | None:
    if not column.null_count:
        return None
    return _bits(column.buffers()[0], column.offset, len(column))


def _offsets(column: pa.Array) -> tuple[np.ndarray, pa.Buffer | bytes]:
    """A text or binary column's offsets (int64) and data."""
    _, offsets, data = column.buffers()
    large = pa.types.is_large_string(column.type) or pa.types.is_large_binary(column.type)
    step = 8 if large else 4
    cut = np.frombuffer(offsets, dtype=np.int64 if large else np.int32,
                        count=len(column) + 1, offset=column.offset * step)
    return cut.astype(np.int64, copy=False), (data if data is not None else b"")


def _fixed(column: pa.Array) -> np.ndarray:
    """A fixed-width column's values as rows of bytes, (rows, width) uint8."""
    width = column.type.bit_width // 8
    data = column.buffers()[1]
    if data is None:  # no values (no rows, or none present): nothing under them is read
        return np.zeros((len(column), width), dtype=np.uint8)
    return np.frombuffer(data, dtype=np.uint8, count=len(column) * width,
                         offset=column.offset * width).reshape(-1, width)


def _key_bytes(column: pa.Array) -> tuple[object, np.ndarray | None, np.ndarray | None]:
    """(data, offsets or None, valid or None) of a key column, as KeyTable.encode takes
    them: a text or binary column by its offsets into its data, any other by rows of
    fixed width. What lies under a missing cell is not read."""
    kind = column.type
    valid = _valid(column)
    if _width(kind) == 0:
        offsets, data = _offsets(column)
        return data, offsets, valid
    if pa.types.is_boolean(kind):
        return _bits(column.buffers()[1], column.offset, len(column)), None, valid
    if kind in _FLOATS:
        values = _fixed(column).reshape(-1).view(kind.to_pandas_dtype())
        with np.errstate(invalid="ignore"):  # a signalling NaN
            return np.where(np.isnan(values), np.nan, values + 0), None, valid  # -0.0 + 0: 0.0
    return _fixed(column), None, valid


def _take(column: pa.Array, rows: np.ndarray) -> pa.Array:
    """column.take(rows) without pyarrow.compute, text and binary as their large types,
    and a missing cell zeros (no bytes) as polars makes it."""
    kind, n = column.type, rows.shape[0]
    valid = _valid(column)
    picked = np.ones(n, dtype=bool) if valid is None else valid[rows]
    nulls = n - int(np.count_nonzero(picked))
    validity = pa.py_buffer(np.packbits(picked, bitorder="little")) if nulls else None
    if _width(kind) == 0:
        offsets, data = _offsets(column)
        starts = offsets[rows]
        lengths = np.where(picked, offsets[rows + 1] - starts, 0)
        cut = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(lengths, out=cut[1:])
        at = np.repeat(starts - cut[:-1], lengths) + np.arange(cut[-1], dtype=np.int64)
        large = pa.large_string() if any(t(kind) for t in _TEXT) else pa.large_binary()
        return pa.Array.from_buffers(large, n, [validity, pa.py_buffer(cut), pa.py_buffer(
            np.frombuffer(data, dtype=np.uint8)[at])], null_count=nulls)
    if pa.types.is_boolean(kind):
        bits = _bits(column.buffers()[1], column.offset, len(column))[rows] & picked
        values = np.packbits(bits, bitorder="little")
    else:
        values = _fixed(column)[rows] * picked[:, None].astype(np.uint8)
    return pa.Array.from_buffers(kind, n, [validity, pa.py_buffer(values)], null_count=nulls)


class _HashedKeys:
    """Group ids from hash tables in C (KeyTable): one per key column, and for several
    columns one more that numbers the rows' tuples of column ids. The keys themselves are
    kept as the batch rows where each first appeared, for known()."""

    def __init__(self, empty_is_missing: bool, types: list[pa.DataType]) -> None:
        assert native.SEQUENTIAL is not None
        self.empty_is_missing = empty_is_missing
        self.types = types
        self._kinds = [_kind(t) for t in types]
        table = native.SEQUENTIAL.KeyTable
        self._tables = [table(_width(t)) for t in types]
        self._tuples = table(8 * len(types)) if len(types) > 1 else None
        self._base: pl.DataFrame | None = None  # keys restored from --state
        self._firsts: list[pa.RecordBatch] = []  # each batch's new keys, in id order
        self.count = 0

    def takes(self, columns: list[pa.Array]) -> bool:
        return (all(map(_hashable, columns))
                and [_kind(c.type) for c in columns] == self._kinds)

    def ids(self, columns: list[pa.Array]) -> np.ndarray:
        n = len(columns[0])
        encoded, new = self._encode(columns, n)
        if new or (not self._firsts and self._base is None):  # the first batch: its types
            firsts = encoded.firsts[:new]
            self._firsts.append(pa.RecordBatch.from_arrays(
                [_take(c, firsts) for c in columns],
                names=[f"key{i}" for i in range(len(columns))]))
        self.count += new
        return encoded.out

    def _encode(self, columns: list[pa.Array], n: int) -> tuple[_Encoded, int]:
        encoded = _Encoded(np.empty(n, dtype=np.int64), np.empty(n, dtype=np.int64))
        if n == 0:
            return encoded, 0
        codes = []
        new = 0
        for table, column in zip(self._tables, columns, strict=True):
            data, offsets, valid = _key_bytes(column)
            out = encoded.out if self._tuples is None else np.empty(n, dtype=np.int64)
            empty = self.empty_is_missing and _kind(column.type) == "text"
            new = table.encode(data, offsets, valid, empty, out, encoded.firsts)
            codes.append(out)
        if self._tuples is not None:
            new = self._tuples.encode(np.stack(codes, axis=1), None, None, False,
                                      encoded.out, encoded.firsts)
        return encoded, new

    def restore(self, known: pl.DataFrame, count: int) -> bool:
        """Number the keys of known() as they were; False where that does not give the
        same ids (keys of other types than this run's, a frame not in id order)."""
        import polars as pl

        names = [f"key{i}" for i in range(len(self.types))]
        if (known.columns[-1:] != [_GROUP] or known.height != count
                or any(name not in known.columns for name in names)):
            return False
        raw = known.select(
            pl.when(pl.col(f"{name}{_NAN}")).then(float("nan")).otherwise(pl.col(name))
            .alias(name) if f"{name}{_NAN}" in known.columns else pl.col(name)
            for name in names).to_arrow()
        columns = [raw.column(name).combine_chunks() for name in names]
        if not self.takes(columns):
            return False
        encoded, new = self._encode(columns, count)
        order = np.arange(count, dtype=np.int64)
        if new != count or not np.array_equal(encoded.out, order) or not np.array_equal(
                known.get_column(_GROUP).to_numpy(), order):
            return False
        self._base, self.count = known, count
        return True

    def known(self) -> pl.DataFrame | None:
        import polars as pl

        frames = [] if self._base is None else [self._base]
        start = self.count - sum(piece.num_rows for piece in self._firsts)
        for piece in self._firsts:
            frame = _key_frame(piece.columns, self.empty_is_missing)
            frames.append(frame.with_columns(pl.int_range(
                start, start + piece.num_rows, dtype=pl.Int64).alias(_GROUP)))
            start += piece.num_rows
        return pl.concat(frames) if frames else None


@dataclass
class _Encoded:
    out: np.ndarray  # each row's group id
    firsts: np.ndarray  # the rows where new groups first appear, in id order


@dataclass
class Bucket:
    """Runs of similar length laid out as the columns of one padded 2-D block."""

    runs: np.ndarray  # the run numbers, one per block column
    rows: np.ndarray  # the batch rows that fill the block
    cell: tuple[np.ndarray, np.ndarray]  # (position in run, block column) of each row
    shape: tuple[int, int]


@dataclass
class Runs:
    """How a batch's rows split into runs, and the block layout shared by all columns."""

    run_of_row: np.ndarray  # run number (0..count-1) of each row, increasing per group
    group_of_run: np.ndarray  # group id of each run
    fresh: np.ndarray  # whether the run starts at a reset (from the identity)
    last_of_group: np.ndarray  # run numbers that end their group's part of the batch
    buckets: list[Bucket]


def _buckets(order: np.ndarray, run_sorted: np.ndarray, run_count: int) -> list[Bucket]:
    """Bucket runs by length (powers of two): padding is at most half of each block."""
    n = order.shape[0]
    lengths = np.bincount(run_sorted, minlength=run_count)
    starts = np.cumsum(lengths) - lengths  # a batch of no rows has no runs, no starts
    rank = np.arange(n) - np.repeat(starts, lengths)
    bucket_of_run = np.ceil(np.log2(np.maximum(lengths, 1))).astype(np.int64)
    row_bucket = np.repeat(bucket_of_run, lengths)
    buckets = []
    for bucket in np.unique(bucket_of_run):
        bucket_runs = np.flatnonzero(bucket_of_run == bucket)
        column_of_run = np.full(run_count, -1, dtype=np.int64)
        column_of_run[bucket_runs] = np.arange(bucket_runs.shape[0])
        picked = row_bucket == bucket
        cell = (rank[picked], column_of_run[run_sorted[picked]])
        shape = (int(lengths[bucket_runs].max()), int(bucket_runs.shape[0]))
        buckets.append(Bucket(bucket_runs, order[picked], cell, shape))
    return buckets


def _sort_by_group(groups: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Rows ordered by group, then input order, and their groups in that order. The row
    number packed below the group id makes one plain sort do it: about 1.5x faster than
    a stable argsort, which it equals."""
    n = groups.shape[0]
    bits = max(n - 1, 1).bit_length()
    if n and int(groups.max()) >= 1 << (62 - bits):  # cannot pack: the slower way
        order = np.argsort(groups, kind="stable")
        return order, groups[order]
    packed = (groups.astype(np.int64) << bits) | np.arange(n, dtype=np.int64)
    packed.sort()
    return packed & ((1 << bits) - 1), packed >> bits


def split_runs(groups: np.ndarray, resets: np.ndarray | None) -> Runs:
    """Runs of a batch from each row's group id and reset flag."""
    n = groups.shape[0]
    if resets is None:
        resets = np.zeros(n, dtype=bool)
    order, sorted_groups = _sort_by_group(groups)
    sorted_resets = resets[order]
    group_start = np.ones(n, dtype=bool)
    group_start[1:] = sorted_groups[1:] != sorted_groups[:-1]
    run_start = group_start | sorted_resets
    run_sorted = np.cumsum(run_start) - 1
    run_of_row = np.empty(n, dtype=np.int64)
    run_of_row[order] = run_sorted
    starts = np.flatnonzero(run_start)
    group_of_run = sorted_groups[starts]
    fresh = sorted_resets[starts]
    last = np.ones(starts.shape[0], dtype=bool)
    last[:-1] = group_of_run[1:] != group_of_run[:-1]
    # `order` sorts rows by group, then input order: that is by run, as the blocks need.
    buckets = _buckets(order, run_sorted, starts.shape[0])
    return Runs(run_of_row, group_of_run, fresh, np.flatnonzero(last), buckets)


class BatchGroups:
    """A batch's rows as group ids and reset flags, split into runs only when a column's
    scan needs them (the C loop does not)."""

    def __init__(self, ids: np.ndarray, resets: np.ndarray | None) -> None:
        self.ids, self.resets = ids, resets

    @cached_property
    def runs(self) -> Runs:
        return split_runs(self.ids, self.resets)

    def prefix(self, rows: int) -> BatchGroups:
        """The first `rows` rows (to find the first overflow by bisection)."""
        return BatchGroups(self.ids[:rows], None if self.resets is None else self.resets[:rows])


class GroupCarry:
    """The carried state of every group seen so far."""

    def __init__(self, spec: kernels.ScanSpec) -> None:
        self.spec = spec
        self.value = np.empty(0, dtype=spec.state_dtype)
        self.index = np.empty(0, dtype=np.int64)
        self.pending = np.empty(0, dtype=bool)  # --exclusive: see kernels.Carry.pending

    def copy(self) -> GroupCarry:
        twin = GroupCarry(self.spec)
        twin.value, twin.index, twin.pending = (
            self.value.copy(), self.index.copy(), self.pending.copy())
        return twin

    def grow(self, count: int) -> None:
        if count > self.value.shape[0]:
            extra = count - self.value.shape[0]
            self.value = np.concatenate(
                [self.value, np.full(extra, self.spec.identity, dtype=self.spec.state_dtype)])
            self.index = np.concatenate([self.index, np.full(extra, -1, dtype=np.int64)])
            self.pending = np.concatenate([self.pending, np.zeros(extra, dtype=bool)])


_NATIVE_LOOPS = {"sum": 0, "product": 1}  # grouped_accumulate's op codes
_NATIVE_DTYPES = {np.dtype(np.float64), np.dtype(np.int64)}


def _native_scan(spec: kernels.ScanSpec, values: np.ndarray, valid: np.ndarray | None,
                 batch: BatchGroups, carry: GroupCarry) -> kernels.ScanResult | None:
    """A float64 or int64 cumsum or cumprod in one pass of the C loop, --exclusive and
    --skipna included; None where it does not apply (no C module, other ops and dtypes,
    Neumaier's sum, an int64 --exclusive that must report overflow: its error waits for
    the group's next row), and where an int64 result overflows: the runs path then reports
    it in its words."""
    integer = values.dtype.kind == "i"
    wrap = spec.overflow == "wrap"
    if (native.SEQUENTIAL is None or spec.is_stat
            or spec.accumulator.native not in _NATIVE_LOOPS
            or values.dtype not in _NATIVE_DTYPES
            or {spec.in_dtype, spec.acc_dtype, spec.out_dtype} != {values.dtype}
            or (spec.exclusive and integer and not wrap)):
        return None
    out = np.empty(values.shape[0], dtype=values.dtype)
    # An int64 overflow hands the batch back to the runs path: keep the carry to restore.
    before = carry.value.copy() if integer and not wrap else None
    skipna = spec.skipna and not integer
    overflow = native.SEQUENTIAL.grouped_accumulate(
        _NATIVE_LOOPS[str(spec.accumulator.native)], wrap, values, valid, batch.ids,
        batch.resets, carry.value, out, spec.exclusive, skipna)
    if overflow >= 0:
        assert before is not None
        carry.value = before  # as it was before the batch
        return None
    skipped = None if valid is None else ~valid
    if skipna:
        nan = np.isnan(values)
        if valid is not None:
            nan &= valid
        if nan.any():
            skipped = nan if skipped is None else skipped | nan
    return kernels.ScanResult(out, None, skipped)


def scan_runs(
    spec: kernels.ScanSpec, values: np.ndarray, valid: np.ndarray | None,
    batch: BatchGroups, carry: GroupCarry, positions: np.ndarray | None,
) -> kernels.ScanResult:
    """Scan a batch's column run by run; `positions` are the rows' indices for --indices.
    Raises ScanOverflowError with the row (in the batch) where an overflow happened."""
    fast = _native_scan(spec, values, valid, batch, carry)
    if fast is not None:
        return fast
    runs = batch.runs
    n = values.shape[0]
    out = np.empty(n, dtype=spec.out_dtype)
    out_indices = np.empty(n, dtype=np.int64) if spec.indices else None
    skipped = np.zeros(n, dtype=bool)
    any_skipped = False
    missing = np.zeros(n, dtype=bool)
    any_missing = False
    run_count = runs.group_of_run.shape[0]
    end_value = np.empty(run_count, dtype=spec.state_dtype)
    end_index = np.empty(run_count, dtype=np.int64)
    end_pending = np.zeros(run_count, dtype=bool)
    for bucket in runs.buckets:
        bucket_runs, rows, cell, shape = bucket.runs, bucket.rows, bucket.cell, bucket.shape
        block = np.zeros(shape, dtype=values.dtype)
        block[cell] = values[rows]
        present = np.zeros(shape, dtype=bool)
        present[cell] = True if valid is None else valid[rows]
        where = None
        if positions is not None:
            where = np.zeros(shape, dtype=np.int64)
            where[cell] = positions[rows]
        groups = runs.group_of_run[bucket_runs]
        fresh = runs.fresh[bucket_runs]
        run_carry = kernels.Carry(
            np.where(fresh, spec.identity, carry.value[groups]).astype(spec.state_dtype),
            np.where(fresh, -1, carry.index[groups]),
            pending=np.where(fresh, False, carry.pending[groups]),
        )
        try:
            result = kernels.scan_block(spec, block, present, run_carry, positions=where)
        except ScanOverflowError as error:
            at = np.flatnonzero((cell[0] == error.position[0]) & (cell[1] == error.position[1]))
            raise ScanOverflowError(str(error), (int(rows[at[0]]),)) from None
        out[rows] = result.values[cell]
        if out_indices is not None and result.indices is not None:
            out_indices[rows] = result.indices[cell]
        if result.skipped is not None:
            skipped[rows] = result.skipped[cell]
            any_skipped = True
        if result.missing is not None:
            missing[rows] = result.missing[cell]
            any_missing = True
        end_value[bucket_runs] = run_carry.value
        end_index[bucket_runs] = run_carry.index
        if run_carry.pending is not None:
            end_pending[bucket_runs] = run_carry.pending
    last = runs.last_of_group
    carry.value[runs.group_of_run[last]] = end_value[last]
    carry.index[runs.group_of_run[last]] = end_index[last]
    carry.pending[runs.group_of_run[last]] = end_pending[last]
    return kernels.ScanResult(out, out_indices, skipped if any_skipped else None,
                              missing if any_missing else None)
