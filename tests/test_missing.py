"""The end-of-run lines about what this machine could not run (tests/missing.py), and the
cleaning of the PostgreSQL test databases an interrupted run left behind (tests/pg.py)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tests import pg
from tests.missing import PIECES, summary_lines

ROOT = Path(__file__).resolve().parent.parent


def test_one_line_per_missing_piece() -> None:
    reasons = [
        "Skipped: [needs PostgreSQL] no server to test against at postgresql://h:1 (refused)",
        "Skipped: [needs Chromium] no chromium",
        "Skipped: [needs PostgreSQL] no server to test against at postgresql://h:1 (refused)",
        "Skipped: opt-in, not a missing piece",
    ]
    lines = summary_lines(reasons)
    assert lines == [
        f"SKIPPED 1 test needing Chromium: no chromium. To run them: {PIECES['Chromium']}.",
        "SKIPPED 2 tests needing PostgreSQL: no server to test against at postgresql://h:1 "
        f"(refused). To run them: {PIECES['PostgreSQL']}.",
    ]
    assert summary_lines(['Skipped: <&"\ud800 odd']) == []


def test_a_run_prints_the_lines_at_its_end(tmp_path: Path) -> None:
    """A real pytest run in a subprocess: tests that need an absent piece skip one by one, and
    the run ends with one line for them, after the counts."""
    (tmp_path / "test_probe.py").write_text(
        textwrap.dedent(
            """
            import pytest
            from tests.missing import missing

            @pytest.mark.parametrize("n", range(3))
            def test_needs_chromium(n):
                missing("Chromium", "no chromium at /nowhere")

            def test_runs():
                pass
            """
        ),
        "utf-8",
    )
    env = {k: v for k, v in os.environ.items() if k != "CI"}
    env["PYTHONPATH"] = str(ROOT)
    command = [sys.executable, "-m", "pytest", "-p", "tests.conftest", str(tmp_path)]
    command += ["-q", "-p", "no:cacheprovider", "--rootdir", str(tmp_path)]
    done = subprocess.run(command, capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    expected = "SKIPPED 3 tests needing Chromium: no chromium at /nowhere. To run them: "
    expected += f"{PIECES['Chromium']}."
    assert done.stdout.count("needing Chromium") == 1
    assert expected in done.stdout
    env["CI"] = "true"
    failed = subprocess.run(command, capture_output=True, text=True, env=env, timeout=120)
    assert failed.returncode == 1 and "3 failed, 1 passed" in failed.stdout


def _dead_pid() -> int:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


def test_stale_names_need_this_host_and_a_dead_pid() -> None:
    tag, other = pg.host_tag(), "0" * 8 if pg.host_tag() != "0" * 8 else "1" * 8
    live, dead = os.getpid(), _dead_pid()
    names = [
        f"schedlog_t_{tag}_{dead}_abcdef",  # ours, its run ended: stale
        f"schedlog_t_{tag}_{live}_abcdef",  # a live run's
        f"schedlog_t_{other}_{dead}_abcdef",  # another machine's
        "schedlog_t_0123456789ab",  # the old format: no pid to check
        "test",
    ]
    assert pg.stale(names, tag, pg.pid_alive) == [names[0]]
    assert pg.database_name().startswith(f"schedlog_t_{tag}_{live}_")
    assert len(pg.database_name()) <= 63


def test_drop_stale_drops_only_dead_runs_databases() -> None:
    conn = pg.admin()
    try:
        dead_name = f"schedlog_t_{pg.host_tag()}_{_dead_pid()}_0dead0"
        live_name = pg.database_name()
        for name in (dead_name, live_name):
            conn.execute(f'CREATE DATABASE "{name}"')
        try:
            dropped = pg.drop_stale(conn)
            names = {row[0] for row in conn.execute("SELECT datname FROM pg_database")}
            assert dead_name in dropped and dead_name not in names
            assert live_name in names and live_name not in dropped
        finally:
            for name in (dead_name, live_name):
                conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
    finally:
        conn.close()


def test_admin_falls_back_to_a_maintenance_database(monkeypatch: pytest.MonkeyPatch) -> None:
    pg.admin().close()  # skips (fails under CI=true) without a server
    url = pg.with_database(pg.server_url(), "schedlog_no_such_database")
    monkeypatch.setenv("SCHEDLOG_TEST_POSTGRES", url)
    conn = pg.admin()
    try:
        (name,) = conn.execute("SELECT current_database()").fetchone()
        assert name in ("postgres", "template1")
    finally:
        conn.close()
