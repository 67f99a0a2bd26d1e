"""What a partition of a distributed scan needs from the partitions before it: their
carried state, found without building their output (cumtool/distributed.py).

Two ways, by op:

- Exactly associative ops (integer cumsum, cummax and cummin with their positions,
  cumcount, cumnunique) have a summary: what a partition does to any carried state,
  computed from the partition alone, in parallel. `advance` applies one to a carried
  state on the client, in microseconds, and gives the carried state of the local engine,
  bit for bit. An
  integer sum's summary holds its exact total and the exact lowest and highest of its
  running sums (Python integers), so a carry that would take a running sum out of range
  is seen at the first partition where it happens in file order, not at a later
  partition whose sum overflows on its own: that partition's scan, from the exact
  carry, then raises the local engine's error at its row. With --exclusive a running
  sum is output at the next counted cell, so an overflow at a partition's last counted
  cell is carried on (the carry's `pending`) to the next partition that counts a cell,
  and is no error where none does, as on the local engine.
- Floats are not associative: each partition's carry is folded from the one before it
  (`fold`), in C, one dependent operation a cell, writing nothing.

Everything here runs on the state a TablePlan carries (`kernels.Carry`), column by
column.
"""

from __future__ import annotations

import dataclasses
import itertools
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa

from cumtool import distinct, kernels
from cumtool._ext import load
from cumtool.blocks import Carry, cast_input, initial_carry, to_acc
from cumtool.columnar import column_to_numpy, decimal_to_float
from cumtool.ops.spec import ScanSpec

SEQUENTIAL = load("_sequential")  # None: the numpy twin below (the same bits)
_FOLDS = {"add": 0, "multiply": 1, "logaddexp": 2}  # _sequential.fold's op numbers
# _sequential.fold_stats's kinds, and the state fields its a and b hold.
_STAT_FOLDS = {"cummean": (0, "s", None), "cumvar": (1, "m", "m2"),
               "cumstd": (1, "m", "m2"), "ewma": (2, "y", None)}
_COMPENSATED_MEAN = (3, "s", "c")  # cummean --compensated: Neumaier's s and c
_INT64 = np.dtype(np.int64)
_WORD = 2**64
# _ranks merges a run with the keys where it is at most this many times as long; a longer
# one is searched (a merge's fresh arrays cost more than its sort, past that).
_MERGED_BELOW = 2


# Which way a column goes ---------------------------------------------------------------

def summary_kind(spec: ScanSpec) -> str | None:
    """"sum", "extreme" or "count" where a column's scan has a summary; None where its
    carry must be folded from the one before it."""
    if spec.is_stat:
        kernel = spec.kernel
        return "count" if getattr(kernel, "name", None) == "cumcount" else None
    accumulator = spec.accumulator
    if accumulator.takes_over is not None:
        return "extreme"
    if accumulator.ufunc == "add" and spec.acc_dtype == _INT64:
        return "sum"
    return None


def foldable(spec: ScanSpec) -> bool:
    """Whether `fold` advances a column's carry without its scan: a float64 sum, product
    or log-sum-exp (no overflow to report, whatever the values)."""
    return (not spec.is_stat and spec.acc_dtype == np.float64
            and spec.accumulator.ufunc in _FOLDS)


def stat_foldable(spec: ScanSpec) -> bool:
    """Whether `fold_stats` advances a column's carry without its scan: cummean (with
    --compensated too), cumvar, cumstd, ewma (not --times: the plan is then not `plain`),
    of real numbers."""
    name = getattr(spec.kernel, "name", None)
    return spec.is_stat and name in _STAT_FOLDS and spec.in_dtype.kind in "biuf"


def plain(plan: Any) -> bool:
    """Whether an op's plan scans each column alone, from a carry per column (no groups,
    no --times, no distinct values): what summaries and folds need."""
    return (plan.axis == 0 and not plan.distinct and not plan.timed
            and plan.group_keys is None and plan.reset is None and not plan.options.share)


def counts_distinct(plan: Any) -> bool:
    """Whether a plan counts distinct values (cumnunique) down plain columns: its summary
    is the set of each column's values."""
    return bool(plan.distinct and plan.axis == 0 and not plan.timed
                and plan.group_keys is None and plan.reset is None
                and not plan.options.share)


