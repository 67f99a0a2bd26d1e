"""cumnunique's scan down a table's column: the running count of distinct values
(SEMANTICS.md, "cumnunique").

A running count of distinct values has no fixed-size state: it is the set of values seen,
per line (the column, or each group with `--by`/`--reset`). The values are kept
themselves, as exact keys: text as its text, integers, booleans, dates (their integers)
and decimals (their unscaled integers at the column's scale) as Python integers or
booleans, floats as Python floats with -0.0 as 0.0 and every NaN as the one key "nan".
Nothing is hashed into a smaller key, so no two values can collide; memory grows with the
number of distinct values. (A Dask partition's text keys come with 64-bit hashes, for the
client's lookups, `text_hashes`; their texts still decide, cumtool/carries.py.)
`--state` saves each line's values, in order of first appearance, as a list
(cumtool/state.py saves any carry's fields), and restores them exactly.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa

from cumtool.blocks import cast_input
from cumtool.columnar import column_to_numpy, validity
from cumtool.ops.spec import ScanSpec

NAN_KEY = "nan"  # every NaN of a float column (a float column holds no text)


class Seen(list[Any]):
    """The values one line has seen, in order of first appearance (what --state saves:
    a list), with the same values as a set, for the lookups."""

    # Values seen that are counted but not held: a distributed scan's carry holds only
    # the values its partition can meet again (cumtool/carries.py, advance_distinct).
    elsewhere = 0

    def __init__(self, items: Iterable[Any] = ()) -> None:
        super().__init__(items)
        self.members = set(self)


class DistinctCarry:
    """The values seen, per line: one line for a column, one per group with --by (and
    --reset: a run starts from no values). Its one field is what --state saves."""

    def __init__(self, lines: int = 0) -> None:
        self.seen: list[Any] = [Seen() for _ in range(lines)]

    def grow(self, count: int) -> None:
        self.seen.extend(Seen() for _ in range(count - len(self.seen)))

    def line(self, number: int) -> Seen:
        """A line's values (as restored from a state file: a plain list, made a Seen)."""
        found = self.seen[number]
        if not isinstance(found, Seen):
            found = self.seen[number] = Seen(found)
        return found


def _numeric(kind: pa.DataType) -> bool:
    """Whether a column's keys are numbers (bools, decimals, ints, floats), not text."""
    return bool(pa.types.is_boolean(kind) or pa.types.is_decimal(kind)
                or pa.types.is_integer(kind) or pa.types.is_floating(kind))


def comparable(kind: pa.DataType) -> bool:
    """Whether cumnunique compares a column of this Arrow type: numbers, booleans,
    decimals, dates and timestamps, text (and text or integer codes of a dictionary), and
    a column of nothing but missing cells."""
    if pa.types.is_dictionary(kind):
        return comparable(kind.value_type) and not pa.types.is_dictionary(kind.value_type)
    return bool(pa.types.is_null(kind) or _numeric(kind) or pa.types.is_date(kind)
                or pa.types.is_timestamp(kind) or is_text(kind))


def is_text(kind: pa.DataType) -> bool:
    """Whether a column of this type holds text (a dictionary's values too): its keys
    are the cells' text, and --na markers are missing cells."""
    if pa.types.is_dictionary(kind):
        kind = kind.value_type
    return bool(pa.types.is_string(kind) or pa.types.is_large_string(kind)
                or pa.types.is_string_view(kind))


def _plain(data: pa.Array | pa.ChunkedArray) -> pa.Array:
    """One array of the values themselves (chunks combined, a dictionary decoded)."""
    if isinstance(data, pa.ChunkedArray):
        data = data.combine_chunks()
    if pa.types.is_dictionary(data.type):
        data = data.dictionary_decode()
    return data


def keys(spec: ScanSpec, data: pa.Array) -> tuple[list[Any], np.ndarray | None,
                                                  np.ndarray | None]:
    """The exact key of each cell, which cells are present (None: all), and which are NaN
    (None: none), from a column as tables.py hands it over (dates as their integers,
    decimals as their unscaled integers, in --dtype's type where given)."""
    data = _plain(data)
    kind = data.type
    if pa.types.is_null(kind):
        return [None] * len(data), np.zeros(len(data), dtype=bool), None
    if not _numeric(kind):
        return data.to_pylist(), validity(data), None  # text, as written
    values, valid = column_to_numpy(data)
    if spec.in_dtype.kind != "O":  # a dictionary's values are not cast (no --dtype)
        values = cast_input(spec, values, valid)
    if values.dtype.kind != "f":
        return values.tolist(), valid, None
    floats = values.astype(np.float64)
    floats[floats == 0] = 0.0  # -0.0 is 0.0
    nan = np.isnan(floats)
    found = floats.tolist()
    if not nan.any():
        return found, valid, None
    for row in np.flatnonzero(nan).tolist():
        found[row] = NAN_KEY
    return found, valid, nan


