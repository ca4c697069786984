"""Corrupt files are never modified by what refuses them (issue 6 item 3;
docs/protocol.md#torn-tail, docs/protocol.md#open-failures, docs/cli.md#schedlog).

For every session-log fixture that is invalid, and for every store open failure (a malformed
medium, a version mismatch, an invalid record; JSON documents and SQLite files, including a
crash-left write-ahead log), each command and service start that refuses the file runs against
it, and afterwards the file's SHA-256 and its directory listing are unchanged: nothing is
rewritten, truncated or repaired, and no ``-wal``, ``-shm``, ``-journal`` or temporary file
appears. The one side file allowed is ``<store>.lock``, the empty lock file that opening a store
takes (docs/decisions.md).
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import io
import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import structlog

from schedlog.cli.main import main as schedlog_main
from schedlog.errors import CorruptScheduleError, StoreOpenError
from schedlog.eventlog import fork_log, read_log
from schedlog.host.sessions import encode_session_id
from schedlog.host.stores.open import open_store
from schedlog.invariant.appender import LogAppender
from schedlog.runtime.clock import VirtualClock
from schedlog.runtime.engine import SessionEngine
from schedlog.runtime.session_file import FileSession
from tests.host.test_open_failures import JSON_CASES, SQLITE_CASES, _make
from tests.runtime.helpers import ms, run_session_batch

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "fixtures" / "logs"
NOW = "2026-05-01T08:00:00Z"
LATER = "2027-01-01T00:00:00Z"


def _expected(log: Path) -> dict[str, Any]:
    value: dict[str, Any] = json.loads((FIXTURES / f"{log.stem}.expected.json").read_text())
    return value


INVALID_LOGS = [p for p in sorted(FIXTURES.glob("*.jsonl")) if not _expected(p)["validate"]["ok"]]
#: Logs whose corruption is a complete line (docs/protocol.md#torn-tail), not only the fold of the
# owned suffix:
#: the host, which does not fold legacy schedule events, refuses only these
# (docs/protocol.md#legacy-events, docs/concepts.md#delivery-guarantees).
LINE_CORRUPT_LOGS = [p for p in INVALID_LOGS if read_log(p).corruption is not None]


def test_the_fixture_set_is_what_we_think() -> None:
    assert len(INVALID_LOGS) >= 30
    assert 8 <= len(LINE_CORRUPT_LOGS) < len(INVALID_LOGS)


# --- helpers ---------------------------------------------------------------------------------


def snapshot(directory: Path) -> dict[str, str]:
    """Every file of ``directory`` (recursively) -> its SHA-256."""
    return {
        str(p.relative_to(directory)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(directory.rglob("*"))
        if p.is_file()
    }


def assert_unchanged(before: dict[str, str], directory: Path, *, lock: str | None = None) -> None:
    """Same files, same bytes; ``lock`` (an empty store lock file) may have appeared."""
    after = snapshot(directory)
    if lock is not None and lock not in before:
        assert after.pop(lock, hashlib.sha256(b"").hexdigest()) == hashlib.sha256(b"").hexdigest()
    assert after == before


@contextlib.contextmanager
def _quiet_structlog() -> Iterator[None]:
    """The batch commands configure structlog for their process; give the test's back."""
    saved = structlog.get_config()
    try:
        yield
    finally:
        structlog.configure(**saved)


def cli(argv: list[str], stdin: str = "") -> tuple[int, list[str]]:
    """Run ``schedlog ARGV`` in process; the exit status and the stdout lines."""
    out, err = io.StringIO(), io.StringIO()
    with (
        _quiet_structlog(),
        contextlib.redirect_stdout(out),
        contextlib.redirect_stderr(err),
        pytest.MonkeyPatch.context() as patch,
    ):
        patch.setattr(sys, "stdin", io.StringIO(stdin))
        code = schedlog_main(argv)
    return code, out.getvalue().splitlines()


def _copy_log(fixture: Path, directory: Path, name: str | None = None) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / (name or fixture.name)
    path.write_bytes(fixture.read_bytes())
    return path


# --- session logs ----------------------------------------------------------------------------


