"""JSON Lines in and out: one JSON object a line, read in batches of records.

The input is read twice, from disk (standard input is spooled to a temporary file first):
a first pass finds the columns (every key, in order of first appearance) and what each
holds, so that a column's type is known for the whole input before the first batch; the
second pass turns each batch of lines into Arrow columns. Memory stays that of a batch.

A column whose values are all numbers, all strings or all booleans (or missing) gets that
Arrow type. Any other column (nested objects and arrays, or values of mixed kinds) holds
each value's JSON text, its field marked with JSON_TEXT: the JSON Lines writer puts that
text back as it is, and the CSV, TSV and table writers show strings as their text and
other values as JSON (`cell_text`). An absent key is a missing cell (null); in JSON Lines
output it stays absent, and an explicit `null` is written back as `null` (FIELD_MISSING
says, column by column, which the input had).
"""

from __future__ import annotations

import json
import math
from collections.abc import Collection, Iterator, Mapping
from typing import IO, Any

import numpy as np
import pyarrow as pa

from cumtool.columnar import arrow_column
from cumtool.errors import DataError, FormatError

BATCH_ROWS = 1 << 15
_READ_BYTES = 1 << 20
JSON_TEXT = b"cumtool.json"  # field metadata: the column holds each value's JSON text
FIELD_MISSING = b"cumtool.json.missing"  # b"null": a missing cell is written as null
_EXACT_FLOAT = 1 << 53  # integers beyond this are not exact as float64
_INT64 = 1 << 63

_encode = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode
_encode_string = json.encoder.encode_basestring  # C, non-ASCII kept as it is: for str
_decode = json.JSONDecoder().decode


def _json(value: Any) -> str:
    """A value's compact JSON text (the common scalars without the encoder's overhead)."""
    kind = type(value)
    if kind is str:
        return _encode_string(value)
    if kind is int:
        return int.__repr__(value)
    return _encode(value)


def _number(value: float) -> str:
    return float.__repr__(value) if math.isfinite(value) else _encode(value)


def _field(name: str, kinds: set[type], absent: bool, big: bool, wide: bool) -> pa.Field:
    """A column's field from the types of its values (NoneType: an explicit null), whether
    some record lacks it, and whether an integer is beyond 2^53 (`big`) or int64 (`wide`)."""
    has_null = type(None) in kinds
    kinds = kinds - {type(None)}
    arrow_type: pa.DataType | None = None
    if kinds and kinds <= {int} and not wide:
        arrow_type = pa.int64()
    elif kinds and kinds <= {int, float} and not big:
        arrow_type = pa.float64()
    elif kinds == {str}:
        arrow_type = pa.string()
    elif kinds == {bool}:
        arrow_type = pa.bool_()
    # A typed column cannot tell `null` from an absent key: text or flags that have both
    # keep their JSON text; numbers stay numbers (both are a missing cell).
    if arrow_type is None or (has_null and absent and arrow_type in (pa.string(), pa.bool_())):
        return pa.field(name, pa.string(), metadata={JSON_TEXT: b"1"})
    missing = b"null" if has_null and not absent else b"absent"
    return pa.field(name, arrow_type, metadata={FIELD_MISSING: missing})


_MAX_SHAPES = 4096


def _fold(shapes: dict[tuple[str, ...], int], count: dict[str, int]) -> None:
    """Add the records counted by their keys to the count by key, and forget them."""
    for shape, times in shapes.items():
        for key in shape:
            count[key] = count.get(key, 0) + times
    shapes.clear()


