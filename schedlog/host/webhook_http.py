"""The webhook sink's HTTP/1.1 client on asyncio streams (docs/decisions.md, "Webhook
deliveries under load").

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
from typing import Final, NamedTuple

import httpx

__all__ = ["IDLE_EXPIRY_S", "MAX_HEAD", "LeanPoster", "ProtocolError"]

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


class LeanPoster:
    """POSTs to one URL (without user info) over keep-alive connections; see the module."""

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
        self._idle: list[_Conn] = []
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
