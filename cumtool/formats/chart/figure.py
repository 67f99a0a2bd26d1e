"""What a chart draws, whatever the medium (text in chart.py, an image in image.py): its
panels of lines as runs of points, the ranges of x and y, and the round ticks of its
axes."""

from __future__ import annotations

from dataclasses import dataclass

from cumtool.formats.chart import ticks


@dataclass
class Drawn:
    """A line as drawn: its legend name, its runs of (x, y) points to join, and its
    entry in the legend (its colour and marker)."""

    name: str
    runs: list[list[tuple[float, float]]]
    infinite: int
    key: int = 0


@dataclass
class Panel:
    """One frame of lines with its own y axis; with several, they are stacked along one
    x axis, each titled with the column it draws."""

    lines: list[Drawn]
    y_range: tuple[float, float]  # the finite results, exactly (inf, -inf: none)
    title: str | None = None

    def y_frame(self, count: int) -> tuple[float, float, float]:
        low, high = self.y_range
        if low > high:  # nothing finite to draw
            low, high = 0.0, 1.0
        return ticks.frame(low, high, count)


@dataclass
class Chart:
    """What is drawn, whatever the medium."""

    legend: list[str]  # the names of the lines, in order: Drawn.key indexes it
    panels: list[Panel]
    x_range: tuple[float, float]  # the x of the points, exactly
    x_kind: str  # row, number, date or time (dates and times in days since 1970)
    x_name: str
    caption: str
    notes: list[str]

    def x_frame(self) -> tuple[float, float]:
        low, high = self.x_range
        if low > high:
            return 0.0, 1.0
        if low == high:
            return low - 1, high + 1
        return low, high

    def x_ticks(self, count: int) -> list[tuple[float, str]]:
        low, high = self.x_frame()
        if self.x_kind in ("date", "time"):
            found = ticks.date_ticks(low, high, count, whole_days=self.x_kind == "date")
            if len(found) >= 2 or self.x_kind == "date":
                return found
        step = ticks.number_step(high - low, count,
                                 integral=self.x_kind in ("row", "date"))
        return [(v, ticks.number_label(v, step)) for v in ticks.number_ticks(low, high, step)]
