"""Change notifications over MCP: a subscriber to a session's reminders resource gets
``notifications/resources/updated`` within 1 s of a change, in both protocol eras, also for a
change made through another host of a shared PostgreSQL store. Every wait is for the event
itself, bounded by a timeout; no test sleeps."""

from __future__ import annotations

import asyncio
import time
import warnings
from pathlib import Path
from typing import Any

from tests import pg
from tests.mcp.support import host_batch, now_text, require_mcp, stdio_params, value_of

require_mcp()

from mcp import Client  # noqa: E402
from mcp.shared.exceptions import MCPDeprecationWarning  # noqa: E402
from mcp.shared.subscriptions import ResourceUpdated  # noqa: E402

from tests.mcp.http_support import client, serving  # noqa: E402

URI = "schedlog://sessions/chat-1/reminders"
CREATE = {"prompt": "Stand up <&>", "title": "Break", "after_seconds": 3600}
LIMIT_S = 1.0


async def _next_event(subscription: Any) -> tuple[Any, float]:
    event = await asyncio.wait_for(subscription.__anext__(), timeout=30)
    return event, time.monotonic()


async def _listen_while(c: Any, change: Any) -> tuple[Any, float]:
    """Open a listen stream on URI, make ``change`` (an awaitable factory), and return the first
    event and how long after the change returned it arrived (negative: before)."""
    async with c.listen(resource_subscriptions=[URI]) as subscription:
        waiter = asyncio.create_task(_next_event(subscription))
        await change()
        changed_at = time.monotonic()
        event, at = await asyncio.wait_for(waiter, timeout=30)
    return event, at - changed_at


def test_a_change_through_another_connection_is_notified_over_http(tmp_path: Path) -> None:
    async def main(server: Any) -> list[tuple[Any, float]]:
        async with client(server, "chat-1") as watcher, client(server, "chat-1") as other:

            async def create() -> None:
                created = value_of(await other.call_tool("schedule_create", CREATE))
                events.append(created["id"])

            async def update() -> None:
                change = {"id": events[0], "title": "Changed <&>"}
                value_of(await other.call_tool("schedule_update", change))

            async def delete() -> None:
                value_of(await other.call_tool("schedule_delete", {"id": events[0]}))

            events: list[str] = []
            return [await _listen_while(watcher, f) for f in (create, update, delete)]

    with serving(tmp_path / "t.sqlite", tmp_path / "sessions") as server:
        results = asyncio.run(main(server))
    for event, delay in results:
        assert event == ResourceUpdated(uri=URI)
        assert delay <= LIMIT_S


def test_another_sessions_change_is_not_notified(tmp_path: Path) -> None:
    async def main(server: Any) -> Any:
        async with (
            client(server, "chat-1") as watcher,
            client(server, "chat-2") as other,
            watcher.listen(resource_subscriptions=[URI]) as subscription,
        ):
            waiter = asyncio.create_task(_next_event(subscription))
            value_of(await other.call_tool("schedule_create", CREATE))
            value_of(await watcher.call_tool("schedule_create", CREATE))  # its own: a marker
            event, _ = await waiter
        return event

    with serving(tmp_path / "t.sqlite", tmp_path / "sessions") as server:
        first = asyncio.run(main(server))
    assert first == ResourceUpdated(uri=URI)  # chat-2's create came first and was not seen
    # (the marker is the only event: a leak would have arrived before it)


def test_handshake_era_clients_subscribe_with_resources_subscribe(tmp_path: Path) -> None:
    async def main(server: Any) -> float:
        updated = asyncio.Event()
        seen: list[str] = []

        async def on_message(message: Any) -> None:
            if getattr(message, "method", None) == "notifications/resources/updated":
                seen.append(str(message.params.uri))
                updated.set()

        async with client(server, "chat-1", mode="legacy", message_handler=on_message) as c:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", MCPDeprecationWarning)
                await c.subscribe_resource(URI)
            value_of(await c.call_tool("schedule_create", CREATE))
            changed_at = time.monotonic()
            await asyncio.wait_for(updated.wait(), timeout=30)
            delay = time.monotonic() - changed_at
        assert seen == [URI]
        return delay

    with serving(tmp_path / "t.sqlite", tmp_path / "sessions") as server:
        assert asyncio.run(main(server)) <= LIMIT_S


