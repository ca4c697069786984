"""Batched delivery to session logs (docs/operations.md#burst-sizing, docs/decisions.md
"Batched delivery").

When many reminders fall due together, delivering them one group at a time costs one append
with its ``fsync`` and one store transaction per group. A batched pass delivers up to
:data:`MAX_BATCH_TASKS` due tasks in one FIFO slot instead:

1. **Plan** (on the loop): every group is planned as :meth:`HostCore.deliver_group` plans it
   (the same members, occurrences, message ids and recovery from what the log already holds).
2. **Append** (on a small thread pool, off the loop): each session's follow-ups are appended in
   group order and made durable by one barrier; sessions run in parallel so their ``fsync``\\ s
   overlap. A session whose append or barrier fails fails all its groups, and its cached log is
   dropped, so the next pass re-reads what was written (recovered, never sent twice).
3. **Commit** (on the pool): every member of every session that was made durable is committed
   in one store transaction (:class:`ReplacesMany`). A failed commit fails every group of the
   batch; the logs hold the follow-ups, so the next pass recovers them.
4. **Index and report** (on the loop): the timer index and change listeners are updated.

The one-group path (:meth:`HostCore.deliver_group`) stays the readable reference: a batched
pass leaves the same session logs, byte for byte, and the same store (tests/host/test_batch.py).
Only a store this host alone writes (the local timer index) is batched, for session logs; a
shared store and webhook delivery keep the one-group path.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Final, NamedTuple, Protocol, runtime_checkable

import structlog

from schedlog._crashpoints import crashpoint
from schedlog.errors import ScheduleError
from schedlog.host.changes import TaskChange
from schedlog.host.core import MSG_BARRIER, HostCore, _Plan
from schedlog.host.delivery import Delivered, Group, GroupFailed, commit_member
from schedlog.host.due import LocalTimerIndex
from schedlog.host.stores.base import StoredTask, WritesFromAnyThread
from schedlog.host.task import Task

__all__ = [
    "MAX_BATCH_TASKS",
    "PARALLEL_FROM",
    "POOL_THREADS",
    "BatchDelivery",
    "Outcome",
    "ReplacesMany",
    "batchable",
    "chunks",
]

#: The most due tasks one batched pass takes (one FIFO slot, one store transaction).
MAX_BATCH_TASKS: Final = 2_000
#: Threads that append to session logs in parallel (their ``fsync``\\ s overlap).
POOL_THREADS: Final = 4
#: The fewest sessions in a run for which the appends and the commit leave the loop.
PARALLEL_FROM: Final = 8

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


def chunks(groups: Sequence[Group], limit: int = MAX_BATCH_TASKS) -> list[list[Group]]:
    """``groups`` in order, cut into runs of at most ``limit`` members (a group larger than
    ``limit`` is a run of its own: a group is never split)."""
    out: list[list[Group]] = []
    run: list[Group] = []
    size = 0
    for group in groups:
        if run and size + len(group.ids) > limit:
            out.append(run)
            run, size = [], 0
        run.append(group)
        size += len(group.ids)
    if run:
        out.append(run)
    return out


class _Session(NamedTuple):
    session_id: str
    plans: list[_Plan]


class BatchDelivery:
    """Delivers runs of groups to session logs, one run per FIFO slot (see the module)."""

    def __init__(self, core: HostCore, now: Callable[[], int], threads: int = POOL_THREADS) -> None:
        self.core = core
        self.now = now
        self._pool: ThreadPoolExecutor = ThreadPoolExecutor(
            max(1, threads), thread_name_prefix="schedlog-batch"
        )

    def close(self) -> None:
        """Stop the pool (the FIFO has drained: nothing runs on it)."""
        self._pool.shutdown(wait=True)

    async def deliver(self, groups: Sequence[Group]) -> list[Outcome]:
        """Deliver one run of groups (call from its FIFO slot); an outcome per group, in
        order."""
        outcomes: dict[int, Outcome] = {}
        sessions = self._plan(groups, outcomes)
        loop = asyncio.get_running_loop()
        # A small run stays on the loop: a thread hop costs more than it saves there.
        threaded = len(sessions) >= PARALLEL_FROM
        if threaded:
            appended = await asyncio.gather(
                *(loop.run_in_executor(self._pool, _append, s) for s in sessions)
            )
        else:
            appended = [_append(s) for s in sessions]
        durable: list[_Session] = []
        for session, error in zip(sessions, appended, strict=True):
            if error is None:
                durable.append(session)
                continue
            self.core.sessions.discard(session.session_id)
            for plan in session.plans:
                outcomes[id(plan.group)] = GroupFailed(_planned_ids(plan), error)
        delivered_at = self.now()
        commits = [
            (plan, _commits(plan, delivered_at, self.core)) for s in durable for plan in s.plans
        ]
        tasks = [task for _, pairs in commits for _, task in pairs]
        try:
            if tasks and threaded:
                await loop.run_in_executor(self._pool, _commit_all, self.core, tasks)
            elif tasks:
                _commit_all(self.core, tasks)
        except Exception as exc:
            for session in durable:
                self.core.sessions.discard(session.session_id)
            for plan, _ in commits:
                outcomes[id(plan.group)] = GroupFailed(_planned_ids(plan), exc)
        else:
            changes: list[TaskChange] = []
            for plan, pairs in commits:
                for st, task in pairs:
                    self.core.due_tasks.reindex(StoredTask(st.seq, task))
                    changes.append(TaskChange(task.id, task.session_id, "delivered"))
                sent = plan.outgoing
                outcomes[id(plan.group)] = (
                    None if sent is None else sent.delivered._replace(delivered_at=delivered_at)
                )
            self.core.notify(changes)
        return [outcomes.get(id(group)) for group in groups]

    def _plan(self, groups: Sequence[Group], outcomes: dict[int, Outcome]) -> list[_Session]:
        """Plan every group on the loop (reads only); sessions in order of their first group."""
        by_session: dict[str, _Session] = {}
        for group in groups:
            try:
                plan = self.core._plan(group, self.now)
            except GroupFailed as exc:
                outcomes[id(group)] = exc
                continue
            if plan is None:
                outcomes[id(group)] = None
                continue
            session = by_session.setdefault(group.session_id, _Session(group.session_id, []))
            session.plans.append(plan)
        return list(by_session.values())


def _planned_ids(plan: _Plan) -> tuple[str, ...]:
    planned = {st.task.id for st, _ in plan.members}
    return tuple(i for i in plan.group.ids if i in planned)


def _append(session: _Session) -> BaseException | None:
    """Append a session's follow-ups in group order, then one barrier (on a pool thread).
    Returns the failure, if any, instead of raising it."""
    try:
        handle = None
        for plan in session.plans:
            if plan.outgoing is not None:
                handle = plan.session
                handle.append(plan.outgoing.event)
        if handle is not None and not handle.flush():
            raise ScheduleError("internal_error", MSG_BARRIER)
        crashpoint("batch.after_session")
    except Exception as exc:
        return exc
    return None


def _commits(plan: _Plan, delivered_at: int, core: HostCore) -> list[tuple[StoredTask, Task]]:
    """Each planned member with the task its delivery commit writes."""
    return [
        (st, commit_member(st.task, decision, plan.ids[st.task.id], delivered_at, core.retention))
        for st, decision in plan.members
    ]


def _commit_all(core: HostCore, tasks: list[Task]) -> None:
    """The batch's one store transaction (on a pool thread)."""
    store = core.store
    assert isinstance(store, ReplacesMany)
    crashpoint("batch.before_commit")
    store.replace_many(tasks)


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
