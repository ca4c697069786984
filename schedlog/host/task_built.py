"""Tasks built from rows the bulk fast path vouched for: the tasks themselves, not only a
verdict, for reading many rows at once (a burst's due scan, ``SqliteTaskStore.get_many``;
docs/decisions.md "Burst CPU per member, second round").

:func:`built_tasks` takes rows ``(seq, id, session_id, body)`` and, when
:func:`~schedlog.host.task_typed.vouched` vouches for all of them (so the reference decoder,
:func:`~schedlog.host.stores.sqlite_load.decode_row`, accepts every one), builds each
:class:`~schedlog.host.task.Task` from its typed form; otherwise it returns None and the caller
decodes the rows with the reference, which gives every verdict. A record of a kind with rule
members (daily, weekly, cron) is built by the reference record decoder itself. The
differential test ``tests/host/test_task_built.py`` proves the tasks equal to the reference's.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

from schedlog.host.stores.base import StoredTask
from schedlog.host.task import History, HistoryRecord, Receipt, Task
from schedlog.host.task_typed import Row, WireHistory, WireReceipt, WireRecord, WireTask, vouched
from schedlog.rules.instants import parse_canonical_instant
from schedlog.rules.record import Record
from schedlog.rules.records import decode_host_record

__all__ = ["built_tasks"]

#: Kinds whose records the reference record decoder builds (their rule members).
_RULE_KINDS: Final = frozenset({"daily", "weekly", "cron"})


def built_tasks(rows: Sequence[Row], *, pausable: bool) -> list[StoredTask] | None:
    """The stored task of each row, in row order, when the fast path vouches for every row;
    None when it does not (then decode them with the reference)."""
    found = vouched(rows, pausable=pausable)
    if found is None:
        return None
    tasks, targets = found
    return [
        StoredTask(row[0], _task(wire, target))
        for row, wire, target in zip(rows, tasks, targets, strict=True)
    ]


def _ms(text: str) -> int:
    ms = parse_canonical_instant(text)
    assert ms is not None  # vouched: every instant is canonical
    return ms


def _record(wire: WireRecord, target: int) -> Record:
    if wire.kind in _RULE_KINDS:
        # The reference builds rule records (their parsed members), from the value denoted.
        value = {
            k: v
            for k, v in (
                ("id", wire.id),
                ("kind", wire.kind),
                ("title", wire.title),
                ("prompt", wire.prompt),
                ("time", wire.time),
                ("expression", wire.expression),
                ("timeZone", wire.timeZone),
                ("weekdays", wire.weekdays),
                ("scheduledAt", wire.scheduledAt),
            )
            if v is not None
        }
        return decode_host_record(value)
    return Record(
        id=wire.id,
        kind=wire.kind,
        prompt=wire.prompt,
        scheduled_at=target,
        title=wire.title,
        after_seconds=wire.afterSeconds,
        every_seconds=wire.everySeconds,
    )


def _receipt(wire: WireReceipt | None) -> Receipt | None:
    if wire is None:
        return None
    return Receipt(
        scheduled_at=_ms(wire.scheduledAt),
        delivered_at=_ms(wire.deliveredAt),
        message_id=wire.messageId,
    )


def _history(wire: WireHistory | None) -> History | None:
    if wire is None:
        return None
    records = tuple(
        HistoryRecord(
            scheduled_at=_ms(r.scheduledAt),
            delivered_at=_ms(r.deliveredAt),
            message_id=r.messageId,
            prompt=r.prompt,
        )
        for r in wire.records
    )
    return History(
        records=records,
        earlier_unavailable=wire.earlierRecordsUnavailable,
        earlier_pruned=wire.earlierRecordsPruned,
    )


def _task(wire: WireTask, target: int) -> Task:
    return Task(
        session_id=wire.sessionId,
        record=_record(wire.record, target),
        status=wire.status,
        last_delivery=_receipt(wire.lastDelivery),
        history=_history(wire.deliveryHistory),
        paused_at=None if wire.pausedAt is None else _ms(wire.pausedAt),
    )
