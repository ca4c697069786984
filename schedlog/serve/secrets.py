"""Reading a private file: the token file and the webhook secret file of ``host serve``
(docs/operations.md#token-file).

The file is opened with ``O_NOFOLLOW | O_NONBLOCK``, so a symlink is refused and a FIFO cannot
hang start-up, then checked on the open descriptor (no race between check and read): it must
be a regular file, owned by the serving user or by root, and not accessible to the group or
others. Each refusal has its own :attr:`PrivateFileError.kind`.

:class:`StartupError` is the base of the token's and the webhook secret's errors: each names
its start-up code and the codes of the refusal kinds, and :meth:`StartupError.read_file`
reads a private file with them.
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Mapping
from typing import ClassVar, Final

__all__ = ["MAX_PRIVATE_BYTES", "PrivateFileError", "StartupError", "read_private_file"]

#: A token or secret file is small; more than this is not one.
MAX_PRIVATE_BYTES: Final = 64 * 1024


class PrivateFileError(Exception):
    """``kind`` is ``type`` (a symlink, FIFO, directory...), ``owner``, ``mode`` or ``read``."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind


def read_private_file(path: str | os.PathLike[str], what: str) -> bytes:
    """The content of ``path``; ``what`` names the file in messages ("the token file")."""
    flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
    try:
        fd = os.open(path, flags)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            message = f"{what} {path} is a symlink; use the file itself"
            raise PrivateFileError("type", message) from None
        raise PrivateFileError("read", f"cannot read {what} {path}: {exc.strerror}") from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise PrivateFileError("type", f"{what} {path} is not a regular file")
        if info.st_uid not in (os.geteuid(), 0):
            raise PrivateFileError(
                "owner",
                f"{what} {path} is owned by uid {info.st_uid}, not by this user "
                f"(uid {os.geteuid()}) or root",
            )
        mode = stat.S_IMODE(info.st_mode)
        if mode & 0o077:
            raise PrivateFileError(
                "mode", f"{what} {path} is accessible to others (mode {mode:04o}); make it 0600"
            )
        data = os.read(fd, MAX_PRIVATE_BYTES + 1)
    except OSError as exc:
        raise PrivateFileError("read", f"cannot read {what} {path}: {exc.strerror}") from None
    finally:
        os.close(fd)
    if len(data) > MAX_PRIVATE_BYTES:
        raise PrivateFileError("read", f"{what} {path} is longer than {MAX_PRIVATE_BYTES} bytes")
    return data


class StartupError(Exception):
    """A token, secret or setting ``host serve`` cannot use: it refuses to start with the
    error's ``code``. A subclass sets ``code`` and ``kind_codes``, the codes of the
    :attr:`PrivateFileError.kind` values that have their own (any other kind gives ``code``)."""

    code: str
    kind_codes: ClassVar[Mapping[str, str]] = {}

    def __init__(self, message: str, code: str | None = None) -> None:
        super().__init__(message)
        if code is not None:
            self.code = code

    @classmethod
    def read_file(cls, path: str | os.PathLike[str], what: str) -> bytes:
        """:func:`read_private_file`, its refusal raised as this error with its kind's code."""
        try:
            return read_private_file(path, what)
        except PrivateFileError as exc:
            raise cls(str(exc), cls.kind_codes.get(exc.kind, cls.code)) from None
