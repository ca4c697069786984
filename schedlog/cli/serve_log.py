"""The operator's lines of ``schedlog host run`` and ``schedlog host serve`` besides the
access lines (docs/operations.md#serve-logs): one ``delivery.sent`` per follow-up, with its
lateness, and the start and stop lines of ``host serve``. Rendered by
:mod:`schedlog.cli.run_log` (human on a terminal, structlog JSON otherwise).

The token is never a field of any of them: the start line names where the token is kept.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from json.encoder import encode_basestring_ascii as _json_str
from typing import Any
from urllib.parse import urlsplit

import structlog

from schedlog.cli.run_log import (
    json_lines,
    serve_started_message,
    serve_stopped_message,
    start_fields,
    write_info_lines,
)
from schedlog.diagnostics import sent_fields
from schedlog.host.delivery import Delivered
from schedlog.host.service import HostService
from schedlog.host.stores.open import select_backend
from schedlog.rules.instants import format_instant

__all__ = ["DeliveryLines", "ServeRunLog", "sent_json_line"]

_log = structlog.get_logger("schedlog.cli")


def _without_secrets(url: str) -> str:
    """A webhook URL without its user, password, query or fragment (any may be a secret)."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    host = f"[{host}]" if ":" in host else host
    port = f":{parts.port}" if parts.port is not None else ""
    return f"{parts.scheme}://{host}{port}{parts.path}"


class DeliveryLines:
    """Logs ``delivery.sent`` (with ``latenessMs``) for each follow-up a service commits. The
    service calls it with one message, or :meth:`sent_many` with a run's messages (their
    lines written at once)."""

    def __init__(self) -> None:
        self.delivered = 0
        self._service: HostService | None = None

    def watch(self, service: HostService) -> None:
        self._service = service
        service.subscribe_deliveries(self)

    def __call__(self, message: Delivered) -> None:
        self.sent(message)

    def sent(self, message: Delivered) -> None:
        self.sent_many((message,))

    def sent_many(self, messages: Sequence[Delivered]) -> None:
        """The lines of ``messages``, in order: one write when the run log is configured
        (:func:`~schedlog.cli.run_log.write_info_lines`), else one event each."""
        self.delivered += len(messages)
        now = None if self._service is None else self._service.clock.now_ms()
        fast = json_lines()
        if fast is not None:
            fast.write([sent_json_line(message, now, fast.stamp()) for message in messages])
            return
        lines = (_sent(message, now) for message in messages)  # read only when written here
        if write_info_lines("delivery.sent", lines):
            return
        for message in messages:
            _log.info(
                "delivery.sent",
                **sent_fields(
                    message.session_id,
                    message.message_id,
                    message.members,
                    message.lateness_ms(),
                    delivered_at=now,
                ),
            )


def _sent(message: Delivered, now: int | None) -> dict[str, Any]:
    """The fields of ``message``'s ``delivery.sent`` line (:func:`sent_fields`)."""
    return sent_fields(
        message.session_id,
        message.message_id,
        message.members,
        message.lateness_ms(),  # known when the delivery stamped its durable time
        delivered_at=now,
    )


def sent_json_line(message: Delivered, now: int | None, stamp: str) -> str:
    """``message``'s ``delivery.sent`` line in the JSON form, rendered directly: the fields of
    :func:`_sent` (:func:`~schedlog.diagnostics.sent_fields`), then ``event``, ``level`` and
    ``timestamp`` (``stamp``), as ``json.dumps`` writes them (ASCII escapes, ``", "`` and
    ``": "``). ``tests/cli/test_run_lines_fast.py`` holds it equal to the processors' line."""
    members = message.members
    formatted = {at: format_instant(at) for at in {m.occurrence_at for m in members}}
    late = message.lateness_ms()
    if late is None and now is not None and members:
        late = max(0, now - min(m.occurrence_at for m in members))
    listed = ", ".join([f"{m.id} at {formatted[m.occurrence_at]}" for m in members])
    text = f"schedule: delivered to {message.session_id}: {listed} as {message.message_id}"
    if late is not None:
        text += f" ({late} ms late)"
    reminders = ", ".join(
        [
            f'{{"id": {_json_str(m.id)}, "occurrenceAt": {_json_str(formatted[m.occurrence_at])}}}'
            for m in members
        ]
    )
    return (
        f'{{"sessionId": {_json_str(message.session_id)}, '
        f'"messageId": {_json_str(message.message_id)}, "reminders": [{reminders}], '
        f'"latenessMs": {"null" if late is None else int.__repr__(late)}, '
        f'"message": {_json_str(text)}, "event": "delivery.sent", "level": "info", '
        f'"timestamp": {_json_str(stamp)}}}'
    )


class ServeRunLog(DeliveryLines):
    """:class:`DeliveryLines` plus ``serve.started`` and ``serve.stopped`` of ``host serve``."""

    def started(self, url: str, args: argparse.Namespace, service: HostService | None) -> None:
        core = None if service is None else service.core
        fields: dict[str, Any] = {
            "url": f"{url}/v1",
            "store": str(core.store.path) if core is not None else args.store,
            "backend": select_backend(args.store, args.backend),
            "sessions": args.sessions,
            "deliverTo": None if args.deliver_to is None else _without_secrets(args.deliver_to),
            "active": core.active_count() if core is not None else 0,
            **start_fields(core.next_target() if core is not None else None),
        }
        _log.info(
            "serve.started",
            url=fields["url"],
            store=fields["store"],
            backend=fields["backend"],
            sessions=fields["sessions"],
            deliverTo=fields["deliverTo"],
            active=fields["active"],
            nextTarget=fields["nextTarget"],
            nextTargetLocal=fields["nextTargetLocal"],
            message=serve_started_message(fields),
        )

    def stopped(self, requests: int) -> None:
        _log.info(
            "serve.stopped",
            message=serve_stopped_message(self.delivered, requests),
            delivered=self.delivered,
            requests=requests,
        )
