"""``schedlog migrate`` (docs/operations.md#migration): the explicit way to recreate legacy
session-local reminders as host tasks. The session log is never modified."""

from __future__ import annotations

import re
from typing import Any, Final

import msgspec

from schedlog.eventlog.reader import read_log
from schedlog.host.stores.base import TaskStore
from schedlog.host.task import TaskIdSource, new_task, new_task_id
from schedlog.invariant.logs import validate_log
from schedlog.rules.record import Record
from schedlog.rules.records import TITLE_MAX_UNITS
from schedlog.rules.text import js_trim

__all__ = ["derive_title", "migrate_log"]

_LINE_BREAK: Final = re.compile("\r\n|\r|\n")


def derive_title(record: Record) -> str:
    """The record's title, else its prompt's first line, trimmed, cut to at most 120 UTF-16
    units without splitting a surrogate pair, trimmed again; ``Reminder`` when that is empty."""
    if record.title is not None:
        return record.title
    line = js_trim(_LINE_BREAK.split(record.prompt, maxsplit=1)[0])
    units = 0
    cut: list[str] = []
    for ch in line:
        units += 2 if ord(ch) > 0xFFFF else 1
        if units > TITLE_MAX_UNITS:
            break
        cut.append(ch)
    return js_trim("".join(cut)) or "Reminder"


def _identity(record: Record) -> tuple[Any, ...]:
    return (
        record.kind,
        record.prompt,
        record.scheduled_at,
        record.after_seconds,
        record.every_seconds,
    )


def migrate_log(
    log_path: str,
    store: TaskStore,
    *,
    dry_run: bool = False,
    new_id: TaskIdSource = new_task_id,
) -> dict[str, Any]:
    """Recreate the log's active legacy reminders as tasks bound to the header's session.

    Kind, prompt, ``afterSeconds`` / ``everySeconds`` and the committed ``scheduledAt`` are
    kept. A reminder is skipped when the session already has a task with the same kind,
    prompt, target and interval, which makes a second run a no-op. Raises
    :class:`~schedlog.eventlog.errors.CorruptLogError` for a corrupt log.
    """
    contents = read_log(log_path)
    state = validate_log(contents)
    created: list[dict[str, str]] = []
    skipped: list[str] = []
    if contents.header is None:
        return {"created": created, "skipped": skipped}
    session_id = contents.header.session_id
    existing = {_identity(st.task.record) for st in store.session_tasks(session_id)}
    for legacy in state.active:
        if _identity(legacy) in existing:
            skipped.append(legacy.id)
            continue
        record = msgspec.structs.replace(legacy, id=new_id(), title=derive_title(legacy))
        if not dry_run:
            store.insert(new_task(session_id, record))
        existing.add(_identity(record))
        created.append({"legacyId": legacy.id, "id": record.id})
    return {"created": created, "skipped": skipped}
