"""A Hypothesis state machine over the host service with pause and resume (docs/protocol.md#pause):
random creates, pauses, resumes, edits, deletes, clock jumps with delivery ticks and restarts on
one store of each backend (the JSON document answers every pause ``pause_unsupported``), on a
virtual clock, against a simple model of what each task is.

Checked after every step: the service's view equals the store read afresh and the model (which
tasks exist, which are active, which paused); no paused task is ever delivered; no occurrence is
delivered twice; after a tick nothing active and unpaused is left due; a pause or resume says
``changed`` exactly when the model's state changes; a resumed ``every`` task keeps its anchor
and a resumed one-shot its target."""

from __future__ import annotations

import asyncio
import itertools
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import hypothesis.strategies as st
import pytest
from hypothesis import settings
from hypothesis.stateful import (
    RuleBasedStateMachine,
    invariant,
    precondition,
    rule,
    run_state_machine_as_test,
)

from schedlog.host.config import Retention
from schedlog.host.service import HostService
from schedlog.host.stores.open import open_store
from schedlog.host.tools import HostTools
from schedlog.rules.instants import parse_canonical_instant
from schedlog.runtime.clock import VirtualClock
from tests import pg
from tests.host import conftest
from tests.host.helpers import T0, MemorySessions

MIN = 60_000
TITLES = st.sampled_from(["Standup", "<b>bold</b>", "a & b", "\u05e9\u05dc\u05d5\u05dd", "x" * 120])


@dataclass
class Model:
    one_shot: bool
    every_ms: int | None
    active: bool = True
    paused: bool = False
    anchor: int = 0  # the committed target when paused


def instant(text: str) -> int:
    value = parse_canonical_instant(text)
    assert value is not None
    return value


