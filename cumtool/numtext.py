"""Number text for the compiled CSV pipeline (issue 25): float64 to the text cumtool writes,
and cell text to float64 and int64 as float() and int() read it.

The loops run in C without the GIL (`_ext/_numtext.c`: the shortest digits by yyjson's
Schubfach; Clinger's fast path, Eisel-Lemire, and strtod in the "C" locale) where that
module was built, and in Python here otherwise: repr(), float() and int(), with the same
grammar, the same bytes (tested against each other, tests/test_numtext.py). The C core
also writes the small path's floats (_csvtext.c's float_texts).

- format_floats: each value as polars writes it (layout_text(repr(v), v, 16, -5)):
  repr's shortest digits, in plain notation while the decimal point falls within
  (-5, 16] digits, else d.ddde+XX / d.ddde-XX; "0.0", "-0.0", "NaN", "inf", "-inf".
- format_ints: each int64 as str() writes it.
- parse_floats: FLOAT_GRAMMAR (a sign, digits with at most one point, an
  exponent; inf, infinity, nan in any case), nothing else: no spaces, no underscores.
- parse_ints: INT_GRAMMAR, within int64 or marked as beyond it.
- cell_kinds, judge_bounds: what a CSV cell holds, the one rule of every path (formats/csv/
  judge.py for the streaming and wide readers, small.py and fast.py for the small and
  compiled ones), in C in `_csvtext.c` (its `cell_kinds` and `judge_bounds`) and in Python
  here: the cell stripped of Unicode White_Space (polars' strip_chars), then a missing
  marker, an integer within int64, one beyond it, a float (by the grammars below) or
  anything else; with --decimal-comma a comma is the point, and a cell with a point is no
  number. A number so judged is one that polars' casts and float()/int() both read.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Iterator
from types import ModuleType
from typing import Any

import numpy as np

from cumtool._ext import load

NATIVE: ModuleType | None = load("_numtext")  # None: the Python twin (cumtool._ext)
CELLS: ModuleType | None = load("_csvtext")  # cell_kinds' and judge_bounds' C; None: Python

# The cells read as numbers, by every path: a sign, digits with at most one point, an
# exponent; inf, infinity, nan in any case. As text (the small path's cells) and as bytes.
INT_GRAMMAR = r"[+-]?[0-9]+"
FLOAT_GRAMMAR = (r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?"
                 r"|[+-]?(?:inf|infinity|nan)")
INT_TEXT = re.compile(INT_GRAMMAR, re.ASCII)
FLOAT_TEXT = re.compile(FLOAT_GRAMMAR, re.IGNORECASE | re.ASCII)
# A number as a spreadsheet formats it, which no parser here reads: thousands separators
# (1,234.5 or 1.234,5; a space, a no-break space or an apostrophe: 10 000, 1'234.50), a
# currency sign before or after (12,50 €), a percent sign, an accountant's (negative).
_CURRENCY = "$\u20ac\u00a3\u00a5"
_SPACES = " \u00a0\u202f"  # a space, a no-break space, a narrow one (French)
_FORMATTED = re.compile(rf"\(?[+-]?(?:[{_CURRENCY}][{_SPACES}]?)?[+-]?"
                        r"(?:[0-9]{1,3}(?:,[0-9]{3})+(?:\.[0-9]+)?"
                        r"|[0-9]{1,3}(?:\.[0-9]{3})+(?:,[0-9]+)?"
                        rf"|[0-9]{{1,3}}(?:[{_SPACES}'][0-9]{{3}})+(?:[.,][0-9]+)?"
                        r"|[0-9]+(?:[.,][0-9]+)?)"
                        rf"[{_SPACES}]?(?:%|[{_CURRENCY}])?\)?")
_GROUPED = re.compile(rf"[0-9][{_SPACES}'][0-9]{{3}}")  # digits in groups of three


_THOUSANDS_POINTS = re.compile(r"[+-]?[0-9]{1,3}(?:\.[0-9]{3})+", re.ASCII)


def formatted_number(text: str, decimal_comma: bool = False) -> bool:
    """Whether `text` is a number written as a spreadsheet formats it ('1,234', '$1.50',
    '15%', '(2.00)'), which cumtool does not read: a column of them gets a note. With
    --decimal-comma, points between groups of three digits are too ('1.000' is a
    thousand there; '1.5' is no such number)."""
    text = text.strip()
    if decimal_comma and _THOUSANDS_POINTS.fullmatch(text) is not None:
        return True
    return (_FORMATTED.fullmatch(text) is not None
            and text.startswith("(") == text.endswith(")")
            and (any(sign in text for sign in ",%(" + _CURRENCY)
                 or _GROUPED.search(text) is not None))


def comma_decimal(text: str) -> bool:
    """Whether a formatted number's text ('1,5') reads as a decimal comma: a comma followed
    by other than three digits ('1,234' is a thousands separator): --decimal-comma reads it."""
    return _COMMA_DECIMAL.fullmatch(text.strip()) is not None


_COMMA_DECIMAL = re.compile(r"[+-]?[0-9]+,([0-9]{1,2}|[0-9]{4,})")

MOSTLY_NUMBERS = 0.9  # of a text column's judged cells (not missing): a note if unscanned


def left_out_numbers(codes: np.ndarray, text_of: Any,
                     decimal_comma: bool = False) -> tuple[bool, bool]:
    """Of a text column's judged cells (cell_kinds' `codes`; `text_of(r)`: cell r's
    text), whether they are mostly numbers (MOSTLY_NUMBERS of those not missing), and
    whether every one that is not a number is one as a spreadsheet formats it: either
    way a column a note names where it is left out. Every path's one rule."""
    others = np.flatnonzero((codes & CELL_KIND) == CELL_OTHER)
    if not len(others):
        return False, False
    present = int(np.count_nonzero(codes != CELL_MISSING))
    numbers = present - len(others)
    mostly = numbers > 0 and numbers >= MOSTLY_NUMBERS * present
    return mostly, all(formatted_number(str(text_of(int(r))), decimal_comma) for r in others)


