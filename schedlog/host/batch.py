"""Batched delivery to session logs (docs/operations.md#burst-sizing, docs/decisions.md
"Batched delivery").

When many reminders fall due together, delivering them one group at a time costs one append
with its ``fsync`` and one store transaction per group. A batched pass delivers up to
:data:`MAX_BATCH_TASKS` due tasks in one FIFO slot instead:

1. **Per session** (on a small thread pool when the run has :data:`PARALLEL_FROM` sessions or
   more, else on the loop): the session's log is resolved, its groups are planned as
   :meth:`HostCore.deliver_group` plans them (the same members, occurrences, message ids and
   recovery from what the log already holds), their follow-ups are appended in group order and
   made durable by one barrier. Sessions run in parallel, so their ``fsync``\\ s overlap. A
   session whose planning, append or barrier fails fails all its groups, and its cached log is
   dropped, so the next pass re-reads what was written (recovered, never sent twice).
2. **Commit** (on the pool when threaded): every member of every session that was made
   durable is committed in one store transaction (:class:`ReplacesMany`). A failed commit
   fails every group of the run; the logs hold the follow-ups, so the next pass recovers them.
3. **Index and report** (on the loop, in slices with a yield between them): the timer index
   and change listeners are updated; the changes carry the committed tasks, so the catalog
   index needs no read-back. The pass queues its next run before it reports this one, and a
   run of many messages writes its delivery lines on a report thread.

A threaded run is led from a thread of its own (step 1, then step 2), so the loop sees two
hops per run, not one per session. Runs are pipelined: once a run's follow-ups are durable,
the pass may start the next run's step 1 (:meth:`BatchDelivery.stage`) while this run
commits (docs/decisions.md "Pipelined runs"). A pass's scan of many due tasks reads and
decodes them on the pool with a few queries (:meth:`BatchDelivery.scan`). See
docs/decisions.md "Burst path off the event loop".

The one-group path (:meth:`HostCore.deliver_group`) stays the readable reference: a batched
pass leaves the same session logs, byte for byte, and the same store (tests/host/test_batch.py).
Only a store this host alone writes (the local timer index) is batched, for session logs; a
shared store and webhook delivery keep the one-group path.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, Final, NamedTuple, Protocol, runtime_checkable

import structlog

from schedlog._crashpoints import crashpoint
from schedlog.errors import ScheduleError
from schedlog.host.changes import TaskChange
from schedlog.host.core import MSG_BARRIER, HostCore, _Plan
from schedlog.host.delivery import Delivered, Group, GroupFailed, commit_member
from schedlog.host.due import LocalTimerIndex
from schedlog.host.sessions import SessionHandle, SyncsEntries
from schedlog.host.stores.base import StoredTask, TaskStore, WritesFromAnyThread
from schedlog.host.task import Task

__all__ = [
    "MAX_BATCH_TASKS",
    "PARALLEL_FROM",
    "POOL_THREADS",
    "REPORT_SLICE",
    "SCAN_OFF_LOOP_FROM",
    "BatchDelivery",
    "DueSnapshot",
    "Outcome",
    "ReplacesMany",
    "Staged",
    "batchable",
    "chunks",
    "member_commits",
]

#: The most due tasks one batched pass takes (one FIFO slot, one store transaction).
MAX_BATCH_TASKS: Final = 1_000
#: Threads that append to session logs in parallel (their ``fsync``\\ s overlap).
POOL_THREADS: Final = 4
#: The fewest sessions in a run for which the appends and the commit leave the loop.
PARALLEL_FROM: Final = 8
#: The fewest due tasks for which a pass's scan (reading and decoding them) leaves the loop.
SCAN_OFF_LOOP_FROM: Final = 64
#: Index updates done on the loop between two yields to it, so that no stretch of them holds
#: the loop for long; a run with this many messages or more is reported (its delivery lines)
#: on the report thread (docs/decisions.md "Burst path off the event loop").
REPORT_SLICE: Final = 200

#: What a group's delivery came to: its message (None when nothing was sent), or its failure.
Outcome = Delivered | GroupFailed | None

_log = structlog.get_logger("schedlog.host")


@runtime_checkable
class ReplacesMany(Protocol):
    """A store that rewrites several existing tasks in one durable, all-or-nothing write."""

    def replace_many(self, tasks: Sequence[Task]) -> None: ...


def batchable(core: HostCore) -> bool:
    """Whether ``core``'s deliveries to session logs may be batched: a store this host alone
    writes (the local timer index) that rewrites many tasks at once from a worker thread."""
    store = core.store
    return (
        isinstance(core.due_tasks, LocalTimerIndex)
        and isinstance(store, ReplacesMany)
        and isinstance(store, WritesFromAnyThread)
        and store.writes_from_any_thread
    )


def chunks(
    groups: Sequence[Group], limit: int = MAX_BATCH_TASKS, max_sessions: int | None = None
) -> list[list[Group]]:
    """``groups`` cut into runs of about ``limit`` members, a session's groups kept together
    and in order (so each session costs one barrier per pass, not one per run). Sessions come
    in order of their first group; a session with more than ``limit`` members is split between
    runs in order; a group is never split. Only the order inside a session is the protocol's:
    sessions are independent logs. A run holds at most ``max_sessions`` sessions (the open logs
    the sessions directory keeps: none of a run's logs is closed while the run appends)."""
    by_session: dict[str, list[Group]] = {}
    for group in groups:
        by_session.setdefault(group.session_id, []).append(group)
    out: list[list[Group]] = []
    run: list[Group] = []
    size = 0
    sessions = 0  # in the run
    for session_groups in by_session.values():
        if max_sessions is not None and sessions >= max_sessions:
            out.append(run)
            run, size, sessions = [], 0, 0
        sessions += 1
        for group in session_groups:
            if run and size + len(group.ids) > limit:
                out.append(run)
                run, size, sessions = [], 0, 1
            run.append(group)
            size += len(group.ids)
    if run:
        out.append(run)
    return out


class DueSnapshot:
    """The due tasks a drive pass scanned, trusted until a durable write reports one of them
    changed (then it is read again): a batched pass decodes each due task once, not twice.
    Every write of a local store goes through the FIFO and reports its change, and the runs of
    a pass read here only inside their FIFO slot. :meth:`close` stops listening."""

    def __init__(self, core: HostCore, due: Sequence[StoredTask]) -> None:
        self._tasks = {st.task.id: st for st in due}
        self._changed: set[str] = set()
        self._read = core.store.get
        self.close = core.subscribe_changes(lambda change: self._changed.add(change.id))

    def get(self, task_id: str) -> StoredTask | None:
        st = self._tasks.get(task_id)
        if st is None or task_id in self._changed:
            return self._read(task_id)
        return st


class _Session(NamedTuple):
    """One session's part of a run: its planned groups, the outcomes already known (nothing to
    send, or a failure before the append), the append's failure, and its log."""

    session_id: str
    plans: list[_Plan]
    outcomes: dict[int, Outcome]
    error: BaseException | None
    handle: SessionHandle | None = None


class _Ran(NamedTuple):
    """What a run came to before the loop indexes and reports it."""

    outcomes: dict[int, Outcome]
    durable: list[_Plan]
    commits: list[list[tuple[StoredTask, Task]]] | None  # None: the commit failed
    delivered_at: int


class Staged(NamedTuple):
    """A run whose sessions were started ahead of its FIFO slot (:meth:`BatchDelivery.stage`):
    its groups by session, and the future of their outcomes."""

    by_session: dict[str, list[Group]]
    sessions: Future[list[_Session]]


def _by_session(groups: Iterable[Group]) -> dict[str, list[Group]]:
    by_session: dict[str, list[Group]] = {}
    for group in groups:
        by_session.setdefault(group.session_id, []).append(group)
    return by_session


class BatchDelivery:
    """Delivers runs of groups to session logs, one run per FIFO slot (see the module)."""

    #: Whether a run's sessions may be started ahead of its slot (:meth:`stage`).
    pipelines: bool = True

    def __init__(self, core: HostCore, now: Callable[[], int], threads: int = POOL_THREADS) -> None:
        self.core = core
        self.now = now
        #: The fewest sessions in a run for which it leaves the loop (:data:`PARALLEL_FROM`).
        self.parallel_from = PARALLEL_FROM
        #: The fewest due tasks whose scan leaves the loop (:data:`SCAN_OFF_LOOP_FROM`).
        self.scan_from = SCAN_OFF_LOOP_FROM
        self._pool: ThreadPoolExecutor = ThreadPoolExecutor(
            max(1, threads), thread_name_prefix="schedlog-batch"
        )
        # A threaded run's sessions are led from a thread of its own (fanned out to the
        # pool), so the loop sees one hop per run for them, not one per session; the commit
        # is a second hop. Two threads: the next run's sessions while this one commits.
        self._lead: ThreadPoolExecutor = ThreadPoolExecutor(2, thread_name_prefix="schedlog-run")
        # The delivery lines of large runs are written here, one run after another, in order.
        self._reporter = ThreadPoolExecutor(1, thread_name_prefix="schedlog-report")

    def close(self) -> None:
        """Stop the pool (the FIFO has drained: nothing runs on it)."""
        self._lead.shutdown(wait=True)
        self._pool.shutdown(wait=True)
        self._reporter.shutdown(wait=True)

    async def on_reporter(self, report: Callable[[], None]) -> None:
        """Run ``report`` (a run's delivery lines) on the report thread; the loop goes on."""
        await asyncio.get_running_loop().run_in_executor(self._reporter, report)

    async def scan(self, now: int, excluded: Iterable[str]) -> list[StoredTask]:
        """A drive pass's due tasks, as :meth:`LocalTimerIndex.due` finds them, with the rows
        read and decoded on the pool when there are many: the ids come from the index on the
        loop, the rows from the store in a few queries. A task that a durable write changed
        while the rows were read is read again here, on the loop, so the scan returned is the
        committed state when it returns."""
        index = self.core.due_tasks
        assert isinstance(index, LocalTimerIndex)
        skip = set(excluded)
        if index.due_count(now) - len(skip) < self.scan_from:
            return self.core.due(now, skip)  # a few: on the loop, as the one-group path reads
        ids = index.due_ids(now, skip)
        store = self.core.store
        changed: set[str] = set()
        stop = self.core.subscribe_changes(lambda change: changed.add(change.id))
        try:
            loop = asyncio.get_running_loop()
            rows = await loop.run_in_executor(self._pool, _read_rows, store, ids)
        finally:
            stop()
        for task_id in changed.intersection(ids):
            st = store.get(task_id)
            if st is None:
                rows.pop(task_id, None)
            else:
                rows[task_id] = st
        due: list[StoredTask] = []
        for task_id in ids:
            st = rows.get(task_id)
            if st is not None and st.task.active and not st.task.paused:
                due.append(st)
            else:  # a row the store reported invalid, or one the index misread: never delivered
                index.unindex(task_id)
        return due

    def stage(self, groups: Sequence[Group], due: DueSnapshot) -> Staged | None:
        """Start a threaded run's sessions (plan, append, barrier) now, on the lead thread,
        ahead of its FIFO slot; None for a run that stays on the loop (or a delivery that does
        not pipeline). Call only from the loop, as the run's slot is queued behind the one
        running, with nothing else queued between them: no write can touch the run's tasks
        before the slot starts (docs/decisions.md "Pipelined runs")."""
        return self._start(groups, due) if self.pipelines else None

    def _start(self, groups: Sequence[Group], due: DueSnapshot) -> Staged | None:
        by_session = _by_session(groups)
        if len(by_session) < self.parallel_from:
            return None
        future = self._lead.submit(self._sessions, by_session, due.get, True)
        return Staged(by_session, future)

    async def deliver(
        self,
        groups: Sequence[Group],
        due: DueSnapshot,
        staged: Staged | None = None,
        appended: Callable[[], None] | None = None,
    ) -> list[Outcome]:
        """Deliver one run of groups (call from its FIFO slot); an outcome per group, in
        order. Members are read from ``due`` (the pass's scan) unless a write touched them.
        ``staged``: the run's sessions started by :meth:`stage`. ``appended`` is called on the
        loop once the run's follow-ups are durable, before its commit (the pass stages its next
        run there)."""
        if staged is None:
            staged = self._start(groups, due)
        if staged is None:  # a small run stays on the loop: a thread hop costs more there
            ran = self._close(self._sessions(_by_session(groups), due.get, False))
        else:
            sessions = await asyncio.wrap_future(staged.sessions)
            if appended is not None:
                appended()
            loop = asyncio.get_running_loop()
            ran = await loop.run_in_executor(self._lead, self._close, sessions)
        outcomes = ran.outcomes
        if ran.commits is None:
            return [outcomes.get(id(group)) for group in groups]
        changes: list[TaskChange] = []
        done = 0
        for plan, pairs in zip(ran.durable, ran.commits, strict=True):
            for st, task in pairs:
                self.core.due_tasks.reindex(StoredTask(st.seq, task))
                changes.append(TaskChange(task.id, task.session_id, "delivered", task))
            sent = plan.outgoing
            if sent is None:
                outcomes[id(plan.group)] = None
            else:  # Delivered._replace, without its cost per message
                d = sent.delivered
                outcomes[id(plan.group)] = Delivered(
                    d.session_id, d.message_id, d.text, d.members, ran.delivered_at
                )
            done += len(pairs)
            if done >= REPORT_SLICE:  # let the loop serve reads between slices
                done = 0
                # Their change events too: a thousand at once held the loop (catalog, event
                # stream, MCP): docs/decisions.md "The API during a burst".
                self.core.notify(changes)
                changes = []
                await asyncio.sleep(0)
        self.core.notify(changes)
        return [outcomes.get(id(group)) for group in groups]

    def _sessions(
        self,
        by_session: dict[str, list[Group]],
        get: Callable[[str], StoredTask | None],
        threaded: bool,
    ) -> list[_Session]:
        """A run's sessions (in parallel on the pool when ``threaded``), each planned,
        appended and made durable. Failures are outcomes, never raised."""
        self._touch(list(by_session))
        if threaded:
            futures = [
                self._pool.submit(self._session, sid, session_groups, get)
                for sid, session_groups in by_session.items()
            ]
            sessions = [future.result() for future in futures]
        else:
            sessions = [self._session(sid, g, get) for sid, g in by_session.items()]
        return self._sync_entries(sessions)  # new logs' directory entries durable too

    def _close(self, sessions: list[_Session]) -> _Ran:
        """A run after its sessions: the outcomes known, then the one store transaction of
        every member made durable. Failures are outcomes, never raised."""
        outcomes: dict[int, Outcome] = {}
        durable: list[_Plan] = []
        for session in sessions:
            outcomes.update(session.outcomes)
            if session.error is None:
                durable.extend(session.plans)
                continue
            self.core.sessions.discard(session.session_id)
            for plan in session.plans:
                outcomes[id(plan.group)] = GroupFailed(_planned_ids(plan), session.error)
        delivered_at = self.now()
        try:
            commits = self._commit(durable, delivered_at)
        except Exception as exc:
            for session in sessions:
                self.core.sessions.discard(session.session_id)
            for plan in durable:
                outcomes[id(plan.group)] = GroupFailed(_planned_ids(plan), exc)
            return _Ran(outcomes, durable, None, delivered_at)
        return _Ran(outcomes, durable, commits, delivered_at)

    def _sync_entries(self, sessions: list[_Session]) -> list[_Session]:
        """The run's new logs made durable in their directory, one ``fsync`` per directory
        for all of them (their files were fsynced each on its own: :meth:`_send`), before
        anything of theirs is committed; if it fails, their sessions fail."""
        controller = self.core.sessions
        if not isinstance(controller, SyncsEntries):
            return sessions
        written = [s for s in sessions if s.error is None and s.handle is not None]
        try:
            controller.sync_entries([s.handle for s in written if s.handle is not None])
        except Exception as exc:
            pending = {s.session_id for s in written if getattr(s.handle, "directory_pending", 0)}
            return [s._replace(error=exc) if s.session_id in pending else s for s in sessions]
        return sessions

    def _touch(self, session_ids: list[str]) -> None:
        """The legacy warnings of sessions seen for the first time, one after another."""
        for session_id in session_ids:
            self.core.touch_session(session_id)

    def _session(
        self, session_id: str, groups: list[Group], get: Callable[[str], StoredTask | None]
    ) -> _Session:
        """One session's part of the run (on a pool thread when threaded): resolve its log,
        plan its groups in order, append their follow-ups, then one barrier. A failure fails
        every group of the session (their ``error``); nothing about it is committed."""
        core = self.core
        session = _Session(session_id, [], {}, None)
        try:
            handle = core.sessions.resolve(session_id)
        except Exception as exc:
            unresolved: dict[int, Outcome] = {id(g): GroupFailed(g.ids, exc) for g in groups}
            return session._replace(outcomes=unresolved)
        try:
            for group in groups:
                plan = core._plan_members(group, handle, self.now, get)
                if plan is None:
                    session.outcomes[id(group)] = None
                else:
                    session.plans.append(plan)
        except Exception as exc:
            core.sessions.discard(session_id)
            failed: dict[int, Outcome] = {id(g): GroupFailed(g.ids, exc) for g in groups}
            return session._replace(plans=[], outcomes=failed)
        error = self._send(session_id, handle, session.plans)
        return session._replace(error=error, handle=handle)

    # Extension points of a batched claimed delivery (schedlog/host/batch_claims.py).

    def _send(
        self, session_id: str, handle: SessionHandle, plans: list[_Plan]
    ) -> BaseException | None:
        """Append a session's follow-ups and make them durable (a new log's directory entry:
        by :meth:`_sync_entries`, for the whole run); the failure, if any."""
        controller = self.core.sessions
        if isinstance(controller, SyncsEntries):
            return _append(handle, plans, controller.flush_file)
        return _append(handle, plans)

    def _commit(self, plans: list[_Plan], delivered_at: int) -> list[list[tuple[StoredTask, Task]]]:
        """The run's one store transaction (:func:`_commit_all`)."""
        return _commit_all(self.core, plans, delivered_at)


def _read_rows(store: TaskStore, ids: list[str]) -> dict[str, StoredTask]:
    """The stored tasks of ``ids`` by id, in a few queries when the store reads many."""
    get_many: Callable[[list[str]], list[StoredTask]] | None = getattr(store, "get_many", None)
    if get_many is not None:
        return {st.task.id: st for st in get_many(ids)}
    found = (store.get(task_id) for task_id in ids)
    return {st.task.id: st for st in found if st is not None}


def _planned_ids(plan: _Plan) -> tuple[str, ...]:
    planned = {st.task.id for st, _ in plan.members}
    return tuple(i for i in plan.group.ids if i in planned)


def _append(
    handle: SessionHandle,
    plans: list[_Plan],
    barrier: Callable[[SessionHandle], bool] | None = None,
) -> BaseException | None:
    """Append the follow-ups of ``plans`` in order, then one barrier (``barrier(handle)``,
    else ``handle.flush()``). Returns the failure, if any, instead of raising it."""
    try:
        events = [plan.outgoing.event for plan in plans if plan.outgoing is not None]
        if events:
            # One write for the session's lines where the log takes them at once
            # (LogAppender.append_many: each line still read back and judged first).
            append_many: Callable[[list[dict[str, Any]]], object] | None = getattr(
                handle, "append_many", None
            )
            if append_many is not None:
                append_many(events)
            else:
                for event in events:
                    handle.append(event)
            if not (handle.flush() if barrier is None else barrier(handle)):
                raise ScheduleError("internal_error", MSG_BARRIER)
        crashpoint("batch.after_session")
    except Exception as exc:
        return exc
    return None


def _commit_all(
    core: HostCore, plans: list[_Plan], delivered_at: int
) -> list[list[tuple[StoredTask, Task]]]:
    """The run's one store transaction: each plan's members with the tasks their delivery
    commits write (docs/protocol.md#host-delivery step 3.7)."""
    commits, tasks = member_commits(core, plans, delivered_at)
    if tasks:
        store = core.store
        assert isinstance(store, ReplacesMany)
        crashpoint("batch.before_commit")
        store.replace_many(tasks)
    return commits


def member_commits(
    core: HostCore, plans: Sequence[_Plan], delivered_at: int
) -> tuple[list[list[tuple[StoredTask, Task]]], list[Task]]:
    """What committing ``plans`` writes: per plan, each member with the task its delivery
    commit gives (:func:`commit_member`), and all those tasks in order for one
    ``replace_many``. Batched runs and the webhook group commit both build it here."""
    commits = [
        [
            (st, commit_member(st.task, d, plan.ids[st.task.id], delivered_at, core.retention))
            for st, d in plan.members
        ]
        for plan in plans
    ]
    return commits, [task for pairs in commits for _, task in pairs]


def burst_summary(sent: Sequence[Delivered]) -> None:
    """Log one ``delivery.burst`` line for a drive pass that sent more than one message: the
    reminders, sessions and messages it delivered and the worst lateness
    (docs/operations.md#host-run)."""
    if len(sent) < 2:
        return
    lateness = [ms for ms in (d.lateness_ms() for d in sent) if ms is not None]
    worst = max(lateness, default=0)
    count = sum(len(d.members) for d in sent)
    sessions = len({d.session_id for d in sent})
    _log.info(
        "delivery.burst",
        reminders=count,
        sessions=sessions,
        messages=len(sent),
        worstLatenessMs=worst,
        message=(
            f"schedule: delivered {count} reminders to {sessions} sessions in {len(sent)}"
            f" messages, worst lateness {worst} ms"
        ),
    )
