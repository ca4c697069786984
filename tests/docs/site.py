"""Reading the documentation site the way the tests need it: the nav of mkdocs.yml, the prose
of a page without its code, the anchors a page defines, and its runnable ``console`` blocks."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Final

ROOT: Final = Path(__file__).resolve().parents[2]
DOCS: Final = ROOT / "docs"

_FENCE: Final = re.compile(r"^(```|~~~).*?^\1[ \t]*$", re.M | re.S)
_HEADING: Final = re.compile(r"^(#{1,6})[ \t]+(.+?)[ \t]*$", re.M)
_EXPLICIT_ID: Final = re.compile(r"\{[^}]*#([A-Za-z0-9_.:-]+)[^}]*\}\s*$")
_HTML_ID: Final = re.compile(r"""<[a-z]+[^>]*\sid=["']([^"']+)["']""")


def nav_pages() -> list[str]:
    """The Markdown files the nav of mkdocs.yml lists, in order (``docs/``-relative)."""
    text = (ROOT / "mkdocs.yml").read_text("utf-8")
    nav = text[text.index("\nnav:") :]
    return re.findall(r"^\s*-\s+[^:\n]+:\s+([\w./-]+\.md)\s*$", nav, re.M)


def without_code(markdown: str) -> str:
    """The page with fenced blocks removed (headings inside code are not headings)."""
    return _FENCE.sub("", markdown)


def prose_words(markdown: str) -> int:
    """Words of running text: no code blocks, tables, headings, HTML comments or link URLs."""
    text = re.sub(r"<!--.*?-->", "", without_code(markdown), flags=re.S)
    lines = [
        line
        for line in text.splitlines()
        if not line.lstrip().startswith(("|", "#")) and line.strip()
    ]
    text = re.sub(r"\]\([^)]*\)", "]", "\n".join(lines))
    return len(re.findall(r"[A-Za-z][A-Za-z'-]*", text))


def slugify(title: str) -> str:
    """Python-Markdown's default heading id (``toc`` extension) for a heading text."""
    text = re.sub(r"`([^`]*)`", r"\1", title)
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", text)
    text = re.sub(r"[^\w\s-]", "", text).strip().lower()
    return re.sub(r"[-\s]+", "-", text)


def anchors(markdown: str) -> set[str]:
    """Every id a page defines: explicit ``{#id}`` attributes, HTML ids, heading slugs."""
    found: set[str] = set(_HTML_ID.findall(markdown))
    seen: dict[str, int] = {}
    for _, title in _HEADING.findall(without_code(markdown)):
        explicit = _EXPLICIT_ID.search(title)
        if explicit:
            found.add(explicit.group(1))
            continue
        slug = slugify(title)
        count = seen.get(slug, 0)
        seen[slug] = count + 1
        found.add(slug if count == 0 else f"{slug}_{count}")
    return found


def console_examples(markdown: str) -> list[tuple[str, str]]:
    """``(command, expected stdout)`` of every ``$ command`` in the page's console blocks.

    A command continues over lines ending in a backslash, and over a here-document
    (``<<'EOF'`` up to the line ``EOF``); the lines after it up to the next ``$ `` are its
    output.
    """
    examples: list[tuple[str, str]] = []
    for block in re.findall(r"^```console\n(.*?)^```", markdown, flags=re.S | re.M):
        lines = block.splitlines()
        i = 0
        while i < len(lines):
            if not lines[i].startswith("$ "):
                i += 1
                continue
            command = [lines[i][2:]]
            i += 1
            while command[-1].endswith("\\") and i < len(lines):
                command.append(lines[i])
                i += 1
            if "<<'EOF'" in command[-1]:
                while i < len(lines) and lines[i] != "EOF":
                    command.append(lines[i])
                    i += 1
                command.append("EOF")
                i += 1
            output = []
            while i < len(lines) and not lines[i].startswith("$ "):
                output.append(lines[i])
                i += 1
            examples.append(("\n".join(command), "\n".join(output)))
    return examples
