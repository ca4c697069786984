"""The crash matrix in CI (issue 6 item 1): a short deterministic subset of
``python -m tests.reliability.crash_matrix`` (see docs/reliability.md for the full run).

Every kill is chosen from the seed and lands at a named crash point or right after an
acknowledgement (no timing-dependent kills here), so the same files are produced on every run.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from schedlog import _crashpoints
from tests.reliability.crash_matrix import (
    AFTER_ACKS,
    BACKEND_POINTS,
    HOST_POINTS,
    SESSION_LOCAL_POINTS,
    Totals,
    run_matrix,
)

ROOT = Path(__file__).resolve().parents[2]


def _assert_clean(totals: Totals, kills: int) -> None:
    assert totals.problems == []
    assert totals.kill_points == kills
    assert totals.losses == 0
    assert totals.duplicates == 0
    assert totals.invalid_after_kill == 0
    assert totals.failures == 0
    assert totals.acks_checked > 0
    assert totals.deliveries > 0


@pytest.mark.parametrize("protocol", ["session-local", "host"])
def test_random_kill_points(tmp_path: Path, protocol: str) -> None:
    totals = run_matrix(
        protocol, 10, seed=11, root=tmp_path, steps=40, kills_per_workload=5, async_kills=False
    )
    _assert_clean(totals, 10)


POINTS = [
    *(("session-local", "sqlite", p) for p in (*SESSION_LOCAL_POINTS, AFTER_ACKS)),
    *(("host", "sqlite", p) for p in (*HOST_POINTS, *BACKEND_POINTS["sqlite"], AFTER_ACKS)),
    *(("host", "json", p) for p in BACKEND_POINTS["json"]),
]


@pytest.mark.parametrize(
    ("protocol", "backend", "point"), POINTS, ids=[f"{p}-{b}-{n}" for p, b, n in POINTS]
)
def test_each_crash_point(tmp_path: Path, protocol: str, backend: str, point: str) -> None:
    """Every crash point is reached, twice, and the restart recovers cleanly."""
    totals = run_matrix(
        protocol,
        2,
        seed=5,
        root=tmp_path,
        steps=30,
        kills_per_workload=2,
        async_kills=False,
        only=[point],
        backends=[backend],
    )
    _assert_clean(totals, 2)
    assert totals.by_point == {point: 2}


@pytest.mark.parametrize("protocol", ["session-local", "host"])
def test_spawned_children_armed_through_the_environment(tmp_path: Path, protocol: str) -> None:
    """The ``SCHEDLOG_CRASHPOINT`` path: fresh interpreters, the point armed at import."""
    point = "session.after_followup" if protocol == "session-local" else "batch.after_session"
    totals = run_matrix(
        protocol,
        1,
        seed=3,
        root=tmp_path,
        steps=20,
        kills_per_workload=1,
        spawn=True,
        async_kills=False,
        only=[point],
        backends=["sqlite"],
    )
    _assert_clean(totals, 1)


def test_every_crash_point_has_a_call_site() -> None:
    sources = "\n".join(p.read_text() for p in (ROOT / "schedlog").rglob("*.py"))
    called = set(re.findall(r'crashpoint\(\s*"([a-z_.]+)"', sources))
    assert called == set(_crashpoints.NAMES)


def test_arm_parses_and_refuses() -> None:
    try:
        _crashpoints.arm("eventlog.mid_line@3")
        assert _crashpoints._armed == {"eventlog.mid_line": 3}
        _crashpoints.crashpoint("eventlog.mid_line")  # hits 1 and 2 pass
        _crashpoints.crashpoint("eventlog.mid_line")
        _crashpoints.crashpoint("eventlog.before_barrier")  # another point: not armed
        assert _crashpoints._armed == {"eventlog.mid_line": 1}
        with pytest.raises(ValueError, match="unknown crash point"):
            _crashpoints.arm("nowhere")
        with pytest.raises(ValueError, match="at least 1"):
            _crashpoints.arm("eventlog.mid_line@0")
    finally:
        _crashpoints.arm(None)
    assert _crashpoints._armed == {}