class PauseMachine(RuleBasedStateMachine):
    #: The backend of every machine run: set by the test below.
    backend = "sqlite"

    def __init__(self) -> None:
        super().__init__()
        self.dir = Path(tempfile.mkdtemp(prefix="schedlog-pause-sm-"))
        if self.backend == "postgresql":
            url = conftest.store_path(self.dir, self.backend)
            pg.sql(str(url), "DELETE FROM schedlog_tasks")  # migrated once by the fixture
        self.loop = asyncio.new_event_loop()
        self.clock = VirtualClock(T0)
        self.sessions = MemorySessions()
        self.models: dict[str, Model] = {}
        self.delivered: set[tuple[str, int]] = set()
        # Deterministic ids, so that a failing run replays the same draws.
        self._ids = (f"schedule-sm-{i}" for i in itertools.count())
        self._open()

    def _open(self) -> None:
        async def start() -> HostService:
            store = open_store(conftest.store_path(self.dir, self.backend))
            return HostService(
                store,
                self.sessions,
                self.clock,
                Retention(),
                auto_drive=False,
                task_ids=lambda: next(self._ids),
            )

        self.svc = self.loop.run_until_complete(start())
        self.tools = HostTools(self.svc)

    def _call(self, name: str, args: dict[str, Any]) -> Any:
        return self.loop.run_until_complete(self.tools.call(name, "s-1", args))

    def teardown(self) -> None:
        self.loop.run_until_complete(self.svc.aclose())
        self.loop.close()
        shutil.rmtree(self.dir, ignore_errors=True)

    # --- rules ---------------------------------------------------------------------------

    @rule(title=TITLES, minutes=st.integers(1, 180), recurring=st.booleans())
    def create(self, title: str, minutes: int, recurring: bool) -> None:
        selector = {"every_seconds": minutes * 60} if recurring else {"after_seconds": minutes * 60}
        view = self._call(
            "schedule_create", {"prompt": f"<p>{title}</p>", "title": title, **selector}
        )
        assert view["state"] == "scheduled", view
        self.models[view["id"]] = Model(not recurring, minutes * MIN if recurring else None)

    def _pick(self, data: st.DataObject) -> str:
        return data.draw(st.sampled_from(sorted(self.models)))

    @precondition(lambda self: self.models)
    @rule(data=st.data())
    def pause(self, data: st.DataObject) -> None:
        task_id = self._pick(data)
        model = self.models[task_id]
        before = self.svc.find("s-1", task_id)
        value = self._call("schedule_pause", {"id": task_id})
        if not model.active:
            assert value == {"id": task_id, "changed": False, "code": "schedule_ended"}
            return
        if self.backend == "json":
            assert value == {"id": task_id, "changed": False, "code": "pause_unsupported"}
            return
        assert value["paused"] is True and value["changed"] is (not model.paused), value
        if not model.paused:
            assert before is not None
            model.paused, model.anchor = True, before.record.scheduled_at

    @precondition(lambda self: self.models)
    @rule(data=st.data())
    def resume(self, data: st.DataObject) -> None:
        task_id = self._pick(data)
        model = self.models[task_id]
        value = self._call("schedule_resume", {"id": task_id})
        if not model.active:
            assert value == {"id": task_id, "changed": False, "code": "schedule_ended"}
            return
        assert value["changed"] is model.paused, value
        if not model.paused:
            return
        model.paused = False
        target = instant(value["scheduledAt"])
        now = self.clock.now_ms()
        if model.one_shot:
            assert target == model.anchor  # its target is kept
        else:
            assert model.every_ms is not None
            assert (target - model.anchor) % model.every_ms == 0  # the anchor is kept
            assert target > now or target == model.anchor  # nothing inside the pause comes back
        assert value["state"] == ("overdue" if target <= now else "scheduled")

    @precondition(lambda self: self.models)
    @rule(data=st.data(), title=TITLES)
    def edit(self, data: st.DataObject, title: str) -> None:
        task_id = self._pick(data)
        model = self.models[task_id]
        value = self._call("schedule_update", {"id": task_id, "title": title})
        if not model.active:
            assert value["code"] == "schedule_ended"
            return
        assert value["state"] == "paused" if model.paused else value["state"] != "paused"
        if model.paused:  # the edit keeps it paused, and its target (the anchor) too
            assert instant(value["scheduledAt"]) == model.anchor

    @precondition(lambda self: self.models)
    @rule(data=st.data())
    def delete(self, data: st.DataObject) -> None:
        task_id = self._pick(data)
        assert self._call("schedule_delete", {"id": task_id})["deleted"] is True
        del self.models[task_id]

    @rule(minutes=st.integers(0, 600))
    def tick(self, minutes: int) -> None:
        self.clock.advance(minutes * MIN)
        sent = self.loop.run_until_complete(self.svc.tick())
        for message in sent:
            for member in message.members:
                model = self.models[member.id]
                assert not model.paused, f"paused task {member.id} delivered"
                key = (member.id, member.occurrence_at)
                assert key not in self.delivered, f"{key} delivered twice"
                self.delivered.add(key)
        for task_id, model in self.models.items():
            task = self.svc.find("s-1", task_id)
            assert task is not None
            model.active = task.active
            if task.active and not task.paused:  # nothing due is left behind
                assert task.record.scheduled_at > self.clock.now_ms()

    @rule()
    def restart(self) -> None:
        self.loop.run_until_complete(self.svc.aclose())
        self._open()

    # --- the view, the store and the model -------------------------------------------------

    @invariant()
    def view_equals_store_and_model(self) -> None:
        stored = {st.task.id: st.task for st in self.svc.core.store.tasks()}
        assert set(stored) == set(self.models)
        listed = {t.id for t in self.svc.list_tasks("s-1")}
        assert listed == {i for i, m in self.models.items() if m.active}
        catalog = {e["id"]: e["status"] for e in self.svc.catalog()}
        for task_id, model in self.models.items():
            task = stored[task_id]
            assert task.active is model.active
            assert task.paused is model.paused
            assert self.svc.find("s-1", task_id) == task
            expected = "inactive" if not model.active else "paused" if model.paused else "active"
            assert catalog[task_id] == expected
        unpaused = sum(1 for m in self.models.values() if m.active and not m.paused)
        assert self.svc.core.active_count() == unpaused  # the timer index leaves paused ones out


def test_pause_state_machine(backend: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(PauseMachine, "backend", backend)
    profile = settings.default  # the loaded project profile (tests/conftest.py)
    # Every PostgreSQL write is a round trip and each restart a new pool: a fifth of the
    # profile's examples there keeps this test near the file backends' time.
    examples = profile.max_examples // 5 if backend == "postgresql" else profile.max_examples
    chosen = settings(profile, stateful_step_count=30, max_examples=max(examples, 10))
    run_state_machine_as_test(PauseMachine, settings=chosen)
