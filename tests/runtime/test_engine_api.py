"""The embedding API (docs/agents.md#embedding): ``SessionEngine.call``, the async context
managers, refusal before start and after dispose, arguments that are not an object, and a
``SessionLog`` whose ``events()`` breaks its contract."""

from __future__ import annotations

import asyncio
import gc
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from structlog.testing import capture_logs

import schedlog
from schedlog.host.config import Retention
from schedlog.host.service import HostService
from schedlog.host.sessions import SessionsDirectory
from schedlog.host.stores.open import open_store
from schedlog.host.tools import HostTools
from schedlog.runtime.clock import VirtualClock
from schedlog.runtime.engine import TOOL_NAMES, SessionEngine
from schedlog.runtime.interfaces import SessionLogContractError
from schedlog.runtime.tools import SessionTools
from tests.runtime.helpers import Harness, ms, schedule_ops

T0 = ms("2026-05-01T09:00:00Z")
CREATE = {"prompt": 'Stand up <&"> \ud800', "after_seconds": 600}


def _run(body: Any) -> Any:
    return asyncio.run(body())


def test_call_dispatches_each_tool_and_refuses_unknown_names(tmp_path: Path) -> None:
    async def body() -> None:
        harness = Harness(tmp_path / "s-1.jsonl")
        async with SessionEngine(harness, harness, VirtualClock(T0)) as engine:
            created = await engine.call("schedule_create", CREATE)
            assert created["id"] == "schedule-1"
            assert [v["id"] for v in await engine.call("schedule_list")] == ["schedule-1"]
            deleted = await engine.call("schedule_delete", {"id": "schedule-1"})
            assert deleted == {"id": "schedule-1", "deleted": True}
            with pytest.raises(KeyError):
                await engine.call("schedule_update", {})
        assert engine.owner.state == "disposed"

    _run(body)
    assert TOOL_NAMES == ("schedule_create", "schedule_list", "schedule_delete")


@pytest.mark.parametrize("when", ["never-started", "disposed"])
@pytest.mark.parametrize("name", TOOL_NAMES)
def test_an_engine_not_running_refuses_tools_and_writes_nothing(
    tmp_path: Path, name: str, when: str
) -> None:
    async def body() -> None:
        harness = Harness(tmp_path / "s-1.jsonl")
        engine = SessionEngine(harness, harness, VirtualClock(T0))
        if when == "disposed":
            engine.start()
            await engine.dispose()
        args = {"schedule_delete": {"id": "schedule-1"}}.get(name, CREATE)
        value = await engine.call(name, args)
        assert value["code"] == "engine_not_running", value
        assert "start()" in value["message"]

    _run(body)
    path = tmp_path / "s-1.jsonl"
    assert not path.exists() or schedule_ops(path) == []


@pytest.mark.parametrize("args", ["remind me in 5 minutes", ["x"], 7, None, ""])
def test_arguments_that_are_not_an_object_are_invalid_arguments(
    tmp_path: Path, args: object
) -> None:
    async def body() -> list[Any]:
        harness = Harness(tmp_path / "s-1.jsonl")
        async with SessionEngine(harness, harness, VirtualClock(T0)) as engine:
            values = [await engine.call("schedule_create", args)]
            values.append(await engine.schedule_delete(args))
        store = open_store(str(tmp_path / "tasks.json"))
        sessions = SessionsDirectory(str(tmp_path / "sessions"))
        async with HostService(store, sessions, VirtualClock(T0), Retention()) as service:
            values.append(await HostTools(service).call("schedule_create", "s-1", args))
        sessions.close()
        return values

    for value in _run(body):
        assert value["code"] == "invalid_arguments", value
        assert "arguments must be an object" in value["message"]
        assert type(args).__name__ in value["message"]


def test_schedule_list_takes_no_arguments(tmp_path: Path) -> None:
    async def body() -> Any:
        harness = Harness(tmp_path / "s-1.jsonl")
        async with SessionEngine(harness, harness, VirtualClock(T0)) as engine:
            return await engine.call("schedule_list", None)

    assert _run(body) == []


class DictEvents(Harness):
    """A SessionLog that breaks the contract: events() returns plain dicts."""

    def events(self) -> Sequence[Any]:
        return [{"type": e.type, "data": e.data} for e in self.inner.events()]


def test_plain_dict_events_are_a_clear_error_and_a_logged_fault(tmp_path: Path) -> None:
    path = tmp_path / "s-1.jsonl"
    seed = Harness(path)
    seed.inner.append({"type": "note", "data": None})
    seed.inner.flush()
    unretrieved: list[dict[str, Any]] = []

    async def body() -> Any:
        asyncio.get_running_loop().set_exception_handler(lambda _loop, ctx: unretrieved.append(ctx))
        log = DictEvents(path)
        engine = SessionEngine(log, log, VirtualClock(T0))
        with capture_logs() as logs:
            engine.start()
            for _ in range(5):
                await asyncio.sleep(0)
            with pytest.raises(SessionLogContractError, match="event_from_value"):
                await engine.call("schedule_list")
            await engine.dispose()
        return engine, logs

    engine, logs = _run(body)
    gc.collect()
    faults = [e for e in logs if e["event"] == "owner.faulted"]
    assert len(faults) == 1, logs
    assert "item 0 is a dict" in faults[0]["error"]
    assert engine.owner.last_outcome.kind == "faulted"
    assert unretrieved == []


def test_an_exception_escaping_a_drive_faults_the_owner_with_a_log_line(tmp_path: Path) -> None:
    class BadAgent(Harness):
        def claim_maintenance(self) -> Any:
            raise RuntimeError("agent broke <&>")

    async def body() -> Any:
        log = BadAgent(tmp_path / "s-1.jsonl")
        clock = VirtualClock(T0)
        earlier = VirtualClock(T0 - 20 * 60_000)
        SessionTools(log.inner, earlier).schedule_create({"prompt": "p", "after_seconds": 60})
        log.inner.flush()
        engine = SessionEngine(log, log, clock)
        with capture_logs() as logs:
            engine.start()
            await clock.settle()
            state = engine.owner.state
            await engine.dispose()
        return state, logs

    state, logs = _run(body)
    assert state == "faulted"
    assert [e["error"] for e in logs if e["event"] == "owner.faulted"] == ["agent broke <&>"]


def test_the_embedding_names_are_exported() -> None:
    for name in ("FollowupMessage", "build_followup", "Retention", "LogHeader"):
        assert name in schedlog.__all__
        assert getattr(schedlog, name) is not None
