"""Readers beside a writer (issue 23 item 4, docs/decisions.md "Readers beside a writer").

A real writer process holds a SQLite store (the store lock, its WAL connections); the read
commands (``host catalog``, ``host history``, ``validate --store``) and :func:`read_tasks` run
in other processes beside it. They see every committed write and never half a transaction,
change no byte of the database or its log, create no file and take no write lock; a second
writer is still refused with ``store-locked``. Waits poll with deadlines; nothing sleeps.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from schedlog.host.stores.open import read_tasks
from schedlog.host.stores.sqlite import SqliteTaskStore
from schedlog.host.stores.sqlite_validate import writer_holds
from tests.host.helpers import sha256_files, task

#: Tasks a transaction of the writer inserts together: a reader sees a multiple of it, or it
#: saw half a transaction.
BATCH = 10
#: Hostile text in the stored prompts (markup, an escaped lone surrogate, a long value), long
#: enough that the writer's log passes SQLite's automatic checkpoint while the readers read.
PROMPT = '<b>&amp;</b> "q" \\ud800 ' + "é" * 3000

WRITER = r"""
import sys
from pathlib import Path
from schedlog.host.stores.sqlite import SqliteTaskStore
from schedlog.host.task import new_task
from schedlog.rules.records import build_host_record

store = SqliteTaskStore.open(Path(sys.argv[1]))
prompt, size = sys.argv[2], int(sys.argv[3])
print("ready", flush=True)
n = 0
for line in sys.stdin:
    for _ in range(int(line)):
        args = {"prompt": prompt, "title": f"<i>{n}</i>", "after_seconds": 600}
        batch = [
            new_task(f"s-{n % 3}", build_host_record(args, id=f"schedule-{n}-{i}", now=0))
            for i in range(size)
        ]
        store.insert_many(batch)
        n += 1
    print(f"committed {n}", flush=True)
