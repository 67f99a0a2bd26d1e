"""What a CSV cell is, one rule for every path (issue 35): numtext.cell_kinds and
judge_bounds, in C (_csvtext.c) and in Python, bit for bit; the rule against the parsers
that read the columns it judges numbers (polars' casts on the streaming and wide paths,
float() and int() on the small and compiled ones); and the paths' judges of a column
(judge.py's, small.py's) against each other on the same cells."""

from __future__ import annotations

import itertools
import math

import numpy as np
import polars as pl
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cumtool import numtext
from cumtool.formats import DEFAULT_NA
from cumtool.formats.csv import judge, small
from cumtool.numtext import (
    CELL_BIG_INTEGER,
    CELL_EXPONENT,
    CELL_FLOAT,
    CELL_INT64,
    CELL_KIND,
    CELL_MISSING,
    CELL_OTHER,
    CELL_ZERO,
)

needs_c = pytest.mark.skipif(numtext.CELLS is None, reason="cumtool._ext._csvtext is not built")

# The cells the two rules (polars' casts, the small path's grammar) could have read apart.
HARD = [" 1e5", "+.5", "5.", "inf", "NaN", "-0", "1_000", "0x10", "\u0661\u0662", " 12 ",
        "+", "-", "1e400", "-1e-400", "12345678901234567890", "99999999999999999999",
        "9223372036854775807", "9223372036854775808", "-9223372036854775808",
        "-9223372036854775809", "00", "-07", "+07", "0", "-0.0", "1,5", "1.5", ",5", "5,",
        "1,000,5", "1.000,5", ".", ",", "e5", "1e", "1e+", "--1", "+-1", "1.5.5", "0.5",
        "07", "0.07", "1 000", "\t3\t", "1\u00a0", "\u00a01", "\u20281\u3000", "\uff13",
        "0e0", "NAN", "iNf", "+inf", "-Infinity", "INFINITY", "infinit", "nana", "1d5",
        "1f", "0b1", "1L", "\u0660\u0667", "true", "FALSE", "2020-01-01", "2020-02-30",
        "1.5e3", "-.5e-3", "1.50", "1.", "+5", "+0", "0" * 25 + "1", "1" * 30, "-" + "9" * 19,
        "1" * 30 + ".5", "1\x0b", "\x0c1", "1\r", "\u00b2", "1__0", "1_0.5", "NA", " NA ",
        "n/a", "null", "", "  ", "\u0085", '1"', "\u0131nf", "\u0130NF", "nan\u212a",
        "0" * 5000 + "12", "9" * 5000, "-" + "0" * 30, "1.5e-3\u2029"]
MARKERS = [list(DEFAULT_NA), ["", "0", "nan"], ["", "-", "1,5"], ["", "\u00e9", " NA "]]


def short_cells(alphabet: str, longest: int) -> list[str]:
    return ["".join(p) for k in range(longest + 1) for p in itertools.product(alphabet,
                                                                               repeat=k)]


# Every string of these up to 4 characters: digits, signs, both points, exponents, the
# words' letters, spaces (ASCII, Unicode, and U+001C, which polars does not strip), an
# underscore, an Arabic-Indic digit.
ALPHABET = "019+-.,eEinf _\u00a0\u0661\x1c"
CELLS = short_cells(ALPHABET, 4) + HARD
TWIN_CELLS = short_cells(ALPHABET, 3) + HARD  # the Python twin's time: a shorter list


def codes_of(cells: list[str | None], markers: list[str], decimal_comma: bool,
             twin: bool = False) -> tuple[np.ndarray, np.ndarray]:
    kinds = numtext.cell_kinds_py if twin else numtext.cell_kinds
    codes, places = kinds(*numtext.cell_bounds(cells), numtext.marker_bytes(markers),
                          decimal_comma=decimal_comma, places=True)
    assert places is not None
    return codes, places


# The twins ------------------------------------------------------------------------------

