"""The loopback webhook receiver of ``python -m benchmarks.burst --webhook`` (issue 21).

It must not be the bottleneck it measures: 10,000 follow-ups in 5 s is 2,000 requests a second.
The first receiver (``http.server``'s ``ThreadingHTTPServer``, one thread per connection,
headers parsed by ``email``) took about 1,400 a second on the benchmark machine with a lean
client, so this one is an asyncio server on a thread of its own: HTTP/1.1 keep-alive, the
request head split by hand, the body read by its ``Content-Length``, then 5 ms on the
receiver's clock, the signature check and the dedupe of :class:`tests.serve.receiver.Inbox`,
and ``200``. Each burst member is stamped (epoch s) at its first acknowledgement.

It shares the machine's two cores with the host it measures, so each connection is an
:class:`asyncio.Protocol` (no stream reader, writer or coroutine per connection) and the 5 ms
are a timer callback per request (no task woken); answers go out in the order of the requests.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections import Counter, deque
from typing import Any, Final

from tests.serve.receiver import Inbox

__all__ = ["Receiver"]

#: The longest request head read (bytes); a longer one closes the connection.
MAX_HEAD: Final = 64 * 1024
_REASONS: Final = {200: "OK", 401: "Unauthorized", 503: "Service Unavailable"}


class Receiver:
    """A loopback webhook receiver: checks the signature, waits ``delay_s``, answers 200, and
    stamps each member of ``expected`` at its first acknowledgement."""

    def __init__(self, expected: set[str], secret: bytes, delay_s: float = 0.005) -> None:
        self.expected = expected
        self.delay_s = delay_s
        self.inbox = Inbox(secret)
        self.seen: dict[str, float] = {}
        self.members: Counter[str] = Counter()
        self.inbox.on_accept = self._accept
        self._loop = asyncio.new_event_loop()
        self._server: asyncio.base_events.Server | None = None
        ready = threading.Event()
        self._thread = threading.Thread(target=self._serve, args=(ready,), daemon=True)
        self._thread.start()
        if not ready.wait(30) or self._server is None:
            raise RuntimeError("the webhook receiver did not start")
        port = self._server.sockets[0].getsockname()[1]
        self.url = f"http://127.0.0.1:{port}/hook"

    def _serve(self, ready: threading.Event) -> None:
        asyncio.set_event_loop(self._loop)
        try:
            self._server = self._loop.run_until_complete(
                self._loop.create_server(lambda: _Connection(self), "127.0.0.1", 0, backlog=1024)
            )
        finally:
            ready.set()
        self._loop.run_forever()

    def answer(self, headers: dict[str, str], body: bytes) -> bytes:
        """The answer to one request, decided now (after its 5 ms)."""
        status = self.inbox.decide(headers, body)
        reason = _REASONS.get(status, "Other")
        return f"HTTP/1.1 {status} {reason}\r\nContent-Length: 0\r\n\r\n".encode()

    def _accept(self, value: dict[str, Any]) -> None:  # under the inbox's lock
        if value["messageId"] in self.inbox.by_id:
            return  # a retry of a message already acknowledged
        stamp = time.time()
        for member in value["reminders"]:
            if member["id"] in self.expected:
                self.members[member["id"]] += 1
                self.seen.setdefault(member["id"], stamp)

    def complete(self) -> bool:
        with self.inbox.lock:
            return len(self.seen) >= len(self.expected)

    def check(self) -> dict[str, int]:
        with self.inbox.lock:
            return {
                "followups": sum(self.members.values()),
                "missing": len(self.expected - set(self.seen)),
                "doubled": sum(c - 1 for c in self.members.values() if c > 1),
                "repeated_posts": len(self.inbox.received) - len(self.inbox.by_id),
                "bad_signatures": self.inbox.bad_signatures,
            }

    def close(self) -> None:
        server = self._server

        def stop() -> None:
            if server is not None:
                server.close()
            self._loop.stop()

        self._loop.call_soon_threadsafe(stop)
        self._thread.join(timeout=30)


class _Connection(asyncio.Protocol):
    """One keep-alive connection of :class:`Receiver`: each request read off the buffer is
    answered ``delay_s`` later, in order."""

    def __init__(self, receiver: Receiver) -> None:
        self.receiver = receiver
        self.buffer = bytearray()
        self.transport: asyncio.Transport | None = None
        #: The requests read and not answered yet: headers, body, close after the answer.
        self.waiting: deque[tuple[dict[str, str], bytes, bool]] = deque()

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport

    def data_received(self, data: bytes) -> None:
        buffer = self.buffer
        buffer += data
        while True:
            end = buffer.find(b"\r\n\r\n")
            if end == -1 or end > MAX_HEAD:
                if end != -1 or len(buffer) > MAX_HEAD:
                    self._close()
                return
            headers: dict[str, str] = {}
            for line in buffer[:end].decode("latin-1").split("\r\n")[1:]:
                name, colon, value = line.partition(":")
                if colon:
                    headers[name.strip().lower()] = value.strip()
            try:
                stop = end + 4 + int(headers.get("content-length", "0"))
            except ValueError:
                self._close()
                return
            if len(buffer) < stop:
                return
            body = bytes(buffer[end + 4 : stop])
            del buffer[:stop]
            close = headers.get("connection", "").lower() == "close"
            self.waiting.append((headers, body, close))
            asyncio.get_running_loop().call_later(self.receiver.delay_s, self._answer)

    def _answer(self) -> None:
        headers, body, close = self.waiting.popleft()
        transport = self.transport
        if transport is None or transport.is_closing():
            return
        transport.write(self.receiver.answer(headers, body))
        if close:
            self._close()

    def _close(self) -> None:
        if self.transport is not None:
            self.transport.close()

    def connection_lost(self, exc: Exception | None) -> None:
        self.transport = None
