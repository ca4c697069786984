"""Every repository path the README, the changelog and docs/ name exists."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = sorted([ROOT / "README.md", ROOT / "CHANGELOG.md", *(ROOT / "docs").rglob("*.md")])
#: A path starting at one of the repository's top-level directories, not inside another path
#: (``<tree>/benchmarks`` is a placeholder) or a URL.
PATH = re.compile(
    r"(?<![\w/.<>:-])((?:schedlog|tests|docs|benchmarks|fixtures|examples|\.ci)/[\w./-]*)"
)


def named_paths(text: str) -> set[str]:
    found = set()
    for match in PATH.finditer(text):
        path = match.group(1).rstrip(".,")
        if "<" in text[match.end() : match.end() + 1]:
            continue  # docs/<page>.md: a pattern, not a path
        found.add(path)
    return found


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: str(p.relative_to(ROOT)))
def test_named_repository_paths_exist(doc: Path) -> None:
    missing = sorted(
        p for p in named_paths(doc.read_text(encoding="utf-8")) if not (ROOT / p).exists()
    )
    assert missing == [], f"{doc.relative_to(ROOT)} names paths that do not exist: {missing}"


def test_the_scan_finds_paths() -> None:
    assert named_paths("see `tests/host/test_x.py`, and docs/a.md.") == {
        "tests/host/test_x.py",
        "docs/a.md",
    }
    assert named_paths("https://example.com/docs/x.md <tree>/benchmarks docs/<page>.md") == set()
