"""ASGI middleware of ``schedlog host serve`` that runs before the token guard
(docs/http-api.md#security):

* :class:`NoStore` adds ``Cache-Control: no-store`` to every ``/v1`` answer (errors too), so
  task data never stays in a browser's disk cache after Sign out;
* :class:`HostCheck` applies the ``Host`` allow-list in front of the CORS middleware, so a
  preflight request (answered by CORS before the guard) is refused on a foreign ``Host`` too.
"""

from __future__ import annotations

from starlette.datastructures import MutableHeaders
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from schedlog.serve.errors import HttpError, error_response

__all__ = ["HostCheck", "NoStore", "check_host"]


def check_host(scope: Scope, hosts: frozenset[str]) -> None:
    """Raise the 400/421 :class:`HttpError` of a missing or foreign ``Host`` header."""
    values = [v for name, v in scope["headers"] if name == b"host"]
    if len(values) > 1:
        raise HttpError("invalid_request", "repeated host header", 400)
    if not values:
        raise HttpError("invalid_request", "the Host header is required", 400)
    if values[0].decode("latin-1").lower() not in hosts:
        raise HttpError(
            "misdirected_request",
            "the Host header names a host this server does not answer for",
            421,
        )


class NoStore:
    """``Cache-Control: no-store`` on every answer under ``/v1``."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or not scope["path"].startswith("/v1"):
            await self.app(scope, receive, send)
            return

        async def send_no_store(message: Message) -> None:
            if message["type"] == "http.response.start":
                MutableHeaders(scope=message)["Cache-Control"] = "no-store"
            await send(message)

        await self.app(scope, receive, send_no_store)


class HostCheck:
    """The ``Host`` allow-list alone, outermost when CORS is on."""

    def __init__(self, app: ASGIApp, *, hosts: frozenset[str]) -> None:
        self.app = app
        self._hosts = hosts

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            try:
                check_host(scope, self._hosts)
            except HttpError as exc:
                await error_response(exc)(scope, receive, send)
                return
        await self.app(scope, receive, send)
