"""The ``/v1`` handlers (docs/http-api.md): one to one onto the host tools and the remote
operations of one :class:`~schedlog.host.service.HostService`, through its FIFO.

Tool routes answer exactly the tool value ``host batch`` gives, with a status that fits its
code; every other route answers its result, or ``{"error":{"code","message"}}``.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
from typing import Any

import msgspec
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse

from schedlog.absent import ABSENT
from schedlog.errors import ScheduleInputError
from schedlog.host.catalog import (
    CATALOG_STATUSES,
    DEFAULT_CATALOG_PAGE,
    MAX_CATALOG_PAGE,
    CatalogQuery,
)
from schedlog.host.explain import MAX_EXPLAIN
from schedlog.host.history import MAX_HISTORY_PAGE
from schedlog.host.service import HostService
from schedlog.host.task import Task, catalog_entry
from schedlog.host.tools import INTERNAL_ERROR, TOOL_NAMES
from schedlog.rules.describe import describe_rule
from schedlog.serve.auth import read_body
from schedlog.serve.bodies import Health, PauseBody, RetryState, UpdateBody
from schedlog.serve.errors import HttpError, json_response, status_of_code
from schedlog.serve.parse import int_param, object_body, query_params
from schedlog.serve.sse import TooManyClients
from schedlog.serve.state import ready_service, serve_state
from schedlog.strictjson import JSONSyntaxError, loads_strict

__all__ = [
    "catalog",
    "delete_task",
    "events",
    "explain",
    "get_task",
    "healthz",
    "history",
    "pause_task",
    "readyz",
    "session_tasks",
    "tool",
    "update_task",
]


# --- tools ---------------------------------------------------------------------------------


def _tool_status(value: Any, service: HostService) -> int:
    if not isinstance(value, dict) or "code" not in value or value.get("changed") is True:
        return 200  # a resume that ended the task did change it (docs/protocol.md#pause)
    code = str(value["code"])
    if code == "internal_error" and not service.running:
        return 503
    return status_of_code(code)


async def tool(request: Request) -> Response:
    """``POST /v1/sessions/{sessionId}/tools/{tool}``: the body is the tool arguments."""
    service = ready_service(request)
    name = request.path_params["tool"]
    session_id: str = request.path_params["sessionId"]
    if name not in TOOL_NAMES:
        known = ", ".join(TOOL_NAMES)
        raise HttpError("not_found", f"unknown tool {name!r}; the tools are {known}")
    query_params(request, ())
    args = await object_body(request)
    tools = serve_state(request).tools
    assert tools is not None
    value = await tools.call(name, session_id, args)
    if value == INTERNAL_ERROR and not service.running:
        return json_response(value, 503)
    return json_response(value, _tool_status(value, service))


# --- the catalog -----------------------------------------------------------------------------


def _encode_cursor(task: Task) -> str:
    raw = msgspec.json.encode([task.record.scheduled_at, task.id])
    return base64.urlsafe_b64encode(raw).decode("ascii").rstrip("=")


def _decode_cursor(text: str) -> tuple[int, str]:
    try:
        raw = base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
        at, task_id = msgspec.json.decode(raw, type=tuple[int, str], strict=True)
    except (binascii.Error, ValueError, msgspec.DecodeError):
        message = "query parameter cursor is not a catalog cursor"
        raise HttpError("invalid_request", message) from None
    return at, task_id


def _entry(task: Task, retry: RetryState | None) -> dict[str, Any]:
    out = catalog_entry(task)
    out["description"] = describe_rule(task.record)
    if retry is not None and task.active and not task.paused:
        out["status"] = "retrying"
        out["retry"] = msgspec.to_builtins(retry)
    return out


async def catalog(request: Request) -> Response:
    """``GET /v1/tasks?limit&cursor&sessionId&status&title``: every task, paged, by
    ``scheduledAt`` then ``id``."""
    service = ready_service(request)
    query = query_params(request, ("limit", "cursor", "sessionId", "status", "title", "order"))
    order = query.get("order", "asc")
    if order not in ("asc", "desc"):
        raise HttpError("invalid_request", "query parameter order must be asc or desc")
    descending = order == "desc"
    limit = int_param(query, "limit", DEFAULT_CATALOG_PAGE, 1, MAX_CATALOG_PAGE)
    after = _decode_cursor(query["cursor"]) if "cursor" in query else None
    session_id = query.get("sessionId")
    status = query.get("status")
    if status is not None and status not in CATALOG_STATUSES:
        message = f"query parameter status must be one of {CATALOG_STATUSES}"
        raise HttpError("invalid_request", message)
    title = query["title"].casefold() if "title" in query else None
    retry_state = serve_state(request).retry_state

    def status_of(task: Task) -> str:
        if task.paused:
            return "paused"
        if task.active and retry_state(task.id) is not None:
            return "retrying"
        return task.effective_status

    wanted = CatalogQuery(limit, after, descending, session_id, status, title)
    page = await service.catalog_page(wanted, status_of)
    next_cursor = _encode_cursor(page.tasks[-1]) if page.more else None
    items = [_entry(t, retry_state(t.id) if t.active else None) for t in page.tasks]
    return json_response({"items": items, "nextCursor": next_cursor})


# --- one session's tasks -------------------------------------------------------------------


def _not_found(task_id: str) -> HttpError:
    return HttpError("schedule_not_found", f"no task {task_id!r} in this session")


async def session_tasks(request: Request) -> Response:
    """``GET /v1/sessions/{sessionId}/tasks``: the remote ``list`` (active records)."""
    service = ready_service(request)
    query_params(request, ())
    session_id: str = request.path_params["sessionId"]
    return json_response([r.to_json() for r in service.list_records(session_id)])


async def get_task(request: Request) -> Response:
    """``GET /v1/sessions/{sessionId}/tasks/{id}``: one task's catalog entry (the web page's
    detail view), active or ended."""
    service = ready_service(request)
    query_params(request, ())
    task_id: str = request.path_params["id"]
    task = service.find(request.path_params["sessionId"], task_id)
    if task is None:
        raise _not_found(task_id)
    return json_response(_entry(task, serve_state(request).retry_state(task.id)))


async def history(request: Request) -> Response:
    """``GET /v1/sessions/{sessionId}/tasks/{id}/history?limit&before``."""
    service = ready_service(request)
    query = query_params(request, ("limit", "before"))
    limit = int_param(query, "limit", 20, 1, MAX_HISTORY_PAGE)
    session_id: str = request.path_params["sessionId"]
    task_id: str = request.path_params["id"]
    before: object = query.get("before", ABSENT)
    page = service.history(session_id, task_id, limit, before)
    if page.get("code") == "schedule_not_found":
        raise _not_found(task_id)
    if page.get("code") == "delivery_cursor_not_found":
        raise HttpError(
            "delivery_cursor_not_found", f"query parameter before: no delivery {before!r}"
        )
    return json_response(page)


async def update_task(request: Request) -> Response:
    """``PUT /v1/sessions/{sessionId}/tasks/{id}``: compare-and-set update (409 on conflict,
    with the current record)."""
    service = ready_service(request)
    query_params(request, ())
    session_id: str = request.path_params["sessionId"]
    task_id: str = request.path_params["id"]
    raw = await object_body(request)
    try:
        body = msgspec.convert(raw, UpdateBody, strict=True)
    except msgspec.ValidationError as exc:
        raise HttpError("invalid_request", f"the body is not an update: {exc}") from None
    result = await service.update(
        session_id,
        task_id,
        body.expected,
        change=ABSENT if body.change is msgspec.UNSET else body.change,
        title=ABSENT if body.title is msgspec.UNSET else body.title,
        prompt=ABSENT if body.prompt is msgspec.UNSET else body.prompt,
    )
    if result.code == "schedule_not_found":
        raise _not_found(task_id)
    if result.code == "schedule_ended":
        raise HttpError("schedule_ended", f"task {task_id!r} has ended; it cannot be updated")
    if result.code == "schedule_conflict":
        return _conflict(service, session_id, task_id)
    if result.code is not None:  # pragma: no cover - resolve_update has no other codes
        raise HttpError(result.code, f"task {task_id!r} was not updated")
    return json_response(result.to_json(id=task_id))


def _conflict(service: HostService, session_id: str, task_id: str) -> Response:
    """409 ``schedule_conflict`` with the current record (as PUT answers it)."""
    current = service.find(session_id, task_id)
    if current is None:  # deleted since: the conflict is now a missing task
        raise _not_found(task_id)
    return json_response(
        {
            "error": {
                "code": "schedule_conflict",
                "message": f"task {task_id!r} changed since expected was read",
            },
            "current": current.record.to_json(),
        },
        409,
    )


async def _pause_body(request: Request) -> object:
    """The optional ``expected`` of a pause or resume; an empty body is ``{}``."""
    raw = await read_body(request)
    if not raw:
        return ABSENT
    try:
        value = loads_strict(raw)
    except JSONSyntaxError as exc:
        raise HttpError("invalid_request", f"the body is not strict JSON: {exc.message}") from None
    try:
        body = msgspec.convert(value, PauseBody, strict=True)
    except msgspec.ValidationError as exc:
        raise HttpError("invalid_request", f"the body is not a pause or resume: {exc}") from None
    return ABSENT if body.expected is msgspec.UNSET else body.expected


async def pause_task(request: Request) -> Response:
    """``POST /v1/sessions/{sessionId}/tasks/{id}/pause`` and ``.../resume``
    (docs/protocol.md#pause): an optional ``{"expected"}`` body for compare-and-set."""
    service = ready_service(request)
    query_params(request, ())
    session_id: str = request.path_params["sessionId"]
    task_id: str = request.path_params["id"]
    resume = request.url.path.endswith("/resume")
    content_type = request.headers.get("content-type", "application/json")
    if content_type.split(";")[0].strip().lower() != "application/json":
        raise HttpError("unsupported_media_type", "the body must be application/json", 415)
    expected = await _pause_body(request)
    try:
        result = await service.pause(session_id, task_id, expected, resume=resume)
    except ScheduleInputError as exc:
        raise input_error(exc) from None
    code = result.get("code")
    if code == "schedule_not_found":
        raise _not_found(task_id)
    if code == "schedule_conflict":
        return _conflict(service, session_id, task_id)
    if code == "schedule_ended" and not result.get("changed"):
        what = "resumed" if resume else "paused"
        raise HttpError("schedule_ended", f"task {task_id!r} has ended; it cannot be {what}")
    if code == "pause_unsupported":
        raise HttpError(
            "pause_unsupported",
            "this host's store (the schedule.json document) cannot hold a paused task",
        )
    return json_response(result)


async def delete_task(request: Request) -> Response:
    """``DELETE /v1/sessions/{sessionId}/tasks/{id}``."""
    service = ready_service(request)
    query_params(request, ())
    session_id: str = request.path_params["sessionId"]
    task_id: str = request.path_params["id"]
    result = await service.delete(session_id, task_id)
    if not result.get("deleted"):
        raise _not_found(task_id)
    return json_response(result)


# --- explain -----------------------------------------------------------------------------


async def explain(request: Request) -> Response:
    """``GET /v1/tasks/{id}/explain?count=N``: the next targets, as ``rules next`` prints."""
    service = ready_service(request)
    query = query_params(request, ("count",))
    count = int_param(query, "count", 5, 1, MAX_EXPLAIN)
    task_id: str = request.path_params["id"]
    found = service.explain(task_id, count)
    if found is None:
        raise HttpError("schedule_not_found", f"no task {task_id!r}")
    return json_response(found)


# --- events and health ---------------------------------------------------------------------


async def events(request: Request) -> Response:
    """``GET /v1/events``: Server-Sent Events; resume with ``Last-Event-ID``."""
    ready_service(request)
    query = query_params(request, ("lastEventId",))
    hub = serve_state(request).hub
    assert hub is not None
    last = request.headers.get("last-event-id", query.get("lastEventId"))
    try:
        stream = hub.open(last)
    except TooManyClients:
        raise HttpError(
            "too_many_clients", f"at most {hub.max_clients} event streams at once", 503
        ) from None
    return StreamingResponse(
        stream,
        media_type="text/event-stream",
        headers={"Cache-Control": "no-store", "X-Accel-Buffering": "no"},
    )


async def healthz(request: Request) -> Response:
    """``GET /healthz``: the process answers."""
    query_params(request, ())
    return json_response(Health("ok"))


async def readyz(request: Request) -> Response:
    """``GET /readyz``: the store is open and answers, and the delivery timer runs (503
    otherwise). A store with a server is pinged off the event loop, within its bound
    (docs/reliability.md#slow-postgresql)."""
    query_params(request, ())
    service = ready_service(request)
    try:
        await asyncio.to_thread(service.ping_store)
    except Exception as exc:
        raise HttpError("service_unavailable", f"the store does not answer: {exc}") from None
    return json_response(Health("ready"))


def input_error(exc: ScheduleInputError) -> HttpError:
    """A rule input error raised by the service (a bad history ``limit``, a bad change)."""
    return HttpError(exc.code, exc.message)
