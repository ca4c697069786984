"""The per-call path of ``/mcp`` on the 2026-07-28 protocol (issue 24's latency target): a
``tools/call`` with arguments looks its tool's input schema up once, not by running and
serializing the whole ``tools/list`` (the SDK's ``Mcp-Param-*`` header check)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

from schedlog.host.service import HostService
from schedlog.host.sessions import SessionsDirectory
from schedlog.host.stores.open import open_store
from schedlog.host.tool_schemas import tool_schemas
from schedlog.mcp.http import McpMount
from schedlog.mcp.server import ReminderServer
from schedlog.runtime.clock import VirtualClock

_CREATE = {"prompt": "p", "title": "t", "after_seconds": 60}


def _request(name: str, arguments: dict[str, Any]) -> tuple[dict[str, Any], bytes]:
    version = "2026-07-28"
    meta = {
        "io.modelcontextprotocol/protocolVersion": version,
        "io.modelcontextprotocol/clientInfo": {"name": "test", "version": "0"},
        "io.modelcontextprotocol/clientCapabilities": {},
    }
    params = {"name": name, "arguments": arguments, "_meta": meta}
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params})
    headers = [
        (b"content-type", b"application/json"),
        (b"accept", b"application/json, text/event-stream"),
        (b"mcp-protocol-version", version.encode()),
        (b"mcp-method", b"tools/call"),
        (b"mcp-name", name.encode()),
    ]
    scope = {
        "type": "http",
        "method": "POST",
        "path": "/mcp/sessions/s-1",
        "headers": headers,
        "path_params": {"sessionId": "s-1"},
        "query_string": b"",
    }
    return scope, body.encode()


async def _post(app: Any, name: str, arguments: dict[str, Any]) -> tuple[int, Any]:
    scope, body = _request(name, arguments)
    sent: list[dict[str, Any]] = []
    delivered = False

    async def receive() -> dict[str, Any]:
        nonlocal delivered
        if delivered:
            await asyncio.Event().wait()  # no disconnect while the answer is written
        delivered = True
        return {"type": "http.request", "body": body, "more_body": False}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    await app(scope, receive, send)
    raw = b"".join(m.get("body", b"") for m in sent if m["type"] == "http.response.body")
    return sent[0]["status"], json.loads(raw)


def test_a_tools_call_with_arguments_does_not_run_tools_list(
    tmp_path: Path, monkeypatch: Any
) -> None:
    listed: list[object] = []
    original = ReminderServer._list_tools

    async def counting(self: ReminderServer, ctx: Any, params: Any) -> Any:
        listed.append(params)
        return await original(self, ctx, params)

    monkeypatch.setattr(ReminderServer, "_list_tools", counting)

    async def main() -> list[tuple[int, Any]]:
        store = open_store(str(tmp_path / "t.sqlite"))
        sessions = SessionsDirectory(str(tmp_path / "sessions"))
        mount = McpMount()
        try:
            async with (
                HostService(store, sessions, VirtualClock(0)) as service,
                mount.serving(service),
            ):
                return [await _post(mount, "schedule_create", _CREATE) for _ in range(3)]
        finally:
            sessions.close()

    answers = asyncio.run(main())
    for status, body in answers:
        assert status == 200
        assert body["result"]["isError"] is False
        assert body["result"]["structuredContent"]["result"]["title"] == "t"
    assert listed == []


def test_the_schema_lookup_is_the_catalogs_parameters() -> None:
    class Backend:
        protocol = "host"
        tool_names = ("schedule_create",)

        def subscribe(self, listener: Any) -> Any:
            return lambda: None

    server = ReminderServer(Backend(), lambda ctx: "s-1")  # type: ignore[arg-type]
    lookup = server.server.get_tool_input_schema
    assert lookup is not None
    for tool in tool_schemas()["tools"]:
        assert lookup(tool["name"]) == tool["parameters"]
    assert lookup("no_such_tool") is None
