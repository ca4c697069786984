"""The streamable-HTTP endpoint of ``schedlog host serve`` with the SDK's own client: the same
tools and values as ``host batch``, the guard in front, 20 concurrent clients that never see
each other's sessions."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from tests.mcp.support import HOSTILE, catalog, host_batch, now_text, require_mcp, value_of

require_mcp()

import httpx  # noqa: E402
from mcp.shared.exceptions import MCPError  # noqa: E402

from tests.mcp.http_support import client, mcp_url, serving  # noqa: E402


def _create(session_id: str, n: int = 0) -> dict[str, Any]:
    return {"prompt": f"{HOSTILE} for {session_id}", "title": f"t{n}", "after_seconds": 3600 + n}


def test_tools_over_http_answer_as_host_batch(tmp_path: Path) -> None:
    store, sessions = tmp_path / "tasks.sqlite", tmp_path / "sessions"
    errors = [
        ("schedule_create", {"prompt": "p", "title": "t"}),
        ("schedule_update", {"id": "schedule-none", "prompt": "q"}),
        ("schedule_delete", {"id": "schedule-none"}),
    ]

    async def session(server: Any) -> tuple[Any, ...]:
        async with client(server, "chat <1>") as c:
            tools = (await c.list_tools()).tools
            created = value_of(await c.call_tool("schedule_create", _create("chat <1>")))
            updated = value_of(
                await c.call_tool("schedule_update", {"id": created["id"], "title": "new"})
            )
            listed = value_of(await c.call_tool("schedule_list", {}))
            answers = [value_of(await c.call_tool(n, a)) for n, a in errors]
            gone = value_of(await c.call_tool("schedule_delete", {"id": "schedule-none"}))
            with pytest.raises(MCPError, match="unknown tool 'schedule_explain'"):
                await c.call_tool("schedule_explain", {"id": created["id"]})
            return tools, updated, listed, answers, gone

    with serving(store, sessions) as server:
        tools, updated, listed, answers, gone = asyncio.run(session(server))
    assert [(t.name, t.input_schema) for t in tools] == [
        (t["name"], t["parameters"]) for t in catalog("host")["tools"]
    ]
    assert listed == [updated] and updated["title"] == "new"
    assert gone == {"id": "schedule-none", "deleted": False, "code": "schedule_not_found"}
    now = now_text()
    replies = host_batch(
        str(store),
        str(sessions),
        [{"op": "schedule_list", "session": "chat <1>", "now": now, "args": {}}]
        + [{"op": n, "session": "chat <1>", "now": now, "args": a} for n, a in errors],
    )
    assert [r["ok"] for r in replies] == [listed, *answers]


def test_the_guard_refuses_a_wrong_token_and_a_foreign_host(tmp_path: Path) -> None:
    async def sdk_with_wrong_token(server: Any) -> BaseException | None:
        try:
            async with client(server, "chat-1", token="wrong <&>") as c:
                await c.list_tools()
        except BaseException as exc:  # the SDK reports the 401 in its own way
            return exc
        return None

    with serving(tmp_path / "t.sqlite", tmp_path / "sessions") as server:
        url = mcp_url(server, "chat-1")
        body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
        wrong = httpx.post(url, json=body, headers={"Authorization": "Bearer wrong"})
        foreign = httpx.post(url, json=body, headers={**server.headers, "Host": "evil.example"})
        refused = asyncio.run(sdk_with_wrong_token(server))
    assert wrong.status_code == 401
    assert wrong.json()["error"]["code"] == "unauthorized"
    assert foreign.status_code == 421
    assert refused is not None


def test_twenty_concurrent_clients_see_only_their_own_session(tmp_path: Path) -> None:
    ids = [f"s-{i} <&>" for i in range(20)]

    async def one(server: Any, session_id: str, start: asyncio.Event) -> tuple[Any, ...]:
        async with client(server, session_id) as c:
            await start.wait()
            made = [
                value_of(await c.call_tool("schedule_create", _create(session_id, n)))
                for n in range(3)
            ]
            listed = value_of(await c.call_tool("schedule_list", {}))
            resources = (await c.list_resources()).resources
            text = (await c.read_resource(resources[0].uri)).contents[0].text
            return made, listed, [r.uri for r in resources], text

    async def all_clients(server: Any) -> list[tuple[Any, ...]]:
        start = asyncio.Event()
        tasks = [asyncio.create_task(one(server, s, start)) for s in ids]
        await asyncio.sleep(0)
        start.set()
        return await asyncio.gather(*tasks)

    with serving(tmp_path / "t.sqlite", tmp_path / "sessions") as server:
        results = asyncio.run(all_clients(server))
    from urllib.parse import quote

    for session_id, (made, listed, uris, text) in zip(ids, results, strict=True):
        assert sorted(v["id"] for v in listed) == sorted(v["id"] for v in made)
        assert all(v["prompt"].endswith(f"for {session_id}") for v in listed)
        assert uris == [f"schedlog://sessions/{quote(session_id, safe='')}/reminders"]
        assert text.count('"id"') == 3 and f"for {session_id}" in text


def test_a_connection_cannot_reach_another_sessions_resource(tmp_path: Path) -> None:
    from mcp.shared.exceptions import MCPError

    async def session(server: Any) -> list[str]:
        messages = []
        async with client(server, "alice") as c:
            for call in (
                c.read_resource("schedlog://sessions/bob/reminders"),
                c.listen(resource_subscriptions=["schedlog://sessions/bob/reminders"]).__aenter__(),
            ):
                with pytest.raises(MCPError) as caught:
                    await call
                messages.append(str(caught.value))
        return messages

    with serving(tmp_path / "t.sqlite", tmp_path / "sessions") as server:
        messages = asyncio.run(session(server))
    assert all("schedlog://sessions/alice/reminders" in m for m in messages)


def test_an_mcp_session_is_bound_to_the_url_it_was_created_at(tmp_path: Path) -> None:
    """A handshake-era session id presented at another session's URL is refused (404)."""
    hello = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-11-25",
            "capabilities": {},
            "clientInfo": {"name": "raw", "version": "1"},
        },
    }
    with serving(tmp_path / "t.sqlite", tmp_path / "sessions") as server:
        headers = {**server.headers, "Accept": "application/json, text/event-stream"}
        opened = httpx.post(mcp_url(server, "alice"), json=hello, headers=headers)
        mcp_session = opened.headers["mcp-session-id"]
        call = {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}
        bound = {**headers, "Mcp-Session-Id": mcp_session, "Mcp-Protocol-Version": "2025-11-25"}
        elsewhere = httpx.post(mcp_url(server, "bob"), json=call, headers=bound)
    assert opened.status_code == 200
    assert elsewhere.status_code == 404
    assert elsewhere.json()["error"]["code"] == "not_found"