_INT = re.compile(INT_GRAMMAR.encode())
_FLOAT = re.compile(FLOAT_GRAMMAR.encode(), re.IGNORECASE)
_INT64_MIN, _INT64_MAX = -(1 << 63), (1 << 63) - 1

# parse_ints' status codes
NOT_INT, INT, BEYOND_INT64 = 0, 1, 2


def float_text(value: float) -> str:
    """One float64 as cumtool writes it (Python: from repr)."""
    return layout_text(repr(value), value, 16, -5)


def layout_text(shortest: str, value: float | np.floating, high: int, low: int) -> str:
    """A float as polars writes it, from the shortest text that reads back to it (in
    any notation): plain notation while the point falls within the digits' reach
    (`low` < point <= `high`, Ryu's rule), else d.ddde+XX / d.ddde-XX."""
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "inf" if value > 0 else "-inf"
    sign = "-" if shortest.startswith("-") else ""
    mantissa, _, exponent = shortest.lstrip("-").partition("e")
    whole, _, fraction = mantissa.partition(".")
    digits = (whole + fraction).lstrip("0")
    if not digits:
        return sign + "0.0"
    trimmed = digits.rstrip("0")
    # value = 0.<trimmed> * 10**point
    point = len(digits) + int(exponent or 0) - len(fraction)
    if 0 < point <= high:
        if len(trimmed) <= point:
            return f"{sign}{trimmed}{'0' * (point - len(trimmed))}.0"
        return f"{sign}{trimmed[:point]}.{trimmed[point:]}"
    if low < point <= 0:
        return f"{sign}0.{'0' * -point}{trimmed}"
    power = point - 1
    rest = f".{trimmed[1:]}" if len(trimmed) > 1 else ""
    return f"{sign}{trimmed[0]}{rest}e{'+' if power >= 0 else '-'}{abs(power)}"


def format_floats(values: np.ndarray, missing: np.ndarray | None = None,
                  null: bytes = b"") -> tuple[bytes, np.ndarray]:
    """Each float64 as cumtool writes it, `null` where `missing` is True, one after
    another: (text, offsets), value i being text[offsets[i]:offsets[i + 1]]."""
    return _format(np.float64, "format_floats", format_floats_py, values, missing, null)


def format_ints(values: np.ndarray, missing: np.ndarray | None = None,
                null: bytes = b"") -> tuple[bytes, np.ndarray]:
    """format_floats for int64 values: each as str() writes it."""
    return _format(np.int64, "format_ints", format_ints_py, values, missing, null)


