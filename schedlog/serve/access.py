"""One access line per request of ``schedlog host serve``, and its request counter
(docs/operations.md#serve-logs, docs/operations.md#metrics).

:class:`AccessLog` is the outermost ASGI middleware, so a request refused by the guard (401,
421, 413) is logged and counted too. The line holds the method, the route *template*
(``/v1/sessions/{sessionId}/tasks/{id}``, never the path a client sent: no session id, task id
or other user text), the status and the milliseconds until the response ended. It never holds
a header, the query or a body, so neither the token nor a sign-in code can reach a log.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Final

import structlog
from starlette.routing import BaseRoute, Match, Mount, Route
from starlette.types import ASGIApp, Message, Receive, Scope, Send

__all__ = ["METHODS", "UNMATCHED", "AccessLog", "route_template"]

#: Methods logged as sent; any other is logged (and counted) as ``OTHER``.
METHODS: Final = frozenset({"GET", "HEAD", "POST", "PUT", "DELETE", "OPTIONS", "PATCH"})
#: The route label of a path no route matches.
UNMATCHED: Final = "unmatched"

_log = structlog.get_logger("schedlog.serve.access")


def route_template(routes: list[BaseRoute], scope: Scope) -> str:
    """The path template of the first route that matches ``scope``'s path (any method)."""
    for route in routes:
        if isinstance(route, Route | Mount):
            match, _ = route.matches(scope)
            if match != Match.NONE:
                return route.path or "/"
    return UNMATCHED


class AccessLog:
    """Logs ``http.request`` (info) and calls ``count(route, status)``
    once per request, when its response has ended (or the client went away)."""

    def __init__(
        self,
        app: ASGIApp,
        *,
        routes: Callable[[], list[BaseRoute]],
        count: Callable[[str, int], None] | None = None,
    ) -> None:
        self.app = app
        self._routes = routes
        self._count = count
        #: Requests answered since start (the stop line says how many).
        self.requests = 0

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        start = time.perf_counter()
        status = [0]

        async def sending(message: Message) -> None:
            if message["type"] == "http.response.start":
                status[0] = int(message["status"])
            await send(message)

        try:
            await self.app(scope, receive, sending)
        finally:
            self._done(scope, status[0], time.perf_counter() - start)

    def _done(self, scope: Scope, status: int, seconds: float) -> None:
        method = str(scope.get("method", ""))
        method = method if method in METHODS else "OTHER"
        route = route_template(self._routes(), scope)
        self.requests += 1
        if self._count is not None:
            self._count(route, status)
        ms = round(seconds * 1000, 1)
        shown = status if status else "no response"
        _log.info(
            "http.request",
            method=method,
            route=route,
            status=status,
            ms=ms,
            message=f"schedule: {method} {route} {shown} {ms} ms",
        )
