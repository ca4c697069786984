"""Batched delivery from a store shared by several hosts (issue 21; docs/decisions.md,
"Batched claimed delivery").

The one-group path of a claiming store costs a claim, a session lock, a lease check, an
append with its ``fsync`` and a commit per group. :class:`ClaimedBatchDelivery` delivers a
whole batched claim (:class:`~schedlog.host.due.Batch`: up to
:data:`~schedlog.host.stores.pg_batch.BATCH_CLAIM_LIMIT` due tasks, claimed by one query under
the locks of their sessions) through :class:`~schedlog.host.batch.BatchDelivery`'s per-session
machinery, on its pool (off the event loop) when the run has
:data:`~schedlog.host.batch.PARALLEL_FROM` sessions or more, as a local store's:

1. the claimed rows are read again once (a row changed since the claim is not planned) and
   every session's cached log is dropped (re-read as other hosts left it);
2. per session: plan, then **the lease check** (every member about to be sent still leased to
   this host, on the connection holding the session locks), then one append and one barrier;
3. the batch's commit: every durable member in **one statement** at the versions claimed and
   only while the leases hold, all or nothing; a failed commit fails every group of the run
   (the logs hold the follow-ups: the next pass recovers them, never sends them twice).

The claims not committed and the session locks end with the drive pass
(:meth:`~schedlog.host.due.DueTasks.end_pass`).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence

from schedlog._crashpoints import crashpoint
from schedlog.errors import ScheduleError
from schedlog.host.batch import BatchDelivery, DueSnapshot, Outcome, Staged
from schedlog.host.core import HostCore, _Plan
from schedlog.host.delivery import Group, GroupFailed, commit_member
from schedlog.host.due import MSG_LEASE_LOST, Batch, ClaimedDue, ClaimsBatches
from schedlog.host.sessions import SessionHandle
from schedlog.host.stores.base import StoredTask
from schedlog.host.task import Task

__all__ = ["ClaimedBatchDelivery", "claims_batchable"]


def claims_batchable(core: HostCore) -> bool:
    """Whether ``core`` delivers from a claiming store that claims batches."""
    due = core.due_tasks
    return isinstance(due, ClaimedDue) and isinstance(due.claims, ClaimsBatches)


class _Fresh(DueSnapshot):
    """The batch's rows as read again before planning; a row left out is not delivered."""

    def __init__(self, tasks: dict[str, StoredTask]) -> None:  # no change listener: the
        self._fresh = tasks  # run holds the FIFO slot and its sessions' locks
        self.close = lambda: None

    def get(self, task_id: str) -> StoredTask | None:
        return self._fresh.get(task_id)


class ClaimedBatchDelivery(BatchDelivery):
    """:class:`BatchDelivery` over the open batched claim of a shared store (see the module)."""

    def __init__(self, core: HostCore, *args: object, **kwargs: object) -> None:
        super().__init__(core, *args, **kwargs)  # type: ignore[arg-type]
        due = core.due_tasks
        assert isinstance(due, ClaimedDue)
        due.batched = True
        self._due = due

    def _batch(self) -> Batch:
        batch = self._due.batch
        if batch is None:
            raise ScheduleError("internal_error", MSG_LEASE_LOST)
        return batch

    #: The batch's rows are read again in the run's slot, before planning: never staged.
    pipelines = False

    async def deliver(
        self,
        groups: Sequence[Group],
        due: DueSnapshot,
        staged: Staged | None = None,
        appended: Callable[[], None] | None = None,
    ) -> list[Outcome]:
        sessions = {group.session_id for group in groups}
        try:
            batch = self._batch()
            if len(sessions) >= self.parallel_from:  # as the run itself: a small one stays
                loop = asyncio.get_running_loop()  # on the loop (virtual-clock tests too)
                fresh = await loop.run_in_executor(self._pool, batch.fresh)
            else:
                fresh = batch.fresh()
        except Exception as exc:
            return [GroupFailed(group.ids, exc) for group in groups]
        for session_id in sessions:  # the logs as other hosts left them
            self.core.sessions.discard(session_id)
        try:
            return await super().deliver(groups, _Fresh(fresh))
        finally:
            for session_id in sessions:
                self.core.sessions.discard(session_id)

    def _send(
        self, session_id: str, handle: SessionHandle, plans: list[_Plan]
    ) -> BaseException | None:
        """The lease check before the session's append: another host may be delivering a
        member whose lease this host lost, so then nothing of the session is sent."""
        planned = {st.task.id for plan in plans for st, _ in plan.members}
        leased = [
            m.id
            for plan in plans
            if plan.outgoing is not None
            for m in plan.outgoing.delivered.members
            if m.id in planned
        ]
        if leased:
            try:
                lost = self._batch().lost(leased)
            except Exception as exc:
                return exc
            if lost:
                return ScheduleError("internal_error", f"{MSG_LEASE_LOST}: {', '.join(lost)}")
        return super()._send(session_id, handle, plans)

    def _commit(self, plans: list[_Plan], delivered_at: int) -> list[list[tuple[StoredTask, Task]]]:
        """The batch's one commit statement (its lease check is in the statement)."""
        retention = self.core.retention
        commits = [
            [
                (st, commit_member(st.task, d, plan.ids[st.task.id], delivered_at, retention))
                for st, d in plan.members
            ]
            for plan in plans
        ]
        tasks = [task for pairs in commits for _, task in pairs]
        if tasks:
            crashpoint("batch.before_commit")
            self._batch().commit(tasks)
        return commits
