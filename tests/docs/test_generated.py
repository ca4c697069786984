"""The generated parts of the site match what the code gives today: the CLI reference (from the
argparse parsers) and the DST tables of the rules reference (from the rules layer). After a
deliberate change, regenerate with ``python scripts/gen_docs.py``."""

from __future__ import annotations

import argparse
import importlib.util
from types import ModuleType

import pytest

from tests.docs.site import ROOT


def _generator() -> ModuleType:
    spec = importlib.util.spec_from_file_location("gen_docs", ROOT / "scripts" / "gen_docs.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


GEN = _generator()


@pytest.mark.parametrize("page", ["cli.md", "rules.md"])
def test_generated_page_is_current(page: str) -> None:
    expected = {path.name: text for path, text in GEN.expected_pages().items()}[page]
    current = (ROOT / "docs" / page).read_text("utf-8")
    assert current == expected, f"docs/{page} is stale: run python scripts/gen_docs.py"


def _commands(
    parser: argparse.ArgumentParser, path: str
) -> list[tuple[str, argparse.ArgumentParser]]:
    found = [(path, parser)]
    for name, sub in GEN._subcommands(parser):
        found += _commands(sub, f"{path} {name}")
    return found


def test_cli_reference_covers_every_command_and_option() -> None:
    from schedlog.cli.main import build_parser

    page = (ROOT / "docs" / "cli.md").read_text("utf-8")
    commands = _commands(build_parser(), "schedlog")
    assert len(commands) > 15
    for path, parser in commands:
        assert f"`{path}` {{#" in page, path
        for action in parser._actions:
            for flag in action.option_strings:
                if flag not in ("-h", "--help"):
                    assert f"`{flag}" in page, (path, flag)


def test_drift_is_detected(monkeypatch: pytest.MonkeyPatch) -> None:
    """A new option on a parser makes the page stale."""
    from schedlog.cli import main

    original = main.build_parser

    def with_extra() -> argparse.ArgumentParser:
        parser = original()
        parser.add_argument("--brand-new-flag", help="added after the page was written")
        return parser

    monkeypatch.setattr(GEN, "build_parser", with_extra)
    assert "--brand-new-flag" in GEN.cli_reference()
    assert GEN.cli_reference() != (ROOT / "docs" / "cli.md").read_text("utf-8")


def test_dst_tables_show_both_seasons_for_every_zone() -> None:
    block = GEN.dst_tables()
    for zone in GEN.DST_ZONES:
        rows = [line for line in block.splitlines() if line.startswith(f"| `{zone}` |")]
        assert len(rows) == 4, zone  # two changes, each in both tables
        assert any("(spring)" in r for r in rows) and any("(autumn)" in r for r in rows), zone
        gap_rows = [r for r in rows if "does not exist in the selected time zone" in r]
        assert len(gap_rows) == 1, zone  # the spring local `at` is rejected, the autumn one is not


def test_dst_changes_are_the_known_2026_dates() -> None:
    """Independent of the code: EU summer time runs from the last Sunday of March to the last
    Sunday of October at 01:00 UTC; the US from the second Sunday of March to the first Sunday
    of November at 02:00 local time."""
    from schedlog.rules.instants import format_instant

    def changes(zone: str) -> list[str]:
        return [format_instant(at) for at, _, _ in GEN._changes(zone, 2026)]

    assert changes("Europe/Berlin") == ["2026-03-29T01:00:00.000Z", "2026-10-25T01:00:00.000Z"]
    assert changes("America/New_York") == ["2026-03-08T07:00:00.000Z", "2026-11-01T06:00:00.000Z"]
