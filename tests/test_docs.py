"""The notes under docs/ are design notes: they describe the software as it is and say nothing
about how or when they were written (no branches, sessions, merges, helpers, issue numbers,
to-dos or dates of writing). The design index lists every note and every link resolves."""

import re
from pathlib import Path

import pytest

DOCS = Path(__file__).resolve().parents[1] / "docs"

# Words of process. A merge sort / merge pass is an algorithm, not a process word.
PROCESS = re.compile(
    r"\bbranch(es)?\b"
    r"|\bsessions?\b"
    r"|\bmerg(e|ed|es|ing)\b(?!\s+(sort|pass))"
    r"|\bhelpers?\b"
    r"|\bissues?\s*#?\s*\d+"
    r"|#\d+\b"
    r"|\bTODO\b|\bFIXME\b|\bXXX\b|\bto-?dos?\b"
    r"|\b2026\b"
    r"|\bthe lead\b"
    r"|\bthis (change|commit|work)\b"
    r"|\bcommit [0-9a-f]{7,40}\b",
    re.IGNORECASE,
)


def _doc_files():
    return sorted(p for p in DOCS.rglob("*") if p.is_file())


def test_pattern_catches_process_words():
    caught = ["Branch `cvcore`.", "Merge notes", "the 2026-11-26 session", "as issue 17 asks",
              "see #12", "TODO: wire it", "For the lead", "to-do list", "(commit 515a2fd)", "the helpers'"]
    passed = ["a merge sort replaces the tree", "a two-way merge pass", "Chan et al.'s update",
              "RankRLS (Pahikkala et al. 2009)", "the tree reduction combines partial groups"]
    assert all(PROCESS.search(s) for s in caught), [s for s in caught if not PROCESS.search(s)]
    assert not [s for s in passed if PROCESS.search(s)]


def test_docs_exist():
    assert (DOCS / "design" / "README.md").is_file()
    assert len(_doc_files()) >= 5


@pytest.mark.parametrize("path", _doc_files(), ids=lambda p: str(p.relative_to(DOCS)))
def test_no_words_of_process(path):
    text = path.read_text(encoding="utf-8")
    hits = [f"{path.relative_to(DOCS)}:{text.count(chr(10), 0, m.start()) + 1}: {m.group(0)!r}"
            for m in PROCESS.finditer(text)]
    assert not hits, "design notes describe the software, not how it was written:\n" + "\n".join(hits)


def test_design_index_lists_every_note_and_links_resolve():
    design = DOCS / "design"
    index = (design / "README.md").read_text(encoding="utf-8")
    linked = set(re.findall(r"\]\(([^)#]+\.md)\)", index))
    notes = {p.name for p in design.glob("*.md")} - {"README.md"}
    assert linked == notes
    for md in design.glob("*.md"):
        for target in re.findall(r"\]\(([^)#:]+)\)", md.read_text(encoding="utf-8")):
            assert (md.parent / target).exists(), f"{md.name}: broken link {target}"
