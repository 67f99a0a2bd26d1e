"""The documentation in docs/ stays true: the option reference is what the generator makes
from `--help` now, every link between the pages resolves, README stays short and names
every op. The check of docs/semantics.md against the behaviour contract, which lives
outside the repository, is .ci/contract_check.py, which CI runs after the tests; its
logic is tested here on contracts written for the test.

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
from helpers import ok

DOCS = REPO / "docs"
README = REPO / "README.md"
PAGES = [README, REPO / "CHANGELOG.md", *sorted(DOCS.glob("*.md"))]
# Pages that README links to and that another branch is writing; drop a name once its
# page has landed (the test then checks the link like any other).
PENDING: set[Path] = set()
LINK = re.compile(r"\]\((?P<target>[^)\s]+)\)")


def _script(name: str, path: Path) -> ModuleType:
    """A script of the repository (not a package module), loaded from its file."""
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _generator() -> ModuleType:
    return _script("docs_generate", DOCS / "generate.py")


# CI's check of docs/semantics.md against the contract (outside the repository).
contract_check = _script("contract_check", REPO / ".ci" / "contract_check.py")


def test_options_reference_is_what_the_generator_makes_now() -> None:
    generate = _generator()
    expected = generate.render()
    current = (DOCS / "options.md").read_text(encoding="utf-8")
    assert current == expected, (
        "docs/options.md differs from the CLI's --help output; regenerate it with "
        "`python docs/generate.py` (never edit it by hand) and commit the result")


def test_api_signature_is_what_the_generator_makes_now() -> None:
    """docs/api.md opens with cumtool.scan's signature as generate.py writes it from the
    declared keywords."""
    generate = _generator()
    current = (DOCS / "api.md").read_text(encoding="utf-8")
    assert current == generate.api_md(current), (
        "docs/api.md's signature is not cumtool.scan's: run `python docs/generate.py`")
    assert current.split("```python\n", 1)[1].startswith(
        "cumtool.scan(data, op, axis=0, dtype=None, *, columns=None, exclude=None,\n")


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


def test_options_reference_says_which_paths_honour_each_option() -> None:
    """A row of the table of paths for every declared option, as it declares them."""
    from cumtool.ops import OPTIONS
    from cumtool.options import FLAGS

    text = (DOCS / "options.md").read_text(encoding="utf-8")
    rows = {row.split(" | ")[0].strip("| `"): row for row in text.splitlines()
            if row.startswith("| `")}
    assert list(rows) == [", ".join(o.spellings) for o in (*FLAGS, *OPTIONS.values())]
    assert rows["--by"] == "| `--by` | `by=` | yes | refused | refused | tables (not npy) |"
    assert rows["--encoding"] == "| `--encoding` |  | hands over | yes | yes | csv, tsv |"
    assert rows["--max-record-size"] == ("| `--max-record-size` |  | hands over | yes | yes | "
                                         "csv, tsv, jsonl |")
    assert rows["--sheet"] == "| `--sheet` |  | hands over | - | yes | xlsx, xls, ods |"
    assert rows["--precision"] == "| `--precision` |  | - | - | yes |  |"
    assert rows["--times"] == ("| `--times` | `times=` | hands over | refused | refused | "
                               "tables (not npy) |")


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


def _ours() -> str:
    return (DOCS / "semantics.md").read_text(encoding="utf-8")


def test_pending_contract_entries_are_not_yet_documented() -> None:
    """An entry of contract_check's pending lists that docs/semantics.md now covers has
    landed: drop it, so the contract check checks it again. (Known without the contract.)"""
    landed = contract_check.landed(_ours())
    assert not landed, f"docs/semantics.md covers {landed}: remove them from the pending lists"


def test_every_pending_entry_names_its_issue() -> None:
    pending = {**contract_check.PENDING_SECTIONS, **contract_check.PENDING_OPTIONS}
    assert all(isinstance(n, int) and n > 0 for n in pending.values()), pending
    assert all(o.startswith("--") for o in contract_check.PENDING_OPTIONS)


# The contract check's logic, on contracts written here: the real one is outside the
# repository, and CI runs the check against it (.ci/run).
OURS = "## Operations\nThe ops.\n## Axes (rows, columns)\n`--axis`, `--dim`.\n"


@pytest.fixture
def pending(monkeypatch):
    """Pending lists as they were while issue 36 was open, whatever they hold now."""
    monkeypatch.setattr(contract_check, "PENDING_SECTIONS", {"Periods and shares": 36})
    monkeypatch.setattr(contract_check, "PENDING_OPTIONS", {
        "--period": 36, "--time": 36, "--year-start": 36, "--share": 36, "--times": 36})


@pytest.mark.parametrize(("contract", "found"), [
    pytest.param("## Operations\n## Axes\n`--axis` and `--dim`\n", [], id="kept"),
    pytest.param("## Operations\n## Periods and shares\n`--axis`, `--period`, `--time`, "
                 "`--year-start`, `--share`, `--times`\n", [], id="pending-left-out"),
    pytest.param("## Operations\n## Axes\n## Charts\n`--axis`\n",
                 ["docs/semantics.md lacks the contract's sections ['Charts']: write them, or "
                  "list them in PENDING_SECTIONS with the issue that builds them"],
                 id="section-missing"),
    pytest.param("## Axes\n`--axis`, `--growing`, `--dim-x`\n",
                 ["docs/semantics.md does not mention the contract's options ['--dim-x', "
                  "'--growing']: document them, or list them in PENDING_OPTIONS with the "
                  "issue that builds them"], id="option-missing"),
])
def test_the_contract_check_finds_what_the_page_lacks(pending, contract, found):
    pending = "## Periods and shares\n`--period`, `--time`, `--year-start`, `--share`, `--times`"
    with_pending = contract if "Periods" in contract else contract + pending
    assert contract_check.findings(with_pending, OURS) == found


def test_the_contract_check_fails_on_a_pending_entry_that_is_documented(pending):
    contract = OURS + "## Periods and shares\n`--period`, `--time`, `--year-start`, " \
        "`--share`, `--times`\n"
    ours = OURS + "## Periods and shares\n`--period` and `--time`.\n"
    assert contract_check.findings(contract, ours) == [
        "docs/semantics.md covers [\"section 'Periods and shares' (issue 36)\", 'option "
        "--period (issue 36)', 'option --time (issue 36)'], which are listed as pending: "
        "remove them from PENDING_SECTIONS / PENDING_OPTIONS in .ci/contract_check.py"]


def test_the_contract_check_fails_on_a_pending_entry_the_contract_dropped(pending):
    assert contract_check.findings(OURS, OURS) == [
        "the contract has no [\"section 'Periods and shares'\", 'option --period', "
        "'option --time', 'option --year-start', 'option --share', 'option --times']: "
        "remove them from the pending lists in .ci/contract_check.py"]


def test_the_contract_check_exit_status(pending, tmp_path, capsys):
    contract = tmp_path / "SEMANTICS.md"
    assert contract_check.main([str(tmp_path / "absent.md")]) == 2
    assert "cannot read the contract" in capsys.readouterr().err
    contract.write_text("## Not in ours\n", encoding="utf-8")
    assert contract_check.main([str(contract)]) == 1
    assert capsys.readouterr().err.startswith(
        "contract check: docs/semantics.md lacks the contract's sections ['Not in ours']")


def test_readme_links_every_page_of_docs() -> None:
    text = README.read_text(encoding="utf-8")
    for page in sorted(DOCS.glob("*.md")):
        assert f"(docs/{page.name})" in text, f"README does not link docs/{page.name}"


def test_semantics_says_how_cummean_differs_from_pandas(invoke) -> None:
    """The page's example holds: a plain sum ends ten 0.1 at 0.09999999999999999 where
    pandas' compensated expanding().mean() gives 0.1, and --compensated gives 0.1 too."""
    page = " ".join(_ours().split())
    assert "`expanding().mean()`" in page
    assert "cummean of ten 0.1 ends 0.09999999999999999, pandas' 0.1" in page
    data = "x\n" + "0.1\n" * 10
    assert ok(invoke("cummean", input=data)).stdout.splitlines()[-1] == "0.09999999999999999"
    assert ok(invoke("cummean", "--compensated", input=data)).stdout.splitlines()[-1] == "0.1"
