"""``POST /v1/rules/preview``: the next targets of a rule that is not saved, for the web
page's live preview while a user edits a rule (docs/http-api.md#rule-preview).

The body is one ``schedule_create`` timing parameter (``at``, ``every_seconds``, ``daily``,
``weekly`` or ``cron``, shaped as for the tool) plus an optional ``count`` (1-100, default
5). The rule is validated exactly as ``schedule_create`` validates it, against the service
clock, and nothing is written. The answer is a verdict either way, so both are 200:
:class:`PreviewResult`, or ``{"error":{"code","message"}}`` with the rule's stable code (a page
checking each keystroke then logs no failed requests). A body that is not such an object is
400 ``invalid_request``.
"""

from __future__ import annotations

from typing import Annotated, Final

import msgspec
from msgspec import UNSET, Meta, UnsetType
from starlette.requests import Request
from starlette.responses import Response

from schedlog.errors import ScheduleInputError
from schedlog.host.explain import MAX_EXPLAIN
from schedlog.host.tool_schemas import CronSelector, DailySelector, WeeklySelector
from schedlog.serve.bodies import ExplainTarget, RecordBody
from schedlog.serve.errors import HttpError, json_response
from schedlog.serve.parse import object_body
from schedlog.serve.state import ready_service
from schedlog.tool_schemas import AtString, Instant, LocalAt

__all__ = ["PREVIEW_SELECTORS", "PreviewBody", "PreviewResult", "preview"]

PREVIEW_SELECTORS: Final = ("at", "every_seconds", "daily", "weekly", "cron")


class PreviewBody(msgspec.Struct, forbid_unknown_fields=True):
    """Exactly one timing parameter, as for ``schedule_create``, and how many targets."""

    at: AtString | LocalAt | UnsetType = UNSET
    every_seconds: int | UnsetType = UNSET
    daily: DailySelector | UnsetType = UNSET
    weekly: WeeklySelector | UnsetType = UNSET
    cron: CronSelector | UnsetType = UNSET
    count: Annotated[int, Meta(ge=1, le=MAX_EXPLAIN)] = 5


class PreviewResult(msgspec.Struct, forbid_unknown_fields=True):
    """The record ``schedule_create`` would build now (id ``schedule-preview``, title and
    prompt ``preview``; zone and expression canonical), its rule in words
    (docs/rules.md#descriptions) and its next targets after ``at``."""

    record: RecordBody
    description: str
    at: Instant
    upcoming: list[ExplainTarget]


async def preview(request: Request) -> Response:
    """``POST /v1/rules/preview``: see the module docstring."""
    service = ready_service(request)
    if request.query_params:
        raise HttpError("invalid_request", "this route takes no query parameters")
    body = await object_body(request)
    count = body.pop("count", 5)
    if type(count) is not int or not 1 <= count <= MAX_EXPLAIN:
        raise HttpError("invalid_request", f"count must be an integer from 1 to {MAX_EXPLAIN}")
    if len(body) != 1 or next(iter(body)) not in PREVIEW_SELECTORS:
        raise HttpError(
            "invalid_request",
            f"the body must hold exactly one of {', '.join(PREVIEW_SELECTORS)} (and count)",
        )
    try:
        return json_response(service.preview(body, count))
    except ScheduleInputError as exc:
        return json_response({"error": {"code": exc.code, "message": exc.message}})