@pytest.mark.parametrize("fixture", INVALID_LOGS, ids=[p.stem for p in INVALID_LOGS])
def test_session_log_refusals_leave_the_log_alone(tmp_path: Path, fixture: Path) -> None:
    logs = tmp_path / "logs"
    log = _copy_log(fixture, logs)
    before = snapshot(logs)

    # The offline commands (docs/cli.md#schedlog): validate and replay fail, repair refuses.
    code, lines = cli(["validate", "--json", str(log)])
    assert code == 1 and json.loads(lines[0])["ok"] is False
    code, lines = cli(["replay", "--json", "--log", str(log)])
    assert code == 1 and "error" in json.loads(lines[0])
    code, lines = cli(["replay", "--json", "--log", str(log), "--at", NOW])
    assert code == 1
    for extra in ([], ["--dry-run"]):
        code, lines = cli(["repair", "--json", "--log", str(log), *extra])
        assert code == 1 and json.loads(lines[0])["truncatedBytes"] == 0
    assert_unchanged(before, logs)

    # session batch (docs/protocol.md#batch-session): every operation, through the real command.
    requests = [
        {"op": "schedule_create", "now": NOW, "args": {"prompt": "p", "after_seconds": 60}},
        {"op": "schedule_list", "now": NOW, "args": {}},
        {"op": "schedule_delete", "now": NOW, "args": {"id": "schedule-1"}},
        {"op": "tick", "now": LATER},
        {"op": "archive_activity", "now": LATER},
        {"op": "archive_stop", "now": LATER},
    ]
    stdin = "".join(json.dumps(r) + "\n" for r in requests)
    code, lines = cli(["session", "batch", "--log", str(log), "--session-id", "s-new"], stdin)
    answers = [json.loads(line) for line in lines]
    assert code == 0 and len(answers) == len(requests)
    assert answers[0]["ok"]["code"] == "corrupt_schedule_log"
    assert answers[1]["ok"]["code"] == "corrupt_schedule_log"
    assert answers[2]["ok"]["code"] == "corrupt_schedule_log"
    assert answers[3] == {"ok": {"delivered": []}}
    assert_unchanged(before, logs)

    # Library opens: the appender, the live engine, a fork of it.
    with pytest.raises(CorruptScheduleError):
        LogAppender.open(log, session_id="s-new")
    asyncio.run(_live_engine_refuses(log))
    with contextlib.suppress(CorruptScheduleError, ValueError):
        fork_log(log, 0, "child", tmp_path / "child.jsonl")
    assert_unchanged(before, logs)

    # migrate reads the log (docs/operations.md#migration: "the session log is never modified").
    code, lines = cli(["migrate", "--log", str(log), "--store", str(tmp_path / "s.db")])
    assert code == 1 and json.loads(lines[0])["error"]["code"] == "corrupt_schedule_log"
    assert_unchanged(before, logs)


async def _live_engine_refuses(log: Path) -> None:
    session = FileSession(log, session_id="s-new")
    engine = SessionEngine(session, session, VirtualClock(ms(LATER)))
    engine.start()
    try:
        created = await engine.schedule_create({"prompt": "p", "after_seconds": 60})
        assert created == {"code": "corrupt_schedule_log", "message": created["message"]}
        for _ in range(100):  # the owner's first drive runs on the loop
            if engine.owner.state == "faulted":
                break
            await asyncio.sleep(0)
        assert engine.owner.state == "faulted"
        assert engine.archive_activity() is None
    finally:
        await engine.dispose()
        session.close()


def test_direct_batch_session_on_a_corrupt_log(tmp_path: Path) -> None:
    """The library's batch session (no CLI) refuses the same way."""
    log = _copy_log(FIXTURES / "garbage-mid-file.jsonl", tmp_path)
    before = snapshot(tmp_path)
    out = run_session_batch(
        log, [{"op": "schedule_create", "now": NOW, "args": {"prompt": "p", "after_seconds": 9}}]
    )
    assert json.loads(out[0])["ok"]["code"] == "corrupt_schedule_log"
    assert_unchanged(before, tmp_path)


@pytest.mark.parametrize("fixture", LINE_CORRUPT_LOGS, ids=[p.stem for p in LINE_CORRUPT_LOGS])
def test_host_delivery_into_a_corrupt_log_leaves_it_alone(tmp_path: Path, fixture: Path) -> None:
    """A host delivery group whose session log is corrupt fails (docs/protocol.md#host-delivery,
    docs/concepts.md#delivery-guarantees); the log is not truncated, repaired or appended to, and
    the reminder stays due."""
    sessions = tmp_path / "sessions"
    session = "victim/1"
    _copy_log(fixture, sessions, f"{encode_session_id(session)}.jsonl")
    before = snapshot(sessions)
    store = tmp_path / "store" / "schedule.db"
    store.parent.mkdir()
    create = {"prompt": "p", "title": "t", "after_seconds": 60}
    requests = [
        {"op": "schedule_create", "session": session, "now": NOW, "args": create},
        {"op": "tick", "now": LATER},
        {"op": "schedule_list", "session": session, "now": LATER, "args": {}},
    ]
    stdin = "".join(json.dumps(r) + "\n" for r in requests)
    argv = ["host", "batch", "--store", str(store), "--sessions", str(sessions)]
    code, lines = cli(argv, stdin)
    answers = [json.loads(line) for line in lines]
    assert code == 0
    assert answers[1] == {"ok": {"delivered": []}}
    assert [v["state"] for v in answers[2]["ok"]] == ["overdue"]
    assert_unchanged(before, sessions)


