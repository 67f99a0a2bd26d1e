"""The chart as an SVG or PNG image, drawn with matplotlib (the `plot` extra).

matplotlib is imported only here, and only when an image is asked for: its figure and
the Agg and SVG canvases, never pyplot (no global figure state, no GUI backend). Each
line is one path (its runs joined by moves), with the id `cumtool-line-N`, so that an
SVG can be read back. The SVG holds no date and fixed ids: the same data gives the same
bytes with the same matplotlib.
"""

from __future__ import annotations

import math
from typing import IO, TYPE_CHECKING, Any

from cumtool.errors import extra_missing
from cumtool.view import printable

if TYPE_CHECKING:
    from cumtool.formats.chart.figure import Chart, Panel

_COLOURS = ("#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#17becf", "#bcbd22", "#1f3fbf",
            "#ff7f0e")


def check_library() -> None:
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        raise extra_missing("drawing a chart as an SVG or PNG image", "plot") from None


def draw_image(chart: Chart, stream: IO[bytes], kind: str, size: tuple[int, int]) -> None:
    """Write `chart` to `stream` as `kind` (svg or png), `size` pixels."""
    import matplotlib
    from matplotlib.figure import Figure

    width, height = size
    dpi = 96  # CSS pixels per inch: an SVG of N pixels says N * 0.75pt, its size in pixels
    settings: Any = {"svg.hashsalt": "cumtool", "svg.fonttype": "path", "font.size": 9,
                "axes.unicode_minus": True,
                # Dates are days since 1970, as the chart's own x of dates and times.
                "date.epoch": "1970-01-01T00:00:00"}
    with matplotlib.rc_context(settings):
        figure = Figure(figsize=(width / dpi, height / dpi), dpi=dpi)
        stack = figure.subplots(len(chart.panels), 1, sharex=True, squeeze=False)[:, 0]
        handles: dict[int, Any] = {}
        number = 0
        for axes, panel in zip(stack, chart.panels, strict=True):
            for line in panel.lines:
                xs: list[float] = []
                ys: list[float] = []
                for run in line.runs:
                    points = run if len(run) > 1 else run * 2  # a lone point: a dot
                    if xs:
                        xs.append(math.nan)
                        ys.append(math.nan)
                    xs.extend(x for x, _y in points)
                    ys.extend(_clip(panel, y) for _x0, y in points)
                drawn, = axes.plot(xs, ys, color=_COLOURS[line.key % len(_COLOURS)],
                                   linewidth=1.2, solid_capstyle="round",
                                   label=printable(line.name))
                number += 1
                drawn.set_gid(f"cumtool-line-{number}")
                handles.setdefault(line.key, drawn)
            low, high = panel.y_range
            if low <= high:
                pad = (high - low) * 0.03 or 1.0
                axes.set_ylim(low - pad, high + pad)
            if panel.title is not None:
                axes.set_ylabel(printable(panel.title), parse_math=False)
            axes.grid(True, color="#dddddd", linewidth=0.6)
        bottom = stack[-1]
        bottom.set_xlim(*chart.x_frame())
        if chart.x_kind in ("date", "time"):
            from matplotlib.dates import AutoDateLocator, ConciseDateFormatter

            locator = AutoDateLocator()
            bottom.xaxis.set_major_locator(locator)
            bottom.xaxis.set_major_formatter(ConciseDateFormatter(locator))
        bottom.set_xlabel(printable(chart.x_name), parse_math=False)
        if handles:
            keys = sorted(handles)
            legend = stack[0].legend([handles[k] for k in keys],
                                     [printable(chart.legend[k]) for k in keys],
                                     loc="upper left", frameon=False)
            for text in legend.get_texts():
                text.set_parse_math(False)
        words = "\n".join(printable(line) for line in [chart.caption, *chart.notes])
        figure.text(0.01, 0.01, words, fontsize=8, style="italic", parse_math=False,
                    va="bottom")
        titled = len(chart.panels) > 1  # room for the titles left of the y labels
        figure.subplots_adjust(left=0.11 if titled else 0.08, right=0.98, top=0.96,
                               bottom=0.16, hspace=0.12)
        figure.align_ylabels(stack)
        _save(figure, stream, kind, dpi)


def _clip(panel: Panel, y: float) -> float:
    low, high = panel.y_range
    if math.isinf(y) and low <= high:
        pad = (high - low) * 0.03 or 1.0
        return high + pad if y > 0 else low - pad
    return y


def _save(figure: Any, stream: IO[bytes], kind: str, dpi: int) -> None:
    import io

    # matplotlib wants a real file object; an image is small, so it is drawn in memory.
    image = io.BytesIO()
    if kind == "svg":
        from matplotlib.backends.backend_svg import FigureCanvasSVG

        FigureCanvasSVG(figure).print_svg(image, metadata={"Date": None})
    else:
        from matplotlib.backends.backend_agg import FigureCanvasAgg

        FigureCanvasAgg(figure).print_png(image, metadata={"Software": "cumtool"})
    stream.write(image.getvalue())
