"""Host tasks (docs/protocol.md#task-document): the strict task decoder, the canonical writing
order, receipts and the effective delivery history of tasks saved without one.

A task is immutable; every write builds a new one. Instants are epoch ms inside and canonical
strings only at the JSON boundary.

A paused task (docs/decisions.md#pause-and-resume) is an active task with ``paused_at`` set: it
keeps its record, id and history and is never delivered. The ``pausedAt`` member exists only in
stores that can hold it; the upstream task document has no such member, so decoding refuses it
unless the caller's medium is one that can (``pausable=True``).
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any, Final, Literal

import msgspec

from schedlog.errors import CorruptScheduleError
from schedlog.rules.instants import format_instant, parse_canonical_instant
from schedlog.rules.record import Record
from schedlog.rules.records import decode_host_record
from schedlog.rules.text import is_trimmed

__all__ = [
    "MSG_LAST_DELIVERY",
    "MSG_PAUSED_INACTIVE",
    "History",
    "HistoryRecord",
    "InvalidTaskError",
    "Receipt",
    "Status",
    "Task",
    "TaskIdSource",
    "catalog_entry",
    "decode_task",
    "effective_history",
    "encode_task",
    "new_task",
    "new_task_id",
]

Status = Literal["active", "inactive"]
MSG_LAST_DELIVERY: Final = "Last delivery must match the latest saved delivery receipt"

_TASK_KEYS: Final = frozenset({"sessionId", "record", "status", "lastDelivery", "deliveryHistory"})
#: The task members of a store that can hold the paused state.
_PAUSABLE_TASK_KEYS: Final = _TASK_KEYS | {"pausedAt"}
MSG_PAUSED_INACTIVE: Final = "schedule task pausedAt is allowed only on an active task"
_RECEIPT_KEYS: Final = frozenset({"scheduledAt", "deliveredAt", "messageId"})
_HISTORY_RECORD_KEYS: Final = frozenset({*_RECEIPT_KEYS, "prompt"})
_HISTORY_KEYS: Final = frozenset({"records", "earlierRecordsUnavailable", "earlierRecordsPruned"})


class InvalidTaskError(CorruptScheduleError):
    """A stored task that fails docs/protocol.md#task-document; opening the store refuses with
    ``invalid-record``."""


class Receipt(msgspec.Struct, frozen=True, kw_only=True):
    """``lastDelivery``: the occurrence delivered, when it was delivered (epoch ms), and the
    id of the message that carried it."""

    scheduled_at: int
    delivered_at: int
    message_id: str

    def to_json(self) -> dict[str, str]:
        return {
            "scheduledAt": format_instant(self.scheduled_at),
            "deliveredAt": format_instant(self.delivered_at),
            "messageId": self.message_id,
        }


class HistoryRecord(msgspec.Struct, frozen=True, kw_only=True):
    """One saved delivery; ``prompt`` is the task's prompt at commit time, when known."""

    scheduled_at: int
    delivered_at: int
    message_id: str
    prompt: str | None = None

    def receipt(self) -> Receipt:
        return Receipt(
            scheduled_at=self.scheduled_at,
            delivered_at=self.delivered_at,
            message_id=self.message_id,
        )

    def to_json(self) -> dict[str, str]:
        out = self.receipt().to_json()
        if self.prompt is not None:
            out["prompt"] = self.prompt
        return out


class History(msgspec.Struct, frozen=True, kw_only=True):
    """``deliveryHistory``: records oldest first, in append order.

    ``earlier_pruned`` is None when the stored history has no ``earlierRecordsPruned`` member;
    the member is then left out again when the history is rewritten unchanged.
    """

    records: tuple[HistoryRecord, ...] = ()
    earlier_unavailable: bool = False
    earlier_pruned: bool | None = None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "records": [r.to_json() for r in self.records],
            "earlierRecordsUnavailable": self.earlier_unavailable,
        }
        if self.earlier_pruned is not None:
            out["earlierRecordsPruned"] = self.earlier_pruned
        return out


