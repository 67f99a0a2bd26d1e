"""A chart's lines decimated while the run streams, so that memory does not grow with rows.

The horizontal axis is cut into buckets of one width, shared by every line: bucket `k`
holds the points whose x lies in [origin + k * step, origin + (k + 1) * step). Each line
keeps, per bucket, its first and last point (in row order) and the point of its minimum
and of its maximum: the M4 aggregation, four real points a bucket. Whenever the buckets
seen span more than `2 * columns`, the step doubles and pairs of buckets merge (exactly:
floor(floor(u) / 2) is floor(u / 2)), so a line never holds more than 2 * columns + 1
buckets, and a bucket is never wider than a pixel column of the drawing. Every point
drawn is a result of the run, and each line's minimum and maximum are among them.

A missing or NaN result marks its bucket as holding a gap: the drawing does not join
points across it. Infinite results are kept (the drawing clips them to the frame) and
counted; each line's finite minimum and maximum are tracked apart, to size the frame.
"""

from __future__ import annotations

import math
from collections.abc import Hashable

import numpy as np

# What a bucket keeps: the row (for order), x and y of its first, last, min and max points.
_POINTS = ("first", "last", "low", "high")
_FIELDS = tuple(f"{p}_{c}" for p in _POINTS for c in "rxy")


class Line:
    """One line's buckets: arrays indexed by bucket - lo."""

    def __init__(self) -> None:
        self.lo = 0
        self.has = np.zeros(0, dtype=bool)  # holds a point
        self.gap = np.zeros(0, dtype=bool)  # holds a missing or NaN result
        self.data = {f: np.zeros(0, dtype=np.int64 if f.endswith("_r") else np.float64)
                     for f in _FIELDS}
        self.finite_low = math.inf
        self.finite_high = -math.inf
        self.infinite = 0  # infinite results seen
        self.last_row = -1
        self.last_value = math.nan  # the value of the last result in row order

    def __len__(self) -> int:
        return len(self.has)

    def _cover(self, low: int, high: int) -> None:
        """Grow the arrays to cover buckets low..high."""
        if len(self) and self.lo <= low and high < self.lo + len(self):
            return
        new_lo = low if not len(self) else min(low, self.lo)
        new_hi = high if not len(self) else max(high, self.lo + len(self) - 1)
        size = new_hi - new_lo + 1
        at = self.lo - new_lo
        for name in ("has", "gap"):
            grown = np.zeros(size, dtype=bool)
            old = getattr(self, name)
            grown[at:at + len(old)] = old
            setattr(self, name, grown)
        for name, old in self.data.items():
            grown = np.zeros(size, dtype=old.dtype)
            grown[at:at + len(old)] = old
            self.data[name] = grown
        self.lo = new_lo

    def add(self, k: np.ndarray, rows: np.ndarray, x: np.ndarray, y: np.ndarray) -> None:
        """Points in row order: bucket, row, x and y (NaN: a missing result)."""
        if not len(k):
            return
        self._cover(int(k.min()), int(k.max()))
        bad = np.isnan(y)
        if bad.any():
            self.gap[k[bad] - self.lo] = True
            good = ~bad
            k, rows, x, y = k[good], rows[good], x[good], y[good]
            if not len(k):
                return
        finite = np.isfinite(y)
        if finite.all():
            self.finite_low = min(self.finite_low, float(y.min()))
            self.finite_high = max(self.finite_high, float(y.max()))
        else:
            self.infinite += int((~finite).sum())
            if finite.any():
                self.finite_low = min(self.finite_low, float(y[finite].min()))
                self.finite_high = max(self.finite_high, float(y[finite].max()))
        if rows[-1] > self.last_row:
            self.last_row = int(rows[-1])
            self.last_value = float(y[-1])
        self._merge(_buckets(k, rows, x, y))

    def _merge(self, table: dict[str, np.ndarray]) -> None:
        """Merge per-bucket points (`key` unique) into the line's."""
        at = table["key"] - self.lo
        old = self.has[at]
        data = self.data
        take = {
            "first": ~old | (table["first_r"] < data["first_r"][at]),
            "last": ~old | (table["last_r"] > data["last_r"][at]),
            "low": ~old | (table["low_y"] < data["low_y"][at])
                   | ((table["low_y"] == data["low_y"][at])
                      & (table["low_r"] < data["low_r"][at])),
            "high": ~old | (table["high_y"] > data["high_y"][at])
                    | ((table["high_y"] == data["high_y"][at])
                       & (table["high_r"] < data["high_r"][at])),
        }
        for point, chosen in take.items():
            where = at[chosen]
            for c in "rxy":
                data[f"{point}_{c}"][where] = table[f"{point}_{c}"][chosen]
        self.has[at] = True
        if "gap" in table:
            self.gap[at] |= table["gap"]

    def halve(self) -> None:
        """Merge pairs of buckets: the step has doubled."""
        used = np.flatnonzero(self.has | self.gap)
        if not len(used):
            self.__init__()  # type: ignore[misc]
            return
        keys = self.lo + used
        table = {f: v[used] for f, v in self.data.items()}
        has, gap = self.has[used], self.gap[used]
        new = np.floor_divide(keys, 2)
        keep = (self.finite_low, self.finite_high, self.infinite, self.last_row,
                self.last_value)
        self.__init__()  # type: ignore[misc]
        (self.finite_low, self.finite_high, self.infinite, self.last_row,
         self.last_value) = keep
        self._cover(int(new.min()), int(new.max()))
        for parity in (0, 1):  # each pass merges into distinct buckets
            part = (keys % 2 == parity)
            self.gap[new[part] - self.lo] |= gap[part]
            part &= has
            if part.any():
                self._merge({"key": new[part], **{f: v[part] for f, v in table.items()}})

    def runs(self) -> list[list[tuple[float, float]]]:
        """The points to draw, bucket by bucket in x order, as runs to join; a bucket
        holding a gap ends the run before it and its points stand alone."""
        runs: list[list[tuple[float, float]]] = []
        current: list[tuple[float, float]] = []
        data = self.data
        for i in np.flatnonzero(self.has | self.gap):
            points = []
            if self.has[i]:
                seen = set()
                for _row, point in sorted((int(data[f"{p}_r"][i]), p) for p in _POINTS):
                    if _row not in seen:
                        seen.add(_row)
                        points.append((float(data[f"{point}_x"][i]),
                                       float(data[f"{point}_y"][i])))
            if self.gap[i]:
                if current:
                    runs.append(current)
                    current = []
                runs.extend([p] for p in points)
            else:
                current.extend(points)
        if current:
            runs.append(current)
        return runs


