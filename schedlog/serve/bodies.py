"""The bodies of the HTTP API as msgspec types (docs/http-api.md).

Requests are decoded strictly into these types (after the strict JSON text check of
:func:`schedlog.rules.text.loads_strict`). Responses are built by the host's own functions
(catalog entries, records, history pages, tool values) and encoded with msgspec; the tests
convert every response into the type named here, so a drift between a handler and
``/openapi.json`` fails there and in the schemathesis run.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

import msgspec
from msgspec import UNSET, Meta, UnsetType

from schedlog.tool_schemas import Instant, Prompt, RecordId

__all__ = [
    "CatalogEntry",
    "CatalogPage",
    "ChangeEvent",
    "DeleteOk",
    "ErrorBody",
    "ErrorDetail",
    "ExplainResult",
    "ExplainTarget",
    "Health",
    "HistoryEntry",
    "HistoryPage",
    "PauseBody",
    "ReceiptBody",
    "RecordBody",
    "RetryState",
    "UpdateApplied",
    "UpdateBody",
    "UpdateConflict",
]

Kind = Literal["after", "at", "every", "daily", "weekly", "cron"]
Weekday = Annotated[int, Meta(ge=1, le=7)]


class ErrorDetail(msgspec.Struct, forbid_unknown_fields=True):
    """A stable error code and a message naming the field."""

    code: str
    message: str


class ErrorBody(msgspec.Struct, forbid_unknown_fields=True):
    """Every error answer outside the tool routes: ``{"error":{"code","message"}}``."""

    error: ErrorDetail


class RecordBody(msgspec.Struct, forbid_unknown_fields=True, rename="camel", omit_defaults=True):
    """A host record: the common keys, then the keys of its kind (docs/http-api.md#records)."""

    id: RecordId
    kind: Kind
    title: str
    prompt: Prompt
    scheduled_at: Instant
    after_seconds: int | UnsetType = UNSET
    every_seconds: int | UnsetType = UNSET
    time: str | UnsetType = UNSET
    time_zone: str | UnsetType = UNSET
    weekdays: list[Weekday] | UnsetType = UNSET
    expression: str | UnsetType = UNSET


class ReceiptBody(msgspec.Struct, forbid_unknown_fields=True, rename="camel"):
    """The last delivery: the occurrence, when it was delivered and the message id."""

    scheduled_at: Instant
    delivered_at: Instant
    message_id: str


class RetryState(msgspec.Struct, forbid_unknown_fields=True, rename="camel", omit_defaults=True):
    """A webhook delivery that failed and will be tried again (HTTP API only)."""

    attempts: Annotated[int, Meta(ge=1)]
    next_attempt_at: Instant
    last_error: str | UnsetType = UNSET


class CatalogEntry(RecordBody, kw_only=True):
    """A catalog entry: the record, its session, status, last delivery and retry state, and
    (HTTP API only) ``description``, the rule in words (docs/rules.md#descriptions).

    ``status`` is ``retrying`` (HTTP API only) for an active task whose delivery is being
    retried; ``retry`` then says how often it failed and when the next attempt is. A paused
    task (docs/protocol.md#pause) is ``paused``.
    """

    session_id: str
    status: Literal["active", "inactive", "retrying", "paused"]
    description: str
    last_delivery: ReceiptBody | UnsetType = UNSET
    retry: RetryState | UnsetType = UNSET


class CatalogPage(msgspec.Struct, forbid_unknown_fields=True, rename="camel"):
    """One catalog page, by ``scheduledAt`` then ``id``; ``nextCursor`` is null on the last."""

    items: list[CatalogEntry]
    next_cursor: str | None


class HistoryEntry(msgspec.Struct, forbid_unknown_fields=True, rename="camel", omit_defaults=True):
    """One delivery of a task, with the prompt it had when committed (when known)."""

    scheduled_at: Instant
    delivered_at: Instant
    message_id: str
    prompt: str | UnsetType = UNSET


class HistoryPage(msgspec.Struct, forbid_unknown_fields=True, rename="camel", omit_defaults=True):
    """A history page, newest first; ``nextBefore`` is the cursor of the next page."""

    id: str
    records: list[HistoryEntry]
    earlier_records_unavailable: bool
    earlier_records_pruned: bool
    retention: dict[str, int]
    next_before: str | UnsetType = UNSET


class UpdateBody(msgspec.Struct, forbid_unknown_fields=True):
    """``PUT /v1/sessions/{sessionId}/tasks/{id}``: the full record the caller last saw, and
    what changes: a ``change`` object (``{"kind", <selector>}``), a ``title``, a ``prompt``."""

    expected: dict[str, Any]
    change: dict[str, Any] | UnsetType = UNSET
    title: str | UnsetType = UNSET
    prompt: str | UnsetType = UNSET


class PauseBody(msgspec.Struct, forbid_unknown_fields=True):
    """``POST /v1/sessions/{sessionId}/tasks/{id}/pause`` and ``.../resume`` (the body may be
    left out): ``expected`` is the record the caller last saw, for a compare-and-set."""

    expected: dict[str, Any] | UnsetType = UNSET


class UpdateApplied(msgspec.Struct, forbid_unknown_fields=True):
    """The update result: ``updated`` false when the change was already in place."""

    id: str
    updated: bool
    record: RecordBody


class UpdateConflict(msgspec.Struct, forbid_unknown_fields=True):
    """409: the task changed since ``expected`` was read; ``current`` is its record now."""

    error: ErrorDetail
    current: RecordBody


class DeleteOk(msgspec.Struct, forbid_unknown_fields=True):
    """The task was deleted."""

    id: str
    deleted: Literal[True]


class ExplainTarget(msgspec.Struct, forbid_unknown_fields=True, rename="camel"):
    """One upcoming target: UTC, the line ``rules next`` prints, and whether the local day
    has a UTC offset change."""

    scheduled_at: Instant
    text: str
    dst_change: bool


class ExplainResult(msgspec.Struct, forbid_unknown_fields=True, rename="camel"):
    """``GET /v1/tasks/{id}/explain``: the record and its next targets after ``at``."""

    id: str
    session_id: str
    record: RecordBody
    at: Instant
    upcoming: list[ExplainTarget]


class Health(msgspec.Struct, forbid_unknown_fields=True):
    """``/healthz`` and ``/readyz``."""

    status: Literal["ok", "ready"]


class ChangeEvent(msgspec.Struct, forbid_unknown_fields=True, rename="camel"):
    """The data of one ``schedule/changed`` event on ``/v1/events``."""

    id: str
    session_id: str
    kind: Literal["created", "updated", "deleted", "delivered", "retrying", "paused", "resumed"]
