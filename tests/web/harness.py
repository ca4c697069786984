"""The browser-test harness: a real ``host serve`` application on a loopback port over a
virtual clock, and Debian's Chromium driven by Playwright for Python.

The server runs uvicorn in a thread with its own event loop, so the test drives the browser
synchronously while the host service delivers on virtual time (``Live.run_until``). Chromium is
always the system one (``/usr/bin/chromium``, or ``chromium`` on PATH); Playwright's own
browser download is never used. Without a Chromium (or without Playwright) each browser test
skips, and one line at the end of the run says why (tests/missing.py); under ``CI=true`` they
fail instead.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.missing import missing

TOKEN = "web-test-token-0123456789abcdef"


def require_serve() -> None:
    for name in ("starlette", "uvicorn", "httpx"):
        try:
            __import__(name)
        except ImportError:
            missing("serve extra", f"{name} is not installed")


def chromium_path() -> str:
    """The system Chromium, or a skip (a failure under CI=true)."""
    for candidate in (os.environ.get("SCHEDLOG_CHROMIUM"), "/usr/bin/chromium"):
        if candidate and os.access(candidate, os.X_OK):
            return candidate
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if found:
        return found
    missing("Chromium", "no chromium at /usr/bin/chromium or on PATH")


def require_playwright() -> None:
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        missing("Playwright", "playwright is not installed")


@dataclass
class Live:
    """A running application on ``base``: its service, clock and an authorized HTTP client."""

    base: str
    loop: asyncio.AbstractEventLoop
    app: Any
    clock: Any
    client: Any
    sessions: Path
    created: list[dict[str, Any]] = field(default_factory=list)

    @property
    def service(self) -> Any:
        return self.app.state.serve.service

    def call(self, coro: Any) -> Any:
        """Run ``coro`` on the server's loop and wait for its result."""
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(timeout=30)

    def run_until(self, ms: int) -> None:
        """Let virtual time pass to ``ms`` inside the server loop (timers fire, deliveries)."""
        self.call(self.clock.run_until(ms))

    def jump(self, ms: int) -> None:
        """Move virtual time straight to ``ms`` (recurring tasks deliver only their latest
        missed occurrence), then let the service settle."""

        async def run() -> None:
            self.clock.set(ms)
            await self.clock.run_until(ms)

        self.call(run())

    def create(self, session: str = "s-1", **args: Any) -> dict[str, Any]:
        selectors = {"after_seconds", "at", "every_seconds", "daily", "weekly", "cron"}
        body = {"prompt": "Stand up", "title": "Standup", **args}
        if not selectors & body.keys():
            body["after_seconds"] = 600
        response = self.client.post(f"/v1/sessions/{session}/tools/schedule_create", json=body)
        assert response.status_code == 200, response.text
        value: dict[str, Any] = response.json()
        assert "code" not in value, value
        return value

    def create_many(self, items: list[tuple[str, dict[str, Any]]]) -> None:
        """Create many tasks straight through the service (one FIFO slot each)."""

        async def run() -> None:
            for session, args in items:
                await self.service.create(session, args)

        self.call(run())

    def entry(self, session: str, task_id: str) -> dict[str, Any]:
        response = self.client.get(f"/v1/sessions/{session}/tasks/{task_id}")
        assert response.status_code == 200, response.text
        value: dict[str, Any] = response.json()
        return value


def _free_socket() -> socket.socket:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    sock.listen(128)
    return sock


@contextmanager
def live_server(tmp_path: Path, now_ms: int) -> Iterator[Live]:
    """``host serve``'s application over a SQLite store and a sessions directory in
    ``tmp_path``, on a free loopback port, with a virtual clock starting at ``now_ms``."""
    import httpx
    import uvicorn

    from schedlog.host.service import HostService
    from schedlog.host.sessions import SessionsDirectory
    from schedlog.host.stores.open import open_store
    from schedlog.runtime.clock import VirtualClock
    from schedlog.serve.app import Host, build_app
    from schedlog.serve.auth import allowed_hosts

    clock = VirtualClock(now_ms)
    sessions = tmp_path / "sessions"
    store = tmp_path / "store.db"
    sock = _free_socket()
    port = sock.getsockname()[1]

    async def opener() -> Host:
        directory = SessionsDirectory(sessions)

        async def close() -> None:
            directory.close()

        return Host(HostService(open_store(store), directory, clock), close=close)

    app = build_app(opener, token=TOKEN, hosts=allowed_hosts("127.0.0.1", port), epoch=now_ms)
    config = uvicorn.Config(
        app, lifespan="on", log_level="warning", access_log=False, timeout_graceful_shutdown=1
    )
    server = uvicorn.Server(config)
    loop = asyncio.new_event_loop()
    started = threading.Event()

    def run() -> None:
        asyncio.set_event_loop(loop)

        async def main() -> None:
            task = asyncio.ensure_future(server.serve(sockets=[sock]))
            while not server.started and not task.done():
                await asyncio.sleep(0.01)
            started.set()
            await task

        loop.run_until_complete(main())

    thread = threading.Thread(target=run, name="web-test-server", daemon=True)
    thread.start()
    started.wait(timeout=20)
    assert server.started, "the test server did not start"
    base = f"http://127.0.0.1:{port}"
    client = httpx.Client(base_url=base, headers={"Authorization": f"Bearer {TOKEN}"}, timeout=20)
    try:
        yield Live(base, loop, app, clock, client, sessions)
    finally:
        client.close()
        hub = app.state.serve.hub
        if hub is not None:
            loop.call_soon_threadsafe(hub.close)
        server.should_exit = True
        thread.join(timeout=20)
        sock.close()
        loop.close()
