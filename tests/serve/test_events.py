"""The change-event hub behind /v1/events: ids, resume with Last-Event-ID, resets, limits."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable

import pytest

from tests.serve.deps import require_serve

require_serve()

from schedlog.host.changes import ChangeListener, TaskChange  # noqa: E402
from schedlog.serve import sse  # noqa: E402
from schedlog.serve.sse import EventHub, TooManyClients  # noqa: E402


class Source:
    def __init__(self) -> None:
        self.listeners: list[ChangeListener] = []

    def subscribe_changes(self, listener: ChangeListener) -> Callable[[], None]:
        self.listeners.append(listener)
        return lambda: self.listeners.remove(listener)

    def emit(self, n: int, kind: str = "created") -> None:
        for i in range(n):
            for listener in list(self.listeners):
                listener(TaskChange(f"schedule-{i}", "s-1", kind))  # type: ignore[arg-type]


async def frames(stream: AsyncIterator[bytes], count: int) -> list[bytes]:
    out: list[bytes] = []
    async for frame in stream:
        if frame.startswith((b"retry:", b":")):
            continue
        out.append(frame)
        if len(out) == count:
            break
    return out


def ids(chunks: list[bytes]) -> list[str]:
    return [c.split(b"\n")[0].removeprefix(b"id: ").decode() for c in chunks]


def test_live_events_then_resume_after_last_event_id() -> None:
    async def main() -> None:
        source = Source()
        hub = EventHub(source, 7)
        live = hub.open(None)
        first = asyncio.ensure_future(frames(live, 3))
        await asyncio.sleep(0)
        source.emit(3)
        got = await first
        assert ids(got) == ["7-1", "7-2", "7-3"]
        assert got[0] == (
            b"id: 7-1\nevent: schedule/changed\n"
            b'data: {"id":"schedule-0","sessionId":"s-1","kind":"created"}\n\n'
        )
        resumed = await frames(hub.open("7-1"), 2)
        assert ids(resumed) == ["7-2", "7-3"]
        hub.close()
        assert source.listeners == []

    asyncio.run(main())


@pytest.mark.parametrize("last", ["6-1", "7-99", "junk", "7-x"])
def test_unknown_or_foreign_ids_get_a_reset(last: str) -> None:
    async def main() -> None:
        source = Source()
        hub = EventHub(source, 7)
        source.emit(2)
        got = await frames(hub.open(last), 1)
        assert b"event: schedule/reset\n" in got[0]
        hub.close()

    asyncio.run(main())


def test_ids_older_than_the_buffer_get_a_reset(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sse, "BUFFER", 4)

    async def main() -> None:
        source = Source()
        hub = EventHub(source, 7)
        source.emit(6)  # 7-1 and 7-2 have left the buffer
        assert b"schedule/reset" in (await frames(hub.open("7-1"), 1))[0]
        assert ids(await frames(hub.open("7-2"), 4)) == ["7-3", "7-4", "7-5", "7-6"]
        hub.close()

    asyncio.run(main())


def test_client_limit_and_slots_freed_on_close() -> None:
    async def main() -> None:
        hub = EventHub(Source(), 7, max_clients=2)
        streams = [hub.open(None), hub.open(None)]
        for s in streams:
            await anext(s)  # registered as clients when opened
        with pytest.raises(TooManyClients):
            hub.open(None)
        await streams[0].aclose()
        assert hub.clients == 1
        third = hub.open(None)
        hub.close()
        assert [f async for f in third] == [b"retry: 2000\n\n"]  # closed: the stream ends
        with pytest.raises(TooManyClients):
            hub.open(None)

    asyncio.run(main())


def test_a_slow_client_gets_a_reset_instead_of_unbounded_memory(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(sse, "QUEUE", 3)

    async def main() -> None:
        source = Source()
        hub = EventHub(source, 7)
        stream = hub.open(None)
        source.emit(10)  # nobody reads meanwhile
        got = await frames(stream, 3)
        assert ids(got)[:2] == ["7-1", "7-2"]
        assert b"schedule/reset" in got[2]
        hub.close()

    asyncio.run(main())