class Task(msgspec.Struct, frozen=True, kw_only=True):
    """One reminder of the host store.

    ``status`` None means the stored task has no ``status`` member; it reads as active and is
    written back as such only when the task itself is rewritten. ``paused_at`` is the instant
    (epoch ms) the pause was committed, None when the task is not paused.
    """

    session_id: str
    record: Record
    status: Status | None = "active"
    last_delivery: Receipt | None = None
    history: History | None = None
    paused_at: int | None = None

    @property
    def id(self) -> str:
        return self.record.id

    @property
    def active(self) -> bool:
        return self.status != "inactive"

    @property
    def paused(self) -> bool:
        return self.paused_at is not None

    @property
    def effective_status(self) -> Status:
        return "inactive" if self.status == "inactive" else "active"


#: A source of new task ids: each call returns an id no task has had yet.
TaskIdSource = Callable[[], str]


def new_task_id() -> str:
    """``schedule-`` + a lower-case random UUID version 4 (docs/protocol.md#task-document)."""
    return f"schedule-{uuid.uuid4()}"


def new_task(session_id: str, record: Record) -> Task:
    """A task as first written: active, with an empty, complete history
    (docs/protocol.md#task-document "Writing")."""
    return Task(session_id=session_id, record=record, status="active", history=History())


def effective_history(task: Task) -> History:
    """The stored history, or for a task saved without one: ``[lastDelivery]`` (no prompt) or
    ``[]``, with earlier records unavailable and not pruned. Never written back by reading."""
    if task.history is not None:
        return task.history
    records: tuple[HistoryRecord, ...] = ()
    receipt = task.last_delivery
    if receipt is not None:
        records = (
            HistoryRecord(
                scheduled_at=receipt.scheduled_at,
                delivered_at=receipt.delivered_at,
                message_id=receipt.message_id,
            ),
        )
    return History(records=records, earlier_unavailable=True, earlier_pruned=False)


def encode_task(task: Task) -> dict[str, Any]:
    """The task document in writing order: sessionId, record, status, pausedAt, lastDelivery,
    deliveryHistory (absent members stay absent; ``pausedAt`` is present only while paused)."""
    out: dict[str, Any] = {"sessionId": task.session_id, "record": task.record.to_json()}
    if task.status is not None:
        out["status"] = task.status
    if task.paused_at is not None:
        out["pausedAt"] = format_instant(task.paused_at)
    if task.last_delivery is not None:
        out["lastDelivery"] = task.last_delivery.to_json()
    if task.history is not None:
        out["deliveryHistory"] = task.history.to_json()
    return out


def catalog_entry(task: Task) -> dict[str, Any]:
    """A catalog entry (docs/protocol.md#remote): record keys, then sessionId, status
    (``paused`` for a paused task, docs/protocol.md#pause) and lastDelivery if any."""
    out = task.record.to_json()
    out["sessionId"] = task.session_id
    out["status"] = "paused" if task.paused else task.effective_status
    if task.last_delivery is not None:
        out["lastDelivery"] = task.last_delivery.to_json()
    return out


# --- decoding ------------------------------------------------------------------------------------


def _fail(message: str) -> InvalidTaskError:
    return InvalidTaskError(message)


def _instant(value: object, where: str) -> int:
    ms = parse_canonical_instant(value)
    if ms is None:
        raise _fail(f"schedule task {where} must be a canonical instant")
    return ms


def _message_id(value: object, where: str) -> str:
    if type(value) is not str or not value or not is_trimmed(value):
        raise _fail(f"schedule task {where} must be a non-empty trimmed string")
    return value


def _receipt(value: object) -> Receipt:
    if not isinstance(value, dict) or value.keys() != _RECEIPT_KEYS:
        raise _fail(
            "schedule task lastDelivery must be an object with exactly scheduledAt, "
            "deliveredAt and messageId"
        )
    return Receipt(
        scheduled_at=_instant(value["scheduledAt"], "lastDelivery.scheduledAt"),
        delivered_at=_instant(value["deliveredAt"], "lastDelivery.deliveredAt"),
        message_id=_message_id(value["messageId"], "lastDelivery.messageId"),
    )


