"""Group commit of acknowledged webhook deliveries (docs/decisions.md, "Webhook deliveries
under load").

Each webhook group is decided in a FIFO slot, POSTed outside the FIFO, and committed after
the receiver's 2xx (:meth:`HostCore.deliver_group_to`). Committed one group at a time, a burst
costs one store transaction with its ``fsync`` per reminder, run on the event loop, where it
also holds up every POST in flight. :class:`WebhookCommits` commits instead, in one FIFO slot
and one store transaction (:class:`~schedlog.host.batch.ReplacesMany`), every acknowledged
group that arrived since the last commit started:

* The first acknowledged group opens a batch and queues its slot (unchecked: it finishes
  deliveries accepted before a stop began); the next ones join it until the slot starts,
  at most :data:`MAX_COMMIT` groups.
* In the slot, each group's members are re-read and those edited or deleted while their POST
  was in flight are dropped (:func:`~schedlog.host.posting.still_planned`: the edit
  stands); the rest are written by one ``replace_many``, on a worker thread under load
  (:data:`THREADED_FROM`), so the loop keeps POSTing meanwhile; the FIFO, and so every other
  write, waits for the commit.
* Each group's caller returns only after that transaction is durable: a session's next group
  (:class:`~schedlog.host.inflight.SessionChains`) and a member's next occurrence are never
  sent before it. A failed transaction fails every group of the batch with its members, which
  stay due and are posted again, under the same ``messageId``, after their backoff. The
  batch's messages are reported (``report``: delivery lines, metrics) once, in order, at the
  end of its slot.

Each due task is decoded once, by the pass's scan (docs/decisions.md, "Webhook burst: one
decode per task"): the scanned tasks are trusted (:meth:`WebhookCommits.trust`) until a write
reports a change to one of them, which drops it. The decision and the commit's re-read
(:meth:`WebhookCommits.get`) take a trusted task as it is and read the store only for one that
was dropped. Every write of a store this host alone writes runs in a FIFO slot and reports
its change there, and both reads run in FIFO slots, so a trusted task is the stored one.

Only a store this host alone writes that rewrites many tasks at once from a worker thread
(:func:`~schedlog.host.batch.batchable`) commits in groups; a shared store keeps the commit
of one group under its leases.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterable, Sequence
from typing import Final, cast

from schedlog._crashpoints import crashpoint
from schedlog.host.batch import ReplacesMany, member_commits
from schedlog.host.changes import TaskChange
from schedlog.host.core import HostCore, InSlot
from schedlog.host.delivery import Delivered, GroupFailed
from schedlog.host.group_plan import Plan as _Plan
from schedlog.host.posting import still_planned
from schedlog.host.stores.base import StoredTask

__all__ = ["MAX_COMMIT", "THREADED_FROM", "WebhookCommits"]

#: The most acknowledged groups one commit takes (one FIFO slot, one store transaction).
MAX_COMMIT: Final = 1_000

#: The fewest groups in a commit, or started and not finished, for which the commit's write
#: runs on a worker thread (the loop keeps POSTing during its ``fsync``); else on the loop.
THREADED_FROM: Final = 8

_Outcome = Delivered | GroupFailed | None


class _Batch:
    """Acknowledged groups that share one FIFO slot and one store transaction."""

    def __init__(self) -> None:
        self.plans: list[_Plan] = []
        self.started = False
        self.done: asyncio.Future[list[_Outcome]] | None = None


class WebhookCommits:
    """Commits acknowledged webhook groups of ``core`` in groups (see the module); ``in_slot``
    runs a step in an unchecked FIFO slot, ``now`` is the host's clock."""

    def __init__(
        self,
        core: HostCore,
        now: Callable[[], int],
        in_slot: InSlot,
        load: Callable[[], int] = lambda: 0,
        report: Callable[[Sequence[Delivered]], None] = lambda sent: None,
    ) -> None:
        assert isinstance(core.store, ReplacesMany)
        self.core = core
        self.now = now
        self._in_slot = in_slot
        #: The groups started and not finished (the webhook deliveries in flight or waiting).
        self.load = load
        self._open: _Batch | None = None
        #: The fewest groups in a commit for which its write leaves the loop.
        self.threaded_from = THREADED_FROM
        #: Tells the listeners of a batch's messages (``_tell`` of schedlog/host/passes.py).
        self.report = report
        #: Ids this commit left inactive and no write has touched since (:meth:`settled`).
        self._inactive: set[str] = set()
        #: Scanned tasks no write has reported a change to since (:meth:`trust`).
        self._trusted: dict[str, StoredTask] = {}
        core.subscribe_changes(self._touched)

    def _touched(self, change: TaskChange) -> None:
        self._trusted.pop(change.id, None)
        if change.kind != "delivered":
            self._inactive.discard(change.id)

    def trust(self, scanned: Iterable[StoredTask]) -> None:
        """Trust the tasks a scan has just read (on the loop, with no write since) until a
        write reports a change to one, or :meth:`forget`."""
        for st in scanned:
            self._trusted[st.task.id] = st

    def forget(self, ids: Iterable[str]) -> None:
        """Stop trusting ``ids`` (their group has ended)."""
        for task_id in ids:
            self._trusted.pop(task_id, None)

    def get(self, task_id: str) -> StoredTask | None:
        """The stored task ``task_id``: the trusted one, else read from the store. Call it in a
        FIFO slot (no write runs meanwhile)."""
        st = self._trusted.get(task_id)
        return self.core.store.get(task_id) if st is None else st

    def settled(self, ids: tuple[str, ...]) -> bool:
        """Whether every one of ``ids`` was left inactive by a commit here and not written
        since (nothing of them is for the timer); forgets them."""
        found = [task_id in self._inactive for task_id in ids]
        self._inactive.difference_update(ids)
        return all(found)

    async def commit(self, plan: _Plan) -> Delivered | None:
        """Commit ``plan`` (its POST was acknowledged) with the others acknowledged meanwhile;
        returns its message once the transaction is durable, or raises :class:`GroupFailed`."""
        batch = self._open
        if batch is None or batch.started or len(batch.plans) >= MAX_COMMIT:
            batch = _Batch()
            self._open = batch
            # The slot returns its write, which the FIFO awaits before the next slot.
            slot = cast(Callable[[], list[_Outcome]], self._slot(batch))
            batch.done = asyncio.ensure_future(self._in_slot(slot))
        index = len(batch.plans)
        batch.plans.append(plan)
        assert batch.done is not None
        outcome = (await asyncio.shield(batch.done))[index]
        if isinstance(outcome, GroupFailed):
            raise outcome
        return outcome

    def _slot(self, batch: _Batch) -> Callable[[], Awaitable[list[_Outcome]]]:
        def start() -> Awaitable[list[_Outcome]]:
            batch.started = True  # no group joins once the slot runs
            if self._open is batch:
                self._open = None
            return self._write(batch.plans)

        return start

    async def _write(self, plans: list[_Plan]) -> list[_Outcome]:
        """The slot's work: re-read, one transaction off the loop, then index and report."""
        core = self.core
        kept = [still_planned(plan, self.get) for plan in plans]
        delivered_at = self.now()
        commits, tasks = member_commits(core, kept, delivered_at)
        if tasks:
            store = core.store
            assert isinstance(store, ReplacesMany)
            try:
                crashpoint("webhook.before_commit")
                if max(len(plans), self.load()) >= self.threaded_from:
                    loop = asyncio.get_running_loop()
                    await loop.run_in_executor(None, store.replace_many, tasks)
                else:  # a small commit stays on the loop: a thread hop costs more there
                    store.replace_many(tasks)
            except Exception as exc:
                return [
                    GroupFailed(tuple(st.task.id for st, _ in plan.members), exc) for plan in kept
                ]
            crashpoint("webhook.after_commit")
        changes: list[TaskChange] = []
        out: list[_Outcome] = []
        for plan, pairs in zip(kept, commits, strict=True):
            for st, task in pairs:
                core.due_tasks.reindex(StoredTask(st.seq, task))
                if not task.active:
                    self._inactive.add(task.id)
                changes.append(TaskChange(task.id, task.session_id, "delivered"))
            sent = plan.outgoing
            out.append(None if sent is None else sent.delivered._replace(delivered_at=delivered_at))
        core.notify(changes)
        self.report([sent for sent in out if isinstance(sent, Delivered)])
        return out