def summarized(plans: list[Any]) -> bool:
    """Whether every column of every op's plan has a summary: then no chain is needed."""
    return all(counts_distinct(plan) or (
        plain(plan) and all(summary_kind(s) is not None for s in plan.specs.values()))
        for plan in plans)


def column_data(plan: Any, column: int, table: pa.Table | pa.RecordBatch) -> pa.Array:
    """A scanned column of a partition as its scan sees it (TablePlan.scan_column): the
    converted copy of text, decimals as floats where scanned so, dates as integers."""
    spec = plan.specs[column]
    data = table.column(plan.data_at.get(column, column))
    if isinstance(data, pa.ChunkedArray):  # one chunk, as a partition read whole: no copy
        data = data.chunk(0) if data.num_chunks == 1 else data.combine_chunks()
    if column in plan.decimal_scale and spec.source_dtype.kind == "f":
        data = decimal_to_float(data)
    elif column in plan.temporal:
        data = data.view(pa.int32() if pa.types.is_date32(data.type) else pa.int64())
    return data


def column_values(plan: Any, column: int, table: pa.Table | pa.RecordBatch
                  ) -> tuple[np.ndarray, np.ndarray | None]:
    """column_data as numpy: values, and which are present (None: all)."""
    return column_to_numpy(column_data(plan, column, table))


def _skip(spec: ScanSpec, x: np.ndarray, valid: np.ndarray | None) -> np.ndarray | None:
    """The cells a scan skips (kernels._scan_inclusive): missing, and NaN with --skipna."""
    skip = None if valid is None else ~valid
    if spec.skipna and x.dtype.kind in "fc":
        nan = np.isnan(x)
        if nan.any():
            skip = nan if skip is None else skip | nan
    return skip


# Summaries -----------------------------------------------------------------------------

@dataclass(frozen=True)
class SumSummary:
    """An integer sum over a partition: exact (Python integers, never wrapped)."""

    total: int
    low: int  # the lowest and highest running sum from 0 (0 itself included)
    high: int
    # --exclusive outputs a running sum at the next cell that enters the sum, so an
    # overflow at the partition's last such cell is reported a partition later, if ever:
    # whether any cell enters it, and the lowest and highest running sums before its last.
    counted: bool = True
    head_low: int = 0
    head_high: int = 0


@dataclass(frozen=True)
class ExtremeSummary:
    """The partition's last running extreme from the op's identity, and its row in the
    partition (-1: no cell entered the scan)."""

    value: Any
    index: int


@dataclass(frozen=True)
class CountSummary:
    count: int


@dataclass(frozen=True)
class DistinctSummary:
    """The values a partition's scan counts (distinct.py's keys), without repeats."""

    values: distinct.KeyArray


Summary = SumSummary | ExtremeSummary | CountSummary  # of a Carry (`advance`)


def summarize_column(plan: Any, column: int, table: pa.Table
                     ) -> Summary | DistinctSummary:
    """A scanned column's summary over a partition (`table`), for a plan that has one
    (`summarized`)."""
    if plan.distinct:
        return DistinctSummary(distinct.key_array(
            plan.specs[column], column_data(plan, column, table), plan.options.text_na))
    return summarize(plan.specs[column], *column_values(plan, column, table))


def summarize(spec: ScanSpec, values: np.ndarray, valid: np.ndarray | None) -> Summary:
    """A column's summary over a partition. Raises what the scan raises for a cell on its
    own (a cast that does not fit, a uint64 beyond int64): a carry changes nothing there."""
    kind = summary_kind(spec)
    if kind == "sum":
        x = cast_input(spec, values, valid)
        skip = _skip(spec, x, valid)
        terms = to_acc(spec, x, skip)
        summary = sum_summary(terms)
        if not spec.exclusive:
            return summary
        # A skipped cell's term is 0: the running sums up to the last counted cell are
        # those of the terms before it.
        last = terms.shape[0] - 1 if skip is None else (
            int(np.flatnonzero(~skip)[-1]) if not skip.all() else -1)
        head = sum_summary(terms[:max(last, 0)])
        return dataclasses.replace(summary, counted=last >= 0, head_low=head.low,
                                   head_high=head.high)
    if kind == "extreme":
        return extreme_summary(spec, values, valid)
    if kind == "count":
        carry = initial_carry(spec)
        kernels.scan_block(spec, values, valid, carry)
        return CountSummary(int(carry.value["n"]))
    raise ValueError(f"{spec.op} of {spec.in_dtype} has no summary")


