"""``schedlog validate --store`` (docs/cli.md#validate): the store report, each open failure
(docs/protocol.md#open-failures), and no file created, written or locked (every file of the store's
directory hashed before and after, so the listing is compared too)."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path
from typing import Any

import pytest

from schedlog.cli.main import main
from schedlog.host.stores.base import StoreLockedError
from schedlog.host.stores.open import Backend, open_store
from schedlog.host.validate import validate_store_report
from tests.host.helpers import task
from tests.host.test_open_failures import GOOD_TASK, JSON_CASES, SQLITE_CASES, _make, doc

REPO = Path(__file__).resolve().parents[2]


def listing(directory: Path) -> dict[str, str]:
    """Every file of ``directory`` (recursively) -> its sha256: the listing and the bytes."""
    return {
        str(p.relative_to(directory)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(directory.rglob("*"))
        if p.is_file()
    }


def validate(
    capsys: pytest.CaptureFixture[str], path: Path, *extra: str
) -> tuple[int, dict[str, Any]]:
    """Run ``schedlog validate --store PATH …`` through the CLI entry; (exit, the one report)."""
    code = main(["validate", "--store", str(path), *extra])
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 1, lines
    report: dict[str, Any] = json.loads(lines[0])
    return code, report


def make_store(path: Path, n: int, backend: Backend | None = None) -> None:
    s = open_store(path, backend)
    try:
        for i in range(n):
            s.insert(task(f"schedule-{i}", session=f"s-{i % 2}"))
    finally:
        s.close()


@pytest.fixture
def private_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Point :mod:`tempfile` at a folder of the test, to check snapshots are cleaned up."""
    folder = tmp_path / "private-tmp"
    folder.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(folder))
    return folder


# --- valid stores ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "backend"), [("schedule.db", "sqlite"), ("schedule.json", "json")]
)
def test_valid_store_reports_its_tasks_and_is_untouched(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str, backend: str
) -> None:
    path = tmp_path / name
    make_store(path, 3)
    before = listing(tmp_path)
    code, report = validate(capsys, path)
    assert (code, report) == (0, {"path": str(path), "kind": "store", "ok": True, "tasks": 3})
    code, report = validate(capsys, path, "--backend", backend)
    assert (code, report["ok"], report["tasks"]) == (0, True, 3)
    assert listing(tmp_path) == before


