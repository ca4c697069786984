"""FoldCursor: the fold of a growing list, applied only to what was appended, equals fold()."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from schedlog.fold import FoldError, fold
from schedlog.fold.incremental import FoldCursor
from tests.eventlog.helpers import change, chatter, create_data, delete_data, event

IDS = ["schedule-1", "schedule-2", "schedule-3"]
values = st.one_of(
    st.just(chatter()),
    st.sampled_from(IDS).map(lambda i: change(create_data(i))),
    st.sampled_from(IDS).map(lambda i: change(delete_data(i))),
)
steps = st.lists(
    st.one_of(
        st.tuples(st.just("append"), st.lists(values, max_size=3)),
        st.tuples(st.just("truncate"), st.integers(0, 5)),
        st.tuples(st.just("replace"), st.lists(values, max_size=3)),
        st.tuples(st.just("look"), st.none()),
    ),
    max_size=12,
)


def _fold_or_error(events: Any, seed: int) -> Any:
    try:
        return fold(events, seed_length=seed)
    except FoldError as exc:
        return (exc.message, exc.index)


def _state_or_error(cursor: FoldCursor, events: Any, seed: int) -> Any:
    try:
        return cursor.state(events, seed_length=seed)
    except FoldError as exc:
        return (exc.message, exc.index)


@given(steps, st.integers(0, 1))
def test_cursor_equals_the_fold_after_every_step(script: list[Any], seed: int) -> None:
    events = [event(chatter("inherited"))]
    cursor = FoldCursor()
    for op, arg in script:
        if op == "append":
            events.extend(event(v) for v in arg)
        elif op == "truncate":
            del events[max(len(events) - arg, 1) :]
        elif op == "replace":  # a re-opened log: another list, maybe other events
            events = [*events[:1], *(event(v) for v in arg)]
        assert _state_or_error(cursor, events, seed) == _fold_or_error(events, seed)


def test_cursor_folds_only_the_appended_events() -> None:
    events = [event(change(create_data("schedule-1"))), event(chatter())]
    cursor = FoldCursor()
    assert [r.id for r in cursor.state(events).active] == ["schedule-1"]
    assert cursor.folded == 2
    events[0] = event(chatter())  # changed behind what the cursor saw last: not looked at
    events.append(event(change(delete_data("schedule-1"))))
    assert cursor.state(events).active == ()  # a fold from the start would fail here
    assert cursor.folded == 3
    events[2] = event(change(delete_data("schedule-1")))  # the last event seen was replaced
    with pytest.raises(FoldError):
        cursor.state(events)  # so everything is folded again
    assert cursor.folded == 0


def test_a_different_seed_length_folds_from_the_start() -> None:
    """Same list, same events, another seed length: the remembered state covers other owned
    events, so it must not be reused (issue 22: the seed-length check was untested)."""
    events = [event(change(create_data("schedule-1"))), event(chatter())]
    cursor = FoldCursor()
    assert [r.id for r in cursor.state(events, seed_length=0).active] == ["schedule-1"]
    assert cursor.state(events, seed_length=1).active == ()  # the create is inherited now
    assert cursor.state(events, seed_length=1) == fold(events, seed_length=1)
    assert [r.id for r in cursor.state(events, seed_length=0).active] == ["schedule-1"]
