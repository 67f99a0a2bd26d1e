"""The "Did you mean ...?" of a mistyped op or option: close spellings, and the names that
users of other tools (pandas, polars, csvkit, xsv) type for cumtool's options. Imported
only when the command line holds a mistake, so the tables cost a correct run nothing."""

from __future__ import annotations

from collections.abc import Iterable
from difflib import SequenceMatcher

# What users of other tools type, and cumtool's option for it: the one table of synonyms.
# A synonym is offered only where the command has the option it stands for.
OPTION_SYNONYMS = {
    "--by": ("--group", "--groups", "--groupby", "--group-by", "--partition",
             "--partition-by", "--key", "--keys"),
    "--delimiter": ("--sep", "--separator", "--delim", "--field-separator", "--fs"),
    "--output": ("--out", "--outfile", "--output-file", "--out-file"),
    "--columns": ("--cols", "--col", "--column", "--usecols", "--select"),
    "--dtype": ("--type", "--cast", "--astype", "--as-type"),
    "--skipna": ("--skip-na", "--skip-nan", "--dropna", "--drop-na", "--ignore-nan",
                 "--ignore-na"),
    "--no-header": ("--header-less", "--headerless", "--noheader", "--no-headers",
                    "--without-header"),
    "--na": ("--na-values", "--null-values", "--nulls", "--null"),
    "--from": ("--input-format", "--in-format"),
    "--to": ("--output-format", "--out-format"),
}
_SYNONYM_OF = {typed: ours for ours, typed_names in OPTION_SYNONYMS.items()
               for typed in typed_names}
_MOST = 3  # suggestions offered at most


def did_you_mean(names: Iterable[str]) -> str:
    """` Did you mean 'a'?`, ` Did you mean 'a' or 'b'?`, or '' where there are none."""
    quoted = [repr(name) for name in names]
    return f" Did you mean {_and(quoted, 'or')}?" if quoted else ""


def _and(words: list[str], conjunction: str = "and") -> str:
    """a; a and b; a, b and c."""
    return words[0] if len(words) == 1 else f"{', '.join(words[:-1])} {conjunction} {words[-1]}"


def close_options(typed: str, options: Iterable[str]) -> list[str]:
    """The command's long options that `typed` may have meant: the option a synonym stands
    for (--group: --by), else the options that `typed` begins (--delim), then those one or
    two edits away (--ouput, --colums, --delimeter)."""
    if not typed.startswith("--"):
        return []  # a short option is one letter: every other one is as close
    offered = sorted({o for o in options if o.startswith("--")})
    key = typed.lower().replace("_", "-")
    synonym = _SYNONYM_OF.get(key)
    if synonym in offered:
        return [synonym]
    found: list[str] = []
    if len(key) >= 5:  # `--` and three letters: `--de` begins too much to mean anything
        found += [o for o in offered if o.startswith(key) and o != key]
    distances = ((_distance(key, o), o) for o in offered)
    found += [o for d, o in sorted(distances) if d <= _tolerance(key)]
    unique = list(dict.fromkeys(found))
    return [o for o in unique if o != typed][:_MOST]


def close_names(typed: str, names: Iterable[str]) -> list[str]:
    """The column names `typed` may have meant, where none is it but for case and spaces:
    those it begins (`stor`: store), then those one or two edits away (`unit`, `reveune`),
    compared without case. A header of more names than a person types is not searched."""
    names = list(dict.fromkeys(names))
    if len(names) > 10_000:
        return []
    key = typed.strip().casefold()
    found = [n for n in names if len(key) >= 3 and n.casefold().startswith(key)]
    distances = ((_distance(key, n.casefold()), n) for n in names)
    found += [n for d, n in sorted(distances) if d <= _tolerance(key) - (len(key) < 4)]
    return [n for n in dict.fromkeys(found) if n != typed][:_MOST]


def _tolerance(typed: str) -> int:
    """Edits allowed between a typed option and one it may mean: one for a short name
    (--fro: --from), two from eight letters on (--delimetre: --delimiter)."""
    return 1 if len(typed) < 10 else 2


def _distance(a: str, b: str) -> int:
    """Edits (insert, delete, replace, swap two neighbours) that turn a into b."""
    previous2: list[int] = []
    previous = list(range(len(b) + 1))
    for i, x in enumerate(a, 1):
        current = [i]
        for j, y in enumerate(b, 1):
            cost = min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (x != y))
            if i > 1 and j > 1 and x == b[j - 2] and a[i - 2] == y:
                cost = min(cost, previous2[j - 2] + 1)
            current.append(cost)
        previous2, previous = previous, current
    return previous[-1]


def unknown_op(name: str, ops: tuple[str, ...]) -> str:
    """The message for a command that is no op and no list of ops: what was close, or
    which op of a list is wrong."""
    message = f"No such command {name!r}."
    parts = name.split(",")
    if len(parts) == 1:
        return message + did_you_mean(_close_ops(name, ops))
    unknown = [part for part in parts if part not in ops]
    if not unknown:
        twice = list(dict.fromkeys(op for i, op in enumerate(parts) if op in parts[:i]))
        return (f"No such command {name!r}: each op may be named once, and "
                f"{_and(twice)} {'is' if len(twice) == 1 else 'are'} named twice.")
    meant = {part: _close_ops(part, ops)[:1] for part in unknown}
    fixed = [meant[part][0] if meant.get(part) else part for part in parts]
    if all(meant.values()) and len(set(fixed)) == len(fixed):
        return message + did_you_mean([",".join(fixed)])
    return f"No such command {name!r}: {_and([repr(u) for u in unknown])} " + (
        "is not an op." if len(unknown) == 1 else "are not ops.")


def _close_ops(typed: str, ops: tuple[str, ...]) -> list[str]:
    """The ops most like `typed` (difflib's likeness, at least 0.6), best first: those
    nearly as like as the best (cumsumm: cumsum, not also logcumsumexp)."""
    scored = []
    for op in ops:
        matcher = SequenceMatcher(None, typed, op)
        if matcher.real_quick_ratio() >= 0.6 and matcher.quick_ratio() >= 0.6:
            scored.append((matcher.ratio(), op))
    scored = sorted((s for s in scored if s[0] >= 0.6), key=lambda s: -s[0])
    return [op for score, op in scored if score >= scored[0][0] - 0.1][:_MOST]


def close_keywords(typed: str, known: Iterable[str]) -> str:
    """`; did you mean reverse=?`: the keywords close to `typed`, found as the command line
    finds close options (spellings, and other tools' names: group= is by=), or ''."""
    def flag(name: str) -> str:
        return "--" + name.replace("_", "-")

    close = close_options(flag(typed), [flag(name) for name in known])
    named = [f"{name.removeprefix('--').replace('-', '_')}=" for name in close]
    return f"; did you mean {' or '.join(named)}?" if named else ""
