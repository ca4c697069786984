"""Remote operations for user interfaces (docs/protocol.md#remote): ``catalog``, ``list``,
``history``, ``update``, ``delete``, ``pause``, ``resume``. None of them activates a session or
reads a session log.

Arguments are raw JSON objects. Ids and session ids are not format-checked: an unusual one is
simply not found. Failures documented as raised (a bad history ``limit``, storage
failures, cancellation, stopping) propagate; ``{code,message}`` update errors are returned.
"""

from __future__ import annotations

from typing import Any, Final

from schedlog.absent import ABSENT
from schedlog.errors import ScheduleInputError
from schedlog.host.history import check_limit
from schedlog.host.service import HostService

__all__ = ["REMOTE_OPERATIONS", "call_remote"]

REMOTE_OPERATIONS: Final = ("catalog", "list", "history", "update", "delete", "pause", "resume")


def _session(args: dict[str, Any]) -> str | None:
    value = args.get("sessionId")
    return value if type(value) is str else None


async def call_remote(service: HostService, operation: str, args: dict[str, Any]) -> Any:
    """Run remote ``operation`` with ``args``; returns its result value
    (docs/protocol.md#remote)."""
    if operation == "catalog":
        return service.catalog()
    session_id = _session(args)
    if operation == "list":
        if session_id is None:
            return []
        return [r.to_json() for r in service.list_records(session_id)]
    if operation == "history":
        if session_id is None:
            check_limit(args.get("limit"))
            return {"id": args.get("id"), "code": "schedule_not_found"}
        return service.history(
            session_id, args.get("id"), args.get("limit"), args.get("before", ABSENT)
        )
    if operation == "delete":
        if session_id is None:
            return {"id": args.get("id"), "deleted": False, "code": "schedule_not_found"}
        return await service.delete(session_id, args.get("id"))
    if operation == "update":
        task_id = args.get("id")
        if session_id is None:
            return {"id": task_id, "updated": False, "code": "schedule_not_found"}
        try:
            result = await service.update(
                session_id,
                task_id,
                args.get("expected", ABSENT),
                change=args.get("change", ABSENT),
                title=args.get("title", ABSENT),
                prompt=args.get("prompt", ABSENT),
            )
        except ScheduleInputError as exc:
            return exc.to_value()
        return result.to_json(id=task_id)
    if operation in ("pause", "resume"):
        if session_id is None:
            return {"id": args.get("id"), "changed": False, "code": "schedule_not_found"}
        try:
            return await service.pause(
                session_id,
                args.get("id"),
                args.get("expected", ABSENT),
                resume=operation == "resume",
            )
        except ScheduleInputError as exc:
            return exc.to_value()
    raise KeyError(operation)
