"""The six host tools bound to the calling session (docs/protocol.md#host-tools).

Every tool returns a value: a view, a list of views, a result, or an error value
``{"code","message"}``. A write refused by full storage is ``storage_full``; other storage
failures, disposal and unexpected exceptions are ``internal_error``; the host tools never
return ``corrupt_schedule_log``.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, Final

import structlog

from schedlog.absent import ABSENT
from schedlog.errors import INTERNAL_MESSAGE, ScheduleError, ScheduleInputError
from schedlog.host.service import HostService
from schedlog.host.storage_full import STORAGE_FULL_VALUE, is_storage_full, store_unavailable
from schedlog.protocols import HOST
from schedlog.rules.decide import MIN_EVERY_SECONDS_HOST, check_every_seconds
from schedlog.rules.text import is_trimmed
from schedlog.rules.update import KIND_OF_SELECTOR, check_update_text
from schedlog.tool_args import arguments_value

__all__ = ["INTERNAL_ERROR", "PAUSE_TOOL_NAMES", "TOOL_NAMES", "HostTools", "pause_tool_id"]

INTERNAL_ERROR: Final = {"code": "internal_error", "message": INTERNAL_MESSAGE}
#: Pause and resume (docs/protocol.md#pause).
PAUSE_TOOL_NAMES: Final = ("schedule_pause", "schedule_resume")
TOOL_NAMES: Final = (
    "schedule_create",
    "schedule_list",
    "schedule_delete",
    "schedule_update",
    *PAUSE_TOOL_NAMES,
)
_MSG_ID: Final = "{tool} id must be non-empty without surrounding whitespace."
MSG_DELETE_ID: Final = _MSG_ID.format(tool="schedule_delete")
MSG_UPDATE_ID: Final = _MSG_ID.format(tool="schedule_update")
MSG_UPDATE_SELECTOR: Final = (
    "schedule_update accepts at most one of at, every_seconds, daily, weekly, or cron."
)
MSG_UPDATE_NOTHING: Final = (
    "schedule_update needs a new title, prompt, or one of at, every_seconds, daily, weekly, "
    "or cron."
)
_UPDATE_SELECTORS: Final = tuple(KIND_OF_SELECTOR)
_UPDATE_KEYS: Final = frozenset({"id", "title", "prompt", *_UPDATE_SELECTORS})

_log = structlog.get_logger("schedlog.host")


def _check_id(value: object, message: str) -> str:
    if type(value) is not str or not value or not is_trimmed(value):
        raise ScheduleInputError("invalid_rule", message)
    return value


def pause_tool_id(name: str, args: object) -> str:
    """The ``id`` argument of ``schedule_pause`` or ``schedule_resume``, checked as
    ``schedule_delete`` checks its own (other keys are ignored): ``invalid_rule`` naming the tool
    when it is missing, not a string, empty or padded."""
    if name not in PAUSE_TOOL_NAMES:
        raise KeyError(name)
    return _check_id(args.get("id") if isinstance(args, dict) else None, _MSG_ID.format(tool=name))


class HostTools:
    """``schedule_create``, ``schedule_list``, ``schedule_delete``, ``schedule_update``,
    ``schedule_pause``, ``schedule_resume``."""

    def __init__(self, service: HostService) -> None:
        self.service = service

    async def call(self, name: str, session_id: str, args: object) -> Any:
        """Run tool ``name`` for ``session_id``; errors come back as values, arguments that are
        not an object as ``invalid_arguments``. Raises :class:`KeyError` for an unknown name."""
        if name not in TOOL_NAMES:
            raise KeyError(name)
        tool: Callable[[str, Any], Awaitable[Any]] = getattr(self, name)
        refused = arguments_value(name, args)
        if refused is not None:
            return refused
        try:
            self.service.core.touch_session(session_id)
            return await tool(session_id, args)
        except ScheduleInputError as exc:
            return exc.to_value()
        except ScheduleError as exc:
            if exc.code == "internal_error":
                return self._failure(name, exc, logged=True)
            return exc.to_value()
        except Exception as exc:
            return self._failure(name, exc)

    def _failure(self, name: str, exc: Exception, *, logged: bool = False) -> dict[str, Any]:
        """The value of a tool that failed: ``service_unavailable`` when the store did not
        answer in time, ``storage_full`` when its disk is full, else ``internal_error`` (logged
        here unless ``logged``: the service already reported it)."""
        unavailable = store_unavailable(exc)
        if unavailable is not None:  # docs/reliability.md#slow-postgresql
            return {"code": "service_unavailable", "message": str(unavailable)}
        if is_storage_full(exc):
            _log.warning(
                "tool.storage_full",
                tool=name,
                error=repr(exc),
                message=f"schedule: tool {name} refused, storage full: {exc!r}",
            )
            return dict(STORAGE_FULL_VALUE)
        if logged:
            return dict(INTERNAL_ERROR)
        _log.error(
            "tool.failed",
            tool=name,
            error=repr(exc),
            message=f"schedule: tool {name} failed: {exc!r}",
        )
        return dict(INTERNAL_ERROR)

    def _view(self, record: Any, *, paused: bool = False) -> dict[str, Any]:
        return _view(record, self.service.clock.now_ms(), paused=paused)

    async def schedule_create(self, session_id: str, args: object) -> Any:
        record = await self.service.create(session_id, args)
        return self._view(record)

    async def schedule_list(self, session_id: str, args: object) -> Any:
        now = self.service.clock.now_ms()
        tasks = self.service.list_tasks(session_id)
        return [_view(t.record, now, paused=t.paused) for t in tasks]

    async def schedule_delete(self, session_id: str, args: object) -> Any:
        task_id = _check_id(args.get("id") if isinstance(args, dict) else None, MSG_DELETE_ID)
        return await self.service.delete(session_id, task_id)

    async def schedule_update(self, session_id: str, args: object) -> Any:
        if not isinstance(args, dict) or not args.keys() <= _UPDATE_KEYS:
            raise ScheduleInputError("invalid_selector", MSG_UPDATE_SELECTOR)
        selectors = [k for k in _UPDATE_SELECTORS if k in args]
        if len(selectors) > 1:
            raise ScheduleInputError("invalid_selector", MSG_UPDATE_SELECTOR)
        task_id = _check_id(args.get("id"), MSG_UPDATE_ID)
        if not selectors and "title" not in args and "prompt" not in args:
            raise ScheduleInputError("invalid_selector", MSG_UPDATE_NOTHING)
        check_update_text(args.get("title", ABSENT), args.get("prompt", ABSENT))
        if "every_seconds" in args:
            check_every_seconds(args["every_seconds"], MIN_EVERY_SECONDS_HOST)
        task = self.service.find(session_id, task_id)
        if task is None:
            return {"id": task_id, "updated": False, "code": "schedule_not_found"}
        if not task.active:
            return {"id": task_id, "updated": False, "code": "schedule_ended"}
        change: object = ABSENT
        if selectors:
            key = selectors[0]
            change = {"kind": KIND_OF_SELECTOR[key], key: args[key]}
        result = await self.service.update(
            session_id,
            task_id,
            task.record.to_json(),
            change=change,
            title=args.get("title", ABSENT),
            prompt=args.get("prompt", ABSENT),
        )
        if result.record is None:
            return result.to_json(id=task_id)
        # Step 8: a result that carries a record (updated or not) is returned as its view; a
        # paused task stays paused (docs/protocol.md#pause).
        after = self.service.find(session_id, task_id)
        return self._view(result.record, paused=after is not None and after.paused)

    async def schedule_pause(self, session_id: str, args: object) -> Any:
        task_id = pause_tool_id("schedule_pause", args)
        return await self.service.pause(session_id, task_id)

    async def schedule_resume(self, session_id: str, args: object) -> Any:
        task_id = pause_tool_id("schedule_resume", args)
        return await self.service.pause(session_id, task_id, resume=True)


def _view(record: Any, now: int, *, paused: bool) -> dict[str, Any]:
    """The record's view at ``now``; a paused task's state is ``paused``."""
    out: dict[str, Any] = record.view(now, HOST)
    if paused:
        out["state"] = "paused"
    return out
