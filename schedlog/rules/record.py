"""The reminder record shared by both protocols (docs/protocol.md#records).

One frozen Struct holds every kind; which optional fields are set depends on ``kind``.
Instants are epoch-ms integers inside and canonical strings only at the JSON boundary.
"""

from __future__ import annotations

from typing import Any, Final, Literal

import msgspec

from schedlog.rules.instants import format_instant

__all__ = ["ONE_SHOT_KINDS", "RECURRING_KINDS", "Kind", "Record"]

Kind = Literal["after", "at", "every", "daily", "weekly", "cron"]
ONE_SHOT_KINDS: Final = frozenset({"after", "at"})
RECURRING_KINDS: Final = frozenset({"every", "daily", "weekly", "cron"})


class Record(msgspec.Struct, frozen=True, kw_only=True):
    """A decoded, valid reminder record.

    ``scheduled_at`` is the committed target in epoch ms (UTC). ``time_zone`` keeps the stored
    spelling (canonical when created here); ``expression`` is always canonical cron.
    """

    id: str
    kind: Kind
    prompt: str
    scheduled_at: int
    title: str | None = None
    after_seconds: int | None = None
    every_seconds: int | None = None
    time: str | None = None
    time_zone: str | None = None
    weekdays: tuple[int, ...] | None = None
    expression: str | None = None

    @property
    def is_one_shot(self) -> bool:
        return self.kind in ONE_SHOT_KINDS

    def to_json(self, scheduled_at: str | None = None) -> dict[str, Any]:
        """The record as a JSON object, keys in the canonical order of docs/protocol.md#records.
        ``scheduled_at``: ``format_instant(self.scheduled_at)`` when the caller has it already
        (``format_instants`` of many records)."""
        out: dict[str, Any] = {"id": self.id, "kind": self.kind}
        if self.title is not None:
            out["title"] = self.title
        out["prompt"] = self.prompt
        kind = self.kind
        if kind == "after":
            out["afterSeconds"] = self.after_seconds
        elif kind == "every":
            out["everySeconds"] = self.every_seconds
        elif kind in ("daily", "weekly"):
            out["time"] = self.time
            out["timeZone"] = self.time_zone
            if kind == "weekly":
                out["weekdays"] = list(self.weekdays or ())
        elif kind == "cron":
            out["expression"] = self.expression
            out["timeZone"] = self.time_zone
        out["scheduledAt"] = (
            format_instant(self.scheduled_at) if scheduled_at is None else scheduled_at
        )
        return out

    def view(self, now: int, delivery_mode: str) -> dict[str, Any]:
        """The record plus ``state`` and ``deliveryMode`` (docs/protocol.md#views) at clock sample
        ``now``."""
        out = self.to_json()
        out["state"] = "overdue" if now >= self.scheduled_at else "scheduled"
        out["deliveryMode"] = delivery_mode
        return out
