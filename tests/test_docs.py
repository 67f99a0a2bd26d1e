"""The documentation in docs/ stays true: the option reference is what the generator makes
from `--help` now, every link between the pages resolves, README stays short, and
docs/semantics.md keeps every section and option of the behaviour contract that is built
(the contract runs ahead of the code: PENDING_SECTIONS and PENDING_OPTIONS list the rest).

The examples in the pages are run by tests/test_readme.py, with README's.
"""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path
from types import ModuleType

import click
import pytest
from conftest import REPO

DOCS = REPO / "docs"
README = REPO / "README.md"
PAGES = [README, REPO / "CHANGELOG.md", *sorted(DOCS.glob("*.md"))]
# The contract as agreed, kept beside the repository (CI's clone has shared/ next to it).
CONTRACT = REPO.parent / "shared" / "SEMANTICS.md"
# The contract runs ahead of the code: its sections and options that are not built yet,
# each with the issue that builds it. The contract tests leave these out; once
# docs/semantics.md covers one, test_pending_contract_entries_are_not_yet_documented fails
# until its entry is dropped here, so the list empties as the issues land.
PENDING_SECTIONS: dict[str, int] = {}
PENDING_OPTIONS: dict[str, int] = {}
# Pages that README links to and that another branch is writing; drop a name once its
# page has landed (the test then checks the link like any other).
PENDING: set[Path] = set()
LINK = re.compile(r"\]\((?P<target>[^)\s]+)\)")


def _generator() -> ModuleType:
    spec = importlib.util.spec_from_file_location("docs_generate", DOCS / "generate.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_options_reference_is_what_the_generator_makes_now() -> None:
    generate = _generator()
    expected = generate.render()
    current = (DOCS / "options.md").read_text(encoding="utf-8")
    assert current == expected, (
        "docs/options.md differs from the CLI's --help output; regenerate it with "
        "`python docs/generate.py` (never edit it by hand) and commit the result")


def test_options_reference_has_every_command_and_option() -> None:
    """A check of the generator itself: it does not lose a command or an option."""
    from cumtool.cli import main

    text = (DOCS / "options.md").read_text(encoding="utf-8")
    ctx = click.Context(main)
    for name in main.list_commands(ctx):
        command = main.get_command(ctx, name)
        assert command is not None
        assert f"$ cumtool {name} --help" in text, name
        for param in command.params:
            for opt in param.opts:
                if opt.startswith("-"):
                    assert re.search(rf"(?<![\w-]){re.escape(opt)}(?![\w-])", text), opt


def _slug(heading: str) -> str:
    """GitHub's anchor for a Markdown heading."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def _anchors(page: Path) -> set[str]:
    text = re.sub(r"^```.*?^```", "", page.read_text(encoding="utf-8"), flags=re.M | re.S)
    return {_slug(m[1]) for m in re.finditer(r"^#+ (.*)$", text, re.M)}


@pytest.mark.parametrize("page", [pytest.param(p, id=p.name) for p in PAGES])
def test_links_between_pages_resolve(page: Path) -> None:
    text = page.read_text(encoding="utf-8")
    for match in LINK.finditer(text):
        target = match["target"]
        if re.match(r"[a-z]+:", target):
            continue  # a web address
        path_part, _, anchor = target.partition("#")
        path = (page.parent / path_part).resolve() if path_part else page
        where = f"{page.relative_to(REPO)}: link {target}"
        assert REPO in path.parents or path == REPO, f"{where} leaves the repository"
        if path in PENDING:
            continue
        assert path.exists(), f"{where} points at nothing"
        if anchor and path.suffix == ".md":
            assert anchor in _anchors(path), f"{where}: no such heading"


def test_readme_names_every_op() -> None:
    """README's Usage says what OP may be: every op, so that a new one is not left out."""
    from cumtool.ops import OPS

    text = README.read_text(encoding="utf-8")
    sentence = re.search(r"^`OP` is .*?\.\s", text, re.M | re.S)
    assert sentence is not None, "README's Usage has no sentence `OP` is ..."
    named = re.findall(r"`([a-z]+)`", sentence[0])
    assert sorted(named) == sorted(OPS), (
        f"README's `OP` is ... names {named}; the ops are {list(OPS)}")


def test_readme_is_short() -> None:
    size = len(README.read_text(encoding="utf-8"))
    assert size < 12_000, f"README.md is {size} characters; move detail to docs/"


def _sections(text: str) -> list[str]:
    """The `## ` headings, without a closing remark in parentheses."""
    return [re.sub(r"\s*\([^)]*\)$", "", m[1].strip())
            for m in re.finditer(r"^## (.*)$", text, re.M)]


def _contract() -> str:
    """The contract's text; a run without it fails (a skip would pass unseen)."""
    if not CONTRACT.exists():
        pytest.fail(f"{CONTRACT} is missing: the behaviour contract must be beside the "
                    f"repository, as shared/SEMANTICS.md next to {REPO.name}/")
    return CONTRACT.read_text(encoding="utf-8")


def _options(text: str) -> set[str]:
    return set(re.findall(r"(?<![\w-])--[a-z][a-z-]*", text))


def _mentions(text: str, option: str) -> bool:
    return re.search(rf"(?<![\w-]){re.escape(option)}(?![\w-])", text) is not None


def _ours() -> str:
    return (DOCS / "semantics.md").read_text(encoding="utf-8")


def test_semantics_page_covers_every_section_of_the_contract() -> None:
    ours = set(_sections(_ours()))
    missing = [s for s in _sections(_contract()) if s not in ours and s not in PENDING_SECTIONS]
    assert not missing, f"docs/semantics.md lacks the contract's sections {missing}"


def test_semantics_page_names_every_option_of_the_contract() -> None:
    ours = _ours()
    missing = sorted(o for o in _options(_contract())
                     if not _mentions(ours, o) and o not in PENDING_OPTIONS)
    assert not missing, f"docs/semantics.md does not mention {missing}"


def test_pending_contract_entries_are_not_yet_documented() -> None:
    """An entry of PENDING_SECTIONS or PENDING_OPTIONS that docs/semantics.md now covers
    has landed: drop it, so the contract tests check it again."""
    ours = _ours()
    landed = [f"{s} (issue {n})" for s, n in PENDING_SECTIONS.items() if s in _sections(ours)]
    landed += [f"{o} (issue {n})" for o, n in PENDING_OPTIONS.items() if _mentions(ours, o)]
    assert not landed, f"docs/semantics.md covers {landed}: remove them from the pending lists"


def test_pending_contract_entries_are_in_the_contract() -> None:
    """A pending entry the contract no longer has (renamed, dropped) would hide nothing
    and mislead: the lists hold exactly the contract's sections and options."""
    contract = _contract()
    gone = [s for s in PENDING_SECTIONS if s not in _sections(contract)]
    gone += [o for o in PENDING_OPTIONS if o not in _options(contract)]
    assert not gone, f"the contract has no {gone}: remove them from the pending lists"


def test_readme_links_every_page_of_docs() -> None:
    text = README.read_text(encoding="utf-8")
    for page in sorted(DOCS.glob("*.md")):
        assert f"(docs/{page.name})" in text, f"README does not link docs/{page.name}"
