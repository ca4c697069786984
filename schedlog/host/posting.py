"""The webhook path's steps outside the FIFO (docs/decisions.md, "Concurrent webhook delivery",
"Webhook delivery with several hosts"): the POST with the members' leases kept alive, and the
plan without the members edited or deleted while it was in flight.
:meth:`~schedlog.host.core.HostCore.deliver_group_to` runs them between its two FIFO slots.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence

import structlog

from schedlog.host.due import DueTasks
from schedlog.host.group_plan import Outgoing, Plan
from schedlog.host.stores.base import StoredTask
from schedlog.rules.decide import Decision

__all__ = ["post_under_lease", "still_planned"]

_log = structlog.get_logger("schedlog.host")


async def post_under_lease(
    due_tasks: DueTasks,
    ids: Sequence[str],
    outgoing: Outgoing,
    post: Callable[[Outgoing], Awaitable[None]],
    now: Callable[[], int],
    sleep_until: Callable[[int], Awaitable[None]] | None,
) -> None:
    """``post(outgoing)`` while keeping the leases of the members ``ids`` alive: renewed before
    it starts and every third of a lease until it ends. A lost lease (or a renewal that fails)
    cancels the POST: another host may be posting the same group by then, and this host
    could not commit it anyway. Without leases (a local store) it is just the POST."""
    lease_ms = due_tasks.lease_ms
    if lease_ms is None:
        await post(outgoing)
        return
    due_tasks.keep_leases(ids)
    sending = asyncio.ensure_future(post(outgoing))
    if sleep_until is None:  # no clock to renew on: the lease must outlast the POST
        await sending
        return
    every = max(1, lease_ms // 3)
    renewal: asyncio.Future[None] | None = None
    try:
        while True:
            renewal = asyncio.ensure_future(sleep_until(now() + every))
            await asyncio.wait({sending, renewal}, return_when=asyncio.FIRST_COMPLETED)
            if sending.done():
                sending.result()  # the sink's failure, if any
                return
            due_tasks.keep_leases(ids)
    finally:
        if renewal is not None:
            renewal.cancel()
        if not sending.done():
            sending.cancel()
            await asyncio.gather(sending, return_exceptions=True)


def still_planned(plan: Plan, get: Callable[[str], StoredTask | None]) -> Plan:
    """``plan`` without the members whose stored task (read by ``get``) changed since it was
    made (an edit or a deletion while the POST was in flight)."""
    kept: list[tuple[StoredTask, Decision]] = []
    for st, decision in plan.members:
        current = get(st.task.id)
        if current is not None and current.task == st.task:
            kept.append((st, decision))
        else:
            _log.info(
                "delivery.superseded",
                id=st.task.id,
                message=(
                    f"schedule: reminder {st.task.id} was edited or deleted while its "
                    "follow-up was being posted; the edit stands and nothing is committed"
                ),
            )
    return plan._replace(members=kept)