def counted(spec: ScanSpec, data: pa.Array, text_na: frozenset[str] = frozenset()
            ) -> tuple[list[Any], np.ndarray]:
    """The key of each cell (`keys`) and which cells a scan counts: present, not a --na
    marker of a text column, not a NaN that --skipna skips."""
    found, valid, nan = keys(spec, data)
    present = np.ones(len(found), dtype=bool) if valid is None else valid.copy()
    if text_na and found and is_text(data.type):
        # A CSV text cell that reads NA (or any --na marker) is a missing cell: no value.
        present &= np.fromiter((key not in text_na for key in found), bool, len(found))
    if nan is not None and spec.skipna:
        present &= ~nan  # a NaN skipped by --skipna counts nothing, and is written missing
    return found, present


@dataclass(frozen=True)
class KeyArray:
    """Distinct keys as one array, without repeats: numbers in numpy, sorted (a float
    column's as the int64 bits of its keys: -0.0 made 0.0 and every NaN one NaN, so that
    equal bits are equal keys), text in Arrow. What a Dask partition's summary and the
    carry of its scan hold (cumtool/carries.py): no Python object a value to make, send
    or compare."""

    values: Any  # np.ndarray, or pa.Array of text
    floats: bool = False
    # Text's 64-bit hashes (`text_hashes`), sorted, the texts in their order; None for
    # numbers, and for text not looked up (a scan's carry).
    hashes: np.ndarray | None = None

    def __len__(self) -> int:
        return len(self.values)

    def python(self) -> list[Any]:
        """The keys as `keys` makes them."""
        if not isinstance(self.values, np.ndarray):
            listed: list[Any] = self.values.to_pylist()
            return listed
        if not self.floats:
            return self.values.tolist()
        floats = self.values.view(np.float64)
        found = floats.tolist()
        for row in np.flatnonzero(np.isnan(floats)).tolist():
            found[row] = NAN_KEY
        return found


def key_array(spec: ScanSpec, data: pa.Array, text_na: frozenset[str] = frozenset()
              ) -> KeyArray:
    """distinct_values as a KeyArray: the same keys by the same rules (`keys`, `counted`),
    in C loops."""
    import pyarrow.compute as pc

    data = _plain(data)
    kind = data.type
    if pa.types.is_null(kind):
        return KeyArray(np.empty(0, dtype=np.int64))
    if not _numeric(kind):
        present = data.drop_null()
        if text_na and is_text(kind):
            present = present.filter(pc.invert(pc.is_in(
                present, value_set=pa.array(sorted(text_na), type=kind))))
        found = pc.unique(present)
        if not pa.types.is_large_string(found.type):  # one type for every partition's keys
            found = found.cast(pa.large_string())
        hashes = text_hashes(found)
        order = np.argsort(hashes)
        return KeyArray(found.take(order), hashes=hashes[order])
    values, valid = column_to_numpy(data)
    if spec.in_dtype.kind != "O":  # a dictionary's values are not cast (no --dtype)
        values = cast_input(spec, values, valid)
    floats = values.dtype.kind == "f"
    if floats:
        values = values.astype(np.float64)  # a copy, changed below
        values[values == 0] = 0.0
        nan = np.isnan(values)
        if nan.any():
            values[nan] = np.nan
            if spec.skipna:
                valid = ~nan if valid is None else valid & ~nan
        values = values.view(np.int64)
    return KeyArray(_sorted_once(values if valid is None else values[valid]), floats)


# text_hashes: a polynomial hash of the UTF-8 bytes, sum of byte[j] * BASE**j, mod 2**64
# (an odd BASE: invertible, so a text's sum is taken from prefix sums of the whole
# buffer), with the length added and mixed by MurmurHash3's finalizer. Not a hash for
# adversaries: texts that collide are told apart by their texts (carries.DistinctUnion).
_BASE = np.uint64(0x9E3779B97F4A7C15)
_BLOCK = 1 << 20  # bytes hashed at a time: the powers and sums stay small
_powers: list[np.ndarray] = [np.ones(1, dtype=np.uint64), np.ones(1, dtype=np.uint64)]


