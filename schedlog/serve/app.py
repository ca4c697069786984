"""The Starlette application of ``schedlog host serve`` (docs/http-api.md).

:func:`build_app` takes how to open the host: the lifespan opens it inside the server's event
loop (so the FIFO and the timer run there), and closes it at shutdown. Until it is open, and
from the moment it starts stopping, ``/v1`` routes and ``/readyz`` answer 503.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import dataclass

import structlog
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.middleware.cors import CORSMiddleware
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Match, Route

from schedlog.errors import INTERNAL_MESSAGE, ScheduleError, ScheduleInputError
from schedlog.host.service import HostService
from schedlog.host.storage_full import store_unavailable
from schedlog.host.tools import HostTools
from schedlog.mcp.http import MCP_PATH, McpMount
from schedlog.serve import routes
from schedlog.serve.auth import Guard
from schedlog.serve.errors import HttpError, error_response, json_response
from schedlog.serve.headers import HostCheck, NoStore
from schedlog.serve.openapi import openapi
from schedlog.serve.preview import preview
from schedlog.serve.signin import SigninCodes, signin_routes
from schedlog.serve.sse import EventHub
from schedlog.serve.state import RetryLookup, ServeState, serve_state
from schedlog.serve.web import web_routes

__all__ = ["Host", "build_app"]

_log = structlog.get_logger("schedlog.serve")


@dataclass
class Host:
    """What the lifespan gets from the opener: the running service and, for webhook delivery,
    the retry state of its tasks."""

    service: HostService
    retry_state: RetryLookup | None = None
    close: Callable[[], Awaitable[None]] | None = None


def _routes(signin: list[Route]) -> list[BaseRoute]:
    s = "/v1/sessions/{sessionId}"
    return [
        Route(s + "/tools/{tool}", routes.tool, methods=["POST"]),
        Route("/v1/tasks", routes.catalog, methods=["GET"]),
        Route(s + "/tasks", routes.session_tasks, methods=["GET"]),
        Route(s + "/tasks/{id}/history", routes.history, methods=["GET"]),
        Route(s + "/tasks/{id}/pause", routes.pause_task, methods=["POST"]),
        Route(s + "/tasks/{id}/resume", routes.pause_task, methods=["POST"]),
        Route(s + "/tasks/{id}", routes.get_task, methods=["GET"]),
        Route(s + "/tasks/{id}", routes.update_task, methods=["PUT"]),
        Route(s + "/tasks/{id}", routes.delete_task, methods=["DELETE"]),
        Route("/v1/tasks/{id}/explain", routes.explain, methods=["GET"]),
        Route("/v1/rules/preview", preview, methods=["POST"]),
        Route("/v1/events", routes.events, methods=["GET"]),
        Route("/healthz", routes.healthz, methods=["GET"]),
        Route("/readyz", routes.readyz, methods=["GET"]),
        Route("/openapi.json", _openapi, methods=["GET"]),
        *signin,  # one-time sign-in codes of the page (schedlog.serve.signin)
        *web_routes(),  # the task page at / (schedlog.serve.web)
    ]


async def _openapi(request: Request) -> Response:
    return json_response(openapi())


async def _http_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, HttpError)
    return error_response(exc)


def _allowed_methods(request: Request) -> list[str]:
    """Every method some route takes at this path (one path can have a route per method)."""
    methods: set[str] = set()
    for route in request.app.routes:
        if (
            isinstance(route, Route)
            and route.methods
            and route.matches(request.scope)[0] != Match.NONE
        ):
            methods |= route.methods
    return sorted(methods)


async def _starlette_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, HTTPException)
    if exc.status_code == 405:
        allow = {"Allow": ", ".join(_allowed_methods(request))}
        return error_response(
            HttpError("method_not_allowed", "method not allowed here", 405, allow)
        )
    if exc.status_code == 404:
        return error_response(HttpError("not_found", f"no route {request.url.path!r}", 404))
    return error_response(HttpError("invalid_request", str(exc.detail), exc.status_code))


async def _schedule_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, ScheduleError)
    if isinstance(exc, ScheduleInputError):
        return error_response(HttpError(exc.code, exc.message))
    if not serve_state(request).ready or store_unavailable(exc):
        return error_response(HttpError("service_unavailable", exc.message, 503))
    _log.error(
        "request.failed",
        path=request.url.path,
        code=exc.code,
        error=exc.message,
        message=f"schedule: request {request.url.path} failed: {exc.message}",
    )
    return error_response(HttpError(exc.code, exc.message, 500))


async def _unexpected(request: Request, exc: Exception) -> Response:
    unavailable = store_unavailable(exc)
    if unavailable is not None:
        return error_response(HttpError("service_unavailable", str(unavailable), 503))
    _log.error(
        "request.failed",
        path=request.url.path,
        code="internal_error",
        error=repr(exc),
        message=f"schedule: request {request.url.path} failed: {exc!r}",
    )
    return error_response(HttpError("internal_error", INTERNAL_MESSAGE, 500))


def build_app(
    opener: Callable[[], Awaitable[Host]],
    *,
    token: str,
    hosts: frozenset[str],
    epoch: int,
    cors_origins: Sequence[str] = (),
    max_event_clients: int = 32,
) -> Starlette:
    """The ASGI application; ``opener`` runs in the lifespan, inside the server's loop."""
    state = ServeState()
    codes = SigninCodes()
    mcp = McpMount()  # the MCP endpoint (docs/agents.md#http)

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        host = await opener()
        state.service = host.service
        state.tools = HostTools(host.service)
        state.hub = EventHub(host.service, epoch, max_clients=max_event_clients)
        host.service.open_catalog()
        if host.retry_state is not None:
            state.retry_state = host.retry_state
        try:
            async with mcp.serving(host.service):
                yield
        finally:
            state.hub.close()
            await host.service.aclose()
            if host.close is not None:
                await host.close()

    middleware = [Middleware(NoStore)]
    if cors_origins:
        middleware.append(Middleware(HostCheck, hosts=hosts))  # preflights included
        middleware.append(
            Middleware(
                CORSMiddleware,
                allow_origins=list(cors_origins),
                allow_methods=["GET", "POST", "PUT", "DELETE"],
                allow_headers=["Authorization", "Content-Type", "Last-Event-ID"],
            )
        )
    middleware.append(Middleware(Guard, token=token, hosts=hosts))
    app = Starlette(
        routes=[*_routes(signin_routes(codes, token)), Route(MCP_PATH, mcp)],
        middleware=middleware,
        lifespan=lifespan,
        exception_handlers={
            HttpError: _http_error,
            HTTPException: _starlette_error,
            ScheduleError: _schedule_error,
            Exception: _unexpected,
        },
    )
    app.state.serve = state
    app.state.signin = codes
    return app
