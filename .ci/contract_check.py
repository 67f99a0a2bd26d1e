"""docs/semantics.md against the behaviour contract as agreed (SEMANTICS.md, kept outside
the repository: CI's clone has it at ../shared/SEMANTICS.md). Not a test file: the tests
read nothing outside the repository, so CI (.ci/run) runs this after them:

    python .ci/contract_check.py ../shared/SEMANTICS.md

It checks that docs/semantics.md has every `## ` section of the contract and mentions
every option the contract names. The contract runs ahead of the code: PENDING_SECTIONS
and PENDING_OPTIONS list what is not built yet, each with the issue that builds it. Once
docs/semantics.md covers a pending entry, the check fails until the entry is dropped here,
so the lists empty as the issues land; an entry the contract no longer has fails too.

Exit status: 0 the page keeps the contract, 1 it does not (each finding on a line of its
own), 2 the contract cannot be read.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

OURS = Path(__file__).resolve().parent.parent / "docs" / "semantics.md"

# The contract's sections and options not built yet, each with the issue that builds it.
PENDING_SECTIONS: dict[str, int] = {}
PENDING_OPTIONS: dict[str, int] = {}


def sections(text: str) -> list[str]:
    """The `## ` headings, without a closing remark in parentheses."""
    return [re.sub(r"\s*\([^)]*\)$", "", m[1].strip())
            for m in re.finditer(r"^## (.*)$", text, re.M)]


def options(text: str) -> set[str]:
    return set(re.findall(r"(?<![\w-])--[a-z][a-z-]*", text))


def mentions(text: str, option: str) -> bool:
    return re.search(rf"(?<![\w-]){re.escape(option)}(?![\w-])", text) is not None


def landed(ours: str) -> list[str]:
    """The pending entries that `ours` (docs/semantics.md) covers already."""
    found = [f"section {s!r} (issue {n})" for s, n in PENDING_SECTIONS.items()
             if s in sections(ours)]
    return found + [f"option {o} (issue {n})" for o, n in PENDING_OPTIONS.items()
                    if mentions(ours, o)]


def findings(contract: str, ours: str) -> list[str]:
    """Each way in which `ours` does not keep `contract`, worded for the person to fix it;
    none where it does."""
    found = []
    ours_sections = set(sections(ours))
    missing = [s for s in sections(contract)
               if s not in ours_sections and s not in PENDING_SECTIONS]
    if missing:
        found.append(f"docs/semantics.md lacks the contract's sections {missing}: write "
                     "them, or list them in PENDING_SECTIONS with the issue that builds them")
    unnamed = sorted(o for o in options(contract)
                     if not mentions(ours, o) and o not in PENDING_OPTIONS)
    if unnamed:
        found.append(f"docs/semantics.md does not mention the contract's options {unnamed}: "
                     "document them, or list them in PENDING_OPTIONS with the issue that "
                     "builds them")
    done = landed(ours)
    if done:
        found.append(f"docs/semantics.md covers {done}, which are listed as pending: remove "
                     "them from PENDING_SECTIONS / PENDING_OPTIONS in .ci/contract_check.py")
    gone = [f"section {s!r}" for s in PENDING_SECTIONS if s not in sections(contract)]
    gone += [f"option {o}" for o in PENDING_OPTIONS if o not in options(contract)]
    if gone:
        found.append(f"the contract has no {gone}: remove them from the pending lists in "
                     ".ci/contract_check.py")
    return found


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: python .ci/contract_check.py PATH/TO/SEMANTICS.md", file=sys.stderr)
        return 2
    path = Path(argv[0])
    try:
        contract = path.read_text(encoding="utf-8")
    except OSError as error:
        print(f"contract check: cannot read the contract {path}: {error.strerror or error} "
              "(CI's clone has it beside the repository, as ../shared/SEMANTICS.md)",
              file=sys.stderr)
        return 2
    problems = findings(contract, OURS.read_text(encoding="utf-8"))
    for problem in problems:
        print(f"contract check: {problem}", file=sys.stderr)
    if not problems:
        pending = len(PENDING_SECTIONS) + len(PENDING_OPTIONS)
        print(f"contract check: docs/semantics.md keeps {path} ({pending} entries pending)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
