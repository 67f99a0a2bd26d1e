"""Arrow columns as numpy arrays and back, sharing memory where Arrow allows: what the
scan kernels read and what the writers get. Decimals travel as their scaled int64.

(Not Array.to_numpy or pa.array(): both import pandas, half a second of start-up.)
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from cumtool.errors import DataError, ScanOverflowError, option

_ARROW_FLOAT_NAMES = {"halffloat": "float16", "float": "float32", "double": "float64"}


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
    its buffers where possible (copied where a buffer is not aligned). Values under
    missing cells are unspecified: the kernels skip them. Decimals come out as their
    unscaled int64 integers.

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
    if not values.flags.aligned:
        # A buffer can start anywhere once Dask has sent it over the network (pickle's
        # out-of-band buffers); the C loops take aligned arrays only, and numpy exports a
        # misaligned one as "=q", not "q": copy it, once, here for every writer and kernel.
        values = values.copy()
    return values, valid


def as_int64_or_float64(values: np.ndarray) -> np.ndarray | None:
    """Integers as int64, floats as float64 (widening: exact), the same numbers; None for
    a uint64 beyond int64, which int64 cannot hold."""
    if values.dtype == np.uint64 and (values > np.iinfo(np.int64).max).any():
        return None
    if values.dtype.kind in "iu":
        return values.astype(np.int64, copy=False)
    if values.dtype.kind == "f":
        return values.astype(np.float64, copy=False)
    return values


def validity(column: pa.Array) -> np.ndarray | None:
    """Which cells are present (None: all of them)."""
    if column.null_count == 0:
        return None
    return _bits(column.buffers()[0], column.offset, len(column))


def empty_text_missing(column: pa.Array) -> pa.Array:
    """A text column with its empty cells made missing (for outputs that hold a missing
    cell apart from an empty text: Parquet, Arrow). Read from its buffers, as numtext reads
    cells: pyarrow's compute with a Python "" imports pandas (0.23 s of a run)."""
    if isinstance(column, pa.ChunkedArray):
        column = column.combine_chunks()
    kind = column.type
    if not (pa.types.is_string(kind) or pa.types.is_large_string(kind)):
        import pyarrow.compute as pc

        return pc.if_else(pc.equal(column, ""), pa.scalar(None, kind), column)
    n, offset = len(column), column.offset
    _validity, offsets, data = column.buffers()
    width = np.dtype(np.int64 if pa.types.is_large_string(kind) else np.int32)
    bounds = np.frombuffer(offsets, dtype=width, count=offset + n + 1)[offset:]
    present = np.zeros(offset + n, dtype=bool)
    present[offset:] = bounds[1:] != bounds[:-1]
    held = validity(column)
    if held is not None:
        present[offset:] &= held
    bitmap = pa.py_buffer(np.packbits(present, bitorder="little"))
    return pa.Array.from_buffers(kind, n, [bitmap, offsets, data], offset=offset)


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
        raise ScanOverflowError(f"decimal {column[row]} does not fit 64 bits", (row,),
                                hint=f"; scan it as floats with {option('dtype', 'float64')}")
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


def without_views(arrow_type: pa.DataType) -> pa.DataType:
    """`arrow_type` with its string and binary views (polars' text, in Arrow files and
    streams it writes) as the large types, nested ones too: Arrow's take, filters and
    sets, and every check of a text column here, know the large types."""
    if pa.types.is_string_view(arrow_type):
        return pa.large_string()
    if pa.types.is_binary_view(arrow_type):
        return pa.large_binary()
    if pa.types.is_dictionary(arrow_type):  # polars' Categorical and Enum: views inside
        values = without_views(arrow_type.value_type)
        if values == arrow_type.value_type:
            return arrow_type
        return pa.dictionary(arrow_type.index_type, values, arrow_type.ordered)
    if arrow_type.num_fields == 0:
        return arrow_type
    fields = [arrow_type.field(i) for i in range(arrow_type.num_fields)]
    plain = [f.with_type(without_views(f.type)) for f in fields]
    if all(p.type == f.type for p, f in zip(plain, fields, strict=True)):
        return arrow_type
    if pa.types.is_struct(arrow_type):
        return pa.struct(plain)
    if pa.types.is_large_list(arrow_type) or pa.types.is_list_view(arrow_type) \
            or pa.types.is_large_list_view(arrow_type):
        return pa.large_list(plain[0])
    if pa.types.is_list(arrow_type):
        return pa.list_(plain[0])
    if pa.types.is_fixed_size_list(arrow_type):
        return pa.list_(plain[0], arrow_type.list_size)
    if pa.types.is_map(arrow_type):
        return pa.map_(plain[0].type.field(0), plain[0].type.field(1))
    return arrow_type  # unions and the rest: as they are


