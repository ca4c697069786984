"""The documentation site: every page the nav lists exists and is a real page, not a stub; the
examples of the pages that promise runnable examples print what they show."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.docs.site import DOCS, ROOT, console_examples, nav_pages, prose_words, without_code

#: The pages the project promises (issue 11), each with terms its real content cannot lack.
REQUIRED: dict[str, tuple[str, ...]] = {
    "quickstart.md": (
        "pip install",
        "schedlog validate",
        "schedlog replay",
        "host batch",
        "host run",
    ),
    "concepts.md": (
        "owned suffix",
        "fold",
        "invariant",
        "live owner",
        "at-least-once",
        "message id",
        "catch",
    ),
    "protocol.md": (
        "session/header",
        "schedule/change",
        "message/followup",
        "seedLength",
        "CREATE TABLE tasks",
        "schedule-message-",
        "[SCHEDULE REMINDER BATCH]",
        "schedule-N",
    ),
    "rules.md": (
        "after_seconds",
        "every_seconds",
        "daily",
        "weekly",
        "cron",
        "star field",
        "dst-tables",
        "latest",
    ),
    "errors.md": ("invalid_rule", "store-locked", "invalid_request"),
    "cli.md": ("schedlog host run", "schedlog session run", "schedlog tools catalog"),
    "embedding.md": (
        "SessionEngine",
        "examples/embed_session.py",
        "Clock",
        "followup",
        "HostService",
    ),
    "operations.md": (
        "host run",
        "--log-format",
        "--log-level",
        "backup",
        "schedlog migrate",
        "WAL",
        "delivery.recovered",
    ),
    "reliability.md": ("Crash matrix", "Fuzzing"),
    "benchmarks.md": ("Replay", "Cron"),
}
#: Words of running text (outside code and tables) below which a page is a stub.
MIN_PROSE_WORDS = 150
STUB_MARKERS = re.compile(r"\b(TODO|TBD|FIXME|XXX|lorem ipsum|coming soon)\b", re.I)
#: Pages whose ``console`` examples are run, in an empty directory, in page order.
RUNNABLE = ("errors.md", "protocol.md", "rules.md", "embedding.md")


def _page(name: str) -> str:
    return (DOCS / name).read_text("utf-8")


def test_every_nav_entry_is_a_page() -> None:
    pages = nav_pages()
    assert pages, "mkdocs.yml has no nav"
    for name in pages:
        assert (DOCS / name).is_file(), name
    assert len(pages) == len(set(pages)), "a page is listed twice"


def test_every_page_is_in_the_nav() -> None:
    listed = set(nav_pages())
    for path in DOCS.rglob("*.md"):
        assert path.relative_to(DOCS).as_posix() in listed, f"{path} is not in the nav"


@pytest.mark.parametrize("name", sorted(REQUIRED))
def test_required_page_is_listed(name: str) -> None:
    assert name in nav_pages()


@pytest.mark.parametrize("name", sorted(set(REQUIRED) | set(nav_pages())))
def test_page_is_not_a_stub(name: str) -> None:
    text = _page(name)
    body = without_code(text)
    assert text.startswith("# "), f"{name} has no title"
    assert prose_words(text) >= MIN_PROSE_WORDS, f"{name} has {prose_words(text)} words of prose"
    assert len(re.findall(r"^## ", body, re.M)) >= 2, f"{name} has fewer than two sections"
    marker = STUB_MARKERS.search(body)
    assert marker is None, f"{name} says {marker.group(0)!r}"
    empty = empty_sections(body)
    assert not empty, f"{name} has empty sections: {empty}"
    for term in REQUIRED.get(name, ()):
        assert term.lower() in text.lower(), f"{name} never mentions {term!r}"


def empty_sections(body: str) -> list[str]:
    """Headings with nothing under them: followed at once by a heading of the same or a higher
    level, or by the end of the page (a heading followed by its own subsections is not empty)."""
    parts = re.split(r"^(#{1,6}) (.*)$", body, flags=re.M)
    # parts: [before, level1, title1, text1, level2, title2, text2, ...]
    headings = [(len(parts[i]), parts[i + 1], parts[i + 2]) for i in range(1, len(parts), 3)]
    empty = []
    for k, (level, title, text) in enumerate(headings):
        following = headings[k + 1][0] if k + 1 < len(headings) else 0
        if not text.strip() and following <= level:
            empty.append(title)
    return empty


def test_stub_check_catches_stubs() -> None:
    stub = "# Page\n\n## One\n\nTODO\n\n## Two\n"
    assert prose_words(stub) < MIN_PROSE_WORDS
    assert STUB_MARKERS.search(without_code(stub))
    assert empty_sections(stub) == ["Two"]
    assert empty_sections("# P\n\n## A\n### B\n\ntext\n") == []


@pytest.mark.parametrize("name", RUNNABLE)
def test_console_examples_print_what_they_show(name: str, tmp_path: Path) -> None:
    examples = console_examples(_page(name))
    assert examples, f"{name} has no console examples"
    for shared in ("examples", "fixtures"):
        (tmp_path / shared).symlink_to(ROOT / shared)
    bindir = str(Path(sys.executable).parent)
    env = {**os.environ, "PATH": bindir + os.pathsep + os.environ.get("PATH", "")}
    for command, expected in examples:
        done = subprocess.run(
            ["bash", "-c", command],
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert done.stdout.rstrip("\n") == expected, f"{command}\n{done.stderr}"
