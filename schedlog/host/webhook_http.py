"""The webhook sink's HTTP/1.1 client (docs/decisions.md, "Webhook deliveries under load",
"Webhook burst: the protocol-based client, no full collections over start-up's objects").

httpx costs about 1.7 ms of CPU per POST on the benchmark machine (its pool, anyio and h11),
a floor of 17 s of CPU for a burst of 10,000; this client costs about 0.06 ms. It sends what
httpx sent (the request line with httpx's encoding of the path, then ``Host``, ``Accept``,
``Accept-Encoding``, ``Connection: keep-alive``, ``User-Agent``, the sink's headers and
``Content-Length``, in that order), over TLS set up as httpx sets it up (its
:func:`httpx.create_ssl_context` without the environment, ALPN ``http/1.1``, SNI), never
through a proxy, and follows no redirect. Of the answer it reads the status line and headers
(at most :data:`MAX_HEAD` bytes) and at most :data:`~schedlog.host.webhook.MAX_ANSWER_BYTES` of
the body, raw (never decompressed). A connection is used again (HTTP/1.1 keep-alive) only
when its answer was read to its end by ``Content-Length``, without ``Connection: close``;
otherwise it is closed, as is every connection whose exchange failed or was cancelled.

Two forms with one contract: :class:`LeanPoster`, the one the sink runs, an
:class:`asyncio.Protocol` per connection whose answer :class:`AnswerReader` reads off one
buffer as the bytes arrive, and :class:`StreamPoster`, the readable one on asyncio streams.
They send the bytes of one method (``_Target.request``); ``tests/serve/test_webhook_answer.py``
reads hostile answers, in pieces, both ways and finds the same outcomes.

The deadline on the whole exchange on the host's clock is the sink's
(:meth:`~schedlog.host.webhook.WebhookSink.post`); :meth:`LeanPoster.post` takes a bound on
the real clock too, which the sink sets at twice it: a backstop for a clock that does not
advance.
"""

from __future__ import annotations

import asyncio
import ssl
import time
from collections.abc import Mapping
from typing import Final, NamedTuple, cast

import httpx

__all__ = [
    "IDLE_EXPIRY_S",
    "MAX_HEAD",
    "AnswerReader",
    "LeanPoster",
    "ProtocolError",
    "StreamPoster",
]

#: The most bytes of an answer's status line and headers read; a longer head fails the POST.
MAX_HEAD: Final = 64 * 1024
#: An idle connection older than this is closed rather than used again (httpx's default).
IDLE_EXPIRY_S: Final = 5.0
#: The most idle connections kept (the POSTs in flight are bounded by the sink's caller).
MAX_IDLE: Final = 1_000
#: Informational answers (``100 Continue``...) skipped before the final one, at most.
MAX_INFORMATIONAL: Final = 8
_NO_BODY: Final = frozenset({204, 304})


class ProtocolError(Exception):
    """The receiver's answer is not HTTP/1.x as this client reads it."""


class _Conn(NamedTuple):
    reader: asyncio.StreamReader
    writer: asyncio.StreamWriter
    idle_since: float


class _Answer(NamedTuple):
    status: int
    reusable: bool


def _close(writer: asyncio.StreamWriter) -> None:
    transport = writer.transport
    if not transport.is_closing():
        transport.abort()


class _Target:
    """One URL (without user info) and the request bytes sent to it; see the module."""

    def __init__(self, url: str, user_agent: str, max_answer_bytes: int) -> None:
        parsed = httpx.URL(url)
        if parsed.userinfo or parsed.scheme not in ("http", "https"):
            raise ValueError("LeanPoster takes an http:// or https:// URL without user info")
        self._host = parsed.host
        self._port = parsed.port or (443 if parsed.scheme == "https" else 80)
        self._ssl: ssl.SSLContext | None = None
        if parsed.scheme == "https":
            self._ssl = httpx.create_ssl_context(trust_env=False)
            self._ssl.set_alpn_protocols(["http/1.1"])
        netloc = parsed.netloc.decode("ascii")
        self._prefix = (
            f"POST {parsed.raw_path.decode('ascii')} HTTP/1.1\r\nHost: {netloc}\r\n"
            "Accept: */*\r\nAccept-Encoding: gzip, deflate\r\nConnection: keep-alive\r\n"
            f"User-Agent: {user_agent}\r\n"
        ).encode("ascii")
        self._max_body = max_answer_bytes
        self._closed = False

    def request(self, body: bytes, headers: Mapping[str, str]) -> bytes:
        """The bytes sent for one POST."""
        lines = []
        for name, value in headers.items():
            if "\r" in name + value or "\n" in name + value or ":" in name:
                raise ValueError(f"header {name!r} cannot be sent")
            lines.append(f"{name}: {value}\r\n")
        lines.append(f"Content-Length: {len(body)}\r\n\r\n")
        return self._prefix + "".join(lines).encode("latin-1") + body