def schema_without_views(schema: pa.Schema) -> pa.Schema:
    """The schema with view types as the large types (without_views)."""
    fields = [schema.field(i) for i in range(len(schema))]
    plain = [f.with_type(without_views(f.type)) for f in fields]
    if all(p.type == f.type for p, f in zip(plain, fields, strict=True)):
        return schema
    return pa.schema(plain, metadata=schema.metadata)


def batch_without_views(batch: pa.RecordBatch, schema: pa.Schema) -> pa.RecordBatch:
    """`batch` cast to `schema` (schema_without_views of its own) where they differ: the
    view columns' values copied once, the others shared."""
    if batch.schema.equals(schema):
        return batch
    columns = [column if column.type == field.type else column.cast(field.type)
               for column, field in zip(batch.columns, schema, strict=True)]
    return pa.RecordBatch.from_arrays(columns, schema=schema)


def fixed_offset(zone: str | None) -> int | None:
    """A timestamp zone that is a fixed offset from UTC (`+05:30`, `-0800`, as pandas
    writes a `datetime.timezone`), in seconds east; None for a named zone or none.
    polars takes named zones only, so such columns are read and written here."""
    import re

    found = re.fullmatch(r"([+-])(\d{2}):?(\d{2})", zone or "")
    if found is None:
        return None
    seconds = int(found.group(2)) * 3600 + int(found.group(3)) * 60
    return -seconds if found.group(1) == "-" else seconds


def stored_integers(column: pa.Array) -> tuple[np.ndarray, np.ndarray | None]:
    """A date or timestamp column's stored integers (days, or its unit since 1970; a
    zone's instants are stored in UTC) as a new int64 array, 0 where missing, and which
    rows are missing (None: none)."""
    values, valid = column_to_numpy(column.view(
        pa.int32() if pa.types.is_date32(column.type) else pa.int64()))
    values = values.astype(np.int64)  # (a copy: the zeros below)
    if valid is None:
        return values, None
    values[~valid] = 0
    return values, ~valid


def local_stamps(column: pa.Array, offset: int) -> tuple[np.ndarray, np.ndarray | None]:
    """A fixed-offset timestamp column's stored integers moved to its wall clock (in its
    own unit), and which rows are missing (None: none)."""
    per_second = {"s": 1, "ms": 10**3, "us": 10**6, "ns": 10**9}[column.type.unit]
    values, missing = stored_integers(column)
    return values + offset * per_second, missing


def json_values_text(column: pa.Array) -> pa.Array:
    """A column of JSON text (a JSON Lines column of mixed kinds: formats.JSON_TEXT) as
    its values' text, where a value's text counts (a time, a group's key): a string as
    itself (`"a"` is a, as a column of strings holds it), `null` missing (as an absent
    key), any other value (a number, an object) as its JSON."""
    import json

    return string_array([None if text in (None, "null") else
                         json.loads(text) if text.startswith('"') else text
                         for text in column.to_pylist()])


def string_array(values: list[str | None]) -> pa.Array:
    """A string array from Python strings, built from its buffers (pa.array imports
    pandas: half a second)."""
    encoded = [b"" if v is None else v.encode("utf-8", "surrogatepass") for v in values]
    offsets = np.zeros(len(encoded) + 1, dtype=np.int64)
    np.cumsum([len(b) for b in encoded], out=offsets[1:])
    missing = np.array([v is None for v in values], dtype=bool)
    validity = None
    if missing.any():
        validity = pa.py_buffer(np.packbits(~missing, bitorder="little"))
    if offsets[-1] >= (1 << 31):
        raise DataError(f"a batch of {len(values)} records holds over 2 GiB of text in one "
                        "column; give a smaller --batch-rows")
    data = pa.py_buffer(b"".join(encoded))
    return pa.Array.from_buffers(pa.string(), len(values),
                                 [validity, pa.py_buffer(offsets.astype(np.int32)), data])

