"""The one schema of diagnostic events, for both protocols (documented in docs/diagnostics.md).

Every event is a ``structlog`` call ``logger.<level>(event, **fields)``: the event name, its
level, a human ``message`` (recommended wording, never contractual) and the fields below. Field
names are the wire format's camelCase names; instants are canonical instant strings
(``2026-05-01T09:00:00.000Z``), except a clock sample that is not a representable instant, which
is given as its epoch milliseconds (an integer). :data:`EVENTS` is the table; a test checks that
every logging call in the package uses an event, level and field set from it, and that
docs/diagnostics.md lists the same table.

A leaf: it imports nothing from the package but the instant formatter and follow-up members.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Final, Literal, NamedTuple

from schedlog.eventlog.followups import Member
from schedlog.rules.instants import format_instant, is_representable

__all__ = [
    "EVENTS",
    "EventSpec",
    "Level",
    "failure_fields",
    "instant_field",
    "recovered_fields",
    "sent_fields",
]

Level = Literal["info", "warning", "error"]


class EventSpec(NamedTuple):
    """One diagnostic event: its level, its fields besides ``message``, and when it is logged."""

    level: Level
    fields: tuple[str, ...]
    when: str
    text: str  #: the recommended ``message``; ``<field>`` stands for a field's value


EVENTS: Final[dict[str, EventSpec]] = {
    "session_log.torn_tail_truncated": EventSpec(
        "warning",
        ("path", "bytes"),
        "a torn tail was removed when a session log was opened for append",
        "schedule: truncated <bytes> bytes of torn tail in <path>",
    ),
    "owner.preflight_failed": EventSpec(
        "warning",
        ("error",),
        "session-local: the preflight barrier failed during a drive",
        "schedule: persistence preflight failed: <error>",
    ),
    "owner.post_dispatch_failed": EventSpec(
        "warning",
        (),
        "session-local: the barrier after the dispatch appends failed",
        "schedule: post-dispatch durability barrier failed",
    ),
    "owner.faulted": EventSpec(
        "error",
        ("error",),
        "session-local: a corrupt fold or a dispatch append failure",
        "schedule: live owner faulted: <error>",
    ),
    "owner.invalid_clock": EventSpec(
        "warning",
        ("now",),
        "session-local: the clock sample is outside the representable range",
        "schedule: clock sample is not a representable instant",
    ),
    "owner.followup_failed": EventSpec(
        "warning",
        ("error",),
        "session-local: framing or followup() failed",
        "schedule: reminder follow-up failed: <error>",
    ),
    "owner.tick_skipped": EventSpec(
        "warning",
        ("now",),
        "session-local batch: a tick while the live owner is faulted",
        "schedule: live owner is faulted; nothing is delivered",
    ),
    "host.started": EventSpec(
        "info",
        ("store", "backend", "sessions", "active", "nextTarget", "nextTargetLocal"),
        "host run: the store is open and the service runs (nextTarget null: nothing active)",
        "schedule: host run started: store <store> (<backend>), sessions <sessions>, <active> "
        "active tasks, next target <nextTarget> (<nextTargetLocal> local)",
    ),
    "host.stopped": EventSpec(
        "info",
        ("delivered",),
        "host run: the service stopped; how many messages it delivered while it ran",
        "schedule: host run stopped: <delivered> deliveries",
    ),
    "serve.started": EventSpec(
        "info",
        (
            "url",
            "store",
            "backend",
            "sessions",
            "deliverTo",
            "active",
            "nextTarget",
            "nextTargetLocal",
        ),
        "host serve: listening, the service runs (sessions or deliverTo is null: the other sink)",
        "schedule: host serve started at <url>: store <store> (<backend>), sessions <sessions>, "
        "<active> active tasks, next target <nextTarget> (<nextTargetLocal> local)",
    ),
    "serve.stopped": EventSpec(
        "info",
        ("delivered", "requests"),
        "host serve: the server and the service stopped",
        "schedule: host serve stopped: <delivered> deliveries, <requests> requests",
    ),
    "http.request": EventSpec(
        "info",
        ("method", "route", "status", "ms"),
        "host serve: one request answered (route template, never the path; status 0: the "
        "client went away first)",
        "schedule: <method> <route> <status> <ms> ms",
    ),
    "metrics.listening": EventSpec(
        "info",
        ("url",),
        "host run --metrics-listen: Prometheus metrics are served",
        "schedule: metrics at <url>",
    ),
    "host.stop_timeout": EventSpec(
        "warning",
        ("timeoutSeconds",),
        "host run, host serve: stopping outlasted --stop-timeout; the delivery in flight was "
        "abandoned (its reminders stay due)",
        "schedule: stopping took longer than <timeoutSeconds> s: the delivery in flight was "
        "abandoned (its reminders stay due)",
    ),
    "session.started": EventSpec(
        "info",
        ("log", "sessionId", "active", "nextTarget", "nextTargetLocal"),
        "session run: the live owner of one log runs (nextTarget null: nothing active)",
        "schedule: session run started: log <log>, session <sessionId>, <active> active "
        "reminders, next target <nextTarget> (<nextTargetLocal> local)",
    ),
    "session.stopped": EventSpec(
        "info",
        ("delivered",),
        "session run: the live owner stopped; how many messages it delivered while it ran",
        "schedule: session run stopped: <delivered> deliveries",
    ),
    "delivery.sent": EventSpec(
        "info",
        ("sessionId", "messageId", "reminders", "latenessMs"),
        "host run, host serve, session run: one follow-up message was delivered; reminders are "
        "its members ({id, occurrenceAt}, framing order); latenessMs is how long after the "
        "earliest member's occurrence it was durable (null when not known)",
        "schedule: delivered to <sessionId>: <id> at <occurrenceAt>, … as <messageId> "
        "(<latenessMs> ms late)",
    ),
    "delivery.burst": EventSpec(
        "info",
        ("reminders", "sessions", "messages", "worstLatenessMs"),
        "host run: a drive pass delivered more than one message; its totals and worst lateness",
        "schedule: delivered <reminders> reminders to <sessions> sessions in <messages> "
        "messages, worst lateness <worstLatenessMs> ms",
    ),
    "delivery.recovered": EventSpec(
        "info",
        ("id", "occurrenceAt", "messageId"),
        "both protocols: a member was found already delivered (recovered)",
        "schedule: reminder <id> at <occurrenceAt> already delivered as <messageId>",
    ),
    "delivery.superseded": EventSpec(
        "info",
        ("id",),
        "host serve --deliver-to: a reminder was edited or deleted while its POST was in flight; "
        "the edit stands and nothing is committed for it",
        "schedule: reminder <id> was edited or deleted while its follow-up was being posted; "
        "the edit stands and nothing is committed",
    ),
    "delivery.unacknowledged": EventSpec(
        "warning",
        ("ids", "error"),
        "host: a delivery group failed",
        "schedule: reminders [<ids>] were not acknowledged: <error>",
    ),
    "delivery.stopped": EventSpec(
        "error",
        ("error",),
        "host: drive admission failed",
        "schedule: dispatch stopped: <error>",
    ),
    "legacy.unreadable": EventSpec(
        "warning",
        ("sessionId", "error"),
        "host: a session's historical events could not be read",
        'schedule: Session "<sessionId>" historical events could not be read (<error>);'
        " the legacy reminder is ignored.",
    ),
    "legacy.reminders": EventSpec(
        "warning",
        ("sessionId",),
        "host: a session holds legacy reminders",
        'schedule: Session "<sessionId>" contains legacy reminders; recreate active reminders'
        " with schedule_create.",
    ),
    "store.invalid_record": EventSpec(
        "warning",
        ("code", "id"),
        "host, PostgreSQL store: a task row that does not decode is left untouched, undelivered",
        "schedule: task <id> in <store> is invalid and is left untouched (not delivered): <why>",
    ),
    "store.listen_lost": EventSpec(
        "warning",
        ("error",),
        "host, PostgreSQL store: the change-notification connection was lost; it reconnects",
        "schedule: change notifications lost (<error>); retrying",
    ),
    "store.pool_warning": EventSpec(
        "warning",
        ("error",),
        "host, PostgreSQL store: the connection pool could not connect or dropped a broken"
        " connection; it retries",
        "schedule: connection pool: <error>",
    ),
    "request.failed": EventSpec(
        "error",
        ("path", "code", "error"),
        "host serve: a request failed inside the service and was answered 500",
        "schedule: request <path> failed: <error>",
    ),
    "tool.failed": EventSpec(
        "error",
        ("tool", "error"),
        "host: an unexpected exception in a tool, answered as internal_error",
        "schedule: tool <tool> failed: <error>",
    ),
    "tool.storage_full": EventSpec(
        "warning",
        ("tool", "error"),
        "host: a tool's write refused by full storage, answered as storage_full",
        "schedule: tool <tool> refused, storage full: <error>",
    ),
    "batch.internal_error": EventSpec(
        "error",
        ("error",),
        "batch commands: an unexpected exception for one request line, answered as internal_error",
        "schedule: batch request failed: <error>",
    ),
}


def instant_field(ms: int) -> str | int:
    """An instant for a diagnostic field: canonical when representable, else epoch ms."""
    return format_instant(ms) if is_representable(ms) else ms


def recovered_fields(member: Member, message_id: str) -> dict[str, str]:
    """The fields of ``delivery.recovered`` for ``member`` held by ``message_id``."""
    at = format_instant(member.occurrence_at)
    return {
        "id": member.id,
        "occurrenceAt": at,
        "messageId": message_id,
        "message": f"schedule: reminder {member.id} at {at} already delivered as {message_id}",
    }


def sent_fields(
    session_id: str,
    message_id: str,
    members: Iterable[Member],
    lateness_ms: int | None = None,
    *,
    delivered_at: int | None = None,
) -> dict[str, Any]:
    """The fields of ``delivery.sent``: the session, the message id and its members in framing
    order, ``latenessMs`` (given, or how long after the earliest member's occurrence
    ``delivered_at`` is; else null) and the human ``message``."""
    listed_members = list(members)
    # A burst's members share their occurrences: each distinct one is formatted once.
    formatted = {at: format_instant(at) for at in {m.occurrence_at for m in listed_members}}
    reminders = [{"id": m.id, "occurrenceAt": formatted[m.occurrence_at]} for m in listed_members]
    listed = ", ".join([f"{m.id} at {formatted[m.occurrence_at]}" for m in listed_members])
    message = f"schedule: delivered to {session_id}: {listed} as {message_id}"
    late = lateness_ms
    if late is None and delivered_at is not None and listed_members:
        late = max(0, delivered_at - min(m.occurrence_at for m in listed_members))
    if late is not None:
        message += f" ({late} ms late)"
    return {
        "sessionId": session_id,
        "messageId": message_id,
        "reminders": reminders,
        "latenessMs": late,
        "message": message,
    }


def failure_fields(what: str, error: BaseException | str) -> dict[str, str]:
    """``error`` and ``message`` (``schedule: <what>: <error>``) of a failure event."""
    return {"error": str(error), "message": f"schedule: {what}: {error}"}