def extreme_summary(spec: ScanSpec, values: np.ndarray, valid: np.ndarray | None
                    ) -> ExtremeSummary:
    """The last running extreme from the identity and its row: the last row holding the
    partition's extreme (ties go to the latest, -0.0 ties 0.0 and the row's own zero is
    the value, as the scan re-reads it). A float partition with a NaN that is not skipped
    is scanned instead: the NaN the scan keeps is not simply the last one."""
    x = cast_input(spec, values, valid)
    skip = _skip(spec, x, valid)
    rows = None if skip is None else np.flatnonzero(~skip)
    taken = x if rows is None else x[rows]
    if taken.shape[0] == 0:
        return ExtremeSummary(spec.identity, -1)
    if taken.dtype.kind == "f" and np.isnan(taken).any():
        # The position is wanted even where --indices is not, to apply the summary.
        indexed = dataclasses.replace(spec, indices=True, exclusive=False)
        carry = initial_carry(indexed)
        kernels.scan_block(indexed, values, valid, carry)
        return ExtremeSummary(carry.value, int(carry.index))
    extreme = taken.min() if spec.accumulator.ufunc == "minimum" else taken.max()
    last = int(np.flatnonzero(taken == extreme)[-1])
    return ExtremeSummary(taken[last], last if rows is None else int(rows[last]))


def sum_summary(terms: np.ndarray) -> SumSummary:
    """The exact total and running extremes of int64 terms. numpy's running sum wraps; a
    step wraps where two terms of one sign give the other (two's complement), upwards for
    a positive term: the exact running sum is the wrapped one plus 2**64 times the net
    count of wraps so far."""
    if terms.shape[0] == 0:
        return SumSummary(0, 0, 0)
    with np.errstate(over="ignore"):
        running = np.add.accumulate(terms)
    before = np.empty_like(running)
    before[0] = 0
    before[1:] = running[:-1]
    wrapped = ((before ^ running) & (terms ^ running)) < 0
    if not wrapped.any():
        return SumSummary(int(running[-1]), min(0, int(running.min())),
                          max(0, int(running.max())))
    turns = np.add.accumulate(np.where(wrapped, np.where(terms > 0, 1, -1), 0))
    top, bottom = int(turns.max()), int(turns.min())
    high = top * _WORD + int(running[turns == top].max())
    low = bottom * _WORD + int(running[turns == bottom].min())
    return SumSummary(int(running[-1]) + int(turns[-1]) * _WORD, min(0, low), max(0, high))


def _sum_limits(spec: ScanSpec) -> tuple[int, int]:
    """The running sums a scan accepts: int64's, and the output type's where narrower
    (kernels._scan_accumulate checks both)."""
    low, high = -(2**63), 2**63 - 1
    out = spec.out_dtype
    if out.kind in "iu" and out != _INT64:
        info = np.iinfo(out)
        low, high = max(low, int(info.min)), min(high, int(info.max))
    return low, high


def advance(spec: ScanSpec, carry: Carry, summary: Summary, rows: int) -> bool:
    """The carry after a partition of `rows` rows, from the one before it and the
    partition's summary (in place). False, leaving the carry as it was, where the
    partition's scan from this carry raises an error (a running sum out of range)."""
    if isinstance(summary, SumSummary):
        before = int(carry.value)
        if spec.overflow == "error":
            low, high = _sum_limits(spec)
            if spec.exclusive and carry.pending is not None and bool(carry.pending):
                # An earlier overflow, output at this partition's first counted cell (the
                # carry itself may be out of the output's range: no check of it).
                if summary.counted:
                    return False
            elif before + summary.low < low or before + summary.high > high:
                if not spec.exclusive or before + summary.head_low < low \
                        or before + summary.head_high > high:
                    return False
                # --exclusive, at the last counted cell: output at the next one, if any,
                # in a later partition (kernels._raise_exclusive).
                carry.pending = np.ones((), dtype=bool)
        after = before + summary.total
        after = (after + 2**63) % _WORD - 2**63  # --overflow wrap: as int64 wraps
        carry.value = np.array([after], dtype=spec.state_dtype)[-1].copy()
    elif isinstance(summary, ExtremeSummary):
        if summary.index >= 0:
            # The partition's last record takes over the carry exactly where one element
            # of its value would: scan that one element, at its position in the input.
            one = dataclasses.replace(spec, skipna=False, exclusive=False)
            offset = carry.offset
            value = np.array([summary.value], dtype=spec.in_dtype)
            kernels.scan_block(one, value, None, carry,
                               np.array([offset + summary.index], dtype=np.int64))
            carry.offset = offset
    else:
        state = carry.value.copy()
        state["n"] = state["n"] + summary.count
        carry.value = state
    carry.offset += rows
    return True


