"""Opening a session log safely (docs/protocol.md#session-log): never through a symlink
when the caller names the log inside a directory descriptor, and never anything but a regular
file (a FIFO would hang the open, a device or a directory is no log)."""

from __future__ import annotations

import errno
import os
import stat
from typing import Final

from schedlog.errors import ScheduleError
from schedlog.files import FILE_MODE

__all__ = ["NOT_REGULAR", "UnsafeLogError", "open_log_file"]

#: The stable code of a refused log (docs/errors.md).
NOT_REGULAR: Final = "session_log_not_regular"
_NOFOLLOW: Final = getattr(os, "O_NOFOLLOW", 0)
# A FIFO opened without O_NONBLOCK waits for a peer; the descriptor is made blocking again
# once it is known to be a regular file.
_NONBLOCK: Final = getattr(os, "O_NONBLOCK", 0)
_CLOEXEC: Final = getattr(os, "O_CLOEXEC", 0)
#: What an open of a symlink (O_NOFOLLOW), a directory or a socket/FIFO without peer answers.
_REFUSED_ERRNOS: Final = frozenset({errno.ELOOP, errno.EISDIR, errno.ENXIO, errno.EMLINK})


class UnsafeLogError(ScheduleError, OSError):
    """The session log is a symlink or not a regular file: it is left alone."""

    def __init__(self, name: str, what: str) -> None:
        super().__init__(NOT_REGULAR, f"session log {name!r} is {what}; it was not opened")


def open_log_file(
    name: str, *, dir_fd: int | None = None, write: bool = True, create: bool = True
) -> tuple[int, bool]:
    """``(fd, created)`` for the log ``name``. With ``dir_fd``, ``name`` is a plain name inside
    that directory and a symlink there is refused (``O_NOFOLLOW``). A log that is not a regular
    file raises :class:`UnsafeLogError`; other failures raise ``OSError``. ``write`` opens for
    append (creating the file when ``create``), else read-only."""
    nofollow = _NOFOLLOW if dir_fd is not None else 0
    flags = (os.O_RDWR | os.O_APPEND if write else os.O_RDONLY) | nofollow | _NONBLOCK | _CLOEXEC
    created = False
    try:
        if write and create:
            try:
                fd = os.open(name, flags | os.O_CREAT | os.O_EXCL, FILE_MODE, dir_fd=dir_fd)
                created = True
            except FileExistsError:
                fd = os.open(name, flags, dir_fd=dir_fd)
        else:
            fd = os.open(name, flags, dir_fd=dir_fd)
    except OSError as exc:
        if exc.errno in _REFUSED_ERRNOS:
            raise UnsafeLogError(name, _describe(name, dir_fd)) from None
        raise
    mode = os.fstat(fd).st_mode
    if not stat.S_ISREG(mode):
        os.close(fd)
        raise UnsafeLogError(name, "not a regular file")
    os.set_blocking(fd, True)
    return fd, created


def _describe(name: str, dir_fd: int | None) -> str:
    try:
        mode = os.stat(name, dir_fd=dir_fd, follow_symlinks=False).st_mode
    except OSError:
        return "not a regular file"
    return "a symlink" if stat.S_ISLNK(mode) else "not a regular file"