class StreamPoster(_Target):
    """The readable form of :class:`LeanPoster`, on asyncio streams: write the request, drain,
    read the answer's heads and body as they come (``tests/serve/test_webhook_http.py`` finds
    the same bytes sent and the same outcomes for both)."""

    def __init__(self, url: str, user_agent: str, max_answer_bytes: int) -> None:
        super().__init__(url, user_agent, max_answer_bytes)
        self._idle: list[_Conn] = []

    async def post(self, body: bytes, headers: Mapping[str, str], timeout_s: float) -> int:
        """One POST; its status. Raises :class:`TimeoutError` past ``timeout_s`` (real
        clock), :class:`OSError` or :class:`ProtocolError` when the exchange fails."""
        data = self.request(body, headers)
        async with asyncio.timeout(timeout_s):
            conn = await self._acquire()
            try:
                conn.writer.write(data)
                await conn.writer.drain()
                answer = await self._answer(conn.reader)
            except BaseException:
                _close(conn.writer)
                raise
        if answer.reusable and not self._closed and len(self._idle) < MAX_IDLE:
            self._idle.append(_Conn(conn.reader, conn.writer, time.monotonic()))
        else:
            _close(conn.writer)
        return answer.status

    async def _acquire(self) -> _Conn:
        now = time.monotonic()
        while self._idle:
            conn = self._idle.pop()
            fresh = now - conn.idle_since < IDLE_EXPIRY_S
            if fresh and not conn.reader.at_eof() and not conn.writer.is_closing():
                return conn
            _close(conn.writer)  # closed by the receiver meanwhile, or idle too long
        reader, writer = await asyncio.open_connection(
            self._host,
            self._port,
            ssl=self._ssl,
            server_hostname=self._host if self._ssl is not None else None,
            limit=MAX_HEAD,
        )
        return _Conn(reader, writer, now)

    async def _answer(self, reader: asyncio.StreamReader) -> _Answer:
        for _ in range(MAX_INFORMATIONAL + 1):
            try:
                head = await reader.readuntil(b"\r\n\r\n")
            except asyncio.LimitOverrunError:
                raise ProtocolError("the answer's headers are too long") from None
            except asyncio.IncompleteReadError:
                raise ProtocolError(
                    "the receiver closed the connection without answering"
                ) from None
            version, status, fields = _parse_head(head)
            if not 100 <= status < 200 or status == 101:
                break
        else:
            raise ProtocolError("too many informational answers")
        if status == 101:
            raise ProtocolError("the receiver switched protocols")
        reusable = version == "HTTP/1.1" and "close" not in _tokens(fields.get("connection"))
        if status in _NO_BODY:
            return _Answer(status, reusable)
        length = fields.get("content-length")
        if "transfer-encoding" in fields or length is None:
            return _Answer(status, False)  # nothing more is read: the connection is closed
        if not length.isdigit():
            raise ProtocolError("the answer's Content-Length is not a number")
        if int(length) > self._max_body:
            return _Answer(status, False)
        try:
            await reader.readexactly(int(length))
        except asyncio.IncompleteReadError:
            return _Answer(status, False)
        return _Answer(status, reusable)

    async def aclose(self) -> None:
        self._closed = True
        for conn in self._idle:
            _close(conn.writer)
        self._idle.clear()