@dataclass
class _TextRun:
    """Texts seen, for lookups by hash: `hashes` sorted, and where each one's text is in
    `texts`, the partitions' texts as they came (chunks never copied: a merge of two
    runs moves only the numbers)."""

    hashes: np.ndarray  # uint64
    at: np.ndarray  # int64
    texts: pa.ChunkedArray  # large_string


class DistinctUnion:
    """The values seen before a partition, kept on the client (`advance_distinct`), in
    numpy: a number column's keys as a few sorted runs, merged as they grow (runs of
    about twice the size of the next: about log2 of the partitions), so that a
    partition's keys are looked up by binary searches and added by merges; text as runs
    of the texts' hashes (distinct.text_hashes), searched and merged the same way, where
    a hash found is a value seen only if its stored text is the partition's text (one
    vectorized comparison a run). A hash that two texts share is taken out of the runs
    into `shared` with all its texts, a Python set each, looked up one by one: so no two
    texts count as one, and no text twice. Keys of two kinds (which one column's type
    does not give) go to a Python set of the scan's own keys (distinct.py), exact
    whatever the kinds (an int and a float of one value are one key, as on the local
    engine)."""

    def __init__(self, carry: distinct.DistinctCarry) -> None:
        line = carry.line(0)
        self.elsewhere = line.elsewhere
        self.runs: list[np.ndarray] = []
        self.floats = False
        self.text_runs: list[_TextRun] = []
        self.shared: dict[int, set[str]] = {}  # hashes of two texts or more: their texts
        self.texts = 0  # how many texts are held
        # A carry's own values (none on Dask, which saves no --state) start a set.
        self.members: set[Any] | None = set(line.members) if line.members else None

    def __len__(self) -> int:
        if self.members is not None:
            return len(self.members)
        return sum(run.shape[0] for run in self.runs) + self.texts

    def keys(self) -> set[Any]:
        """The values seen, as the scan's keys."""
        if self.members is not None:
            return set(self.members)
        found = {key for run in self.runs
                 for key in distinct.KeyArray(run, self.floats).python()}
        for text_run in self.text_runs:
            found.update(text_run.texts.take(text_run.at).to_pylist())
        for texts in self.shared.values():
            found.update(texts)
        return found

    def split(self, keys: distinct.KeyArray) -> np.ndarray:
        """Which of a partition's keys were seen before (a mask); the others are added."""
        if len(keys) == 0:
            return np.zeros(0, dtype=bool)
        values = keys.values
        if self.members is None and keys.hashes is not None and not self.runs:
            return self._split_texts(keys)
        if self.members is None and isinstance(values, np.ndarray) and (
                not self.text_runs and not self.shared) and (
                not self.runs or (self.runs[0].dtype == values.dtype
                                  and self.floats == keys.floats)):
            return self._split_runs(keys)
        if self.members is None:  # another kind than before: keys as the scan's
            self.members = self.keys()
            self.runs, self.text_runs, self.shared, self.texts = [], [], {}, 0
        found = keys.python()
        seen = np.fromiter(map(self.members.__contains__, found), dtype=bool,
                           count=len(found))
        if not seen.any():
            self.members.update(found)
        elif not seen.all():
            self.members.update(itertools.compress(found, (~seen).tolist()))
        return seen

    def _split_runs(self, keys: distinct.KeyArray) -> np.ndarray:
        values = keys.values
        seen = np.zeros(values.shape[0], dtype=bool)
        for run in self.runs:
            seen |= _found(run, values)[1]
        fresh = values[~seen]  # sorted, as the partition's keys are
        if fresh.shape[0]:
            self.floats = keys.floats
            self.runs.append(fresh)
            while len(self.runs) > 1 and self.runs[-2].shape[0] <= 2 * self.runs[-1].shape[0]:
                last = self.runs.pop()
                # Two sorted runs: the stable sort (timsort) merges them in one pass.
                self.runs[-1] = np.sort(np.concatenate([self.runs[-1], last]), kind="stable")
        return seen

    def _split_texts(self, keys: distinct.KeyArray) -> np.ndarray:
        import pyarrow.compute as pc

        hashes, texts = keys.hashes, keys.values
        assert hashes is not None
        count = hashes.shape[0]
        seen = np.zeros(count, dtype=bool)
        # One by one (None: none): the keys whose hash another of the partition's texts
        # has too, and those of a hash already shared.
        slow: np.ndarray | None = None
        twins = hashes[1:] == hashes[:-1]
        if twins.any():
            slow = np.zeros(count, dtype=bool)
            slow[1:] = twins
            slow[:-1] |= twins
        for run in self.text_runs:
            if run.hashes.shape[0] == 0:  # (all of its hashes found shared)
                continue
            at, hit = _found(run.hashes, hashes)
            every = bool(hit.all())
            rows = None if every else np.flatnonzero(hit)
            if rows is not None:
                if rows.shape[0] == 0:
                    continue
                at = at[rows]
            stored = run.texts.take(run.at[at])
            same = pc.equal(stored, texts if rows is None else texts.take(rows)
                            ).to_numpy(zero_copy_only=False)
            clash = ~same
            if slow is not None:
                clash |= slow if rows is None else slow[rows]
            if clash.any():  # a hash of two texts: its texts are looked up one by one
                where = np.flatnonzero(clash)
                self._share(run, at[where])
                if slow is None:
                    slow = np.zeros(count, dtype=bool)
                slow[where if rows is None else rows[where]] = True
                same &= ~clash
            if rows is None:
                seen |= same
            else:
                seen[rows[same]] = True
        if self.shared:
            shared = np.isin(hashes, np.fromiter(self.shared, dtype=np.uint64,
                                                 count=len(self.shared)))
            slow = shared if slow is None else slow | shared
        for row in [] if slow is None else np.flatnonzero(slow).tolist():
            known = self.shared.setdefault(int(hashes[row]), set())
            text = texts[row].as_py()
            if text in known:
                seen[row] = True
            else:
                known.add(text)
                self.texts += 1
        fresh = ~seen if slow is None else ~(seen | slow)
        added = int(np.count_nonzero(fresh))
        if added:
            every = added == count
            self.texts += added
            self.text_runs.append(_TextRun(
                hashes if every else hashes[fresh], np.arange(added, dtype=np.int64),
                pa.chunked_array([texts if every else texts.filter(fresh)])))
            runs = self.text_runs
            while len(runs) > 1 and runs[-2].hashes.shape[0] <= 2 * runs[-1].hashes.shape[0]:
                last = runs.pop()
                runs[-1] = _merged(runs[-1], last)
        return seen

    def _share(self, run: _TextRun, rows: np.ndarray) -> None:
        """Takes the run's entries at `rows` out of it, into `shared` (their hashes are
        another text's too). Their texts stay in the run's chunks, unreferenced."""
        stored = run.texts.take(run.at[rows]).to_pylist()
        for hashed, text in zip(run.hashes[rows].tolist(), stored, strict=True):
            self.shared[hashed] = {text}
        keep = np.ones(run.hashes.shape[0], dtype=bool)
        keep[rows] = False
        run.hashes, run.at = run.hashes[keep], run.at[keep]


