"""What the terminal view is told about a run, and text from files made safe to show.

Nothing numeric is imported here: the CLI uses `printable` for every message it prints.
"""

from __future__ import annotations

from dataclasses import dataclass

CAPTION_NAMES = 6  # scanned columns named in the caption; the rest are counted


def printable(text: str) -> str:
    """`text` with every character that is not printable shown as an escape, as Python
    writes it (`\\x1b`, `\\n`, `\\u202e`), so that text from a file or the command line
    can neither drive a terminal nor break a line. A byte that was not valid in a file
    name (kept by Python as a lone surrogate) shows as that byte, `\\xff`."""
    if text.isprintable():
        return text
    out = []
    for c in text:
        if c.isprintable():
            out.append(c)
        elif "\udc80" <= c <= "\udcff":
            out.append(f"\\x{ord(c) - 0xdc00:02x}")
        else:
            out.append(repr(c)[1:-1])
    return "".join(out)


@dataclass(frozen=True)
class View:
    """What the terminal table says about a run besides the data, and how much it shows."""

    op: str
    along: str  # "rows", "columns", "axis 2"
    source: str  # the input's name: a path or "standard input"
    scanned: tuple[str, ...] = ()  # the input columns the op ran on (tables)
    first: frozenset[str] = frozenset()  # output columns shown before any other (results)
    rows: int | None = 20  # rows shown, the first and last half of them; None: all
    precision: int = 6  # significant digits of floats

    def caption(self, size: str) -> str:
        """One line: op, axis, input, `size` (the shape) and the scanned columns."""
        text = f"{self.op} along {self.along} of {self.source}, {size}"
        if self.scanned:
            names = ", ".join(self.scanned[:CAPTION_NAMES])
            if len(self.scanned) > CAPTION_NAMES:
                names += f" and {len(self.scanned) - CAPTION_NAMES} more"
            text += f"; scanned: {names}"
        return printable(text)
