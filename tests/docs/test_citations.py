"""Citations point into the project: every ``docs/<page>.md#<anchor>`` pointer in the code,
tests, scripts and Markdown names a page and an anchor that exist, nothing cites the
behaviour specification outside the repository by section number, and no command's help text
names a document outside the repository."""

from __future__ import annotations

import argparse
import re
import subprocess
from collections.abc import Iterator
from functools import cache

import pytest

from schedlog.about import DOCS_URL
from tests.docs.site import DOCS, ROOT, anchors

#: ``docs/protocol.md#fold``, ``docs/errors.md``; in Markdown also ``](protocol.md#fold)``.
POINTER = re.compile(r"(?<![\w/.-])docs/([\w-]+\.md)(?:#([\w-]+))?")
DOC_LINK = re.compile(r"\]\(([\w-]+\.md)(?:#([\w-]+))?\)")
#: The section sign, spelled as an escape so that this file does not itself cite by section.
SIGN = "\u00a7"
#: A section-number citation of the external specification: "SPEC", the sign and a number,
#: or the sign and a number alone.
SECTION = re.compile(rf"SPEC\s*{SIGN}|{SIGN}\s*\d")
#: The same pointer as a URL of the documentation site (help texts, messages).
SITE = re.compile(re.escape(DOCS_URL) + r"([\w-]+)\.html(?:#([\w-]+))?")
SUFFIXES = (".py", ".md", ".toml", ".yml", ".json", ".txt", ".js", ".html", ".css")
#: Notes written before the documentation existed may keep their section numbers.
HISTORY = {"docs/decisions.md"}
#: Files whose pointers are examples of bad ones (tests of the scanners).
NOT_CITATIONS = {"tests/docs/test_citations.py", "tests/test_doc_paths.py"}


def tracked() -> list[str]:
    names = subprocess.run(
        ["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout.split()
    return [n for n in names if n.endswith(SUFFIXES) and (ROOT / n).is_file()]


@cache
def page_anchors(page: str) -> frozenset[str] | None:
    path = DOCS / page
    return frozenset(anchors(path.read_text("utf-8"))) if path.is_file() else None


def broken(text: str, *, in_docs: bool) -> Iterator[str]:
    pointers = [(m.group(0), m.group(1), m.group(2)) for m in POINTER.finditer(text)]
    pointers += [(m.group(0), m.group(1) + ".md", m.group(2)) for m in SITE.finditer(text)]
    if in_docs:
        pointers += [(m.group(0), m.group(1), m.group(2)) for m in DOC_LINK.finditer(text)]
    for shown, page, anchor in pointers:
        found = page_anchors(page)
        if found is None:
            yield f"{shown}: no page docs/{page}"
        elif anchor is not None and anchor not in found:
            yield f"{shown}: docs/{page} has no anchor #{anchor}"


def test_every_cited_page_and_anchor_exists() -> None:
    problems = []
    count = 0
    for name in tracked():
        if name in NOT_CITATIONS:
            continue
        text = (ROOT / name).read_text("utf-8", errors="replace")
        count += len(POINTER.findall(text))
        problems += [f"{name}: {p}" for p in broken(text, in_docs=name.startswith("docs/"))]
    assert problems == []
    assert count > 300  # the scan sees the code's citations


def test_nothing_cites_the_specification_by_section() -> None:
    found = []
    for name in tracked():
        if name in HISTORY or name in NOT_CITATIONS:
            continue
        for number, line in enumerate((ROOT / name).read_text("utf-8", "replace").splitlines()):
            if SECTION.search(line):
                found.append(f"{name}:{number + 1}: {line.strip()}")
    assert found == []


def test_the_checks_catch_bad_citations() -> None:
    assert list(broken("see docs/protocol.md#fold and docs/errors.md", in_docs=False)) == []
    assert len(list(broken("docs/protocol.md#no-such-anchor", in_docs=False))) == 1
    assert len(list(broken("docs/no-such-page.md", in_docs=False))) == 1
    assert len(list(broken("[x](rules.md#nope)", in_docs=True))) == 1
    assert list(broken(f"see {DOCS_URL}protocol.html#fold", in_docs=False)) == []
    assert len(list(broken(f"see {DOCS_URL}protocol.html#nope", in_docs=False))) == 1
    assert len(list(broken(f"see {DOCS_URL}nope.html", in_docs=False))) == 1
    assert SECTION.search(f"as SPEC {SIGN}10.3 says") and SECTION.search(f"({SIGN}11.8)")
    assert not SECTION.search("docs/protocol.md#fold")


def _help_texts(parser: argparse.ArgumentParser, path: str) -> Iterator[tuple[str, str]]:
    for text in (parser.description, parser.epilog, parser.usage):
        if text:
            yield path, text
    for action in parser._actions:
        if action.help and action.help is not argparse.SUPPRESS:
            yield f"{path} {'/'.join(action.option_strings) or action.dest}", action.help
        if isinstance(action, argparse._SubParsersAction):
            for choice in action._choices_actions:
                if choice.help:
                    yield f"{path} {choice.dest}", choice.help
            for name, sub in action.choices.items():
                yield from _help_texts(sub, f"{path} {name}")


@pytest.mark.parametrize(
    "outside", [re.compile("SPEC"), re.compile(SIGN), re.compile(r"\.\./"), re.compile("shared/")]
)
def test_no_help_text_names_a_document_outside_the_repository(outside: re.Pattern[str]) -> None:
    from schedlog.cli.main import build_parser

    texts = list(_help_texts(build_parser(), "schedlog"))
    assert len(texts) > 50
    for where, text in texts:
        assert not outside.search(text), f"{where}: {text}"
        assert list(broken(text, in_docs=False)) == [], f"{where}: {text}"


def test_help_texts_point_to_the_site_not_to_files() -> None:
    """A wheel user has no ``docs/`` directory: help texts give the site's URLs."""
    from schedlog.cli.main import build_parser

    texts = list(_help_texts(build_parser(), "schedlog"))
    assert [f"{where}: {text}" for where, text in texts if POINTER.search(text)] == []
    assert sum(bool(SITE.search(text)) for _, text in texts) >= 8