def _ranks(run: np.ndarray, values: np.ndarray) -> np.ndarray:
    """How many of a sorted run's elements are at or below each of sorted `values`. A
    run not much longer than the values is merged with them (timsort's merge of two
    sorted runs: about 2 ns a value, where a binary search a value took 13 ns); a longer
    one is searched (_MERGED_BELOW)."""
    size, count = run.shape[0], values.shape[0]
    if size > _MERGED_BELOW * count:
        return np.searchsorted(run, values, side="right")
    order = np.argsort(np.concatenate([run, values]), kind="stable")
    # Where each value lands, in the values' own order (a stable sort keeps it), less
    # the values before it: the run's elements below it, and one equal to it (put first).
    at = np.flatnonzero(order >= size)
    at -= np.arange(count)
    return at


def _found(run: np.ndarray, values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Where sorted `values` are in a sorted `run` without repeats: the positions (of
    use where found) and which are found."""
    at = _ranks(run, values)
    at -= 1
    np.maximum(at, 0, out=at)
    return at, run[at] == values


def _merged(first: _TextRun, last: _TextRun) -> _TextRun:
    """Two runs of texts as one (no hash in both): each entry put where it goes, and
    the texts' chunks put end to end. (Scattered by positions: 2-5x less time than a
    stable argsort and two gathers, with their fresh arrays, on 1-6 million entries.)"""
    into = _ranks(first.hashes, last.hashes)
    into += np.arange(last.hashes.shape[0])
    kept = np.ones(first.hashes.shape[0] + last.hashes.shape[0], dtype=bool)
    kept[into] = False
    rest = np.flatnonzero(kept)
    hashes = np.empty(kept.shape[0], dtype=np.uint64)
    hashes[into] = last.hashes
    hashes[rest] = first.hashes
    at = np.empty(kept.shape[0], dtype=np.int64)
    at[into] = last.at + len(first.texts)
    at[rest] = first.at
    return _TextRun(hashes, at, pa.chunked_array(first.texts.chunks + last.texts.chunks,
                                                 first.texts.type))


@dataclass(frozen=True)
class SentDistinct:
    """The carry a partition's distinct count is scanned from, as the client sends it:
    the partition's keys seen before it, and how many other values were seen. The
    scan's worker makes it a DistinctCarry (`opened`)."""

    known: distinct.KeyArray
    elsewhere: int


