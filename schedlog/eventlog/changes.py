"""The version-1 change union and its strict decoder (docs/protocol.md#changes).

Whether a dispatch should carry ``acceptedAt`` depends on the kind of its target, which only
the fold knows; the decoder accepts both dispatch shapes.
"""

from __future__ import annotations

from typing import Any, Final, TypeAlias

import msgspec

from schedlog.errors import CorruptScheduleError
from schedlog.eventlog import wire
from schedlog.eventlog.errors import CorruptLogError, child_path
from schedlog.rules.instants import format_instant, parse_canonical_instant
from schedlog.rules.record import Record
from schedlog.rules.records import decode_legacy_record, typed_texts_ok
from schedlog.rules.text import is_trimmed, json_int

__all__ = [
    "Change",
    "CreateChange",
    "DeleteChange",
    "DispatchChange",
    "change_to_json",
    "decode_change",
    "decode_change_line",
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
    """Decode a ``schedule/change`` payload (docs/protocol.md#changes), checks in the order listed
    there.

    ``version`` 1.0 is accepted as 1 (docs/protocol.md#json-numbers). Raises
    :class:`CorruptLogError` with rule ``change`` and the JSON path of the bad member relative to
    the payload (``$.schedule.id``).
    """
    change = _decode_plain(value)
    if change is not None:
        return change
    return _decode_exact(value)


def _decode_plain(value: object) -> Change | None:
    """The fast path for the changes writers emit: the payload converted into the wire
    structs (:mod:`schedlog.eventlog.wire`), whose types and ``Meta`` ranges hold the shape
    and the numeric rules, then the typed record rules.

    It accepts only what :func:`_decode_exact` accepts, and returns the same change; anything
    else (an integral float, a wrong type, a missing or extra key, a bad value) returns None
    and goes to the exact decoder, which gives the verdict and the diagnostic
    (``tests/eventlog/test_changes.py`` proves the two equal). A ``title`` of ``null`` is not an
    absent title: such a payload goes to the exact decoder too.
    """
    if type(value) is not dict:
        return None
    try:
        data = _convert(value, wire.ChangeData)
    except msgspec.ValidationError:
        return None
    if isinstance(data, wire.CreateData):
        if value["schedule"].get("title", "") is None:
            return None
        return _typed_create(data.schedule)
    return _typed_target(data)


_convert = msgspec.convert


# --- whole schedule/change lines, typed (the summary read's fast path) -------------------------

_decode_line = msgspec.json.Decoder(wire.ChangeLine).decode


def decode_change_line(body: bytes) -> Change | None:
    """The change of a whole ``schedule/change`` line (``body``: the line, with or without its
    ``\\n``), decoded straight into the wire structs (:mod:`schedlog.eventlog.wire`), when the
    line holds exactly such a change.

    None means "not taken": the caller reads the line the ordinary way (strict JSON, the
    envelope, :func:`decode_change`), which gives the verdict. Taken means: the line decodes
    into the structs (so it is JSON, every member is a known one of the right type and range
    for its ``operation`` and ``kind``, none is missing, and it is valid UTF-8: msgspec checks
    every string it decodes, and the keys of known members are ASCII), the record passes the
    typed text rules, instants are canonical, and no key is given twice and none is ``null``.
    The result is the change :func:`decode_change` returns. Spacing and key order do not
    matter.

    The duplicate check counts ``:`` bytes. Outside strings a ``:`` only ever ends a key, so
    the line has one for every member of every object, plus those inside its strings. The
    structs know how many members they were given and every string they hold; a key given
    twice (msgspec keeps the last value) or a member given as ``null`` (which decodes like an
    absent one) leaves the line with more ``:`` bytes than that. Inside a string a ``:`` is
    either itself or the escape ``\\u003a``; a line with ``\\u003`` anywhere is not taken, so
    each decoded string has exactly the ``:`` bytes of its text in the line.
    """
    try:
        data = _decode_line(body).data
    except Exception:  # any shape or syntax surprise: the ordinary path decides
        return None
    if b"\\u003" in body:
        return None
    colons = body.count(b":")
    if isinstance(data, wire.CreateData):
        record = data.schedule
        # type, data; version, operation, schedule; id, kind, prompt, the seconds, scheduledAt
        members = 9 if type(record) is wire.AtRecord else 10
        text = record.id.count(":") + record.prompt.count(":") + 2  # an instant has 2
        if record.title is not None:
            members += 1
            text += record.title.count(":")
        return _typed_create(record) if colons == members + text else None
    # type, data; version, operation, id; acceptedAt and an instant's 2
    expected = 5 + data.id.count(":")
    if type(data) is wire.DispatchData and data.acceptedAt is not None:
        expected += 3
    return _typed_target(data) if colons == expected else None


def _typed_target(data: wire.DeleteData | wire.DispatchData) -> Change | None:
    """The delete or dispatch of typed change ``data``, when its id is trimmed and its
    ``acceptedAt`` (if any) canonical."""
    change_id = data.id
    if not change_id or not typed_texts_ok([change_id], [], []):
        return None
    if type(data) is wire.DeleteData:
        return DeleteChange(id=change_id)
    accepted = data.acceptedAt  # type: ignore[union-attr]
    if accepted is None:
        return DispatchChange(id=change_id)
    accepted_at = parse_canonical_instant(accepted)
    return None if accepted_at is None else DispatchChange(id=change_id, accepted_at=accepted_at)


def _typed_create(record: wire.WireRecord) -> CreateChange | None:
    """The create of typed ``record``, when it passes the typed record rules."""
    title = record.title
    if not typed_texts_ok([record.id], [record.prompt], [] if title is None else [title]):
        return None
    target = parse_canonical_instant(record.scheduledAt)
    if target is None:
        return None
    return CreateChange(schedule=wire.record_of(record, target))


def _decode_exact(value: object) -> Change:
    """The decoder of docs/protocol.md#changes with its exact verdict and diagnostic for any
    value."""
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
