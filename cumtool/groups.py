"""Group ids for `--by` keys held in Arrow batches (the streaming path's): dense, stable
across batches, in order of first appearance, and saved with --state. The scans of the
groups are grouped.py's."""

from __future__ import annotations

from collections.abc import Callable, Collection
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa

from cumtool import native
from cumtool.columnar import json_values_text

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

    def __init__(self, positions: list[int], empty_is_missing: bool = False,
                 derived: Callable[[pa.RecordBatch], pa.Array] | None = None,
                 json_text: Collection[int] = ()) -> None:
        self.positions = positions
        # Key columns of JSON text (a JSON Lines column of mixed kinds): keyed by their
        # values' text (columnar.json_values_text), so that `null` is a missing key, as an
        # absent key is, and "a" the key a column of strings holds (another input's,
        # a resumed run's).
        self.json_text = frozenset(json_text)
        # A key made from each batch after the columns' (--period's: cumtool.periods).
        self.derived = derived
        self.empty_is_missing = empty_is_missing  # text read from CSV: "" is an empty cell
        self._keys: _HashedKeys | _JoinedKeys | None = None  # chosen at the first batch
        self._restored: pl.DataFrame | None = None
        self._restored_count = 0

    @property
    def count(self) -> int:
        return self._keys.count if self._keys is not None else self._restored_count

    def ids(self, batch: pa.RecordBatch) -> np.ndarray:
        columns = [json_values_text(batch.column(i)) if i in self.json_text
                   else batch.column(i) for i in self.positions]
        if self.derived is not None:
            columns.append(self.derived(batch))
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


class KeysChanged(Exception):
    """A batch's key `index` is of another type than the keys saved by a run before
    (--state): a CSV's text where Parquet's integers were, say. The plan words it."""

    def __init__(self, index: int, saved: str, now: str) -> None:
        super().__init__(index, saved, now)
        self.index, self.saved, self.now = index, saved, now


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
        for index in range(len(columns)):
            name = f"key{index}"
            saved, now = self._known.schema.get(name), keys.schema.get(name)
            if saved != now or ((name + _NAN) in self._known.schema) != (
                    (name + _NAN) in keys.schema):
                raise KeysChanged(index, str(saved), str(now))
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
