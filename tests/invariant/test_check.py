"""The replay invariant (docs/protocol.md#fold): ``check`` judges one candidate against a fold
state."""

from __future__ import annotations

import sys
from typing import Any

import pytest

from schedlog.errors import CorruptScheduleError
from schedlog.eventlog import DeleteChange, DispatchChange, parse_log
from schedlog.fold import FoldState, fold, replay
from schedlog.invariant import InvariantError, check, validate_log
from tests.eventlog.helpers import (
    change,
    chatter,
    create_data,
    delete_data,
    dispatch_data,
    event,
    header,
    log_bytes,
)

T = "2026-05-01T09:00:00.000Z"
STATE = fold(
    [
        event(change(create_data("one", "after"))),
        event(change(create_data("rate", "every", everySeconds=300))),
        event(change(create_data("gone", "at"))),
        event(change(delete_data("gone"))),
    ]
)

ACCEPTED: list[tuple[str, dict[str, Any]]] = [
    ("chatter", chatter()),
    ("any-other-type", {"type": "x", "data": None, "extra": 1}),
    ("create-new", change(create_data("new"))),
    ("delete-active", change(delete_data("rate"))),
    ("dispatch-one-shot", change(dispatch_data("one"))),
    ("dispatch-every", change(dispatch_data("rate", "2026-05-02T00:00:00.000Z"))),
    ("dispatch-every-at-target", change(dispatch_data("rate", T))),
]


@pytest.mark.parametrize("value", [a[1] for a in ACCEPTED], ids=[a[0] for a in ACCEPTED])
def test_accepted_candidates(value: dict[str, Any]) -> None:
    assert check(STATE, event(value)) is None


REFUSED: list[tuple[str, dict[str, Any], str]] = [
    ("reuse-active", change(create_data("one")), "id_reused"),
    ("reuse-deleted", change(create_data("gone")), "id_reused"),
    ("delete-deleted", change(delete_data("gone")), "delete_inactive"),
    ("delete-unknown", change(delete_data("nope")), "delete_inactive"),
    ("dispatch-deleted", change(dispatch_data("gone")), "dispatch_inactive"),
    ("one-shot-with-accepted-at", change(dispatch_data("one", T)), "one_shot_accepted_at"),
    ("every-without-accepted-at", change(dispatch_data("rate")), "every_accepted_at"),
    ("every-before-target", change(dispatch_data("rate", "2026-05-01T08:00:00.000Z")), "decision"),
    ("undecodable", change({"version": 1, "operation": "create"}), "change"),
    ("envelope", {**change(delete_data("one")), "x": 1}, "envelope"),
]


@pytest.mark.parametrize(("value", "rule"), [r[1:] for r in REFUSED], ids=[r[0] for r in REFUSED])
def test_refused_candidates_name_the_rule(value: dict[str, Any], rule: str) -> None:
    with pytest.raises(InvariantError) as info:
        check(STATE, event(value))
    assert info.value.rule == rule
    assert isinstance(info.value, CorruptScheduleError)
    assert info.value.code == "corrupt_schedule_log"
    with pytest.raises(Exception) as folded:
        fold([*_state_events(), event(value)])
    assert str(folded.value) == str(info.value)  # the same diagnostic as the fold


def _state_events() -> list[Any]:
    return [
        event(change(create_data("one", "after"))),
        event(change(create_data("rate", "every", everySeconds=300))),
        event(change(create_data("gone", "at"))),
        event(change(delete_data("gone"))),
    ]


def test_check_accepts_decoded_changes() -> None:
    check(STATE, DeleteChange(id="one"))
    with pytest.raises(InvariantError):
        check(STATE, DispatchChange(id="rate"))


def test_check_never_refolds(monkeypatch: pytest.MonkeyPatch) -> None:
    def no_fold(*args: object, **kwargs: object) -> FoldState:
        raise AssertionError("check must not fold")

    # Every name the checker could reach a whole-log fold through, re-exports included
    # (schedlog.fold.fold, schedlog.fold, schedlog.invariant.logs, ...), not one binding only.
    folds = {replay.fold, replay.fold_changes}
    patched = 0
    for name, module in list(sys.modules.items()):
        if name == "schedlog" or name.startswith("schedlog."):
            for attr, value in list(vars(module).items()):
                if any(value is f for f in folds):
                    monkeypatch.setattr(module, attr, no_fold)
                    patched += 1
    assert patched >= 3
    check(STATE, event(change(delete_data("one"))))


def test_validate_log_locates_fold_failures() -> None:
    first = log_bytes(header(), chatter())
    data = first + log_bytes(change(delete_data("x")))
    with pytest.raises(InvariantError.__mro__[1]) as info:  # FoldError
        validate_log(parse_log(data, file="f.jsonl"))
    assert (info.value.file, info.value.line, info.value.offset) == ("f.jsonl", 3, len(first))
    assert info.value.describe() == (
        f'f.jsonl:3 (byte {len(first)}): schedule delete targets inactive id "x" - at `$.data.id`'
    )


def test_validate_log_of_a_new_log_is_empty() -> None:
    assert validate_log(parse_log(b"{torn")) == FoldState()
