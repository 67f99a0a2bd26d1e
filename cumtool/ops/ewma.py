"""ewma: the exponentially weighted running mean, as pandas' ewm(...).mean(). Its decay
is given one of four ways (--alpha, --span, --com, --halflife); the scan takes the centre
of mass, and whether the weights are adjusted."""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from cumtool.errors import UsageError, option
from cumtool.ops.decl import Op, Option, numpy_on_first_use
from cumtool.ops.spec import StatKernel

if TYPE_CHECKING:
    import numpy as np

    from cumtool.ops.spec import ScanSpec, States

else:
    np = numpy_on_first_use(globals())

# Listed in --help in this order.
OPTIONS = (
    Option("--no-adjust", keyword="adjust", default=True, negates=True,
           help="ewma: the recursive form y = (1 - alpha) y + alpha x (pandas "
                "adjust=False) instead of the adjusted weights."),
    Option("--halflife", type=str, metavar="H", parse=lambda text: _rows_or_text(text),
           help="ewma: half-life in rows, H > 0: alpha = 1 - exp(log(0.5) / H); with "
                "--times, a duration (2 days, 6h, 90s)."),
    # A column the table plan reads (cumtool.tables), not a kernel's parameter alone.
    Option("--times", type=str, metavar="COL", inputs="tables", small="hands over",
           dask="refuses", wide="refuses",
           help="ewma: the column of times (ISO text, dates or timestamps; not scanned): "
                "weights decay with the time between rows, by --halflife DURATION, as "
                "pandas' ewm(halflife=..., times=...)."),
    Option("--com", type=float, metavar="C",
           help="ewma: centre of mass, C >= 0: alpha = 1 / (1 + C)."),
    Option("--span", type=float, metavar="S", help="ewma: span, S >= 1: alpha = 2 / (S + 1)."),
    Option("--alpha", type=float, metavar="A",
           help="ewma: smoothing factor, 0 < A <= 1 (give one of --alpha, --span, --com, "
                "--halflife)."),
)
EWMA_PARAMETERS = ("com", "span", "halflife", "alpha")


def center_of_mass(com: float | None = None, span: float | None = None,
                   halflife: float | None = None, alpha: float | None = None) -> float:
    """ewma's centre of mass from exactly one of its four parameters, in float64 as pandas'
    get_center_of_mass computes it (exp and log are numpy's); UsageError names the option."""
    given = {name: value for name, value in zip(
        EWMA_PARAMETERS, (com, span, halflife, alpha), strict=True) if value is not None}
    if not given:
        raise UsageError(f"ewma needs one of {option('alpha')}, {option('span')}, "
                         f"{option('com')} or {option('halflife')}")
    if len(given) > 1:
        first, second = list(given)[:2]
        raise UsageError(f"give one of {option('alpha')}, {option('span')}, {option('com')}, "
                         f"{option('halflife')}, not both {option(first)} and "
                         f"{option(second)}")
    name, value = next(iter(given.items()))
    value = float(value)
    ranges = {"com": (value >= 0, "C >= 0"), "span": (value >= 1, "S >= 1"),
              "halflife": (value > 0, "H > 0"), "alpha": (0 < value <= 1, "0 < A <= 1")}
    inside, rule = ranges[name]
    if not inside or math.isnan(value):
        raise UsageError(f"{option(name, _number(value))} is out of range: it needs {rule}")
    if name == "com":
        return value
    if name == "span":
        return (value - 1) / 2
    if name == "halflife":
        import numpy as np  # numpy's exp and log, as pandas: not for `cumtool --help`

        with np.errstate(over="ignore", divide="ignore"):  # a tiny H: decay 1, com 0
            decay = 1 - np.exp(np.log(0.5) / value)
            return float(1 / decay - 1)
    return (1 - value) / value


def _number(value: float) -> str:
    return str(int(value)) if value.is_integer() else repr(value)


def _rows_or_text(text: str) -> float | str:
    """--halflife as given: a number (of rows), else the text (a duration, for --times)."""
    try:
        return float(text)
    except ValueError:
        return str(text).strip()


