"""Choosing columns the way xsv and xan users write it, for `-c`, `--exclude`, `--by` and
`--reset`.

A selection is a comma-separated list of items:

- a name (`price`), or a name in double quotes when it holds a comma or looks like a
  number or a range (`"price, usd"`, `"2024"`; `""` is a quote inside quotes);
- a 1-based position (`3`);
- a range of names or positions, both ends included (`2-4`, `units-revenue`, `3-` to the
  last column, `-2` from the first);
- `name[k]`: the k-th column (from 0) of a name the header repeats, as in xsv.

A leading `!` negates the whole list (`!id,year`: every column that would be chosen, but
these). A name repeated in the header is ambiguous on its own: the error lists its
positions. Parsing needs no header (options are checked before any file is opened);
`resolve` maps the items to positions once the header is known.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection, Iterable, Sequence
from dataclasses import dataclass

from cumtool.errors import DataError, UsageError

_OCCURRENCE = re.compile(r"^(.*)\[(\d+)\]$", re.DOTALL)
_DIGITS = re.compile(r"^[0-9]+$")


@dataclass(frozen=True)
class Item:
    """One item of a selection: its text, and whether it was quoted (then it is a name)."""

    text: str
    quoted: bool = False
    position: int | None = None  # set for the Python API's 0-based integer positions

    def __str__(self) -> str:
        if self.position is not None:
            return str(self.position)
        return '"' + self.text.replace('"', '""') + '"' if self.quoted else self.text


@dataclass(frozen=True)
class Selection:
    """Items to choose, and whether the list is negated (`!a,b`)."""

    items: tuple[Item, ...]
    negated: bool = False
    option: str = "-c"

    def __str__(self) -> str:
        return ("!" if self.negated else "") + ",".join(str(i) for i in self.items)


def parse(text: str, option: str) -> Selection:
    """Parse one selection as typed after `option`; raises UsageError on bad syntax."""
    negated = text.startswith("!")
    body = text[1:] if negated else text
    items: list[Item] = []
    i = 0
    while True:
        item, i = _item(body, i, option, text)
        items.append(item)
        if i >= len(body):
            break
        i += 1  # the comma
    if any(not item.text and not item.quoted for item in items):
        raise UsageError(f"{option} {text!r}: an empty column name; quote it as '\"\"' to "
                         "choose a column whose name is empty")
    return Selection(tuple(items), negated, option)


def _item(body: str, start: int, option: str, whole: str) -> tuple[Item, int]:
    if body.startswith('"', start):
        chars: list[str] = []
        i = start + 1
        while True:
            if i >= len(body):
                raise UsageError(f"{option} {whole!r}: a quote is not closed")
            if body[i] == '"':
                if body.startswith('"', i + 1):
                    chars.append('"')
                    i += 2
                    continue
                break
            chars.append(body[i])
            i += 1
        end = body.find(",", i + 1)
        end = len(body) if end < 0 else end
        tail = body[i + 1:end]
        if tail and not re.fullmatch(r"\[\d+\]", tail):
            raise UsageError(f"{option} {whole!r}: unexpected {tail!r} after a quoted name")
        return Item("".join(chars) + tail, quoted=True), end
    end = body.find(",", start)
    end = len(body) if end < 0 else end
    return Item(body[start:end].strip()), end


def names(columns: Sequence[str | int], option: str) -> Selection:
    """A selection from the Python API: strings are exact names, ints 0-based positions."""
    items = []
    for column in columns:
        if isinstance(column, int) and not isinstance(column, bool):
            items.append(Item(str(column), position=column))
        elif isinstance(column, str):
            items.append(Item(column, quoted=True))
        else:
            raise UsageError(f"{option} takes column names or positions, not {column!r}")
    return Selection(tuple(items), option=option)


_LISTED = 50  # the most names a message lists (a file of 100,000 columns has a header)


def listing(header: Sequence[str]) -> str:
    """Column names for a message: as they are, quoted where empty, holding a comma, or
    beginning or ending in a space (` amount `, which a user types as `amount`); the
    first _LISTED of them, and how many more."""
    shown = ", ".join(repr(n) if not n or "," in n or n != n.strip() else n
                      for n in header[:_LISTED]) or "none"
    more = len(header) - _LISTED
    return shown if more <= 0 else f"{shown} and {more:,} more"


def resolve(selection: Selection, header: Sequence[str], source: str) -> list[int]:
    """The positions (from 0) that `selection` chooses in `header`, in the order given,
    without repeats. Raises DataError naming the item that fits no column."""
    index: dict[str, list[int]] = {}
    for position, name in enumerate(header):
        index.setdefault(name, []).append(position)
    chosen: list[int] = []
    for item in selection.items:
        chosen.extend(_resolve_item(item, header, index, selection.option, source))
    return list(dict.fromkeys(chosen))


def _resolve_item(item: Item, header: Sequence[str], index: dict[str, list[int]],
                  option: str, source: str) -> list[int]:
    if item.position is not None:
        if not -len(header) <= item.position < len(header):
            raise DataError(f"{source}: no column at position {item.position}; it has "
                            f"{len(header)} columns")
        return [item.position % len(header)]
    if item.quoted:
        return [_name(item.text, index, option, source, header)]
    text = item.text
    if text in index or ((match := _OCCURRENCE.match(text)) and match.group(1) in index):
        return [_name(text, index, option, source, header)]
    if _DIGITS.match(text):
        return [_position(text, header, option, source)]
    for dash in (i for i, c in enumerate(text) if c == "-"):
        low, high = text[:dash].strip(), text[dash + 1:].strip()
        first = _endpoint(low, header, index, 0)
        last = _endpoint(high, header, index, len(header) - 1)
        if first is not None and last is not None and (low or high):
            step = 1 if first <= last else -1
            return list(range(first, last + step, step))
    return [_name(text, index, option, source, header)]


def _endpoint(text: str, header: Sequence[str], index: dict[str, list[int]],
              open_end: int) -> int | None:
    if not text:
        return open_end
    if text in index and len(index[text]) == 1:
        return index[text][0]
    if _DIGITS.match(text) and 1 <= int(text) <= len(header):
        return int(text) - 1
    return None


def _position(text: str, header: Sequence[str], option: str, source: str) -> int:
    number = int(text)
    if not 1 <= number <= len(header):
        hint = ""
        if number == 0:
            hint = "; positions count from 1"
        raise DataError(f"{source}: {option} {text}: no column at that position; it has "
                        f"{len(header)} columns{hint}")
    return number - 1


def _name(text: str, index: dict[str, list[int]], option: str, source: str,
          header: Sequence[str]) -> int:
    positions = index.get(text)
    match = _OCCURRENCE.match(text)
    if positions is None and match and match.group(1) in index:
        repeats = index[match.group(1)]
        k = int(match.group(2))
        if k >= len(repeats):
            raise DataError(f"{source}: {option} {text!r}: the header has {len(repeats)} "
                            f"columns named {match.group(1)!r}")
        return repeats[k]
    if positions is None:
        # The name as typed, but for its case and the spaces around it (` Amount ` for
        # amount): said, since the listing shows the difference poorly; spaces around a
        # name are kept where it is quoted (`-c '" amount "'`), so it is offered so.
        from cumtool.suggest import did_you_mean

        near = dict.fromkeys(n if n == n.strip() else f'"{n}"' for n in header
                             if n.strip().casefold() == text.strip().casefold())
        if not near:
            from cumtool.suggest import close_names

            near = dict.fromkeys(close_names(text, header))
        raise DataError(f"{source}: no column {text!r}; columns: {listing(header)}"
                        f"{'.' + did_you_mean(near) if near else ''}")
    if len(positions) > 1:
        where = ", ".join(str(p + 1) for p in positions)
        raise DataError(f"{source}: {option} {text!r} is ambiguous: the header repeats it at "
                        f"positions {where}; choose one by position or as "
                        f"'{text}[0]' .. '{text}[{len(positions) - 1}]'")
    return positions[0]


# A pandas index stored in Parquet: not a column of data, so not scanned by default.
INDEX_NAME = re.compile(r"^__index_level_\d+__$")


def select(names: Sequence[str], by_default: Sequence[bool], columns: Sequence[Selection],
           exclude: Sequence[Selection], what: str, *,
           scannable: Callable[[int], bool], unscannable: Callable[[int, list[str]], str],
           structural: Collection[int] = (), index: Collection[str] = (),
           none_hint: Callable[[], str] = str) -> list[int]:
    """The positions a run scans, for every path (the table plan, the wide path, the
    small path): -c's columns, each scannable (else DataError with `unscannable`'s
    message), or else every column scanned by default that is not a --by or --reset
    column (`structural`), unnamed, or an index; less --exclude's and -c's negated ones.
    `none_hint`: what to add where none is left (how to scan a column of numbers that is
    not scanned by default).
    """
    def resolved(selections: Iterable[Selection]) -> list[int]:
        chosen: list[int] = []
        for selection in selections:
            chosen.extend(resolve(selection, names, what))
        return list(dict.fromkeys(chosen))

    chosen = resolved(s for s in columns if not s.negated)
    excluded = set(resolved((*exclude, *(s for s in columns if s.negated))))
    for position in chosen:
        if not scannable(position):
            numeric = [names[i] for i in range(len(names)) if scannable(i)]
            raise DataError(unscannable(position, numeric))
    if not chosen:
        chosen = [i for i, name in enumerate(names) if by_default[i] and i not in structural
                  and name and not INDEX_NAME.match(name) and name not in index]
    selected = [i for i in chosen if i not in excluded]
    if not selected:
        dialect = (delimiter_hint(names[0]) if len(names) == 1
                   else excel_sep_hint(names[0]) if list(names) == ["sep=", ""] else "")
        raise DataError(f"{what}: no numeric columns to scan; columns: "
                        f"{listing(names)}{dialect or none_hint()}")
    return selected


# Excel's first line naming the delimiter (`sep=;`), which Excel and LibreOffice read so.
_EXCEL_SEP = re.compile(r"sep=.")


def excel_sep_hint(line: str) -> str:
    """For a header that is Excel's `sep=X` line: read whole (`sep=;`, X not the delimiter
    given), or split at X (`sep=`, X the delimiter given)."""
    if line == "sep=":
        return ("; its first line is Excel's sep= line, which names the delimiter, not a "
                "header: skip it (tail -n +2)")
    shown = "\\t" if line[4:] == "\t" else line[4:]
    return (f"; its first line, {line!r}, is Excel's note of the delimiter, not a header: "
            f"skip it (tail -n +2) and pass -d '{shown}'")


def delimiter_hint(header: str) -> str:
    """For a header read as one field: a ; (European), tab or | in it was the delimiter;
    or it is Excel's `sep=;` line, which names the delimiter and comes before the header."""
    if _EXCEL_SEP.fullmatch(header):
        return excel_sep_hint(header)
    for delimiter, shown in ((";", ";"), ("\t", "\\t"), ("|", "|")):
        if delimiter in header:
            extra = " (and --decimal-comma for 1,5)" if delimiter == ";" else ""
            return f"; the header holds '{shown}': pass -d '{shown}'{extra}"
    return ""