def _buckets(k: np.ndarray, rows: np.ndarray, x: np.ndarray, y: np.ndarray
             ) -> dict[str, np.ndarray]:
    """Per bucket of `k` (points in row order): its first, last, min and max points."""
    if len(k) > 1 and not bool((k[1:] >= k[:-1]).all()):
        order = np.argsort(k, kind="stable")  # row order kept within a bucket
        k, rows, x, y = k[order], rows[order], x[order], y[order]
    starts = np.flatnonzero(np.r_[True, k[1:] != k[:-1]])
    ends = np.r_[starts[1:], len(k)] - 1
    segment = np.repeat(np.arange(len(starts)), np.diff(np.r_[starts, len(k)]))
    table = {"key": k[starts]}
    low = np.minimum.reduceat(y, starts)
    high = np.maximum.reduceat(y, starts)
    picks = {"first": starts, "last": ends,
             "low": _first_hit(y == low[segment], segment),
             "high": _first_hit(y == high[segment], segment)}
    for point, at in picks.items():
        table[f"{point}_r"] = rows[at]
        table[f"{point}_x"] = x[at]
        table[f"{point}_y"] = y[at]
    return table


def _first_hit(hit: np.ndarray, segment: np.ndarray) -> np.ndarray:
    """The first position of each segment where `hit` holds (each has one)."""
    where = np.flatnonzero(hit)
    _, first = np.unique(segment[where], return_index=True)
    return where[first]


class Decimator:
    """The shared horizontal axis and every line's buckets, fed batch by batch."""

    def __init__(self, columns: int, integral: bool) -> None:
        self.columns = max(1, columns)  # pixel columns of the drawing
        self.integral = integral  # x takes whole values (rows, days): a step of 1 at least
        self.origin: float | None = None
        self.step: float | None = None  # None while every x seen is the origin
        self.x_low = math.inf
        self.x_high = -math.inf
        self.lines: dict[Hashable, Line] = {}

    def buckets(self, x: np.ndarray) -> np.ndarray:
        """The bucket of each x (finite), after widening the step for the new range."""
        if not len(x):
            return np.zeros(0, dtype=np.int64)
        if self.origin is None:
            self.origin = float(x[0])
        self.x_low = min(self.x_low, float(x.min()))
        self.x_high = max(self.x_high, float(x.max()))
        if self.step is None and self.x_high > self.x_low:
            step = 2.0 ** math.floor(math.log2((self.x_high - self.x_low) / self.columns))
            self.step = max(step, 1.0) if self.integral else step
        if self.step is None:
            return np.zeros(len(x), dtype=np.int64)
        while (math.floor((self.x_high - self.origin) / self.step)
               - math.floor((self.x_low - self.origin) / self.step) + 1) > 2 * self.columns:
            self.step *= 2
            for line in self.lines.values():
                line.halve()
        return np.floor((x - self.origin) / self.step).astype(np.int64)

    def line(self, key: Hashable) -> Line:
        found = self.lines.get(key)
        if found is None:
            found = self.lines[key] = Line()
        return found
