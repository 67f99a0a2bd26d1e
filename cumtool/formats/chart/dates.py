"""Dates in text, for a chart's `--x` column: the layouts read without `--x-format`, and
reading a column of text in one layout (polars' strptime).

ISO dates and times (`2024-03-01`, `2024-03-01T09:30`) are read by Arrow's own cast, in
chart.py; these are the other common layouts, tried in this order on a column's first
cell. A slash date whose fields are both at most 12 reads both as month/day and as
day/month: the cells after it decide (a first field above 12 is a day, a second one
above 12 a day too), and a column where none does needs `--x-format`.
"""

from __future__ import annotations

import re

import pyarrow as pa

LAYOUTS = ("%Y/%m/%d", "%d-%b-%y", "%d-%b-%Y", "%b %d, %Y", "%m/%d/%Y", "%d/%m/%Y")
SLASHES = ("%m/%d/%Y", "%d/%m/%Y")
# What the errors say --x reads without --x-format.
KNOWN = ("ISO, %Y/%m/%d, %d-%b-%y, %d-%b-%Y, '%b %d, %Y', %m/%d/%Y or %d/%m/%Y")
# A strftime layout holding a time of day: read as a timestamp, else as a date.
_TIME = re.compile(r"%[-_0^#]?[HIklMSfpPTRXcsz]")


def holds_time(layout: str) -> bool:
    return _TIME.search(layout) is not None


def read(text: pa.Array, layout: str, guessed: bool = True) -> pa.Array:
    """`text` (strings, missing cells null) read in `layout`: date32, or timestamp[us]
    where the layout holds a time of day; a cell it does not read is null. A guessed
    layout's `%Y` wants a year of four digits: polars reads `19-Sep-03` as the year 3,
    which is `%d-%b-%y`."""
    import polars as pl

    series = pl.Series(text.cast(pa.large_string()))
    kind = pl.Datetime("us") if holds_time(layout) else pl.Date
    try:
        parsed = series.str.strptime(kind, layout, strict=False, exact=True)
    except pl.exceptions.ComputeError:  # a layout polars cannot read with
        parsed = pl.Series(values=[None] * len(series), dtype=kind)
    if guessed and "%Y" in layout:
        parsed = pl.select(pl.when(parsed.dt.year() >= 1000).then(parsed)).to_series()
    return parsed.to_arrow()


def first_unread(text: pa.Array, parsed: pa.Array) -> int | None:
    """The position of the first cell of `text` that `parsed` (its reading) lost."""
    import pyarrow.compute as pc

    lost = pc.and_(text.is_valid(), parsed.is_null())
    found = pc.index(lost, True).as_py()
    return None if found < 0 else int(found)
