"""The ``/mcp`` mount on its own: 503 until the server has started it, 501 when the SDK is
missing (``host serve`` then runs without it)."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from typing import Any

from schedlog.host.service import HostService
from schedlog.host.sessions import SessionsDirectory
from schedlog.host.stores.open import open_store
from schedlog.mcp.http import McpMount
from schedlog.runtime.clock import VirtualClock
from schedlog.strictjson import loads_strict


async def _call(app: Any) -> tuple[int, Any]:
    scope = {
        "type": "http",
        "method": "POST",
        "path": "/mcp/sessions/s-1",
        "headers": [],
        "path_params": {"sessionId": "s-1"},
    }
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    await app(scope, receive, send)
    body = b"".join(m.get("body", b"") for m in sent if m["type"] == "http.response.body")
    return sent[0]["status"], loads_strict(body)


def test_before_it_starts_the_mount_answers_503() -> None:
    status, body = asyncio.run(_call(McpMount()))
    assert status == 503
    assert body["error"]["code"] == "service_unavailable"


def test_without_the_sdk_the_mount_answers_501(tmp_path: Path, monkeypatch: Any) -> None:
    monkeypatch.setitem(sys.modules, "mcp.server.streamable_http_manager", None)

    async def main() -> tuple[int, Any]:
        store = open_store(str(tmp_path / "t.sqlite"))
        sessions = SessionsDirectory(str(tmp_path / "sessions"))
        mount = McpMount()
        try:
            async with (
                HostService(store, sessions, VirtualClock(0)) as service,
                mount.serving(service),
            ):
                return await _call(mount)
        finally:
            sessions.close()

    status, body = asyncio.run(main())
    assert status == 501
    assert body["error"] == {"code": "not_implemented", "message": "/mcp needs the mcp extra"}


def test_the_mount_needs_no_sdk_to_import() -> None:
    import subprocess

    probe = "import sys\nimport schedlog.serve.app\nprint('mcp' in sys.modules)\n"
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=60, check=True
    )
    assert done.stdout.strip() == "False"
