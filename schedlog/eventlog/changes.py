"""The version-1 change union and its strict decoder (SPEC §10.1, §10.2).

Whether a dispatch should carry ``acceptedAt`` depends on the kind of its target, which only
the fold knows; the decoder accepts both dispatch shapes.
"""

from __future__ import annotations

from typing import Any, Final, TypeAlias

import msgspec

from schedlog.errors import CorruptScheduleError
from schedlog.eventlog.errors import CorruptLogError, child_path
from schedlog.rules.instants import format_instant, parse_canonical_instant
from schedlog.rules.record import Record
from schedlog.rules.records import decode_legacy_record
from schedlog.rules.text import is_trimmed, json_int

__all__ = [
    "Change",
    "CreateChange",
    "DeleteChange",
    "DispatchChange",
    "change_to_json",
    "decode_change",
]


class CreateChange(msgspec.Struct, frozen=True, kw_only=True):
    """``create``: ``schedule`` becomes active under its id."""

    schedule: Record

    def to_json(self) -> dict[str, Any]:
        return {"version": 1, "operation": "create", "schedule": self.schedule.to_json()}


class DeleteChange(msgspec.Struct, frozen=True, kw_only=True):
    """``delete``: terminal; the target must be active."""

    id: str

    def to_json(self) -> dict[str, Any]:
        return {"version": 1, "operation": "delete", "id": self.id}


class DispatchChange(msgspec.Struct, frozen=True, kw_only=True):
    """``dispatch``: terminal for one-shots (no ``accepted_at``); advances an ``every`` record.

    ``accepted_at`` is the wall-clock decision instant in epoch ms (UTC).
    """

    id: str
    accepted_at: int | None = None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"version": 1, "operation": "dispatch", "id": self.id}
        if self.accepted_at is not None:
            out["acceptedAt"] = format_instant(self.accepted_at)
        return out


Change: TypeAlias = CreateChange | DeleteChange | DispatchChange

_CREATE_KEYS: Final = frozenset({"version", "operation", "schedule"})
_ID_KEYS: Final = frozenset({"version", "operation", "id"})
_DISPATCH_EVERY_KEYS: Final = frozenset({"version", "operation", "id", "acceptedAt"})


def change_to_json(change: Change) -> dict[str, Any]:
    """The change as the JSON object written in a ``schedule/change`` event's ``data``."""
    return change.to_json()


def _bad(message: str, path: str = "$") -> CorruptLogError:
    return CorruptLogError(message, rule="change", path=path)


def _key_set_error(
    value: dict[str, Any], operation: str, rows: tuple[frozenset[str], ...]
) -> CorruptLogError:
    allowed = frozenset().union(*rows)
    shapes = " or ".join(
        ", ".join(k for k in ("version", "operation", "schedule", "id", "acceptedAt") if k in row)
        for row in rows
    )
    message = f"schedule {operation} change must have exactly the keys {shapes}"
    extra = sorted(k for k in value if k not in allowed)
    return _bad(message, child_path("$", extra[0]) if extra else "$")


def _record_path(exc: CorruptScheduleError) -> str:
    """Where inside ``schedule`` the record decoder failed: the field it names, if any."""
    return "$.schedule" if exc.field is None else child_path("$.schedule", exc.field)


def decode_change(value: object) -> Change:
    """Decode a ``schedule/change`` payload (SPEC §10.2), checks in the order listed there.

    ``version`` 1.0 is accepted as 1 (SPEC §2.4). Raises :class:`CorruptLogError` with rule
    ``change`` and the JSON path of the bad member relative to the payload (``$.schedule.id``).
    """
    if type(value) is not dict:
        raise _bad("schedule change must be a JSON object")
    if json_int(value.get("version")) != 1:
        raise _bad("schedule change version must be the integer 1", "$.version")
    operation = value.get("operation")
    keys = value.keys()
    if operation == "create":
        if keys != _CREATE_KEYS:
            raise _key_set_error(value, "create", (_CREATE_KEYS,))
        try:
            record = decode_legacy_record(value["schedule"])
        except CorruptScheduleError as exc:
            raise _bad(exc.message, _record_path(exc)) from None
        return CreateChange(schedule=record)
    if operation == "delete":
        if keys != _ID_KEYS:
            raise _key_set_error(value, "delete", (_ID_KEYS,))
        return DeleteChange(id=_change_id(value["id"]))
    if operation == "dispatch":
        if keys == _ID_KEYS:
            return DispatchChange(id=_change_id(value["id"]))
        if keys != _DISPATCH_EVERY_KEYS:
            raise _key_set_error(value, "dispatch", (_ID_KEYS, _DISPATCH_EVERY_KEYS))
        change_id = _change_id(value["id"])
        accepted_at = parse_canonical_instant(value["acceptedAt"])
        if accepted_at is None:
            raise _bad(
                "schedule dispatch acceptedAt must be a canonical YYYY-MM-DDTHH:MM:SS.mmmZ instant",
                "$.acceptedAt",
            )
        return DispatchChange(id=change_id, accepted_at=accepted_at)
    raise _bad("schedule change operation must be create, delete, or dispatch", "$.operation")


def _change_id(value: object) -> str:
    if type(value) is not str or not value or not is_trimmed(value):
        raise _bad("schedule change id must be a non-empty trimmed string", "$.id")
    return value
