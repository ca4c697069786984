"""The three session-local tools and archive admission, as synchronous cores
(docs/protocol.md#session-tools, docs/protocol.md#session-archive).

Each core runs one whole operation, from its preflight barrier through its last post-append
barrier, and must be called from the session's serial queue (:mod:`schedlog.runtime.queue`);
:class:`schedlog.runtime.engine.SessionEngine` does that for live sessions, and the batch CLI
is serial by construction. Every value returned is the JSON **tool value** the model sees.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Final, Literal

from schedlog.clock import Clock
from schedlog.errors import (
    INTERNAL_MESSAGE,
    CorruptScheduleError,
    ScheduleError,
    ScheduleInputError,
)
from schedlog.eventlog.changes import Change, CreateChange, DeleteChange
from schedlog.eventlog.events import SCHEDULE_CHANGE_TYPE
from schedlog.fold import FoldState, apply_change, fold, next_schedule_id
from schedlog.fold.incremental import FoldCursor
from schedlog.invariant import check
from schedlog.protocols import SESSION_LOCAL
from schedlog.rules.records import build_session_record, validate_session_create_args
from schedlog.rules.text import is_trimmed
from schedlog.runtime.interfaces import SessionLog, SessionLogContractError, check_events

__all__ = [
    "CORRUPT_MESSAGE",
    "DELETE_ID_MESSAGE",
    "PERSISTENCE_MESSAGE",
    "PersistenceUncertain",
    "SessionTools",
    "ToolValue",
    "append_change",
    "barrier",
    "corrupt_value",
    "internal_value",
    "persistence_uncertain",
    "precheck_create",
    "precheck_delete",
    "read_state",
]

PERSISTENCE_MESSAGE: Final = (
    "Schedule persistence is uncertain; retry with schedule_list before relying on this result."
)
CORRUPT_MESSAGE: Final = "The session schedule log is corrupt."
DELETE_ID_MESSAGE: Final = "schedule_delete id must be non-empty without surrounding whitespace."

Operation = Literal["create", "list", "delete"]
ToolValue = dict[str, Any] | list[dict[str, Any]]


def persistence_uncertain(operation: str | None, id: str | None = None) -> dict[str, Any]:
    """The ``persistence_uncertain`` value (docs/protocol.md#session-tools); ``id`` only when
    known."""
    out: dict[str, Any] = {"code": "persistence_uncertain", "message": PERSISTENCE_MESSAGE}
    if operation is not None:
        out["operation"] = operation
    if id is not None:
        out["id"] = id
    return out


def corrupt_value() -> dict[str, str]:
    return {"code": "corrupt_schedule_log", "message": CORRUPT_MESSAGE}


def internal_value() -> dict[str, str]:
    return {"code": "internal_error", "message": INTERNAL_MESSAGE}


class PersistenceUncertain(ScheduleError):
    """A durability barrier failed (docs/concepts.md#live-owner): the change may or may not be
    durable."""

    def __init__(self, operation: str | None = None, id: str | None = None) -> None:
        super().__init__("persistence_uncertain", PERSISTENCE_MESSAGE)
        self.operation = operation
        self.id = id

    def to_value(self) -> dict[str, Any]:
        return persistence_uncertain(self.operation, self.id)


def barrier(log: SessionLog) -> bool:
    """Run the durability barrier: True only when ``flush()`` returned True
    (docs/protocol.md#durability)."""
    try:
        return log.flush() is True
    except Exception:
        return False


def read_state(log: SessionLog, cursor: FoldCursor | None = None) -> FoldState:
    """Fold the owned suffix of ``log``. Raises :class:`CorruptScheduleError` when the log or
    its owned suffix is corrupt, :class:`OSError` when it cannot be read.

    With a ``cursor`` (one per log, kept by the caller) only the events appended since the
    cursor last looked are folded; the result is the same. Raises
    :class:`~schedlog.runtime.interfaces.SessionLogContractError` when ``events()`` does not
    return ``LogEvent`` structs."""
    events = check_events(log.events())
    seed_length = log.header.seed_length
    if cursor is None:
        return fold(events, seed_length=seed_length)
    if not cursor.folded:  # a log that folded itself at open starts the cursor there
        resume = getattr(log, "resume_fold", None)
        if resume is not None:
            resume(cursor)
    return cursor.state(events, seed_length=seed_length)


def append_change(log: SessionLog, state: FoldState, change: Change) -> FoldState:
    """Append one ``schedule/change`` after checking the invariant against ``state``
    (docs/protocol.md#fold); returns the state with the change applied. Nothing is written when the
    invariant rejects the change."""
    check(state, change)
    log.append({"type": SCHEDULE_CHANGE_TYPE, "data": change.to_json()})
    return apply_change(state, change)


def precheck_create(args: object) -> dict[str, str] | None:
    """Shape-only checks of ``schedule_create`` (docs/protocol.md#session-tools), before the
    queue."""
    try:
        validate_session_create_args(args)
    except ScheduleInputError as exc:
        return exc.to_value()
    return None


def precheck_delete(args: object) -> dict[str, str] | None:
    """``schedule_delete`` step 1, checked before anything else."""
    value = args.get("id") if isinstance(args, Mapping) else None
    if type(value) is not str or not value or not is_trimmed(value):
        return {"code": "invalid_rule", "message": DELETE_ID_MESSAGE}
    return None


class SessionTools:
    """``schedule_create``, ``schedule_list``, ``schedule_delete`` and archive admission for one
    session log.

    ``clock`` gives every clock sample; ``redrive`` is called after each tool call whose
    preflight barrier succeeded (docs/concepts.md#live-owner "Re-drive"). ``cancelled`` (create
    only) is checked just before the append (docs/protocol.md#session-tools).
    """

    def __init__(
        self, log: SessionLog, clock: Clock, *, redrive: Callable[[], None] | None = None
    ) -> None:
        self.log = log
        self.clock = clock
        self._redrive = redrive
        self._cursor = FoldCursor()  # each call folds only what was appended since the last

    # --- tools -------------------------------------------------------------------------------

    def schedule_create(
        self, args: object, *, cancelled: Callable[[], bool] | None = None
    ) -> ToolValue:
        """``schedule_create`` (docs/protocol.md#session-tools): a view, or an error value."""
        shape = precheck_create(args)
        if shape is not None:
            return shape
        return self._guard(lambda: self._create(args, cancelled))

    def schedule_list(self, args: object = None) -> ToolValue:
        """``schedule_list``: the views of all active records, in create order. ``args`` ignored."""
        return self._guard(self._list)

    def schedule_delete(self, args: object) -> ToolValue:
        """``schedule_delete``: ``{"id","deleted":true}``, ``{"id","deleted":false,"code":
        "schedule_not_found"}``, or an error value."""
        shape = precheck_delete(args)
        if shape is not None:
            return shape
        assert isinstance(args, Mapping)
        record_id: str = args["id"]
        return self._guard(lambda: self._delete(record_id))

    # --- archive admission (docs/protocol.md#session-archive)
    # ------------------------------------------------------

    def archive_items(self) -> dict[str, Any] | None:
        """The activity report of the owned suffix, or None when nothing is active. The caller
        decides whether there is a live owner. An unreadable or corrupt log reports None."""
        try:
            state = read_state(self.log, self._cursor)
        except (CorruptScheduleError, OSError):
            return None
        if not state.active:
            return None
        items = [{"id": r.id, "label": r.prompt} for r in state.active]
        return {"kind": "schedule", "items": items}

    def archive_stop(self) -> list[str]:
        """Delete every active record (docs/protocol.md#session-archive stop) and return their ids.

        Raises :class:`PersistenceUncertain` when a barrier fails, :class:`CorruptScheduleError`
        for a corrupt log and :class:`ScheduleError` ``internal_error`` when an append fails.
        """
        if not barrier(self.log):
            raise PersistenceUncertain()
        try:
            state = read_state(self.log, self._cursor)
        except OSError:
            raise PersistenceUncertain() from None
        except CorruptScheduleError:
            raise CorruptScheduleError(CORRUPT_MESSAGE) from None
        deleted: list[str] = []
        try:
            for record in state.active:
                state = append_change(self.log, state, DeleteChange(id=record.id))
                deleted.append(record.id)
        except Exception:
            raise ScheduleError("internal_error", INTERNAL_MESSAGE) from None
        finally:
            self._request_redrive()
        if not barrier(self.log):
            raise PersistenceUncertain()
        return deleted

    # --- internals ---------------------------------------------------------------------------

    def _guard(self, body: Callable[[], tuple[ToolValue, bool]]) -> ToolValue:
        preflight_ok = False
        try:
            value, preflight_ok = body()
        except SessionLogContractError:
            raise  # the embedder's bug: a clear error to the caller, not an opaque tool value
        except Exception:
            value = internal_value()
        if preflight_ok:
            self._request_redrive()
        return value

    def _request_redrive(self) -> None:
        if self._redrive is not None:
            self._redrive()

    def _fold(self, operation: Operation, id: str | None = None) -> FoldState | ToolValue:
        try:
            return read_state(self.log, self._cursor)
        except CorruptScheduleError:
            return corrupt_value()
        except OSError:
            return persistence_uncertain(operation, id)

    def _create(self, args: object, cancelled: Callable[[], bool] | None) -> tuple[ToolValue, bool]:
        if not barrier(self.log):
            return persistence_uncertain("create"), False
        state = self._fold("create")
        if not isinstance(state, FoldState):
            return state, True
        record_id = next_schedule_id(state)
        try:
            record = build_session_record(args, id=record_id, now=self.clock.now_ms())
        except ScheduleInputError as exc:
            return exc.to_value(), True
        if cancelled is not None and cancelled():
            return internal_value(), True
        try:
            append_change(self.log, state, CreateChange(schedule=record))
        except Exception:
            return internal_value(), True
        if not barrier(self.log):
            return persistence_uncertain("create", record_id), True
        return record.view(self.clock.now_ms(), SESSION_LOCAL), True

    def _list(self) -> tuple[ToolValue, bool]:
        if not barrier(self.log):
            return persistence_uncertain("list"), False
        state = self._fold("list")
        if not isinstance(state, FoldState):
            return state, True
        now = self.clock.now_ms()
        return [record.view(now, SESSION_LOCAL) for record in state.active], True

    def _delete(self, record_id: str) -> tuple[ToolValue, bool]:
        if not barrier(self.log):
            return persistence_uncertain("delete", record_id), False
        state = self._fold("delete", record_id)
        if not isinstance(state, FoldState):
            return state, True
        if not state.is_active(record_id):
            return {"id": record_id, "deleted": False, "code": "schedule_not_found"}, True
        try:
            append_change(self.log, state, DeleteChange(id=record_id))
        except Exception:
            return internal_value(), True
        if not barrier(self.log):
            return persistence_uncertain("delete", record_id), True
        return {"id": record_id, "deleted": True}, True