@needs_c
@pytest.mark.parametrize("decimal_comma", [False, True])
@pytest.mark.parametrize("markers", MARKERS)
def test_cell_kinds_twins_agree_on_every_short_cell(decimal_comma, markers):
    data, starts, ends, flags = numtext.cell_bounds([*TWIN_CELLS, None])
    quoted = flags.copy()
    quoted[::3] = np.where(quoted[::3] == 1, 2, quoted[::3])  # "" read as one quote
    unquoted = np.zeros_like(flags)  # an empty cell missing, any other as it is
    for f in (flags, quoted, unquoted):
        found = numtext.cell_kinds(data, starts, ends, f, numtext.marker_bytes(markers),
                                   decimal_comma=decimal_comma, places=True)
        twin = numtext.cell_kinds_py(data, starts, ends, f, numtext.marker_bytes(markers),
                                     decimal_comma=decimal_comma, places=True)
        assert np.array_equal(found[0], twin[0])
        assert np.array_equal(found[1], twin[1])
        for column in (slice(0, 40), slice(None), slice(len(TWIN_CELLS) - 60, None)):
            bounds = data, starts[column], ends[column], f[column]
            assert (numtext.judge_bounds(*bounds, numtext.marker_bytes(markers))
                    == numtext.judge_bounds_py(*bounds, numtext.marker_bytes(markers)))


@needs_c
@settings(max_examples=300, deadline=None)
@given(data=st.binary(max_size=60), cuts=st.lists(st.tuples(st.integers(0, 60),
                                                             st.integers(0, 60),
                                                             st.integers(0, 2)), max_size=12),
       markers=st.lists(st.binary(max_size=3), max_size=3), decimal_comma=st.booleans())
def test_cell_kinds_twins_agree_on_any_bytes(data, cuts, markers, decimal_comma):
    """Not UTF-8, odd quotes, cells out of the data: the same codes, or the same error."""
    starts = np.array([min(a, b) for a, b, _f in cuts], np.int64)
    ends = np.array([max(a, b) for a, b, _f in cuts], np.int64)
    flags = np.array([f for _a, _b, f in cuts], np.uint8)
    results = []
    for kinds, judged in ((numtext.cell_kinds, numtext.judge_bounds),
                          (numtext.cell_kinds_py, numtext.judge_bounds_py)):
        try:
            codes, places = kinds(data, starts, ends, flags, markers,
                                  decimal_comma=decimal_comma, places=True)
            results.append((codes.tolist(), places.tolist(),
                            judged(data, starts, ends, flags, markers)))
        except ValueError as error:
            results.append(str(error))
    assert results[0] == results[1]


@needs_c
def test_cell_kinds_refuse_what_they_cannot_read():
    data, starts, ends, flags = numtext.cell_bounds(["1", "x"])
    for kinds in (numtext.cell_kinds, numtext.cell_kinds_py):
        with pytest.raises(ValueError):
            kinds(data, starts, ends + 5, flags, [])
    with pytest.raises(TypeError):
        numtext.CELLS.cell_kinds(data, starts, ends, flags, ["NA"], False,
                                 np.empty(2, np.uint8), None)
    with pytest.raises(ValueError):
        numtext.CELLS.cell_kinds(data, starts, ends, flags, [], False,
                                 np.empty(3, np.uint8), None)


# The rule against the parsers -----------------------------------------------------------

@pytest.mark.parametrize("decimal_comma", [False, True])
def test_a_number_by_the_rule_is_one_polars_reads(decimal_comma):
    """The streaming and wide paths parse a scanned column with polars' casts, the cell
    stripped (csv.py's _parse, csvcells.convert; with --decimal-comma its comma a point):
    a cell is an integer, a float, missing or neither by the rule exactly where polars
    reads it so, with the leading zero, exponent and places judge.py's --decimal takes."""
    markers = ["", "NA"]
    codes, places = codes_of(CELLS, markers, decimal_comma)
    stripped = pl.Series(CELLS, dtype=pl.String).str.strip_chars()
    numbers = stripped.str.replace(",", ".", literal=True) if decimal_comma else stripped
    point = (stripped.str.contains(".", literal=True) if decimal_comma
             else pl.Series([False] * len(CELLS))).to_numpy()
    int64 = numbers.cast(pl.Int64, strict=False).is_not_null().to_numpy() & ~point
    float64 = numbers.cast(pl.Float64, strict=False).is_not_null().to_numpy() & ~point
    integer = numbers.str.contains(r"^[+-]?[0-9]+$").to_numpy()
    missing = stripped.is_in(markers).to_numpy()
    expected = np.select([missing, int64, integer & ~int64, float64],
                         [CELL_MISSING, CELL_INT64, CELL_BIG_INTEGER, CELL_FLOAT], CELL_OTHER)
    kinds = codes & CELL_KIND
    wrong = [(CELLS[i], int(kinds[i]), int(expected[i]))
             for i in np.flatnonzero(kinds != expected)]
    assert not wrong
    present = ~missing
    zero = numbers.str.contains(r"^[+-]?0[0-9]").to_numpy()
    assert np.array_equal((codes[present] & CELL_ZERO) != 0, zero[present])
    floats = kinds == CELL_FLOAT
    exponent = numbers.str.contains(r"[eEnN]").to_numpy()
    assert np.array_equal((codes[floats] & CELL_EXPONENT) != 0, exponent[floats])
    digits = numbers.str.extract(r"\.([0-9]+)$").str.len_chars().fill_null(0).to_numpy()
    plain = floats & ~exponent
    assert np.array_equal(places[plain], digits[plain])


