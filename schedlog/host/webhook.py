"""Webhook delivery: the host's delivery sink for runtimes whose sessions are not JSON Lines
files (docs/http-api.md#webhook-delivery). It stands beside the sessions directory
(:mod:`schedlog.host.sessions`): the service hands it each due group's follow-up, and commits
the group only after the receiver answered 2xx.

The request is ``POST <url>`` with a JSON body ``{"messageId","sessionId","text",
"occurrenceAt","reminders":[{"id","occurrenceAt","prompt"}],"createdAt"}`` and the headers
``Schedlog-Timestamp`` (Unix seconds) and ``Schedlog-Signature: v1=<hex>``, the HMAC-SHA256 of
``<timestamp>.<body>`` under the shared secret. ``messageId`` is deterministic (the same group
of occurrences always gets the same id), so a delivery repeated after a failure or a crash
carries the same id: receivers dedupe by it.

``--webhook-timeout`` is a deadline on the whole exchange (connect, send, the answer's status
line and headers), kept on the host's clock: a receiver that trickles its answer a byte at a
time is cut off at the deadline. :meth:`WebhookSink.post` keeps it with one watcher for every
exchange in flight (:mod:`schedlog.host.webhook_deadline`); :meth:`WebhookSink.post_reference`
is the readable form, a timer per exchange, proven equal to it by
``tests/serve/test_webhook_deadline.py``. Of the answer only the status counts; at most
:data:`MAX_ANSWER_BYTES` of its body are read, as sent (never decompressed), then the
connection is closed. The POSTs go over :mod:`schedlog.host.webhook_http` (HTTP/1.1
keep-alive, an asyncio protocol per connection), through httpx only when a test hands in an
httpx transport or the URL carries user info.

Needs httpx (the ``serve`` extra).
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import hmac
from collections.abc import Mapping
from typing import Any, Final

import httpx

from schedlog.clock import Clock
from schedlog.eventlog.followups import Member
from schedlog.host.core import Outgoing
from schedlog.host.webhook_deadline import Deadlines
from schedlog.host.webhook_http import LeanPoster, ProtocolError
from schedlog.rules.instants import format_instant
from schedlog.rules.text import json_bytes

__all__ = [
    "MAX_ANSWER_BYTES",
    "SIGNATURE_HEADER",
    "TIMESTAMP_HEADER",
    "WebhookError",
    "WebhookSessions",
    "WebhookSink",
    "payload",
    "sign",
    "verify",
]

SIGNATURE_HEADER: Final = "Schedlog-Signature"
TIMESTAMP_HEADER: Final = "Schedlog-Timestamp"
#: The most of a receiver's answer body read (raw bytes on the wire); the rest is dropped.
MAX_ANSWER_BYTES: Final = 64 * 1024
USER_AGENT: Final = "schedlog-webhook/1"


class WebhookError(Exception):
    """The receiver did not acknowledge: a non-2xx answer (``kind`` "refused"), a timeout
    ("timeout") or a connection that failed ("unreachable")."""

    def __init__(self, message: str, kind: str = "refused") -> None:
        super().__init__(message)
        self.kind = kind


def payload(outgoing: Outgoing) -> bytes:
    """The JSON body for one follow-up."""
    delivered = outgoing.delivered
    data = outgoing.event["data"]
    reminders = [
        {"id": m.id, "occurrenceAt": format_instant(m.occurrence_at), "prompt": prompt}
        for m, prompt in zip(delivered.members, outgoing.prompts, strict=True)
    ]
    latest = max(m.occurrence_at for m in delivered.members)
    return json_bytes(
        {
            "messageId": delivered.message_id,
            "sessionId": delivered.session_id,
            "text": delivered.text,
            "occurrenceAt": format_instant(latest),
            "reminders": reminders,
            "createdAt": data["createdAt"],
        }
    )


def sign(secret: bytes, timestamp: int, body: bytes) -> str:
    """``v1=<hex HMAC-SHA256 of "<timestamp>." + body>``."""
    mac = hmac.new(secret, str(timestamp).encode("ascii") + b"." + body, hashlib.sha256)
    return f"v1={mac.hexdigest()}"


def verify(
    secret: bytes, headers: Mapping[str, str], body: bytes, now_s: int, tolerance_s: int = 300
) -> bool:
    """The receiver's check: a fresh timestamp and a matching signature (constant time)."""
    lowered = {k.lower(): v for k, v in headers.items()}
    stamp = lowered.get(TIMESTAMP_HEADER.lower(), "")
    given = lowered.get(SIGNATURE_HEADER.lower(), "")
    if not stamp.isdigit() or abs(now_s - int(stamp)) > tolerance_s:
        return False
    return hmac.compare_digest(given.encode(), sign(secret, int(stamp), body).encode())


