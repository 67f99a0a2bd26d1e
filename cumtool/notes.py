"""Notes: one `note: ...` line on standard error where a run did something the user may
not expect and would not see in its output (a column of numbers left unscanned for one
text cell, a scan run again with a column widened). The CLI's -q silences them; the
Python API (Request.notes False) shows none. Tables' notes are worded here, so that every
path that reads delimited text says the same."""

from __future__ import annotations

import contextlib
import re
import shlex
import sys
from collections.abc import Collection, Sequence
from typing import TYPE_CHECKING, Protocol

from cumtool.formats import DEFAULT_NA

if TYPE_CHECKING:
    from cumtool.columns import Selection
    from cumtool.formats import ColumnHint


class Request(Protocol):
    """What a note asks of the run's options (cumtool.request.Request)."""

    @property
    def notes(self) -> bool: ...

    @property
    def columns(self) -> tuple[Selection, ...]: ...

    @property
    def exclude(self) -> tuple[Selection, ...]: ...

    @property
    def x(self) -> Selection | None: ...

    @property
    def na(self) -> tuple[str, ...] | None: ...

_PLAIN_NAME = re.compile(r"[^,\"\[\]!\s](?:[^,\"\[\]]*[^,\"\[\]\s])?")


class Quiet(Protocol):
    """What note() asks of a run's options: whether notes are shown (-q: not)."""

    @property
    def notes(self) -> bool: ...


def note(request: Quiet, text: str) -> None:
    """One `note: ...` line on standard error, unless the run is quiet."""
    if request.notes and sys.stderr is not None:
        from cumtool.view import printable

        # A note is advice: standard error closed, full or gone (2>&-, 2>/dev/full, a
        # reader that left) does not stop the run that has its output to write.
        with contextlib.suppress(OSError, ValueError):
            sys.stderr.write(f"note: {printable(text)}\n")
            sys.stderr.flush()


_LISTED = 6  # the most columns a note's -c names


def column_option(names: Sequence[str], positions: Sequence[int]) -> str:
    """`-c COLS` choosing the columns at `positions`, as a shell takes it: by their names
    where -c reads each as that name, else by their positions (from 1)."""
    chosen = [names[p] for p in positions]
    plain = all(_PLAIN_NAME.fullmatch(name) is not None and not name.isdigit()
                and names.count(name) == 1 for name in chosen)
    return "-c " + shlex.quote(",".join(chosen if plain else [str(p + 1) for p in positions]))


def na_option(na_values: Sequence[str] | None, texts: Sequence[str]) -> str | None:
    """`--na LIST` that makes `texts` missing cells as well as those that are now (--na
    replaces the default list, so the list given is the whole of it); None where a text
    cannot be one (it holds a comma: --na splits at commas)."""
    if any("," in text or not text for text in texts):
        return None
    markers = [m for m in (DEFAULT_NA if na_values is None else na_values) if m]
    markers += [t for t in dict.fromkeys(texts) if t not in markers]
    return f"--na {shlex.quote(','.join(markers))}"


def left_out(request: Request, names: Sequence[str], hints: Sequence[ColumnHint],
             selected: Collection[int], structural: Collection[int] = ()) -> None:
    """A note for each column the default selection (no -c) left out though its judged
    cells are mostly numbers (ColumnHint.mostly_numbers): named, with its first text cell
    and how to scan it."""
    if not request.notes or any(not s.negated for s in request.columns):
        return
    from cumtool.columns import resolve
    from cumtool.errors import DataError

    excluded: set[int] = set()
    chart_x = () if request.x is None else (request.x,)  # the chart's axis: not scanned
    for selection in (*request.exclude, *request.columns, *chart_x):
        with contextlib.suppress(DataError):  # refused already, if at all
            excluded.update(resolve(selection, names, ""))
    for i, hint in enumerate(hints):
        if i in selected or i in excluded or i in structural or not names[i]:
            continue
        if hint.kind == "empty" and getattr(request, "line_buffered", False):
            note(request, f"column {names[i]!r} is not scanned: --line-buffered judges "
                          "each column from the first row, where it is empty; to scan it, "
                          f"pass {column_option(names, sorted({*selected, i}))}")
            continue
        if not (hint.mostly_numbers or hint.formatted):
            continue
        if hint.comma_decimal:
            note(request, f"column {names[i]!r} is not scanned: its numbers are written "
                          f"with a decimal comma ({hint.culprit}); to scan it, pass "
                          "--decimal-comma")
            continue
        if hint.formatted:
            note(request, f"column {names[i]!r} is not scanned: its numbers are written as "
                          f"a spreadsheet formats them ({hint.culprit}), with thousands "
                          "separators, a currency or a percent sign, which cumtool does not "
                          "read; to scan it, export it as plain numbers (1234.5)")
            continue
        # -c replaces the default selection: the columns scanned now and this one, where
        # they are few enough to list.
        chosen = sorted({*selected, i}) if len(selected) < _LISTED else [i]
        how = column_option(names, chosen)
        if hint.kind != "text":  # a typed input's (JSON Lines): --na makes none missing
            note(request, f"column {names[i]!r} is not scanned: its first rows hold numbers, "
                          f"but {hint.culprit}; to scan it, write its values that are not "
                          f"numbers as null and pass {how}")
            continue
        na = na_option(request.na, hint.texts) if hint.texts else None
        how = (f"{how} {na}" if na is not None
               else f"{how}, once its text cells are missing cells (--na)")
        note(request, f"column {names[i]!r} is not scanned: its first rows hold numbers, "
                      f"but {hint.culprit}; to scan it, pass {how}")

