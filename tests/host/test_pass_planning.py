"""A large batched pass plans its groups off the loop (schedlog/host/passes.py,
docs/decisions.md "The API during a burst"): a write that lands while it plans is queued before
the pass's runs, and the runs read that task again, so a pause made then is never overwritten
by a delivery planned from the scan."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path
from typing import Any

import pytest

from schedlog.host import passes
from schedlog.host.batch import SCAN_OFF_LOOP_FROM
from schedlog.host.service import HostService
from schedlog.rules.instants import format_instant
from schedlog.runtime.clock import VirtualClock
from tests.host.helpers import T0, MemorySessions
from tests.host.test_service import args, run

#: A deadlock guard only (the planning thread waits for the test): not a timing.
GUARD_S = 60.0


def test_a_pause_while_a_large_pass_plans_is_kept(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    planning, go = threading.Event(), threading.Event()
    real = passes.plan_groups

    def held_plan(due: Any) -> Any:
        planning.set()
        assert go.wait(GUARD_S)
        return real(due)

    async def body(svc: HostService, clock: VirtualClock, sessions: MemorySessions) -> None:
        at = format_instant(T0 + 60_000)
        ids = [
            (await svc.create(f"s-<{i % 5}>", args(f"r{i} &amp;", at=at))).id
            for i in range(SCAN_OFF_LOOP_FROM + 6)
        ]
        clock.set(T0 + 120_000)
        monkeypatch.setattr(passes, "plan_groups", held_plan)
        tick = asyncio.ensure_future(svc.tick())
        try:
            assert await asyncio.to_thread(planning.wait, GUARD_S)  # the pass is planning
            await asyncio.wait_for(svc.pause("s-<0>", ids[0]), GUARD_S)
        finally:
            go.set()
        sent = await asyncio.wait_for(tick, GUARD_S)
        delivered = {m.id for message in sent for m in message.members}
        assert delivered == set(ids[1:])
        found = svc.core.store.get(ids[0])
        assert found is not None and found.task.paused and found.task.active
        assert ids[0] not in {m.id for s in sessions.sessions.values() for m in s.delivered}

    run(tmp_path, "sqlite", body)
