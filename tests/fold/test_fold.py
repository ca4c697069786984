"""The pure fold (docs/protocol.md#fold), live application and id allocation
(docs/protocol.md#id-allocation)."""

from __future__ import annotations

from typing import Any

import pytest

from schedlog.eventlog import LogEvent, decode_change
from schedlog.fold import FoldError, FoldState, apply_change, apply_event, fold, next_schedule_id
from schedlog.rules.instants import MAX_MS, format_instant, parse_canonical_instant
from tests.eventlog.helpers import (
    change,
    chatter,
    create_data,
    delete_data,
    dispatch_data,
    event,
)


def ms(text: str) -> int:
    value = parse_canonical_instant(text)
    assert value is not None
    return value


def events(*values: dict[str, Any]) -> list[LogEvent]:
    return [event(v) for v in values]


def targets(state: FoldState) -> dict[str, str]:
    return {r.id: format_instant(r.scheduled_at) for r in state.active}


def test_spec_example_dispatch_of_one_shot() -> None:
    state = fold(
        events(
            change(create_data("A", "every")),
            change(create_data("B", "after")),
            change(dispatch_data("B")),
        ),
        seed_length=0,
    )
    assert [r.id for r in state.active] == ["A"]
    assert state.seen_ids == ("A", "B")


def test_spec_example_fork_cutoff() -> None:
    log = events(change(create_data("P1")), change(create_data("P2")), change(create_data("C")))
    state = fold(log, seed_length=2)
    assert [r.id for r in state.active] == ["C"]
    assert state.seen_ids == ("C",)


def test_inherited_prefix_is_never_decoded() -> None:
    log = events(change("garbage"), {"type": "schedule/change", "data": 1, "x": 2}, chatter())
    log += events(change(create_data("schedule-1")))
    assert fold(log, seed_length=3).seen_ids == ("schedule-1",)
    with pytest.raises(FoldError) as info:
        fold(log, seed_length=0)
    assert info.value.index == 0


def test_only_schedule_changes_are_folded() -> None:
    log = events(chatter(), {"type": "message/followup", "data": {}}, change(create_data("a")))
    assert [r.id for r in fold(log).active] == ["a"]


def test_survivors_keep_their_create_order() -> None:
    state = fold(
        events(
            change(create_data("a", "every", at="2026-05-01T09:00:00.000Z", everySeconds=600)),
            change(create_data("b")),
            change(create_data("c", "every", at="2026-05-01T08:00:00.000Z", everySeconds=300)),
            change(delete_data("b")),
            change(dispatch_data("a", "2026-05-01T09:20:00.000Z")),
            change(create_data("d", "at")),
        )
    )
    assert [r.id for r in state.active] == ["a", "c", "d"]
    assert state.seen_ids == ("a", "b", "c", "d")


def test_every_dispatch_takes_the_latest_due_occurrence() -> None:
    # docs/rules.md#every / docs/concepts.md#live-owner: alpha (600 s, 08:50) and beta (300 s,
    # 08:58) dispatched at 09:02:30.
    state = fold(
        events(
            change(create_data("alpha", "every", at="2026-05-01T08:50:00.000Z", everySeconds=600)),
            change(create_data("beta", "every", at="2026-05-01T08:58:00.000Z", everySeconds=300)),
            change(dispatch_data("alpha", "2026-05-01T09:02:30.000Z")),
            change(dispatch_data("beta", "2026-05-01T09:02:30.000Z")),
        )
    )
    assert targets(state) == {
        "alpha": "2026-05-01T09:10:00.000Z",
        "beta": "2026-05-01T09:03:00.000Z",
    }


def test_every_dispatch_exactly_at_the_target() -> None:
    state = fold(
        events(
            change(create_data("a", "every", at="2026-05-01T09:00:00.000Z", everySeconds=3600)),
            change(dispatch_data("a", "2026-05-01T09:00:00.000Z")),
        )
    )
    assert targets(state) == {"a": "2026-05-01T10:00:00.000Z"}


def test_every_rule_exhausted_near_max_is_removed() -> None:
    last = format_instant(MAX_MS - 100_000)
    state = fold(
        events(
            change(create_data("a", "every", at=last, everySeconds=300)),
            change(create_data("b")),
            change(dispatch_data("a", format_instant(MAX_MS))),
        )
    )
    assert [r.id for r in state.active] == ["b"]
    assert state.seen_ids == ("a", "b")


