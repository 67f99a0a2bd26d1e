"""How one table of the terminal view is laid out: the text of its cells, which columns
fit a width, and the table rendered with rich (row numbers, the `… N rows …` line).
pretty.py decides what is kept of a result and prints it."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Literal

import numpy as np
from rich.cells import cell_len
from rich.console import Console
from rich.segment import Segment
from rich.style import Style
from rich.table import Table
from rich.text import Text

from cumtool.view import printable

MAX_COLUMNS = 100  # columns kept and shown at most (not on a terminal: the only limit)
PAD = 3  # what a column takes besides its text: a space each side and a border
ROW_HEADER = "#"

class Cells:
    """Texts of cells, as the view formats them."""

    def __init__(self, precision: int, encoding: str) -> None:
        self.precision = precision
        self.encoding = encoding
        self.utf = encoding.lower().replace("_", "-").startswith("utf")
        self.ellipsis = "…" if self.utf else "..."

    def text(self, text: str) -> str:
        """Text from outside, escaped, and as the output's encoding shows it: with `?`
        for what it cannot hold, so that columns are measured as they will show."""
        text = printable(text)
        if self.utf:
            return text
        return text.encode(self.encoding, errors="replace").decode(self.encoding)

    def cell(self, value: object) -> Text:
        if value is None:
            return Text("null", style="dim italic")
        if isinstance(value, np.floating | float):
            if np.isnan(value):
                return Text("nan", style="magenta")
            return Text(self.float_text(value))
        if isinstance(value, np.complexfloating | complex):
            parts = [self.float_text(part, trim="-") for part in (value.real, value.imag)]
            return Text(f"{parts[0]}{'' if parts[1].startswith('-') else '+'}{parts[1]}j")
        return Text(self.text(str(value)))

    def float_text(self, value: float | np.floating, trim: Literal["0", "-"] = "0") -> str:
        """`value` at the view's significant digits, or fewer where its own dtype's
        shortest text is shorter (float32 0.1 is 0.1); scientific as format's `g`."""
        if not np.isfinite(value):
            return str(float(value))
        if isinstance(value, float):
            value = np.float64(value)
        digits = self.precision
        scientific = np.format_float_scientific(value, precision=digits - 1, unique=True,
                                                trim="-", exp_digits=2)
        scientific = scientific.replace(".e", "e")  # numpy leaves 1.e-12 where it rounds
        exponent = int(scientific.rsplit("e", 1)[1])
        if -4 <= exponent < digits:
            # "2.0" and "16433.0" (16432.9999... to 6 digits) end in a digit that is
            # within the precision; 381.18 to 3 digits is "381", not "381.0".
            zero: Literal["0", "-"] = trim if exponent + 1 < digits else "-"
            return np.format_float_positional(value, precision=digits, unique=True,
                                              fractional=False, trim=zero)
        return scientific

    def fixed(self, value: float | np.floating, places: int) -> Text:
        """A float to `places` decimals (a column whose values all have that many)."""
        if not np.isfinite(value):
            return self.cell(value)
        return Text(f"{float(value):.{places}f}")

    def header(self, name: str, dtype: str) -> Text:
        return Text(f"{self.text(name)}\n{dtype}")

    def header_width(self, name: str, dtype: str) -> int:
        return max(cell_len(self.text(name)), cell_len(dtype))


def decimal_places(values: np.ndarray, precision: int) -> int | None:
    """The fewest decimals, from 1 to `precision`, that every finite value of `values`
    has up to its dtype's rounding (a running total of cents has 2, however its binary
    sum ends: 381.17999999999995 is 381.18); None if there are none such, or a value is
    too large to be written so."""
    if values.dtype != np.float64:  # float32 holds 7 digits: any value has 6 places so
        return None
    finite = values[np.isfinite(values)]
    if not finite.shape[0] or np.abs(finite).max() >= 1e15:
        return None
    # The rounding of a running total, never a digit of the value: a value that needs
    # more places than the precision (a log, a mean) keeps its significant digits. What
    # is rounding is told by the column's largest value (0.1 + 0.2 - 0.3 leaves 5.6e-17
    # beside 0.3), not by the places: a column of 1e-20 has none of them.
    tolerance = 1e-13 * np.maximum(np.abs(finite), np.abs(finite).max())
    for places in range(1, precision + 1):
        rounded = np.round(finite, places)
        if np.all(np.abs(rounded - finite) <= tolerance):
            return places
    return None


