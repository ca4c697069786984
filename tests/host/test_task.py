"""The task document (docs/protocol.md#task-document): strict decoding, writing order, effective
history."""

from __future__ import annotations

from typing import Any

import pytest

from schedlog.host.task import (
    InvalidTaskError,
    catalog_entry,
    decode_task,
    effective_history,
    encode_task,
)
from schedlog.rules.text import js_dumps
from tests.host.helpers import task

RECORD = {
    "id": "schedule-1",
    "kind": "every",
    "title": "T",
    "prompt": "p",
    "everySeconds": 600.0,
    "scheduledAt": "2026-05-01T09:00:00.000Z",
}
RECEIPT = {
    "scheduledAt": "2026-05-01T08:50:00.000Z",
    "deliveredAt": "2026-05-01T08:50:01.000Z",
    "messageId": "m-2",
}


def hist(*records: dict[str, Any], **flags: Any) -> dict[str, Any]:
    return {"records": list(records), "earlierRecordsUnavailable": False, **flags}


def test_round_trip_in_writing_order() -> None:
    value = {
        "deliveryHistory": hist({**RECEIPT, "prompt": "p"}, earlierRecordsPruned=True),
        "lastDelivery": RECEIPT,
        "status": "active",
        "record": RECORD,
        "sessionId": "s-1",
    }
    t = decode_task("schedule-1", value)
    assert js_dumps(encode_task(t)) == js_dumps(
        {
            "sessionId": "s-1",
            "record": {**RECORD, "everySeconds": 600},
            "status": "active",
            "lastDelivery": RECEIPT,
            "deliveryHistory": hist({**RECEIPT, "prompt": "p"}, earlierRecordsPruned=True),
        }
    )


def test_absent_members_stay_absent() -> None:
    t = decode_task("schedule-1", {"sessionId": "s", "record": RECORD})
    assert t.status is None and t.active and t.effective_status == "active"
    assert list(encode_task(t)) == ["sessionId", "record"]


def test_new_task_shape() -> None:
    assert encode_task(task())["deliveryHistory"] == hist()
    assert encode_task(task())["status"] == "active"


def test_effective_history_without_stored_history() -> None:
    t = decode_task("schedule-1", {"sessionId": "s", "record": RECORD, "lastDelivery": RECEIPT})
    h = effective_history(t)
    assert [r.to_json() for r in h.records] == [RECEIPT]
    assert (h.earlier_unavailable, h.earlier_pruned) == (True, False)
    empty = effective_history(decode_task("schedule-1", {"sessionId": "s", "record": RECORD}))
    assert (empty.records, empty.earlier_unavailable) == ((), True)


def test_catalog_entry() -> None:
    t = decode_task(
        "schedule-1",
        {"sessionId": "s", "record": RECORD, "status": "inactive", "lastDelivery": RECEIPT},
    )
    entry = catalog_entry(t)
    assert list(entry)[-3:] == ["sessionId", "status", "lastDelivery"]
    assert entry["status"] == "inactive"


BAD: list[tuple[str, str, Any]] = [
    ("not-object", "schedule-1", []),
    ("extra-member", "schedule-1", {"sessionId": "s", "record": RECORD, "x": 1}),
    ("empty-session", "schedule-1", {"sessionId": "", "record": RECORD}),
    ("no-record", "schedule-1", {"sessionId": "s"}),
    ("key-differs", "k", {"sessionId": "s", "record": RECORD}),
    ("bad-status", "schedule-1", {"sessionId": "s", "record": RECORD, "status": "paused"}),
    (
        "receipt-extra-key",
        "schedule-1",
        {"sessionId": "s", "record": RECORD, "lastDelivery": {**RECEIPT, "prompt": "p"}},
    ),
    (
        "receipt-non-canonical",
        "schedule-1",
        {
            "sessionId": "s",
            "record": RECORD,
            "lastDelivery": {**RECEIPT, "deliveredAt": "2026-05-01T08:50:01Z"},
        },
    ),
    (
        "receipt-padded-id",
        "schedule-1",
        {"sessionId": "s", "record": RECORD, "lastDelivery": {**RECEIPT, "messageId": " m"}},
    ),
    (
        "history-no-receipt",
        "schedule-1",
        {"sessionId": "s", "record": RECORD, "deliveryHistory": hist(RECEIPT)},
    ),
    (
        "history-receipt-differs",
        "schedule-1",
        {
            "sessionId": "s",
            "record": RECORD,
            "lastDelivery": {**RECEIPT, "messageId": "m-3"},
            "deliveryHistory": hist(RECEIPT),
        },
    ),
    (
        "history-duplicate-id",
        "schedule-1",
        {
            "sessionId": "s",
            "record": RECORD,
            "lastDelivery": RECEIPT,
            "deliveryHistory": hist(RECEIPT, RECEIPT),
        },
    ),
    (
        "history-extra-key",
        "schedule-1",
        {"sessionId": "s", "record": RECORD, "deliveryHistory": {**hist(), "x": 1}},
    ),
    (
        "history-missing-flag",
        "schedule-1",
        {"sessionId": "s", "record": RECORD, "deliveryHistory": {"records": []}},
    ),
    (
        "history-record-prompt-number",
        "schedule-1",
        {
            "sessionId": "s",
            "record": RECORD,
            "lastDelivery": RECEIPT,
            "deliveryHistory": hist({**RECEIPT, "prompt": 1}),
        },
    ),
]


