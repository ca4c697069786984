"""SIGKILL inside a batched claimed delivery on PostgreSQL (schedlog/host/batch_claims.py,
schedlog/host/stores/pg_batch.py): after some sessions' appends, between the appends and the
commit, inside the commit statement's transaction, mid-line and before a barrier.

The dead host's claims stay leased (its session locks end with its connection): a second host
claims nothing of its batch until the leases end, then takes the batch over and delivers every
due member exactly once: 0 lost, 0 duplicated, recovered from the logs where they were appended.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from schedlog._crashpoints import ENV
from tests import pg
from tests.host.helpers import T0, followup_members, task

pg.require_psycopg()

ROOT = Path(__file__).resolve().parents[2]
SESSIONS = [f"s-{i}" if i % 3 else f"<b>{i}</b> ü" for i in range(12)]
NOW = T0 + 600_000

#: The child: one batched pass of a host over the store, killed at the armed point.
CHILD = """
import asyncio, sys
from pathlib import Path
from schedlog.host.service import HostService
from schedlog.host.sessions import SessionsDirectory
from schedlog.host.stores.open import open_store
from schedlog.runtime.clock import VirtualClock

async def main(url, root, now):
    store = open_store(url)
    svc = HostService(store, SessionsDirectory(root / "sessions"), VirtualClock(now),
                      auto_drive=False)
    sent = await svc.tick()
    await svc.aclose()
    print(sum(len(d.members) for d in sent))

asyncio.run(main(sys.argv[1], Path(sys.argv[2]), int(sys.argv[3])))
"""


def _tasks() -> list[object]:
    out = []
    for i, session in enumerate(SESSIONS):
        for j in range(3):
            out.append(task(f"schedule-{i:02d}-{j}", session, after_seconds=30 + 60 * j))
        out.append(task(f"schedule-{i:02d}-r", session, every_seconds=60))
    return out


def _pass(url: str, root: Path, point: str | None) -> tuple[int, str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.pop(ENV, None)
    if point is not None:
        env[ENV] = point
    run = subprocess.run(
        [sys.executable, "-c", CHILD, url, str(root), str(NOW)],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    return run.returncode, run.stdout.strip()


def _members(root: Path) -> list[tuple[str, str]]:
    return followup_members(root / "sessions")


@pytest.mark.parametrize(
    "point",
    [
        "batch.after_session@1",
        "batch.after_session@7",
        "batch.before_commit",
        "pg_batch.in_commit",
        "eventlog.before_barrier@4",
        "eventlog.mid_line@9",
    ],
)
def test_kill_inside_a_batched_claim_loses_and_doubles_nothing(
    url: str, tmp_path: Path, point: str
) -> None:
    store = pg.pg_store(url)
    for t in _tasks():
        store.insert(t)
    store.close()
    code, _ = _pass(url, tmp_path, point)
    assert code == -9  # killed at the point
    before = _members(tmp_path)
    leased = pg.sql(url, "SELECT count(*) FROM schedlog_tasks WHERE lease_owner IS NOT NULL")
    assert leased == [(len(SESSIONS) * 4,)]  # the dead host's whole batch, still leased
    # A second host while the leases live: nothing of the dead host's batch is claimed.
    assert _pass(url, tmp_path, None) == (0, "0")
    assert _members(tmp_path) == before
    pg.sql(url, "UPDATE schedlog_tasks SET lease_until = now() - interval '1 second'")
    code, _ = _pass(url, tmp_path, None)  # the leases ended: the batch is taken over
    assert code == 0
    members = _members(tmp_path)
    assert len(members) == len(set(members)), "a member delivered twice"
    due = {f"schedule-{i:02d}-{j}" for i in range(len(SESSIONS)) for j in ("0", "1", "2", "r")}
    assert {task_id for task_id, _ in members} == due, "a member lost"
    assert len(members) == len(due)  # a recurring rule: its latest missed occurrence only
    reopened = pg.pg_store(url)
    try:
        for st in reopened.tasks():
            if st.task.record.is_one_shot:
                assert not st.task.active
            else:  # the latest missed occurrence only, then the next target
                assert st.task.record.scheduled_at > NOW
            assert st.task.last_delivery is not None
    finally:
        reopened.close()
    assert pg.sql(url, "SELECT count(*) FROM schedlog_tasks WHERE lease_owner IS NOT NULL") == [
        (0,)
    ]