store.close()
"""


class Writer:
    """A process that holds the store and inserts ``BATCH`` tasks per transaction on demand."""

    def __init__(self, store: Path) -> None:
        root = Path(__file__).resolve().parents[2]
        self.proc = subprocess.Popen(
            [sys.executable, "-c", WRITER, str(store), PROMPT, str(BATCH)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            cwd=root,
            env={**os.environ, "PYTHONPATH": str(root)},
        )
        assert self.read_line() == "ready", self.proc.stderr and self.proc.stderr.read()

    def read_line(self) -> str:
        """The writer's next stdout line; bounded by the writer's own lifetime (the pipe ends)."""
        assert self.proc.stdout is not None
        timer = threading.Timer(120, self.proc.kill)  # a hung writer ends the test, not CI
        timer.start()
        try:
            return self.proc.stdout.readline().strip()
        finally:
            timer.cancel()

    def commit(self, transactions: int) -> int:
        """Ask for ``transactions`` more transactions; the total committed once they are."""
        assert self.proc.stdin is not None
        self.proc.stdin.write(f"{transactions}\n")
        self.proc.stdin.flush()
        line = self.read_line()
        assert line.startswith("committed "), line
        return int(line.split()[1])

    def start(self, transactions: int) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(f"{transactions}\n")
        self.proc.stdin.flush()

    def close(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        self.proc.wait(timeout=60)
        for stream in (self.proc.stdout, self.proc.stderr):
            if stream is not None:
                stream.close()


@pytest.fixture
def writer(tmp_path: Path) -> Iterator[Writer]:
    w = Writer(tmp_path / "schedule.db")
    try:
        yield w
    finally:
        w.close()


def schedlog(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "schedlog.cli.main", *argv],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_readers_see_every_commit_and_never_half_a_transaction(
    tmp_path: Path, writer: Writer
) -> None:
    store = tmp_path / "schedule.db"
    assert writer_holds(store)
    for expected in range(1, 31):  # after each commit: exactly what was committed, fresh
        assert writer.commit(1) == expected
        tasks = read_tasks(store)
        assert len(tasks) == expected * BATCH
        assert [st.seq for st in tasks] == sorted(st.seq for st in tasks)
    writer.start(150)  # now write while the reader reads, across automatic checkpoints
    seen = [len(read_tasks(store)) for _ in range(60)]
    assert writer.read_line() == "committed 180"
    assert all(n % BATCH == 0 for n in seen), seen
    assert seen == sorted(seen)
    assert len(read_tasks(store)) == 180 * BATCH


def test_read_commands_work_beside_the_writer_and_change_nothing(
    tmp_path: Path, writer: Writer
) -> None:
    store = tmp_path / "schedule.db"
    writer.commit(3)
    names = sorted(os.listdir(tmp_path))
    assert names == sorted(f"schedule.db{s}" for s in ("", "-shm", "-wal", ".lock"))
    before = sha256_files(store, Path(f"{store}-wal"), Path(f"{store}.lock"))

    catalog = schedlog("host", "catalog", "--store", str(store), "--json")
    assert catalog.returncode == 0, catalog.stderr
    entries = [json.loads(line) for line in catalog.stdout.splitlines()]
    assert len(entries) == 3 * BATCH and {e["sessionId"] for e in entries} == {"s-0", "s-1", "s-2"}
    piped = schedlog("host", "catalog", "--store", str(store))  # not a terminal: JSON Lines
    assert piped.returncode == 0 and piped.stdout == catalog.stdout
    history = schedlog(
        "host", "history", "--store", str(store), "--session", "s-1", "--id", "schedule-1-4"
    )
    assert history.returncode == 0, history.stderr
    page = json.loads(history.stdout)
    assert page["id"] == "schedule-1-4" and page["records"] == []
    checked = schedlog("validate", "--store", str(store))
    assert checked.returncode == 0, checked.stderr
    assert json.loads(checked.stdout) == {
        "path": str(store),
        "kind": "store",
        "ok": True,
        "tasks": 3 * BATCH,
    }

    assert sorted(os.listdir(tmp_path)) == names  # no file created
    assert sha256_files(store, Path(f"{store}-wal"), Path(f"{store}.lock")) == before
    assert writer.commit(1) == 4  # the writer went on, unhindered
    assert len(read_tasks(store)) == 4 * BATCH


def test_writers_stay_exclusive_beside_readers(tmp_path: Path, writer: Writer) -> None:
    store = tmp_path / "schedule.db"
    writer.commit(1)
    read_tasks(store)
    sessions = str(tmp_path / "sessions")
    second = schedlog("host", "run", "--store", str(store), "--sessions", sessions)
    assert second.returncode == 1
    assert json.loads(second.stderr.splitlines()[-1])["error"]["code"] == "store-locked"
    argv = ["host", "batch", "--store", str(store), "--sessions", sessions]
    batch = subprocess.run(
        [sys.executable, "-m", "schedlog.cli.main", *argv],
        input='{"op":"catalog","now":"2026-05-01T00:00:00Z","args":{}}\n',
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert json.loads(batch.stdout)["error"]["code"] == "store-locked"
    migrate_log = tmp_path / "x.jsonl"
    migrate_log.write_text("")
    migrated = schedlog("migrate", "--log", str(migrate_log), "--store", str(store))
    assert json.loads(migrated.stdout)["error"]["code"] == "store-locked"


def test_without_a_writer_the_reader_reads_the_file_as_it_is(tmp_path: Path) -> None:
    store = tmp_path / "schedule.db"
    opened = SqliteTaskStore.open(store)
    try:
        opened.insert_many([task(f"schedule-{i}") for i in range(5)])
    finally:
        opened.close()
    names = sorted(os.listdir(tmp_path))
    before = sha256_files(store)
    assert not writer_holds(store)
    assert [st.task.id for st in read_tasks(store)] == [f"schedule-{i}" for i in range(5)]
    assert sorted(os.listdir(tmp_path)) == names and sha256_files(store) == before


def test_a_missing_store_is_refused_not_created(tmp_path: Path) -> None:
    store = tmp_path / "absent.db"
    result = schedlog("host", "catalog", "--store", str(store), "--json")
    assert result.returncode == 1
    assert json.loads(result.stdout)["error"]["code"] == "store-not-found"
    assert not store.exists() and os.listdir(tmp_path) == []


def test_a_writer_that_starts_during_a_read_makes_the_read_start_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from schedlog.host.stores import sqlite_validate

    store = tmp_path / "schedule.db"
    opened = SqliteTaskStore.open(store)
    opened.insert(task("schedule-0"))
    opened.close()
    real = sqlite_validate.validate_sqlite
    calls: list[int] = []

    def racing(
        path: Path, tasks: list[object] | None = None, targets: list[object] | None = None
    ) -> int:
        count = real(path, tasks, targets)  # type: ignore[arg-type]
        calls.append(count)
        if len(calls) == 1:  # a service starts and writes once the file was read
            started = SqliteTaskStore.open(store)  # its own validation is call 2
            started.insert(task("schedule-1"))
            started.close()
        return count

    monkeypatch.setattr(sqlite_validate, "validate_sqlite", racing)
    assert [st.task.id for st in read_tasks(store)] == ["schedule-0", "schedule-1"]
    assert calls == [1, 1, 2]  # the reader, the service's open, the reader again


def test_a_probe_of_the_lock_does_not_refuse_a_starting_writer(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import fcntl

    from schedlog.host.stores import sqlite

    store = tmp_path / "schedule.db"
    SqliteTaskStore.open(store).close()
    fd = os.open(f"{store}.lock", os.O_RDONLY)
    fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)  # a reader's probe, held right now
    pauses: list[float] = []

    def probe_ends(seconds: float) -> None:
        pauses.append(seconds)
        fcntl.flock(fd, fcntl.LOCK_UN)

    monkeypatch.setattr(sqlite.time, "sleep", probe_ends)
    try:
        SqliteTaskStore.open(store).close()
    finally:
        os.close(fd)
    assert len(pauses) == 1


def test_a_json_store_held_by_a_service_is_read_without_its_lock(tmp_path: Path) -> None:
    from schedlog.host.stores.json import JsonTaskStore

    store = tmp_path / "schedule.json"
    held = JsonTaskStore.open(store)  # holds <store>.lock until closed
    try:
        held.insert_many([task("schedule-0"), task("schedule-1", "<s>\u202e")])
        before = sha256_files(store, Path(f"{store}.lock"))
        catalog = schedlog("host", "catalog", "--store", str(store))
        assert catalog.returncode == 0, catalog.stderr
        ids = [json.loads(line)["id"] for line in catalog.stdout.splitlines()]
        assert sorted(ids) == ["schedule-0", "schedule-1"]
        assert sha256_files(store, Path(f"{store}.lock")) == before
        held.delete("schedule-0")  # the service still writes
    finally:
        held.close()