# --- stores ----------------------------------------------------------------------------------


def _sqlite_with_wal(path: Path, *, keep_shm: bool) -> None:
    """A store whose committed, invalid row is still in the write-ahead log of a process that
    died without closing it."""
    code = (
        "import os, sqlite3, sys\n"
        "from schedlog.host.stores.sqlite import SCHEMA\n"
        "conn = sqlite3.connect(sys.argv[1], isolation_level=None)\n"
        "conn.executescript(SCHEMA)\n"
        "conn.execute('PRAGMA journal_mode=WAL')\n"
        "conn.execute(\"INSERT INTO tasks (id, session_id, body) VALUES ('schedule-1', 's-1', "
        "'{not json')\")\n"
        "os._exit(0)\n"
    )
    subprocess.run([sys.executable, "-c", code, str(path)], check=True, cwd=ROOT, timeout=120)
    assert Path(f"{path}-wal").stat().st_size > 0
    if not keep_shm:
        Path(f"{path}-shm").unlink()


def _sqlite_truncated(path: Path) -> None:
    store = open_store(path)
    store.close()
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2 + 100])


STORE_CASES: list[tuple[str, str, str, Any]] = [
    *((f"json-{name}", "schedule.json", code, text) for name, text, code in JSON_CASES),
    ("json-invalid-utf8", "schedule.json", "malformed-medium", b'{"unit":"\xff"}'),
    *((f"sqlite-{kind}", "schedule.db", code, kind) for kind, code in SQLITE_CASES),
    ("sqlite-truncated", "schedule.db", "malformed-medium", _sqlite_truncated),
    (
        "sqlite-wal-invalid-record",
        "schedule.db",
        "invalid-record",
        lambda p: _sqlite_with_wal(p, keep_shm=True),
    ),
    (
        "sqlite-wal-invalid-record-no-shm",
        "schedule.db",
        "invalid-record",
        lambda p: _sqlite_with_wal(p, keep_shm=False),
    ),
]


def _build_store(path: Path, maker: Any) -> None:
    if isinstance(maker, bytes):
        path.write_bytes(maker)
    elif isinstance(maker, str) and path.suffix == ".json":
        path.write_text(maker)
    elif isinstance(maker, str):
        _make(maker, path)
    else:
        maker(path)


@pytest.mark.parametrize(
    ("name", "filename", "code", "maker"), STORE_CASES, ids=[c[0] for c in STORE_CASES]
)
def test_store_refusals_leave_the_store_alone(
    tmp_path: Path, name: str, filename: str, code: str, maker: Any
) -> None:
    folder = tmp_path / "store"
    folder.mkdir()
    store = folder / filename
    _build_store(store, maker)
    lock = f"{filename}.lock"
    before = snapshot(folder)
    sessions = tmp_path / "sessions"
    log = _copy_log(FIXTURES / "valid-chatter.jsonl", tmp_path / "logs")
    backend = "json" if filename.endswith(".json") else "sqlite"

    # The library open (docs/protocol.md#open-failures).
    with pytest.raises(StoreOpenError) as info:
        open_store(store)
    assert info.value.code == code
    assert_unchanged(before, folder, lock=lock)

    # validate --store (docs/cli.md#validate).
    status, lines = cli(["validate", "--json", "--store", str(store), "--backend", backend])
    report = json.loads(lines[0])
    assert status == 1 and report["ok"] is False and report["error"]["code"] == code

    # host batch (docs/protocol.md#batch-host): every line gets the open failure.
    requests = [
        {"op": "schedule_list", "session": "s-1", "now": NOW, "args": {}},
        {"op": "tick", "now": LATER},
        "not even json",
    ]
    stdin = "".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in requests)
    argv = ["host", "batch", "--store", str(store), "--sessions", str(sessions)]
    status, lines = cli(argv, stdin)
    assert status == 0 and [json.loads(x)["error"]["code"] for x in lines] == [code] * 3

    # host run start-up, the read commands and migrate refuse too.
    status, lines = cli(["host", "run", "--store", str(store), "--sessions", str(sessions)])
    assert status == 1
    status, lines = cli(["host", "catalog", "--json", "--store", str(store)])
    assert status == 1 and json.loads(lines[0])["error"]["code"] == code
    history = ["host", "history", "--json", "--store", str(store), "--session", "s", "--id", "x"]
    status, lines = cli(history)
    assert status == 1 and json.loads(lines[0])["error"]["code"] == code
    status, lines = cli(["migrate", "--log", str(log), "--store", str(store)])
    assert status == 1 and json.loads(lines[0])["error"]["code"] == code

    assert_unchanged(before, folder, lock=lock)
    assert not sessions.exists()  # a refused service never reached a session
