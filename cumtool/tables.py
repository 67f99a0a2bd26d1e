"""The scan plan of a table: which columns are scanned, how, and what the output holds.

`TablePlan.apply` turns each input batch (in scan order) into an output batch, carrying
running state per column (and per group with `--by`/`--reset`). Decimal columns are
scanned exactly as scaled int64 integers and written back as decimals.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa

from cumtool import kernels
from cumtool.errors import DataError, ScanOverflowError, UsageError
from cumtool.kernels import AXIS_NAMES, overflow_hint

_ARROW_FLOAT_NAMES = {"halffloat": "float16", "float": "float32", "double": "float64"}


@dataclass(frozen=True)
class TableOptions:
    """The table-only options of a request."""

    columns: list[str] | None = None
    by: list[str] | None = None
    reset: str | None = None
    keep: bool = False
    reverse: bool = False  # the engine replays rows backwards; across columns, done here


def numpy_dtype(arrow_type: pa.DataType) -> np.dtype | None:
    """The numpy dtype of a scannable Arrow type (decimals: their scaled int64), else None."""
    if (pa.types.is_integer(arrow_type) or pa.types.is_floating(arrow_type)
            or pa.types.is_boolean(arrow_type)):
        # Not arrow_type.to_pandas_dtype(): that imports pandas (half a second).
        name = str(arrow_type)
        return np.dtype(_ARROW_FLOAT_NAMES.get(name, name))
    if pa.types.is_decimal(arrow_type):
        return np.dtype(np.int64)
    return None


def column_to_numpy(column: pa.Array | pa.ChunkedArray) -> tuple[np.ndarray, np.ndarray | None]:
    """Values and validity (None: no missing cells) of a numeric Arrow column, as views of
    its buffers where possible. Values under missing cells are unspecified: the kernels
    skip them. Decimals come out as their unscaled int64 integers.

    (Not Array.to_numpy: that imports pandas, half a second of start-up.)"""
    if isinstance(column, pa.ChunkedArray):
        column = column.combine_chunks()
    if pa.types.is_decimal(column.type):
        return _decimal_to_int64(column)
    valid = validity(column)
    offset, length = column.offset, len(column)
    if pa.types.is_boolean(column.type):
        return _bits(column.buffers()[1], offset, length), valid
    dtype = numpy_dtype(column.type)
    if dtype is None:
        raise TypeError(f"not a numeric column: {column.type}")
    values = np.frombuffer(column.buffers()[1], dtype=dtype, count=offset + length)[offset:]
    return values, valid


def validity(column: pa.Array) -> np.ndarray | None:
    """Which cells are present (None: all of them)."""
    if column.null_count == 0:
        return None
    return _bits(column.buffers()[0], column.offset, len(column))


def _bits(buffer: pa.Buffer, offset: int, length: int) -> np.ndarray:
    packed = np.frombuffer(buffer, dtype=np.uint8)
    return np.unpackbits(packed, bitorder="little", count=offset + length)[offset:].view(bool)


def _decimal_to_int64(column: pa.Array) -> tuple[np.ndarray, np.ndarray | None]:
    column = column.cast(pa.decimal128(38, column.type.scale))
    words = np.frombuffer(column.buffers()[1], dtype=np.int64,
                          count=2 * (column.offset + len(column)))[2 * column.offset:]
    low, high = words[0::2], words[1::2]
    valid = validity(column)
    wide = high != (low >> 63)  # the 128-bit value does not fit in 64 bits
    if valid is not None:
        wide &= valid
    if wide.any():
        row = int(np.flatnonzero(wide)[0])
        raise ScanOverflowError(f"decimal {column[row]} does not fit 64 bits", (row,))
    return low.copy() if valid is None else np.where(valid, low, 0), valid


def int64_to_decimal(values: np.ndarray, missing: np.ndarray | None,
                     arrow_type: pa.DataType) -> pa.Array:
    words = np.empty(2 * values.shape[0], dtype=np.int64)
    words[0::2] = values
    words[1::2] = values >> 63
    validity = None
    if missing is not None and missing.any():
        validity = pa.py_buffer(np.packbits(~missing, bitorder="little"))
    return pa.Array.from_buffers(arrow_type, values.shape[0],
                                 [validity, pa.py_buffer(words.tobytes())])


def decimal_to_float(column: pa.Array) -> pa.Array:
    """Decimals as the nearest float64 (via their text: Arrow's direct cast can be off by
    an ulp, 19.99 becoming 19.990000000000002)."""
    return column.cast(pa.string()).cast(pa.float64())


def arrow_column(values: np.ndarray, missing: np.ndarray | None) -> pa.Array:
    """A numeric numpy array (and its missing cells) as an Arrow array, sharing memory.

    (Not pa.array(): it imports pandas to check for pandas types, half a second.)"""
    values = np.ascontiguousarray(values)
    length = values.shape[0]
    bitmap = None
    if missing is not None and missing.any():
        bitmap = pa.py_buffer(np.packbits(~missing, bitorder="little"))
    if values.dtype == np.bool_:
        data = pa.py_buffer(np.packbits(values, bitorder="little"))
        return pa.Array.from_buffers(pa.bool_(), length, [bitmap, data])
    arrow_type = pa.from_numpy_dtype(values.dtype)
    return pa.Array.from_buffers(arrow_type, length, [bitmap, pa.py_buffer(values)])


def table_axis(text: str) -> int:
    key = str(text).strip().lower()
    if key in AXIS_NAMES:
        return AXIS_NAMES[key]
    try:
        number = int(key)
    except ValueError:
        number = None
    if number is not None and -2 <= number <= 1:
        return number % 2
    raise UsageError(
        f"--axis {text!r} is not valid for a table; use rows (index, 0) or columns (1, -1)"
    )


class TablePlan:
    """Which columns are scanned and how; turns each input batch into an output batch."""

    def __init__(self, op: str, axis: str, dtype: np.dtype | None, schema: pa.Schema,
                 name: str, options: TableOptions, **scan: Any) -> None:
        self.op = op
        self.name = name
        self.overflow: str = scan.get("overflow", "error")
        self.axis = table_axis(axis)
        self.options = options
        self.reverse_total: int | None = None  # set for --reverse: rows in the whole input
        if self.axis == 1 and (options.by or options.reset):
            raise UsageError("--by and --reset work down the rows; they cannot be used with "
                             "--axis columns")
        if dtype is not None and dtype.kind == "c":
            raise UsageError(f"--dtype {dtype} gives complex values, which a table cannot "
                             "hold; use --dtype with a real type, or .npy input")
        for column in [*(options.by or []), *([options.reset] if options.reset else [])]:
            if column not in schema.names:
                raise DataError(f"{name}: no column {column!r}; columns: "
                                f"{', '.join(schema.names)}")
        if options.reset and not (pa.types.is_boolean(schema.field(options.reset).type)
                                  or numpy_dtype(schema.field(options.reset).type) is not None):
            raise DataError(f"{name}: --reset column {options.reset!r} must be boolean or "
                            f"numeric, not {schema.field(options.reset).type}")
        self.selected = self._select(schema)
        self.decimal_scale = {
            c: schema.field(c).type.scale for c in self.selected
            if pa.types.is_decimal(schema.field(c).type)
        }
        self.specs = self._specs(schema, dtype, scan)
        self.carries = {c: kernels.initial_carry(s) for c, s in self.specs.items()}
        self.group_keys: Any = None
        self.group_carries: dict[str, Any] = {}
        if options.by or options.reset:
            from cumtool import groups  # polars joins: loaded only for grouped scans

            keys = list(dict.fromkeys(options.by or []))  # --by k,k is --by k
            self.group_keys = groups.GroupKeys(keys) if keys else None
            self.group_carries = {c: groups.GroupCarry(s) for c, s in self.specs.items()}
        self.pending_resets = np.zeros(0, dtype=bool)
        self.rows_done = 0
        self.schema = pa.schema(self._fields(schema))

    def _select(self, schema: pa.Schema) -> list[str]:
        structural = set(self.options.by or []) | {self.options.reset}
        numeric = [f.name for f in schema if numpy_dtype(f.type) is not None
                   and not pa.types.is_boolean(f.type) and f.name not in structural]
        requested = self.options.columns
        if requested:
            for column in requested:
                if column not in schema.names:
                    raise DataError(f"{self.name}: no column {column!r}; columns: "
                                    f"{', '.join(schema.names)}")
                if numpy_dtype(schema.field(column).type) is None:
                    raise DataError(
                        f"{self.name}: column {column!r} is not numeric "
                        f"({schema.field(column).type}); numeric columns: "
                        f"{', '.join(numeric) or 'none'}"
                    )
            selected = list(dict.fromkeys(requested))
        else:
            selected = numeric
        if not selected:
            raise DataError(f"{self.name}: no numeric columns to scan; columns: "
                            f"{', '.join(schema.names) or 'none'}")
        return selected

    def _specs(self, schema: pa.Schema, dtype: np.dtype | None,
               scan: dict[str, Any]) -> dict[str, kernels.ScanSpec]:
        def source(column: str) -> np.dtype:
            if column in self.decimal_scale and (self.axis == 1 or dtype is not None
                                                 or self.op in ("cumprod", "logcumsumexp")):
                return np.dtype(np.float64)  # decimals compute in float64 for these
            found = numpy_dtype(schema.field(column).type)
            assert found is not None
            return found

        if self.axis == 0:
            return {c: kernels.make_spec(self.op, source(c), dtype, what=f"column {c!r}", **scan)
                    for c in self.selected}
        common = np.result_type(*(source(c) for c in self.selected))
        spec = kernels.make_spec(self.op, common, dtype, what="the selected columns", **scan)
        return {c: spec for c in self.selected}

    def _is_decimal_out(self, column: str) -> bool:
        return column in self.decimal_scale and self.specs[column].source_dtype.kind == "i"

    def _fields(self, schema: pa.Schema) -> list[pa.Field]:
        def result_fields(f: pa.Field, name: str) -> list[pa.Field]:
            spec = self.specs[f.name]
            if self._is_decimal_out(f.name):
                out_type: pa.DataType = pa.decimal128(38, self.decimal_scale[f.name])
            else:
                out_type = pa.from_numpy_dtype(spec.out_dtype)
            fields = [pa.field(name, out_type)]
            if spec.indices:
                fields.append(pa.field(f"{name}_index", pa.int64()))
            return fields

        fields: list[pa.Field] = []
        for f in schema:
            if f.name in self.specs and not self.options.keep:
                fields.extend(result_fields(f, f.name))
            else:
                fields.append(f)
        if self.options.keep:
            for column in self.selected:
                fields.extend(result_fields(schema.field(column), f"{column}_{self.op}"))
        names = [f.name for f in fields]
        duplicate = next((n for n in names if names.count(n) > 1), None)
        if duplicate is not None and self.options.keep:
            raise DataError(f"{self.name}: --keep would add column {duplicate!r}, which the "
                            "input already has")
        return fields

    def apply(self, batch: pa.RecordBatch) -> pa.RecordBatch:
        if self.axis == 0:
            runs = self._runs(batch)
            results = {c: self._scan_rows(c, batch.column(c), runs) for c in self.selected}
        else:
            results = self._scan_across(batch)
        arrays: list[pa.Array] = []
        for f in batch.schema:
            if f.name in results and not self.options.keep:
                arrays.extend(a for a in results[f.name] if a is not None)
            else:
                arrays.append(batch.column(f.name))
        if self.options.keep:
            for column in self.selected:
                arrays.extend(a for a in results[column] if a is not None)
        self.rows_done += batch.num_rows
        return pa.RecordBatch.from_arrays(arrays, schema=self.schema)

    def _runs(self, batch: pa.RecordBatch) -> Any:
        if self.group_keys is None and self.options.reset is None:
            return None
        n = batch.num_rows
        group_ids = (self.group_keys.ids(batch) if self.group_keys is not None
                     else np.zeros(n, dtype=np.int64))
        count = self.group_keys.count if self.group_keys is not None else 1
        resets = None
        if self.options.reset is not None:
            values, valid = column_to_numpy(batch.column(self.options.reset))
            resets = values != 0
            if valid is not None:
                resets &= valid
            if self.reverse_total is not None:
                resets = self._reverse_resets(group_ids, resets, count)
        for carry in self.group_carries.values():
            carry.grow(count)
        from cumtool import groups

        return groups.split_runs(group_ids, resets)

    def _reverse_resets(self, group_ids: np.ndarray, resets: np.ndarray,
                        count: int) -> np.ndarray:
        """Runs start at a reset row in input order; scanning backwards, a run therefore
        starts at the row of the same group that follows a reset row in scan order."""
        if self.pending_resets.shape[0] < count:
            self.pending_resets = np.concatenate(
                [self.pending_resets, np.zeros(count - self.pending_resets.shape[0], bool)])
        order = np.argsort(group_ids, kind="stable")
        sorted_groups = group_ids[order]
        sorted_resets = resets[order]
        starts = np.ones(order.shape[0], dtype=bool)
        starts[1:] = sorted_groups[1:] != sorted_groups[:-1]
        shifted = np.empty_like(sorted_resets)
        shifted[1:] = sorted_resets[:-1]
        shifted[starts] = self.pending_resets[sorted_groups[starts]]
        ends = np.ones(order.shape[0], dtype=bool)
        ends[:-1] = starts[1:]
        self.pending_resets[sorted_groups[ends]] = sorted_resets[ends]
        out = np.empty_like(resets)
        out[order] = shifted
        return out

    def _input_row(self, scan_row: int) -> int:
        """1-based input row of a 0-based row in scan order."""
        return self.reverse_total - scan_row if self.reverse_total is not None else scan_row + 1

    def _overflow(self, column: str, scan_row: int, error: Exception) -> DataError:
        # position: the input row (from 0) and the column's place among the scanned ones
        return ScanOverflowError(
            f"{self.name}: column {column!r}, row {self._input_row(scan_row)}: "
            f"{error}{overflow_hint(self.overflow)}",
            (self._input_row(scan_row) - 1, self.selected.index(column)))

    def _scan_rows(self, column: str, data: pa.Array,
                   runs: Any) -> tuple[pa.Array, pa.Array | None]:
        spec = self.specs[column]
        try:
            if column in self.decimal_scale and spec.source_dtype.kind == "f":
                data = decimal_to_float(data)
            values, valid = column_to_numpy(data)
            if runs is None:
                result = kernels.scan_block(spec, values, valid, self.carries[column])
            else:
                positions = (np.arange(self.rows_done, self.rows_done + len(data))
                             if spec.indices else None)
                from cumtool import groups

                result = groups.scan_runs(spec, values, valid, runs,
                                          self.group_carries[column], positions)
        except ScanOverflowError as error:
            raise self._overflow(column, self.rows_done + error.position[0], error) from None
        missing = None if valid is None else ~valid
        indices = None
        if result.indices is not None:
            # -1: a skipped cell, or the identity (--exclusive): no position, a null.
            indices = arrow_column(self._input_positions(result.indices), result.indices < 0)
        if self._is_decimal_out(column):
            out_type = pa.decimal128(38, self.decimal_scale[column])
            return int64_to_decimal(result.values, missing, out_type), indices
        return arrow_column(result.values, missing), indices

    def _input_positions(self, indices: np.ndarray) -> np.ndarray:
        if self.reverse_total is None:
            return indices
        return np.where(indices >= 0, self.reverse_total - 1 - indices, -1)

    def _scan_across(self, batch: pa.RecordBatch) -> dict[str, tuple[pa.Array, pa.Array | None]]:
        spec = self.specs[self.selected[0]]
        pairs = []
        for column in self.selected:
            data = batch.column(column)
            if column in self.decimal_scale:
                data = decimal_to_float(data)
            pairs.append(column_to_numpy(data))
        block = np.stack([values.astype(spec.source_dtype, copy=False) for values, _ in pairs])
        valid = None
        if any(v is not None for _, v in pairs):
            valid = np.stack([np.ones(batch.num_rows, bool) if v is None else v
                              for _, v in pairs])
        carry = kernels.initial_carry(spec, (batch.num_rows,))
        flip = self.options.reverse
        try:
            if flip:
                block = block[::-1]
                valid = None if valid is None else valid[::-1]
            result = kernels.scan_block(spec, block, valid, carry)
            if flip:
                result = kernels.flip_result(result, 0)
                valid = None if valid is None else valid[::-1]
        except ScanOverflowError as error:
            at_column, at_row = error.position[0], error.position[1]
            if flip:
                at_column = len(self.selected) - 1 - at_column
            raise DataError(
                f"{self.name}: row {self._input_row(self.rows_done + at_row)}, column "
                f"{self.selected[at_column]!r}: {error}{overflow_hint(self.overflow)}"
            ) from None
        out: dict[str, tuple[pa.Array, pa.Array | None]] = {}
        for i, column in enumerate(self.selected):
            missing = None if valid is None else ~valid[i]
            indices = None
            if result.indices is not None:
                indices = arrow_column(result.indices[i], result.indices[i] < 0)
            out[column] = (arrow_column(result.values[i], missing), indices)
        return out
