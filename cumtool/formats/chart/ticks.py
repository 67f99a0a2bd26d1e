"""Round tick marks for a chart's axes: numbers at 1, 2 or 5 times a power of ten, dates at
whole days, weeks, months or years, with labels as short as the step allows."""

from __future__ import annotations

import math

import numpy as np

_MINUTE_STEPS = (1, 2, 5, 10, 15, 30, 60, 120, 180, 360, 720)
_DAY_STEPS = (1, 2, 7, 14)
_MONTH_STEPS = (1, 2, 3, 6)


def number_step(span: float, count: int, integral: bool = False) -> float:
    """The round step (1, 2 or 5 times a power of ten) giving about `count` ticks."""
    raw = span / max(count, 1)
    if raw <= 0 or not math.isfinite(raw):
        return 1.0
    power = 10.0 ** math.floor(math.log10(raw))
    step = next((m * power for m in (1, 2, 5) if m * power >= raw), 10 * power)
    return max(step, 1.0) if integral else step


def frame(low: float, high: float, count: int) -> tuple[float, float, float]:
    """A value range widened to round ends, and its step: (low, high, step)."""
    if low == high:
        pad = abs(low) / 2 or 1.0
        low, high = low - pad, high + pad
    step = number_step(high - low, count)
    return math.floor(low / step) * step, math.ceil(high / step) * step, step


def number_ticks(low: float, high: float, step: float) -> list[float]:
    first = math.ceil(low / step - 1e-9)
    last = math.floor(high / step + 1e-9)
    return [round(i * step, 12) for i in range(first, last + 1)]


def number_label(value: float, step: float) -> str:
    """`value` with as many decimals as the step needs (none for whole steps)."""
    if value == 0:
        return "0"
    if abs(value) >= 1e15 or abs(value) < 1e-4:
        return f"{value:.3g}"
    decimals = max(0, -math.floor(math.log10(step) + 1e-9))
    return f"{value:.{decimals}f}"


def date_ticks(low_days: float, high_days: float, count: int, whole_days: bool = True
               ) -> list[tuple[float, str]]:
    """Ticks within [low, high] days since 1970-01-01: (day, label); times of day too
    unless `whole_days`."""
    raw = (high_days - low_days) / max(count, 1)
    if not whole_days and raw * 1440 < _MINUTE_STEPS[-1]:  # within a day or so: hours
        return _time_ticks(low_days, high_days, raw * 1440)
    raw = max(raw, 1.0)
    start, end = math.ceil(low_days), math.floor(high_days)
    for days in _DAY_STEPS:
        if days >= raw:
            # Weeks start on Mondays (1970-01-05 was one), shorter steps anywhere.
            base = 4 if days in (7, 14) else 0
            first = start + (base - start) % days
            return [(float(d), str(np.datetime64(d, "D"))) for d in range(first, end + 1, days)]
    low_month = np.datetime64(math.floor(low_days), "D").astype("datetime64[M]")
    high_month = np.datetime64(end, "D").astype("datetime64[M]")
    months = (high_month - low_month).astype(int) + 1
    for step in _MONTH_STEPS:
        if step * 30.4 >= raw:
            ticks = []
            for m in range(0, months + 1):  # months that are a multiple of step
                month = low_month + np.timedelta64(m, "M")
                day = float(month.astype("datetime64[D]").astype(np.int64))
                if low_days <= day <= high_days and month.astype(int) % step == 0:
                    ticks.append((day, str(month)))
            return ticks
    year_step = int(number_step(raw / 365.25, 1, integral=True))
    low_year = int(str(low_month.astype("datetime64[Y]")))
    ticks = []
    for year in range(low_year - low_year % year_step, int(high_days / 365.25) + 1972,
                      year_step):
        day = float(np.datetime64(f"{year:04d}-01-01", "D").astype(np.int64))
        if low_days <= day <= high_days:
            ticks.append((day, str(year)))
    return ticks


def _time_ticks(low_days: float, high_days: float, raw_minutes: float
                ) -> list[tuple[float, str]]:
    """Ticks at whole minutes or hours: labelled HH:MM, or with the date where it turns."""
    step = next((m for m in _MINUTE_STEPS if m >= raw_minutes), _MINUTE_STEPS[-1])
    first = math.ceil(low_days * 1440 / step) * step
    ticks: list[tuple[float, str]] = []
    for minute in range(first, math.floor(high_days * 1440) + 1, step):
        text = str(np.datetime64(minute, "m"))  # 2024-01-15T06:00
        label = text if not ticks or minute % 1440 == 0 else text[11:16]
        ticks.append((minute / 1440, label))
    return ticks
