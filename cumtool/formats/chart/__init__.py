"""A line chart of the results (`--to chart`): on the terminal, or an SVG or PNG image
named by -o (matplotlib, the `plot` extra). chart.py loads only when a chart is drawn."""

from __future__ import annotations

from cumtool.formats import Format, TableSink, Writing


def _write(writing: Writing) -> TableSink:
    """The chart decimates as it goes: it holds no rows, and draws on close."""
    from cumtool.formats.chart.chart import ChartOptions, ChartSink
    from cumtool.formats.table import console_for

    request = writing.request
    assert writing.schema is not None and writing.view is not None
    image = request.chart_image()
    options = ChartOptions(ops=tuple(request.ops), keep=request.keep or len(request.ops) > 1,
                           x=request.x, x_format=request.x_format, by=request.by,
                           period=request.period_of(), time=request.time,
                           width=request.width, height=request.height, image=image)
    return ChartSink(writing.stream, writing.schema, writing.view, options,
                     writing.source_name, console=None if image else console_for(writing),
                     encoding=writing.text_encoding())


FORMATS = (
    # -o FILE.svg or FILE.png draws it as an image; other names get its text.
    Format("chart", (".svg", ".png"), rank=120, kind="view", writer=_write),
)
