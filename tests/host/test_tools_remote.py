"""Host tools (docs/protocol.md#host-tools) and remote operations (docs/protocol.md#remote): codes
and shapes."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from schedlog.host.remote import call_remote
from schedlog.host.service import HostService
from schedlog.host.tools import HostTools
from schedlog.runtime.clock import VirtualClock
from tests.host.helpers import T0, MemorySessions
from tests.host.test_service import args, run

CREATE_ERRORS = [
    ("two-selectors", {**args(after_seconds=60), "at": "2026-06-01T00:00:00Z"}, "invalid_selector"),
    ("unknown-key", {**args(after_seconds=60), "x": 1}, "invalid_selector"),
    ("no-prompt", {"title": "T", "after_seconds": 60}, "invalid_prompt"),
    ("no-title", {"prompt": "p", "after_seconds": 60}, "invalid_prompt"),
    ("long-title", {"prompt": "p", "title": "x" * 121, "after_seconds": 60}, "invalid_prompt"),
    ("after-zero", args(after_seconds=0), "invalid_rule"),
    ("every-string", args(every_seconds="60"), "invalid_rule"),
    ("every-59", args(every_seconds=59), "frequency_too_high"),
    ("past-at", args(at="2020-01-01T00:00:00Z"), "not_future"),
    ("bad-zone", args(daily={"time": "09:00:00", "time_zone": "Mars/Base"}), "invalid_time_zone"),
]


@pytest.mark.parametrize(
    ("request_args", "code"), [c[1:] for c in CREATE_ERRORS], ids=[c[0] for c in CREATE_ERRORS]
)
def test_create_errors(tmp_path: Path, request_args: dict[str, Any], code: str) -> None:
    async def body(svc: HostService, clock: VirtualClock, _: MemorySessions) -> Any:
        return await HostTools(svc).call("schedule_create", "s-1", request_args)

    result = run(tmp_path, "sqlite", body)
    assert result["code"] == code and isinstance(result["message"], str)


def test_create_returns_host_view(tmp_path: Path) -> None:
    async def body(svc: HostService, clock: VirtualClock, _: MemorySessions) -> Any:
        return await HostTools(svc).call("schedule_create", "s-1", args(after_seconds=60))

    view = run(tmp_path, "sqlite", body)
    assert view["id"].startswith("schedule-") and len(view["id"]) == 45
    assert list(view)[-2:] == ["state", "deliveryMode"]
    assert (view["state"], view["deliveryMode"]) == ("scheduled", "host")


UPDATE_ERRORS = [
    ("after-seconds", {"id": "x", "after_seconds": 60}, "invalid_selector"),
    (
        "two-selectors",
        {"id": "x", "at": "2027-01-01T00:00:00Z", "every_seconds": 60},
        "invalid_selector",
    ),
    ("no-id", {"title": "x"}, "invalid_rule"),
    ("padded-id", {"id": " x", "title": "x"}, "invalid_rule"),
    ("nothing", {"id": "x"}, "invalid_selector"),
    ("blank-title", {"id": "x", "title": " "}, "invalid_prompt"),
    ("null-prompt", {"id": "x", "prompt": None}, "invalid_prompt"),
    ("every-59", {"id": "x", "every_seconds": 59}, "frequency_too_high"),
    # The host prompt limit is a step-4 check too, before the task is looked up.
    ("long-prompt", {"id": "x", "prompt": "<b>\U0001f600</b>" * 1000}, "invalid_prompt"),
    ("long-title", {"id": "x", "title": "\U0001f600" * 61}, "invalid_prompt"),
]


@pytest.mark.parametrize(
    ("request_args", "code"), [c[1:] for c in UPDATE_ERRORS], ids=[c[0] for c in UPDATE_ERRORS]
)
def test_update_errors(tmp_path: Path, request_args: dict[str, Any], code: str) -> None:
    async def body(svc: HostService, clock: VirtualClock, _: MemorySessions) -> Any:
        return await HostTools(svc).call("schedule_update", "s-1", request_args)

    assert run(tmp_path, "sqlite", body)["code"] == code


def test_update_flow(tmp_path: Path) -> None:
    async def body(svc: HostService, clock: VirtualClock, _: MemorySessions) -> None:
        tools = HostTools(svc)
        view = await tools.call("schedule_create", "s-1", args(every_seconds=600))
        rid = view["id"]
        clock.set(T0 + 1000)
        updated = await tools.call("schedule_update", "s-1", {"id": rid, "every_seconds": 900})
        assert updated["everySeconds"] == 900 and updated["deliveryMode"] == "host"
        assert updated["scheduledAt"] == "2026-05-01T06:15:01.000Z"  # re-anchored at the save
        same = await tools.call("schedule_update", "s-1", {"id": rid, "every_seconds": 900})
        assert same == updated
        one = await tools.call("schedule_create", "s-1", args(after_seconds=60))
        clock.set(T0 + 120_000)
        await svc.tick()
        assert await tools.call("schedule_update", "s-1", {"id": one["id"], "title": "x"}) == {
            "id": one["id"],
            "updated": False,
            "code": "schedule_ended",
        }
        assert await tools.call("schedule_delete", "s-1", {"id": one["id"]}) == {
            "id": one["id"],
            "deleted": True,
        }

    run(tmp_path, "json", body)


def test_remote_operations(tmp_path: Path) -> None:
    async def body(svc: HostService, clock: VirtualClock, _: MemorySessions) -> None:
        r = await svc.create("s-1", args(every_seconds=600))
        assert await call_remote(svc, "list", {"sessionId": "s-1"}) == [r.to_json()]
        assert await call_remote(svc, "list", {"sessionId": 5}) == []
        (entry,) = await call_remote(svc, "catalog", {})
        assert entry == {**r.to_json(), "sessionId": "s-1", "status": "active"}
        missing = await call_remote(svc, "update", {"sessionId": "s-1", "id": r.id})
        assert missing == {
            "code": "invalid_rule",
            "message": "expected must be a complete valid Schedule record.",
        }
        stale = {**r.to_json(), "prompt": "old"}
        conflict = await call_remote(
            svc, "update", {"sessionId": "s-1", "id": r.id, "expected": stale, "title": "x"}
        )
        assert conflict == {"id": r.id, "updated": False, "code": "schedule_conflict"}
        done = await call_remote(
            svc, "update", {"sessionId": "s-1", "id": r.id, "expected": r.to_json(), "title": "x"}
        )
        assert done["updated"] is True and done["record"]["title"] == "x"
        with pytest.raises(Exception) as info:
            await call_remote(svc, "history", {"sessionId": "s-1", "id": r.id, "limit": 0})
        assert getattr(info.value, "code", None) == "invalid_rule"
        page = await call_remote(svc, "history", {"sessionId": "s-1", "id": r.id, "limit": 5})
        assert page["records"] == [] and page["earlierRecordsUnavailable"] is False
        assert await call_remote(svc, "delete", {"sessionId": "s-1", "id": 7}) == {
            "id": 7,
            "deleted": False,
            "code": "schedule_not_found",
        }

    run(tmp_path, "sqlite", body)
