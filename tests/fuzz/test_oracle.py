"""The fuzz oracle itself: the SPEC §14 code set, and that every entry point is a target."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from schedlog.cli.rules_cmd import RULES_OPS
from schedlog.host.remote import REMOTE_OPERATIONS
from schedlog.host.tools import TOOL_NAMES
from tests.fuzz import oracle
from tests.fuzz.targets import TARGETS

SPEC = Path(__file__).resolve().parents[3] / "shared" / "SPEC.md"
FUZZ_DIR = Path(__file__).resolve().parent


def test_codes_are_the_spec_section_14_codes() -> None:
    if not SPEC.exists():
        pytest.skip(f"{SPEC} is not beside the repository")
    text = SPEC.read_text("utf-8")
    section = text[text.index("## 14. Error codes") : text.index("## 15.")]
    table_codes = set(re.findall(r"^\| `([a-z_-]+)` \|", section, re.MULTILINE))
    listed = set(re.findall(r"`([a-z]+-[a-z-]+|invalid_request)`", section))
    assert table_codes | listed == set(oracle.SPEC_CODES)


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
