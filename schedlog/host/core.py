"""The synchronous host core (docs/concepts.md#host-service, docs/protocol.md#host-delivery,
docs/protocol.md#host-archive, docs/protocol.md#legacy-events).

:class:`HostCore` has no event loop: every operation takes its clock samples from a ``now``
callable at the moment the protocol fixes. How due tasks are found and what a delivery holds
meanwhile is its :class:`~schedlog.host.due.DueTasks` strategy: the local timer index, or the
claims of a store shared by several hosts. The asyncio service over it is
:mod:`schedlog.host.service`.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable, Sequence
from typing import Any, Final, Protocol, TypeVar

import msgspec
import structlog

from schedlog._crashpoints import crashpoint
from schedlog.absent import ABSENT
from schedlog.errors import ScheduleError
from schedlog.host.catalog import ordered_tasks
from schedlog.host.changes import ChangeKind, ChangeListener, TaskChange
from schedlog.host.config import Retention
from schedlog.host.delivery import Delivered, Group, GroupFailed, commit_member
from schedlog.host.due import DueTasks, due_tasks_for
from schedlog.host.group_plan import Outgoing, Plan, plan_members
from schedlog.host.history import check_limit, history_page
from schedlog.host.limits import SeenSessions
from schedlog.host.pausing import pause_step, resume_step
from schedlog.host.posting import post_under_lease, still_planned
from schedlog.host.sessions import SessionController, SessionHandle
from schedlog.host.stores.base import (
    InsertsMany,
    StoredTask,
    TaskStore,
    store_pausable,
)
from schedlog.host.task import Task, catalog_entry
from schedlog.rules.record import Record
from schedlog.rules.update import UpdateResult, resolve_update

__all__ = ["CHANGED", "HostCore", "InSlot", "Outgoing"]

CHANGED: Final = "schedule/changed"
MSG_BARRIER: Final = "Session persistence did not acknowledge the reminder"

_log = structlog.get_logger("schedlog.host")
_T = TypeVar("_T")
#: The plan's name here, as schedlog.host.batch imports it (now schedlog.host.group_plan.Plan).
_Plan = Plan


class InSlot(Protocol):
    """Runs a synchronous step in a write slot of its own and returns its result (the
    service's FIFO, :meth:`~schedlog.host.fifo.WriteFifo.submit`)."""

    def __call__(self, fn: Callable[[], _T], /) -> Awaitable[_T]: ...


class HostCore:
    """The synchronous host: store, timer index, delivery groups, notifications.

    Not thread-safe and not re-entrant: the FIFO (or a batch driver) calls one write at a time.
    """

    def __init__(self, store: TaskStore, sessions: SessionController, retention: Retention) -> None:
        self.store = store
        self.sessions = sessions
        self.retention = retention
        #: How due tasks are found (docs/decisions.md, "PostgreSQL store: several hosts"): the
        #: local timer index, or claims on a shared store, which loads nothing here.
        self.due_tasks: DueTasks = due_tasks_for(store)
        self._listeners: list[Callable[[str], None]] = []
        self._change_listeners: list[ChangeListener] = []
        self.drive_requested: Callable[[], None] = lambda: None
        self._touched = SeenSessions()  # bounded (docs/http-api.md#limits)

    # --- index and notifications ---------------------------------------------------------

    def _reindex(self, st: StoredTask) -> None:
        self.due_tasks.reindex(st)

    def _unindex(self, task_id: str) -> None:
        self.due_tasks.unindex(task_id)

    def subscribe(self, listener: Callable[[str], None]) -> Callable[[], None]:
        """Call ``listener(CHANGED)`` after every durable task write; returns an unsubscribe."""
        self._listeners.append(listener)
        return lambda: self._listeners.remove(listener)

    def subscribe_changes(self, listener: ChangeListener) -> Callable[[], None]:
        """Call ``listener(change)`` for each task of every durable write; returns an
        unsubscribe (:class:`~schedlog.host.changes.ChangeSource`)."""
        self._change_listeners.append(listener)
        return lambda: self._change_listeners.remove(listener)

    def _changed(self, changes: Iterable[TaskChange] = ()) -> None:
        for change in changes:
            for change_listener in list(self._change_listeners):
                change_listener(change)
        for listener in list(self._listeners):
            listener(CHANGED)

    @staticmethod
    def _change(task: Task, kind: ChangeKind) -> tuple[TaskChange]:
        return (TaskChange(task.id, task.session_id, kind),)

    def next_target(self, excluded: Iterable[str] = ()) -> int | None:
        """The earliest ``scheduledAt`` among active tasks not in ``excluded`` (epoch ms)."""
        return self.due_tasks.next_target(excluded)

    def due(self, now: int, excluded: Iterable[str] = ()) -> list[StoredTask]:
        """Active tasks with ``scheduledAt <= now`` not in ``excluded``, in storage order.

        On a shared store these are claimed for this host (a lease), up to a batch at a time.
        """
        return self.due_tasks.due(now, excluded)

    def active_count(self) -> int:
        return self.due_tasks.active_count()

    # --- legacy session events (docs/protocol.md#legacy-events)
    # ----------------------------------------------------

    def touch_session(self, session_id: str) -> None:
        """Emit the legacy warnings the first time a session is opened (among the
        :data:`~schedlog.host.limits.SEEN_SESSIONS` sessions seen last)."""
        if not self._touched.first_sight(session_id):
            return
        try:
            count = self.sessions.legacy_reminders(session_id)
        except Exception as exc:  # the session opens whatever its history holds
            message = getattr(exc, "message", str(exc))
            _log.warning(
                "legacy.unreadable",
                sessionId=session_id,
                error=message,
                message=(
                    f'schedule: Session "{session_id}" historical events could not be read '
                    f"({message}); the legacy reminder is ignored."
                ),
            )
            return
        if count:
            _log.warning(
                "legacy.reminders",
                sessionId=session_id,
                message=(
                    f'schedule: Session "{session_id}" contains legacy reminders; recreate '
                    "active reminders with schedule_create."
                ),
            )

    # --- reads (never queued) ----------------------------------------------------------------

    def find(self, session_id: str, task_id: object) -> Task | None:
        """The task ``task_id`` when it is bound to ``session_id``; None otherwise."""
        if type(task_id) is not str:
            return None
        st = self.store.get(task_id)
        if st is None or st.task.session_id != session_id:
            return None
        return st.task

    def list_records(self, session_id: str) -> list[Record]:
        """The session's active records, in storage order (docs/protocol.md#remote)."""
        return [task.record for task in self.list_tasks(session_id)]

    def list_tasks(self, session_id: str) -> list[Task]:
        """The session's active tasks, paused ones included, in storage order."""
        return [st.task for st in self.store.session_tasks(session_id) if st.task.active]

    def catalog(self) -> list[dict[str, Any]]:
        """Every task as a catalog entry, by ``scheduledAt`` then ``id`` (code points)."""
        return [catalog_entry(t) for t in ordered_tasks(self.store)]

    def history(
        self, session_id: str, task_id: object, limit: object, before: object = ABSENT
    ) -> dict[str, Any]:
        """One history page (docs/protocol.md#history); raises ``invalid_rule`` for ``limit`` or
        ``before``."""
        n = check_limit(limit)
        task = self.find(session_id, task_id)
        if task is None:
            return {"id": task_id, "code": "schedule_not_found"}
        has_before = before is not ABSENT
        return history_page(task, n, before, self.retention, has_before=has_before)

    def archive_activity(self, session_id: str) -> dict[str, Any] | None:
        """``{"kind":"schedule","items":[{id,label}…]}`` for a session with active tasks."""
        items = [
            {"id": st.task.id, "label": st.task.record.title}
            for st in self.store.session_tasks(session_id)
            if st.task.active
        ]
        return {"kind": "schedule", "items": items} if items else None

    # --- writes (call from one FIFO slot) ------------------------------------------------------

    def insert(self, task: Task) -> None:
        seq = self.store.insert(task)
        self._reindex(StoredTask(seq, task))
        self._changed(self._change(task, "created"))
        self.drive_requested()

    def insert_many(self, tasks: Sequence[Task]) -> None:
        """Insert new tasks in one durable write (the store must :class:`InsertsMany`)."""
        assert isinstance(self.store, InsertsMany)
        self.inserted(tasks, self.store.insert_many(tasks))

    def inserted(self, tasks: Sequence[Task], seqs: Sequence[int]) -> None:
        """Index and report new tasks once their durable write (``insert_many``, which gave
        ``seqs``) has returned: the half of :meth:`insert_many` that runs on the loop when the
        write itself ran on the writer thread."""
        for seq, task in zip(seqs, tasks, strict=True):
            self._reindex(StoredTask(seq, task))
        self._changed(TaskChange(t.id, t.session_id, "created", t) for t in tasks)
        self.drive_requested()

    def _replace(self, st: StoredTask, task: Task) -> None:
        self.store.replace(task)
        self._reindex(StoredTask(st.seq, task))

    def _commit(self, st: StoredTask, task: Task) -> None:
        """A member's delivery commit: on a shared store, only while the claim holds."""
        self.due_tasks.commit(st, task)

    def update(
        self,
        session_id: str,
        task_id: object,
        expected: object,
        now: Callable[[], int],
        *,
        change: object = ABSENT,
        title: object = ABSENT,
        prompt: object = ABSENT,
    ) -> UpdateResult:
        """docs/protocol.md#update service steps 2-6 (the caller has checked cancellation).

        On a shared store the steps run in one transaction: the task's row is locked when it
        is read and the write is a compare-and-set on its version, so the expected-state check
        sees every other writer's committed change and ``schedule_conflict`` only comes from
        one of those.
        """
        with self.due_tasks.atomic():
            task = self.find(session_id, task_id)
            if task is None:
                return UpdateResult(updated=False, record=None, code="schedule_not_found")
            if not task.active:
                return UpdateResult(updated=False, record=None, code="schedule_ended")
            result = resolve_update(
                task.record, expected, now(), change=change, title=title, prompt=prompt
            )
            if not (result.updated and result.record is not None):
                return result
            st = self.store.get(task.id)
            assert st is not None
            self._replace(st, msgspec.structs.replace(task, record=result.record, status="active"))
        self._changed(self._change(task, "updated"))
        self.drive_requested()
        return result

    def pause(
        self,
        session_id: str,
        task_id: object,
        expected: object,
        now: Callable[[], int],
        *,
        resume: bool = False,
    ) -> dict[str, Any]:
        """Pause (or ``resume``) with an optional compare-and-set (docs/protocol.md#pause), in
        the order of :mod:`schedlog.host.pausing`; one transaction on a shared store, as
        :meth:`update`. Acknowledged only once written; a no-op writes nothing."""
        with self.due_tasks.pausing(session_id):
            task = self.find(session_id, task_id)
            at = now()
            if resume:
                step = resume_step(task, task_id, expected, at)
            else:
                step = pause_step(task, task_id, expected, at, pausable=store_pausable(self.store))
            if step.task is None:
                return step.result
            st = self.store.get(step.task.id)
            assert st is not None
            self._replace(st, step.task)
            crashpoint("host.after_pause_write")
        self._changed(self._change(step.task, "resumed" if resume else "paused"))
        self.drive_requested()
        return step.result

    def delete(self, session_id: str, task_id: object) -> dict[str, Any]:
        """Hard delete (docs/protocol.md#remote): ``{"id","deleted":true}`` or
        ``schedule_not_found``."""
        task = self.find(session_id, task_id)
        if task is None or not self.store.delete(task.id):
            return {"id": task_id, "deleted": False, "code": "schedule_not_found"}
        self._unindex(task.id)
        self._changed(self._change(task, "deleted"))
        self.drive_requested()
        return {"id": task_id, "deleted": True}

    def archive_stop(self, session_id: str) -> list[str]:
        """Delete every active task of the session, row by row (docs/protocol.md#host-archive);
        inactive ones stay.

        Every row is attempted; then notify, then the first failure is raised again.
        """
        deleted: list[str] = []
        first_error: BaseException | None = None
        for st in self.store.session_tasks(session_id):
            if not st.task.active:
                continue
            try:
                if self.store.delete(st.task.id):
                    deleted.append(st.task.id)
                self._unindex(st.task.id)
            except Exception as exc:
                first_error = first_error or exc
        self._changed(TaskChange(task_id, session_id, "deleted") for task_id in deleted)
        self.drive_requested()
        if first_error is not None:
            raise first_error
        return deleted

    # --- delivery (docs/protocol.md#host-delivery)
    # ---------------------------------------------------------------

    def deliver_group(self, group: Group, now: Callable[[], int]) -> Delivered | None:
        """Deliver one group inside its FIFO slot. Returns the message sent, if any.

        Raises :class:`GroupFailed` with the members not committed; members committed before
        the failure stay committed. Nothing about a failed member is written.

        On a shared store the group runs under the session's lock, on the log as other hosts
        left it (re-read), and its claims end with it.
        """
        with self.due_tasks.delivering(group, self.sessions.discard):
            plan = self._plan(group, now)
            if plan is None:
                return None
            return self._finish(plan, now, self._send_to_log)

    async def deliver_group_to(
        self,
        group: Group,
        now: Callable[[], int],
        post: Callable[[Outgoing], Awaitable[None]],
        in_slot: InSlot,
        *,
        sleep_until: Callable[[int], Awaitable[None]] | None = None,
        retry_in: Callable[[str], int] | None = None,
        commit: Callable[[_Plan], Awaitable[Delivered | None]] | None = None,
        get: Callable[[str], StoredTask | None] | None = None,
    ) -> Delivered | None:
        """:meth:`deliver_group` for a sink that is not a session log (webhook delivery): the
        follow-up is handed to ``post``, and the members are committed only when it returns.
        The session's log is never read, so every due member is sent (the receiver dedupes
        by ``messageId``).

        The decision and the commit each run in a write slot of their own (``in_slot``, the
        service's FIFO) and the POST runs between them, outside the FIFO, so that no write
        waits for a receiver (docs/decisions.md, "Concurrent webhook delivery"). A member
        edited or deleted while its POST was in flight is not committed: the edit stands.

        On a shared store (docs/decisions.md, "Webhook delivery with several hosts") the
        members' leases are renewed just before the POST and every third of a lease while it
        runs (``sleep_until`` waits on the host's clock); a renewal that finds a lease lost
        cancels the POST and fails the group, and the commit after the 2xx is made only while
        every lease is still this host's. The claims end with the group: released, except
        those of failed members when ``retry_in(id)`` gives their backoff delay (ms), which are
        held that long, so that no other host retries them before this one would.

        ``commit`` (a local store: :class:`~schedlog.host.webhook_commit.WebhookCommits`)
        commits the acknowledged plan together with others instead of in a slot of its own,
        and its ``get`` reads the members for the decision (the tasks its pass scanned, when
        no write has changed them since) instead of the store's.
        """
        with self.due_tasks.delivering_to(group, retry_in):
            plan = await in_slot(lambda: self._plan(group, now, get))
            if plan is None:
                return None
            if plan.outgoing is not None:
                ids = [st.task.id for st, _ in plan.members]
                try:
                    await post_under_lease(
                        self.due_tasks, ids, plan.outgoing, post, now, sleep_until
                    )
                except Exception as exc:
                    raise GroupFailed(group.ids, exc) from exc
            if commit is not None:
                return await commit(plan)
            return await in_slot(
                lambda: self._finish(still_planned(plan, self.store.get), now, None)
            )

    def _plan(
        self,
        group: Group,
        now: Callable[[], int],
        get: Callable[[str], StoredTask | None] | None = None,
    ) -> _Plan | None:
        """Plan a group's delivery; ``get`` reads its members (the store's own by default)."""
        session_id = group.session_id
        self.touch_session(session_id)
        try:
            session = self.sessions.resolve(session_id)
        except Exception as exc:
            raise GroupFailed(group.ids, exc) from exc
        try:
            return self._plan_members(group, session, now, get or self.store.get)
        except Exception as exc:
            self.sessions.discard(session_id)
            raise GroupFailed(group.ids, exc) from exc

    def _plan_members(
        self,
        group: Group,
        session: SessionHandle,
        now: Callable[[], int],
        get: Callable[[str], StoredTask | None],
    ) -> _Plan | None:
        return plan_members(group, session, now(), get)

    def _send_to_log(self, plan: _Plan) -> None:
        assert plan.outgoing is not None
        plan.session.append(plan.outgoing.event)
        if not plan.session.flush():
            raise ScheduleError("internal_error", MSG_BARRIER)

    def _finish(
        self, plan: _Plan, now: Callable[[], int], send: Callable[[_Plan], None] | None
    ) -> Delivered | None:
        """Send (when ``send`` is given) and commit every member, in the FIFO slot."""
        session_id = plan.group.session_id
        pending: list[str] = list(plan.group.ids)
        committed: list[TaskChange] = []
        planned = {st.task.id for st, _ in plan.members}
        pending = [i for i in pending if i in planned]
        try:
            sent: Delivered | None = None
            delivered_at: int | None = None
            if plan.outgoing is not None:
                # On a shared store: another host may be delivering them, send nothing.
                # (Members dropped as edited since the plan are not this commit's to check.)
                leased = [m.id for m in plan.outgoing.delivered.members if m.id in planned]
                if leased:
                    self.due_tasks.keep_leases(leased)
                if send is not None:
                    send(plan)
                delivered_at = now()
                sent = plan.outgoing.delivered._replace(delivered_at=delivered_at)
                crashpoint("host.after_followup")
            for st, decision in plan.members:
                at = delivered_at if delivered_at is not None else now()
                task = commit_member(st.task, decision, plan.ids[st.task.id], at, self.retention)
                self._commit(st, task)
                pending.remove(st.task.id)
                committed.append(TaskChange(task.id, session_id, "delivered"))
                crashpoint("host.after_commit")
        except Exception as exc:
            if committed:
                self._changed(committed)
            # The next resolution re-opens the log, re-reading what was appended (so a
            # follow-up whose barrier failed is recovered, not sent twice).
            self.sessions.discard(session_id)
            raise GroupFailed(tuple(pending), exc) from exc
        self._changed(committed)
        return sent

    def notify(self, changes: Iterable[TaskChange]) -> None:
        """Report changes that wrote nothing to the store (a delivery now ``retrying``)."""
        self._changed(changes)
