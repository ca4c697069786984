"""The three tools of docs/protocol.md#session-tools: validation order, codes, barriers,
cancellation, re-drive."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from schedlog.rules.instants import MAX_MS
from schedlog.runtime.clock import VirtualClock
from schedlog.runtime.tools import SessionTools, persistence_uncertain
from tests.runtime.helpers import Harness, log_lines, ms, schedule_ops

NOW = ms("2026-05-01T08:50:00Z")
UNCERTAIN = (
    "Schedule persistence is uncertain; retry with schedule_list before relying on this result."
)
INTERNAL = {"code": "internal_error", "message": "The schedule operation failed."}


class SteppingClock:
    """Each sample is ``step`` ms after the previous one."""

    def __init__(self, start: int, step: int) -> None:
        self._samples: Iterator[int] = iter(range(start, 2**62, step))

    def now_ms(self) -> int:
        return next(self._samples)

    async def sleep_until(self, deadline_ms: int) -> None:  # pragma: no cover - unused
        raise NotImplementedError


@pytest.fixture
def harness(tmp_path: Path) -> Harness:
    return Harness(tmp_path / "s-1.jsonl")


def make(harness: Harness, now: int = NOW) -> tuple[SessionTools, list[int]]:
    redrives: list[int] = []
    tools = SessionTools(harness, VirtualClock(now), redrive=lambda: redrives.append(1))
    return tools, redrives


@pytest.mark.parametrize(
    ("args", "code"),
    [
        ({"prompt": "p", "after_seconds": 60, "title": "t"}, "invalid_selector"),
        ({"prompt": "p"}, "invalid_selector"),
        ({"prompt": "p", "after_seconds": 60, "at": None}, "invalid_selector"),
        ({"after_seconds": 60, "every_seconds": 1}, "invalid_selector"),
        ({"prompt": 5, "after_seconds": -1}, "invalid_prompt"),
        ({"prompt": " \u3000", "after_seconds": 60}, "invalid_prompt"),
        ({"prompt": "p", "after_seconds": 0}, "invalid_rule"),
        ({"prompt": "p", "after_seconds": True}, "invalid_rule"),
        ({"prompt": "p", "every_seconds": 300.5}, "invalid_rule"),
        ({"prompt": "p", "every_seconds": 299}, "frequency_too_high"),
        ("not an object", "invalid_selector"),
    ],
    ids=[
        "title-unknown",
        "no-selector",
        "null-selector-counts",
        "selector-before-prompt",
        "prompt-before-rule",
        "blank-prompt",
        "after-zero",
        "after-bool",
        "every-fraction",
        "every-too-frequent",
        "args-not-object",
    ],
)
def test_shape_errors_never_touch_persistence(harness: Harness, args: object, code: str) -> None:
    tools, redrives = make(harness)
    value = tools.schedule_create(args)
    assert isinstance(value, dict)
    assert value["code"] == code
    assert harness.effects == []
    assert redrives == []


@pytest.mark.parametrize(
    ("args", "code"),
    [
        ({"prompt": "p", "at": "2026-05-01T08:50:00Z"}, "not_future"),
        ({"prompt": "p", "at": "2026-05-01 09:00"}, "invalid_rule"),
        (
            {
                "prompt": "p",
                "at": {"date": "2026-05-01", "time": "10:00:00", "time_zone": "Mars/X"},
            },
            "invalid_time_zone",
        ),
        ({"prompt": "p", "after_seconds": 2**53 - 1}, "time_out_of_range"),
    ],
    ids=["not-future", "bad-at", "bad-zone", "out-of-range"],
)
def test_time_errors_come_after_preflight_and_append_nothing(
    harness: Harness, args: object, code: str
) -> None:
    tools, redrives = make(harness)
    value = tools.schedule_create(args)
    assert isinstance(value, dict)
    assert value["code"] == code
    assert harness.effects == ["barrier"]
    assert schedule_ops(Path(harness.inner.path)) == []
    assert redrives == [1]


def test_create_effects_and_view_use_a_fresh_clock_sample(tmp_path: Path) -> None:
    harness = Harness(tmp_path / "s-1.jsonl")
    tools = SessionTools(harness, SteppingClock(NOW, 1000))
    value = tools.schedule_create({"prompt": "  p  ", "after_seconds": 1})
    # built at NOW (target NOW+1s), viewed at the next sample NOW+1s: already overdue
    assert value == {
        "id": "schedule-1",
        "kind": "after",
        "prompt": "p",
        "afterSeconds": 1,
        "scheduledAt": "2026-05-01T08:50:01.000Z",
        "state": "overdue",
        "deliveryMode": "session-local",
    }
    assert harness.effects == ["barrier", "create:schedule-1", "barrier"]


def test_invalid_clock_at_creation_is_time_out_of_range(harness: Harness) -> None:
    tools, _ = make(harness, MAX_MS + 1)
    value = tools.schedule_create({"prompt": "p", "every_seconds": 300})
    assert isinstance(value, dict)
    assert value["code"] == "time_out_of_range"


@pytest.mark.parametrize("failure", [False, OSError("disk gone")], ids=["negative", "raises"])
def test_preflight_failure_is_persistence_uncertain_without_redrive(
    harness: Harness, failure: bool | Exception
) -> None:
    tools, redrives = make(harness)
    harness.barrier_results = [failure, failure, failure]
    assert tools.schedule_create({"prompt": "p", "after_seconds": 60}) == {
        "code": "persistence_uncertain",
        "message": UNCERTAIN,
        "operation": "create",
    }
    assert tools.schedule_list({}) == persistence_uncertain("list")
    assert tools.schedule_delete({"id": "schedule-1"}) == {
        "code": "persistence_uncertain",
        "message": UNCERTAIN,
        "operation": "delete",
        "id": "schedule-1",
    }
    assert redrives == []
    assert harness.effects == ["barrier"] * 3


def test_post_append_failure_names_the_id_and_the_change_stays(harness: Harness) -> None:
    tools, redrives = make(harness)
    harness.barrier_results = [True, False]
    assert tools.schedule_create({"prompt": "p", "after_seconds": 60}) == persistence_uncertain(
        "create", "schedule-1"
    )
    harness.barrier_results = [True, OSError("fsync")]
    assert tools.schedule_delete({"id": "schedule-1"}) == persistence_uncertain(
        "delete", "schedule-1"
    )
    assert harness.effects == ["barrier", "create:schedule-1", "barrier"] * 1 + [
        "barrier",
        "delete:schedule-1",
        "barrier",
    ]
    assert redrives == [1, 1]


def test_delete_checks_the_id_before_anything_else(harness: Harness) -> None:
    tools, redrives = make(harness)
    harness.barrier_results = [False]
    for args in ({}, {"id": ""}, {"id": " x"}, {"id": 3}, []):
        assert tools.schedule_delete(args) == {
            "code": "invalid_rule",
            "message": "schedule_delete id must be non-empty without surrounding whitespace.",
        }
    assert harness.effects == []
    assert redrives == []


def test_cancelled_create_appends_nothing(harness: Harness) -> None:
    tools, _ = make(harness)
    value = tools.schedule_create({"prompt": "p", "after_seconds": 60}, cancelled=lambda: True)
    assert value == INTERNAL
    assert harness.effects == ["barrier"]
    assert tools.schedule_list({}) == []


def test_append_failure_is_internal_error(
    harness: Harness, monkeypatch: pytest.MonkeyPatch
) -> None:
    tools, _ = make(harness)

    def broken(event: object) -> None:
        raise OSError("no space")

    monkeypatch.setattr(harness, "append", broken)
    assert tools.schedule_create({"prompt": "p", "after_seconds": 60}) == INTERNAL


def test_unexpected_exception_is_internal_error(
    harness: Harness, monkeypatch: pytest.MonkeyPatch
) -> None:
    tools, _ = make(harness)

    def broken() -> object:
        raise RuntimeError("bug")

    monkeypatch.setattr(harness, "events", broken)
    assert tools.schedule_list({}) == INTERNAL


def test_list_returns_views_in_create_order_with_states(harness: Harness) -> None:
    tools, _ = make(harness)
    tools.schedule_create({"prompt": "later", "after_seconds": 600})
    tools.schedule_create({"prompt": "sooner", "after_seconds": 60})
    tools.clock.set(NOW + 120_000)  # type: ignore[attr-defined]
    views = tools.schedule_list({"ignored": True})
    assert isinstance(views, list)
    assert [(v["id"], v["state"]) for v in views] == [
        ("schedule-1", "scheduled"),
        ("schedule-2", "overdue"),
    ]


def test_invariant_refuses_a_bad_append_and_nothing_is_written(harness: Harness) -> None:
    from schedlog.eventlog.changes import DeleteChange
    from schedlog.invariant import InvariantError
    from schedlog.runtime.tools import append_change, read_state

    harness.inner.open()
    before = log_lines(Path(harness.inner.path))
    with pytest.raises(InvariantError):
        append_change(harness, read_state(harness), DeleteChange(id="schedule-1"))
    assert log_lines(Path(harness.inner.path)) == before