def _format(dtype: type, name: str, python: Any, values: np.ndarray,
            missing: np.ndarray | None, null: bytes) -> tuple[bytes, np.ndarray]:
    """The C loop `name` where it is built, else its Python twin `python`."""
    values = np.ascontiguousarray(values, dtype=dtype)
    if missing is not None:
        missing = np.ascontiguousarray(missing, dtype=np.bool_)
    if NATIVE is not None:
        text, offsets = getattr(NATIVE, name)(values, missing, null)
        return text, np.frombuffer(offsets, dtype=np.int64)
    result: tuple[bytes, np.ndarray] = python(values, missing, null)
    return result


def format_floats_py(values: np.ndarray, missing: np.ndarray | None = None,
                     null: bytes = b"") -> tuple[bytes, np.ndarray]:
    """format_floats in Python."""
    return _joined([float_text(v).encode("ascii") for v in values.tolist()], missing, null)


def format_ints_py(values: np.ndarray, missing: np.ndarray | None = None,
                   null: bytes = b"") -> tuple[bytes, np.ndarray]:
    """format_ints in Python."""
    return _joined([str(v).encode("ascii") for v in values.tolist()], missing, null)


def _joined(texts: list[bytes], missing: np.ndarray | None,
            null: bytes) -> tuple[bytes, np.ndarray]:
    if missing is not None:
        texts = [null if gone else t for t, gone in zip(texts, missing.tolist(), strict=True)]
    offsets = np.zeros(len(texts) + 1, dtype=np.int64)
    np.cumsum([len(t) for t in texts], out=offsets[1:])
    return b"".join(texts), offsets