def _lines(stream: IO[bytes], name: str, max_line: int) -> Iterator[tuple[int, bytes]]:
    """(line number from 1, line) for each line that is not blank."""
    number = 0
    rest = b""
    first = True
    while True:
        chunk = stream.read(_READ_BYTES)
        if first and chunk.startswith(b"\xef\xbb\xbf"):  # a UTF-8 byte order mark
            chunk = chunk[3:]
        first = False
        if not chunk:
            break
        pieces = (rest + chunk).split(b"\n")
        rest = pieces.pop()
        if len(rest) > max_line:
            raise DataError(f"{name}: line {number + len(pieces) + 1} is longer than "
                            f"{max_line} bytes; raise --max-record-size if it is meant")
        for line in pieces:
            number += 1
            if len(line) > max_line:
                raise DataError(f"{name}: line {number} is longer than {max_line} bytes; "
                                "raise --max-record-size if it is meant")
            if line.strip():
                yield number, line
    if rest.strip():
        yield number + 1, rest


def _record(line: bytes, number: int, name: str) -> dict[str, Any]:
    try:
        value = _decode(line.decode("utf-8"))
    except UnicodeDecodeError:
        raise DataError(f"{name}: line {number} is not UTF-8 text") from None
    except json.JSONDecodeError as error:
        raise DataError(f"{name}: line {number} is not JSON: {error.msg} (at character "
                        f"{error.pos + 1})") from None
    except RecursionError:
        raise DataError(f"{name}: line {number} is nested too deeply to read") from None
    if not isinstance(value, dict):
        kind = "an array" if isinstance(value, list) else f"the value {line.strip()[:40]!r}"
        raise DataError(f"{name}: line {number} is {kind}, not a JSON object")
    return value


class JsonlSource:
    """A JSON Lines file (seekable: a file, or standard input spooled to disk)."""

    def __init__(self, stream: IO[bytes], name: str, batch_rows: int | None,
                 max_line: int) -> None:
        self.name = name
        self._stream = stream
        self._batch_rows = batch_rows or BATCH_ROWS
        self._max_line = max_line
        kinds: dict[str, set[type]] = {}  # by key, in order of first appearance
        shapes: dict[tuple[str, ...], int] = {}  # records by their keys (logs repeat them)
        count: dict[str, int] = {}  # records that have the key (folded from shapes)
        big: set[str] = set()
        wide: set[str] = set()
        records = 0
        for number, line in self._read():
            record = _record(line, number, name)
            records += 1
            shape = tuple(record)
            shapes[shape] = shapes.get(shape, 0) + 1
            if len(shapes) > _MAX_SHAPES:  # keys in ever new orders: memory stays flat
                _fold(shapes, count)
            for key, value in record.items():
                seen = kinds.get(key)
                if seen is None:
                    seen = kinds[key] = set()
                seen.add(type(value))
                if type(value) is int and not -_EXACT_FLOAT <= value <= _EXACT_FLOAT:
                    big.add(key)
                    if not -_INT64 <= value < _INT64:
                        wide.add(key)
        _fold(shapes, count)
        self.num_rows = records
        self._schema = pa.schema([_field(key, seen, count.get(key, 0) < records, key in big,
                                         key in wide) for key, seen in kinds.items()])

    def _read(self) -> Iterator[tuple[int, bytes]]:
        try:
            self._stream.seek(0)
            yield from _lines(self._stream, self.name, self._max_line)
        except OSError as error:
            raise DataError(f"{self.name}: cannot read: {error.strerror or error}") from None

    @property
    def schema(self) -> pa.Schema:
        return self._schema

    def batches(self, parse: Mapping[int, pa.DataType] | None = None,
                unused: Collection[int] = ()) -> Iterator[pa.RecordBatch]:
        """Batches of records as the schema's columns (typed: nothing to parse)."""
        if not len(self._schema):
            if self.num_rows:
                raise FormatError(f"{self.name}: its {self.num_rows} records have no keys; "
                                  "there is no column to scan")
            return
        records: list[dict[str, Any]] = []
        for number, line in self._read():
            records.append(_record(line, number, self.name))
            if len(records) == self._batch_rows:
                yield self._batch(records)
                records = []
        if records:
            yield self._batch(records)

    def _batch(self, records: list[dict[str, Any]]) -> pa.RecordBatch:
        arrays = [_array(f, [r.get(f.name, _ABSENT) for r in records]) for f in self._schema]
        return pa.RecordBatch.from_arrays(arrays, schema=self._schema)


