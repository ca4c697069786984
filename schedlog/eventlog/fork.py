"""Forking a session log (docs/protocol.md#events)."""

from __future__ import annotations

import os
import secrets

from schedlog.eventlog.events import encode_line
from schedlog.eventlog.header import Header
from schedlog.eventlog.reader import read_log
from schedlog.files import FILE_MODE, fsync_directory
from schedlog.rules.text import json_int

__all__ = ["fork_log"]


def fork_log(
    parent_path: str | os.PathLike[str],
    fork_point: int,
    new_session_id: str,
    dest_path: str | os.PathLike[str],
) -> Header:
    """Create the log of a child session forked from ``parent_path`` after ``fork_point`` events.

    The child's header has ``seedLength = fork_point`` and the parent's session id; its first
    ``fork_point`` events are byte-for-byte copies of the parent's lines. The parent's schedule
    events are not judged (the child never folds them), but every copied line must be a
    well-formed event: corruption within the copied part raises its
    :class:`~schedlog.eventlog.errors.CorruptLogError`.

    ``dest_path`` must not exist (``FileExistsError``); the child appears atomically, complete
    and ``fsync``ed, readable by the owner only. Returns the child's header.
    """
    if type(new_session_id) is not str or not new_session_id:
        raise ValueError("the new session id must be a non-empty string")
    contents = read_log(parent_path)
    point = json_int(fork_point)
    if contents.header is None and contents.corruption is None:
        raise ValueError(f"cannot fork {contents.file}: it has no header yet")
    if contents.corruption is not None and (point is None or contents.corruption.line <= point + 1):
        raise contents.corruption.error()
    assert contents.header is not None
    if point is None or not 0 <= point <= len(contents.events):
        raise ValueError(
            f"fork point must be an integer from 0 through {len(contents.events)},"
            f" got {fork_point!r}"
        )
    header = Header(
        session_id=new_session_id,
        seed_length=point,
        parent_session_id=contents.header.session_id,
    )
    dest = os.fspath(dest_path)
    directory = os.path.dirname(dest)
    temp = os.path.join(directory, f".{os.path.basename(dest)}.{secrets.token_hex(6)}.tmp")
    fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, FILE_MODE)
    try:
        try:
            with os.fdopen(fd, "wb", closefd=False) as out:
                out.write(encode_line(header.to_json()))
                for event in contents.events[:point]:
                    out.write(event.raw)
            os.fsync(fd)
        finally:
            os.close(fd)
        # link() refuses an existing destination, unlike rename(); the child appears whole.
        os.link(temp, dest)
    finally:
        os.unlink(temp)
    fsync_directory(directory)
    return header
