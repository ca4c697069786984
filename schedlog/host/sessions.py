"""Session resolution for the host (docs/protocol.md#host-delivery, docs/protocol.md#legacy-events,
docs/protocol.md#batch-host).

The service reaches sessions only through :class:`SessionController`. The standalone controller,
:class:`SessionsDirectory`, maps session ``S`` to ``DIR/<enc(S)>.jsonl`` and creates the log on
first delivery: the stand-in for restoring a cold session.
"""

from __future__ import annotations

import os
import resource
import stat
import threading
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Final, Protocol, runtime_checkable

from schedlog._crashpoints import crashpoint
from schedlog.errors import ScheduleError
from schedlog.eventlog.followups import Member
from schedlog.eventlog.reader import read_log_fd
from schedlog.invariant.appender import LogAppender
from schedlog.invariant.log_open import open_log_file
from schedlog.invariant.logs import validate_log

__all__ = [
    "MAX_LOG_NAME_BYTES",
    "MAX_OPEN_LOGS",
    "SessionController",
    "SessionHandle",
    "SessionIdTooLong",
    "SessionsDirectory",
    "SessionsPathError",
    "SyncsEntries",
    "check_sessions_path",
    "default_max_open",
    "encode_session_id",
]

_SAFE: Final = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.-")
#: The longest log file name, ``<enc(S)>.jsonl``: the usual file-system limit (NAME_MAX).
MAX_LOG_NAME_BYTES: Final = 255
#: Session logs a :class:`SessionsDirectory` keeps open at most (docs/operations.md#host-run).
MAX_OPEN_LOGS: Final = 64
_DIRECTORY_FLAGS: Final = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_CLOEXEC", 0)


class SessionIdTooLong(ValueError):
    """The session's log file name would be longer than :data:`MAX_LOG_NAME_BYTES`."""


class SessionsPathError(ScheduleError, OSError):
    """``--sessions`` names something that is not a directory (code
    ``sessions-not-directory``, docs/errors.md#sessions-not-directory)."""

    def __init__(self, path: str | os.PathLike[str], what: str) -> None:
        super().__init__(
            "sessions-not-directory",
            f"--sessions {os.fspath(path)!r} is {what}, not a directory of session logs",
        )


def check_sessions_path(path: str | os.PathLike[str]) -> None:
    """Refuse, at start-up, a sessions path that exists and is not a directory (a symlink to
    a directory is one); a missing one is created at the first delivery."""
    try:
        info = os.stat(path)
    except FileNotFoundError:
        if os.path.lexists(path):
            raise SessionsPathError(path, "a dangling symbolic link") from None
        return
    except NotADirectoryError:
        raise SessionsPathError(path, "under a file") from None
    except OSError as exc:
        raise SessionsPathError(path, f"unreadable ({exc.strerror})") from None
    if not stat.S_ISDIR(info.st_mode):
        raise SessionsPathError(path, "a regular file" if stat.S_ISREG(info.st_mode) else "a file")


class SessionHandle(Protocol):
    """A resolved session: what a delivery group needs from its log."""

    @property
    def delivered(self) -> Mapping[Member, str]:
        """Members already delivered in the owned suffix -> the messageId holding them."""
        ...

    def append(self, event: Mapping[str, Any]) -> object:
        """Append one event (not yet durable)."""
        ...

    def flush(self) -> bool:
        """The durability barrier; False (or an exception) is a failure."""
        ...


@runtime_checkable
class SyncsEntries(Protocol):
    """A controller whose new logs' directory entries can be made durable together: a batched
    run fsyncs each log's file with :meth:`flush_file`, then every new log's directory once
    with :meth:`sync_entries`, before it commits any of their deliveries
    (docs/decisions.md "One directory fsync per batched run")."""

    def flush_file(self, handle: SessionHandle) -> bool:
        """``handle``'s barrier without its directory entry (left pending); as ``flush``."""
        ...

    def sync_entries(self, handles: Sequence[SessionHandle]) -> None:
        """Make the directory entries of the new logs among ``handles`` durable: one ``fsync``
        of each directory holding one. Raises ``OSError`` when one fails (those stay
        pending)."""
        ...


class SessionController(Protocol):
    """Where the host finds sessions (restoring cold ones)."""

    def resolve(self, session_id: str) -> SessionHandle:
        """The session, restored if needed; raises when it cannot be resolved."""
        ...

    def discard(self, session_id: str) -> None:
        """Forget a cached handle after a failure, so the next resolution starts afresh."""
        ...

    def legacy_reminders(self, session_id: str) -> int:
        """The number of active legacy (``schedule/change``) reminders in the owned suffix; 0
        for a session with no log. Raises ``ValueError`` when that fold fails."""
        ...


