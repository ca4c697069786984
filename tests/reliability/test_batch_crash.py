"""SIGKILL inside a batched delivery on the pool (schedlog/host/batch.py): after some sessions'
appends, between the new logs' file fsyncs and their directory's, between the appends and the
commit, inside the commit, mid-line and before a barrier.

The crash matrix (tests/reliability/test_crash_matrix.py) kills small passes, which stay on the
event loop; this burst is over 16 sessions, so the sessions run on the pool in parallel when the
process dies. Cut into two runs of 8 sessions, the second run's sessions are staged (appended)
while the first commits (docs/decisions.md "Pipelined runs"), so a kill in one run's commit can
leave the other's follow-ups half written. A restart must deliver every due member exactly
once: 0 lost, 0 duplicated.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from schedlog._crashpoints import ENV
from schedlog.host.sessions import SessionsDirectory
from schedlog.host.stores.sqlite import SqliteTaskStore
from tests.host.helpers import T0, followup_members, task

ROOT = Path(__file__).resolve().parents[2]
SESSIONS = [f"s-{i}" if i % 3 else f"<b>{i}</b> ü" for i in range(16)]
#: Members per run when the pass is cut into two runs (4 members per session).
TWO_RUNS = 32
NOW = T0 + 600_000

#: The child: one batched pass over the store, killed at the armed point.
CHILD = """
import asyncio, sys
from pathlib import Path
from schedlog.host import batch, passes
from schedlog.host.service import HostService
from schedlog.host.sessions import SessionsDirectory
from schedlog.host.stores.sqlite import SqliteTaskStore
from schedlog.runtime.clock import VirtualClock

async def main(root, now):
    store = SqliteTaskStore.open(root / "schedule.db")
    svc = HostService(store, SessionsDirectory(root / "sessions"), VirtualClock(now),
                      auto_drive=False)
    await svc.tick()
    await svc.aclose()

limit = int(sys.argv[3])
passes.chunks = lambda groups, max_sessions=None: batch.chunks(groups, limit, max_sessions)
asyncio.run(main(Path(sys.argv[1]), int(sys.argv[2])))
"""


def _tasks() -> list[object]:
    out = []
    for i, session in enumerate(SESSIONS):
        for j in range(3):
            out.append(task(f"schedule-{i:02d}-{j}", session, after_seconds=30 + 60 * j))
        out.append(task(f"schedule-{i:02d}-r", session, every_seconds=60))
    return out


def _pass(root: Path, point: str | None, limit: int = 1_000) -> int:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.pop(ENV, None)
    if point is not None:
        env[ENV] = point
    run = subprocess.run(
        [sys.executable, "-c", CHILD, str(root), str(NOW), str(limit)],
        env=env,
        capture_output=True,
        timeout=120,
        check=False,
    )
    return run.returncode


def _members(root: Path) -> list[tuple[str, str]]:
    return followup_members(root / "sessions")


@pytest.mark.parametrize(
    ("point", "limit"),
    [
        ("batch.after_session@1", 1_000),
        ("batch.after_session@7", 1_000),
        ("batch.before_commit", 1_000),
        ("sessions.before_directory_fsync", 1_000),
        ("sqlite_store.in_transaction", 1_000),
        ("eventlog.before_barrier@4", 1_000),
        ("eventlog.mid_line@9", 1_000),
        # Two runs, the second staged while the first commits.
        ("batch.before_commit", TWO_RUNS),
        ("sqlite_store.in_transaction", TWO_RUNS),
        ("batch.after_session@11", TWO_RUNS),
        ("batch.before_commit@2", TWO_RUNS),
        ("sessions.before_directory_fsync@2", TWO_RUNS),
        ("eventlog.mid_line@45", TWO_RUNS),
    ],
)
def test_kill_inside_a_batched_pass_loses_and_doubles_nothing(
    tmp_path: Path, point: str, limit: int
) -> None:
    store = SqliteTaskStore.open(tmp_path / "schedule.db")
    store.insert_many(_tasks())  # type: ignore[arg-type]
    store.close()
    assert _pass(tmp_path, point, limit) == -9  # killed at the point
    assert _pass(tmp_path, None, limit) == 0  # the restart's pass recovers
    members = _members(tmp_path)
    assert len(members) == len(set(members)), "a member delivered twice"
    due = {f"schedule-{i:02d}-{j}" for i in range(len(SESSIONS)) for j in ("0", "1", "2", "r")}
    assert {task_id for task_id, _ in members} == due, "a member lost"
    assert len(members) == len(due)  # a recurring rule: its latest missed occurrence only
    reopened = SqliteTaskStore.open(tmp_path / "schedule.db")  # validates every row
    try:
        for st in reopened.tasks():
            if st.task.record.is_one_shot:
                assert not st.task.active
            else:  # the latest missed occurrence only, then the next target
                assert st.task.record.scheduled_at > NOW
            assert st.task.last_delivery is not None
    finally:
        reopened.close()
    SessionsDirectory(tmp_path / "sessions").close()
