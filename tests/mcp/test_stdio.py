"""``schedlog mcp`` over stdio with the SDK's own client: the tools are the catalog's, and each
call answers what ``host batch`` / ``session batch`` answer on the same store or log."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from tests.mcp.support import (
    HOSTILE,
    batch,
    catalog,
    host_batch,
    now_text,
    require_mcp,
    stdio_params,
    value_of,
)

require_mcp()

from mcp import Client  # noqa: E402
from mcp.shared.exceptions import MCPError  # noqa: E402

CREATES: list[dict[str, Any]] = [
    {"prompt": HOSTILE, "title": "Break <&>", "after_seconds": 3600},
    {"prompt": "Deploy", "title": "Ship", "at": "2031-05-01T09:00:00Z"},
    {
        "prompt": "Stand-up",
        "title": "Daily",
        "daily": {"time": "09:30:00", "time_zone": "Europe/Berlin"},
    },
    {"prompt": "Report", "title": "Cron", "cron": {"expression": "0 9 * * 1", "time_zone": "UTC"}},
]
#: Calls whose answer does not depend on the clock or on ids: error values and result codes.
ERRORS: list[tuple[str, dict[str, Any]]] = [
    ("schedule_create", {"prompt": "", "title": "t", "after_seconds": 60}),
    ("schedule_create", {"prompt": "p", "title": "t", "after_seconds": 60, "at": "x"}),
    ("schedule_create", {"prompt": "p", "title": "t", "every_seconds": 1}),
    (
        "schedule_create",
        {"prompt": "p", "title": "t", "daily": {"time": "09:00:00", "time_zone": "Mars/Base"}},
    ),
    ("schedule_create", {"prompt": "p", "title": "x" * 121, "after_seconds": 60}),
    ("schedule_create", {}),
    ("schedule_delete", {"id": " padded "}),
    ("schedule_delete", {"id": "schedule-missing"}),
    ("schedule_update", {"id": "schedule-missing", "title": "new"}),
    ("schedule_update", {"id": "x"}),
    ("schedule_pause", {"id": "schedule-missing"}),
    ("schedule_resume", {"id": " <b>padded</b>"}),
]


def test_host_tools_over_stdio_answer_as_host_batch(tmp_path: Path) -> None:
    store, sessions = str(tmp_path / "tasks.sqlite"), str(tmp_path / "sessions")

    async def session() -> tuple[Any, ...]:
        async with Client(
            stdio_params("--store", store, "--sessions", sessions, "--session", "chat-1")
        ) as client:
            tools = (await client.list_tools()).tools
            created = [value_of(await client.call_tool("schedule_create", a)) for a in CREATES]
            update = {"id": created[1]["id"], "title": "Ship it", "at": "2032-01-01T00:00:00Z"}
            updated = value_of(await client.call_tool("schedule_update", update))
            deleted = value_of(await client.call_tool("schedule_delete", {"id": created[3]["id"]}))
            listed = value_of(await client.call_tool("schedule_list", {}))
            errors = [value_of(await client.call_tool(n, a)) for n, a in ERRORS]
            return tools, created, updated, deleted, listed, errors

    tools, created, updated, deleted, listed, errors = asyncio.run(session())
    expected = catalog("host")["tools"]
    assert [(t.name, t.description, t.input_schema) for t in tools] == [
        (t["name"], t["description"], t["parameters"]) for t in expected
    ]
    assert deleted == {"id": created[3]["id"], "deleted": True}
    assert updated["title"] == "Ship it" and updated["scheduledAt"] == "2032-01-01T00:00:00.000Z"
    assert sorted(listed, key=lambda v: v["id"]) == sorted(
        [created[0], updated, created[2]], key=lambda v: v["id"]
    )
    # The same store through host batch, once the server process has gone: the same values.
    now = now_text()
    answers = host_batch(
        store,
        sessions,
        [{"op": "schedule_list", "session": "chat-1", "now": now, "args": {}}]
        + [{"op": n, "session": "chat-1", "now": now, "args": a} for n, a in ERRORS],
    )
    assert [a["ok"] for a in answers] == [listed, *errors]
    assert any(e.get("code") == "invalid_prompt" for e in errors)


def test_session_local_tools_over_stdio_answer_as_session_batch(tmp_path: Path) -> None:
    log = str(tmp_path / "chat-7.jsonl")
    create = {"prompt": HOSTILE, "after_seconds": 3600}
    errors = [
        ("schedule_create", {"prompt": "p", "title": "t", "after_seconds": 600}),
        ("schedule_create", {"prompt": "p", "every_seconds": 60}),
        ("schedule_delete", {"id": "schedule-9"}),
        ("schedule_delete", {"id": ""}),
    ]

    async def session() -> tuple[Any, ...]:
        async with Client(stdio_params("--log", log)) as client:
            tools = (await client.list_tools()).tools
            created = value_of(await client.call_tool("schedule_create", create))
            second = value_of(await client.call_tool("schedule_create", create))
            deleted = value_of(await client.call_tool("schedule_delete", {"id": second["id"]}))
            listed = value_of(await client.call_tool("schedule_list", {}))
            answers = [value_of(await client.call_tool(n, a)) for n, a in errors]
            return tools, created, deleted, listed, answers

    tools, created, deleted, listed, answers = asyncio.run(session())
    assert [t.name for t in tools] == [t["name"] for t in catalog("session-local")["tools"]]
    assert created["id"] == "schedule-1" and created["prompt"] == HOSTILE
    assert deleted == {"id": "schedule-2", "deleted": True}
    assert listed == [created]
    now = now_text()
    replies = batch(
        ["session", "batch", "--log", log],
        [{"op": "schedule_list", "now": now, "args": {}}]
        + [{"op": n, "now": now, "args": a} for n, a in errors],
    )
    assert [r["ok"] for r in replies] == [listed, *answers]


def test_an_unknown_tool_is_a_protocol_error_and_writes_nothing(tmp_path: Path) -> None:
    log = str(tmp_path / "chat-7.jsonl")

    async def session() -> str:
        async with Client(stdio_params("--log", log)) as client:
            with pytest.raises(MCPError) as caught:
                await client.call_tool("schedule_update", {"id": "schedule-1", "title": "t"})
            return str(caught.value)

    message = asyncio.run(session())
    assert "unknown tool 'schedule_update'" in message
    assert "schedule_create, schedule_list, schedule_delete" in message
    assert not Path(log).exists() or "schedule/change" not in Path(log).read_text()


def test_huge_prompts_round_trip(tmp_path: Path) -> None:
    log = str(tmp_path / "chat-7.jsonl")
    huge = '<&">' * 16_384

    async def session() -> Any:
        async with Client(stdio_params("--log", log)) as client:
            return await client.call_tool("schedule_create", {"prompt": huge, "after_seconds": 600})

    assert value_of(asyncio.run(session()))["prompt"] == huge


def test_a_lone_surrogate_in_a_tool_value_is_escaped_in_both_copies() -> None:
    """The SDK cannot carry a lone surrogate either way (its JSON encoder and parser refuse
    it), but a value read from a log can hold one: its JSON text escapes it, and the structured
    copy spells the escape out, so the result always encodes."""
    from mcp_types import CallToolResult

    from schedlog.mcp.tools import tool_result

    result = tool_result([{"id": "schedule-1", "prompt": "x\ud800y <&>"}])
    wire = CallToolResult.model_validate_json(result.model_dump_json(by_alias=True))
    assert '"prompt":"x\\ud800y <&>"' in wire.content[0].text
    assert wire.structured_content == {"result": [{"id": "schedule-1", "prompt": "x\\ud800y <&>"}]}
    assert wire.is_error is False
    assert tool_result({"code": "invalid_rule", "message": "m"}).is_error is True
    assert (
        tool_result({"id": "s", "deleted": False, "code": "schedule_not_found"}).is_error is False
    )


def test_usage_errors_and_a_store_that_does_not_open(tmp_path: Path) -> None:
    import subprocess
    import sys

    from tests.mcp.support import RUNNER

    bad = tmp_path / "bad.sqlite"
    bad.write_bytes(b"not a database <&>")
    for args, code in [
        (["--store", str(bad)], "invalid_request"),
        (["--log", "x.jsonl", "--store", str(bad)], "invalid_request"),
        (["--store", str(bad), "--sessions", str(tmp_path), "--session", "s"], "malformed-medium"),
    ]:
        done = subprocess.run(
            [sys.executable, "-c", RUNNER, "mcp", *args], capture_output=True, text=True, timeout=60
        )
        assert done.returncode == 1
        assert done.stdout == ""
        assert f'"code":"{code}"' in done.stderr, done.stderr
