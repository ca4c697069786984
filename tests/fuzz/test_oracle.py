"""The fuzz oracle itself: its code set is the one docs/errors.md documents, and every entry
point is a target."""

from __future__ import annotations

import re
from pathlib import Path

from schedlog.cli.rules_cmd import RULES_OPS
from schedlog.host.remote import REMOTE_OPERATIONS
from schedlog.host.tools import TOOL_NAMES
from tests.fuzz import oracle
from tests.fuzz.targets import TARGETS

ERRORS_PAGE = Path(__file__).resolve().parents[2] / "docs" / "errors.md"
FUZZ_DIR = Path(__file__).resolve().parent


def documented_codes(page: str) -> set[str]:
    """The codes docs/errors.md documents: one ``### `code` {#code}`` heading each."""
    return set(re.findall(r"^### `([a-z_-]+)` \{#\1\}$", page, re.MULTILINE))


def test_codes_are_the_documented_codes() -> None:
    assert documented_codes(ERRORS_PAGE.read_text("utf-8")) == set(oracle.STABLE_CODES)


def test_documented_codes_reads_headings_only() -> None:
    page = "### `invalid_rule` {#invalid_rule}\n\nsee `not_a_code`\n### `x-y` {#x-y}\n"
    assert documented_codes(page) == {"invalid_rule", "x-y"}


def test_every_target_has_a_hypothesis_test() -> None:
    tests = "".join(p.read_text("utf-8") for p in FUZZ_DIR.glob("test_*.py"))
    for name in TARGETS:
        assert f'TARGETS["{name}"].run' in tests, name


def test_weights_are_per_mille() -> None:
    assert sum(t.weight for t in TARGETS.values()) == 1000


def test_every_batch_op_is_generated() -> None:
    from tests.fuzz import targets

    source = Path(targets.__file__).read_text("utf-8")
    for op in (*RULES_OPS, *TOOL_NAMES, *REMOTE_OPERATIONS):
        assert f'"{op}"' in source or op in RULES_OPS, op
    assert "pick(src, tuple(RULES_OPS))" in source
