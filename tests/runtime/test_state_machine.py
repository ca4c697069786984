"""A Hypothesis state machine driving the live engine with random tool calls, clock jumps
(forward and back), busy/idle agent phases, failing barriers and follow-ups, crashes between a
follow-up and its dispatch, and restarts. Checked after every step: the engine's view equals
``fold(log)``, no member is delivered twice, every dispatch follows its follow-up, and (when
the engine is quiesced) no due reminder is left behind."""

from __future__ import annotations

import asyncio
import shutil
import tempfile
from pathlib import Path
from typing import Any

import hypothesis.strategies as st
from hypothesis import settings
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule
from structlog.testing import capture_logs

from schedlog.eventlog import encode_line, read_log
from schedlog.eventlog.followups import Member, parse_followup
from schedlog.fold import FoldState, apply_event, fold
from schedlog.rules.decide import decide
from schedlog.rules.instants import format_instant
from schedlog.runtime.clock import VirtualClock
from schedlog.runtime.engine import SessionEngine
from tests.runtime.helpers import Harness, ms

T0 = ms("2026-05-01T09:00:00Z")
MIN = 60_000


def log_fold(path: Path) -> FoldState:
    contents = read_log(path)
    assert contents.corruption is None, contents.corruption
    assert contents.header is not None
    return fold(contents.events, seed_length=contents.header.seed_length)


def audit_log(path: Path) -> None:
    """No member delivered twice; every dispatch follows a follow-up holding its member."""
    contents = read_log(path)
    state = FoldState()
    delivered: set[Member] = set()
    for event in contents.events:
        if event.type == "message/followup":
            followup = parse_followup(event.data)
            assert followup is not None
            for member in followup.reminders:
                assert member not in delivered, f"{member} delivered twice"
                delivered.add(member)
        elif event.type == "schedule/change" and event.data["operation"] == "dispatch":
            record = state.get(event.data["id"])
            assert record is not None
            if record.is_one_shot:
                occurrence = record.scheduled_at
            else:
                accepted = ms(event.data["acceptedAt"])
                occurrence = decide(record, accepted).occurrence_at
            assert Member(record.id, occurrence) in delivered, "dispatch before its follow-up"
        state = apply_event(state, event)


class EngineMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.dir = Path(tempfile.mkdtemp(prefix="schedlog-sm-"))
        self.path = self.dir / "s-1.jsonl"
        self.loop = asyncio.new_event_loop()
        self.clock = VirtualClock(T0)
        self.ids: list[str] = []
        self.busy = False
        self.failures_injected = False
        self._logs = capture_logs()
        self._logs.__enter__()
        self._build()

    def _build(self) -> None:
        self.harness = Harness(self.path)
        self.engine = SessionEngine(self.harness, self.harness, self.clock)
        self.busy = False
        self.run(self._start())

    async def _start(self) -> None:
        self.engine.start()
        await self.clock.settle()

    def run(self, coro: Any) -> Any:
        return self.loop.run_until_complete(coro)

    def teardown(self) -> None:
        try:
            self.run(self.engine.dispose())
            self.harness.inner.close()
        finally:
            self._logs.__exit__(None, None, None)
            self.loop.close()
            shutil.rmtree(self.dir, ignore_errors=True)

    async def _call(self, coro: Any) -> Any:
        value = await coro
        await self.clock.settle()
        return value

    # --- tool calls --------------------------------------------------------------------------

    @rule(
        prompt=st.sampled_from(["a", "b", "  c  "]),
        selector=st.one_of(
            st.tuples(st.just("after_seconds"), st.integers(1, 3 * 3600)),
            st.tuples(st.just("every_seconds"), st.integers(300, 3600)),
            st.tuples(st.just("at"), st.integers(1, 3 * 3600 * 1000)),
        ),
    )
    def create(self, prompt: str, selector: tuple[str, int]) -> None:
        key, amount = selector
        value: object = format_instant(self.clock.now_ms() + amount) if key == "at" else amount
        result = self.run(self._call(self.engine.schedule_create({"prompt": prompt, key: value})))
        assert isinstance(result, dict)
        if "id" in result:
            self.ids.append(result["id"])
        else:
            assert result["code"] in ("persistence_uncertain",), result

    @precondition(lambda self: self.ids)
    @rule(data=st.data())
    def delete(self, data: st.DataObject) -> None:
        target = data.draw(st.sampled_from([*self.ids, "schedule-999"]))
        result = self.run(self._call(self.engine.schedule_delete({"id": target})))
        assert isinstance(result, dict)
        assert result.get("deleted") in (True, False) or result["code"] == "persistence_uncertain"

    @rule()
    def list_views(self) -> None:
        async def list_and_read_log() -> tuple[Any, FoldState | None]:
            # Hold the session's queue so the log cannot move between the two readings.
            async with self.engine.queue:
                views = self.engine.tools.schedule_list({})
                disk = log_fold(self.path) if isinstance(views, list) else None
            await self.clock.settle()
            return views, disk

        views, disk = self.run(list_and_read_log())
        if disk is None:
            assert views["code"] == "persistence_uncertain"
            return
        now = self.clock.now_ms()
        # The engine's view equals the fold of the log on disk, at the same clock sample.
        assert views == [r.view(now, "session-local") for r in disk.active]

    # --- time and the agent ------------------------------------------------------------------

    @rule(delta=st.integers(0, 2 * 3600 * 1000))
    def advance(self, delta: int) -> None:
        self.run(self.clock.run_until(self.clock.now_ms() + delta))
        if not self.busy and not self.failures_injected:
            # The timer alone delivers everything due: no reminder is lost or late.
            self.assert_nothing_due()

    @rule(delta=st.integers(1, 3600 * 1000))
    def roll_back(self, delta: int) -> None:
        before = len(self.harness.outbox)
        self.clock.set(self.clock.now_ms() - delta)
        self.run(self.clock.settle())
        assert len(self.harness.outbox) == before

    @precondition(lambda self: not self.busy)
    @rule()
    def begin_turn(self) -> None:
        if self.harness.inner.busy:  # a maintenance claim is in progress
            return
        self.harness.inner.begin_turn()
        self.busy = True

    @precondition(lambda self: self.busy)
    @rule()
    def end_turn(self) -> None:
        self.harness.inner.end_turn()
        self.busy = False
        self.run(self.clock.settle())

    # --- failures ----------------------------------------------------------------------------

    @rule(failure=st.sampled_from([False, OSError("fsync failed")]))
    def next_barrier_fails(self, failure: bool | Exception) -> None:
        self.failures_injected = True
        self.harness.barrier_results.append(failure)

    @rule()
    def next_followup_fails(self) -> None:
        self.failures_injected = True
        self.harness.fail_followup = RuntimeError("agent queue closed")

    @rule()
    def crash_before_dispatch(self) -> None:
        self.failures_injected = True
        self.harness.fail_dispatch_append = OSError("process died")

    @rule()
    def restart(self) -> None:
        """The session closes and reopens: a new owner rebuilt from the log."""
        self.run(self.engine.dispose())
        self.harness.inner.close()
        self._build()

    # --- another writer ----------------------------------------------------------------------

    @rule(text=st.sampled_from(["hi", "a:b"]), delete=st.booleans())
    def foreign_append(self, text: str, delete: bool) -> None:
        """Another writer appends a chat event, or deletes an active reminder: the engine sees
        the appended lines by the file's length and folds only those."""
        if self.harness.inner._log is None or not self.path.exists():
            return
        lines = [encode_line({"type": "message/user", "data": {"text": text}})]
        active = log_fold(self.path).active
        if delete and active:
            change = {"version": 1, "operation": "delete", "id": active[0].id}
            lines.append(encode_line({"type": "schedule/change", "data": change}))
        with self.path.open("ab") as f:
            f.write(b"".join(lines))

    @rule(keep=st.integers(0, 40), replace=st.booleans())
    def foreign_rewrite(self, keep: int, replace: bool) -> None:
        """Another writer truncates the log to a line boundary, or replaces the file with a
        copy (a new inode): the engine reads it again from the start."""
        if self.harness.inner._log is None or not self.path.exists():
            return
        data = self.path.read_bytes()
        lines = data.splitlines(keepends=True)
        if not replace:
            if len(lines) <= 1:
                return
            kept = b"".join(lines[: 1 + keep % len(lines)])
            with self.path.open("r+b") as f:
                f.truncate(len(kept))
            return
        copy = self.path.with_suffix(".copy")
        copy.write_bytes(data)
        copy.replace(self.path)

    @rule()
    def quiesce(self) -> None:
        """Clear the failures, go idle, trigger a drive: then nothing due may be left."""
        if self.engine.owner.state == "faulted":
            self.restart()
        self.harness.barrier_results.clear()
        self.harness.fail_followup = None
        self.harness.fail_dispatch_append = None
        if self.busy:
            self.end_turn()
        self.failures_injected = False
        self.run(self._call(self.engine.schedule_list({})))
        self.assert_nothing_due()

    def assert_nothing_due(self) -> None:
        now = self.clock.now_ms()
        assert self.engine.owner.state == "running"
        overdue = [r.id for r in log_fold(self.path).active if r.scheduled_at <= now]
        assert overdue == [], f"due reminders left behind: {overdue}"

    # --- invariants --------------------------------------------------------------------------

    @invariant()
    def engine_state_equals_the_log_on_disk(self) -> None:
        if self.harness.inner._log is None:
            return
        events = self.harness.inner.events()
        assert fold(events, seed_length=0) == log_fold(self.path)

    @invariant()
    def deliveries_are_unique_and_dispatches_follow_followups(self) -> None:
        if self.path.exists():
            audit_log(self.path)

    @invariant()
    def the_owner_faults_only_after_a_failed_dispatch_append(self) -> None:
        if self.engine.owner.state == "faulted":
            assert self.harness.fail_dispatch_append is not None


EngineMachine.TestCase.settings = settings(max_examples=40, stateful_step_count=30, deadline=None)
TestEngineMachine = EngineMachine.TestCase
