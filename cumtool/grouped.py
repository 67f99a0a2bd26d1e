"""Grouped and resetting scans (`--by`, `--reset`) on the rows axis, streamed batch by batch,
from each row's group id (groups.GroupKeys numbers an Arrow batch's keys; CellKeys here
numbers cells cut from text, for the paths that run without pyarrow).

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

import numpy as np

from cumtool import kernels, native
from cumtool.errors import ScanOverflowError


class CellKeys:
    """Group ids for keys cut from text (the paths that run without pyarrow): a row's key
    is its key cells' text, an empty cell missing, as groups.GroupKeys numbers the text
    columns of a CSV (empty_is_missing). Ids are dense, stable across blocks and numbered
    in order of first appearance.

    A cell is given by its bounds in the block's bytes: inside the quotes of a quoted
    cell, its doubled quotes as written. No unquoted cell holds a quote, so equal bytes
    are equal text. Hash tables in C number them (one per key column, and for several
    columns one more for the rows' tuples of column ids, as groups.GroupKeys does);
    a dict of the cells' bytes where the C loops are not built (the twin tests compare)."""

    def __init__(self, columns: int, compiled: bool = True) -> None:
        self.columns = columns
        module = native.SEQUENTIAL if compiled else None
        self._tables = None if module is None else [module.KeyTable(0) for _ in range(columns)]
        self._tuples = (module.KeyTable(8 * columns) if module is not None and columns > 1
                        else None)
        self._seen: dict[tuple[bytes | None, ...], int] = {}

    @property
    def count(self) -> int:
        """The groups numbered so far."""
        if self._tables is None:
            return len(self._seen)
        return (self._tuples if self._tuples is not None else self._tables[0]).count

    def ids(self, data: bytes, starts: list[np.ndarray], ends: list[np.ndarray]) -> np.ndarray:
        """Each row's group id; key column k's cells are data[starts[k][i]:ends[k][i]]
        (1-D int64 arrays, one entry per row)."""
        n = starts[0].shape[0]
        out = np.empty(n, dtype=np.int64)
        if self._tables is None:
            seen = self._seen
            bounds = [list(zip(s.tolist(), e.tolist(), strict=True))
                      for s, e in zip(starts, ends, strict=True)]
            for i, cells in enumerate(zip(*bounds, strict=True)):
                key = tuple(data[a:b] or None for a, b in cells)
                out[i] = seen.setdefault(key, len(seen))
            return out
        firsts = np.empty(n, dtype=np.int64)
        if self._tuples is None:
            self._tables[0].encode(data, starts[0], None, True, out, firsts, ends[0])
            return out
        codes = np.empty((n, self.columns), dtype=np.int64)  # a row's column ids, side by side
        for k, table in enumerate(self._tables):
            table.encode(data, starts[k], None, True, codes[:, k], firsts, ends[k])
        self._tuples.encode(codes, None, None, False, out, firsts)
        return out


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
    """The carried state of every group seen so far: value, index and pending, one entry
    a group (what --state saves). They are views of arrays with room to spare (`room`),
    which grow by doubling: a file of millions of groups, new ones in every block, grows
    them in amortised constant time, not by copying all of them again each block."""

    def __init__(self, spec: kernels.ScanSpec) -> None:
        self.spec = spec
        self.value = np.empty(0, dtype=spec.state_dtype)
        self.index = np.empty(0, dtype=np.int64)
        self.pending = np.empty(0, dtype=bool)  # --exclusive: see kernels.Carry.pending
        self.room = Room(self.value, self.index, self.pending)

    def copy(self) -> GroupCarry:
        twin = GroupCarry(self.spec)
        twin.value, twin.index, twin.pending = (
            self.value.copy(), self.index.copy(), self.pending.copy())
        twin.room = Room(twin.value, twin.index, twin.pending)
        return twin

    def grow(self, count: int) -> None:
        have = self.value.shape[0]
        if count <= have:
            return
        room = self.room
        if not (room.holds(self.value, self.index, self.pending)
                and count <= room.value.shape[0]):  # new room, twice what is needed
            size = max(count, 2 * have, 16)
            room = self.room = Room(
                np.full(size, self.spec.identity, dtype=self.spec.state_dtype),
                np.full(size, -1, dtype=np.int64), np.zeros(size, dtype=bool))
            room.value[:have], room.index[:have], room.pending[:have] = (
                self.value, self.index, self.pending)
        self.value, self.index, self.pending = (
            room.value[:count], room.index[:count], room.pending[:count])


class Room:
    """GroupCarry's arrays with their spare room (not carried state: --state saves the
    views, one entry a group). Entries past the groups hold the identity."""

    def __init__(self, value: np.ndarray, index: np.ndarray, pending: np.ndarray) -> None:
        self.value, self.index, self.pending = value, index, pending

    def holds(self, value: np.ndarray, index: np.ndarray, pending: np.ndarray) -> bool:
        """Whether the three arrays are this room's first entries (not arrays set since,
        by a restored state or a rolled-back scan)."""
        return all(view.base is whole or view is whole for view, whole in (
            (value, self.value), (index, self.index), (pending, self.pending)))


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
    # An int64 overflow hands the batch back to the runs path: keep the carry to restore
    # (of the batch's groups only: the loop changes no other).
    before = carry.value[batch.ids] if integer and not wrap else None
    skipna = spec.skipna and not integer
    overflow = native.SEQUENTIAL.grouped_accumulate(
        _NATIVE_LOOPS[str(spec.accumulator.native)], wrap, values, valid, batch.ids,
        batch.resets, carry.value, out, spec.exclusive, skipna)
    if overflow >= 0:
        assert before is not None
        carry.value[batch.ids] = before  # as it was before the batch
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
