"""JSON Lines text from columns of numbers, flags and text, as Python's json module writes
them: the loop of the JSON Lines writer (jsonl.JsonlSink) and of the compiled CSV
pipeline's JSON Lines output (formats/csv/fast). No pyarrow and no polars here: the pipeline loads
neither.

It runs in C (`_ext/_jsonl.c`'s write_lines, without the GIL) where that was built, and
in Python otherwise (write_lines_py: the same bytes, compared by tests/test_jsonl_lines.py).
"""

from __future__ import annotations

import math
from types import ModuleType

import numpy as np

from cumtool._ext import load
from cumtool.formats.records import cut_cell_text
from cumtool.pipeline import written_into

NATIVE: ModuleType | None = load("_jsonl")  # None: the Python twin (cumtool._ext)

# (key, values, missing, absent): the key's JSON text with its colon, rows float64s,
# int64s or bools, and None or rows bools each. Or (key, data, starts, ends, flags), with
# (missing, absent) after them or not: text cells (int64 bounds into data, uint8 flags:
# CSV cells as fastcsv.cut found them, strings with flag 1), written as JSON strings.
NumberColumn = tuple[bytes, np.ndarray, "np.ndarray | None", "np.ndarray | None"]
CellColumn = tuple[bytes, "bytes | memoryview", np.ndarray, np.ndarray, np.ndarray]
TextColumn = tuple[bytes, "bytes | memoryview", np.ndarray, np.ndarray, np.ndarray,
                   "np.ndarray | None", "np.ndarray | None"]
LineColumn = NumberColumn | CellColumn | TextColumn



def key_text(name: str) -> bytes:
    """A key as it starts a member: its JSON text and a colon."""
    import json  # here: the CSV pipeline's start-up does not load it for CSV output

    return (json.dumps(name, ensure_ascii=False) + ":").encode("utf-8")


def number_text(value: float) -> str:
    """A float as Python's json module writes it: repr(), or NaN, Infinity, -Infinity."""
    if math.isfinite(value):
        return float.__repr__(value)
    return "NaN" if math.isnan(value) else "Infinity" if value > 0 else "-Infinity"


def write_lines(rows: int, columns: list[LineColumn]) -> bytes:
    """`rows` lines, each one JSON object of the columns in order: a value as json writes
    it, null where `missing`, and left out with its key where `absent`."""
    text = write_prepared(rows, prepared(columns))
    assert isinstance(text, bytes)
    return text


def prepared(columns: list[LineColumn]) -> list[LineColumn]:
    """Columns as write_prepared takes them: their arrays contiguous (numpy work, with
    the GIL: the JSON Lines writer does it before it hands a batch to a thread)."""
    return [_contiguous(column) for column in columns]


def write_prepared(rows: int, columns: list[LineColumn],
                   into: bytearray | None = None) -> bytes | int:
    """write_lines of `prepared` columns (in C without the GIL, where built); given
    `into`, written into it, their size returned (pipeline.RenderedAhead.put_into)."""
    if NATIVE is not None:
        text: bytes | int = NATIVE.write_lines(rows, columns, into)
        return text
    return written_into(into, write_lines_py(rows, columns))


def _contiguous(column: LineColumn) -> LineColumn:
    if len(column) == 5:
        key, data, starts, ends, flags = column
        return (key, data, np.ascontiguousarray(starts), np.ascontiguousarray(ends),
                np.ascontiguousarray(flags))
    if len(column) == 7:
        key, data, starts, ends, flags, missing, absent = column
        return (key, data, np.ascontiguousarray(starts), np.ascontiguousarray(ends),
                np.ascontiguousarray(flags), _mask(missing), _mask(absent))
    key, values, missing, absent = column
    return key, np.ascontiguousarray(values), _mask(missing), _mask(absent)


def _mask(mask: np.ndarray | None) -> np.ndarray | None:
    return None if mask is None else np.ascontiguousarray(mask, dtype=np.bool_)


def cell_string(data: bytes | memoryview, start: int, end: int, flag: int) -> str:
    """A CSV cell (as fastcsv.cut found it) as Python's json writes its text; null where
    it is empty and was not quoted (small.records reads it as missing)."""
    import json

    if start == end and not flag:
        return "null"
    return json.dumps(cut_cell_text(data, start, end, flag), ensure_ascii=False)


def write_lines_py(rows: int, columns: list[LineColumn]) -> bytes:
    """write_lines in Python."""
    texts: list[list[str | None]] = []
    for column in columns:
        if len(column) != 4:
            key, data, starts, ends, flags = column[:5]
            missing, absent = column[5:] if len(column) == 7 else (None, None)
            cells = [cell_string(data, start, end, flag) for start, end, flag
                     in zip(starts.tolist(), ends.tolist(), flags.tolist(), strict=True)]
            texts.append(_members(key, cells, missing, absent, rows))
            continue
        key, values, missing, absent = column
        if values.shape != (rows,):
            raise ValueError("write_lines: values are as many float64s, int64s or bools "
                             "as rows")
        if values.dtype == np.float64:
            cells = [number_text(v) for v in values.tolist()]
        elif values.dtype == np.int64:
            cells = [str(v) for v in values.tolist()]
        elif values.dtype == np.bool_:
            cells = ["true" if v else "false" for v in values.tolist()]
        else:
            raise ValueError("write_lines: values are as many float64s, int64s or bools "
                             "as rows")
        texts.append(_members(key, cells, missing, absent, rows))
    lines = ["{" + ",".join(t for t in row if t is not None) + "}\n"
             for row in zip(*texts, strict=True)] if texts else ["{}\n"] * rows
    return "".join(lines).encode("utf-8")


def _members(key: bytes, cells: list[str], missing: np.ndarray | None,
             absent: np.ndarray | None, rows: int) -> list[str | None]:
    """A column's members, row by row: None where absent, its value or null."""
    member = key.decode("utf-8")
    gone = [False] * rows if missing is None else missing.tolist()
    left_out = [False] * rows if absent is None else absent.tolist()
    return [None if out else member + ("null" if null else cell)
            for cell, null, out in zip(cells, gone, left_out, strict=True)]
