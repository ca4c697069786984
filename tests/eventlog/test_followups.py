"""``message/followup`` events and delivery identity (docs/protocol.md#followup-events,
docs/protocol.md#message-ids)."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from schedlog.eventlog import (
    Member,
    build_followup,
    delivered_members,
    message_id,
    parse_followup,
)
from schedlog.rules.instants import parse_canonical_instant
from tests.eventlog.helpers import chatter, event

T = "2026-05-01T09:00:00.000Z"
T_MS = parse_canonical_instant(T)
assert T_MS is not None


def test_spec_message_id_example() -> None:
    expected = "schedule-message-ae6f1bdc587b5d6fbd519bc46f309cba"
    assert message_id("s-1", [("schedule-1", T)]) == expected
    assert message_id("s-1", [Member("schedule-1", T_MS)]) == expected


def test_message_id_depends_on_session_order_and_members() -> None:
    a, b = ("a", T_MS), ("b", T_MS)
    ids = {
        message_id("s-1", [a, b]),
        message_id("s-1", [b, a]),
        message_id("s-2", [a, b]),
        message_id("s-1", [a]),
        message_id("s-1", [("a", T_MS + 1), b]),
    }
    assert len(ids) == 5
    assert all(i.startswith("schedule-message-") and len(i) == 17 + 32 for i in ids)


def test_message_id_rejects_non_canonical_instants() -> None:
    with pytest.raises(ValueError):
        message_id("s-1", [("a", "2026-05-01T09:00:00Z")])


def test_build_followup_shape_matches_spec_example() -> None:
    value = build_followup("s-1", [("schedule-1", T)], "[SCHEDULE REMINDER]\n…", T_MS)
    assert value == {
        "type": "message/followup",
        "data": {
            "messageId": "schedule-message-ae6f1bdc587b5d6fbd519bc46f309cba",
            "role": "user",
            "source": {"kind": "plugin", "plugin": "schedule"},
            "text": "[SCHEDULE REMINDER]\n…",
            "reminders": [{"id": "schedule-1", "occurrenceAt": T}],
            "createdAt": T,
        },
    }
    host = build_followup("s-1", [("schedule-1", T)], "x", T_MS, protocol="host")
    assert host["data"]["source"] == {"kind": "schedule"}


GOOD = build_followup("s-1", [("a", T), ("b", "2026-05-01T09:05:00.000Z")], "text", T_MS)["data"]


def _mutated(path: list[Any], value: Any) -> Any:
    data = copy.deepcopy(GOOD)
    target = data
    for key in path[:-1]:
        target = target[key]
    if value is _DELETE:
        del target[path[-1]]
    else:
        target[path[-1]] = value
    return data


_DELETE = object()
MALFORMED = [
    ("not-object", None),
    ("extra-key", {**GOOD, "x": 1}),
    ("missing-created", _mutated(["createdAt"], _DELETE)),
    ("role-assistant", _mutated(["role"], "assistant")),
    ("message-id-empty", _mutated(["messageId"], "")),
    ("message-id-number", _mutated(["messageId"], 7)),
    ("source-unknown", _mutated(["source"], {"kind": "other"})),
    ("text-number", _mutated(["text"], 1)),
    ("reminders-object", _mutated(["reminders"], {})),
    ("member-extra-key", _mutated(["reminders", 0, "x"], 1)),
    ("member-id-empty", _mutated(["reminders", 0, "id"], "")),
    ("member-occurrence-loose", _mutated(["reminders", 1, "occurrenceAt"], "2026-05-01T09:05Z")),
    ("created-not-canonical", _mutated(["createdAt"], "yesterday")),
]


@pytest.mark.parametrize("data", [m[1] for m in MALFORMED], ids=[m[0] for m in MALFORMED])
def test_malformed_followups_are_ignored(data: Any) -> None:
    assert parse_followup(data) is None


def test_parse_followup_round_trip() -> None:
    parsed = parse_followup(GOOD)
    assert parsed is not None
    assert parsed.message_id == GOOD["messageId"] and parsed.source == "session-local"
    assert parsed.reminders == (("a", T_MS), ("b", T_MS + 300_000))


def test_delivered_members_scan_only_the_owned_suffix() -> None:
    inherited = build_followup("parent", [("a", T)], "t", T_MS)
    own = build_followup("s-1", [("b", T), ("c", T)], "t", T_MS)
    later = build_followup("s-1", [("b", T)], "t", T_MS)  # the first holder wins
    broken = {"type": "message/followup", "data": {"reminders": [{"id": "d", "occurrenceAt": T}]}}
    events = [event(v) for v in (inherited, chatter(), own, later, broken)]
    found = delivered_members(events, seed_length=1)
    mid = own["data"]["messageId"]
    assert found == {("b", T_MS): mid, ("c", T_MS): mid}
    assert ("a", T_MS) in delivered_members(events, seed_length=0)
