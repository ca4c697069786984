"""Named crash points for the crash-matrix harness (``tests/reliability/crash_matrix.py``).

The library calls :func:`crashpoint` at a few places where a crash is interesting (between a
follow-up and its dispatch or commit, between an append and the durability barrier, inside a
line write, inside the JSON store's replace, inside an SQLite transaction). Disabled, which is
the default, a call is one dictionary truth test and a return.

Armed, the process kills itself with ``SIGKILL`` the N-th time it reaches a named point: no
``finally`` blocks, no buffered writes, no ``atexit``; what the kernel had already accepted
(``write``, ``rename``) survives, nothing else does. Arm with the environment variable
``SCHEDLOG_CRASHPOINT=NAME[@N]`` (read once, at import), or with :func:`arm` in a process forked
by a test harness after the import.
"""

from __future__ import annotations

import os
from typing import Final

__all__ = ["ENV", "NAMES", "arm", "crashpoint", "crashpoints_armed"]

ENV: Final = "SCHEDLOG_CRASHPOINT"

#: Every call site, for the harness and for documentation.
NAMES: Final = frozenset(
    {
        # schedlog/invariant/appender.py
        "eventlog.mid_line",  # half of a line written, then death (a torn tail)
        "eventlog.before_barrier",  # lines appended, fsync not yet run
        # schedlog/runtime/delivery.py
        "session.after_followup",  # follow-up event appended, no dispatch yet
        "session.after_dispatch",  # after each dispatch append (before the next / the barrier)
        # schedlog/host/core.py
        "host.after_followup",  # follow-up appended and fsynced, no task committed yet
        "host.after_commit",  # after each member's task commit (before the next)
        "host.after_pause_write",  # a pause or resume written (file store: committed), no ack
        # schedlog/host/batch.py
        "batch.after_session",  # one session's follow-ups appended and fsynced (per session)
        "batch.before_commit",  # every session of the batch durable, its commit not begun
        # schedlog/host/sessions.py
        "sessions.before_directory_fsync",  # a batched run's new logs fsynced, their directory not
        # schedlog/host/webhook_commit.py
        "webhook.before_commit",  # acknowledged webhook groups, their group commit not begun
        "webhook.after_commit",  # their group commit durable, not yet indexed or reported
        # schedlog/host/stores/pg_batch.py
        "pg_batch.in_commit",  # a batched claim's commit statement run, its COMMIT not sent
        # schedlog/host/stores/json.py
        "json_store.before_rename",  # temporary document written and fsynced, not renamed
        "json_store.before_dir_fsync",  # renamed over the store, directory not fsynced
        # schedlog/host/stores/sqlite.py
        "sqlite_store.in_transaction",  # statement run inside BEGIN IMMEDIATE, no COMMIT
        # schedlog/host/stores/sqlite_load.py
        "sqlite_load.between_chunks",  # a store's validation, before each chunk of rows
    }
)

#: name -> hits still to pass before death; empty when disabled.
_armed: dict[str, int] = {}


def arm(spec: str | None) -> None:
    """Arm ``NAME`` or ``NAME@N`` (die at the N-th hit, N >= 1); ``None`` or ``""`` disarms.

    Raises ``ValueError`` for an unknown name or a bad count.
    """
    _armed.clear()
    if not spec:
        return
    name, _, count = spec.partition("@")
    if name not in NAMES:
        raise ValueError(f"unknown crash point {name!r}")
    hits = int(count) if count else 1
    if hits < 1:
        raise ValueError(f"crash point count must be at least 1: {spec!r}")
    _armed[name] = hits


def crashpoints_armed() -> bool:
    """Whether any crash point is armed (a writer may then take its step-by-step path, whose
    crash states the harness reaches)."""
    return bool(_armed)


def crashpoint(name: str, fd: int | None = None, data: bytes = b"") -> None:
    """Die here if ``name`` is armed and this is its N-th hit.

    With ``fd``, the first half of ``data`` is written to ``fd`` before dying: a torn write.
    """
    if not _armed:
        return
    left = _armed.get(name)
    if left is None:
        return
    if left > 1:
        _armed[name] = left - 1
        return
    if fd is not None:
        os.write(fd, data[: len(data) // 2])
    import signal  # only a crash needs it; every process that appends imports this module

    os.kill(os.getpid(), signal.SIGKILL)
    os._exit(137)  # pragma: no cover - SIGKILL does not return


arm(os.environ.get(ENV))