class AnswerReader:
    """Reads one answer off the start of a buffer as :meth:`StreamPoster._answer` reads it
    from its stream, as the bytes come: :meth:`feed` after each arrival. What was scanned is
    not scanned again (a receiver trickling its answer costs no more than a fast one)."""

    __slots__ = ("_at", "_final", "_heads", "_max_body", "_scanned")

    def __init__(self, max_body: int) -> None:
        self._max_body = max_body
        self._at = 0  # where the head being read starts
        self._scanned = 0  # bytes from _at that hold no separator
        self._heads = 0
        #: Once the final head is read: the answer and the offset its body ends at.
        self._final: tuple[_Answer, int] | None = None

    def feed(self, buffer: bytearray, eof: bool) -> _Answer | None:
        """The answer, its bytes taken off ``buffer``; None while more bytes are needed and
        ``eof`` (the receiver closed its side) is not set. Raises :class:`ProtocolError`."""
        while self._final is None:
            if not self._head(buffer, eof):
                return None
        answer, end = self._final
        if end > len(buffer):
            if not eof:
                return None
            answer, end = answer._replace(reusable=False), len(buffer)  # the body cut short
        del buffer[:end]
        return answer

    def _head(self, buffer: bytearray, eof: bool) -> bool:
        """Read the next head if it is in; False while more bytes are needed."""
        at = self._at
        end = buffer.find(b"\r\n\r\n", at + max(0, self._scanned - 3))
        if end == -1 or end - at > MAX_HEAD:
            # asyncio.StreamReader.readuntil's limit: the separator must start within it.
            if end != -1 or len(buffer) - at - 3 > MAX_HEAD:
                raise ProtocolError("the answer's headers are too long")
            if eof:
                raise ProtocolError("the receiver closed the connection without answering")
            self._scanned = len(buffer) - at
            return False
        version, status, fields = _parse_head(bytes(buffer[at : end + 4]))
        self._at, self._scanned, self._heads = end + 4, 0, self._heads + 1
        if 100 <= status < 200 and status != 101:
            if self._heads > MAX_INFORMATIONAL:
                raise ProtocolError("too many informational answers")
            return True
        if status == 101:
            raise ProtocolError("the receiver switched protocols")
        reusable = version == "HTTP/1.1" and "close" not in _tokens(fields.get("connection"))
        length = fields.get("content-length")
        body = 0
        if status in _NO_BODY:
            pass
        elif "transfer-encoding" in fields or length is None:
            reusable = False  # nothing more is read: the connection is closed
        elif not length.isdigit():
            raise ProtocolError("the answer's Content-Length is not a number")
        elif int(length) > self._max_body:
            reusable = False
        else:
            body = int(length)
        self._final = (_Answer(status, reusable), self._at + body)
        return True


class _Wire(asyncio.Protocol):
    """One connection of :class:`LeanPoster`: the bytes received are kept in ``buffer`` and
    the exchange's waiter is resolved as soon as :func:`read_answer` finds its answer."""

    def __init__(self, max_body: int, over_ssl: bool) -> None:
        self.over_ssl = over_ssl
        self.reader = AnswerReader(max_body)
        self.transport: asyncio.Transport | None = None
        self.buffer = bytearray()
        self.eof = False
        self.error: BaseException | None = None  # the connection was lost with it
        self.lost = False
        self.paused = False  # writing (the transport's buffer is full)
        self.reading = True
        self.answer: asyncio.Future[_Answer] | None = None
        self.drained: asyncio.Future[None] | None = None
        self.idle_since = 0.0

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast(asyncio.Transport, transport)

    def data_received(self, data: bytes) -> None:
        self.buffer += data
        if self.answer is not None:
            self._look()
        elif len(self.buffer) > 2 * MAX_HEAD and self.transport is not None:
            self.transport.pause_reading()  # unasked bytes while idle: as a StreamReader does
            self.reading = False

    def eof_received(self) -> bool | None:
        self.eof = True
        if self.answer is not None:
            self._look()
        return (
            None if self.transport is None or self.transport.get_extra_info("sslcontext") else True
        )

    def connection_lost(self, exc: Exception | None) -> None:
        self.lost = True
        if exc is None:
            self.eof = True
        else:
            self.error = exc
        if self.answer is not None and not self.answer.done():
            if exc is None:
                self._look()
            else:
                self.answer.set_exception(exc)
        if self.drained is not None and not self.drained.done():
            self.drained.set_exception(ConnectionResetError("Connection lost"))

    def pause_writing(self) -> None:
        self.paused = True

    def resume_writing(self) -> None:
        self.paused = False
        if self.drained is not None and not self.drained.done():
            self.drained.set_result(None)

    def _look(self) -> None:
        answer = self.answer
        assert answer is not None
        if answer.done():
            return
        try:
            found = self.reader.feed(self.buffer, self.eof)
        except ProtocolError as exc:
            answer.set_exception(exc)
            return
        if found is not None:
            answer.set_result(found)

    def at_eof(self) -> bool:
        """As :meth:`asyncio.StreamReader.at_eof`: closed by the receiver, nothing left."""
        return self.eof and not self.buffer

    def close(self) -> None:
        if self.transport is not None and not self.transport.is_closing():
            self.transport.abort()


