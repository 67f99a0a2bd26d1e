"""--period day|week|month|quarter|year --time COL: the calendar period of each row's
time is a key of its group, as a --by column is (SEMANTICS.md, "Periods and shares").

The key is a date32 column made from COL batch by batch: the first day of the row's
period (a day itself, the Monday of its ISO week, the first of its month, the first day
of its quarter or year, which --year-start MM-DD moves). It joins the --by columns in
groups.GroupKeys, so --state saves it with the other keys and a period that spans two
runs goes on. COL itself passes through unscanned.

COL holds, in text formats (CSV, TSV, JSON Lines), ISO dates (2024-03-01) or datetimes
(2024-03-01T09:30, 2024-03-01 09:30:15.5, with or without a zone: Z, +02:00); the
period is that of the date as written, which for a time with a zone is that zone's
calendar. In typed formats (Parquet, Arrow) COL is a date or timestamp column; a
timestamp with a zone is read in that zone's calendar. Numbers (20240301) are no dates.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from cumtool.errors import DataError, UsageError, option

if TYPE_CHECKING:  # pyarrow loads with the tables, not for a check of the options
    import polars as pl
    import pyarrow as pa

PERIODS = ("day", "week", "month", "quarter", "year")
_YEAR_START = re.compile(r"^(\d{2})-(\d{2})$")
_DAYS_IN_MONTH = (31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31)
# ISO 8601 as cumtool reads it: a date, and optionally a time of day and a zone.
_ISO = (r"^\d{4}-(0[1-9]|1[0-2])-(0[1-9]|[12]\d|3[01])"
        r"([T ]([01]\d|2[0-3]):[0-5]\d(:[0-5]\d(\.\d{1,9})?)?(Z|[+-]\d{2}(:?\d{2})?)?)?$")


@dataclass(frozen=True)
class Period:
    """A checked --period: its unit, and where years (and quarters) start."""

    unit: str
    month: int = 1  # --year-start's month and day
    day: int = 1

    @property
    def shown(self) -> str:
        return self.unit if (self.month, self.day) == (1, 1) else (
            f"{self.unit} from {self.month:02d}-{self.day:02d}")


def check(period: str | None, time: object, year_start: str | None) -> Period | None:
    """The options as given (Request.check), or UsageError; None without --period."""
    if period is None:
        if time is not None:
            raise UsageError(f"{option('time')} names the column whose dates make the "
                             f"periods of {option('period')}: add {option('period')} "
                             "day|week|month|quarter|year")
        if year_start is not None:
            raise UsageError(f"{option('year_start')} is where the years of "
                             f"{option('period')} year|quarter start: add "
                             f"{option('period')} year or quarter")
        return None
    if period not in PERIODS:
        raise UsageError(f"{option('period', repr(period))} is not a period; choose from "
                         f"{', '.join(PERIODS)}")
    if time is None:
        raise UsageError(f"{option('period', period)} needs {option('time')} COL, the "
                         "column of dates or times that tells each row's period")
    if year_start is None:
        return Period(period)
    if period not in ("quarter", "year"):
        raise UsageError(f"{option('year_start')} moves the start of years and quarters; "
                         f"{option('period', period)} does not use it")
    found = _YEAR_START.match(str(year_start))
    month, day = (int(found.group(1)), int(found.group(2))) if found else (0, 0)
    if not 1 <= month <= 12 or not 1 <= day <= 28:
        raise UsageError(f"{option('year_start', repr(year_start))} is not a day of the "
                         "year as MM-DD from 01-01 to 12-28 (e.g. 04-01, 10-01)")
    return Period(period, month, day)


def time_type_ok(arrow_type: pa.DataType) -> bool:
    """Whether a column of this type can hold --time's values (a dictionary's values:
    pandas writes a categorical column so)."""
    import pyarrow as pa

    if pa.types.is_dictionary(arrow_type):
        arrow_type = arrow_type.value_type
    return bool(pa.types.is_date(arrow_type) or pa.types.is_timestamp(arrow_type)
                or pa.types.is_string(arrow_type) or pa.types.is_large_string(arrow_type)
                or pa.types.is_string_view(arrow_type) or pa.types.is_null(arrow_type))


def _decoded(column: pa.Array) -> pa.Array:
    """A dictionary column as its values; any other as it is."""
    import pyarrow as pa

    return column.dictionary_decode() if pa.types.is_dictionary(column.type) else column


def _no_times(rows: int) -> tuple[np.ndarray, np.ndarray]:
    """A column of no values (Arrow's null type): every row without a time."""
    return np.zeros(rows, dtype=np.int64), np.ones(rows, dtype=bool)


def _time_text(series: pl.Series, missing_text: frozenset[str]) -> pl.Series:
    """A time column's cells as text, its --na markers and empty cells missing."""
    import polars as pl

    text = series.cast(pl.String)
    if missing_text:
        text = text.replace(list(missing_text), None)
    return text.replace("", None)


def days(column: pa.Array, missing_text: frozenset[str],
         bad: Callable[[int, str], DataError]) -> tuple[np.ndarray, np.ndarray | None]:
    """Each row's date as days since 1970-01-01 (int64), and which rows have no time
    (None: all have). `bad(row, cell)` is the error for a cell that is not a date."""
    import polars as pl
    import pyarrow as pa

    from cumtool.columnar import fixed_offset, local_stamps

    column = _decoded(column)
    kind = column.type
    if pa.types.is_null(kind):
        return _no_times(len(column))
    if pa.types.is_timestamp(kind) and (offset := fixed_offset(kind.tz)) is not None:
        # A fixed offset (+05:30): its wall clock's date, in integers (polars takes named
        # zones only).
        local, absent = local_stamps(column, offset)
        per_day = 86_400 * 10**9 // _NANOSECONDS[kind.unit]
        return np.floor_divide(local, per_day), absent
    series = pl.Series(column)
    if pa.types.is_date(kind) or pa.types.is_timestamp(kind):
        # A timestamp with a zone: polars gives the date of the zone's calendar.
        dates = series.dt.date() if pa.types.is_timestamp(kind) else series.cast(pl.Date)
    else:
        fast = _iso_days(column, missing_text)
        if fast is not None:
            if fast[2] is not None:
                raise bad(fast[2], str(column[fast[2]]))
            return fast[0], fast[1]
        text = _time_text(series, missing_text)
        layout_ok = text.str.contains(_ISO)
        dates = text.str.slice(0, 10).str.to_date("%Y-%m-%d", strict=False)
        wrong_rows = (layout_ok.not_() | dates.is_null()) & text.is_not_null()
        if wrong_rows.any():
            row = int(wrong_rows.arg_max() or 0)
            raise bad(row, str(text[row]))
    missing = dates.is_null()
    values = dates.cast(pl.Int32).fill_null(0).to_numpy().astype(np.int64)
    return values, (missing.to_numpy() if missing.any() else None)


def civil_days(year: np.ndarray, month: np.ndarray, day: np.ndarray) -> np.ndarray:
    """Days since 1970-01-01 of proleptic Gregorian dates (int64 arrays), by integer
    arithmetic (H. Hinnant's days_from_civil): years start in March, so a leap day is a
    year's last."""
    shifted = year - (month <= 2)
    era = shifted // 400
    of_era = shifted - era * 400
    of_year = (153 * ((month + 9) % 12) + 2) // 5 + day - 1
    return era * 146097 + of_era * 365 + of_era // 4 - of_era // 100 + of_year - 719468


_MONTH_DAYS = np.array(_DAYS_IN_MONTH, dtype=np.int64)


def ten_byte_dates(data: np.ndarray, starts: np.ndarray
                   ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The dates written YYYY-MM-DD in the ten bytes of `data` (uint8) from each of
    `starts`: year, month and day (int64), and whether each is such a date (a real day
    of a real month; where not, the three mean nothing)."""
    def byte(k: int) -> np.ndarray:
        return data[starts + k].astype(np.int64) - 48

    digits = [byte(k) for k in (0, 1, 2, 3, 5, 6, 8, 9)]
    ok = (byte(4) == -3) & (byte(7) == -3)
    for digit in digits:
        ok &= (digit >= 0) & (digit <= 9)
    year = digits[0] * 1000 + digits[1] * 100 + digits[2] * 10 + digits[3]
    month = digits[4] * 10 + digits[5]
    day = digits[6] * 10 + digits[7]
    ok &= (month >= 1) & (month <= 12)
    leap = (year % 4 == 0) & ((year % 100 != 0) | (year % 400 == 0))
    length = _MONTH_DAYS[np.clip(month, 1, 12) - 1] + ((month == 2) & leap)
    ok &= (day >= 1) & (day <= length)
    return year, month, day, ok


def ten_byte_days(data: np.ndarray, starts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """ten_byte_dates as days since 1970-01-01, and whether each is a date."""
    year, month, day, ok = ten_byte_dates(data, starts)
    return civil_days(year, month, day), ok


def cell_periods(period: Period, data: bytes, starts: np.ndarray, ends: np.ndarray
                 ) -> np.ndarray | None:
    """The fast CSV path's: the first day of the period of each cell cut from `data`
    (each data[starts[i]:ends[i]]), the lowest int64 for an empty one; None where a cell
    is not empty nor a plain ISO date (a datetime, an NA marker, a mistake): the
    streaming path reads or words those."""
    lengths = ends - starts
    empty = lengths == 0
    if ((lengths != 10) & ~empty).any():
        return None
    raw = np.frombuffer(data, dtype=np.uint8)
    at = np.where(empty, 0, starts).astype(np.int64)
    if empty.any() and raw.shape[0] < 10:
        return None
    year, month, day, ok = ten_byte_dates(raw, np.minimum(at, raw.shape[0] - 10))
    if not (ok | empty).all():
        return None
    first = period_starts(period, year, month, day)
    first[empty] = np.iinfo(np.int64).min  # a missing time: a period of its own
    return first


def period_starts(period: Period, year: np.ndarray, month: np.ndarray, day: np.ndarray
                  ) -> np.ndarray:
    """The first day of each date's period (as `starts`, from the date's parts)."""
    unit = period.unit
    if unit in ("day", "week"):
        days = civil_days(year, month, day)
        return days if unit == "day" else days - (days + 3) % 7
    if unit == "month":
        return civil_days(year, month, np.ones_like(day))
    index = year * 12 + month - 1 - (day < period.day)
    length = 12 if unit == "year" else 3
    first = index - (index - (period.month - 1)) % length
    return civil_days(first // 12, first % 12 + 1, np.full_like(day, period.day))


def _iso_days(column: pa.Array, missing_text: frozenset[str]
              ) -> tuple[np.ndarray, np.ndarray | None, int | None] | None:
    """Text of plain dates (2024-03-01, ten bytes each, the common case) read from the
    Arrow buffers with numpy: (days, missing rows or None, the first row that is not a
    date or None). None where a cell is longer (a datetime) or the column is not plain
    string or large_string: polars reads those."""
    import pyarrow as pa

    kind = column.type
    if not (pa.types.is_string(kind) or pa.types.is_large_string(kind)):
        return None
    n = len(column)
    validity, offsets_buffer, data_buffer = column.buffers()
    width = np.int64 if pa.types.is_large_string(kind) else np.int32
    offsets = np.frombuffer(offsets_buffer, dtype=width, count=n + 1,
                            offset=column.offset * np.dtype(width).itemsize).astype(np.int64)
    lengths = np.diff(offsets)
    present = np.ones(n, dtype=bool)
    if column.null_count:
        present = np.unpackbits(np.frombuffer(validity, np.uint8), bitorder="little")[
            column.offset:column.offset + n].view(bool)
    missing = ~present | (lengths == 0)
    ten = present & (lengths == 10)
    if (~missing & ~ten).any():
        return None  # cells of other lengths: datetimes, markers, mistakes
    data = (np.frombuffer(data_buffer, dtype=np.uint8) if data_buffer is not None
            else np.zeros(0, dtype=np.uint8))
    rows = np.flatnonzero(ten)
    found, ok = ten_byte_days(data, offsets[rows])
    values = np.zeros(n, dtype=np.int64)
    values[rows] = found
    wrong = None
    if not ok.all():
        for row in rows[~ok].tolist():
            if str(column[row]) in missing_text:  # an NA marker of ten characters
                missing[row] = True
            else:
                wrong = row
                break
    return values, (missing if missing.any() else None), wrong


def starts(period: Period, day_numbers: np.ndarray) -> np.ndarray:
    """The first day of each day's period, in days since 1970-01-01."""
    unit = period.unit
    if unit == "day":
        return day_numbers
    if unit == "week":  # 1970-01-01 was a Thursday: Monday is weekday 0
        return day_numbers - (day_numbers + 3) % 7
    as_days = day_numbers.astype("datetime64[D]")
    months = as_days.astype("datetime64[M]")
    if unit == "month":
        return months.astype("datetime64[D]").astype(np.int64)
    # A year or quarter starts on --year-start's day of a month: count months from
    # 1970-01 in which that day has come, then step back to the period's first month.
    day_of_month = (as_days - months.astype("datetime64[D]")).astype(np.int64) + 1
    index = months.astype(np.int64) - (day_of_month < period.day)
    length = 12 if unit == "year" else 3
    first = index - (index - (period.month - 1)) % length
    return (first.astype("datetime64[M]").astype("datetime64[D]").astype(np.int64)
            + (period.day - 1))


def key_column(period: Period, column: pa.Array, missing_text: frozenset[str],
               bad: Callable[[int, str], DataError]) -> pa.Array:
    """The period key of a batch's time column: date32, missing where the time is."""
    import pyarrow as pa

    values, missing = days(column, missing_text, bad)
    first = np.ascontiguousarray(starts(period, values), dtype=np.int32)
    validity, nulls = None, 0
    if missing is not None:
        validity = pa.py_buffer(np.packbits(~missing, bitorder="little"))
        nulls = int(np.count_nonzero(missing))
    return pa.Array.from_buffers(pa.date32(), first.shape[0],
                                 [validity, pa.py_buffer(first)], null_count=nulls)


def instants(column: pa.Array, missing_text: frozenset[str],
             bad: Callable[..., DataError]) -> tuple[np.ndarray, np.ndarray | None]:
    """ewma --times: each row's time as nanoseconds since 1970-01-01 (a time with a zone
    as its instant, one without as if in UTC; a date at its midnight), and which rows have
    none (None: all have). `bad(row, cell)` is the error for a cell that is no time,
    `bad(row, cell, why)` for one beyond what 64 bits of nanoseconds hold."""
    import datetime as dt

    import polars as pl
    import pyarrow as pa

    from cumtool.columnar import stored_integers

    column = _decoded(column)
    kind = column.type
    if pa.types.is_null(kind):
        return _no_times(len(column))
    if pa.types.is_timestamp(kind) or pa.types.is_date(kind):
        # The stored integers, checked, then scaled.
        unit = "D" if pa.types.is_date32(kind) else "ms" if pa.types.is_date64(kind) else (
            kind.unit)
        scale = _NANOSECONDS[unit]
        values, absent = stored_integers(column)
        beyond = np.flatnonzero((values < -(_NS_HIGH // scale)) | (values > _NS_HIGH // scale))
        if beyond.shape[0]:
            row = int(beyond[0])
            raise bad(row, str(column[row]), _BEYOND)
        return values * scale, absent
    if not (pa.types.is_string(kind) or pa.types.is_large_string(kind)
            or pa.types.is_string_view(kind)):
        raise bad(0, str(column[0]))
    text = _time_text(pl.Series(column), missing_text)
    epoch = dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)
    known: dict[str, int] = {}
    for cell in text.drop_nulls().unique(maintain_order=True).to_list():
        try:
            found = re.match(_ISO, cell)
            if found is None:
                raise ValueError(cell)
            when = dt.datetime.fromisoformat(cell.replace("Z", "+00:00"))
        except ValueError:
            row = int((text == cell).arg_max() or 0)
            raise bad(row, cell) from None
        if when.tzinfo is None:
            when = when.replace(tzinfo=dt.timezone.utc)
        delta = when - epoch
        # The fraction as written, to the nanosecond (Python's datetime keeps microseconds);
        # a zone moves whole minutes, so it leaves the fraction as it is.
        fraction = found.group(6) or ".0"
        nanoseconds = ((delta.days * 86400 + delta.seconds) * 10**9
                       + int(fraction[1:].ljust(9, "0")))
        if not _NS_LOW <= nanoseconds <= _NS_HIGH:
            row = int((text == cell).arg_max() or 0)
            raise bad(row, cell, _BEYOND)
        known[cell] = nanoseconds
    missing = text.is_null()
    values = text.replace_strict(known, default=0, return_dtype=pl.Int64).to_numpy()
    return values.astype(np.int64), (missing.to_numpy() if missing.any() else None)


_NANOSECONDS = {"D": 86_400 * 10**9, "s": 10**9, "ms": 10**6, "us": 10**3, "ns": 1}
# ewma --times carries times as int64 nanoseconds (as pandas' datetime64[ns] does).
_NS_HIGH = 2**63 - 1
_NS_LOW = -_NS_HIGH
_BEYOND = ("is outside 1677-09-21 to 2262-04-11, the times ewma --times can hold "
           "(nanoseconds in 64 bits)")


# --share: a group's final value, and each running value over it ------------------------

def grown(finals: np.ndarray | None, count: int) -> np.ndarray:
    """`finals` with room for `count` groups: NaN (no value yet) for the new ones."""
    if finals is not None and finals.shape[0] >= count:
        return finals
    more = np.full(count, np.nan)
    if finals is not None:
        more[:finals.shape[0]] = finals
    return more


def track_finals(finals: np.ndarray | None, count: int, ids: np.ndarray,
                 values: np.ndarray, present: np.ndarray | None) -> np.ndarray:
    """--share's first pass: `finals` (one float64 a group, NaN for none yet; grown to
    `count`) with each group's last present running value among `values` (rows in scan
    order, `ids` their groups) put in. A row --skipna skipped (NaN in, NaN out in place)
    is not present: the running value goes on past it."""
    finals = grown(finals, count)
    rows = np.arange(values.shape[0]) if present is None else np.flatnonzero(present)
    groups, last = np.unique(ids[rows][::-1], return_index=True)
    finals[groups] = values[rows][::-1][last].astype(np.float64)
    return finals


def scanned_rows(present: np.ndarray | None, data: np.ndarray) -> np.ndarray | None:
    """Under --skipna, the rows whose running value --share may take as a group's last:
    the present ones, less those whose input was skipped (a NaN, which stays NaN in the
    output)."""
    if data.dtype.kind not in "fc":
        return present
    scanned = ~np.isnan(data)
    return scanned if present is None else present & scanned


def shares(finals: np.ndarray, ids: np.ndarray, values: np.ndarray,
           present: np.ndarray | None) -> tuple[np.ndarray, np.ndarray | None]:
    """--share's second pass: each running value over its group's final value, float64,
    and the cells that are missing: where the value is, and every cell of a group whose
    final value is 0 (no share of nothing)."""
    final = finals[ids]
    with np.errstate(divide="ignore", invalid="ignore"):
        share = values.astype(np.float64) / final
    missing = final == 0
    if present is not None:
        missing |= ~present
    return share, (missing if missing.any() else None)
