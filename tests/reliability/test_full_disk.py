"""A full disk under the sessions directory, the SQLite store and the JSON store
(docs/reliability.md#full-disk, issue 22 "Full disk").

Each test mounts a small tmpfs of its own (the test runs as root; elsewhere it skips with the
reason, except under ``CI=true``, where it fails), fills it with a filler file and checks:

* every write that could not be made durable answers ``storage_full`` and is not stored;
* no log is left torn: every log still reads, to its last byte;
* the host keeps running and, once the filler is gone, delivers everything that was due,
  each reminder exactly once.
"""

from __future__ import annotations

import asyncio
import errno
import io
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from schedlog.cli._host import run_host
from schedlog.eventlog.reader import read_log
from schedlog.host.config import Retention
from schedlog.host.service import HostService
from schedlog.host.sessions import SessionsDirectory
from schedlog.host.storage_full import is_storage_full
from schedlog.host.stores.open import open_store
from schedlog.host.tools import HostTools
from schedlog.runtime.clock import VirtualClock
from tests.host.helpers import T0

#: A prompt long enough that its follow-up line needs a page of its own on the tmpfs (a short
#: line could still fit in the slack of the log's last page), with hostile text in it.
LONG_PROMPT = "<script>&amp; \u202e lone \ud800 " + "p" * 6000
SIZE = "256k"


@pytest.fixture
def small_fs(tmp_path: Path) -> Iterator[Path]:
    """A 256 KiB tmpfs mounted at ``tmp_path / "small"``, unmounted afterwards."""
    mount = tmp_path / "small"
    mount.mkdir()
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={SIZE},mode=0700", "tmpfs", str(mount)],
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        reason = f"cannot mount a tmpfs here: {done.stderr.strip() or done.returncode}"
        if os.environ.get("CI") == "true":
            pytest.fail(reason)
        pytest.skip(reason)
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)


def fill(mount: Path) -> Path:
    """Fill ``mount`` to the last byte with ``mount/filler``."""
    filler = mount / "filler"
    fd = os.open(filler, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    try:
        chunk = b"\0" * 4096
        while True:
            try:
                os.write(fd, chunk)
            except OSError as exc:
                assert exc.errno == errno.ENOSPC
                break
        for size in (512, 64, 1):  # the last partial page
            while True:
                try:
                    os.write(fd, b"\0" * size)
                except OSError:
                    break
    finally:
        os.close(fd)
    return filler


def _followups(log: Path) -> list[dict[str, Any]]:
    """The follow-ups of a log, read strictly (a torn or corrupt line raises)."""
    data = log.read_bytes()
    assert data.endswith(b"\n"), f"{log.name} ends in a partial line"
    return [e.data for e in read_log(log).events if e.type == "message/followup"]


def _delivered_ids(sessions: Path) -> list[str]:
    return [
        r["id"] for log in sessions.glob("*.jsonl") for f in _followups(log) for r in f["reminders"]
    ]


def test_a_full_sessions_disk_delays_deliveries_and_loses_none(
    small_fs: Path, tmp_path: Path
) -> None:
    """``host run`` (run_host, on a virtual clock) over a sessions directory whose disk fills:
    deliveries fail without a torn line, the host keeps running, and once space returns it
    retries by itself and delivers each due reminder once."""
    sessions, store = small_fs / "sessions", str(tmp_path / "s.db")

    async def create(session: str, prompt: str, after_s: int, clock: VirtualClock) -> str:
        service = HostService(
            open_store(store), SessionsDirectory(sessions), clock, auto_drive=False
        )
        try:
            value = await HostTools(service).call(
                "schedule_create",
                session,
                {"title": "t", "prompt": prompt, "after_seconds": after_s},
            )
        finally:
            await service.aclose()
        task_id: str = value["id"]
        return task_id

    async def main() -> None:
        clock = VirtualClock(T0)
        first = await create("s-1", "p", 60, clock)
        ids = [await create(s, LONG_PROMPT, 300, clock) for s in ("s-1", "s-2", "<b>\u202e")]
        stop = asyncio.Event()
        err = io.StringIO()
        host = asyncio.ensure_future(
            run_host(store, None, str(sessions), clock=clock, stop=stop, err=err)
        )
        try:
            await clock.run_until(T0 + 120_000)  # s-1's log exists now
            assert _delivered_ids(sessions) == [first]
            filler = fill(small_fs)
            await clock.run_until(T0 + 900_000)  # due at T0+300 s: every attempt hits ENOSPC
            assert _delivered_ids(sessions) == [first]  # nothing torn, nothing new
            assert not host.done()
            filler.unlink()
            await clock.run_until(T0 + 3_600_000)  # no other wake-up: the retry is its own
            assert sorted(_delivered_ids(sessions)) == sorted([first, *ids])  # 0 lost, 0 twice
        finally:
            stop.set()
            assert await host == 0

    asyncio.run(main())


@pytest.mark.parametrize("store_name", ["store.db", "store.json"])
def test_a_full_store_disk_answers_storage_full_and_stores_nothing(
    small_fs: Path, tmp_path: Path, store_name: str
) -> None:
    store = small_fs / store_name

    async def open_service(clock: VirtualClock) -> tuple[HostService, SessionsDirectory]:
        directory = SessionsDirectory(tmp_path / "sessions")
        return HostService(open_store(store), directory, clock, Retention()), directory

    async def main() -> None:
        clock = VirtualClock(T0)
        service, directory = await open_service(clock)
        tools = HostTools(service)
        try:
            kept = await tools.call(
                "schedule_create", "s-1", {"title": "kept", "prompt": "p", "after_seconds": 60}
            )
            filler = fill(small_fs)
            refused = []
            for title in ("<b>&amp;", "\u202e", "x" * 120):
                args = {"title": title, "prompt": LONG_PROMPT, "after_seconds": 60}
                refused.append(await tools.call("schedule_create", "s-2", args))
            assert all(v["code"] == "storage_full" for v in refused), refused
            assert [e["id"] for e in service.catalog()] == [kept["id"]]
            assert await tools.call("schedule_list", "s-2", {}) == []
            await clock.run_until(T0 + 120_000)  # the kept task is still delivered
            assert _delivered_ids(tmp_path / "sessions") == [kept["id"]]
            filler.unlink()
            again = await tools.call(
                "schedule_create",
                "s-2",
                {"title": "again", "prompt": LONG_PROMPT, "after_seconds": 60},
            )
            assert "id" in again, again
        finally:
            await service.aclose()
            directory.close()
        # Re-opened: exactly what was acknowledged, nothing of the refused writes.
        service, directory = await open_service(clock)
        try:
            assert {e["id"] for e in service.catalog()} == {kept["id"], again["id"]}
        finally:
            await service.aclose()
            directory.close()

    asyncio.run(main())


def test_storage_full_is_found_in_the_exception_chain() -> None:
    import sqlite3

    assert is_storage_full(OSError(errno.ENOSPC, "No space left on device"))
    assert is_storage_full(OSError(errno.EDQUOT, "Disk quota exceeded"))
    assert not is_storage_full(OSError(errno.EIO, "I/O error"))
    assert is_storage_full(sqlite3.OperationalError("database or disk is full"))
    wrapped = ValueError("write failed")
    wrapped.__cause__ = OSError(errno.ENOSPC, "full")
    assert is_storage_full(wrapped)

    class PgDiskFull(Exception):
        sqlstate = "53100"

    assert is_storage_full(PgDiskFull())
    assert not is_storage_full(ValueError("x"))
