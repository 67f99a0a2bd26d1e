"""The small path's reference: a CSV or TSV read whole, cut into Python lists of cells,
judged, scanned and written cell by cell, as the streaming path (sources.py,
formats/csv/csv.py, tables.py, formats/csv/csvwrite.py) writes it. cumtool itself
renders small inputs with formats/csv/fast.py's pipeline on one worker; the tests hold
that pipeline, and the streaming path, to this (tests/test_small.py). It shares the
small path's reading (records: _csvtext's where built), its judging rules and its
number texts (cumtool/formats/csv/small.py); its judging and parsing of cells are
Python's alone."""

from __future__ import annotations

import collections

import numpy as np

from cumtool import kernels
from cumtool.formats.csv import dialect
from cumtool.formats.csv.small import (
    INFER_ROWS,
    Handover,
    _Hint,
    _hint,
    _judge_cells,
    input_kind,
    key_columns,
    noted,
    number,
    output_kind,
    records,
    result_texts,
    select_scanned,
)
from cumtool.request import Request

_INT64 = np.dtype(np.int64)


def render(request: Request, data: bytes) -> bytes:
    """The output of `request` on the input `data` (all of it), as the streaming path
    writes it; raises Handover (or a CumtoolError) where that path must run instead."""
    if request.period is not None or request.share:
        raise Handover  # fast.py's _Job (render_whole) or the streaming path
    kind = input_kind(request, data)
    out = output_kind(request, kind)
    read = request.csv_read(kind.format)
    write = request.csv_write(out.format)
    dtype = kernels.parse_dtype(request.dtype) if request.dtype is not None else None
    if dtype is not None and dtype.kind == "c":
        raise Handover
    names, rows = records(data, read.delimiter, read.header)
    markers = set(read.na_values) | {""}
    floats = dtype is not None and dtype.kind == "f"
    hints = [judge(rows, j, markers, floats) for j in range(len(names))]
    judged_from = [0] * len(names)  # the first row each column is judged from
    for j, hint in enumerate(hints):
        if hint.empty:  # judged from the rows from its first value on, as CsvSource does
            first = next((r for r in range(INFER_ROWS, len(rows))
                          if (c := rows[r][j]) is not None and c.strip() not in markers), None)
            if first is not None:
                hints[j] = judge(rows[first:], j, markers, floats)
                judged_from[j] = first
    keys = key_columns(request, names)
    selected = select_scanned(request, names, hints, keys)
    if next(noted(request, hints, selected, keys,
                  lambda j: [row[j] for row in rows[judged_from[j]:judged_from[j] + INFER_ROWS]],
                  markers), None) is not None:  # column 0 too
        raise Handover  # the streaming path says which, where, and how to scan it
    ops = request.ops
    groups = None
    if keys:
        from cumtool import grouped

        groups = grouped.BatchGroups(group_ids(rows, keys), None)
    repeated = {n for n, count in collections.Counter(names).items() if count > 1}

    def label(i: int) -> str:
        return f"{names[i]!r} (column {i + 1})" if names[i] in repeated else repr(names[i])

    results: dict[tuple[int, str], _Column] = {}
    scan = request.scan_options()  # checked once, not per column and op
    for i in selected:
        values, valid = _parse(rows, i, hints[i], markers)
        for op in ops:
            spec = kernels.make_spec(op, values.dtype, dtype, what=f"column {label(i)}",
                                     **scan)
            if groups is None:
                result = kernels.scan_block(spec, values, valid, kernels.initial_carry(spec))
            else:
                carry = grouped.GroupCarry(spec)
                carry.grow(int(groups.ids.max()) + 1 if rows else 0)
                result = grouped.scan_runs(spec, values, valid, groups, carry, None)
            missing = None if valid is None else ~valid
            if result.missing is not None:  # a statistic of nothing (--exclusive first)
                missing = result.missing if missing is None else missing | result.missing
            results[i, op] = _Column(result.values, missing)
    scanned = set(selected)
    keep = request.keep or len(ops) > 1
    columns: list[tuple[str, _Column | int]] = []  # a result, or an input column's text
    if not keep:
        for i, name in enumerate(names):
            if i in scanned:
                columns.append((name, results[i, ops[0]]))
            elif not request.only_scanned:
                columns.append((name, i))
    else:
        columns = [(name, i) for i, name in enumerate(names)
                   if not request.only_scanned or i in scanned]
        taken = set(names)
        for op in ops:
            if any(f"{names[i]}_{op}" in taken for i in selected):
                raise Handover  # tables.py words the clash
        for i in selected:
            columns.extend((f"{names[i]}_{op}", results[i, op]) for op in ops)
    return _write(columns, rows, write.delimiter, write.header, write.na_rep)


