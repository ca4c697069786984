"""The host service (docs/concepts.md#host-service, docs/protocol.md#host-delivery,
docs/protocol.md#host-archive, docs/protocol.md#legacy-events).

Two layers:

* :class:`HostCore` is synchronous and has no event loop: every operation takes its clock
  samples from a ``now`` callable at the moment the protocol fixes. It keeps the timer index (a
  ``SortedList`` of ``(scheduledAt, seq, id)`` over active tasks) in step with the store.
* :class:`HostService` adds the asyncio FIFO (one worker runs create / update / delete /
  archive stop / delivery groups in arrival order), reads that do not queue, cancellation,
  disposal, and the host timer over an injected :class:`Clock`.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
from collections.abc import Awaitable, Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Final, NamedTuple, Protocol, TypeVar, cast, runtime_checkable

import msgspec
import structlog
from sortedcontainers import SortedList

from schedlog._crashpoints import crashpoint
from schedlog.absent import ABSENT
from schedlog.clock import MAX_WAIT_MS, Clock
from schedlog.delivery_plan import plan_delivery
from schedlog.diagnostics import failure_fields, recovered_fields
from schedlog.errors import ScheduleError
from schedlog.eventlog.followups import build_followup
from schedlog.framing import FramedReminder
from schedlog.host.changes import ChangeKind, ChangeListener, TaskChange
from schedlog.host.claims import ClaimingStore
from schedlog.host.config import Retention
from schedlog.host.delivery import Delivered, Group, commit_member, occurrence, plan_groups
from schedlog.host.history import check_limit, history_page
from schedlog.host.limits import SeenSessions, check_session_id
from schedlog.host.retry import Backoff
from schedlog.host.sessions import SessionController, SessionHandle
from schedlog.host.store import StoredTask, TaskStore
from schedlog.host.task import Task, TaskIdSource, catalog_entry, new_task, new_task_id
from schedlog.protocols import HOST
from schedlog.rules.decide import Decision
from schedlog.rules.record import Record
from schedlog.rules.records import build_record, validate_host_create_args
from schedlog.rules.update import UpdateResult, resolve_update

__all__ = [
    "CHANGED",
    "Clock",
    "GroupFailed",
    "HostCore",
    "HostService",
    "ServiceStopping",
]

CHANGED: Final = "schedule/changed"
#: The change kinds another host's commit can report (``LISTEN`` payloads).
_REMOTE_KINDS: Final[dict[str, ChangeKind]] = {
    "created": "created",
    "updated": "updated",
    "deleted": "deleted",
    "delivered": "delivered",
}
#: Back-off of the timer while a shared store cannot be reached (doubling up to the maximum).
TIMER_BACKOFF_MS: Final = 100
MAX_TIMER_BACKOFF_MS: Final = 5_000
MSG_BARRIER: Final = "Session persistence did not acknowledge the reminder"
MSG_STOPPING: Final = "Schedule service is stopping"
MSG_LEASE_LOST: Final = "Another host took over the claim of these reminders"

_log = structlog.get_logger("schedlog.host")
T = TypeVar("T")


class ServiceStopping(ScheduleError):
    """Every call after disposal started: tools report ``internal_error``."""

    def __init__(self) -> None:
        super().__init__("internal_error", MSG_STOPPING)


class GroupFailed(Exception):
    """A delivery group failed; ``ids`` are its members that were not committed."""

    def __init__(self, ids: tuple[str, ...], error: BaseException | str) -> None:
        super().__init__(str(error))
        self.ids = ids
        self.error = error


@runtime_checkable
class InsertsMany(Protocol):
    """A store that can append several new tasks in one durable, all-or-nothing write."""

    def insert_many(self, tasks: Sequence[Task]) -> list[int]: ...


@runtime_checkable
class WritesFromAnyThread(Protocol):
    """A store whose writes may run on a thread other than the one that reads, one write at a
    time: they go through a connection of their own, so a read never sees a write before it is
    committed (the SQLite store)."""

    @property
    def writes_from_any_thread(self) -> bool: ...


#: The most creates one group commit takes.
MAX_BATCH: Final = 512


class _InsertBatch:
    """Consecutive creates that share one FIFO slot and one durable write (group commit)."""

    def __init__(self) -> None:
        self.tasks: list[Task] = []
        self.waiters: list[asyncio.Task[Any] | None] = []
        self.started = False
        self.future: asyncio.Future[None] | None = None


class HostCore:
    """The synchronous host: store, timer index, delivery groups, notifications.

    Not thread-safe and not re-entrant: the FIFO (or a batch driver) calls one write at a time.
    """

    def __init__(self, store: TaskStore, sessions: SessionController, retention: Retention) -> None:
        self.store = store
        self.sessions = sessions
        self.retention = retention
        #: A store shared by several hosts keeps the timer index itself (docs/decisions.md,
        #: "PostgreSQL store: several hosts"): nothing is loaded here, whatever its size.
        self.claims: ClaimingStore | None = store if isinstance(store, ClaimingStore) else None
        # Built in one go from the store's index rows: no task is decoded a second time after
        # the validation at open, and one sort replaces an insertion per task.
        self._keys: dict[str, tuple[int, int, str]] = (
            {} if self.claims is not None else {key[2]: key for key in store.active_targets()}
        )
        self._index: SortedList[tuple[int, int, str]] = SortedList(self._keys.values())
        self._listeners: list[Callable[[str], None]] = []
        self._change_listeners: list[ChangeListener] = []
        self.drive_requested: Callable[[], None] = lambda: None
        self._touched = SeenSessions()  # bounded (docs/http-api.md#limits)

    # --- index and notifications ---------------------------------------------------------

    def _reindex(self, st: StoredTask) -> None:
        self._unindex(st.task.id)
        if st.task.active and self.claims is None:
            key = (st.task.record.scheduled_at, st.seq, st.task.id)
            self._index.add(key)
            self._keys[st.task.id] = key

    def _unindex(self, task_id: str) -> None:
        key = self._keys.pop(task_id, None)
        if key is not None:
            self._index.remove(key)

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
        if self.claims is not None:
            return self.claims.next_wake(excluded)
        skip = set(excluded)
        for target, _seq, task_id in self._index:
            if task_id not in skip:
                return int(target)
        return None

    def due(self, now: int, excluded: Iterable[str] = ()) -> list[StoredTask]:
        """Active tasks with ``scheduledAt <= now`` not in ``excluded``, in storage order.

        On a shared store these are claimed for this host (a lease), up to a batch at a time.
        """
        if self.claims is not None:
            return self.claims.claim_due(now, excluded)
        skip = set(excluded)
        # Every key whose target is at most now sorts below (now + 1, any seq, any id).
        below = self._index.irange(maximum=(now + 1, -(2**63), ""), inclusive=(True, False))
        keys = [k for k in below if k[2] not in skip]
        out: list[StoredTask] = []
        for _target, _seq, task_id in sorted(keys, key=lambda k: k[1]):
            st = self.store.get(task_id)
            if st is not None:
                out.append(st)
            else:  # a row the store reported invalid (PostgreSQL): never delivered
                self._unindex(task_id)
        return out

    def active_count(self) -> int:
        if self.claims is not None:
            return self.claims.active_count()
        return len(self._index)

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
        return [st.task.record for st in self.store.session_tasks(session_id) if st.task.active]

    def catalog(self) -> list[dict[str, Any]]:
        """Every task as a catalog entry, by ``scheduledAt`` then ``id`` (code points)."""
        tasks = sorted(
            (st.task for st in self.store.tasks()),
            key=lambda t: (t.record.scheduled_at, t.id),
        )
        return [catalog_entry(t) for t in tasks]

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
        self._changed(TaskChange(t.id, t.session_id, "created") for t in tasks)
        self.drive_requested()

    def _replace(self, st: StoredTask, task: Task) -> None:
        self.store.replace(task)
        self._reindex(StoredTask(st.seq, task))

    def _commit(self, st: StoredTask, task: Task) -> None:
        """A member's delivery commit: on a shared store, only while the claim holds."""
        if self.claims is not None:
            self.claims.commit_claimed(task)
        else:
            self._replace(st, task)

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
        atomic = self.claims.atomic() if self.claims is not None else contextlib.nullcontext()
        with atomic:
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
        if self.claims is None:
            return self._deliver_group(group, now)
        try:
            with self.claims.session_lock(group.session_id):
                self.sessions.discard(group.session_id)
                try:
                    return self._deliver_group(group, now)
                finally:
                    self.sessions.discard(group.session_id)
        except GroupFailed:
            raise
        except Exception as exc:  # the lock itself: the database is unreachable
            raise GroupFailed(group.ids, exc) from exc
        finally:
            self.claims.release(group.ids)

    def _deliver_group(self, group: Group, now: Callable[[], int]) -> Delivered | None:
        plan = self._plan(group, now)
        if plan is None:
            return None
        return self._finish(plan, now, self._send_to_log)

    async def deliver_group_to(
        self,
        group: Group,
        now: Callable[[], int],
        post: Callable[[Outgoing], Awaitable[None]],
        *,
        sleep_until: Callable[[int], Awaitable[None]] | None = None,
        retry_in: Callable[[str], int] | None = None,
    ) -> Delivered | None:
        """:meth:`deliver_group` for a sink that is not a session log (webhook delivery): the
        follow-up is handed to ``post``, and the members are committed only when it returns.
        The session's log is never read, so every due member is sent (the receiver dedupes
        by ``messageId``).

        On a shared store (docs/decisions.md, "Webhook delivery with several hosts") the
        members' leases are renewed just before the POST and every third of a lease while it
        runs (``sleep_until`` waits on the host's clock); a renewal that finds a lease lost
        cancels the POST and fails the group, and the commit after the 2xx is made only while
        every lease is still this host's. The claims end with the group: released, except
        those of failed members when ``retry_in(id)`` gives their backoff delay (ms), which are
        held that long, so that no other host retries them before this one would.
        """
        if self.claims is None:
            return await self._deliver_group_to(group, now, post, None)
        held: dict[str, int] = {}
        try:
            return await self._deliver_group_to(group, now, post, sleep_until)
        except GroupFailed as exc:
            if retry_in is not None:
                held = {task_id: retry_in(task_id) for task_id in exc.ids}
            raise
        finally:
            if held:
                self.claims.hold(held)
            self.claims.release([task_id for task_id in group.ids if task_id not in held])

    async def _deliver_group_to(
        self,
        group: Group,
        now: Callable[[], int],
        post: Callable[[Outgoing], Awaitable[None]],
        sleep_until: Callable[[int], Awaitable[None]] | None,
    ) -> Delivered | None:
        plan = self._plan(group, now)
        if plan is None:
            return None
        if plan.outgoing is not None:
            try:
                if self.claims is None:
                    await post(plan.outgoing)
                else:
                    await self._post_under_lease(plan, plan.outgoing, post, now, sleep_until)
            except Exception as exc:
                raise GroupFailed(group.ids, exc) from exc
        return self._finish(plan, now, None)

    def _keep_leases(self, ids: Sequence[str]) -> None:
        """Renew this host's leases on ``ids``; raise when one of them is no longer its own."""
        assert self.claims is not None
        mine = self.claims.extend_leases(ids)
        lost = [task_id for task_id in ids if task_id not in mine]
        if lost:  # another host may be delivering them
            raise ScheduleError("internal_error", f"{MSG_LEASE_LOST}: {', '.join(lost)}")

    async def _post_under_lease(
        self,
        plan: _Plan,
        outgoing: Outgoing,
        post: Callable[[Outgoing], Awaitable[None]],
        now: Callable[[], int],
        sleep_until: Callable[[int], Awaitable[None]] | None,
    ) -> None:
        """``post(outgoing)`` while keeping the members' leases alive: renewed before it starts
        and every third of a lease until it ends. A lost lease (or a renewal that fails)
        cancels the POST: another host may be posting the same group by then, and this host
        could not commit it anyway."""
        assert self.claims is not None
        ids = [st.task.id for st, _ in plan.members]
        self._keep_leases(ids)
        sending = asyncio.ensure_future(post(outgoing))
        if sleep_until is None:  # no clock to renew on: the lease must outlast the POST
            await sending
            return
        every = max(1, self.claims.lease_ms // 3)
        renewal: asyncio.Future[None] | None = None
        try:
            while True:
                renewal = asyncio.ensure_future(sleep_until(now() + every))
                await asyncio.wait({sending, renewal}, return_when=asyncio.FIRST_COMPLETED)
                if sending.done():
                    sending.result()  # the sink's failure, if any
                    return
                self._keep_leases(ids)
        finally:
            if renewal is not None:
                renewal.cancel()
            if not sending.done():
                sending.cancel()
                await asyncio.gather(sending, return_exceptions=True)

    def _plan(self, group: Group, now: Callable[[], int]) -> _Plan | None:
        session_id = group.session_id
        self.touch_session(session_id)
        try:
            session = self.sessions.resolve(session_id)
        except Exception as exc:
            raise GroupFailed(group.ids, exc) from exc
        try:
            return self._plan_members(group, session, now)
        except Exception as exc:
            self.sessions.discard(session_id)
            raise GroupFailed(group.ids, exc) from exc

    def _plan_members(
        self, group: Group, session: SessionHandle, now: Callable[[], int]
    ) -> _Plan | None:
        session_id = group.session_id
        decision_time = now()
        members: list[tuple[StoredTask, Decision]] = []
        for task_id in group.ids:
            st = self.store.get(task_id)
            if (
                st is None
                or not st.task.active
                or st.task.session_id != session_id
                or st.task.record.scheduled_at > decision_time
            ):
                continue
            members.append((st, occurrence(st.task, decision_time)))
        if not members:
            return None
        plan = plan_delivery(
            session_id,
            [
                FramedReminder(st.task.id, d.occurrence_at, st.task.record.prompt)
                for st, d in members
            ],
            batch=not group.one_shot,
            delivered=session.delivered,
        )
        ids: dict[str, str] = {member.id: mid for member, mid in plan.recovered.items()}
        for member, held_by in plan.recovered.items():
            _log.info("delivery.recovered", **recovered_fields(member, held_by))
        outgoing: Outgoing | None = None
        if plan.text is not None and plan.message_id is not None:
            sent_members = plan.members
            event = build_followup(
                session_id, sent_members, plan.text, decision_time, protocol=HOST
            )
            for member in sent_members:
                ids[member.id] = plan.message_id
            delivered = Delivered(session_id, plan.message_id, plan.text, sent_members)
            outgoing = Outgoing(delivered, event, tuple(f.prompt for f in plan.fresh))
        return _Plan(group, session, members, ids, outgoing)

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
            if plan.outgoing is not None and self.claims is not None:
                fresh = [member.id for member in plan.outgoing.delivered.members]
                mine = self.claims.extend_leases(fresh)
                lost = [task_id for task_id in fresh if task_id not in mine]
                if lost:  # another host may be delivering them: send nothing
                    raise ScheduleError("internal_error", f"{MSG_LEASE_LOST}: {', '.join(lost)}")
            if plan.outgoing is not None:
                if send is not None:
                    send(plan)
                delivered_at = now()
                sent = plan.outgoing.delivered
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


class Outgoing(NamedTuple):
    """A follow-up about to be sent: the message, its log event, and each member's prompt."""

    delivered: Delivered
    event: dict[str, Any]
    prompts: tuple[str, ...]


class _Plan(NamedTuple):
    group: Group
    session: SessionHandle
    members: list[tuple[StoredTask, Decision]]
    ids: dict[str, str]
    outgoing: Outgoing | None


class HostService:
    """The asyncio host service over a :class:`HostCore`.

    ``auto_drive`` False (batch mode) disables the timer: deliveries happen only on
    :meth:`tick`. Writes, delivery groups and archive stop run one at a time in arrival order
    on one worker; reads run immediately against committed state.
    """

    def __init__(
        self,
        store: TaskStore,
        sessions: SessionController,
        clock: Clock,
        retention: Retention | None = None,
        *,
        auto_drive: bool = True,
        task_ids: TaskIdSource = new_task_id,
        post: Callable[[Outgoing], Awaitable[None]] | None = None,
        backoff: Backoff | None = None,
    ) -> None:
        self.core = HostCore(store, sessions, retention or Retention())
        self._post = post
        self.backoff = backoff
        if backoff is not None:
            self.core.subscribe_changes(self._forget_edited)
        self.clock = clock
        #: Where new task ids come from: random ``schedule-<uuid4>`` ids unless a caller (a test
        #: wanting deterministic ids) passes its own source.
        self.task_ids = task_ids
        self._auto = auto_drive
        self._queue: asyncio.Queue[tuple[Callable[[], Any], asyncio.Future[Any]]] = asyncio.Queue()
        self._open_batch: _InsertBatch | None = None
        #: Group commit (docs/decisions.md "Group commit off the event loop"): creates share one
        #: write when the store can append several at once, and that write runs on a writer
        #: thread of its own when the store allows it, so the loop keeps reading requests (and
        #: filling the next batch) while a batch commits.
        self._inserts_many = isinstance(store, InsertsMany)
        self._writer: ThreadPoolExecutor | None = None
        if (
            self._inserts_many
            and isinstance(store, WritesFromAnyThread)
            and store.writes_from_any_thread
        ):
            self._writer = ThreadPoolExecutor(1, thread_name_prefix="schedlog-writer")
        self._stopping = False
        self._closed = False
        self._wake = asyncio.Event()
        self._drive_pending = auto_drive  # overdue tasks found at start-up are driven at once
        self._failed: set[str] = set()
        self._scan_failed = False
        self._delivery_listeners: list[Callable[[Delivered], None]] = []
        self._worker = asyncio.get_running_loop().create_task(self._run_fifo())
        self._timer: asyncio.Task[None] | None = None
        if auto_drive:
            self.core.drive_requested = self.request_drive
            self._timer = asyncio.get_running_loop().create_task(self._run_timer())
            if self.core.claims is not None:
                loop = asyncio.get_running_loop()
                self.core.claims.listen(lambda change: self._from_thread(loop, change))

    @property
    def retention(self) -> Retention:
        return self.core.retention

    @retention.setter
    def retention(self, value: Retention) -> None:
        """A new configuration: used at the next append, reported at once by ``history``."""
        self.core.retention = value

    def subscribe(self, listener: Callable[[str], None]) -> Callable[[], None]:
        return self.core.subscribe(listener)

    def subscribe_changes(self, listener: ChangeListener) -> Callable[[], None]:
        return self.core.subscribe_changes(listener)

    @property
    def running(self) -> bool:
        """Open and, when it drives itself, with its timer alive (``/readyz``)."""
        if self._stopping or self._worker.done():
            return False
        return self._timer is None or not self._timer.done()

    # --- the FIFO --------------------------------------------------------------------------

    async def _run_fifo(self) -> None:
        while True:
            fn, future = await self._queue.get()
            try:
                if future.cancelled():  # cancelled while queued: its slot writes nothing
                    continue
                try:
                    result = fn()
                    if inspect.isawaitable(result):  # a slot that awaits its sink
                        result = await result
                except BaseException as exc:
                    if not future.done():
                        future.set_exception(exc)
                else:
                    if not future.done():
                        future.set_result(result)
            finally:
                self._queue.task_done()

    def _enqueue(self, fn: Callable[[], T]) -> asyncio.Future[T]:
        self._check_open()
        future: asyncio.Future[T] = asyncio.get_running_loop().create_future()
        self._queue.put_nowait((fn, future))
        return future

    async def _submit(self, fn: Callable[[], T]) -> T:
        future = self._enqueue(fn)
        self._open_batch = None  # a create after this slot must not run before it
        return await future

    async def _insert(self, task: Task) -> None:
        """Queue the insert of a new task. Consecutive creates (nothing else queued between
        them) share one slot and one durable write when the store supports it; each create
        still returns only after that write. A create cancelled before its slot starts
        writes nothing."""
        if not self._inserts_many:
            await self._submit(lambda: self.core.insert(task))
            return
        batch = self._open_batch
        if batch is None or len(batch.tasks) >= MAX_BATCH:
            batch = _InsertBatch()
            # The slot may return an awaitable (the write on the writer thread): the worker
            # awaits it before the next slot, as for _submit_awaiting.
            slot = cast(Callable[[], None], lambda: self._run_batch(batch))
            batch.future = self._enqueue(slot)
            self._open_batch = batch
        batch.tasks.append(task)
        batch.waiters.append(asyncio.current_task())
        assert batch.future is not None
        await asyncio.shield(batch.future)

    def _run_batch(self, batch: _InsertBatch) -> Awaitable[None] | None:
        """The FIFO slot of a batch: its write, on the writer thread when there is one (the
        slot, and so the FIFO, waits for the commit; the loop does not)."""
        batch.started = True
        if self._open_batch is batch:
            self._open_batch = None
        # A create whose caller was cancelled while the slot was queued writes nothing.
        kept = [
            task
            for task, waiter in zip(batch.tasks, batch.waiters, strict=True)
            if waiter is None or not (waiter.cancelling() or waiter.done())
        ]
        if not kept:
            return None
        if self._writer is None:
            self.core.insert_many(kept)
            return None
        return self._insert_on_writer(kept)

    async def _insert_on_writer(self, tasks: list[Task]) -> None:
        store = self.core.store
        assert isinstance(store, InsertsMany) and self._writer is not None
        loop = asyncio.get_running_loop()
        seqs = await loop.run_in_executor(self._writer, store.insert_many, tasks)
        self.core.inserted(tasks, seqs)

    async def _submit_awaiting(self, fn: Callable[[], Awaitable[T]]) -> T:
        """:meth:`_submit` for a slot that awaits (its sink): the worker awaits what ``fn``
        returns before it takes the next slot, so the slot stays one step of the FIFO."""
        return await self._submit(cast(Callable[[], T], fn))

    def _check_open(self) -> None:
        if self._stopping:
            raise ServiceStopping

    # --- operations ------------------------------------------------------------------------

    async def create(self, session_id: str, args: object) -> Record:
        """Create a task (docs/protocol.md#host-tools); raises :class:`ScheduleInputError` for
        invalid input."""
        self._check_open()
        # docs/http-api.md#limits: also keeps a task that would refuse the whole store at the
        # next open (an empty sessionId, docs/protocol.md#task-document) from being written.
        check_session_id(session_id)
        request = validate_host_create_args(args)  # parsed once; built from the typed request
        task_id = self.task_ids()
        now = self.clock.now_ms()  # before queueing: a create may already be due when it lands
        record = build_record(request, id=task_id, now=now)
        task = new_task(session_id, record)
        await self._insert(task)
        return record

    async def update(
        self,
        session_id: str,
        task_id: object,
        expected: object,
        *,
        change: object = ABSENT,
        title: object = ABSENT,
        prompt: object = ABSENT,
    ) -> UpdateResult:
        """Update with compare-and-set (docs/protocol.md#update); ``now`` is sampled inside the FIFO
        slot."""
        return await self._submit(
            lambda: self.core.update(
                session_id,
                task_id,
                expected,
                self.clock.now_ms,
                change=change,
                title=title,
                prompt=prompt,
            )
        )

    async def delete(self, session_id: str, task_id: object) -> dict[str, Any]:
        return await self._submit(lambda: self.core.delete(session_id, task_id))

    async def archive_stop(self, session_id: str) -> list[str]:
        return await self._submit(lambda: self.core.archive_stop(session_id))

    def list_records(self, session_id: str) -> list[Record]:
        self._check_open()
        return self.core.list_records(session_id)

    def find(self, session_id: str, task_id: object) -> Task | None:
        self._check_open()
        return self.core.find(session_id, task_id)

    def catalog(self) -> list[dict[str, Any]]:
        self._check_open()
        return self.core.catalog()

    def history(
        self, session_id: str, task_id: object, limit: object, before: object = ABSENT
    ) -> dict[str, Any]:
        self._check_open()
        return self.core.history(session_id, task_id, limit, before)

    def archive_activity(self, session_id: str) -> dict[str, Any] | None:
        self._check_open()
        return self.core.archive_activity(session_id)

    # --- delivery ----------------------------------------------------------------------------

    def _from_thread(self, loop: asyncio.AbstractEventLoop, change: dict[str, str]) -> None:
        with contextlib.suppress(RuntimeError):  # the loop closed while a change arrived
            loop.call_soon_threadsafe(self._remote_change, change)

    def _remote_change(self, change: dict[str, str]) -> None:
        """Another host committed a change (``LISTEN``): report it, and look for work again."""
        if self._stopping:
            return
        kind = _REMOTE_KINDS.get(change.get("kind", ""))
        if kind is not None and "id" in change and "sessionId" in change:
            self.core._changed((TaskChange(change["id"], change["sessionId"], kind),))
        else:
            self.core._changed()
        self.request_drive()

    def request_drive(self) -> None:
        """Ask for a drive pass; requests made before the pass starts are coalesced."""
        self._drive_pending = True
        self._wake.set()

    def subscribe_deliveries(self, listener: Callable[[Delivered], None]) -> Callable[[], None]:
        """Call ``listener(message)`` after each follow-up message this service sends and
        commits (recovered members send nothing and are not reported); returns an
        unsubscribe. ``schedlog host run`` prints its delivery lines from here."""
        self._delivery_listeners.append(listener)
        return lambda: self._delivery_listeners.remove(listener)

    async def _deliver(self, group: Group) -> Delivered | None:
        post = self._post
        if post is None:
            sent = await self._submit(lambda: self.core.deliver_group(group, self.clock.now_ms))
        else:
            backoff = self.backoff
            sent = await self._submit_awaiting(
                lambda: self.core.deliver_group_to(
                    group,
                    self.clock.now_ms,
                    post,
                    sleep_until=self.clock.sleep_until,
                    retry_in=None if backoff is None else backoff.next_delay_ms,
                )
            )
        if sent is not None:
            for listener in list(self._delivery_listeners):
                listener(sent)
        return sent

    def _forget_edited(self, change: TaskChange) -> None:
        if self.backoff is not None and change.kind in ("updated", "deleted", "delivered"):
            self.backoff.forget(change.id)

    def _record_failure(self, exc: GroupFailed) -> None:
        if self.backoff is None:
            return
        now = self.clock.now_ms()
        changes: list[TaskChange] = []
        for task_id in exc.ids:
            st = self.core.store.get(task_id)
            if st is None or not st.task.active:
                continue
            self.backoff.failed(task_id, now, str(exc.error) or type(exc.error).__name__)
            changes.append(TaskChange(task_id, st.task.session_id, "retrying"))
        self.core.notify(changes)

    def _excluded(self, excluded: Iterable[str]) -> set[str]:
        skip = set(excluded)
        if self.backoff is not None:
            skip |= self.backoff.waiting(self.clock.now_ms())
        return skip

    def _unacknowledged(self, exc: GroupFailed) -> None:
        _log.warning(
            "delivery.unacknowledged",
            ids=list(exc.ids),
            error=str(exc.error),
            message=(
                f"schedule: reminders [{', '.join(exc.ids)}] were not acknowledged: {exc.error}"
            ),
        )

    async def drive(
        self, excluded: Iterable[str] = (), due: Sequence[StoredTask] | None = None
    ) -> tuple[list[Delivered], set[str]]:
        """One drive pass (docs/protocol.md#host-delivery "Drive"): the groups due now, each in its
        own FIFO slot.

        ``due`` is a scan the caller has just made (:meth:`tick`), delivered as it is. On a
        shared store a scan is a claim, and a second claim of rows this host already holds
        can find none of them: another host's ``SKIP LOCKED`` claim scan may be holding their
        row locks (docs/decisions.md, "PostgreSQL store: several hosts").

        Returns the messages sent and the ids whose group failed with their target not after
        the failure time (left out of the timer for the rest of the pass).
        """
        try:
            if due is None:
                due = self.core.due(self.clock.now_ms(), self._excluded(excluded))
            groups = plan_groups(due)
        except Exception as exc:
            _log.error("delivery.stopped", **failure_fields("dispatch stopped", exc))
            self._scan_failed = True
            return [], set()
        sent: list[Delivered] = []
        failed: set[str] = set()
        for group in groups:
            try:
                delivered = await self._deliver(group)
            except GroupFailed as exc:
                self._unacknowledged(exc)
                self._record_failure(exc)
                failure_time = self.clock.now_ms()
                for task_id in exc.ids:
                    st = self.core.store.get(task_id)
                    if st is not None and st.task.record.scheduled_at <= failure_time:
                        failed.add(task_id)
                continue
            if delivered is not None:
                sent.append(delivered)
        return sent, failed

    async def tick(self) -> list[Delivered]:
        """A batch ``tick`` (docs/protocol.md#batch-host): drive passes until nothing is due except
        tasks whose group failed during this tick."""
        failed: set[str] = set()
        sent: list[Delivered] = []
        while due := self.core.due(self.clock.now_ms(), self._excluded(failed)):
            delivered, newly_failed = await self.drive(failed, due)
            sent.extend(delivered)
            if not delivered and not newly_failed:
                break  # nothing sent and nothing failed: another pass would find the same
            failed |= newly_failed
        return sent

    async def _run_timer(self) -> None:
        backoff = TIMER_BACKOFF_MS
        while True:
            if self._drive_pending:
                self._drive_pending = False
                self._wake.clear()
                self._scan_failed = False
                _, self._failed = await self.drive()
                if self._scan_failed:
                    # Finding due work failed (a shared store that refuses claims while its
                    # next target still reads): try again after a back-off, never at once.
                    await self.clock.sleep_until(self.clock.now_ms() + backoff)
                    backoff = min(backoff * 2, MAX_TIMER_BACKOFF_MS)
                    self._drive_pending = True
                continue
            now = self.clock.now_ms()
            try:
                if self.backoff is None:
                    target = self.core.next_target(self._failed)
                else:
                    # With a backoff, a failed task waits for its next attempt instead.
                    target = self.core.next_target(self.backoff.waiting(now))
                    retry_at = self.backoff.next_attempt_after(now)
                    if retry_at is not None and (target is None or retry_at < target):
                        target = retry_at
            except Exception as exc:  # a shared store that is unreachable: retry with back-off
                _log.error(
                    "delivery.stopped", error=str(exc), message=f"schedule: dispatch stopped: {exc}"
                )
                await self.clock.sleep_until(self.clock.now_ms() + backoff)
                backoff = min(backoff * 2, MAX_TIMER_BACKOFF_MS)
                self._drive_pending = True
                continue
            backoff = TIMER_BACKOFF_MS
            if target is not None and target <= now:
                self._drive_pending = True
                continue
            self._wake.clear()
            if target is None:
                await self._wake.wait()
                continue
            deadline = min(target, now + MAX_WAIT_MS)
            sleeper = asyncio.ensure_future(self.clock.sleep_until(deadline))
            waker = asyncio.ensure_future(self._wake.wait())
            try:
                await asyncio.wait({sleeper, waker}, return_when=asyncio.FIRST_COMPLETED)
            finally:
                sleeper.cancel()
                waker.cancel()

    # --- disposal ----------------------------------------------------------------------------

    async def aclose(self) -> None:
        """Cancel the timer, finish accepted work, close the store. Idempotent."""
        if self._closed:
            return
        self._stopping = True
        if self._timer is not None:
            self._timer.cancel()
            await asyncio.gather(self._timer, return_exceptions=True)
        await self._queue.join()
        self._worker.cancel()
        await asyncio.gather(self._worker, return_exceptions=True)
        if self._writer is not None:  # idle: the FIFO has drained
            self._writer.shutdown(wait=True)
        self.core.store.close()
        self._closed = True

    async def __aenter__(self) -> HostService:
        """The open service (it starts when constructed, inside the running loop)."""
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        """:meth:`aclose`."""
        await self.aclose()
