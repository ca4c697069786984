"""The host's follow-up event built from the plan's message id
(:func:`schedlog.host.group_plan.followup_event`) is the event the readable reference,
:func:`schedlog.eventlog.followups.build_followup` with ``protocol=HOST``, builds: the same
members, values and key order, for hostile session ids, ids and texts."""

from __future__ import annotations

import json

from hypothesis import given
from hypothesis import strategies as st

from schedlog.eventlog.followups import Member, build_followup, message_id
from schedlog.host.group_plan import followup_event
from schedlog.protocols import HOST
from schedlog.rules.instants import MAX_MS, MIN_MS

HOSTILE = st.sampled_from(["<b>x</b>&amp;", "a\u2028b", "lone \ud800 surrogate", "x" * 5000, "ü"])
TEXT = st.one_of(HOSTILE, st.text(min_size=1, max_size=30))
MEMBERS = st.lists(st.builds(Member, TEXT, st.integers(MIN_MS, MAX_MS)), min_size=1, max_size=5)


def _ordered(value: object) -> str:
    """The value as JSON with its key order (lone surrogates escaped)."""
    return json.dumps(value, ensure_ascii=True)


@given(TEXT, MEMBERS, TEXT, st.integers(MIN_MS, MAX_MS))
def test_followup_event_is_build_followups(
    session_id: str, members: list[Member], text: str, created_at: int
) -> None:
    mid = message_id(session_id, members)
    fast = followup_event(members, text, mid, created_at)
    reference = build_followup(session_id, members, text, created_at, protocol=HOST)
    assert fast == reference
    assert _ordered(fast) == _ordered(reference)


def test_the_source_is_a_copy() -> None:
    members = [Member("r-1", 0)]
    first = followup_event(members, "t", message_id("s", members), 0)
    first["data"]["source"]["kind"] = "changed"
    again = followup_event(members, "t", message_id("s", members), 0)
    assert again["data"]["source"] == {"kind": "schedule"}