def _history_record(value: object, index: int) -> HistoryRecord:
    where = f"deliveryHistory.records[{index}]"
    if (
        not isinstance(value, dict)
        or not value.keys() >= _RECEIPT_KEYS
        or not value.keys() <= _HISTORY_RECORD_KEYS
    ):
        raise _fail(
            f"schedule task {where} must be an object with scheduledAt, deliveredAt, "
            "messageId and an optional prompt"
        )
    prompt = value.get("prompt")
    if "prompt" in value and type(prompt) is not str:
        raise _fail(f"schedule task {where}.prompt must be a string")
    return HistoryRecord(
        scheduled_at=_instant(value["scheduledAt"], f"{where}.scheduledAt"),
        delivered_at=_instant(value["deliveredAt"], f"{where}.deliveredAt"),
        message_id=_message_id(value["messageId"], f"{where}.messageId"),
        prompt=prompt,
    )


def _history(value: object) -> History:
    if (
        not isinstance(value, dict)
        or not {"records", "earlierRecordsUnavailable"} <= value.keys()
        or not value.keys() <= _HISTORY_KEYS
    ):
        raise _fail(
            "schedule task deliveryHistory must be an object with records, "
            "earlierRecordsUnavailable and an optional earlierRecordsPruned"
        )
    raw_records = value["records"]
    if not isinstance(raw_records, list):
        raise _fail("schedule task deliveryHistory.records must be an array")
    unavailable = value["earlierRecordsUnavailable"]
    if type(unavailable) is not bool:
        raise _fail("schedule task deliveryHistory.earlierRecordsUnavailable must be a boolean")
    pruned = value.get("earlierRecordsPruned")
    if "earlierRecordsPruned" in value and type(pruned) is not bool:
        raise _fail("schedule task deliveryHistory.earlierRecordsPruned must be a boolean")
    records = tuple(_history_record(r, i) for i, r in enumerate(raw_records))
    seen: set[str] = set()
    for r in records:
        if r.message_id in seen:
            raise _fail(f"schedule task deliveryHistory repeats messageId {r.message_id!r}")
        seen.add(r.message_id)
    return History(records=records, earlier_unavailable=unavailable, earlier_pruned=pruned)


def decode_task(key: str, value: object, *, pausable: bool = False) -> Task:
    """Decode the task stored under ``key`` (docs/protocol.md#task-document), or raise
    :class:`InvalidTaskError` naming the failing member. Numbers come back in integer form, records
    in canonical order.

    ``pausable`` admits the ``pausedAt`` member (a canonical instant, on an active task only);
    without it, as in the upstream document, ``pausedAt`` is an unknown member.
    """
    if not isinstance(value, dict):
        raise _fail("schedule task must be an object")
    extra = sorted(value.keys() - (_PAUSABLE_TASK_KEYS if pausable else _TASK_KEYS))
    if extra:
        raise _fail(f"schedule task has unknown member {extra[0]!r}")
    session_id = value.get("sessionId")
    if type(session_id) is not str or not session_id:
        raise _fail("schedule task sessionId must be a non-empty string")
    if "record" not in value:
        raise _fail("schedule task record is required")
    try:
        record = decode_host_record(value["record"])
    except CorruptScheduleError as exc:
        raise _fail(exc.message) from None
    if key != record.id:
        raise _fail(f'schedule: stored task key "{key}" differs from record id "{record.id}"')
    status = value.get("status")
    if "status" in value and status not in ("active", "inactive"):
        raise _fail('schedule task status must be "active" or "inactive"')
    paused_at = _instant(value["pausedAt"], "pausedAt") if "pausedAt" in value else None
    if paused_at is not None and status == "inactive":
        raise _fail(MSG_PAUSED_INACTIVE)
    receipt = _receipt(value["lastDelivery"]) if "lastDelivery" in value else None
    history = _history(value["deliveryHistory"]) if "deliveryHistory" in value else None
    if history is not None:
        if not history.records:
            if receipt is not None:
                raise _fail(MSG_LAST_DELIVERY)
        elif receipt is None or receipt != history.records[-1].receipt():
            raise _fail(MSG_LAST_DELIVERY)
    return Task(
        session_id=session_id,
        record=record,
        status=status,
        last_delivery=receipt,
        history=history,
        paused_at=paused_at,
    )