def advance_distinct(union: DistinctUnion, summary: DistinctSummary) -> SentDistinct:
    """The carry a partition is scanned from, from the values seen before it (`union`,
    then advanced in place by the partition's values). Only the values the partition
    holds are of use to its scan; the rest are counted (Seen.elsewhere), so what is sent
    with the scan grows with its partition, not with the whole input."""
    before = len(union) + union.elsewhere
    keys = summary.values
    seen = union.split(keys)
    known = distinct.KeyArray(keys.values[seen] if isinstance(keys.values, np.ndarray)
                              else keys.values.filter(pa.array(seen)), keys.floats)
    return SentDistinct(known, before - len(known))


def opened(sent: SentDistinct) -> distinct.DistinctCarry:
    """The scan's carry from what the client sent (on the worker: the Python keys are
    made there, in parallel). The order of the values is not first appearance: no
    --state is saved on this engine."""
    seen = distinct.Seen(sent.known.python())
    seen.elsewhere = sent.elsewhere
    carry = distinct.DistinctCarry()
    carry.seen = [seen]
    return carry


# Folds ---------------------------------------------------------------------------------

def fold(specs: list[ScanSpec], columns: list[tuple[np.ndarray, np.ndarray | None]],
         carries: list[Carry]) -> None:
    """Advance the carries of float64 sums, products or log-sum-exps over a partition's
    columns of one op (`specs`, a column's each: one op, one --skipna, one identity; in
    place): the last running value of each column's scan, the same operations in the same
    order, without the scan's output. Each column is cast as its own spec says (an int
    column's log-sum-exp beside a float one's). In C where built (the columns stepped
    together, their chains overlapping), else numpy's accumulate."""
    xs = [cast_input(each, values, valid)
          for each, (values, valid) in zip(specs, columns, strict=True)]
    if not xs or xs[0].shape[0] == 0:
        return
    spec = specs[0]
    if SEQUENTIAL is not None:
        start = np.array([carry.value for carry in carries], dtype=np.float64)
        SEQUENTIAL.fold(_FOLDS[spec.accumulator.ufunc],
                        [x.astype(np.float64, copy=False) for x in xs],
                        [valid for _, valid in columns], spec.skipna, float(spec.identity),
                        start)
        for carry, value in zip(carries, start, strict=True):
            carry.value = value.copy()
    else:
        for each, carry, x, (_, valid) in zip(specs, carries, xs, columns, strict=True):
            carry.value = fold_twin(each, x, valid, carry.value)
    for carry in carries:
        carry.offset += xs[0].shape[0]


