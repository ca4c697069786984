"""The host's follow-up event built from the plan's message id
(:func:`schedlog.host.group_plan.followup_event`) is the event the readable reference,
:func:`schedlog.eventlog.followups.build_followup` with ``protocol=HOST``, builds: the same
members, values and key order, for hostile session ids, ids and texts."""

from __future__ import annotations

import json

import msgspec
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


class _Session:
    """A resolved session: only what planning reads (the members its log holds)."""

    def __init__(self, delivered: dict[Member, str]) -> None:
        self.delivered = delivered

    def append(self, event: object) -> object:
        raise AssertionError("planning writes nothing")

    def flush(self) -> bool:
        raise AssertionError("planning writes nothing")


KINDS = st.sampled_from(["after", "at", "every"])


@given(
    kind=KINDS,
    prompt=TEXT,
    session_id=st.sampled_from(["s-1", "<b>x</b>", "a\u2028b"]),
    bound=st.sampled_from(["s-1", "other"]),
    state=st.sampled_from(["active", "inactive", "paused", "missing"]),
    lateness=st.integers(-5_000, 5_000),
    held=st.sampled_from(["no", "this", "other occurrence"]),
)
def test_plan_one_shot_is_plan_group(
    kind: str,
    prompt: str,
    session_id: str,
    bound: str,
    state: str,
    lateness: int,
    held: str,
) -> None:
    from structlog.testing import capture_logs

    from schedlog.host.delivery import Group
    from schedlog.host.group_plan import plan_group, plan_one_shot
    from schedlog.host.stores.base import StoredTask
    from schedlog.host.task import new_task
    from schedlog.rules.record import Record

    now = 1_780_000_000_000
    target = now - lateness
    selector = {"after": {"after_seconds": 60}, "at": {}, "every": {"every_seconds": 60}}[kind]
    record = Record(id="r-1", kind=kind, prompt=prompt, scheduled_at=target, title="T", **selector)  # type: ignore[arg-type]
    task = new_task(session_id if bound == "s-1" else "other", record)
    if state == "inactive":
        task = msgspec.structs.replace(task, status="inactive")
    elif state == "paused":
        task = msgspec.structs.replace(task, paused_at=now - 1)
    stored = None if state == "missing" else StoredTask(3, task)
    delivered = {
        "no": {},
        "this": {Member("r-1", target): "schedule-message-held"},
        "other occurrence": {Member("r-1", target - 1): "schedule-message-old"},
    }[held]
    group = Group(session_id, True, ("r-1",))
    session = _Session(delivered)
    with capture_logs() as fast_logs:
        fast = plan_one_shot(group, session, now, lambda _id: stored)
    with capture_logs() as reference_logs:
        reference = plan_group(group, session, now, lambda _id: stored)
    assert fast == reference
    assert fast_logs == reference_logs
    if fast is not None and fast.outgoing is not None:
        assert _ordered(fast.outgoing.event) == _ordered(reference.outgoing.event)  # type: ignore[union-attr]
