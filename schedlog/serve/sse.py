"""``GET /v1/events``: ``schedule/changed`` as Server-Sent Events, with ``Last-Event-ID`` resume
(docs/http-api.md#events).

:class:`EventHub` subscribes to a :class:`~schedlog.host.changes.ChangeSource` and keeps the
last :data:`BUFFER` events. Event ids are ``<epoch>-<seq>``: ``epoch`` is fixed for the life
of the hub (the process start in ms) and ``seq`` counts from 1. A client that reconnects with
``Last-Event-ID`` gets every event after it; when that id is from another process life, or so
old that it has left the buffer, it gets one ``schedule/reset`` event instead and should
re-read the catalog. Each client has a bounded queue: a client too slow to keep up is sent
``schedule/reset`` and then only new events.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import AsyncIterator, Callable
from typing import Final

from schedlog.host.changes import ChangeSource, TaskChange
from schedlog.host.service import CHANGED
from schedlog.rules.text import json_bytes
from schedlog.serve.bodies import ChangeEvent

__all__ = ["BUFFER", "KEEPALIVE_S", "RESET", "EventHub", "TooManyClients"]

BUFFER: Final = 4096
QUEUE: Final = 1024
KEEPALIVE_S: Final = 15.0
RESET: Final = "schedule/reset"


class TooManyClients(Exception):
    """Every SSE client slot is taken."""


class _Reset:
    """Queued for a client that fell behind."""


_RESET_MARK: Final = _Reset()
_CLOSE_MARK: Final = None


def _frame(event_id: str, event: str, data: bytes) -> bytes:
    return b"id: %s\nevent: %s\ndata: %s\n\n" % (event_id.encode(), event.encode(), data)


class EventHub:
    """The change events of one process, fanned out to at most ``max_clients`` streams."""

    def __init__(self, source: ChangeSource, epoch: int, *, max_clients: int = 32) -> None:
        self.epoch = epoch
        self.max_clients = max_clients
        self._seq = 0
        self._buffer: deque[tuple[int, bytes]] = deque(maxlen=BUFFER)
        self._clients: set[asyncio.Queue[tuple[int, bytes] | _Reset | None]] = set()
        self._closed = False
        self._unsubscribe: Callable[[], None] = source.subscribe_changes(self._on_change)

    @property
    def clients(self) -> int:
        return len(self._clients)

    def _id(self, seq: int) -> str:
        return f"{self.epoch}-{seq}"

    def _on_change(self, change: TaskChange) -> None:
        self._seq += 1
        data = json_bytes(ChangeEvent(change.id, change.session_id, change.kind))
        item = (self._seq, _frame(self._id(self._seq), CHANGED, data))
        self._buffer.append(item)
        for queue in self._clients:
            if queue.qsize() >= QUEUE - 1:
                if queue.qsize() < QUEUE:
                    queue.put_nowait(_RESET_MARK)
                continue
            queue.put_nowait(item)

    def _replay(self, last_event_id: str | None) -> tuple[list[tuple[int, bytes]], bool]:
        """Buffered events after ``last_event_id`` and whether a reset is needed instead."""
        if last_event_id is None:
            return [], False
        epoch, _, seq_text = last_event_id.strip().partition("-")
        if epoch != str(self.epoch) or not seq_text.isdigit():
            return [], True
        seq = int(seq_text)
        if seq > self._seq:
            return [], True
        oldest = self._buffer[0][0] if self._buffer else self._seq + 1
        if seq < oldest - 1:
            return [], True
        return [item for item in self._buffer if item[0] > seq], False

    def _reset_frame(self) -> bytes:
        data = json_bytes({"reason": "events were missed; read the catalog again"})
        return _frame(self._id(self._seq), RESET, data)

    def open(self, last_event_id: str | None) -> AsyncIterator[bytes]:
        """A new stream; raises :class:`TooManyClients` when every slot is taken."""
        if self._closed or len(self._clients) >= self.max_clients:
            raise TooManyClients
        queue: asyncio.Queue[tuple[int, bytes] | _Reset | None] = asyncio.Queue(QUEUE)
        replay, reset = self._replay(last_event_id)
        self._clients.add(queue)
        return self._stream(queue, replay, reset)

    async def _stream(
        self,
        queue: asyncio.Queue[tuple[int, bytes] | _Reset | None],
        replay: list[tuple[int, bytes]],
        reset: bool,
    ) -> AsyncIterator[bytes]:
        try:
            yield b"retry: 2000\n\n"
            if reset:
                yield self._reset_frame()
            last = 0
            for seq, frame in replay:
                last = seq
                yield frame
            while True:
                try:
                    item = await asyncio.wait_for(queue.get(), KEEPALIVE_S)
                except TimeoutError:
                    yield b": keep-alive\n\n"
                    continue
                if item is _CLOSE_MARK:
                    return
                if isinstance(item, _Reset):
                    yield self._reset_frame()
                    continue
                seq, frame = item
                if seq > last:  # events queued while the replay was taken are not repeated
                    yield frame
        finally:
            self._clients.discard(queue)

    def close(self) -> None:
        """End every stream (shutdown) and stop listening."""
        if self._closed:
            return
        self._closed = True
        self._unsubscribe()
        for queue in self._clients:
            while queue.full():
                queue.get_nowait()
            queue.put_nowait(_CLOSE_MARK)
