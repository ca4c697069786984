"""``/openapi.json``: the OpenAPI 3.1 document, generated from the msgspec types of
:mod:`schedlog.serve.bodies` and of the host tool schemas (:mod:`schedlog.host.tool_schemas`) with
``msgspec.json.schema_components``; only the paths are listed here.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import cache
from typing import Any, Final

import msgspec

from schedlog.about import docs_url, package_version
from schedlog.host.catalog import CATALOG_STATUSES, DEFAULT_CATALOG_PAGE, MAX_CATALOG_PAGE
from schedlog.host.explain import MAX_EXPLAIN
from schedlog.host.tool_schemas import (
    RESULT_TYPES,
    TOOLS,
    DeleteResult,
    ErrorValue,
    PauseNotApplied,
    PauseResult,
    ResumeEnded,
    ResumeNotApplied,
    ResumeResult,
    UpdateNotApplied,
)
from schedlog.host.tools import TOOL_NAMES
from schedlog.serve import bodies
from schedlog.serve.preview import PreviewBody, PreviewResult
from schedlog.serve.signin import CODE_TTL_S, SigninCode, SigninExchange, SigninToken

__all__ = ["REF", "openapi"]

REF: Final = "#/components/schemas/{name}"
_JSON: Final = "application/json"


def _ref(tp: Any) -> dict[str, Any]:
    return {"$ref": REF.format(name=tp.__name__)}


def _content(schema: dict[str, Any]) -> dict[str, Any]:
    return {"content": {_JSON: {"schema": schema}}}


def _json(description: str, schema: dict[str, Any]) -> dict[str, Any]:
    return {"description": description, **_content(schema)}


def _errors(*statuses: str) -> dict[str, Any]:
    text = {
        "400": "A malformed request: code invalid_request.",
        "401": "No or a wrong bearer token: code unauthorized.",
        "404": "Not found: schedule_not_found (also for another session's task).",
        "409": "Conflict.",
        "410": "The task has ended: schedule_ended.",
        "413": "The body is longer than 1 MiB: payload_too_large.",
        "415": "The body is not application/json.",
        "421": "The Host header is not allowed: misdirected_request.",
        "401-signin": "The code is unknown, expired or already used: signin_code_refused.",
        "422": "A rule input error (invalid_rule, not_future, invalid_time_zone, ...).",
        "503": "The service is starting or stopping, or too many event streams.",
    }
    return {s.split("-")[0]: _json(text[s], _ref(bodies.ErrorBody)) for s in statuses}


_COMMON: Final = ("400", "401", "421", "503")
_SECURITY: Final[list[dict[str, list[str]]]] = [{"bearer": []}]


def _path_param(name: str, description: str) -> dict[str, Any]:
    return {
        "name": name,
        "in": "path",
        "required": True,
        "description": description,
        "schema": {"type": "string", "pattern": "^[^/]+$"},
    }


_SESSION: Final = _path_param("sessionId", "The session the task belongs to.")
_ID: Final = _path_param("id", "The task id.")


def _query(name: str, schema: dict[str, Any], description: str) -> dict[str, Any]:
    return {
        "name": name,
        "in": "query",
        "required": False,
        "description": description,
        "schema": schema,
    }


def _op(
    summary: str,
    responses: dict[str, Any],
    *,
    parameters: Sequence[dict[str, Any]] = (),
    body: dict[str, Any] | None = None,
    secured: bool = True,
    errors: Sequence[str] = _COMMON,
) -> dict[str, Any]:
    out: dict[str, Any] = {"summary": summary, "operationId": summary, "responses": {}}
    if parameters:
        out["parameters"] = list(parameters)
    if body is not None:
        out["requestBody"] = {"required": True, **_content(body)}
    if secured:
        out["security"] = _SECURITY
    statuses = {*errors, *(("413", "415") if body else ())} - responses.keys()
    out["responses"] = {**responses, **_errors(*sorted(statuses))}
    return out


def _schema_of(tp: Any) -> dict[str, Any]:
    if getattr(tp, "__origin__", None) is list:  # list[View]: an array of the view union
        return {"type": "array", "items": {"oneOf": [_ref(a) for a in tp.__args__[0].__args__]}}
    return _ref(tp)


def _one_of(types: Sequence[Any]) -> dict[str, Any]:
    schemas = [_schema_of(t) for t in types]
    return schemas[0] if len(schemas) == 1 else {"oneOf": schemas}


def _tool_paths() -> dict[str, Any]:
    """One POST per tool the host answers (TOOL_NAMES); each status lists the tool values it
    can carry."""
    paths: dict[str, Any] = {}
    for name, (description, params) in _served_tools():
        values = [t for t in RESULT_TYPES[name] if t is not ErrorValue]
        refused = [t for t in values if t in _REFUSED]
        success = [t for t in values if t not in _NOT_APPLIED]
        responses: dict[str, Any] = {
            "200": _json("The tool value.", _one_of(success)),
            "422": _json("An input error value.", _ref(ErrorValue)),
            "500": _json("internal_error.", _ref(ErrorValue)),
            "507": _json(
                "storage_full: the store's disk is full, nothing was stored.", _ref(ErrorValue)
            ),
            "503": _json(
                "The service is stopping.", {"oneOf": [_ref(ErrorValue), _ref(bodies.ErrorBody)]}
            ),
        }
        if refused:
            for status in _REFUSED_STATUSES.get(name, ("404",)):
                responses[status] = _json("The tool value: not applied.", _one_of(refused))
        operation = _op(name, responses, parameters=[_SESSION], body=_ref(params))
        operation["description"] = description
        paths[f"/v1/sessions/{{sessionId}}/tools/{name}"] = {"post": operation}
    return paths


#: Tool values that apply nothing, and those carried by a refusal status.
_NOT_APPLIED: Final = (UpdateNotApplied, PauseNotApplied, ResumeNotApplied)
_REFUSED: Final = (*_NOT_APPLIED, DeleteResult)
_REFUSED_STATUSES: Final = {
    "schedule_update": ("404", "409", "410"),
    "schedule_pause": ("404", "409", "410"),
    "schedule_resume": ("404", "410"),
}


def _served_tools() -> list[tuple[str, tuple[str, Any]]]:
    """The catalog entries of the tools the host dispatches (every tool of the catalog)."""
    return [(name, entry) for name, entry in TOOLS.items() if name in TOOL_NAMES]


def _tool_types() -> list[Any]:
    out: list[Any] = []
    for name, (_description, params) in _served_tools():
        out.append(params)
        for alternative in RESULT_TYPES[name]:
            if getattr(alternative, "__origin__", None) is list:
                out.extend(alternative.__args__[0].__args__)
            else:
                out.append(alternative)
    return list(dict.fromkeys(out))


_BODY_TYPES: Final = (
    bodies.ErrorBody,
    bodies.CatalogPage,
    bodies.RecordBody,
    bodies.HistoryPage,
    bodies.UpdateBody,
    bodies.PauseBody,
    bodies.UpdateApplied,
    bodies.UpdateConflict,
    bodies.DeleteOk,
    bodies.ExplainResult,
    bodies.Health,
    bodies.ChangeEvent,
    bodies.CatalogEntry,
    PreviewBody,
    PreviewResult,
    SigninExchange,
    SigninToken,
    SigninCode,
)


def _pause_paths() -> dict[str, Any]:
    """``POST .../pause`` and ``.../resume`` (docs/protocol.md#pause)."""
    conflict = _json("The task changed since expected was read.", _ref(bodies.UpdateConflict))
    pause = _op(
        "pause",
        {"200": _json("The pause result.", _ref(PauseResult)), "409": conflict},
        parameters=[_SESSION, _ID],
        body=_ref(bodies.PauseBody),
        errors=(*_COMMON, "404", "409", "410", "422"),
    )
    pause["requestBody"]["required"] = False
    resume = _op(
        "resume",
        {
            "200": _json("The resume result.", _one_of([ResumeResult, ResumeEnded])),
            "409": conflict,
        },
        parameters=[_SESSION, _ID],
        body=_ref(bodies.PauseBody),
        errors=(*_COMMON, "404", "409", "410", "422"),
    )
    resume["requestBody"]["required"] = False
    base = "/v1/sessions/{sessionId}/tasks/{id}"
    return {f"{base}/pause": {"post": pause}, f"{base}/resume": {"post": resume}}


def _signin_paths() -> dict[str, Any]:
    """The page's one-time sign-in (docs/http-api.md#sign-in): the exchange is open (the code is
    the credential), issuing a fresh code needs the token."""
    return {
        "/v1/signin": {
            "post": _op(
                "signin",
                {"200": _json("The code was live: the bearer token.", _ref(SigninToken))},
                body=_ref(SigninExchange),
                secured=False,
                errors=("400", "401-signin", "421", "503"),
            )
        },
        "/v1/signin/codes": {
            "post": _op(
                "signin_code",
                {
                    "200": _json(
                        f"A fresh one-time code, alive {int(CODE_TTL_S)} seconds.",
                        _ref(SigninCode),
                    )
                },
            )
        },
    }


def _catalog_paths() -> dict[str, Any]:
    """``GET /v1/tasks``: the catalog of every session's tasks, a page at a time."""
    limit = {"type": "integer", "minimum": 1, "maximum": MAX_CATALOG_PAGE}
    per_page = f"Entries per page, 1-{MAX_CATALOG_PAGE} (default {DEFAULT_CATALOG_PAGE})."
    statuses = {"enum": list(CATALOG_STATUSES)}
    return {
        "/v1/tasks": {
            "get": _op(
                "catalog",
                {"200": _json("One catalog page.", _ref(bodies.CatalogPage))},
                parameters=[
                    _query("limit", limit, per_page),
                    _query("cursor", {"type": "string"}, "nextCursor of the previous page."),
                    _query("sessionId", {"type": "string"}, "Only this session's tasks."),
                    _query("status", statuses, "Only tasks with this status."),
                    _query("title", {"type": "string"}, "Title substring (case-insensitive)."),
                    _query("order", {"enum": ["asc", "desc"]}, "By next target (default asc)."),
                ],
            )
        },
    }


def _session_task_paths() -> dict[str, Any]:
    """A session's tasks: the list, one task's history, and one task (read, update, delete)."""
    return {
        "/v1/sessions/{sessionId}/tasks": {
            "get": _op(
                "list",
                {
                    "200": _json(
                        "The session's active records, in storage order.",
                        {"type": "array", "items": _ref(bodies.RecordBody)},
                    )
                },
                parameters=[_SESSION],
            )
        },
        "/v1/sessions/{sessionId}/tasks/{id}/history": {
            "get": _op(
                "history",
                {"200": _json("One history page, newest first.", _ref(bodies.HistoryPage))},
                parameters=[
                    _SESSION,
                    _ID,
                    _query(
                        "limit",
                        {"type": "integer", "minimum": 1, "maximum": 100},
                        "Records per page, 1-100 (default 20).",
                    ),
                    _query("before", {"type": "string"}, "nextBefore of the previous page."),
                ],
                errors=(*_COMMON, "404", "422"),
            )
        },
        "/v1/sessions/{sessionId}/tasks/{id}": {
            "get": _op(
                "task",
                {"200": _json("The task's catalog entry.", _ref(bodies.CatalogEntry))},
                parameters=[_SESSION, _ID],
                errors=(*_COMMON, "404"),
            ),
            "put": _op(
                "update",
                {
                    "200": _json("The update result.", _ref(bodies.UpdateApplied)),
                    "409": _json(
                        "The task changed since expected was read.", _ref(bodies.UpdateConflict)
                    ),
                },
                parameters=[_SESSION, _ID],
                body=_ref(bodies.UpdateBody),
                errors=(*_COMMON, "404", "409", "410", "422"),
            ),
            "delete": _op(
                "delete",
                {"200": _json("The task was deleted.", _ref(bodies.DeleteOk))},
                parameters=[_SESSION, _ID],
                errors=(*_COMMON, "404"),
            ),
        },
    }


def _rule_paths() -> dict[str, Any]:
    """A task's next targets (``explain``) and a rule's, before it is stored (``preview``)."""
    return {
        "/v1/tasks/{id}/explain": {
            "get": _op(
                "explain",
                {"200": _json("The next targets.", _ref(bodies.ExplainResult))},
                parameters=[
                    _ID,
                    _query(
                        "count",
                        {"type": "integer", "minimum": 1, "maximum": MAX_EXPLAIN},
                        f"How many targets, 1-{MAX_EXPLAIN} (default 5).",
                    ),
                ],
                errors=(*_COMMON, "404"),
            )
        },
        "/v1/rules/preview": {
            "post": _op(
                "preview",
                {
                    "200": _json(
                        "The rule's next targets, or its rule error (both are verdicts).",
                        {"oneOf": [_ref(PreviewResult), _ref(bodies.ErrorBody)]},
                    )
                },
                body=_ref(PreviewBody),
            )
        },
    }


def _service_paths() -> dict[str, Any]:
    """The change event stream and the two open probes, ``/healthz`` and ``/readyz``."""
    return {
        "/v1/events": {
            "get": _op(
                "events",
                {
                    "200": {
                        "description": (
                            "Server-Sent Events: schedule/changed events whose data is a "
                            "ChangeEvent, and schedule/reset when events were missed."
                        ),
                        "content": {"text/event-stream": {"schema": {"type": "string"}}},
                    }
                },
                parameters=[
                    _query("lastEventId", {"type": "string"}, "As the Last-Event-ID header."),
                    {
                        "name": "Last-Event-ID",
                        "in": "header",
                        "required": False,
                        "schema": {"type": "string"},
                    },
                ],
            )
        },
        "/healthz": {
            "get": _op(
                "healthz",
                {"200": _json("The process answers.", _ref(bodies.Health))},
                secured=False,
                errors=("400", "421"),
            )
        },
        "/readyz": {
            "get": _op(
                "readyz",
                {"200": _json("The store is open and the timer runs.", _ref(bodies.Health))},
                secured=False,
                errors=("400", "421", "503"),
            )
        },
    }


#: The document's paths, in its order: each builder gives a group of them.
_PATH_GROUPS: Final = (
    _tool_paths,
    _signin_paths,
    _catalog_paths,
    _session_task_paths,
    _pause_paths,
    _rule_paths,
    _service_paths,
)


@cache
def openapi() -> dict[str, Any]:
    """The OpenAPI 3.1 document (built once; treat it as read-only)."""
    _, components = msgspec.json.schema_components((*_BODY_TYPES, *_tool_types()), ref_template=REF)
    paths: dict[str, Any] = {}
    for group in _PATH_GROUPS:
        paths.update(group())
    return {
        "openapi": "3.1.0",
        "info": {
            "title": "schedlog host",
            "version": package_version(),
            "description": f"The schedlog host service over HTTP ({docs_url('http-api.md')}).",
        },
        "servers": [{"url": "/"}],
        "paths": paths,
        "components": {
            "schemas": components,
            "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}},
        },
    }