def test_session_local_creates_and_deletes_are_notified_over_stdio(tmp_path: Path) -> None:
    log = str(tmp_path / "chat-1.jsonl")

    async def main() -> list[tuple[Any, float]]:
        async with Client(stdio_params("--log", log)) as c:

            async def create() -> None:
                value_of(
                    await c.call_tool("schedule_create", {"prompt": "p", "after_seconds": 600})
                )

            async def delete() -> None:
                value_of(await c.call_tool("schedule_delete", {"id": "schedule-1"}))

            return [await _listen_while(c, create), await _listen_while(c, delete)]

    for event, delay in asyncio.run(main()):
        assert event == ResourceUpdated(uri=URI)
        assert delay <= LIMIT_S


def test_a_change_through_another_host_is_notified_within_a_second(
    tmp_path: Path, database: str
) -> None:
    """Host A serves MCP on a PostgreSQL store; host B (a ``host batch`` process on the same
    store) creates a task for the session: A's subscriber hears of it through ``LISTEN``."""
    pg.reset(database)
    sessions = tmp_path / "sessions"

    async def main(server: Any) -> tuple[Any, float]:
        async with client(server, "chat-1") as watcher:

            async def create_elsewhere() -> None:
                request = {"op": "schedule_create", "session": "chat-1", "now": now_text()}
                (answer,) = await asyncio.to_thread(
                    host_batch, database, str(sessions), [{**request, "args": CREATE}]
                )
                assert "id" in answer["ok"], answer

            return await _listen_while(watcher, create_elsewhere)

    with serving(database, sessions, "--token-file", str(tmp_path / "token")) as server:
        event, delay = asyncio.run(main(server))
    assert event == ResourceUpdated(uri=URI)
    assert delay <= LIMIT_S


def test_the_live_owner_delivers_while_the_session_local_tools_are_served(tmp_path: Path) -> None:
    """``schedlog mcp --log``: a reminder due in one second (the real clock: the server is
    another process) is delivered into the log by the live owner while the client is
    connected, and the delivery is notified. The wait is for the event, bounded."""
    from schedlog.strictjson import loads_strict

    log = tmp_path / "chat-1.jsonl"

    async def main() -> tuple[Any, float]:
        async with Client(stdio_params("--log", str(log))) as c:

            async def create() -> None:
                args = {"prompt": "Due now <&>", "after_seconds": 1}
                value_of(await c.call_tool("schedule_create", args))

            async with c.listen(resource_subscriptions=[URI]) as subscription:
                await create()
                created = await _next_event(subscription)
                delivered, at = await _next_event(subscription)
                assert created[0] == delivered
            listed = value_of(await c.call_tool("schedule_list", {}))
            return listed, at

    listed, _ = asyncio.run(main())
    assert listed == []  # the one-shot was delivered, so nothing is active
    events = [loads_strict(line) for line in log.read_bytes().splitlines()[1:]]
    kinds = [e["type"] for e in events]
    assert kinds == ["schedule/change", "message/followup", "schedule/change"]
    assert '"Due now <&>"' in events[1]["data"]["text"]


def test_a_host_delivery_is_notified_over_http(tmp_path: Path) -> None:
    """A task due in one second (the server's real clock) is delivered into the sessions
    directory, and its subscriber hears of the create and then of the delivery."""
    sessions = tmp_path / "sessions"

    async def main(server: Any) -> list[Any]:
        async with (
            client(server, "chat-1") as c,
            c.listen(resource_subscriptions=[URI]) as subscription,
        ):
            args = {"prompt": "Due now <&>", "title": "Now", "after_seconds": 1}
            value_of(await c.call_tool("schedule_create", args))
            events = [(await _next_event(subscription))[0] for _ in range(2)]
            events.append(value_of(await c.call_tool("schedule_list", {})))
            return events

    with serving(tmp_path / "t.sqlite", sessions) as server:
        created, delivered, listed = asyncio.run(main(server))
    assert created == delivered == ResourceUpdated(uri=URI)
    assert listed == []
    (log,) = sessions.glob("*.jsonl")
    assert "message/followup" in log.read_text("utf-8")