def _bounds(starts: np.ndarray, ends: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    starts = np.ascontiguousarray(starts, dtype=np.int64)
    ends = np.ascontiguousarray(ends, dtype=np.int64)
    if starts.ndim != 1 or starts.shape != ends.shape:
        raise TypeError("starts and ends must be 1-D and as long")
    return starts, ends


def parse_floats(data: bytes | bytearray | memoryview, starts: np.ndarray,
                 ends: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each cell data[starts[i]:ends[i]] as float() reads it: (float64 values, ok), ok
    False (and the value 0.0) where the cell is not a number by the grammar above."""
    starts, ends = _bounds(starts, ends)
    if NATIVE is None:
        return parse_floats_py(data, starts, ends)
    values = np.empty(len(starts), dtype=np.float64)
    ok = np.empty(len(starts), dtype=np.bool_)
    NATIVE.parse_floats(data, starts, ends, values, ok)
    return values, ok


def parse_floats_py(data: bytes | bytearray | memoryview, starts: np.ndarray,
                    ends: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """parse_floats in Python."""
    values = np.zeros(len(starts), dtype=np.float64)
    ok = np.zeros(len(starts), dtype=np.bool_)
    for i, cell in _cells_py("parse_floats", data, starts, ends):
        if _FLOAT.fullmatch(cell):
            values[i] = float(cell)
            ok[i] = True
    return values, ok


def parse_ints(data: bytes | bytearray | memoryview, starts: np.ndarray,
               ends: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each cell data[starts[i]:ends[i]] as int() reads it: (int64 values, status), status
    INT, BEYOND_INT64 (an integer int64 cannot hold) or NOT_INT (the value is then 0)."""
    starts, ends = _bounds(starts, ends)
    if NATIVE is None:
        return parse_ints_py(data, starts, ends)
    values = np.empty(len(starts), dtype=np.int64)
    status = np.empty(len(starts), dtype=np.uint8)
    NATIVE.parse_ints(data, starts, ends, values, status)
    return values, status


def parse_ints_py(data: bytes | bytearray | memoryview, starts: np.ndarray,
                  ends: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """parse_ints in Python."""
    values = np.zeros(len(starts), dtype=np.int64)
    status = np.full(len(starts), NOT_INT, dtype=np.uint8)
    for i, cell in _cells_py("parse_ints", data, starts, ends):
        if _INT.fullmatch(cell):
            number = int(cell)
            if _INT64_MIN <= number <= _INT64_MAX:
                values[i] = number
                status[i] = INT
            else:
                status[i] = BEYOND_INT64
    return values, status


def _cells_py(name: str, data: bytes | bytearray | memoryview, starts: np.ndarray,
              ends: np.ndarray) -> Iterator[tuple[int, bytes]]:
    """Each cell's index and bytes, the bounds checked as the C loops check them."""
    raw = bytes(memoryview(data).cast("B"))
    for i, (start, end) in enumerate(zip(starts.tolist(), ends.tolist(), strict=True)):
        if not 0 <= start <= end <= len(raw):
            raise ValueError(f"{name}: cell {i} is outside the data")
        yield i, raw[start:end]


def cells(texts: list[bytes]) -> tuple[bytes, np.ndarray, np.ndarray]:
    """Texts as (data, starts, ends) for parse_floats and parse_ints."""
    lengths = np.fromiter((len(t) for t in texts), dtype=np.int64, count=len(texts))
    ends = np.cumsum(lengths)
    return b"".join(texts), ends - lengths, ends


# What a cell holds (cell_kinds): its kind, CELL_ZERO where it starts with a leading zero
# ([+-]?0[0-9]: a code), CELL_EXPONENT where it is a float with an exponent or a word (inf,
# infinity, nan). As _csvtext.c's enum.
CELL_MISSING, CELL_INT64, CELL_BIG_INTEGER, CELL_FLOAT, CELL_OTHER = range(5)
CELL_KIND, CELL_ZERO, CELL_EXPONENT = 7, 8, 16
# judge_bounds' kinds of a column: (the greatest kind of its cells) - CELL_INT64
ALL_INT64, ALL_INTEGERS, ALL_FLOATS, OTHER = range(4)
# Unicode White_Space in UTF-8, what polars' strip_chars strips (str.strip() strips
# U+001C..U+001F too, which the small path hands over on).
_SPACE = re.compile(rb"[\t-\r ]|\xc2[\x85\xa0]|\xe1\x9a\x80|\xe2\x80[\x80-\x8a\xa8\xa9\xaf]"
                    rb"|\xe2\x81\x9f|\xe3\x80\x80")
_WORD = re.compile(rb"[+-]?(?:inf|infinity|nan)", re.IGNORECASE)
# FLOAT_GRAMMAR's numbers with `point` for the point: (its fraction, its exponent)
_NUMBER = {point: re.compile(rb"[+-]?(?:[0-9]+(?:%s([0-9]*))?|%s([0-9]+))([eE][+-]?[0-9]+)?"
                             % (re.escape(point), re.escape(point)))
           for point in (b".", b",")}
_ZERO = re.compile(rb"[+-]?0[0-9]")


def cell_bounds(texts: list[str | None]) -> tuple[bytes, np.ndarray, np.ndarray, np.ndarray]:
    """Cells (None: missing) as (data, starts, ends, flags) for cell_kinds and
    judge_bounds: each a quoted cell (flag 1), None an empty unquoted one (flag 0)."""
    data, starts, ends = cells([b"" if text is None else text.encode("utf-8", "surrogatepass")
                                for text in texts])
    flags = np.fromiter((text is not None for text in texts), dtype=np.uint8,
                        count=len(texts))
    return data, starts, ends, flags


def marker_bytes(markers: Iterable[str]) -> list[bytes]:
    """Missing markers as cell_kinds and judge_bounds take them."""
    return [marker.encode("utf-8", "surrogatepass") for marker in markers]


def cell_kinds(data: bytes | bytearray | memoryview, starts: np.ndarray, ends: np.ndarray,
               flags: np.ndarray, markers: list[bytes], *, decimal_comma: bool = False,
               places: bool = False) -> tuple[np.ndarray, np.ndarray | None]:
    """The code of each cell data[starts[r]:ends[r]] with flags[r] (0 unquoted, missing
    where empty; 1 quoted; 2 quoted with doubled quotes, read as one), as uint8, and with
    `places` each one's places (int64; else None). `markers`: UTF-8 bytes."""
    starts, ends = _bounds(starts, ends)
    flags = np.ascontiguousarray(flags, dtype=np.uint8)
    if CELLS is None:
        return cell_kinds_py(data, starts, ends, flags, markers, decimal_comma=decimal_comma,
                             places=places)
    codes = np.empty(len(flags), dtype=np.uint8)
    counts = np.empty(len(flags), dtype=np.int64) if places else None
    CELLS.cell_kinds(data, starts, ends, flags, markers, decimal_comma, codes, counts)
    return codes, counts


def cell_kinds_py(data: bytes | bytearray | memoryview, starts: np.ndarray,
                  ends: np.ndarray, flags: np.ndarray, markers: list[bytes], *,
                  decimal_comma: bool = False, places: bool = False
                  ) -> tuple[np.ndarray, np.ndarray | None]:
    """cell_kinds in Python."""
    raw = bytes(memoryview(data).cast("B"))
    if len(flags) != len(starts) or len(ends) != len(starts):
        raise ValueError("starts and ends 8 bytes a cell, flags one")
    marked = set(markers)
    codes = np.zeros(len(flags), dtype=np.uint8)
    counts = np.zeros(len(flags), dtype=np.int64)
    for r, (start, end, flag) in enumerate(zip(starts.tolist(), ends.tolist(),
                                               flags.tolist(), strict=True)):
        if not 0 <= start <= end <= len(raw):
            raise ValueError("a cell out of the data")
        if start == end and not flag:
            continue
        cell = raw[start:end]
        if flag == 2:
            cell = cell.replace(b'""', b'"')
        codes[r], counts[r] = _cell_code(_stripped(cell), marked, decimal_comma)
    return codes, (counts if places else None)


def _stripped(cell: bytes) -> bytes:
    """A cell without the White_Space at its ends, as the C loop strips it."""
    while (found := _SPACE.match(cell)) is not None:
        cell = cell[found.end():]
    while cell:
        size = next((k for k in (1, 2, 3) if k <= len(cell)
                     and _SPACE.fullmatch(cell, len(cell) - k)), 0)
        if not size:
            break
        cell = cell[:-size]
    return cell


def _cell_code(cell: bytes, markers: set[bytes], decimal_comma: bool) -> tuple[int, int]:
    """A stripped cell's code and places."""
    if cell in markers:
        return CELL_MISSING, 0
    zero = CELL_ZERO if _ZERO.match(cell) else 0
    if decimal_comma and b"." in cell:
        return zero | CELL_OTHER, 0
    if _INT.fullmatch(cell):
        digits = cell.lstrip(b"+-").lstrip(b"0")
        value = int(digits or b"0") if len(digits) <= 19 else 1 << 64
        fits = value <= _INT64_MAX + (1 if cell.startswith(b"-") else 0)
        return zero | (CELL_INT64 if fits else CELL_BIG_INTEGER), 0
    if _WORD.fullmatch(cell):
        return zero | CELL_FLOAT | CELL_EXPONENT, 0
    found = _NUMBER[b"," if decimal_comma else b"."].fullmatch(cell)
    if found is None:
        return zero | CELL_OTHER, 0
    if found.group(3) is not None:
        return zero | CELL_FLOAT | CELL_EXPONENT, 0
    return zero | CELL_FLOAT, len(found.group(1) or found.group(2) or b"")


def judge_bounds(data: bytes | bytearray | memoryview, starts: np.ndarray, ends: np.ndarray,
                 flags: np.ndarray, markers: list[bytes]) -> tuple[int, bool, int]:
    """Of the cells cell_kinds reads (without --decimal-comma): how many are not missing,
    whether any of those has a leading zero, and what they all are (ALL_INT64,
    ALL_INTEGERS, ALL_FLOATS or OTHER). In C where built."""
    starts, ends = _bounds(starts, ends)
    flags = np.ascontiguousarray(flags, dtype=np.uint8)
    if CELLS is None:
        return judge_bounds_py(data, starts, ends, flags, markers)
    found: tuple[int, bool, int] = CELLS.judge_bounds(data, starts, ends, flags, markers)
    return found


def judge_bounds_py(data: bytes | bytearray | memoryview, starts: np.ndarray,
                    ends: np.ndarray, flags: np.ndarray, markers: list[bytes]
                    ) -> tuple[int, bool, int]:
    """judge_bounds in Python: cell_kinds_py's codes, summed up."""
    codes, _places = cell_kinds_py(data, starts, ends, flags, markers)
    present = codes[codes != CELL_MISSING]
    kind = int((present & CELL_KIND).max(initial=CELL_INT64))
    return len(present), bool((present & CELL_ZERO).any()), kind - CELL_INT64
