"""Connection-level limits of ``schedlog host serve`` against hostile peers
(docs/http-api.md#limits, docs/reliability.md#hostile-peers).

uvicorn's httptools protocol bounds none of these, so :func:`protocol_class` subclasses it:

* the request line and headers of one request may take at most :data:`MAX_HEADER_BYTES`;
  more is answered 431 and the connection closed. At most that many bytes are ever handed to
  the parser before the headers end, so a streamed header costs linear time, never the
  quadratic re-concatenation of an unbounded one;
* a client has ``header_timeout_s`` from the moment it connects (or sends the first byte of a
  later request) until its headers are complete; then the connection is closed (408 when it
  sent part of a request, silently when it sent nothing);
* at most ``max_connections`` connections are open at once; one over is answered 503 and
  closed at once, so a flood of idle sockets cannot use up the descriptors deliveries need
  (:func:`connection_cap` keeps :data:`FD_RESERVE` of them free);
* a request the parser cannot read is answered 400 with the API's JSON error body.
"""

from __future__ import annotations

import asyncio
import resource
from dataclasses import dataclass
from typing import Any, ClassVar, Final

import msgspec
from uvicorn.protocols.http.httptools_impl import STATUS_LINE, HttpToolsProtocol

__all__ = [
    "ACCEPT_BURST",
    "FD_RESERVE",
    "MAX_HEADER_BYTES",
    "Limits",
    "connection_cap",
    "protocol_class",
    "raw_error",
]

#: The request line and all headers of one request, in bytes.
MAX_HEADER_BYTES: Final = 64 * 1024
#: Descriptors kept free for the store, the session logs and webhook connections.
FD_RESERVE: Final = 64
#: The listen backlog, which is also how many connections asyncio accepts in one go (before
#: any over the cap is closed): half the reserve.
ACCEPT_BURST: Final = FD_RESERVE // 2


@dataclass(frozen=True)
class Limits:
    """The limits one server applies (``--max-connections``, ``--header-timeout``)."""

    max_connections: int = 256
    header_timeout_s: float = 10.0
    max_header_bytes: int = MAX_HEADER_BYTES


def connection_cap(requested: int, soft_limit: int | None = None) -> int:
    """``requested``, lowered so that :data:`FD_RESERVE` descriptors stay free under the
    process's soft ``RLIMIT_NOFILE`` (at least 1)."""
    if soft_limit is None:
        soft_limit = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    if soft_limit == resource.RLIM_INFINITY:
        return requested
    return max(1, min(requested, soft_limit - FD_RESERVE))


def raw_error(status: int, code: str, message: str) -> bytes:
    """A complete ``Connection: close`` answer with the API's error body, for the protocol
    level where no application runs (docs/http-api.md#errors)."""
    body = msgspec.json.encode({"error": {"code": code, "message": message}})
    head = (
        b"content-type: application/json\r\n"
        b"cache-control: no-store\r\n"
        b"content-length: " + str(len(body)).encode("ascii") + b"\r\n"
        b"connection: close\r\n\r\n"
    )
    return STATUS_LINE[status] + head + body


class LimitedHttp(HttpToolsProtocol):
    """uvicorn's httptools protocol with the limits of :class:`Limits`."""

    limits: ClassVar[Limits] = Limits()

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._head_open = True  # waiting for the end of a request's headers
        self._head_bytes = 0
        self._head_timer: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        if len(self.connections) > self.limits.max_connections:
            self._refuse(503, "too_many_connections", "the server has too many open connections")
            return
        self._arm_head_timer()

    def connection_lost(self, exc: Exception | None) -> None:
        self._cancel_head_timer()
        super().connection_lost(exc)

    def data_received(self, data: bytes) -> None:
        if not self._head_open:
            super().data_received(data)
            return
        self._arm_head_timer()
        room = self.limits.max_header_bytes + 1 - self._head_bytes
        first, rest = data[:room], data[room:]
        self._head_bytes += len(first)
        super().data_received(first)
        if self.transport.is_closing():
            return
        if self._head_open:
            if self._head_bytes > self.limits.max_header_bytes:
                self._refuse(
                    431,
                    "header_too_large",
                    f"the request line and headers are longer than "
                    f"{self.limits.max_header_bytes} bytes",
                )
            return
        if rest:
            self.data_received(rest)

    def on_headers_complete(self) -> None:
        self._head_open = False
        self._head_bytes = 0
        self._cancel_head_timer()
        super().on_headers_complete()

    def on_message_complete(self) -> None:
        super().on_message_complete()
        self._head_open = True
        self._head_bytes = 0

    def send_400_response(self, msg: str) -> None:
        self._refuse(400, "invalid_request", f"malformed HTTP request: {msg}")

    def _refuse(self, status: int, code: str, message: str) -> None:
        self._cancel_head_timer()
        if not self.transport.is_closing():
            self.transport.write(raw_error(status, code, message))
            self.transport.close()

    def _arm_head_timer(self) -> None:
        if self._head_timer is None:
            self._head_timer = self.loop.call_later(
                self.limits.header_timeout_s, self._head_timed_out
            )

    def _cancel_head_timer(self) -> None:
        if self._head_timer is not None:
            self._head_timer.cancel()
            self._head_timer = None

    def _head_timed_out(self) -> None:
        self._head_timer = None
        if self.cycle is not None and not self.cycle.response_complete:
            self._arm_head_timer()  # a pipelined request waits for the answer before it
            return
        if self._head_bytes:
            self._refuse(408, "request_timeout", "the request headers took too long to arrive")
        elif not self.transport.is_closing():
            self.transport.close()


def protocol_class(limits: Limits) -> type[LimitedHttp]:
    """The protocol class to pass to ``uvicorn.Config(http=...)``."""
    return type("LimitedHttp", (LimitedHttp,), {"limits": limits})
