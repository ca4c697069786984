"""What a rule will do: the next targets of a stored task (``GET /v1/tasks/{id}/explain``,
docs/http-api.md) and of a rule that is not saved (``POST /v1/rules/preview``,
docs/http-api.md#rule-preview), as ``rules next`` prints them. Pure: the time is passed in.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from schedlog.host.task import Task
from schedlog.rules.describe import describe_rule
from schedlog.rules.instants import format_instant
from schedlog.rules.records import build_host_record
from schedlog.rules.upcoming import upcoming_json

__all__ = ["MAX_EXPLAIN", "PREVIEW_ID", "explain_task", "preview_rule"]

#: The most targets one explain or preview lists.
MAX_EXPLAIN: Final = 100
#: The id, title and prompt of the record a preview builds.
PREVIEW_ID: Final = "schedule-preview"


def explain_task(task: Task, at: int, count: int) -> dict[str, Any]:
    """The task's record and its next ``count`` targets after ``at`` (none once it ended)."""
    record = task.record
    return {
        "id": task.id,
        "sessionId": task.session_id,
        "record": record.to_json(),
        "at": format_instant(at),
        "upcoming": upcoming_json(record, at, count) if task.active else [],
    }


def preview_rule(timing: Mapping[str, object], at: int, count: int) -> dict[str, Any]:
    """The record ``schedule_create`` would build at ``at`` from the timing parameter
    ``timing`` (title and prompt ``preview``), its rule in words and its next ``count``
    targets. Raises :class:`~schedlog.errors.ScheduleInputError` as ``schedule_create``
    would; nothing is written."""
    record = build_host_record(
        {"prompt": "preview", "title": "preview", **timing}, id=PREVIEW_ID, now=at
    )
    return {
        "record": record.to_json(),
        "description": describe_rule(record),
        "at": format_instant(at),
        "upcoming": upcoming_json(record, at, count),
    }
