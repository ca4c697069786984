"""Skips that would hide a suite (issue 22): PostgreSQL tests never skip under ``CI=true``
for want of psycopg, and ``.ci/run`` runs the differential tests against the npm package."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from tests import pg

ROOT = Path(__file__).resolve().parents[2]


def test_no_test_module_skips_on_a_missing_psycopg_under_ci() -> None:
    offenders = [
        str(p.relative_to(ROOT))
        for p in (ROOT / "tests").rglob("*.py")
        if 'importorskip("psycopg"' in p.read_text("utf-8") and p.name != Path(__file__).name
    ]
    assert offenders == []


def test_require_psycopg_fails_under_ci_and_skips_elsewhere(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "psycopg", None)  # import psycopg now raises ImportError
    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception, match="under CI=true these tests must run"):
        pg.require_psycopg()
    monkeypatch.setenv("CI", "false")
    with pytest.raises(pytest.skip.Exception, match="psycopg is not installed"):
        pg.require_psycopg()


def test_ci_runs_the_differential_tests() -> None:
    script = (ROOT / ".ci" / "run").read_text("utf-8")
    assert "export SCHEDLOG_DIFFERENTIAL=1\n" in script
    assert script.index("SCHEDLOG_DIFFERENTIAL=1") < script.index(".venv/bin/python -m pytest")
