"""The ``/v1`` handlers (docs/http-api.md): one to one onto the host tools and the remote
operations of one :class:`~schedlog.host.service.HostService`, through its FIFO.

Tool routes answer exactly the tool value ``host batch`` gives, with a status that fits its
code; every other route answers its result, or ``{"error":{"code","message"}}``.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final

import msgspec
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse

from schedlog.absent import ABSENT
from schedlog.errors import ScheduleInputError
from schedlog.host.history import MAX_PAGE as MAX_HISTORY_PAGE
from schedlog.host.service import HostService
from schedlog.host.task import Task, catalog_entry
from schedlog.host.tools import INTERNAL_ERROR, TOOL_NAMES, HostTools
from schedlog.rules.describe import describe_rule
from schedlog.rules.instants import format_instant
from schedlog.rules.upcoming import upcoming_json
from schedlog.serve.auth import read_body
from schedlog.serve.bodies import MAX_PAGE, Health, PauseBody, RetryState, UpdateBody
from schedlog.serve.catalog_index import CatalogIndex, CatalogQuery, scan_page
from schedlog.serve.errors import HttpError, json_response, status_of_code
from schedlog.serve.sse import EventHub, TooManyClients
from schedlog.strictjson import JSONSyntaxError, loads_strict

__all__ = [
    "MAX_EXPLAIN",
    "RetryLookup",
    "ServeState",
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

MAX_EXPLAIN: Final = 100
DEFAULT_PAGE: Final = 100
STATUSES: Final = ("active", "inactive", "retrying", "paused")

#: ``task id -> retry state`` of the delivery sink (webhook delivery), None when not retrying.
RetryLookup = Callable[[str], RetryState | None]


@dataclass
class ServeState:
    """What the handlers share: set by the application's lifespan."""

    service: HostService | None = None
    tools: HostTools | None = None
    hub: EventHub | None = None
    catalog: CatalogIndex | None = None
    retry_state: RetryLookup = field(default=lambda _id: None)


def _state(request: Request) -> ServeState:
    state: ServeState = request.app.state.serve
    return state


def _service(request: Request) -> HostService:
    state = _state(request)
    if state.service is None or not state.service.running:
        raise HttpError("service_unavailable", "the schedule service is starting or stopping")
    return state.service


# --- request parsing ---------------------------------------------------------------------


def _query(request: Request, allowed: tuple[str, ...]) -> dict[str, str]:
    out: dict[str, str] = {}
    for name, value in request.query_params.multi_items():
        if name not in allowed:
            raise HttpError("invalid_request", f"unknown query parameter {name!r}")
        if name in out:
            raise HttpError("invalid_request", f"query parameter {name!r} is repeated")
        out[name] = value
    return out


def _int_param(query: Mapping[str, str], name: str, default: int, low: int, high: int) -> int:
    text = query.get(name)
    if text is None:
        return default
    if not text.isascii() or not text.isdigit() or not low <= int(text) <= high:
        raise HttpError(
            "invalid_request", f"query parameter {name} must be an integer from {low} to {high}"
        )
    return int(text)


async def _json_body(request: Request) -> Any:
    content_type = request.headers.get("content-type", "application/json")
    if content_type.split(";")[0].strip().lower() != "application/json":
        raise HttpError("unsupported_media_type", "the body must be application/json", 415)
    raw = await read_body(request)
    try:
        return loads_strict(raw)
    except JSONSyntaxError as exc:
        raise HttpError("invalid_request", f"the body is not strict JSON: {exc.message}") from None


async def _object_body(request: Request) -> dict[str, Any]:
    value = await _json_body(request)
    if not isinstance(value, dict):
        raise HttpError("invalid_request", "the body must be a JSON object")
    return value


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
    service = _service(request)
    name = request.path_params["tool"]
    session_id: str = request.path_params["sessionId"]
    if name not in TOOL_NAMES:
        known = ", ".join(TOOL_NAMES)
        raise HttpError("not_found", f"unknown tool {name!r}; the tools are {known}")
    _query(request, ())
    args = await _object_body(request)
    tools = _state(request).tools
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
    service = _service(request)
    query = _query(request, ("limit", "cursor", "sessionId", "status", "title", "order"))
    order = query.get("order", "asc")
    if order not in ("asc", "desc"):
        raise HttpError("invalid_request", "query parameter order must be asc or desc")
    descending = order == "desc"
    limit = _int_param(query, "limit", DEFAULT_PAGE, 1, MAX_PAGE)
    after = _decode_cursor(query["cursor"]) if "cursor" in query else None
    session_id = query.get("sessionId")
    status = query.get("status")
    if status is not None and status not in STATUSES:
        raise HttpError("invalid_request", f"query parameter status must be one of {STATUSES}")
    title = query["title"].casefold() if "title" in query else None
    state = _state(request)
    retry_state = state.retry_state

    def status_of(task: Task) -> str:
        if task.paused:
            return "paused"
        if task.active and retry_state(task.id) is not None:
            return "retrying"
        return task.effective_status

    wanted = CatalogQuery(limit, after, descending, session_id, status, title)
    if state.catalog is not None:
        page = state.catalog.page(wanted, status_of)
    else:  # the reference: a store other processes may write (catalog_index.index_for)
        page = scan_page((st.task for st in service.core.store.tasks()), wanted, status_of)
    next_cursor = _encode_cursor(page.tasks[-1]) if page.more else None
    items = [_entry(t, retry_state(t.id) if t.active else None) for t in page.tasks]
    return json_response({"items": items, "nextCursor": next_cursor})