def test_backend_flag_overrides_the_file_name(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    sqlite_named_json = tmp_path / "tasks.json"
    make_store(sqlite_named_json, 2, "sqlite")
    json_named_db = tmp_path / "tasks.db"
    make_store(json_named_db, 1, "json")
    before = listing(tmp_path)
    assert validate(capsys, sqlite_named_json, "--backend", "sqlite")[1]["tasks"] == 2
    assert validate(capsys, json_named_db, "--backend", "json")[1]["tasks"] == 1
    # the wrong backend is a malformed medium, not a crash
    code, report = validate(capsys, sqlite_named_json)
    assert (code, report["error"]["code"]) == (1, "malformed-medium")
    code, report = validate(capsys, json_named_db)
    assert (code, report["error"]["code"]) == (1, "malformed-medium")
    assert listing(tmp_path) == before


def test_hand_written_json_store(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "schedule.json"
    path.write_text(doc({"schedule-1": GOOD_TASK}))
    before = listing(tmp_path)
    assert validate(capsys, path) == (
        0,
        {"path": str(path), "kind": "store", "ok": True, "tasks": 1},
    )
    assert listing(tmp_path) == before


def test_zero_length_sqlite_file_is_an_empty_store(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # open_store initializes such a file (docs/protocol.md#store-sqlite), so the service would open
    # it: ok, 0 tasks.
    path = tmp_path / "schedule.db"
    path.write_bytes(b"")
    before = listing(tmp_path)
    assert validate(capsys, path) == (
        0,
        {"path": str(path), "kind": "store", "ok": True, "tasks": 0},
    )
    assert listing(tmp_path) == before
    assert path.read_bytes() == b""


# --- open failures ----------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["schedule.db", "schedule.json"])
def test_missing_store_is_a_failure_and_is_not_created(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str
) -> None:
    path = tmp_path / name
    code, report = validate(capsys, path)
    assert code == 1
    assert report["path"] == str(path)
    assert (report["kind"], report["ok"], report["tasks"]) == ("store", False, None)
    assert report["error"]["code"] == "store-not-found"
    assert "does not exist" in report["error"]["message"]
    assert list(tmp_path.iterdir()) == []  # no store, no lock file, no -wal/-shm


def test_directory_is_a_malformed_medium(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = tmp_path / "schedule.db"
    folder.mkdir()
    code, report = validate(capsys, folder)
    assert (code, report["error"]["code"]) == (1, "malformed-medium")
    assert listing(tmp_path) == {}


@pytest.mark.parametrize(
    ("text", "code"), [c[1:] for c in JSON_CASES], ids=[c[0] for c in JSON_CASES]
)
def test_json_open_failure_is_reported_and_bytes_kept(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str, code: str
) -> None:
    path = tmp_path / "schedule.json"
    path.write_text(text)
    before = listing(tmp_path)
    exit_code, report = validate(capsys, path)
    assert exit_code == 1
    assert set(report) == {"path", "kind", "ok", "tasks", "error"}
    assert (report["ok"], report["tasks"], report["error"]["code"]) == (False, None, code)
    assert set(report["error"]) == {"code", "message"} and report["error"]["message"]
    assert listing(tmp_path) == before


@pytest.mark.parametrize(("kind", "code"), SQLITE_CASES, ids=[c[0] for c in SQLITE_CASES])
def test_sqlite_open_failure_is_reported_and_bytes_kept(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], kind: str, code: str
) -> None:
    path = tmp_path / "schedule.db"
    _make(kind, path)
    before = listing(tmp_path)
    exit_code, report = validate(capsys, path)
    assert exit_code == 1
    assert (report["ok"], report["tasks"], report["error"]["code"]) == (False, None, code)
    assert listing(tmp_path) == before  # no -wal, -shm, -journal or .lock appeared


def test_failure_and_logs_in_one_run_exit_1(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "schedule.json"
    path.write_text("{")
    log = tmp_path / "empty.jsonl"
    log.write_bytes(b"")
    assert main(["validate", "--store", str(path), str(log)]) == 1
    store_report, log_report = (json.loads(x) for x in capsys.readouterr().out.splitlines())
    assert (store_report["kind"], store_report["ok"]) == ("store", False)
    assert (log_report["kind"], log_report["ok"]) == ("session-log", True)


def test_unknown_backend_is_a_usage_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as info:
        main(["validate", "--store", str(tmp_path / "s.db"), "--backend", "postgres"])
    assert info.value.code == 2
    with pytest.raises(ValueError, match="backend"):
        validate_store_report(str(tmp_path / "s.db"), "postgres")
    assert list(tmp_path.iterdir()) == []


# --- SQLite with a pending write-ahead log ----------------------------------------------------

CRASH = textwrap.dedent(
    """
    import os, sys
    from schedlog.host.stores.open import open_store
    from tests.host.helpers import task
    s = open_store(sys.argv[1])
    for i in range(int(sys.argv[2])):
        s.insert(task(f"schedule-late-{i}"))
    if len(sys.argv) > 3:  # a bad row committed straight into the log
        body = '{"sessionId":"s-1"}'
        s._conn.execute("UPDATE tasks SET body = ? WHERE id = 'schedule-late-0'", (body,))
    os._exit(0)  # a crash: no checkpoint, the -wal and -shm files stay
    """
)


def crash_after_writes(path: Path, n: int, *, corrupt: bool = False) -> None:
    argv = [sys.executable, "-c", CRASH, str(path), str(n)] + (["corrupt"] if corrupt else [])
    subprocess.run(argv, check=True, cwd=REPO)
    assert Path(f"{path}-wal").stat().st_size > 0


def test_crash_left_wal_is_read_through_a_private_copy(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], private_tmp: Path
) -> None:
    store_dir = tmp_path / "store"
    store_dir.mkdir()
    path = store_dir / "schedule.db"
    make_store(path, 2)
    crash_after_writes(path, 3)
    before = listing(store_dir)
    assert {"schedule.db-wal", "schedule.db-shm"} <= set(before)
    code, report = validate(capsys, path)
    # the three tasks committed only to the log are counted
    assert (code, report["ok"], report["tasks"]) == (0, True, 5)
    assert listing(store_dir) == before
    assert list(private_tmp.iterdir()) == []  # the copy is gone


def test_invalid_row_in_the_wal_names_the_store(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], private_tmp: Path
) -> None:
    store_dir = tmp_path / "store"
    store_dir.mkdir()
    path = store_dir / "schedule.db"
    make_store(path, 1)
    crash_after_writes(path, 2, corrupt=True)
    before = listing(store_dir)
    code, report = validate(capsys, path)
    assert (code, report["ok"], report["error"]["code"]) == (1, False, "invalid-record")
    assert "schedule-late-0" in report["error"]["message"]
    assert str(private_tmp) not in report["error"]["message"]
    assert listing(store_dir) == before
    assert list(private_tmp.iterdir()) == []


def test_store_open_in_a_service_is_validated_without_taking_its_lock(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], private_tmp: Path
) -> None:
    path = tmp_path / "schedule.db"
    live = open_store(path)
    try:
        for i in range(4):
            live.insert(task(f"schedule-{i}"))
        before = listing(tmp_path)
        code, report = validate(capsys, path)
        assert (code, report["tasks"]) == (0, 4)
        # One WAL read transaction beside the service: the database, its log and the lock file
        # keep their bytes. The -shm wal-index is the live connections' shared memory (no
        # persistent content); a reader registers its snapshot there, as every WAL reader must.
        after = listing(tmp_path)
        assert after.keys() == before.keys()
        assert {k: v for k, v in after.items() if not k.endswith("-shm")} == {
            k: v for k, v in before.items() if not k.endswith("-shm")
        }
        with pytest.raises(StoreLockedError):  # the service still owns the store
            open_store(path)
        live.insert(task("schedule-4"))  # and keeps writing
    finally:
        live.close()
    assert validate(capsys, path)[1]["tasks"] == 5