def default_max_open() -> int:
    """:data:`MAX_OPEN_LOGS`, or an eighth of the soft open-files limit when that is lower (at
    least 4): the rest is left to the store, connections and the webhook client."""
    soft, _hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY:
        return MAX_OPEN_LOGS
    return max(4, min(MAX_OPEN_LOGS, soft // 8))


def encode_session_id(session_id: str) -> str:
    """``enc(S)`` of docs/protocol.md#batch-host: ``[A-Za-z0-9_.-]`` kept (except a leading ``.``),
    every other UTF-8 byte written as ``%XX`` in upper-case hex."""
    out: list[str] = []
    for i, byte in enumerate(session_id.encode("utf-8", "surrogatepass")):
        if byte in _SAFE and not (i == 0 and byte == 0x2E):
            out.append(chr(byte))
        else:
            out.append(f"%{byte:02X}")
    return "".join(out)


class SessionsDirectory:
    """The standalone controller of docs/protocol.md#batch-host: one JSON Lines log per session in
    ``directory``.

    The most recently resolved logs stay open, at most ``max_open`` of them (by default
    :data:`MAX_OPEN_LOGS`, lowered to an eighth of the open-files limit): resolving one more
    closes the one resolved longest ago, so a host delivering to many sessions holds a bounded
    number of descriptors. A closed log is re-opened (re-read) when its session is resolved
    again. Every delivery ends with the barrier, so closing one loses nothing. :meth:`close`
    closes them all.

    A log created here whose directory entry was not made durable when its handle went (a
    failed or deferred directory ``fsync``: :class:`SyncsEntries`) is remembered, so its
    re-opened handle fsyncs the directory again at its first barrier.
    """

    def __init__(self, directory: str | os.PathLike[str], *, max_open: int | None = None) -> None:
        self.directory = Path(directory)
        self.max_open = default_max_open() if max_open is None else max_open
        if self.max_open < 1:
            raise ValueError(f"max_open must be at least 1, not {self.max_open}")
        self._open: OrderedDict[str, LogAppender] = OrderedDict()
        self._dir_fd: int | None = None
        #: Sessions whose log was created here and whose handle went while its directory entry
        #: was still pending; cleared by a directory fsync (:meth:`sync_entries`).
        self._unsynced: set[str] = set()
        #: Batched delivery resolves sessions on several threads: the directory descriptor and
        #: the set of open logs change under this lock.
        self._lock = threading.RLock()

    def _directory_fd(self) -> int:
        """The sessions directory, created if missing, opened once: every log is opened under
        it with ``O_NOFOLLOW`` (docs/protocol.md#session-log)."""
        with self._lock:  # batched delivery resolves sessions on several threads
            if self._dir_fd is None:
                self.directory.mkdir(mode=0o700, parents=True, exist_ok=True)
                self._dir_fd = os.open(self.directory, _DIRECTORY_FLAGS)
            return self._dir_fd

    def path_of(self, session_id: str) -> Path:
        """``DIR/<enc(S)>.jsonl``, always a plain name inside ``DIR`` (``enc`` leaves no ``/``,
        NUL or leading ``.``). Raises :class:`SessionIdTooLong` when the name would be longer
        than 255 bytes: such a session has no log here, and deliveries to it fail."""
        name = f"{encode_session_id(session_id)}.jsonl"
        if len(name) > MAX_LOG_NAME_BYTES:  # enc's output is ASCII: characters are bytes
            raise SessionIdTooLong(
                f"session id is too long for a log file name ({len(name)} bytes encoded, "
                f"at most {MAX_LOG_NAME_BYTES})"
            )
        return self.directory / name

    def resolve(self, session_id: str) -> LogAppender:
        with self._lock:
            return self._resolve(session_id)

    def _resolve(self, session_id: str) -> LogAppender:
        log = self._open.get(session_id)
        if log is not None and not log.closed:
            self._open.move_to_end(session_id)
        else:
            if log is not None:
                del self._open[session_id]
            while len(self._open) >= self.max_open:  # the least recently resolved goes
                self._close(*self._open.popitem(last=False))
            dir_fd = self._directory_fd()
            # Only line-level validity: the host never folds a session's legacy schedule events
            # to deliver into it; unreadable ones only earn a warning
            # (docs/protocol.md#legacy-events).
            log = LogAppender.open(
                self.path_of(session_id),
                session_id=session_id,
                fold_schedule=False,
                dir_fd=dir_fd,
                entry_durable=session_id not in self._unsynced,
            )
            self._unsynced.discard(session_id)  # the handle carries it now
            self._open[session_id] = log
        return log

    def _close(self, session_id: str, log: LogAppender) -> None:
        if log.directory_pending:
            self._unsynced.add(session_id)
        log.close()

    def discard(self, session_id: str) -> None:
        with self._lock:
            log = self._open.pop(session_id, None)
            if log is not None:
                self._close(session_id, log)

    def flush_file(self, handle: SessionHandle) -> bool:
        if not isinstance(handle, LogAppender):
            return handle.flush()
        return handle.flush(directory=False)

    def sync_entries(self, handles: Sequence[SessionHandle]) -> None:
        """One ``fsync`` of the sessions directory when a log among ``handles`` has its
        directory entry pending; then those entries, and those of logs created here whose
        handles went before (their session's next handle would fsync again), are durable."""
        pending = [h for h in handles if isinstance(h, LogAppender) and h.directory_pending]
        if not pending:
            return
        with self._lock:
            dir_fd = self._directory_fd()
            before = set(self._unsynced)
        crashpoint("sessions.before_directory_fsync")
        os.fsync(dir_fd)
        for log in pending:
            log.directory_synced()
        with self._lock:
            self._unsynced -= before

    def legacy_reminders(self, session_id: str) -> int:
        try:
            path = self.path_of(session_id)
        except SessionIdTooLong:
            return 0  # no log can exist under that id
        if not self.directory.exists():
            return 0
        try:
            fd, _ = open_log_file(path.name, dir_fd=self._directory_fd(), write=False)
        except FileNotFoundError:
            return 0
        try:
            contents = read_log_fd(fd, str(path))
        finally:
            os.close(fd)
        return len(validate_log(contents).active)

    def close(self) -> None:
        with self._lock:
            for session_id in list(self._open):
                self.discard(session_id)
            if self._dir_fd is not None:
                os.close(self._dir_fd)
                self._dir_fd = None