# --- one session's tasks -------------------------------------------------------------------


def _not_found(task_id: str) -> HttpError:
    return HttpError("schedule_not_found", f"no task {task_id!r} in this session")


async def session_tasks(request: Request) -> Response:
    """``GET /v1/sessions/{sessionId}/tasks``: the remote ``list`` (active records)."""
    service = _service(request)
    _query(request, ())
    session_id: str = request.path_params["sessionId"]
    return json_response([r.to_json() for r in service.list_records(session_id)])


async def get_task(request: Request) -> Response:
    """``GET /v1/sessions/{sessionId}/tasks/{id}``: one task's catalog entry (the web page's
    detail view), active or ended."""
    service = _service(request)
    _query(request, ())
    task_id: str = request.path_params["id"]
    task = service.find(request.path_params["sessionId"], task_id)
    if task is None:
        raise _not_found(task_id)
    return json_response(_entry(task, _state(request).retry_state(task.id)))


async def history(request: Request) -> Response:
    """``GET /v1/sessions/{sessionId}/tasks/{id}/history?limit&before``."""
    service = _service(request)
    query = _query(request, ("limit", "before"))
    limit = _int_param(query, "limit", 20, 1, MAX_HISTORY_PAGE)
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
    service = _service(request)
    _query(request, ())
    session_id: str = request.path_params["sessionId"]
    task_id: str = request.path_params["id"]
    raw = await _object_body(request)
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
    service = _service(request)
    _query(request, ())
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
    service = _service(request)
    _query(request, ())
    session_id: str = request.path_params["sessionId"]
    task_id: str = request.path_params["id"]
    result = await service.delete(session_id, task_id)
    if not result.get("deleted"):
        raise _not_found(task_id)
    return json_response(result)


# --- explain -----------------------------------------------------------------------------


async def explain(request: Request) -> Response:
    """``GET /v1/tasks/{id}/explain?count=N``: the next targets, as ``rules next`` prints."""
    service = _service(request)
    query = _query(request, ("count",))
    count = _int_param(query, "count", 5, 1, MAX_EXPLAIN)
    task_id: str = request.path_params["id"]
    st = service.core.store.get(task_id)
    if st is None:
        raise HttpError("schedule_not_found", f"no task {task_id!r}")
    record = st.task.record
    at = service.clock.now_ms()
    upcoming = upcoming_json(record, at, count) if st.task.active else []
    return json_response(
        {
            "id": task_id,
            "sessionId": st.task.session_id,
            "record": record.to_json(),
            "at": format_instant(at),
            "upcoming": upcoming,
        }
    )


# --- events and health ---------------------------------------------------------------------


async def events(request: Request) -> Response:
    """``GET /v1/events``: Server-Sent Events; resume with ``Last-Event-ID``."""
    _service(request)
    query = _query(request, ("lastEventId",))
    hub = _state(request).hub
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
    _query(request, ())
    return json_response(Health("ok"))


async def readyz(request: Request) -> Response:
    """``GET /readyz``: the store is open and answers, and the delivery timer runs (503
    otherwise). A store with a server is pinged off the event loop, within its bound
    (docs/reliability.md#slow-postgresql)."""
    _query(request, ())
    ping = getattr(_service(request).core.store, "ping", None)
    if ping is not None:
        try:
            await asyncio.to_thread(ping)
        except Exception as exc:
            raise HttpError("service_unavailable", f"the store does not answer: {exc}") from None
    return json_response(Health("ready"))


def input_error(exc: ScheduleInputError) -> HttpError:
    """A rule input error raised by the service (a bad history ``limit``, a bad change)."""
    return HttpError(exc.code, exc.message)
