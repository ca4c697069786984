"""docs/layout.md maps every module of the package (one line each); tests/test_doc_paths.py
checks that every module it names exists."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_every_module_is_on_the_layout_page() -> None:
    page = (ROOT / "docs" / "layout.md").read_text(encoding="utf-8")
    modules = sorted(str(p.relative_to(ROOT)) for p in (ROOT / "schedlog").rglob("*.py"))
    missing = [m for m in modules if f"| `{m}` |" not in page]
    assert missing == []
