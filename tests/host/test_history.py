"""Delivery history (docs/protocol.md#history): append with retention and cursor paging."""

from __future__ import annotations

import pytest

from schedlog.errors import ScheduleInputError
from schedlog.host.config import ConfigError, Retention, retention
from schedlog.host.history import DAY_MS, append_delivery, check_limit, history_page
from schedlog.host.task import Receipt, Task
from tests.host.helpers import T0, task

DEFAULT = Retention()


def deliver(t: Task, n: int, *, at: int | None = None, keep: Retention = DEFAULT) -> Task:
    delivered_at = T0 + n * 60_000 if at is None else at
    receipt = Receipt(scheduled_at=T0 + n, delivered_at=delivered_at, message_id=f"m{n}")
    return append_delivery(t, receipt, f"prompt {n}", keep)


def five() -> Task:
    t = task()
    for n in range(5):
        t = deliver(t, n)
    return t


def page(t: Task, limit: int, before: object = None) -> dict[str, object]:
    return history_page(t, limit, before, Retention(), has_before=before is not None)


def ids(result: dict[str, object]) -> list[str]:
    return [r["messageId"] for r in result["records"]]  # type: ignore[attr-defined, index]


def test_paging_example() -> None:
    t = five()
    first = page(t, 2)
    assert ids(first) == ["m4", "m3"] and first["nextBefore"] == "m3"
    second = page(t, 2, "m3")
    assert ids(second) == ["m2", "m1"] and second["nextBefore"] == "m1"
    third = page(t, 2, "m1")
    assert ids(third) == ["m0"] and "nextBefore" not in third
    assert third["retention"] == {"days": 30, "records": 200}
    assert list(third) == [
        "id",
        "records",
        "earlierRecordsUnavailable",
        "earlierRecordsPruned",
        "retention",
    ]


def test_cursor_is_identity_based() -> None:
    t = five()
    later = deliver(t, 5)
    assert ids(page(later, 2, "m3")) == ids(page(t, 2, "m3"))


def test_cursor_not_found_and_bad_before() -> None:
    assert page(five(), 2, "nope") == {"id": "schedule-1", "code": "delivery_cursor_not_found"}
    with pytest.raises(ScheduleInputError) as info:
        history_page(five(), 2, 7, Retention(), has_before=True)
    assert info.value.code == "invalid_rule"


def test_records_carry_prompt_snapshot() -> None:
    assert page(five(), 1)["records"] == [
        {
            "scheduledAt": "2026-05-01T06:00:00.004Z",
            "deliveredAt": "2026-05-01T06:04:00.000Z",
            "messageId": "m4",
            "prompt": "prompt 4",
        }
    ]


@pytest.mark.parametrize("limit", [0, 101, 1.5, "1", None, True])
def test_bad_limits(limit: object) -> None:
    with pytest.raises(ScheduleInputError) as info:
        check_limit(limit)
    assert (info.value.code, info.value.message) == (
        "invalid_rule",
        "Delivery history limit must be a safe integer from 1 through 100.",
    )


def test_limits_accepted() -> None:
    assert [check_limit(v) for v in (1, 100, 5.0)] == [1, 100, 5]


def test_prune_by_count_example() -> None:
    keep2 = Retention(records=2)
    t = task()
    t = deliver(t, 3, keep=keep2)
    t = deliver(t, 4, keep=keep2)
    assert t.history is not None and not t.history.earlier_unavailable
    assert t.history.earlier_pruned is False
    t = deliver(t, 5, keep=keep2)
    assert t.history is not None
    assert [r.message_id for r in t.history.records] == ["m4", "m5"]
    assert (t.history.earlier_unavailable, t.history.earlier_pruned) == (True, True)
    assert t.last_delivery == t.history.records[-1].receipt()


def test_prune_by_days_and_flags_stay_true() -> None:
    keep = Retention(days=1)
    t = deliver(task(), 0, at=T0, keep=keep)
    t = deliver(t, 1, at=T0 + DAY_MS, keep=keep)  # exactly at the floor: kept
    assert t.history is not None and len(t.history.records) == 2
    t = deliver(t, 2, at=T0 + DAY_MS + 1, keep=keep)
    assert t.history is not None
    assert [r.message_id for r in t.history.records] == ["m1", "m2"]
    assert t.history.earlier_pruned is True
    t = deliver(t, 3, at=T0 + DAY_MS + 2, keep=keep)  # nothing pruned now, flags stay true
    assert t.history is not None
    assert (t.history.earlier_unavailable, t.history.earlier_pruned) == (True, True)


def test_clock_rollback_keeps_append_order() -> None:
    t = deliver(task(), 0, at=T0 + 10_000)
    t = deliver(t, 1, at=T0)
    assert t.history is not None
    assert [r.message_id for r in t.history.records] == ["m0", "m1"]


def test_retention_config_validation() -> None:
    assert retention() == Retention(30, 200)
    assert retention(3650, 10000) == Retention(3650, 10000)
    for days, records in [(0, 1), (3651, 1), (1, 0), (1, 10001), ("5", 1), (1.5, 1)]:
        with pytest.raises(ConfigError):
            retention(days, records)
