"""File modes and durability helpers shared by every writer of session logs and stores."""

from __future__ import annotations

import os
from typing import Final

__all__ = ["FILE_MODE", "fsync_directory", "write_all"]

#: Session logs and stores hold conversation text: created readable and writable by the owner
#: only.
FILE_MODE: Final = 0o600


def fsync_directory(path: str) -> None:
    """Make a file creation (or rename) in directory ``path`` durable."""
    fd = os.open(path or ".", os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def write_all(fd: int, data: bytes) -> None:
    """Write all of ``data`` to ``fd`` (``os.write`` may write less than asked)."""
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]