# A duration's units, in nanoseconds, by the names pandas' Timedelta reads too.
_UNITS = {"ns": 1, "nanosecond": 1, "us": 10**3, "microsecond": 10**3, "ms": 10**6,
          "millisecond": 10**6, "s": 10**9, "sec": 10**9, "second": 10**9,
          "m": 60 * 10**9, "min": 60 * 10**9, "minute": 60 * 10**9,
          "h": 3600 * 10**9, "hr": 3600 * 10**9, "hour": 3600 * 10**9,
          "d": 86400 * 10**9, "day": 86400 * 10**9, "w": 7 * 86400 * 10**9,
          "week": 7 * 86400 * 10**9}
# Compiled when first used (re caches it): the op registry loads this module at start-up.
_DURATION = r"^\s*(\d+(?:\.\d*)?|\.\d+)\s*([a-z]+)\s*$"


def duration_ns(text: Any) -> int:
    """A --halflife duration (`2 days`, `6h`, `90s`, `1.5 hours`) in nanoseconds."""
    found = re.match(_DURATION, str(text).lower())
    unit = found.group(2) if found else ""
    if unit.endswith("s") and unit[:-1] in _UNITS and unit not in _UNITS:
        unit = unit[:-1]  # plurals: days, hours, secs
    if found is None or unit not in _UNITS:
        raise UsageError(f"{option('halflife', repr(text))} is not a duration; with "
                         f"{option('times')} give one such as 2 days, 6h, 90s or 1.5 hours")
    nanoseconds = round(float(found.group(1)) * _UNITS[unit])
    if nanoseconds <= 0:
        raise UsageError(f"{option('halflife', repr(text))} is out of range: it needs a "
                         "duration > 0")
    return nanoseconds


def params(given: Mapping[str, Any]) -> dict[str, Any]:
    """The scan's parameters; with --times, pandas' centre of mass 1 (alpha 0.5) and the
    half-life as a duration: each weight is multiplied by 0.5 ** (dt / half-life)."""
    halflife = given["halflife"]
    if given.get("times") is not None:
        other = next((name for name in ("alpha", "span", "com") if given[name] is not None),
                     None)
        if other is not None or halflife is None or not isinstance(halflife, str):
            raise UsageError(f"{option('times')} decays the weights by the time between "
                             f"rows: give {option('halflife')} as a duration (2 days, 6h, "
                             f"90s)" + (f", not {option(other)}" if other else ""))
        return {"com": 1.0, "adjust": bool(given["adjust"]),
                "halflife_ns": duration_ns(halflife)}
    if isinstance(halflife, str):
        raise UsageError(f"{option('halflife', repr(halflife))} is not a number of rows; a "
                         f"duration is for {option('times')} COL")
    values = [given[name] for name in EWMA_PARAMETERS]
    return {"com": center_of_mass(*values), "adjust": bool(given["adjust"]),
            "halflife_ns": None}


class TimedCarry:
    """ewma --times's carried state, one entry a group (a column: one group): the mean so
    far (NaN before the first value), pandas' old weight, the last row's time (ns), and
    whether a row has been seen. Its fields are what --state saves."""

    def __init__(self, groups: int = 0) -> None:
        self.y = np.full(groups, np.nan)
        self.w = np.ones(groups)
        self.t = np.zeros(groups, dtype=np.int64)
        self.seen = np.zeros(groups, dtype=bool)

    def grow(self, count: int) -> None:
        have = self.y.shape[0]
        if count > have:
            more = count - have
            self.y = np.concatenate([self.y, np.full(more, np.nan)])
            self.w = np.concatenate([self.w, np.ones(more)])
            self.t = np.concatenate([self.t, np.zeros(more, dtype=np.int64)])
            self.seen = np.concatenate([self.seen, np.zeros(more, dtype=bool)])