def test_a_number_by_the_rule_is_one_python_reads():
    """The small and compiled paths parse with small.number (float(), int()) of the cell
    stripped: every number by the rule reads so, to polars' value; every other is none.
    (Those paths hand over on U+001C..U+001F, which str.strip() strips and polars not.)"""
    cells = [c for c in CELLS if not any("\x1c" <= ch <= "\x1f" for ch in c)]
    codes, _places = codes_of(cells, [], False)
    stripped = pl.Series(cells, dtype=pl.String).str.strip_chars()
    floats = stripped.cast(pl.Float64, strict=False).to_list()
    ints = stripped.cast(pl.Int64, strict=False).to_list()
    for cell, code, value, integer in zip(cells, (codes & CELL_KIND).tolist(), floats, ints,
                                          strict=True):
        as_int = small.number(cell.strip(), np.dtype(np.int64))
        as_float = small.number(cell.strip(), np.dtype(np.float64))
        if code == CELL_INT64:
            assert as_int == integer is not None, cell
        else:
            assert as_int is None, cell
        if code in (CELL_INT64, CELL_BIG_INTEGER, CELL_FLOAT):
            assert as_float is not None and value is not None, cell
            assert as_float == value or (math.isnan(as_float) and math.isnan(value)), cell
        else:
            assert as_float is None and (code == CELL_MISSING or value is None), cell


# The paths' judges on the same column ---------------------------------------------------

def _by_polars_casts(cells: list[str | None], na: list[str], decimal_comma: bool,
                     decimal: bool) -> pa.DataType | None:
    """judge.py's rule before issue 35, from polars' casts: a column's type, or None."""
    kept = [c.strip(" \t\n\r\x0b\x0c") for c in cells if c is not None]
    series = pl.Series(kept, dtype=pl.String).str.strip_chars()
    series = series.filter(~series.is_in(na))
    if decimal_comma and series.str.contains(".", literal=True).any():
        return None
    numbers = series.str.replace(",", ".", literal=True) if decimal_comma else series
    if not len(numbers):
        return pa.float64()
    if numbers.cast(pl.Int64, strict=False).is_not_null().all():
        return pa.int64()
    if numbers.str.contains(r"^[+-]?[0-9]+$").all():
        return None  # beyond int64: an id
    if numbers.cast(pl.Float64, strict=False).is_not_null().all():
        if not decimal or numbers.str.contains(r"[eEnN]").any():
            return pa.float64()
        places = numbers.str.extract(r"\.([0-9]+)$").str.len_chars().max()
        return pa.decimal128(38, int(places) if isinstance(places, int) else 0)
    return None


def _columns() -> list[list[str | None]]:
    """Each hard cell alone, with an integer, with a float, with a code, with a missing
    cell; and every pair of hard cells."""
    columns: list[list[str | None]] = []
    for cell in HARD:
        columns += [[cell], [cell, "1"], [cell, "2.5"], ["007", cell], [None, cell, ""]]
    columns += [[a, b] for a, b in itertools.combinations(HARD[:40], 2)]
    return columns


