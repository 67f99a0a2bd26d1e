"""What each column of delimited text holds, judged from its first rows: numbers
(scanned by default), codes with a leading zero, flags and dates (scanned when named), or
text. All columns are judged in one polars query over the cells in long form, so the
time grows with the number of cells, not with a Python call per column (a file 100,000
columns wide was judged column by column in about 50 s)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import polars as pl
import pyarrow as pa

from cumtool.formats import ColumnHint

INFER_ROWS = 10_000
MOSTLY_NUMBERS = 0.9  # of a text column's judged cells (not missing): a note if unscanned
TEXTS_NAMED = 5  # a mostly-numbers column's text cells named in its note's --na, at most
_INTEGER = r"^[+-]?[0-9]+$"
_LEADING_ZERO = r"^[+-]?0[0-9]"
_ISO_DATE = r"^[0-9]{4}-[0-9]{2}-[0-9]{2}$"


def judge_columns(frame: pl.DataFrame, na: list[str], *, decimal_comma: bool,
                  float_columns: bool, decimal: bool,
                  rows: int = INFER_ROWS) -> list[ColumnHint]:
    """A hint for each column of `frame` (text columns), from its first `rows` rows (at
    most INFER_ROWS)."""
    if not frame.height:
        return [ColumnHint(pa.int64(), True, "int") for _ in range(frame.width)]
    position = {name: i for i, name in enumerate(frame.columns)}
    long = frame.head(min(rows, INFER_ROWS)).unpivot(variable_name="column", value_name="cell")
    return judge_cells(long, frame.width, position, na, decimal_comma=decimal_comma,
                       float_columns=float_columns, decimal=decimal)


def judge_cells(long: pl.DataFrame, width: int, position: Mapping[Any, int] | Sequence[int],
                na: list[str],
                *, decimal_comma: bool, float_columns: bool,
                decimal: bool) -> list[ColumnHint]:
    """The hints of `width` columns from their cells in long form (`column`: a key that
    `position` maps to the column's place, `cell`: its text), at most INFER_ROWS rows each.
    Very wide files are judged so: they never become a frame of one column each."""
    cell = pl.col("cell")
    numbers = cell.str.replace(",", ".", literal=True) if decimal_comma else cell
    checks = [
        pl.len().alias("present"),
        cell.str.contains(".", literal=True).any().alias("point"),
        numbers.str.contains(_LEADING_ZERO).any().alias("leading_zero"),
        numbers.cast(pl.Int64, strict=False).is_not_null().all().alias("int"),
        numbers.str.contains(_INTEGER).all().alias("integer_text"),
        numbers.cast(pl.Float64, strict=False).is_not_null().all().alias("float"),
        cell.str.to_lowercase().is_in(["true", "false"]).all().alias("bool"),
        (cell.str.contains(_ISO_DATE)
         & cell.str.to_date("%Y-%m-%d", strict=False).is_not_null()).all().alias("date"),
    ]
    if decimal:
        checks += [numbers.str.contains(r"[eEnN]").any().alias("exponent"),
                   numbers.str.extract(r"\.([0-9]+)$").str.len_chars().max().alias("places")]
    long = long.with_columns(cell.str.strip_chars()).filter(~cell.is_in(na))
    found = long.group_by("column").agg(checks)
    hints = [ColumnHint(pa.float64(), False, "empty")] * width
    for row in found.iter_rows(named=True):
        hints[position[row["column"]]] = _hint(row, decimal_comma, float_columns, decimal)
    return hints


def first_non_number(cells: pl.Series, na: list[str], *, decimal_comma: bool) -> int | None:
    """The position of the first cell of `cells` (text) that is neither missing nor a
    number, as judge_cells reads them; None if there is none."""
    found = _non_numbers(cells, na, decimal_comma=decimal_comma).arg_true()
    return int(found[0]) if found.len() else None


def _non_numbers(cells: pl.Series, na: list[str], *, decimal_comma: bool) -> pl.Series:
    """Whether each cell of `cells` (text) is neither missing nor a number."""
    stripped = cells.str.strip_chars()
    numbers = stripped.str.replace(",", ".", literal=True) if decimal_comma else stripped
    bad = (stripped.is_not_null() & ~stripped.is_in(na)
           & numbers.cast(pl.Float64, strict=False).is_null())
    if decimal_comma:  # 1.5 with --decimal-comma: not a number
        bad = bad | stripped.str.contains(".", literal=True).fill_null(False)
    return bad.fill_null(False)


def mostly_numbers(present: int, numbers: int) -> bool:
    """Whether a text column whose judged cells not missing are `present`, `numbers` of
    them numbers, is mostly numbers (every path's one rule)."""
    return 0 < numbers < present and numbers >= MOSTLY_NUMBERS * present


def culprit_text(row: str, cell: str) -> str:
    """`row 2 (line 3) holds 'oops'`: where a text column's first non-number stands."""
    return f"{row} holds {cell[:40]!r}"


def widened(hints: list[ColumnHint], columns: Sequence[int]) -> list[ColumnHint]:
    """The hints, those of `columns` (integers whose later rows held a decimal) read as
    float64, scanned as they were."""
    out = list(hints)
    for i in columns:
        if 0 <= i < len(out):
            out[i] = ColumnHint(pa.float64(), out[i].by_default, "float")
    return out


def _hint(row: dict, decimal_comma: bool, float_columns: bool, decimal: bool) -> ColumnHint:
    if not (decimal_comma and row["point"]):  # 1.5 with --decimal-comma: not a number
        by_default = not row["leading_zero"]
        kind = "int" if by_default else "code"
        if row["int"]:
            return ColumnHint(pa.float64() if float_columns else pa.int64(), by_default, kind)
        if row["integer_text"]:  # beyond int64: an id, not a count
            if float_columns:
                return ColumnHint(pa.float64(), by_default, kind)
            return ColumnHint(None, False, "bigint")
        if row["float"]:
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

    from cumtool.formats.csv.csvcells import row_text

    out = list(hints)
    for i in range(len(hints)) if columns is None else columns:
        hint = hints[i]
        if hint.kind != "text":
            continue
        cells = cells_of(i)
        bad = _non_numbers(cells, na, decimal_comma=decimal_comma)
        found = bad.arg_true()
        if not found.len():
            continue
        at = int(found[0])
        where = row_text(first_row + at + 1, row_line(first_row + at))
        present = int((cells.str.strip_chars().is_not_null()
                       & ~cells.str.strip_chars().is_in(na)).sum())
        mostly = mostly_numbers(present, present - found.len())
        texts: tuple[str, ...] = ()
        if mostly:
            distinct = cells.filter(bad).str.strip_chars().unique(maintain_order=True)
            texts = tuple(distinct.head(TEXTS_NAMED + 1).to_list())
            if len(texts) > TEXTS_NAMED:
                texts = ()  # too many to list: the note names --na without a list
        out[i] = dataclasses.replace(hint, culprit=culprit_text(where, str(cells[at])),
                                     mostly_numbers=mostly, texts=texts)
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