def fold_twin(spec: ScanSpec, x: np.ndarray, valid: np.ndarray | None,
              start: np.ndarray) -> np.ndarray:
    """The fold in numpy: the local scan's own accumulate (kernels._scan_accumulate), of
    which only the last value is kept."""
    acc = to_acc(spec, x, _skip(spec, x, valid))
    ufunc = getattr(np, spec.accumulator.ufunc)
    with np.errstate(over="ignore", invalid="ignore"):
        ufunc(np.asarray(start)[np.newaxis], acc[:1], out=acc[:1])
        ufunc.accumulate(acc, out=acc)
    last: np.ndarray = acc[-1].copy()
    return last


def fold_stats(specs: list[ScanSpec], columns: list[tuple[np.ndarray, np.ndarray | None]],
               carries: list[Carry]) -> None:
    """Advance the carries of one statistic's columns (`specs`: one op, one --skipna, one
    set of parameters) over a batch, in place: the state the scan leaves (stats.scan_block:
    the last of each field), without its output. In C where built (the columns stepped
    together), else by the scan itself (`fold_stats_twin`). The batch must be the scan's
    own (distributed._batches): a running mean's sum adds its first cell to the carry in
    numpy's operand order, which a NaN's bits can tell."""
    first = specs[0]
    name = first.kernel.name  # type: ignore[union-attr]
    kind, a_field, b_field = (_COMPENSATED_MEAN if name == "cummean"
                              and first.param("compensated") else _STAT_FOLDS[name])
    xs = [cast_input(spec, values, valid) for spec, (values, valid) in zip(specs, columns,
                                                                            strict=True)]
    rows = xs[0].shape[0] if xs else 0
    if rows == 0:
        return
    if SEQUENTIAL is None:
        for spec, (values, valid), carry in zip(specs, columns, carries, strict=True):
            fold_stats_twin(spec, values, valid, carry)
        return
    starts = [carry.value for carry in carries]
    n = np.array([start["n"] for start in starts], dtype=np.int64)
    a = np.array([start[a_field] for start in starts], dtype=np.float64)
    if kind == 0:
        # The mean's first sum as its scan (stats.running_sum) adds it, in numpy: which
        # of two NaNs it keeps is numpy's choice. The rest is s + cell, as accumulate.
        for k, (x, (_, valid)) in enumerate(zip(xs, columns, strict=True)):
            counted = (valid is None or bool(valid[0])) and not (
                first.skipna and x.dtype.kind == "f" and bool(np.isnan(x[0])))
            head = x[:1].astype(np.float64)
            if not counted:
                head[0] = 0.0
            with np.errstate(all="ignore"):
                head += starts[k]["s"][np.newaxis]
            a[k] = head[0]
            n[k] += counted
        xs = [x[1:] for x in xs]
        columns = [(values, None if valid is None else valid[1:])
                   for values, valid in columns]
    b = np.array([start[b_field] if b_field else 0.0 for start in starts], dtype=np.float64)
    kernel: Any = first.kernel
    new, old_by_count, total_by_count = 0.0, np.zeros(1), np.zeros(1)
    if kind == 2:  # the weights up to the largest count the batch can reach
        new, _after, old_by_count, total_by_count = kernel.tables(
            first, max(1, int(n.max()) + rows))
    SEQUENTIAL.fold_stats(kind, [x.astype(np.float64, copy=False) for x in xs],
                          [valid for _, valid in columns], first.skipna, n, a, b,
                          old_by_count, total_by_count, float(new))
    for k, carry in enumerate(carries):
        # As scan_block leaves it: a field its kernel never sets is 0 (cummean's c).
        state = np.zeros((), dtype=starts[k].dtype)
        state["n"] = n[k]
        state[a_field] = a[k]
        if b_field:
            state[b_field] = b[k]
        if kind == 2:
            state["w"] = kernel.weight(first, int(n[k]))
        carry.value = state
        carry.offset += rows


def fold_stats_twin(spec: ScanSpec, values: np.ndarray, valid: np.ndarray | None,
                    carry: Carry) -> None:
    """fold_stats without C: the scan itself (kernels.scan_block), its output dropped."""
    kernels.scan_block(spec, values, valid, carry)
