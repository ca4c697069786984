"""Delivery history (docs/protocol.md#history): append with retention on the commit path, and
identity-based paging for readers. Pure functions over :class:`~schedlog.host.task.Task`; reads
never prune.
"""

from __future__ import annotations

from typing import Any, Final

import msgspec

from schedlog.errors import ScheduleInputError
from schedlog.host.config import Retention
from schedlog.host.task import History, HistoryRecord, Receipt, Task, effective_history
from schedlog.rules.instants import DAY_MS
from schedlog.rules.text import json_int

__all__ = ["MAX_HISTORY_PAGE", "MSG_LIMIT", "append_delivery", "history_page", "prune"]

MAX_HISTORY_PAGE: Final = 100
MSG_LIMIT: Final = (
    f"Delivery history limit must be a safe integer from 1 through {MAX_HISTORY_PAGE}."
)
MSG_BEFORE: Final = "Delivery history before must be a message id string."


def prune(
    records: tuple[HistoryRecord, ...], newest_delivered_at: int, retention: Retention
) -> tuple[HistoryRecord, ...]:
    """Keep the records delivered within ``retention.days`` of ``newest_delivered_at`` (order
    kept, even when ``deliveredAt`` goes backward), then only the last ``retention.records``."""
    floor = newest_delivered_at - retention.days * DAY_MS
    kept = tuple(r for r in records if r.delivered_at >= floor)
    return kept[-retention.records :]


def append_delivery(task: Task, receipt: Receipt, prompt: str, retention: Retention) -> Task:
    """The task after a delivery commit's history step (docs/protocol.md#history "Append" 1-6).

    The appended record always survives pruning: it has the newest ``deliveredAt`` reference
    and is the last entry. ``lastDelivery`` becomes ``receipt``; both flags are written.
    """
    current = effective_history(task)
    new = HistoryRecord(
        scheduled_at=receipt.scheduled_at,
        delivered_at=receipt.delivered_at,
        message_id=receipt.message_id,
        prompt=prompt,
    )
    before = (*current.records, new)
    kept = prune(before, receipt.delivered_at, retention)
    pruned = len(kept) < len(before)
    history = History(
        records=kept,
        earlier_unavailable=current.earlier_unavailable or pruned,
        earlier_pruned=current.earlier_pruned is True or pruned,
    )
    return msgspec.structs.replace(task, last_delivery=receipt, history=history)


def check_limit(limit: object) -> int:
    """A page ``limit``: a safe integer 1-100, else ``invalid_rule`` (raised, step 1)."""
    n = json_int(limit)
    if n is None or not 1 <= n <= MAX_HISTORY_PAGE:
        raise ScheduleInputError("invalid_rule", MSG_LIMIT)
    return n


def history_page(
    task: Task, limit: int, before: object, retention: Retention, *, has_before: bool
) -> dict[str, Any]:
    """One page of ``task``'s effective history, newest first (docs/protocol.md#history "Page" steps
    3-5).

    ``limit`` is already checked (:func:`check_limit`). A non-string ``before`` raises
    ``invalid_rule``; an unknown one gives the ``delivery_cursor_not_found`` result.
    """
    history = effective_history(task)
    records = history.records
    end = len(records)
    if has_before:
        if type(before) is not str:
            raise ScheduleInputError("invalid_rule", MSG_BEFORE)
        index = next((i for i, r in enumerate(records) if r.message_id == before), None)
        if index is None:
            return {"id": task.id, "code": "delivery_cursor_not_found"}
        end = index
    start = max(0, end - limit)
    page = [r.to_json() for r in reversed(records[start:end])]
    out: dict[str, Any] = {
        "id": task.id,
        "records": page,
        "earlierRecordsUnavailable": history.earlier_unavailable,
        "earlierRecordsPruned": history.earlier_pruned is True,
        "retention": retention.to_json(),
    }
    if start > 0:
        out["nextBefore"] = records[start].message_id
    return out