def _base_powers(count: int) -> tuple[np.ndarray, np.ndarray]:
    """BASE**j and BASE**-j for j < count (computed once, grown as needed)."""
    if _powers[0].shape[0] < count:
        inverse = _BASE
        with np.errstate(over="ignore"):
            for _ in range(6):  # Newton's steps: each doubles the correct low bits
                inverse = inverse * (np.uint64(2) - _BASE * inverse)
        size = max(count, _BLOCK + 1)
        made = []
        for base in (_BASE, inverse):
            steps = np.full(size, base, dtype=np.uint64)
            steps[0] = 1
            made.append(np.cumprod(steps))  # wraps mod 2**64, as meant
        _powers[:] = made
    return _powers[0][:count], _powers[1][:count]


def text_hashes(texts: pa.Array) -> np.ndarray:
    """A 64-bit hash (uint64) of each text of a string or large_string array without
    missing cells, in numpy from its Arrow buffers: the same on every machine."""
    rows = len(texts)
    _, offsets_buffer, data_buffer = texts.buffers()[:3]
    wide = pa.types.is_large_string(texts.type)
    offsets = np.frombuffer(offsets_buffer, dtype=np.int64 if wide else np.int32)[
        texts.offset:texts.offset + rows + 1].astype(np.int64)
    data = (np.frombuffer(data_buffer, dtype=np.uint8) if data_buffer is not None
            else np.zeros(0, dtype=np.uint8))
    out = np.empty(rows, dtype=np.uint64)
    row = 0
    while row < rows:
        # The rows whose bytes fit a block (at least one row, however long).
        end = int(np.searchsorted(offsets, offsets[row] + _BLOCK, side="right")) - 1
        end = min(rows, max(end, row + 1))
        first, last = int(offsets[row]), int(offsets[end])
        powers, inverse = _base_powers(last - first + 1)
        terms = data[first:last].astype(np.uint64)
        terms *= powers[:last - first]
        sums = np.zeros(last - first + 1, dtype=np.uint64)
        np.cumsum(terms, out=sums[1:])
        at = offsets[row:end + 1] - first
        block = sums[at[1:]]
        block -= sums[at[:-1]]
        block *= inverse[at[:-1]]  # as if each text started at BASE**0
        out[row:end] = block
        row = end
    lengths = np.diff(offsets).astype(np.uint64)
    lengths *= np.uint64(0xC2B2AE3D27D4EB4F)
    out += lengths
    for shift, factor in ((33, 0xFF51AFD7ED558CCD), (33, 0xC4CEB9FE1A85EC53), (33, 0)):
        out ^= out >> np.uint64(shift)
        if factor:
            out *= np.uint64(factor)
    return out


def _sorted_once(values: np.ndarray) -> np.ndarray:
    """np.unique's answer (sorted, without repeats) by a sort: numpy 2.4's unique of
    500,000 int64s took 200 ms, its sort 2.5 ms."""
    values = np.sort(values)
    keep = np.empty(values.shape[0], dtype=bool)
    keep[:1] = True
    np.not_equal(values[1:], values[:-1], out=keep[1:])
    return values[keep]


def distinct_values(spec: ScanSpec, data: pa.Array, text_na: frozenset[str] = frozenset()
                    ) -> set[Any]:
    """The keys of the cells a scan of this batch counts, as a set: what the batch adds
    to any carried set of values (a Dask partition's summary, cumtool/carries.py)."""
    found, present = counted(spec, data, text_na)
    if bool(present.all()):
        return set(found)
    return set(itertools.compress(found, present.tolist()))


def scan(spec: ScanSpec, data: pa.Array, carry: DistinctCarry, groups: Any = None,
         text_na: frozenset[str] = frozenset()) -> tuple[np.ndarray, np.ndarray | None]:
    """The running count of distinct values of one batch of a column, in scan order, from
    the carried values (updated): (counts, the cells to write missing, or None).
    `groups`: the batch's group ids and reset flags (tables.TablePlan._runs), or None."""
    found, present = counted(spec, data, text_na)
    out = np.zeros(len(found), dtype=np.int64)
    exclusive = spec.exclusive
    ids = None if groups is None else groups.ids.tolist()
    resets = None if groups is None or groups.resets is None else groups.resets.tolist()
    line = carry.line(0) if ids is None else None
    taken = present.tolist()
    for row in np.flatnonzero(present).tolist() if resets is None else range(len(found)):
        if ids is not None:
            group = ids[row]
            if resets is not None and resets[row]:  # a run starts here: from no values
                carry.seen[group] = Seen()
            if not taken[row]:
                continue
            line = carry.line(group)
        assert line is not None
        key = found[row]
        members = line.members
        before = len(members)
        if key not in members:
            members.add(key)
            line.append(key)
        out[row] = (before if exclusive else len(members)) + line.elsewhere
    missing = None if bool(present.all()) else ~present
    return out, missing