E = "2026-05-01T09:00:00.000Z"
FAILURES: list[tuple[str, list[dict[str, Any]], int, str, str, str]] = [
    (
        "reused-after-delete",
        [change(create_data("a")), change(delete_data("a")), change(create_data("a"))],
        2,
        "id_reused",
        'schedule id "a" was reused',
        "$.data.schedule.id",
    ),
    (
        "reused-while-active",
        [change(create_data("a")), change(create_data("a", "at"))],
        1,
        "id_reused",
        'schedule id "a" was reused',
        "$.data.schedule.id",
    ),
    (
        "delete-never-created",
        [change(delete_data("x"))],
        0,
        "delete_inactive",
        'schedule delete targets inactive id "x"',
        "$.data.id",
    ),
    (
        "delete-twice",
        [change(create_data("a")), change(delete_data("a")), change(delete_data("a"))],
        2,
        "delete_inactive",
        'schedule delete targets inactive id "a"',
        "$.data.id",
    ),
    (
        "dispatch-after-one-shot-fired",
        [change(create_data("a")), change(dispatch_data("a")), change(dispatch_data("a"))],
        2,
        "dispatch_inactive",
        'schedule dispatch targets inactive id "a"',
        "$.data.id",
    ),
    (
        "dispatch-deleted",
        [change(create_data("a")), change(delete_data("a")), change(dispatch_data("a"))],
        2,
        "dispatch_inactive",
        'schedule dispatch targets inactive id "a"',
        "$.data.id",
    ),
    (
        "one-shot-with-accepted-at",
        [change(create_data("a", "at")), change(dispatch_data("a", E))],
        1,
        "one_shot_accepted_at",
        "one-shot dispatch must not contain acceptedAt",
        "$.data.acceptedAt",
    ),
    (
        "every-without-accepted-at",
        [change(create_data("a", "every")), change(dispatch_data("a"))],
        1,
        "every_accepted_at",
        "every dispatch must contain acceptedAt",
        "$.data",
    ),
    (
        "every-before-target",
        [change(create_data("a", "every")), change(dispatch_data("a", "2026-05-01T08:59:59.999Z"))],
        1,
        "decision",
        "every dispatch cannot precede the active scheduledAt.",
        "$.data.acceptedAt",
    ),
    (
        "envelope-extra-key",
        [{**change(create_data("a")), "by": "me"}],
        0,
        "envelope",
        "schedule/change event must have exactly the keys type and data",
        "$",
    ),
    (
        "envelope-without-data",
        [chatter(), {"type": "schedule/change"}],
        1,
        "envelope",
        "schedule/change event must have exactly the keys type and data",
        "$",
    ),
    (
        "bad-change-after-chatter",
        [chatter(), change({"version": 1, "operation": "delete", "id": " a"})],
        1,
        "change",
        "schedule change id must be a non-empty trimmed string",
        "$.data.id",
    ),
]


@pytest.mark.parametrize(
    ("values", "index", "rule", "message", "path"),
    [f[1:] for f in FAILURES],
    ids=[f[0] for f in FAILURES],
)
def test_fold_failures(
    values: list[dict[str, Any]], index: int, rule: str, message: str, path: str
) -> None:
    with pytest.raises(FoldError) as info:
        fold(events(*values))
    error = info.value
    assert (error.index, error.rule, error.message, error.path) == (index, rule, message, path)
    assert error.code == "corrupt_schedule_log"


@pytest.mark.parametrize("seed", [-1, 3, 1.5, True, "1", None, 2**53], ids=lambda s: f"seed={s!r}")
def test_seed_length_out_of_range(seed: object) -> None:
    with pytest.raises(FoldError) as info:
        fold(events(chatter(), chatter()), seed_length=seed)
    assert info.value.message == "schedule seedLength must be within the supplied event log"
    assert info.value.index is None and info.value.rule == "seed_length"


@pytest.mark.parametrize("seed", [0, 1, 2, 2.0], ids=lambda s: f"seed={s!r}")
def test_seed_length_in_range(seed: object) -> None:
    assert fold(events(chatter(), chatter()), seed_length=seed) == FoldState()


def test_apply_change_matches_the_fold_step_by_step() -> None:
    values = [
        change(create_data("a", "every", at=E, everySeconds=300)),
        chatter(),
        change(create_data("b")),
        change(dispatch_data("a", "2026-05-01T10:07:00.000Z")),
        change(dispatch_data("b")),
        change(create_data("c", "at")),
        change(delete_data("a")),
    ]
    log = events(*values)
    state = FoldState()
    for n, item in enumerate(log, start=1):
        state = apply_event(state, item)
        assert state == fold(log[:n])
    assert apply_change(FoldState(), decode_change(create_data("z"))).seen_ids == ("z",)


def test_apply_change_refuses_like_the_fold_and_keeps_the_state() -> None:
    state = fold(events(change(create_data("a"))))
    with pytest.raises(FoldError) as info:
        apply_change(state, decode_change(create_data("a")))
    assert info.value.rule == "id_reused"
    assert [r.id for r in state.active] == ["a"]


def test_fold_state_lookups_and_json() -> None:
    state = fold(events(change(create_data("a")), change(create_data("b", "at"))))
    assert state.is_active("a") and state.was_seen("b") and not state.is_active("zz")
    assert state.get("b") is not None and state.get("b") == state.by_id["b"]
    assert state.to_json() == {
        "active": [r.to_json() for r in state.active],
        "seenIds": ["a", "b"],
    }


@pytest.mark.parametrize(
    ("seen", "expected"),
    [
        ((), "schedule-1"),
        # docs/protocol.md#id-allocation
        (("schedule-1", "schedule-2", "schedule-4"), "schedule-5"),
        (("x", "y"), "schedule-3"),
        (("schedule-3", "x", "schedule-4"), "schedule-5"),
        (("schedule-2",), "schedule-3"),
        (("schedule-1",), "schedule-2"),
    ],
    ids=["empty", "spec-example", "foreign-ids", "skips-taken", "gap-below", "dense"],
)
def test_next_schedule_id(seen: tuple[str, ...], expected: str) -> None:
    assert next_schedule_id(FoldState(seen_ids=seen)) == expected


def test_next_schedule_id_never_reuses_a_deleted_id() -> None:
    state = fold(events(change(create_data("schedule-1")), change(delete_data("schedule-1"))))
    assert state.active == () and next_schedule_id(state) == "schedule-2"
