"""cumnunique's scan down a table's column: the running count of distinct values
(SEMANTICS.md, "cumnunique").

A running count of distinct values has no fixed-size state: it is the set of values seen,
per line (the column, or each group with `--by`/`--reset`). The values are kept
themselves, as exact keys: text as its text, integers, booleans, dates (their integers)
and decimals (their unscaled integers at the column's scale) as Python integers or
booleans, floats as Python floats with -0.0 as 0.0 and every NaN as the one key "nan".
Nothing is hashed into a smaller key, so no two values can collide; memory grows with the
number of distinct values. `--state` saves each line's values, in order of first
appearance, as a list (cumtool/state.py saves any carry's fields), and restores them
exactly.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable
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
    # the values its partition can meet again (cumtool/carries.py, DistinctSummary).
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


def comparable(kind: pa.DataType) -> bool:
    """Whether cumnunique compares a column of this Arrow type: numbers, booleans,
    decimals, dates and timestamps, text (and text or integer codes of a dictionary), and
    a column of nothing but missing cells."""
    if pa.types.is_dictionary(kind):
        return comparable(kind.value_type) and not pa.types.is_dictionary(kind.value_type)
    return bool(pa.types.is_null(kind) or pa.types.is_boolean(kind)
                or pa.types.is_integer(kind) or pa.types.is_floating(kind)
                or pa.types.is_decimal(kind) or pa.types.is_date(kind)
                or pa.types.is_timestamp(kind) or pa.types.is_string(kind)
                or pa.types.is_large_string(kind) or pa.types.is_string_view(kind))


def is_text(kind: pa.DataType) -> bool:
    """Whether a column of this type holds text (a dictionary's values too): its keys
    are the cells' text, and --na markers are missing cells."""
    if pa.types.is_dictionary(kind):
        kind = kind.value_type
    return bool(pa.types.is_string(kind) or pa.types.is_large_string(kind)
                or pa.types.is_string_view(kind))


def keys(spec: ScanSpec, data: pa.Array) -> tuple[list[Any], np.ndarray | None,
                                                  np.ndarray | None]:
    """The exact key of each cell, which cells are present (None: all), and which are NaN
    (None: none), from a column as tables.py hands it over (dates as their integers,
    decimals as their unscaled integers, in --dtype's type where given)."""
    if isinstance(data, pa.ChunkedArray):
        data = data.combine_chunks()
    if pa.types.is_dictionary(data.type):
        data = data.dictionary_decode()
    kind = data.type
    if pa.types.is_null(kind):
        return [None] * len(data), np.zeros(len(data), dtype=bool), None
    if not (pa.types.is_boolean(kind) or pa.types.is_decimal(kind) or pa.types.is_integer(kind)
            or pa.types.is_floating(kind)):
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
