"""The CSV dialect, once: the quote rule (which cells are written quoted, and how), a
field's text as read (field_pattern, field_text), and where a record ends (a LF outside
quotes, the quote state being the parity of the quotes before it). Every reader and
writer of delimited text asks here; the compiled pipeline's C twin (_ext/_csvtext.c:
needs_quotes, last_record_end, the cutter's quote state and its cell text, `records`)
keeps the same rules, and tests/test_dialect.py holds the two together.

Imports nothing of cumtool, and numpy only for the vectorised parity (callers that cut
text with numpy have it loaded already).
"""

from __future__ import annotations

import functools
import re
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np

QUOTE = '"'
_QUOTE_BYTE = ord(QUOTE)
_NEWLINE_BYTE = ord("\n")


def needs_quotes(text: str, delimiter: str, empty_quoted: bool = False) -> bool:
    """Whether a cell's text is written quoted: where it holds the delimiter, a quote or
    a line end; an empty text where the writer marks it (a row's only cell, or polars'
    quoting of an empty string)."""
    if not text:
        return empty_quoted
    return any(c in text for c in (delimiter, QUOTE, "\r", "\n"))


def quote(text: str, delimiter: str, empty_quoted: bool = False) -> str:
    """A cell's text as written: quoted, its quotes doubled, where needs_quotes says."""
    if needs_quotes(text, delimiter, empty_quoted):
        return QUOTE + text.replace(QUOTE, QUOTE + QUOTE) + QUOTE
    return text


@functools.cache
def field_pattern(delimiter: str) -> re.Pattern[str]:
    """One field of a record and what ends it, matched from the field's start: groups
    (quoted, plain, ending). `quoted` is a quoted field's inside (quotes doubled; None for
    a plain field), `plain` a plain field's text (it holds no quote or LF; a CR before the
    LF, or at the end of the text, is no part of it; a lone CR inside a line is, as the
    streaming path reads it), `ending` the delimiter, a line end, or "" or "\r" at the
    end of the text.
    No match: a quote RFC 4180 does not allow, or one never closed."""
    d = re.escape(delimiter)
    return re.compile(rf'(?:"((?:[^"]|"")*)"|([^"\n{d}]*?))({d}|\r?\n|\r?\Z)', re.DOTALL)


def field_text(quoted: str | None, plain: str | None) -> str | None:
    """A field's text from field_pattern's groups: a quoted field's with its doubled
    quotes undone, a plain one's as it is; None for an empty plain field (a missing
    cell, where "" quoted is the empty text)."""
    if quoted is not None:
        return quoted.replace('""', '"') if QUOTE in quoted else quoted
    return plain or None


def records(text: str, delimiter: str) -> list[list[str | None]] | None:
    """`text` cut into records of fields' texts (field_pattern, field_text; a blank line
    is a record of one missing cell, an ending delimiter an empty last cell); None where
    a quote is not RFC 4180's. The C twin is _csvtext.records."""
    pattern = field_pattern(delimiter)
    cut: list[list[str | None]] = []
    row: list[str | None] = []
    position = 0
    while position < len(text):
        found = pattern.match(text, position)
        if found is None:
            return None
        quoted, plain, ending = found.groups()
        row.append(field_text(quoted, plain))
        position = found.end()
        if ending != delimiter:
            cut.append(row)
            row = []
    if row:
        cut.append([*row, None])
    return cut


def flips(data: bytes, start: int = 0, end: int | None = None) -> bool:
    """Whether the quote state flips across data[start:end]: an odd number of quote
    bytes (a doubled quote inside a field flips it twice)."""
    return data.count(_QUOTE_BYTE, start, len(data) if end is None else end) % 2 == 1


def outside_quotes(quotes: np.ndarray, positions: np.ndarray, quoted: int = 0) -> np.ndarray:
    """Which of `positions` (sorted byte offsets) lie outside quotes, `quotes` being the
    sorted offsets of the quote bytes and `quoted` 1 where the text starts inside quotes:
    a byte is inside where an odd number of quotes come before it."""
    import numpy as np

    return (np.searchsorted(quotes, positions) + quoted) % 2 == 0


def record_ends(data: np.ndarray, quoted: int = 0) -> np.ndarray:
    """The offsets of the LFs that end records in `data` (uint8 bytes)."""
    import numpy as np

    newlines = np.flatnonzero(data == _NEWLINE_BYTE)
    quotes = np.flatnonzero(data == _QUOTE_BYTE)
    if not quotes.shape[0] and not quoted:
        return newlines
    return newlines[outside_quotes(quotes, newlines, quoted)]


def last_record_end(data: bytes, quoted: bool = False) -> int:
    """Just past the last LF outside quotes in `data`, which starts a record, or inside
    quotes where `quoted` (a block read at any offset); -1 where there is none
    (_csvtext.last_record_end is its twin, walked from the end)."""
    best = -1
    at = 0
    while True:
        q = data.find(b'"', at)
        stop = len(data) if q < 0 else q
        if not quoted:
            lf = data.rfind(b"\n", at, stop)
            if lf >= 0:
                best = lf + 1
        if q < 0:
            return best
        quoted = not quoted
        at = q + 1


def quoted_before(data: bytes, at: int) -> bool:
    """Whether data[at] lies inside quotes, data starting a record."""
    return data.count(b'"', 0, at) % 2 == 1
