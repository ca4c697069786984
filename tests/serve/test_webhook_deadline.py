"""Issue 22 items 3 and 5 (docs/http-api.md#webhook-delivery): ``--webhook-timeout`` bounds the
whole exchange with the receiver, on the host's clock, and only a small raw prefix of the
receiver's answer is ever read (never decompressed).

The deadline is checked on a virtual clock against a receiver that never answers, and on the
real clock against a receiver on a loopback socket that trickles its status line a byte at a
time (each byte resets httpx's own read timeout, so only a whole-exchange deadline ends it).
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import pytest

from tests.serve.deps import require_serve

require_serve()

import httpx  # noqa: E402

from schedlog.eventlog.followups import Member  # noqa: E402
from schedlog.host.core import Outgoing  # noqa: E402
from schedlog.host.delivery import Delivered  # noqa: E402
from schedlog.host.webhook import MAX_ANSWER_BYTES, WebhookError, WebhookSink  # noqa: E402
from schedlog.runtime.clock import SystemClock, VirtualClock  # noqa: E402
from tests.host.helpers import T0  # noqa: E402

SECRET = b"s" * 32


def _outgoing() -> Outgoing:
    """A one-member follow-up as the host hands it to the sink."""
    member = Member("schedule-1", T0)
    delivered = Delivered("s-1", "schedule-message-1", "[SCHEDULE REMINDER]", (member,))
    return Outgoing(delivered, {"data": {"createdAt": "2026-05-01T06:00:00.000Z"}}, ("p",))


def test_the_deadline_ends_an_exchange_the_receiver_never_answers() -> None:
    async def scenario() -> None:
        clock = VirtualClock(T0)
        never = asyncio.Event()

        async def handler(request: httpx.Request) -> httpx.Response:
            await never.wait()
            return httpx.Response(200)

        sink = WebhookSink(
            "http://receiver.test/hook",
            SECRET,
            clock,
            timeout_s=3,
            transport=httpx.MockTransport(handler),
        )
        try:
            posting = asyncio.ensure_future(sink.post(_outgoing()))
            await clock.run_until(T0 + 2_999)
            assert not posting.done()  # still within the deadline
            await clock.run_until(T0 + 3_000)
            assert posting.done()  # ended at the deadline, the receiver still silent
            with pytest.raises(WebhookError, match="did not answer within 3 s"):
                posting.result()
        finally:
            await sink.aclose()

    asyncio.run(scenario())


@contextmanager
def raw_receiver(answer: Callable[[socket.socket], None]) -> Iterator[tuple[str, list[int]]]:
    """A one-connection loopback receiver: reads the request, then runs ``answer`` on the
    socket. Yields the hook URL and a list that gets the bytes ``answer`` managed to send."""
    server = socket.create_server(("127.0.0.1", 0))
    sent: list[int] = []

    def serve() -> None:
        conn, _ = server.accept()
        with conn:
            conn.settimeout(10)
            data = b""
            while b"\r\n\r\n" not in data:
                chunk = conn.recv(65536)
                if not chunk:
                    return
                data += chunk
            head, _, rest = data.partition(b"\r\n\r\n")
            length = next(
                int(line.split(b":", 1)[1])
                for line in head.split(b"\r\n")
                if line.lower().startswith(b"content-length:")
            )
            while len(rest) < length:
                rest += conn.recv(65536)
            with contextlib.suppress(OSError):  # the client hung up, as it should
                answer(conn)

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.getsockname()[1]}/hook", sent
    finally:
        thread.join(15)
        server.close()


def test_a_receiver_trickling_its_answer_is_cut_off_at_the_deadline() -> None:
    stop = threading.Event()

    def trickle(conn: socket.socket) -> None:
        status = b"HTTP/1.1 200 OK\r\nX-Slow: " + b"a" * 200
        for byte in status:
            if stop.is_set():
                return
            conn.sendall(bytes([byte]))
            stop.wait(0.05)  # one byte every 50 ms: far inside httpx's per-read timeout

    async def scenario(url: str) -> float:
        sink = WebhookSink(url, SECRET, SystemClock(), timeout_s=0.5)
        started = time.monotonic()
        try:
            with pytest.raises(WebhookError, match=r"did not answer within 0\.5 s"):
                await sink.post(_outgoing())
            return time.monotonic() - started
        finally:
            await sink.aclose()

    with raw_receiver(trickle) as (url, _):
        try:
            took = asyncio.run(scenario(url))
        finally:
            stop.set()
    assert took < 5  # the whole header would take 10 s at this pace


def test_only_a_raw_prefix_of_a_huge_answer_is_read() -> None:
    """A 64 MiB answer declared as gzip (and not valid gzip): the sink reads a small prefix,
    never inflates it, and hangs up; the receiver could send only what socket buffers hold."""
    total = 64 * 1024 * 1024

    def flood(conn: socket.socket) -> None:
        conn.sendall(
            b"HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\n"
            + f"Content-Length: {total}\r\n\r\n".encode()
        )
        block = b"\x1f\x8b not gzip " * 4096
        sent = 0
        while sent < total:
            conn.sendall(block)
            sent += len(block)
            counted.append(len(block))

    counted: list[int] = []

    async def scenario(url: str) -> None:
        sink = WebhookSink(url, SECRET, SystemClock(), timeout_s=10)
        try:
            await sink.post(_outgoing())  # a 2xx: acknowledged, whatever the body
        finally:
            await sink.aclose()

    with raw_receiver(flood) as (url, _):
        asyncio.run(scenario(url))
    assert MAX_ANSWER_BYTES <= 64 * 1024
    assert sum(counted) < total // 4  # the client stopped reading long before the end
