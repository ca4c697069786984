"""Random event streams: the fold equals a simple model after every step, and
``check(prefix_state, e)`` accepts exactly when ``fold(prefix + [e])`` succeeds
(docs/protocol.md#fold)."""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    precondition,
    rule,
)

from schedlog.eventlog import LogEvent
from schedlog.fold import FoldError, FoldState, apply_event, fold, next_schedule_id
from schedlog.invariant import InvariantError, check
from schedlog.rules.instants import MAX_MS, format_instant
from tests.eventlog.helpers import change, chatter, create_data, delete_data, dispatch_data, event

BASE = 1_777_626_000_000  # 2026-05-01T09:00:00.000Z
ID_POOL = ["schedule-1", "schedule-2", "schedule-3", "x", "y"]

json_leaf = st.none() | st.booleans() | st.integers(-3, 3) | st.text(max_size=3)
json_junk = st.recursive(
    json_leaf,
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.dictionaries(
            st.sampled_from(["version", "operation", "id", "schedule", "acceptedAt", "k"]),
            inner | st.sampled_from(["create", "delete", "dispatch", 1, "schedule-1"]),
            max_size=4,
        )
    ),
    max_leaves=5,
)
targets = st.one_of(
    st.integers(0, 400_000).map(lambda s: BASE + s * 1000),
    st.integers(0, 5_000).map(lambda s: MAX_MS - s * 1000),  # near the end: rules exhaust
)
prefix_events = st.one_of(
    st.just(chatter("inherited")),
    st.sampled_from(ID_POOL).map(lambda i: change(create_data(i))),
    json_junk.map(change),  # a corrupt inherited change is never folded
)


class Model:
    """The fold, written as plainly as possible: ``[id, kind, target, seconds]`` rows."""

    def __init__(self) -> None:
        self.active: list[list[Any]] = []
        self.seen: list[str] = []

    def find(self, rid: str) -> list[Any] | None:
        return next((row for row in self.active if row[0] == rid), None)

    def create(self, rid: str, kind: str, target: int, seconds: int | None) -> bool:
        if rid in self.seen:
            return False
        self.active.append([rid, kind, target, seconds])
        self.seen.append(rid)
        return True

    def delete(self, rid: str) -> bool:
        row = self.find(rid)
        if row is None:
            return False
        self.active.remove(row)
        return True

    def dispatch(self, rid: str, accepted_at: int | None) -> bool:
        row = self.find(rid)
        if row is None:
            return False
        _, kind, target, seconds = row
        if kind != "every":
            if accepted_at is not None:
                return False
            self.active.remove(row)
            return True
        if accepted_at is None or accepted_at < target:
            return False
        interval = seconds * 1000
        occurrence = target + (accepted_at - target) // interval * interval
        if occurrence + interval > MAX_MS:
            self.active.remove(row)
        else:
            row[2] = occurrence + interval
        return True

    def rows(self) -> list[tuple[Any, ...]]:
        return [tuple(row) for row in self.active]

    def next_id(self) -> str:
        n = len(self.seen) + 1
        while f"schedule-{n}" in self.seen:
            n += 1
        return f"schedule-{n}"


def rows(state: FoldState) -> list[tuple[Any, ...]]:
    return [(r.id, r.kind, r.scheduled_at, r.every_seconds) for r in state.active]


class EventStream(RuleBasedStateMachine):
    @initialize(prefix=st.lists(prefix_events, max_size=4))
    def start(self, prefix: list[dict[str, Any]]) -> None:
        self.events: list[LogEvent] = [event(v) for v in prefix]
        self.seed = len(self.events)
        self.state = FoldState()
        self.model = Model()

    def propose(self, value: dict[str, Any], model_step: Any = None) -> bool:
        """Offer one candidate; the verdicts of check, fold and (when given) the model agree."""
        candidate = event(value)
        try:
            check(self.state, candidate)
            accepted = True
        except InvariantError:
            accepted = False
        try:
            folded = fold([*self.events, candidate], seed_length=self.seed)
            folds = True
        except FoldError:
            folds = False
        assert accepted == folds, value
        if model_step is not None:
            assert model_step() == accepted, value
        elif accepted:
            return False  # a junk candidate the model cannot apply: keep the stream as is
        if accepted:
            self.events.append(candidate)
            self.state = apply_event(self.state, candidate)
            assert self.state == folded
        return accepted

    @rule(
        kind=st.sampled_from(["after", "at", "every"]),
        fresh=st.booleans(),
        rid=st.sampled_from(ID_POOL),
        when=targets,
        seconds=st.sampled_from([300, 301, 3600, 86_400]),
    )
    def create(self, kind: str, fresh: bool, rid: str, when: int, seconds: int) -> None:
        if fresh:
            rid = next_schedule_id(self.state)
        extra: dict[str, Any] = {}
        if kind == "after":
            extra["afterSeconds"] = seconds
        elif kind == "every":
            extra["everySeconds"] = seconds
        value = change(create_data(rid, kind, format_instant(when), **extra))
        every = seconds if kind == "every" else None
        ok = self.propose(value, lambda: self.model.create(rid, kind, when, every))
        assert ok or not fresh

    @rule(rid=st.sampled_from(ID_POOL))
    def delete(self, rid: str) -> None:
        self.propose(change(delete_data(rid)), lambda: self.model.delete(rid))

    @rule(
        rid=st.sampled_from(ID_POOL),
        with_accepted_at=st.booleans(),
        offset=st.integers(-2_000_000, 50_000_000),
    )
    def dispatch(self, rid: str, with_accepted_at: bool, offset: int) -> None:
        row = self.model.find(rid)
        accepted_at: int | None = None
        if with_accepted_at:
            anchor = row[2] if row is not None else BASE
            accepted_at = min(max(anchor + offset, 0), MAX_MS)
        text = None if accepted_at is None else format_instant(accepted_at)
        self.propose(
            change(dispatch_data(rid, text)), lambda: self.model.dispatch(rid, accepted_at)
        )

    @precondition(lambda self: bool(self.model.active))
    @rule(data=st.data())
    def dispatch_active_correctly(self, data: st.DataObject) -> None:
        rid, kind, target, _ = data.draw(st.sampled_from(self.model.rows()))
        accepted_at = None
        if kind == "every":
            accepted_at = min(target + data.draw(st.integers(0, 10**8)), MAX_MS)
        text = None if accepted_at is None else format_instant(accepted_at)
        assert self.propose(
            change(dispatch_data(rid, text)), lambda: self.model.dispatch(rid, accepted_at)
        )

    @rule(text=st.text(max_size=5))
    def chat(self, text: str) -> None:
        assert self.propose(chatter(text), lambda: True)

    @rule(junk=json_junk)
    def junk_change(self, junk: Any) -> None:
        self.propose(change(junk))

    @rule(rid=st.sampled_from(ID_POOL))
    def bad_envelope(self, rid: str) -> None:
        self.propose({**change(delete_data(rid)), "extra": 1}, lambda: False)

    @invariant()
    def fold_equals_model(self) -> None:
        if not hasattr(self, "model"):
            return
        state = fold(self.events, seed_length=self.seed)
        assert state == self.state
        assert rows(state) == self.model.rows()
        assert list(state.seen_ids) == self.model.seen
        assert next_schedule_id(state) == self.model.next_id()


TestEventStream = EventStream.TestCase
