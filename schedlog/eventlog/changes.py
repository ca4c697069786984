"""The version-1 change union and its strict decoder (docs/protocol.md#changes).

Whether a dispatch should carry ``acceptedAt`` depends on the kind of its target, which only
the fold knows; the decoder accepts both dispatch shapes.
"""

from __future__ import annotations

from typing import Any, Final, Literal, TypeAlias

import msgspec

from schedlog.errors import CorruptScheduleError
from schedlog.eventlog.errors import CorruptLogError, child_path
from schedlog.rules.decide import MIN_EVERY_SECONDS_SESSION
from schedlog.rules.instants import format_instant, parse_canonical_instant
from schedlog.rules.record import Record
from schedlog.rules.records import MAX_EVERY_SECONDS, TITLE_MAX_UNITS, decode_legacy_record
from schedlog.rules.text import JS_WHITESPACE, MAX_SAFE_INT, is_trimmed, json_int, utf16_len

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
    """The fast path for the changes writers emit: plain ``int`` numbers, no surprises.

    It accepts only what :func:`_decode_exact` accepts, and returns the same change; anything
    else (an integral float, a wrong type, a missing or extra key, a bad value) returns None
    and goes to the exact decoder, which gives the verdict and the diagnostic. It is at least
    as strict as the exact path, check by check (docs/protocol.md#changes, docs/protocol.md#records,
    docs/protocol.md#record-decoders):

    * ``version`` is the ``int`` 1 (``1.0`` goes to the exact path, which accepts it);
    * the key set is exact: the count matches and every required key has a value of its type;
    * ids are non-empty and trimmed; a prompt is non-empty and trimmed (so not blank); a title,
      when present, is non-empty, trimmed and at most 120 UTF-16 units (so not blank);
    * ``afterSeconds`` is an ``int`` in [1, 2**53-1], ``everySeconds`` an ``int`` in
      [300, 9007199254740]; instants are canonical.
    """
    if type(value) is not dict:
        return None
    version = value.get("version")
    if type(version) is not int or version != 1:
        return None
    operation = value.get("operation")
    size = len(value)
    if operation == "create":
        record = value.get("schedule")
        if size != 3 or type(record) is not dict:
            return None
        return _plain_create(record)
    change_id = value.get("id")
    if type(change_id) is not str or not change_id or change_id.strip(JS_WHITESPACE) != change_id:
        return None
    if operation == "dispatch":
        if size == 3:
            return DispatchChange(id=change_id)
        if size != 4:
            return None
        accepted_at = parse_canonical_instant(value.get("acceptedAt"))
        return (
            None if accepted_at is None else DispatchChange(id=change_id, accepted_at=accepted_at)
        )
    if operation == "delete" and size == 3:
        return DeleteChange(id=change_id)
    return None


def _plain_create(record: dict[str, Any]) -> CreateChange | None:
    kind = record.get("kind")
    title = record.get("title")
    if title is None and "title" in record:  # null is not an absent title
        return None
    size = len(record) - (title is not None)
    if size != (4 if kind == "at" else 5):  # with the kind checks below: an exact key set
        return None
    schedule = _plain_record(
        record.get("id"),
        kind,
        title,
        record.get("prompt"),
        record.get("afterSeconds"),
        record.get("everySeconds"),
        record.get("scheduledAt"),
    )
    return None if schedule is None else CreateChange(schedule=schedule)


def _plain_record(
    record_id: object,
    kind: object,
    title: object,
    prompt: object,
    after_seconds: object,
    every_seconds: object,
    scheduled_at: object,
) -> Record | None:
    """The record checks of :func:`_decode_plain`; None stands for an absent member."""
    if title is not None and (
        type(title) is not str
        or not title
        or title.strip(JS_WHITESPACE) != title
        or utf16_len(title) > TITLE_MAX_UNITS
    ):
        return None
    if kind == "after":
        if (
            every_seconds is not None
            or type(after_seconds) is not int
            or not 1 <= after_seconds <= MAX_SAFE_INT
        ):
            return None
    elif kind == "every":
        if (
            after_seconds is not None
            or type(every_seconds) is not int
            or not MIN_EVERY_SECONDS_SESSION <= every_seconds <= MAX_EVERY_SECONDS
        ):
            return None
    elif kind != "at" or after_seconds is not None or every_seconds is not None:
        return None
    if (
        type(record_id) is not str
        or not record_id
        or record_id.strip(JS_WHITESPACE) != record_id
        or type(prompt) is not str
        or not prompt
        or prompt.strip(JS_WHITESPACE) != prompt
    ):
        return None
    target = parse_canonical_instant(scheduled_at)
    if target is None:
        return None
    return Record(
        id=record_id,
        kind=kind,
        prompt=prompt,
        scheduled_at=target,
        title=title,
        after_seconds=after_seconds,
        every_seconds=every_seconds,
    )


# --- whole schedule/change lines, typed (the summary read's fast path) -------------------------


