"""Shared set-up of the HTTP API tests: an in-process application over a virtual clock."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Coroutine, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from tests.serve.deps import require_serve

require_serve()

import httpx  # noqa: E402
from starlette.applications import Starlette  # noqa: E402

from schedlog.host.retry import Backoff  # noqa: E402
from schedlog.host.service import HostService  # noqa: E402
from schedlog.host.sessions import SessionsDirectory  # noqa: E402
from schedlog.host.stores.open import open_store  # noqa: E402
from schedlog.host.webhook import WebhookSessions  # noqa: E402
from schedlog.runtime.clock import VirtualClock  # noqa: E402
from schedlog.serve.app import Host, build_app  # noqa: E402
from schedlog.serve.auth import allowed_hosts  # noqa: E402
from schedlog.serve.webhook import retry_lookup  # noqa: E402
from tests.host.helpers import T0  # noqa: E402

TOKEN = "test-token-0123456789abcdef"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
BASE = "http://127.0.0.1:8765"
T = TypeVar("T")


class LoopThread:
    """An event loop on its own thread: the application lives there, tests call into it."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self._thread.start()

    def call(self, fn: Callable[..., Coroutine[Any, Any, T]], *args: Any, **kwargs: Any) -> T:
        future = asyncio.run_coroutine_threadsafe(fn(*args, **kwargs), self.loop)
        return future.result(timeout=60)

    def close(self) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(timeout=10)
        self.loop.close()


class Client:
    """A synchronous facade over an ``httpx.AsyncClient`` on the application (in process)."""

    def __init__(self, app: Starlette, loop: LoopThread, headers: dict[str, str]) -> None:
        transport = httpx.ASGITransport(app=app, raise_app_exceptions=False)
        self.app = app
        self._loop = loop
        self._client = httpx.AsyncClient(transport=transport, base_url=BASE, headers=headers)

    def request(self, method: str, url: str, **kwargs: Any) -> httpx.Response:
        return self._loop.call(self._client.request, method, url, **kwargs)

    def get(self, url: str, **kwargs: Any) -> httpx.Response:
        return self.request("GET", url, **kwargs)

    def post(self, url: str, **kwargs: Any) -> httpx.Response:
        return self.request("POST", url, **kwargs)

    def put(self, url: str, **kwargs: Any) -> httpx.Response:
        return self.request("PUT", url, **kwargs)

    def delete(self, url: str, **kwargs: Any) -> httpx.Response:
        return self.request("DELETE", url, **kwargs)

    def patch(self, url: str, **kwargs: Any) -> httpx.Response:
        return self.request("PATCH", url, **kwargs)


@dataclass
class Api:
    """A running application: its client (authorized, right Host), clock and directories."""

    app: Starlette
    client: Client
    loop: LoopThread
    clock: VirtualClock
    sessions: Path
    store: Path | str

    @property
    def service(self) -> HostService:
        service: HostService | None = self.app.state.serve.service
        assert service is not None
        return service

    def call(self, fn: Callable[..., Coroutine[Any, Any, T]], *args: Any) -> T:
        return self.loop.call(fn, *args)

    def anonymous(self, headers: dict[str, str] | None = None) -> Client:
        """A client without the token (and with ``headers``)."""
        return Client(self.app, self.loop, headers or {})

    def tool(self, session: str, name: str, args: Any) -> httpx.Response:
        return self.client.post(f"/v1/sessions/{session}/tools/{name}", json=args)

    def create(self, session: str = "s-1", **args: Any) -> dict[str, Any]:
        body: dict[str, Any] = {"prompt": "Stand up", "title": "Standup"}
        selectors = {"after_seconds", "at", "every_seconds", "daily", "weekly", "cron"}
        if not selectors & args.keys():
            body["after_seconds"] = 600
        body.update(args)
        response = self.tool(session, "schedule_create", body)
        assert response.status_code == 200, response.text
        value: dict[str, Any] = response.json()
        return value

    def run_until(self, ms: int) -> None:
        """Let virtual time pass inside the application's event loop."""
        self.call(self.clock.run_until, ms)


@contextmanager
def running_api(
    tmp_path: Path,
    *,
    max_event_clients: int = 4,
    cors_origins: tuple[str, ...] = (),
    webhook: Callable[[VirtualClock], tuple[Any, Backoff]] | None = None,
    store: Path | str | None = None,
    backoff: Backoff | None = None,
) -> Iterator[Api]:
    """The application over ``tmp_path``; ``webhook(clock) -> (post, backoff)`` delivers to a
    webhook sink instead of the sessions directory; ``store`` is a store path or PostgreSQL URL
    (default ``tmp_path / "store.db"``); ``backoff`` retries failed session deliveries, as
    ``serve`` does."""
    clock = VirtualClock(T0)
    session_backoff = backoff
    store = tmp_path / "store.db" if store is None else store
    sessions = tmp_path / "sessions"

    async def opener() -> Host:
        if webhook is not None:
            post, backoff = webhook(clock)
            service = HostService(
                open_store(store), WebhookSessions(), clock, post=post, backoff=backoff
            )
            return Host(service, retry_state=retry_lookup(backoff))
        directory = SessionsDirectory(sessions)

        async def close() -> None:
            directory.close()

        service = HostService(open_store(store), directory, clock, backoff=session_backoff)
        return Host(service, close=close)

    app = build_app(
        opener,
        token=TOKEN,
        hosts=allowed_hosts("127.0.0.1", 8765),
        epoch=T0,
        max_event_clients=max_event_clients,
        cors_origins=cors_origins,
    )
    loop = LoopThread()
    lifespan = app.router.lifespan_context(app)
    loop.call(lifespan.__aenter__)
    try:
        yield Api(app, Client(app, loop, AUTH), loop, clock, sessions, store)
    finally:
        loop.call(lifespan.__aexit__, None, None, None)
        loop.close()