def judge(rows: list[list[str | None]], column: int, markers: set[str],
           float_columns: bool) -> _Hint:
    """judge.py's rules for one column, from its first INFER_ROWS rows."""
    if not rows:
        return _Hint(_INT64, True)
    count, zero, kind = _judge_cells(rows, column, markers)
    return _hint(count, zero, kind, float_columns)


def group_ids(rows: list[list[str | None]], keys: list[int]) -> np.ndarray:
    """Each row's group id for --by (grouped.CellKeys' numbering, of cells as Python
    text): its key cells' text, an empty one missing."""
    seen: dict[tuple[str | None, ...], int] = {}
    return np.fromiter((seen.setdefault(tuple(row[k] or None for k in keys), len(seen))
                        for row in rows), dtype=np.int64, count=len(rows))


def _parse(rows: list[list[str | None]], column: int, hint: _Hint, markers: set[str]
           ) -> tuple[np.ndarray, np.ndarray | None]:
    """A column's values and validity, as CsvSource._parse converts it: every cell as it
    is when all parse so; else spaces stripped and missing markers missing."""
    dtype = hint.dtype
    assert dtype is not None
    # As CsvSource: cells taken as they are when all parse so, unless a missing marker
    # parses too (--na 0): then every cell is checked against the markers.
    as_they_are = not any(number(marker.strip(), dtype) is not None for marker in markers)
    cells = [row[column] for row in rows]
    if as_they_are:
        direct = [None if c is None else number(c, dtype) for c in cells]
        if all(v is not None for v in direct):
            return np.array(direct, dtype=dtype), None
    values: list[int | float] = []
    valid: list[bool] = []
    for cell in cells:
        text = None if cell is None else cell.strip()
        if text is None or text in markers:
            values.append(0)
            valid.append(False)
            continue
        value = number(text, dtype)
        if value is None:
            raise Handover  # a bad cell: the streaming path names it
        values.append(value)
        valid.append(True)
    return np.array(values, dtype=dtype), np.array(valid, dtype=bool)


class _Column:
    """A result column: values and missing cells (None: none)."""

    def __init__(self, values: np.ndarray, missing: np.ndarray | None) -> None:
        self.values = values
        self.missing = missing


def _write(columns: list[tuple[str, _Column | int]], rows: list[list[str | None]],
           delimiter: str, header: bool, na_rep: str) -> bytes:
    """The text formats/csv/csvwrite.py's CsvSink writes: polars' write_csv, with quoting
    "necessary", or with text quoted by CsvSink itself (--na-rep, one column)."""
    single = len(columns) == 1
    by_sink = bool(na_rep) or single

    def quote(text: str) -> str:
        return dialect.quote(text, delimiter, single)

    null = quote(na_rep) if na_rep or single else ""

    def polars_quote(text: str | None) -> str:  # polars quotes an empty text
        return "" if text is None else dialect.quote(text, delimiter, True)

    text_cell = (lambda c: quote("" if c is None else c)) if by_sink else polars_quote
    rendered: list[list[str]] = []
    for _name, column in columns:
        if isinstance(column, int):
            rendered.append([text_cell(row[column]) for row in rows])
        else:
            rendered.append(result_texts(column.values, column.missing, null, text_cell))
    lines = []
    if header:
        lines.append(delimiter.join(quote(name) for name, _ in columns))
    lines.extend(delimiter.join(cells) for cells in zip(*rendered, strict=True))
    return "".join(line + "\n" for line in lines).encode()
