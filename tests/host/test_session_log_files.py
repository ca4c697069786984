"""Session logs are opened under the sessions directory's descriptor with ``O_NOFOLLOW``, and
only when they are regular files (issue 22 item 8; docs/protocol.md#session-log): a symlink, a
FIFO or a directory at a log's name is refused with ``session_log_not_regular`` and left alone,
and the file a symlink points at is never written."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import pytest

from schedlog.host.config import Retention
from schedlog.host.service import HostService
from schedlog.host.sessions import SessionsDirectory
from schedlog.host.stores.open import open_store
from schedlog.invariant.appender import LogAppender
from schedlog.invariant.log_open import NOT_REGULAR, UnsafeLogError
from schedlog.runtime.clock import VirtualClock
from tests.host.helpers import T0

OUTSIDE = b"precious data outside the sessions directory, no newline (a torn tail)"


def _plant(sessions: Path, kind: str, target: Path) -> Path:
    sessions.mkdir(mode=0o700)
    log = sessions / "s-1.jsonl"
    if kind == "symlink":
        target.write_bytes(OUTSIDE)
        log.symlink_to(target)
    elif kind == "fifo":
        os.mkfifo(log)
    else:
        log.mkdir()
    return log


@pytest.mark.parametrize("kind", ["symlink", "fifo", "directory"])
def test_a_log_that_is_not_a_regular_file_is_refused(tmp_path: Path, kind: str) -> None:
    sessions, outside = tmp_path / "sessions", tmp_path / "outside.jsonl"
    log = _plant(sessions, kind, outside)
    directory = SessionsDirectory(sessions)
    try:
        with pytest.raises(UnsafeLogError) as info:
            directory.resolve("s-1")
        assert info.value.code == NOT_REGULAR == "session_log_not_regular"
        assert "s-1.jsonl" in info.value.message
        with pytest.raises(UnsafeLogError):
            directory.legacy_reminders("s-1")
    finally:
        directory.close()
    assert log.is_symlink() == (kind == "symlink") and os.path.lexists(log)
    if kind == "symlink":
        assert outside.read_bytes() == OUTSIDE


def test_a_delivery_into_a_symlinked_log_writes_nothing_outside(tmp_path: Path) -> None:
    sessions, outside = tmp_path / "sessions", tmp_path / "outside.jsonl"
    _plant(sessions, "symlink", outside)

    async def main() -> None:
        clock = VirtualClock(T0)
        directory = SessionsDirectory(sessions)
        service = HostService(open_store(tmp_path / "s.db"), directory, clock, Retention())
        try:
            await service.create("s-1", {"title": "T", "prompt": "P", "after_seconds": 60})
            await clock.run_until(T0 + 120_000)
            (entry,) = service.catalog()
            assert entry["status"] == "active"  # not delivered: the log was refused
        finally:
            await service.aclose()
            directory.close()

    asyncio.run(main())
    assert outside.read_bytes() == OUTSIDE


def test_the_directory_descriptor_is_used_not_the_path(tmp_path: Path) -> None:
    """The log is opened under the descriptor: a sessions directory swapped for a symlink after
    the first open does not redirect later opens."""
    sessions = tmp_path / "sessions"
    directory = SessionsDirectory(sessions)
    try:
        directory.resolve("s-1").close()
        elsewhere = tmp_path / "elsewhere"
        sessions.rename(elsewhere)
        sessions.mkdir()
        directory.resolve("s-2")
        assert (elsewhere / "s-2.jsonl").exists() and not (sessions / "s-2.jsonl").exists()
    finally:
        directory.close()


def test_a_plain_open_refuses_a_fifo_without_hanging(tmp_path: Path) -> None:
    fifo = tmp_path / "s.jsonl"
    os.mkfifo(fifo)
    with pytest.raises(UnsafeLogError):
        LogAppender.open(fifo, session_id="s")