def timed_means(spec: ScanSpec, values: np.ndarray, present: np.ndarray, times: np.ndarray,
                groups: np.ndarray, carry: TimedCarry) -> np.ndarray:
    """ewma with --times, row by row, as pandas' ewm(halflife=..., times=...).mean()
    (ignore_na=False) computes it: at each row after a group's first, once it has a
    value, the old weight decays by 0.5 ** (dt / half-life), dt from the group's last row
    (the exact count of nanoseconds between them, then float64: as pandas 3 takes times
    in their column's unit, where they are exact; pandas 2 rounded nanoseconds since
    1970 to float64 first, which can move the last bits); a value then moves the mean.
    --no-adjust (pandas adjust=False): y = k y + (1 - k) x, k = 0.5 ** (dt / half-life),
    dt from the group's last value. A missing value's mean is missing (pandas repeats
    the last). A NaN spreads, as in every op: the group's mean is NaN from there on (its
    weight NaN marks it); --skipna makes it a missing cell, kept in place as NaN."""
    decay_base = 1.0 - 1.0 / (1.0 + float(spec.param("com")))
    adjust = bool(spec.param("adjust"))
    new = 1.0
    halflife = float(spec.param("halflife_ns"))
    out = np.full(values.shape[0], np.nan)
    ys, ws, ts, seen = carry.y, carry.w, carry.t, carry.seen
    skipna = spec.skipna
    for i, (x, ok, now, g) in enumerate(zip(values.tolist(), present.tolist(),
                                            times.tolist(), groups.tolist(), strict=True)):
        y = float(ys[g])
        if (ok and x != x and not skipna) or ws[g] != ws[g]:
            seen[g] = True
            ys[g] = ws[g] = np.nan  # a NaN met: the mean is NaN from here on
            continue  # (out[i] is NaN already; a missing cell stays missing)
        observed = ok and x == x
        if not seen[g]:
            seen[g] = True
            if observed:
                y = x
        elif y == y and adjust:
            w = float(ws[g]) * decay_base ** (float(now - int(ts[g])) / halflife)
            if observed:
                if y != x:
                    y = (w * y + new * x) / (w + new)
                w = w + new
            ws[g] = w
        elif y == y:
            if not observed:
                continue  # pandas: the recursive form decays from the last value's time
            kept = decay_base ** (float(now - int(ts[g])) / halflife)
            if y != x:
                y = kept * y + (1.0 - kept) * x
        elif observed:
            y = x
        ys[g] = y
        ts[g] = now
        if observed:
            out[i] = y
    return out


class _EwmaWeights:
    """ewma's weights depend on the count only: w_old after the first value is 1, then
    w = w * f + w_new (adjusted) or 1. Kept per (com, adjust), grown on demand; the
    adjusted sequence reaches a fixed point in float64, after which it is constant."""

    def __init__(self, decay: float, new: float, adjust: bool) -> None:
        self.decay, self.new = decay, new
        self.after = np.ones(1, dtype=np.float64)  # after[c - 1]: w_old after c values
        self.settled = not adjust

    def upto(self, count: int) -> np.ndarray:
        """w_old after 1..count values, or fewer once settled: the last is then the
        value for every later count (memory stays bounded on long inputs)."""
        have = self.after.shape[0]
        if count > have and not self.settled:
            want = max(count, 2 * have)  # grown geometrically: few copies on long inputs
            w = float(self.after[-1])
            grown: list[float] = []
            while not self.settled and have + len(grown) < want:
                following = w * self.decay + self.new
                self.settled = following == w
                w = following
                grown.append(w)
            self.after = np.concatenate([self.after, np.asarray(grown, dtype=np.float64)])
        return self.after[:count]


_EWMA_WEIGHTS: dict[tuple[float, bool], _EwmaWeights] = {}


def _ewma_weights(spec: ScanSpec) -> _EwmaWeights:
    """pandas: alpha = 1 / (1 + com), f = 1 - alpha, w_new = 1 (adjusted) or alpha."""
    com, adjust = spec.param("com"), spec.param("adjust")
    assert com is not None
    key = (com, adjust)
    if key not in _EWMA_WEIGHTS:
        alpha = 1.0 / (1.0 + com)
        _EWMA_WEIGHTS[key] = _EwmaWeights(1.0 - alpha, 1.0 if adjust else alpha, adjust)
    return _EWMA_WEIGHTS[key]