class _Line(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    pass


class _After(_Line, tag_field="kind", tag="after"):
    id: str
    prompt: str
    afterSeconds: int
    scheduledAt: str
    title: str | None = None


class _At(_Line, tag_field="kind", tag="at"):
    id: str
    prompt: str
    scheduledAt: str
    title: str | None = None


class _Every(_Line, tag_field="kind", tag="every"):
    id: str
    prompt: str
    everySeconds: int
    scheduledAt: str
    title: str | None = None


class _Create(_Line, tag_field="operation", tag="create"):
    version: int
    schedule: _After | _At | _Every


class _Delete(_Line, tag_field="operation", tag="delete"):
    version: int
    id: str


class _Dispatch(_Line, tag_field="operation", tag="dispatch"):
    version: int
    id: str
    acceptedAt: str | None = None


class _ChangeLine(msgspec.Struct, forbid_unknown_fields=True):
    type: str
    data: _Create | _Delete | _Dispatch


_decode_line = msgspec.json.Decoder(_ChangeLine).decode


def decode_change_line(body: bytes) -> Change | None:
    """The change of a whole ``schedule/change`` line (``body``: the line, with or without its
    ``\\n``), decoded straight into Structs, when the line holds exactly such a change.

    None means "not taken": the caller reads the line the ordinary way (strict JSON, the
    envelope, :func:`decode_change`), which gives the verdict. Taken means: the line decodes
    into the Structs (so it is JSON, every member is a known one of the right type for its
    ``operation`` and ``kind``, none is missing, and it is valid UTF-8: msgspec checks every
    string it decodes, and the keys of known members are ASCII), ``type`` is
    ``schedule/change``, the change passes the checks of :func:`_decode_plain`, and no key is
    given twice and none is ``null``. The result is the change :func:`decode_change` returns.
    Spacing and key order do not matter.

    The duplicate check counts ``:`` bytes. Outside strings a ``:`` only ever ends a key, so
    the line has one for every member of every object, plus those inside its strings. The
    Structs know how many members they were given and every string they hold; a key given
    twice (msgspec keeps the last value) or a member given as ``null`` (which decodes like an
    absent one) leaves the line with more ``:`` bytes than that. Inside a string a ``:`` is
    either itself or the escape ``\\u003a``; a line with ``\\u003`` anywhere is not taken, so
    each decoded string has exactly the ``:`` bytes of its text in the line.
    """
    try:
        line = _decode_line(body)
    except Exception:  # any shape or syntax surprise: the ordinary path decides
        return None
    data = line.data
    if line.type != "schedule/change" or data.version != 1 or b"\\u003" in body:
        return None
    colons = body.count(b":")
    if isinstance(data, _Create):
        return _typed_create(data.schedule, colons)
    change_id = data.id
    if not change_id or change_id.strip(JS_WHITESPACE) != change_id:
        return None
    expected = 5 + change_id.count(":")  # type, data; version, operation, id
    if isinstance(data, _Delete):
        return DeleteChange(id=change_id) if colons == expected else None
    accepted = data.acceptedAt
    if accepted is None:
        return DispatchChange(id=change_id) if colons == expected else None
    if colons != expected + 3:  # the key and a canonical instant's 2
        return None
    accepted_at = parse_canonical_instant(accepted)
    return None if accepted_at is None else DispatchChange(id=change_id, accepted_at=accepted_at)


def _typed_create(record: _After | _At | _Every, colons: int) -> CreateChange | None:
    """:func:`decode_change_line` of a create: the checks of :func:`_plain_record`."""
    record_id, prompt, title = record.id, record.prompt, record.title
    if (
        not record_id
        or record_id.strip(JS_WHITESPACE) != record_id
        or not prompt
        or prompt.strip(JS_WHITESPACE) != prompt
    ):
        return None
    # type, data; version, operation, schedule; id, kind, prompt, the seconds, scheduledAt
    members = 10
    text = record_id.count(":") + prompt.count(":") + 2  # a canonical instant has 2
    if title is not None:
        if not title or title.strip(JS_WHITESPACE) != title or utf16_len(title) > TITLE_MAX_UNITS:
            return None
        members += 1
        text += title.count(":")
    after = every = None
    kind: Literal["after", "at", "every"]
    if isinstance(record, _After):
        kind = "after"
        after = record.afterSeconds
        if not 1 <= after <= MAX_SAFE_INT:
            return None
    elif isinstance(record, _Every):
        kind = "every"
        every = record.everySeconds
        if not MIN_EVERY_SECONDS_SESSION <= every <= MAX_EVERY_SECONDS:
            return None
    else:
        kind = "at"
        members -= 1  # no seconds
    if colons != members + text:
        return None
    target = parse_canonical_instant(record.scheduledAt)
    if target is None:
        return None
    return CreateChange(
        schedule=Record(
            id=record_id,
            kind=kind,
            prompt=prompt,
            scheduled_at=target,
            title=title,
            after_seconds=after,
            every_seconds=every,
        )
    )


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