def fit(widths: dict[int, int], order: Sequence[int], budget: int | None,
        used: int) -> list[int]:
    """The columns of `order` (positions) that show: as many as fit in `budget` cells
    with `used` taken, from the first; at least one; all when there is no budget; never
    more than MAX_COLUMNS. A column takes its width plus PAD."""
    if budget is None:
        return list(order[:MAX_COLUMNS])
    shown: list[int] = []
    for position in order[:MAX_COLUMNS]:
        used += widths[position] + PAD
        if shown and used > budget:
            break
        shown.append(position)
    return shown


def split_rows(rows: int | None) -> tuple[float, int]:
    """Rows kept from the start and from the end for `View.rows`."""
    if rows is None:
        return math.inf, 0
    return rows - rows // 2, rows // 2


class Frame:
    """One table to print: columns (header and alignment), numbered rows, where the
    `… N rows …` line goes, and a line of text before it. Columns come in units that show
    or hide together (an array's values and their indices)."""

    def __init__(self, cells: Cells, title: str | None = None,
                 before: str | None = None) -> None:
        self.cells = cells
        self.title = title
        self.before = before
        self.headers: list[Text] = []
        self.numeric: list[bool] = []
        self.units: list[int] = []  # each column's unit
        self.rows: list[tuple[str, list[Text]]] = []  # (row number, cells)
        self.gap_at: int | None = None  # rows before the gap line
        self.gap_rows = 0

    def column(self, name: str, dtype: str, numeric: bool, unit: int) -> None:
        self.headers.append(self.cells.header(name, dtype))
        self.numeric.append(numeric)
        self.units.append(unit)

    def gap(self, hidden: int) -> None:
        if hidden > 0:
            self.gap_at, self.gap_rows = len(self.rows), hidden

    def widths(self) -> list[int]:
        """Each column's width: its header's or its widest cell's."""
        widths = [max(cell_len(line) for line in h.plain.split("\n")) for h in self.headers]
        for _number, row in self.rows:
            for i, cell in enumerate(row):
                widths[i] = max(widths[i], cell.cell_len)
        return widths

    def unit_widths(self) -> dict[int, int]:
        """What each unit takes but for one PAD."""
        out: dict[int, int] = {}
        for unit, width in zip(self.units, self.widths(), strict=True):
            out[unit] = out[unit] + PAD + width if unit in out else width
        return out

    def number_width(self) -> int:
        return max([cell_len(ROW_HEADER), *(len(number) for number, _ in self.rows)])

    def render(self, console: Console, units: set[int]) -> list[list[Segment]]:
        """The table's lines with the columns of `units`."""
        shown = [i for i, unit in enumerate(self.units) if unit in units]
        table = Table()
        table.add_column(Text(f"{ROW_HEADER}\n"), justify="right", style="dim",
                         no_wrap=True)
        for i in shown:
            table.add_column(self.headers[i], justify="right" if self.numeric[i] else "left",
                             no_wrap=True)
        for n, (number, row) in enumerate(self.rows):
            if n == self.gap_at:
                table.add_row(*[Text("")] * len(table.columns))  # replaced below
            table.add_row(Text(number), *[row[i] for i in shown])
        if self.gap_at == len(self.rows):
            table.add_row(*[Text("")] * len(table.columns))  # replaced below
        width = 1 + self.number_width() + PAD + sum(
            w + PAD for i, w in enumerate(self.widths()) if i in shown)
        options = console.options.update(width=width, no_wrap=True)
        lines = console.render_lines(table, options, pad=False)
        if self.gap_at is not None:
            # The blank row becomes one line across the table: `… N rows …`.
            at = 4 + self.gap_at  # after the top edge, 2 header lines and the rule
            rows = plural(self.gap_rows, "row")
            ellipsis = self.cells.ellipsis
            lines[at] = gap_line(lines[at], f"{ellipsis} {rows} {ellipsis}")
        if self.title:  # centred over the table, with no trailing blanks
            lines.insert(0, [Segment(self.title.center(width).rstrip(), Style(italic=True))])
        return lines


def plural(number: int, noun: str) -> str:
    return f"{number} {noun}" if number == 1 else f"{number} {noun}s"


def gap_line(line: list[Segment], text: str) -> list[Segment]:
    inner = sum(s.cell_length for s in line) - 2
    if inner < cell_len(text) or not line:
        return [Segment(text, Style(dim=True))]
    left, right = line[0], line[-1]
    return [Segment(left.text[0], left.style), Segment(text.center(inner), Style(dim=True)),
            Segment(right.text[-1], right.style)]


def join_lines(lines: list[list[Segment]]) -> list[Segment]:
    out: list[Segment] = []
    for line in lines:
        out.extend(line)
        out.append(Segment.line())
    return out


def keep(total: int, head: float, tail: int) -> list[int]:
    """Positions shown of `total`: all, or the first `head` and last `tail`."""
    if total <= head + tail:
        return list(range(total))
    return [*range(int(head)), *range(total - tail, total)]
