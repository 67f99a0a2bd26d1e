"""The operations cumtool offers: a registry read from the op modules of this package,
importable without numpy (the command line's start-up and `--help` use it).

Each op is declared once, in a module here (cumsum.py; extreme.py holds cummax and cummin,
cumvar.py cumvar and cumstd): its name, help, example, options and the parameters its
scan takes (cumtool.ops.decl). The command line's commands, `--help` and completion,
`cumtool.scan`'s keywords and their checks are made from these declarations, so a new op
is a new module here (the module's `OPS`). The modules are found by listing the package;
`_ORDER` only keeps the historic order of the op list (a new op comes after these).
"""

from __future__ import annotations

import dataclasses
import importlib
import os
from collections.abc import Mapping
from typing import Any

from cumtool.errors import UsageError, option
from cumtool.ops.decl import Op, Option
from cumtool.ops.spec import ScanSpec

_SHARED = ("decl", "spec")  # modules of this package that declare no op
_ORDER = ("cumsum", "cumprod", "extreme", "logcumsumexp", "cumcount", "cummean", "cumvar",
          "ewma", "diff")


def _modules() -> list[str]:
    # A listing, not pkgutil: importing pkgutil costs the command line's start-up more.
    names = {entry.removesuffix(".py") for folder in __path__ for entry in os.listdir(folder)
             if entry.endswith(".py")}
    found = sorted(name for name in names if not name.startswith("_") and name not in _SHARED)
    return [*(m for m in _ORDER if m in found), *(m for m in found if m not in _ORDER)]


def _load() -> dict[str, Op]:
    registry: dict[str, Op] = {}
    for module in _modules():
        for op in importlib.import_module(f"{__name__}.{module}").OPS:
            if op.name in registry:
                raise RuntimeError(f"op {op.name!r} is declared twice ({module})")
            registry[op.name] = op
    return registry


REGISTRY: dict[str, Op] = _load()
OPS = tuple(REGISTRY)
NO_EXCLUSIVE = tuple(name for name, op in REGISTRY.items() if not op.exclusive)

# The options that mean something for some ops only, by flag (in the ops' order): each is
# offered (and accepted) only when at least one op of the run declares it (SEMANTICS.md).
OPTIONS: dict[str, Option] = {}
for _op in REGISTRY.values():
    for _option in _op.options:
        if OPTIONS.setdefault(_option.flag, _option) is not _option:
            raise RuntimeError(f"{_option.flag} is declared twice, differently ({_op.name})")
OPS_OF_OPTION = {flag: tuple(name for name, op in REGISTRY.items() if option in op.options)
                 for flag, option in OPTIONS.items()}
INDEXED = OPS_OF_OPTION.get("--indices", ())  # the ops whose results have a position
# The API keywords of the options (and the names of Request.params).
KEYWORDS = {option.name: option for option in OPTIONS.values()}
# Every op's scan parameters by name (a state file saves them beside ScanSpec's fields).
PARAMETERS = frozenset(name for op in REGISTRY.values() for name in op.parameters)
_CLASH = PARAMETERS & {f.name for f in dataclasses.fields(ScanSpec)}
if _CLASH:
    raise RuntimeError(f"op parameters named as ScanSpec's fields: {sorted(_CLASH)}")


def options_of(ops: list[str]) -> list[Option]:
    """The op options a run of `ops` offers, in the registry's order."""
    return [option for flag, option in OPTIONS.items() if set(OPS_OF_OPTION[flag]) & set(ops)]


def scan_params(ops: list[str], given: Mapping[str, Any], exclusive: bool = False
                ) -> dict[str, Any]:
    """Check the op options of a run of `ops` (by keyword, as given; a missing one is its
    default) and return the parameters of the ops' scans, merged. An option is refused
    only when it means nothing for every op of the run; an op that refuses --exclusive
    refuses it in a list too."""
    unknown = sorted(set(given) - set(KEYWORDS))
    if unknown:
        raise UsageError(f"{option(unknown[0])} is not an option of any op")
    values = {name: given.get(name, option.default) for name, option in KEYWORDS.items()}
    for flag, option_ in OPTIONS.items():
        owners = OPS_OF_OPTION[flag]
        if option_.given(values[option_.name]) and not set(owners) & set(ops):
            name = flag if option_.negates else option(option_.name)
            raise UsageError(f"{name} is only for {' and '.join(owners)}, not "
                             f"{','.join(ops)}")
    refusing = [op for op in ops if op in NO_EXCLUSIVE]
    if exclusive and refusing:
        raise UsageError(f"{option('exclusive')} means nothing for {refusing[0]}, whose "
                         f"first value is x[0] itself; leave {option('exclusive')} out "
                         f"(run {refusing[0]} on its own if the other ops need it)")
    params: dict[str, Any] = {}
    for name in ops:
        op = REGISTRY.get(name)  # an unknown op is refused with the op list, elsewhere
        if op is not None and op.params is not None:
            params.update(op.params({o.name: values[o.name] for o in op.options}))
    return params