@pytest.mark.parametrize(("key", "value"), [b[1:] for b in BAD], ids=[b[0] for b in BAD])
def test_invalid_tasks(key: str, value: Any) -> None:
    with pytest.raises(InvalidTaskError) as info:
        decode_task(key, value)
    assert info.value.code == "corrupt_schedule_log"


def test_key_message() -> None:
    with pytest.raises(InvalidTaskError, match='stored task key "k" differs from record id'):
        decode_task("k", {"sessionId": "s", "record": RECORD})


def test_last_delivery_message() -> None:
    value = {"sessionId": "s", "record": RECORD, "deliveryHistory": hist(RECEIPT)}
    with pytest.raises(InvalidTaskError, match="Last delivery must match"):
        decode_task("schedule-1", value)


# --- the paused state (docs/decisions.md#pause-and-resume) -------------------------------------

PAUSED_AT = "2026-05-01T08:55:00.000Z"


def test_a_paused_task_round_trips_with_paused_at_after_status() -> None:
    value = {
        "deliveryHistory": hist(RECEIPT),
        "lastDelivery": RECEIPT,
        "pausedAt": PAUSED_AT,
        "status": "active",
        "record": RECORD,
        "sessionId": "s-1",
    }
    t = decode_task("schedule-1", value, pausable=True)
    assert t.paused and t.active and t.effective_status == "active"
    assert list(encode_task(t)) == [
        "sessionId",
        "record",
        "status",
        "pausedAt",
        "lastDelivery",
        "deliveryHistory",
    ]
    assert encode_task(t)["pausedAt"] == PAUSED_AT
    assert decode_task("schedule-1", encode_task(t), pausable=True) == t


def test_not_paused_is_the_default_and_writes_nothing_new() -> None:
    for pausable in (False, True):
        t = decode_task("schedule-1", {"sessionId": "s", "record": RECORD}, pausable=pausable)
        assert t.paused_at is None and not t.paused
        assert "pausedAt" not in encode_task(t)
    assert not task().paused and "pausedAt" not in encode_task(task())


def test_the_upstream_document_has_no_paused_at() -> None:
    """Without ``pausable`` (the JSON document store, an upstream reader) the member is unknown."""
    value = {"sessionId": "s", "record": RECORD, "status": "active", "pausedAt": PAUSED_AT}
    with pytest.raises(InvalidTaskError, match="unknown member 'pausedAt'"):
        decode_task("schedule-1", value)


@pytest.mark.parametrize(
    "paused_at",
    [
        "2026-05-01T08:55:00Z",  # not canonical
        "",
        "<&\"'>",
        "\ud800",
        "9" * 10_000,
        10**30,
        None,
        True,
        1_777_625_700_000,  # epoch ms is not the stored form
    ],
    ids=["short", "empty", "markup", "surrogate", "huge", "bignum", "null", "bool", "number"],
)
def test_a_bad_paused_at_is_refused_naming_the_member(paused_at: Any) -> None:
    value = {"sessionId": "s", "record": RECORD, "status": "active", "pausedAt": paused_at}
    with pytest.raises(InvalidTaskError, match="schedule task pausedAt must be a canonical"):
        decode_task("schedule-1", value, pausable=True)


def test_an_ended_task_cannot_be_paused() -> None:
    value = {"sessionId": "s", "record": RECORD, "status": "inactive", "pausedAt": PAUSED_AT}
    with pytest.raises(InvalidTaskError, match="pausedAt is allowed only on an active task"):
        decode_task("schedule-1", value, pausable=True)
    # an absent status reads as active, so it may carry a pause
    assert decode_task(
        "schedule-1", {"sessionId": "s", "record": RECORD, "pausedAt": PAUSED_AT}, pausable=True
    ).paused
