"""What each column of delimited text holds, judged from its first rows: numbers
(scanned by default), codes with a leading zero, flags and dates (scanned when named), or
text. All columns are judged in one pass over the cells in long form, so the time grows
with the number of cells, not with a Python call per column (a file 100,000 columns wide
was judged column by column in about 50 s).

What a cell is (missing, a number and which, a leading zero) is numtext.cell_kinds' one
rule, the small and compiled paths' too (small.py, fast.py): it reads the cells' Arrow
buffers where they lie, in C where built. Flags and dates, which those paths hand over,
and the summing up by column are polars'."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
import polars as pl
import pyarrow as pa

from cumtool import columnar, numtext
from cumtool.formats import ColumnHint, culprit_text, row_text
from cumtool.numtext import CELL_BIG_INTEGER, CELL_FLOAT, CELL_INT64, CELL_MISSING, CELL_OTHER

INFER_ROWS = 10_000
# Cells judged at once: a group of columns' (the checks copy them, in long form, several
# times over). 800 columns x 10,000 rows judged at once took the peak to 972 MiB.
JUDGE_CELLS = 1 << 17
TEXTS_NAMED = 5  # a mostly-numbers column's text cells named in its note's --na, at most
_ISO_DATE = r"^[0-9]{4}-[0-9]{2}-[0-9]{2}$"


def judge_columns(frame: pl.DataFrame, na: list[str], *, decimal_comma: bool,
                  float_columns: bool, decimal: bool,
                  rows: int = INFER_ROWS) -> list[ColumnHint]:
    """A hint for each column of `frame` (text columns), from its first `rows` rows (at
    most INFER_ROWS)."""
    if not frame.height:
        return [ColumnHint(pa.int64(), True, "int") for _ in range(frame.width)]
    head = frame.head(min(rows, INFER_ROWS))
    step = max(1, JUDGE_CELLS // head.height)
    hints: list[ColumnHint] = []
    for low in range(0, head.width, step):  # a group of columns at a time
        part = head.select(head.columns[low:low + step])
        position = {name: i for i, name in enumerate(part.columns)}
        long = part.unpivot(variable_name="column", value_name="cell")
        hints += judge_cells(long, part.width, position, na, decimal_comma=decimal_comma,
                             float_columns=float_columns, decimal=decimal)
    return hints


def judge_cells(long: pl.DataFrame, width: int, position: Mapping[Any, int] | Sequence[int],
                na: list[str],
                *, decimal_comma: bool, float_columns: bool,
                decimal: bool) -> list[ColumnHint]:
    """The hints of `width` columns from their cells in long form (`column`: a key that
    `position` maps to the column's place, `cell`: its text), at most INFER_ROWS rows each.
    Very wide files are judged so: they never become a frame of one column each."""
    codes, places = cell_codes(long.get_column("cell"), na, decimal_comma=decimal_comma,
                               places=decimal)
    cell, code = pl.col("cell"), pl.col("code")
    checks = [
        pl.len().alias("present"),
        (code & numtext.CELL_KIND).max().alias("number"),
        ((code & numtext.CELL_ZERO) != 0).any().alias("leading_zero"),
        cell.str.to_lowercase().is_in(["true", "false"]).all().alias("bool"),
        (cell.str.contains(_ISO_DATE)
         & cell.str.to_date("%Y-%m-%d", strict=False).is_not_null()).all().alias("date"),
    ]
    added = [pl.Series("code", codes)]
    if decimal:
        checks += [((code & numtext.CELL_EXPONENT) != 0).any().alias("exponent"),
                   pl.col("places").max().alias("places")]
        added.append(pl.Series("places", places))
    long = (long.with_columns(*added).filter(code != CELL_MISSING)
            .with_columns(cell.str.strip_chars()))
    found = long.group_by("column").agg(checks)
    hints = [ColumnHint(pa.float64(), False, "empty")] * width
    for row in found.iter_rows(named=True):
        hints[position[row["column"]]] = _hint(row, float_columns, decimal)
    return hints


def cell_codes(cells: pl.Series, na: list[str], *, decimal_comma: bool, places: bool = False
               ) -> tuple[np.ndarray, np.ndarray | None]:
    """numtext.cell_kinds of text cells (a null one missing), read from their Arrow
    buffers as they lie: each one's code, and with `places` its places."""
    array = cells.to_arrow()
    if isinstance(array, pa.ChunkedArray):
        array = array.combine_chunks()
    if array.type != pa.large_string():
        array = array.cast(pa.large_string())
    size = len(array)
    if not size:
        return np.zeros(0, np.uint8), (np.zeros(0, np.int64) if places else None)
    _validity, offsets, data = array.buffers()
    bounds = np.frombuffer(offsets, dtype=np.int64, count=size + 1, offset=8 * array.offset)
    starts, ends = bounds[:-1], bounds[1:]
    # Not is_valid().to_numpy(): that imports pandas (0.2 s of start-up).
    valid = columnar.validity(array)
    if valid is not None:
        flags = valid.view(np.uint8)
        ends = np.where(valid, ends, starts)  # a null cell: missing, whatever its bounds
    else:
        flags = np.ones(size, np.uint8)  # every cell as it is (no quotes doubled)
    return numtext.cell_kinds(b"" if data is None else data, starts, ends, flags,
                              numtext.marker_bytes(na), decimal_comma=decimal_comma,
                              places=places)


def widened(hints: list[ColumnHint], columns: Sequence[int]) -> list[ColumnHint]:
    """The hints, those of `columns` (integers whose later rows held a decimal) read as
    float64, scanned as they were."""
    out = list(hints)
    for i in columns:
        if 0 <= i < len(out):
            out[i] = ColumnHint(pa.float64(), out[i].by_default, "float")
    return out


def _hint(row: dict, float_columns: bool, decimal: bool) -> ColumnHint:
    number = row["number"]
    if number < CELL_OTHER:  # numbers, all of them
        by_default = not row["leading_zero"]
        kind = "int" if by_default else "code"
        if number == CELL_INT64:
            return ColumnHint(pa.float64() if float_columns else pa.int64(), by_default, kind)
        if number == CELL_BIG_INTEGER:  # beyond int64: an id, not a count
            if float_columns:
                return ColumnHint(pa.float64(), by_default, kind)
            return ColumnHint(None, False, "bigint")
        assert number == CELL_FLOAT
        return ColumnHint(_float_type(row, decimal), by_default,
                          "float" if by_default else "code")
    if row["bool"]:
        return ColumnHint(pa.bool_(), False, "bool")
    if row["date"]:
        return ColumnHint(pa.date32(), False, "date")
    return ColumnHint(None, False, "text")


def _float_type(row: dict, decimal: bool) -> pa.DataType:
    """float64, or with --decimal a decimal with as many places as the cells have."""
    if not decimal or row["exponent"]:
        return pa.float64()
    places = row["places"]
    return pa.decimal128(38, int(places) if isinstance(places, int) else 0)


def with_culprits(hints: list[ColumnHint], cells_of: Callable[[int], pl.Series],
                  na: list[str], *, decimal_comma: bool,
                  row_line: Callable[[int], int | None],
                  columns: Sequence[int] | None = None, first_row: int = 0
                  ) -> list[ColumnHint]:
    """The hints, each text column's with its first cell that is not a number, named by
    row and line (for the message when -c names the column), and whether its cells are
    mostly numbers (for a note when it is left out): one rule for the narrow and the wide
    CSV readers. `cells_of(i)` is column i's judged cells, the first of them row
    `first_row` (from 0) of the input, whose line row_line(row) gives; `columns`: only
    these hints (all: None)."""
    import dataclasses


    out = list(hints)
    for i in range(len(hints)) if columns is None else columns:
        hint = hints[i]
        if hint.kind != "text":
            continue
        cells = cells_of(i)
        codes, _places = cell_codes(cells, na, decimal_comma=decimal_comma)
        bad = (codes & numtext.CELL_KIND) == CELL_OTHER
        found = np.flatnonzero(bad)
        if not len(found):
            continue
        at = int(found[0])
        where = row_text(first_row + at + 1, row_line(first_row + at))
        mostly, formatted = numtext.left_out_numbers(codes, cells.__getitem__,
                                                     decimal_comma)
        texts: tuple[str, ...] = ()
        if mostly and not formatted:
            distinct = cells.filter(pl.Series(bad)).str.strip_chars().unique(
                maintain_order=True)
            texts = tuple(distinct.head(TEXTS_NAMED + 1).to_list())
            if len(texts) > TEXTS_NAMED:
                texts = ()  # too many to list: the note names --na without a list
        out[i] = dataclasses.replace(hint, culprit=culprit_text(where, str(cells[at])),
                                     mostly_numbers=mostly and not formatted, texts=texts,
                                     formatted=formatted, comma_decimal=formatted
                                     and numtext.comma_decimal(str(cells[at])))
    return out


def judge_one(cells: pl.Series, na: list[str], *, decimal_comma: bool, float_columns: bool,
              decimal: bool, row_line: Callable[[int], int | None], first_row: int
              ) -> ColumnHint:
    """The hint of one column from `cells` (text), its first at row `first_row`: a column
    empty in every judged row, judged from the rows from its first value on."""
    long = pl.DataFrame({"column": pl.Series([0] * cells.len(), dtype=pl.Int32),
                         "cell": cells})
    hints = judge_cells(long, 1, [0], na, decimal_comma=decimal_comma,
                        float_columns=float_columns, decimal=decimal)
    return with_culprits(hints, lambda _i: cells, na, decimal_comma=decimal_comma,
                         row_line=row_line, first_row=first_row)[0]