class WebhookSink:
    """POSTs follow-ups to one URL; :meth:`post` returns only after a 2xx answer."""

    def __init__(
        self,
        url: str,
        secret: bytes,
        clock: Clock,
        *,
        timeout_s: float = 10.0,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        self.url = url
        self._secret = secret
        self._clock = clock
        self._timeout_ms = max(1, round(timeout_s * 1000))
        self._timeout_s = timeout_s
        self._deadlines = Deadlines(clock)
        #: The lean client (schedlog.host.webhook_http) unless a test hands in an httpx
        #: transport, or the URL carries user info (httpx sends it as Basic credentials).
        self._lean: LeanPoster | None = None
        if transport is None and not httpx.URL(url).userinfo:
            self._lean = LeanPoster(url, USER_AGENT, MAX_ANSWER_BYTES)
        self._client = httpx.AsyncClient(
            timeout=httpx.Timeout(timeout_s),
            follow_redirects=False,
            # HTTP(S)_PROXY, ALL_PROXY, NETRC and SSL_CERT_* of the environment are ignored:
            # deliveries go straight to --deliver-to (docs/decisions.md, webhook and proxies).
            trust_env=False,
            transport=transport,
            headers={"User-Agent": USER_AGENT},
        )

    def _signed(self, outgoing: Outgoing) -> tuple[bytes, dict[str, str]]:
        """The body of ``outgoing`` and its headers, signed now."""
        body = payload(outgoing)
        stamp = self._clock.now_ms() // 1000
        headers = {
            "Content-Type": "application/json",
            TIMESTAMP_HEADER: str(stamp),
            SIGNATURE_HEADER: sign(self._secret, stamp, body),
        }
        return body, headers

    def _timed_out(self) -> WebhookError:
        return WebhookError(
            f"the webhook receiver did not answer within {self._timeout_ms / 1000:g} s", "timeout"
        )

    async def post(self, outgoing: Outgoing) -> None:
        """POST the follow-up; return after a 2xx, else raise :class:`WebhookError`. The whole
        exchange ends within the timeout on the host's clock: it runs in this task, which the
        sink's deadline watcher cancels at the deadline."""
        body, headers = self._signed(outgoing)
        deadline = self._deadlines.arm(self._clock.now_ms() + self._timeout_ms)
        try:
            status = await self._exchange(body, headers)
        except asyncio.CancelledError:
            if deadline.expired():
                raise self._timed_out() from None
            raise
        finally:
            deadline.end()
        if not 200 <= status < 300:
            raise WebhookError(f"the webhook receiver answered {status}")

    async def post_reference(self, outgoing: Outgoing) -> None:
        """:meth:`post` in its readable form: the exchange in a task of its own, raced against
        a timer on the host's clock."""
        body, headers = self._signed(outgoing)
        deadline = self._clock.now_ms() + self._timeout_ms
        exchange = asyncio.ensure_future(self._exchange(body, headers))
        try:
            while not exchange.done():
                timer = asyncio.ensure_future(self._clock.sleep_until(deadline))
                try:
                    await asyncio.wait({exchange, timer}, return_when=asyncio.FIRST_COMPLETED)
                finally:
                    timer.cancel()
                if not exchange.done() and self._clock.now_ms() >= deadline:
                    raise self._timed_out()
            status = exchange.result()
        finally:
            if not exchange.done():
                exchange.cancel()
                await asyncio.gather(exchange, return_exceptions=True)
        if not 200 <= status < 300:
            raise WebhookError(f"the webhook receiver answered {status}")

    async def _exchange(self, body: bytes, headers: Mapping[str, str]) -> int:
        """One POST; its status. At most :data:`MAX_ANSWER_BYTES` of the answer are read,
        raw (a compressed answer is never inflated)."""
        if self._lean is not None:
            try:
                # The deadline on the host's clock (post) cuts the exchange; this real-clock
                # bound at twice it is a backstop for a clock that does not advance.
                return await self._lean.post(body, headers, 2 * self._timeout_s)
            except TimeoutError:
                raise WebhookError("the webhook receiver timed out", "timeout") from None
            except (OSError, ProtocolError) as exc:
                raise WebhookError(
                    f"the webhook receiver is unreachable: {exc}", "unreachable"
                ) from None
        try:
            async with self._client.stream("POST", self.url, content=body, headers=headers) as r:
                read = 0
                with contextlib.suppress(httpx.StreamConsumed):  # an answer built in memory
                    async for chunk in r.aiter_raw():
                        read += len(chunk)
                        if read >= MAX_ANSWER_BYTES:
                            break
                return r.status_code
        except httpx.TimeoutException:
            raise WebhookError("the webhook receiver timed out", "timeout") from None
        except httpx.HTTPError as exc:
            raise WebhookError(
                f"the webhook receiver is unreachable: {exc}", "unreachable"
            ) from None

    async def aclose(self) -> None:
        self._deadlines.close()
        if self._lean is not None:
            await self._lean.aclose()
        await self._client.aclose()


class _NoLog:
    """The session handle of webhook delivery: no log, so nothing is known as delivered."""

    delivered: Mapping[Member, str] = {}

    def append(self, event: Mapping[str, Any]) -> object:
        raise WebhookError("webhook delivery writes no session log")

    def flush(self) -> bool:
        return False


class WebhookSessions:
    """The session controller of webhook delivery: sessions are the receiver's business."""

    def resolve(self, session_id: str) -> _NoLog:
        return _NoLog()

    def discard(self, session_id: str) -> None:
        pass

    def legacy_reminders(self, session_id: str) -> int:
        return 0

    def close(self) -> None:
        pass
