"""The host's input limits, the same on every store backend (docs/http-api.md#limits,
docs/protocol.md#host-limits): a session id's size and characters, and the bound on what the
host remembers per session id."""

from __future__ import annotations

from collections import OrderedDict
from typing import Final

from schedlog.errors import ScheduleInputError

__all__ = [
    "MAX_SESSION_ID_BYTES",
    "SEEN_SESSIONS",
    "SeenSessions",
    "check_session_id",
]

#: The longest session id a task may be created for, in UTF-8 bytes. PostgreSQL's index on
#: ``session_id`` refuses rows of about 2,700 bytes; SQLite and the JSON document have no limit:
#: the host refuses more than this everywhere, with the same code.
MAX_SESSION_ID_BYTES: Final = 1024
#: How many session ids the host remembers having checked for legacy events.
SEEN_SESSIONS: Final = 4096

MSG_SESSION_ID: Final = (
    f"sessionId must be a non-empty string of at most {MAX_SESSION_ID_BYTES} UTF-8 bytes, "
    "without NUL or lone surrogates."
)


def check_session_id(session_id: object) -> str:
    """``session_id`` when a task may be bound to it; else ``invalid_session_id``: not a string,
    empty, a NUL (PostgreSQL text cannot hold one), a lone surrogate (UTF-8 cannot), or longer
    than :data:`MAX_SESSION_ID_BYTES` bytes."""
    if type(session_id) is not str or not session_id or "\x00" in session_id:
        raise ScheduleInputError("invalid_session_id", MSG_SESSION_ID)
    if len(session_id) * 4 > MAX_SESSION_ID_BYTES or not session_id.isascii():
        try:
            size = len(session_id.encode("utf-8"))
        except UnicodeEncodeError:
            raise ScheduleInputError("invalid_session_id", MSG_SESSION_ID) from None
        if size > MAX_SESSION_ID_BYTES:
            raise ScheduleInputError("invalid_session_id", MSG_SESSION_ID)
    return session_id


class SeenSessions:
    """The session ids seen lately, at most ``capacity`` (least recently seen dropped first): a
    read-only call for a new session id costs a bounded amount of memory, whatever the number of
    ids a client invents."""

    def __init__(self, capacity: int = SEEN_SESSIONS) -> None:
        self.capacity = capacity
        self._ids: OrderedDict[str, None] = OrderedDict()

    def first_sight(self, session_id: str) -> bool:
        """True when ``session_id`` is not among those remembered; it is remembered now."""
        if session_id in self._ids:
            self._ids.move_to_end(session_id)
            return False
        self._ids[session_id] = None
        if len(self._ids) > self.capacity:
            self._ids.popitem(last=False)
        return True

    def __len__(self) -> int:
        return len(self._ids)