class LeanPoster(_Target):
    """POSTs to one URL (without user info) over keep-alive connections; see the module.
    Each connection is an :class:`asyncio.Protocol` (:class:`_Wire`), read as
    :class:`StreamPoster` reads its streams, without a stream's reader, writer and waits."""

    def __init__(self, url: str, user_agent: str, max_answer_bytes: int) -> None:
        super().__init__(url, user_agent, max_answer_bytes)
        self._idle: list[_Wire] = []

    async def post(self, body: bytes, headers: Mapping[str, str], timeout_s: float) -> int:
        """One POST; its status. Raises :class:`TimeoutError` past ``timeout_s`` (real
        clock), :class:`OSError` or :class:`ProtocolError` when the exchange fails."""
        data = self.request(body, headers)
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout_s
        wire = self._reuse()
        if wire is None:
            async with asyncio.timeout_at(deadline):
                wire = await self._connect()
        answer: asyncio.Future[_Answer] = loop.create_future()
        wire.answer = answer
        wire.reader = AnswerReader(self._max_body)
        timer = loop.call_at(deadline, _expire, answer)
        try:
            await self._send(wire, data, deadline)
            wire._look()  # the answer may be in already (and the receiver gone)
            found = await answer
        except BaseException:
            wire.close()
            if answer.done() and not answer.cancelled():
                answer.exception()  # failed meanwhile (the connection lost): seen, not logged
            raise
        finally:
            timer.cancel()
            wire.answer = None
        if found.reusable and not self._closed and len(self._idle) < MAX_IDLE:
            wire.idle_since = time.monotonic()
            self._idle.append(wire)
        else:
            wire.close()
        return found.status

    @staticmethod
    async def _send(wire: _Wire, data: bytes, deadline: float) -> None:
        """Write ``data`` and wait while the transport's buffer is full, as
        :meth:`asyncio.StreamWriter.drain` does after a write."""
        transport = wire.transport
        assert transport is not None
        if wire.error is not None:
            raise wire.error
        if not wire.reading:
            wire.reading = True
            transport.resume_reading()
        transport.write(data)
        if transport.is_closing():
            await asyncio.sleep(0)  # let connection_lost() run, as drain() does
        if wire.lost:
            raise ConnectionResetError("Connection lost")
        if wire.paused:
            wire.drained = asyncio.get_running_loop().create_future()
            async with asyncio.timeout_at(deadline):
                await wire.drained

    def _reuse(self) -> _Wire | None:
        now = time.monotonic()
        while self._idle:
            wire = self._idle.pop()
            fresh = now - wire.idle_since < IDLE_EXPIRY_S
            transport = wire.transport
            closing = transport is None or transport.is_closing()
            if fresh and not wire.at_eof() and not closing:
                return wire
            wire.close()  # closed by the receiver meanwhile, or idle too long
        return None

    async def _connect(self) -> _Wire:
        loop = asyncio.get_running_loop()
        max_body, over_ssl = self._max_body, self._ssl is not None
        _, wire = await loop.create_connection(
            lambda: _Wire(max_body, over_ssl),
            self._host,
            self._port,
            ssl=self._ssl,
            server_hostname=self._host if self._ssl is not None else None,
        )
        return wire

    async def aclose(self) -> None:
        self._closed = True
        for wire in self._idle:
            wire.close()
        self._idle.clear()


def _expire(answer: asyncio.Future[_Answer]) -> None:
    if not answer.done():
        answer.set_exception(TimeoutError())


def _parse_head(head: bytes) -> tuple[str, int, dict[str, str]]:
    lines = head.decode("latin-1").split("\r\n")
    version, _, rest = lines[0].partition(" ")
    code = rest[:3]
    if version not in ("HTTP/1.1", "HTTP/1.0") or len(code) != 3 or not code.isdigit():
        raise ProtocolError(f"not an HTTP/1.x status line: {lines[0][:80]!r}")
    fields: dict[str, str] = {}
    for line in lines[1:]:
        if not line:
            continue
        name, colon, value = line.partition(":")
        if not colon:
            raise ProtocolError("a malformed header line in the answer")
        fields[name.strip().lower()] = value.strip()
    return version, int(code), fields


def _tokens(value: str | None) -> set[str]:
    return {token.strip().lower() for token in (value or "").split(",")}