_ABSENT = object()


def _array(field: pa.Field, values: list[Any]) -> pa.Array:
    if field.metadata and JSON_TEXT in field.metadata:
        return string_array([None if v is _ABSENT else _json(v) for v in values])
    present = [v is not _ABSENT and v is not None for v in values]
    missing = ~np.array(present, dtype=bool)
    if field.type == pa.string():
        return string_array([v if p else None for v, p in zip(values, present, strict=True)])
    dtype = {pa.int64(): np.int64, pa.float64(): np.float64, pa.bool_(): np.bool_}[field.type]
    cells: np.ndarray = np.array([v if p else 0 for v, p in zip(values, present, strict=True)],
                     dtype=dtype)
    return arrow_column(cells, missing)


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


def cell_text(batch: pa.RecordBatch) -> pa.RecordBatch:
    """For CSV, TSV and the table: a JSON-text column's strings as their text (`"a"` is
    a), `null` as a missing cell, and other values (numbers, objects) as their JSON."""
    arrays = []
    for field, column in zip(batch.schema, batch.columns, strict=True):
        if field.metadata and JSON_TEXT in field.metadata:
            texts = column.to_pylist()
            column = string_array([None if t is None or t == "null" else
                                   json.loads(t) if t.startswith('"') else t for t in texts])
        arrays.append(column)
    fields = [f.remove_metadata() for f in batch.schema]
    return pa.RecordBatch.from_arrays(arrays, schema=pa.schema(fields, batch.schema.metadata))


class JsonlSink:
    """One JSON object a line, keys in column order. A missing cell is `null`, or left
    out of its record where a JSON Lines input's column had absent keys."""

    def __init__(self, stream: IO[bytes], schema: pa.Schema) -> None:
        self._stream = stream
        self._keys = [_encode(name) + ":" for name in schema.names]
        self._fields = list(schema)

    def write(self, batch: pa.RecordBatch) -> None:
        columns = [_json_values(f, c) for f, c in zip(self._fields, batch.columns, strict=True)]
        keys = self._keys
        lines = []
        for row in zip(*columns, strict=True):
            lines.append("{" + ",".join([k + v for k, v in zip(keys, row, strict=True)
                                         if v is not None]) + "}\n")
        self._stream.write("".join(lines).encode("utf-8", "surrogatepass"))

    def close(self) -> None:
        pass  # the stream is the run's

    def abort(self) -> None:
        pass


def _json_values(field: pa.Field, column: pa.Array) -> list[str | None]:
    """Each cell as JSON text; None: left out of the record."""
    metadata = field.metadata or {}
    if JSON_TEXT in metadata:
        return column.to_pylist()
    # A missing cell from another format (CSV's empty cell, Parquet's null) is a null,
    # so that a column of them is not lost; JSON Lines input says what it had.
    missing = None if metadata.get(FIELD_MISSING) == b"absent" else "null"
    arrow_type = column.type
    if pa.types.is_dictionary(arrow_type):
        column = column.dictionary_decode()
        arrow_type = column.type
    values = column.to_pylist()
    if pa.types.is_integer(arrow_type) or pa.types.is_decimal(arrow_type):
        return [missing if v is None else str(v) for v in values]
    if pa.types.is_floating(arrow_type):
        return [missing if v is None else _number(v) for v in values]
    if pa.types.is_boolean(arrow_type):
        return [missing if v is None else "true" if v else "false" for v in values]
    if pa.types.is_string(arrow_type) or pa.types.is_large_string(arrow_type):
        return [missing if v is None else _encode_string(v) for v in values]
    # Dates, times and timestamps as ISO text; anything else as its JSON, or its text.
    return [missing if v is None else _encode(v.isoformat() if hasattr(v, "isoformat")
                                             else _plain(v)) for v in values]


def _plain(value: Any) -> Any:
    try:
        _encode(value)
    except (TypeError, ValueError):
        return str(value)
    return value