class Ewma(StatKernel):
    """y = x[first]; then w_old *= f; if y != x: y = (w_old y + w_new x) / (w_old + w_new).
    w_old follows from the count alone (_EwmaWeights), so only y needs the loop."""

    name = "ewma"

    def state_dtype(self, spec: ScanSpec) -> np.dtype:
        return np.dtype([("n", np.int64), ("y", np.float64), ("w", np.float64)])

    def states(self, spec: ScanSpec, x: np.ndarray, present: np.ndarray | None,
               start: np.ndarray, count: np.ndarray) -> States:
        from cumtool import native, stats

        states = stats.blank(self.state_dtype(spec), x.shape)
        states["n"] = count
        new, after, old_by_count, total_by_count = self.tables(spec,
                                                               int(count.max(initial=1)))
        x = stats.as_float64(x)
        with np.errstate(all="ignore"):
            last = old_by_count.shape[0] - 1

            def old(before: np.ndarray) -> np.ndarray:
                return old_by_count[np.minimum(before, last)]

            def total(before: np.ndarray) -> np.ndarray:
                return total_by_count[np.minimum(before, last)]

            def line_loop(values: list[float], y: float, n: int) -> list[float]:
                means: list[float] = []
                keep = means.append
                if n == 0 and values:  # the first value starts the mean
                    y = values[0]
                    keep(y)
                    values = values[1:]
                    n = 1
                # Until the weights settle (count `last`), each count has its own;
                # from there on they are constants, and the loop is shorter.
                varying = max(0, min(len(values), last - n))
                before = np.arange(n, n + varying)
                olds = old(before).tolist()
                totals = total(before).tolist()
                for value, w, t in zip(values[:varying], olds, totals, strict=True):
                    if y != value:
                        y = (w * y + new * value) / t
                    keep(y)
                w, t = float(old_by_count[last]), float(total_by_count[last])
                for value in values[varying:]:
                    if y != value:
                        y = (w * y + new * value) / t
                    keep(y)
                return means

            def rows_step(x: np.ndarray, y: np.ndarray, before: np.ndarray) -> np.ndarray:
                mixed = np.where(y != x, (old(before) * y + new * x) / total(before), y)
                return np.where(before == 0, x, mixed)

            if native.SEQUENTIAL is not None:
                states["y"] = stats.native_loop(x, present, start, "y",
                                                native.SEQUENTIAL.ewma_means, old_by_count,
                                                total_by_count, new)
            else:
                states["y"] = stats.sequential(x, present, start, count, "y", line_loop,
                                          rows_step)
        states["w"] = stats.by_count(count, lambda c: np.where(
            c > 0, after[np.minimum(c, after.shape[0]) - 1], 0.0))
        return states

    def output(self, spec: ScanSpec, states: States) -> np.ndarray:
        return states["y"].copy()

    def tables(self, spec: ScanSpec, count: int
               ) -> tuple[float, np.ndarray, np.ndarray, np.ndarray]:
        """The weights for counts up to `count`: w_new; w_old after 1..count + 1 values
        (fewer once settled: the last then holds for every later count); and at a value
        with c values before it, the decayed old weight and the sum (index c, the last
        entry for any larger c). Their entries follow from the count alone: the same
        whatever `count` asked for them."""
        weights = _ewma_weights(spec)
        after = weights.upto(count + 1)
        with np.errstate(all="ignore"):
            old_by_count = np.concatenate([[np.nan], after * weights.decay])
            total_by_count = old_by_count + weights.new
        return weights.new, after, old_by_count, total_by_count

    def weight(self, spec: ScanSpec, count: int) -> float:
        """The state's w after `count` values (states["w"])."""
        if count <= 0:
            return 0.0
        after = self.tables(spec, count)[1]
        return float(after[min(count, after.shape[0]) - 1])


OPS = (Op(
    "ewma",
    summary="Exponentially weighted running mean, as pandas' ewm(...).mean(): give one "
            "of --alpha, --span, --com, --halflife.",
    short="Exponentially weighted running mean, as pandas' ewm",
    example="cumtool ewma sample_data/prices.csv -c close --span 3 --keep",
    options=OPTIONS, params=params, parameters={"com": None, "adjust": True, "halflife_ns": None},
    decimals="float64", stat=True,
    kernel=Ewma()),)
