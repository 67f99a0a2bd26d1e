"""The package's import structure, read from the source with ast: no import cycle, no
module taking another module's private name, and no layer importing a layer above it.

Every import counts, wherever it is written: at module level, inside a function (the lazy
imports that keep start-up fast) and under TYPE_CHECKING (a type-only import is still a
dependency a reader must follow). A compiled extension (`_sequential`, `_csvtext`: a .c
file or a .pyi stub and no .py) is a module of its own: `from cumtool._ext import
_sequential` depends on the extension.

Today's code breaks these rules in places. Each break is listed below, with what ties it,
as an allow-list that only shrinks: a new break fails the test, and so does a listed one
that no longer exists (delete it from the list, so that it cannot come back unnoticed).
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "cumtool"

# Lowest first. A module may import modules of its own layer and of the layers below.
# A module not named here fails the test: say where a new module belongs.
LAYERS: list[tuple[str, tuple[str, ...]]] = [
    ("errors", ("errors",)),
    # Shared vocabulary and helpers that know nothing of files or scans: option words,
    # -c syntax, the ops' declarations (ops/decl, ops/spec: names, help, options and
    # their checks),
    # Arrow <-> numpy, where a file lives, notes on stderr, the C extensions (and the
    # vendored yyjson and ffc.h, C that _numtext.c includes), number text, "did you mean"
    # for a mistyped name. The format registry (formats/__init__: names, extensions,
    # option and hint types) imports only errors: tables and kernels may use it.
    ("base", ("choices", "columns", "ops.decl", "ops.spec", "columnar", "remote",
              "view", "notes", "native", "numtext", "suggest", "_ext", "_ext._sequential",
              "_ext._csvtext", "_ext._numtext", "_ext._jsonl", "_ext.yyjson.*", "formats",
              "formats.partitioning")),
    # The scan kernels and running statistics on numpy blocks; an op module holds its own,
    # and the op registry (ops/__init__) loads the op modules by name.
    ("kernels", ("ops", "ops.*", "blocks", "kernels", "stats", "groups", "grouped",
                 "distinct", "periods", "carries")),
    # Tables in memory: the plan that selects columns and runs the kernels on batches.
    ("core", ("tables",)),
    # Bytes <-> batches and blocks: outputs, the formats, opening inputs, choosing writers.
    ("io", ("commit", "staging", "output", "fingerprint", "pipeline", "inputs", "formats.*",
            "sources", "sinks")),
    # Every general option declared once, one run's options as plain data (Request),
    # and what each engine refuses of them.
    ("options", ("options", "engines", "request")),
    # The engines and the paths they take.
    # The CSV format's own engine (formats/csv/fast, formats/csv/small) drives whole runs:
    # its modules live with the format and stand in this layer.
    ("run", ("state", "runner", "formats.csv.small", "formats.csv.fast", "widerun",
             "engine", "datasets", "distributed")),
    # What users call: the Python API and the command line.
    ("surface", ("", "api", "params", "completion", "cli", "launch", "__main__")),
]

# Import edges that lie on a cycle today, each `importer -> imported`. Cut one and the
# edges it kept on a cycle drop out too: the test then names them, to delete here.
ALLOWED_CYCLE_EDGES: set[str] = set()

# `importer takes owner._name` (from owner import _name) or `importer uses owner._name`
# (owner._name through a module imported as a name).
ALLOWED_PRIVATE: set[str] = set()

# `importer -> imported` where the imported module is in a higher layer. Readers and
# writers see the run's options through Protocols (formats.ReadRequest, WriteRequest).
ALLOWED_UPWARD: set[str] = set()


# Reading the package -----------------------------------------------------------------------

def _modules(package: Path = PACKAGE) -> dict[str, Path | None]:
    """Every module by dotted name relative to the package ("" is its __init__, "formats"
    the formats package); compiled extensions map to None (there is nothing to parse)."""
    found: dict[str, Path | None] = {}
    for path in sorted(package.rglob("*")):
        relative = path.relative_to(package).with_suffix("")
        name = ".".join(relative.parts)
        if path.suffix == ".py":
            found[name.removesuffix("__init__").rstrip(".")] = path
        elif path.suffix in (".c", ".pyi") and not path.with_suffix(".py").exists():
            found.setdefault(name, None)
    return found


def _target(dotted: str, modules: dict[str, Path | None]) -> str | None:
    """The module an absolute `cumtool...` name lives in (a name inside a module resolves
    to the module), relative to the package; None outside the package."""
    if dotted != "cumtool" and not dotted.startswith("cumtool."):
        return None
    name = dotted.removeprefix("cumtool").lstrip(".")
    while name not in modules and name:
        name = name.rpartition(".")[0]
    return name if name in modules else None


def _graph(package: Path = PACKAGE) -> tuple[dict[str, set[str]], set[str]]:
    """The import edges of every module, and the private names taken across modules."""
    modules = _modules(package)
    edges: dict[str, set[str]] = {m: set() for m in modules}
    private: set[str] = set()
    for module, path in modules.items():
        if path is None:
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        home = module if path.name == "__init__.py" else module.rpartition(".")[0]
        aliases: dict[str, str] = {}  # a local name bound to a module of the package
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                for alias in node.names:
                    found = _target(alias.name, modules)
                    if found is None or found == module:
                        continue
                    edges[module].add(found)
                    if alias.asname:
                        aliases[alias.asname] = found
                    else:  # `import cumtool.x` binds `cumtool`
                        aliases[alias.name.split(".")[0]] = ""
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    parts = ["cumtool", *filter(None, home.split("."))]
                    parts = parts[: len(parts) - (node.level - 1)]
                    base = ".".join(parts + ([node.module] if node.module else []))
                else:
                    base = node.module or ""
                owner = _target(base, modules)
                if owner is None:
                    continue
                for alias in node.names:
                    submodule = f"{owner}.{alias.name}".lstrip(".")
                    if _target(f"{base}.{alias.name}", modules) == submodule:
                        if submodule != module:  # a module, not a name in one
                            edges[module].add(submodule)
                            aliases[alias.asname or alias.name] = submodule
                        continue
                    if owner != module:
                        edges[module].add(owner)
                        if _is_private(alias.name):
                            private.add(f"{module} takes {owner}.{alias.name}")
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute) and _is_private(node.attr):
                owner = _owner(node.value, aliases, modules)
                if owner is not None and owner != module:
                    private.add(f"{module} uses {owner}.{node.attr}")
            elif _loads_by_name(node):
                edges[module] |= _loaded_by_name(node, module, home, modules)
    return edges, private


def _loads_by_name(node: ast.AST) -> bool:
    """An `importlib.import_module(...)` or `__import__(...)` call: an import the
    statements above do not show (the op registry loads its modules so)."""
    if not isinstance(node, ast.Call):
        return False
    function = node.func
    return (isinstance(function, ast.Attribute) and function.attr == "import_module") or (
        isinstance(function, ast.Name) and function.id in ("import_module", "__import__"))


def _loaded_by_name(node: ast.Call, module: str, home: str,
                    modules: dict[str, Path | None]) -> set[str]:
    """The modules a call may load: the one a constant names, else every module under
    the package its name starts with (`f"{__name__}.{name}"`: all of this package's)."""
    argument = node.args[0] if node.args else None
    if isinstance(argument, ast.Constant) and isinstance(argument.value, str):
        found = _target(argument.value, modules)
        return set() if found is None or found == module else {found}
    if isinstance(argument, ast.JoinedStr) and argument.values and isinstance(
            argument.values[0], ast.Constant) and str(argument.values[0].value).startswith(
            "cumtool."):
        # f"cumtool.formats.{package}": each name put in is one part of a dotted name,
        # so this loads a module one level below cumtool.formats (not every one under it)
        pattern = "".join(re.escape(str(part.value)) if isinstance(part, ast.Constant)
                          else "[^.]+" for part in argument.values)
        return {m for m in modules if m != module
                and re.fullmatch(pattern, "cumtool." + m if m else "cumtool")}
    # a name built otherwise: assume any module of the package it is called from
    return {m for m in modules if m != module and m.startswith(f"{home}.")}


def _is_private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def _owner(node: ast.expr, aliases: dict[str, str],
           modules: dict[str, Path | None]) -> str | None:
    """The module an expression such as `engine` or `cumtool.formats.csv` names, if any."""
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.insert(0, node.attr)
        node = node.value
    if not isinstance(node, ast.Name) or node.id not in aliases:
        return None
    name = ".".join([aliases[node.id], *parts]).lstrip(".")
    return name if name in modules else None


def _cycle_edges(edges: dict[str, set[str]]) -> set[str]:
    """The edges that lie on a cycle: those inside a strongly connected component."""
    reach = {m: _reachable(m, edges) for m in edges}
    return {f"{a} -> {b}" for a in edges for b in edges[a] if a in reach[b]}


def _reachable(start: str, edges: dict[str, set[str]]) -> set[str]:
    seen: set[str] = set()
    todo = [start]
    while todo:
        for nxt in edges[todo.pop()]:
            if nxt not in seen:
                seen.add(nxt)
                todo.append(nxt)
    return seen


def _layer_of(module: str) -> int | None:
    for rank, (_name, members) in enumerate(LAYERS):  # a module named alone, first
        if module in members:
            return rank
    for rank, (_name, members) in enumerate(LAYERS):
        for pattern in members:
            if module == pattern or (pattern.endswith(".*")
                                     and module.startswith(pattern[:-1])):
                return rank
    return None


def _shown(name: str) -> str:
    return name or "cumtool (__init__)"


def _check(found: set[str], allowed: set[str], what: str, where: str) -> None:
    new, stale = sorted(found - allowed), sorted(allowed - found)
    assert not new, f"new {what} (fix it; do not add it to {where}): " + "; ".join(new)
    assert not stale, (f"{what} that no longer exist: delete them from {where} so they "
                       "cannot come back: " + "; ".join(stale))


# The rules ----------------------------------------------------------------------------------

def test_no_import_cycle() -> None:
    edges, _private = _graph()
    _check(_cycle_edges(edges), ALLOWED_CYCLE_EDGES, "import edges on a cycle",
           "ALLOWED_CYCLE_EDGES")


def test_no_private_name_taken_across_modules() -> None:
    _edges, private = _graph()
    _check(private, ALLOWED_PRIVATE, "private names taken from another module",
           "ALLOWED_PRIVATE")


def test_every_module_has_a_layer() -> None:
    missing = [_shown(m) for m in _modules() if _layer_of(m) is None]
    assert not missing, f"modules in no layer of LAYERS (add them where they belong): {missing}"


def test_no_layer_imports_a_higher_one() -> None:
    edges, _private = _graph()
    upward = {f"{a} -> {b}" for a in edges for b in edges[a]
              if (_layer_of(a) or 0) < (_layer_of(b) or 0)}
    _check(upward, ALLOWED_UPWARD, "imports of a higher layer", "ALLOWED_UPWARD")


def test_the_reading_sees_every_kind_of_import(tmp_path: Path) -> None:
    """The parse itself, on a made-up package: lazy and TYPE_CHECKING imports count, a
    compiled extension is a module of its own, and private names are seen either way."""
    files = {
        "__init__.py": "def scan():\n    from cumtool.api import scan\n",
        "api.py": "from cumtool import kernels\nx = kernels._helper\n",
        "kernels.py": "from cumtool import _ext\n",
        "_ext.pyi": "",
        "formats/__init__.py": "from typing import TYPE_CHECKING\n"
                               "if TYPE_CHECKING:\n    from cumtool.request import R\n",
        "formats/csv.py": "from . import wide\nfrom .wide import _cells\n",
        "formats/wide.py": "import cumtool.formats.csv\n"
                           "y = cumtool.formats.csv._layout\n",
        "request.py": "from cumtool.formats import csv as c\n",
    }
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(exist_ok=True)
        (tmp_path / name).write_text(text)
    edges, private = _graph(tmp_path)
    assert edges == {"": {"api"}, "api": {"kernels"}, "kernels": {"_ext"}, "_ext": set(),
                     "formats": {"request"}, "formats.csv": {"formats.wide"},
                     "formats.wide": {"formats.csv"}, "request": {"formats.csv"}}
    assert private == {"api uses kernels._helper", "formats.csv takes formats.wide._cells",
                       "formats.wide uses formats.csv._layout"}
    assert _cycle_edges(edges) == {"formats.csv -> formats.wide",
                                   "formats.wide -> formats.csv"}


def test_modules_loaded_by_name_count_as_imports() -> None:
    """The op registry loads its modules through importlib: the checker sees those
    edges, so an op module that imported kernels (which imports the registry) would be
    a cycle here."""
    edges, _private = _graph()
    assert {"ops.cumsum", "ops.extreme", "ops.cumnunique"} <= edges["ops"]
    assert "kernels" not in _reachable("ops", edges)
