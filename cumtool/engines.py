"""The engines that can carry out a run (--engine), and the options each cannot honour.

Request.check asks here before any input is opened. A check needs the run's options and
nothing of the engine's code: the engines themselves (engine.py, and distributed.py for
Dask) load only when a run starts, and this module imports neither, so that the run's
options stay plain data that any module can take.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

from cumtool.errors import UsageError, option
from cumtool.formats.registry import BY_NAME, PARTITIONINGS, format_named, kind_from_name
from cumtool.ops.decl import Option
from cumtool.options import ENGINE_NAMES


class Options(Protocol):
    """What the checks read of a Request."""

    @property
    def op(self) -> str: ...
    @property
    def input(self) -> str: ...
    @property
    def from_format(self) -> str | None: ...
    @property
    def axis(self) -> str: ...
    @property
    def engine(self) -> str: ...
    @property
    def scheduler(self) -> str | None: ...
    def given(self) -> list[Option]: ...


def check(request: Options) -> None:
    """--engine names an engine, --scheduler goes with Dask, and the engine can honour
    every option given (UsageError otherwise)."""
    if request.engine not in ENGINES:
        raise UsageError(f"--engine {request.engine!r} is not an engine; choose from "
                         f"{', '.join(ENGINES)}")
    if request.scheduler is not None and request.engine != "dask":
        raise UsageError("--scheduler names a Dask scheduler: use it with --engine dask")
    ENGINES[request.engine](request)


def check_local(request: Options) -> None:
    """The local engine honours every option (its paths hand over what they do not)."""


def check_dask(request: Options) -> None:
    """The options --engine dask (distributed.py) cannot honour, refused before any input
    is read."""
    engine = option("engine", "dask")
    if request.input == "-":
        raise UsageError(f"{engine} reads files or URLs, which its workers open themselves; "
                         "it cannot read standard input")
    from cumtool.options import BY_FIELD, honoured
    from cumtool.options import named as option_named
    from cumtool.tables import table_axis

    try:
        across = table_axis(request.axis) == 1
    except UsageError:
        across = False  # not a table's axis: the plan says so, as on the local engine
    if across:
        raise UsageError(f"{option('axis', 'columns')} is not supported with {engine}: "
                         "rows are independent, run it on the local engine")
    # Every option not declared as honoured by Dask (cumtool.options, cumtool.ops).
    for declared in request.given():
        if not honoured(declared, "dask") and declared is not BY_FIELD["axis"]:
            raise UsageError(f"{option_named(declared)} is not supported with {engine}; run it on "
                             f"the local engine ({option('engine', 'local')})")
    named = kind_from_name(request.input)
    fmt = (request.from_format or (named.format if named else "")).lower()
    if fmt in BY_NAME and fmt not in PARTITIONINGS:
        raise UsageError(not_for_dask(request.input, fmt))


def not_for_dask(name: str, fmt: str) -> str:
    """The refusal of an input whose format Dask does not read (an array): by the name
    of each format it reads, from the registry's partitionings."""
    what = "an array" if format_named(fmt).kind == "array" else fmt
    return (f"{option('engine', 'dask')} scans tables ({', '.join(PARTITIONINGS)}); {name} "
            f"is {what}: run it on the local engine")


# Each engine by its --engine name, with its check.
ENGINES: dict[str, Callable[[Options], None]] = {"local": check_local, "dask": check_dask}
if tuple(ENGINES) != ENGINE_NAMES:  # --engine's choices (cumtool.options) are these
    raise RuntimeError(f"engines {tuple(ENGINES)} are declared as {ENGINE_NAMES}")