def _polars_side(columns: list[list[str | None]], na: list[str], *, decimal_comma: bool,
                 decimal: bool = False) -> list:
    long = pl.DataFrame({
        "column": pl.Series([j for j, cells in enumerate(columns) for _ in cells],
                            dtype=pl.Int32),
        "cell": pl.Series([c for cells in columns for c in cells], dtype=pl.String)})
    return judge.judge_cells(long, len(columns), range(len(columns)), na,
                             decimal_comma=decimal_comma, float_columns=False,
                             decimal=decimal)


@pytest.mark.parametrize("na", MARKERS)
def test_judge_py_and_the_small_path_judge_a_column_alike(na):
    """judge.judge_cells (the streaming and wide readers'), small.judge_cut (the compiled
    path's, C where built) and small._judge_cells (the reference's, Python): the same
    type and the same default on every column."""
    columns = [c for c in _columns() if not any(cell and any("\x1c" <= ch <= "\x1f"
                                                             for ch in cell) for cell in c)]
    hints = _polars_side(columns, na, decimal_comma=False)
    markers = set(na) | {""}
    for cells, hint in zip(columns, hints, strict=True):
        data, starts, ends, flags = numtext.cell_bounds(cells)
        cut = small.judge_cut(data, starts, ends, flags, markers, False)
        reference = small._hint(*small._judge_cells([[c] for c in cells], 0, markers), False)
        number = hint.kind not in ("bool", "date", "text", "bigint")  # others hand over
        expected = ((np.dtype(hint.parse_as.to_pandas_dtype()), hint.by_default) if number
                    else (None, False))
        for found in (cut, reference):
            assert (found.dtype, found.by_default if found.dtype is not None else False) \
                == expected, (cells, hint)
        assert (hint.kind == "empty") == cut.empty == reference.empty, cells


@pytest.mark.parametrize("decimal", [False, True])
@pytest.mark.parametrize("decimal_comma", [False, True])
@pytest.mark.parametrize("na", MARKERS[:2])
def test_judge_py_judges_as_polars_casts_did(na, decimal_comma, decimal):
    """With and without --decimal-comma and --decimal, judge.py's types are those its
    polars casts gave before the one rule (the cells polars parses)."""
    columns = _columns()
    hints = _polars_side(columns, na, decimal_comma=decimal_comma, decimal=decimal)
    for cells, hint in zip(columns, hints, strict=True):
        expected = _by_polars_casts(cells, na, decimal_comma, decimal)
        if hint.kind in ("bool", "date"):
            assert expected is None, cells
            continue
        assert hint.parse_as == expected, (cells, hint)


def test_culprits_and_mostly_numbers_by_the_rule():
    """with_culprits names a text column's first cell that is no number by the rule, and
    its text cells when they are few among numbers."""
    cells = pl.Series(["1", " 2 ", "NA", "0x10", *map(str, range(3, 30)), "0x10", None],
                      dtype=pl.String)
    hint = judge.judge_one(cells, ["", "NA"], decimal_comma=False, float_columns=False,
                           decimal=False, row_line=lambda row: row + 2, first_row=0)
    assert hint.kind == "text"
    assert hint.culprit == "row 4 (line 5) holds '0x10'"
    assert hint.mostly_numbers and hint.texts == ("0x10",)
    comma = pl.Series(["1,5", "2", "1.5", *["3"] * 20], dtype=pl.String)
    hint = judge.judge_one(comma, [""], decimal_comma=True, float_columns=False,
                           decimal=False, row_line=lambda row: row + 2, first_row=0)
    assert hint.kind == "text" and hint.culprit == "row 3 (line 4) holds '1.5'"
    assert hint.texts == ("1.5",)


def test_cell_codes_read_arrow_buffers_as_they_lie():
    """judge.cell_codes on sliced, chunked and null-holding columns: as on the cells."""
    cells = ["x", None, "1", " 2", "007", None, "1e5", "", "NA"]
    expected = codes_of(cells, ["", "NA"], False)[0]
    series = pl.Series(cells, dtype=pl.String)
    chunked = pl.concat([series[:4], series[4:]], rechunk=False)
    for column in (series, chunked):
        assert np.array_equal(judge.cell_codes(column, ["", "NA"], decimal_comma=False)[0],
                              expected)
    assert np.array_equal(judge.cell_codes(series[3:], ["", "NA"], decimal_comma=False)[0],
                          expected[3:])
    assert len(judge.cell_codes(series[:0], [""], decimal_comma=False)[0]) == 0
