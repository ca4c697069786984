"""The session header, line 1 of every session log (docs/protocol.md#session-log)."""

from __future__ import annotations

from typing import Any, Final

import msgspec

from schedlog.eventlog.errors import CorruptLogError, child_path
from schedlog.rules.text import js_dumps, json_int

__all__ = ["HEADER_TYPE", "Header", "decode_header"]

HEADER_TYPE: Final = "session/header"
_KEYS: Final = ("type", "version", "sessionId", "seedLength", "parentSessionId")
_KEY_SET: Final = frozenset(_KEYS)


class Header(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """A decoded header: ``seed_length`` events were inherited from ``parent_session_id``."""

    session_id: str
    seed_length: int = 0
    parent_session_id: str | None = None

    def to_json(self) -> dict[str, Any]:
        """The exact header object, keys in the documented order."""
        return {
            "type": HEADER_TYPE,
            "version": 1,
            "sessionId": self.session_id,
            "seedLength": self.seed_length,
            "parentSessionId": self.parent_session_id,
        }


def _bad(message: str, key: str | None = None) -> CorruptLogError:
    return CorruptLogError(
        message, rule="header", path="$" if key is None else child_path("$", key)
    )


def decode_header(value: object) -> Header:
    """Decode line 1 (already parsed JSON). Raises :class:`CorruptLogError` (rule ``header``).

    Integral floats count as integers (docs/protocol.md#json-numbers): ``"version":1.0`` is version
    1.
    """
    if type(value) is not dict:
        raise _bad("session header must be a JSON object")
    # The type first: a first line that is some other event is "not a header" before anything.
    if value.get("type") != HEADER_TYPE:
        raise _bad(f'line 1 must be the session header (type "{HEADER_TYPE}")', "type")
    if value.keys() != _KEY_SET:
        extra = sorted(k for k in value if k not in _KEY_SET)
        if extra:
            raise _bad(f"session header has unexpected key {js_dumps(extra[0])}", extra[0])
        missing = [k for k in _KEYS if k not in value]
        raise _bad(f"session header is missing key {js_dumps(missing[0])}")
    if json_int(value["version"]) != 1:
        raise _bad("session header version must be 1", "version")
    session_id = value["sessionId"]
    if type(session_id) is not str or not session_id:
        raise _bad("session header sessionId must be a non-empty string", "sessionId")
    seed_length = json_int(value["seedLength"])
    if seed_length is None or seed_length < 0:
        raise _bad("session header seedLength must be a safe integer of at least 0", "seedLength")
    parent = value["parentSessionId"]
    if parent is not None and type(parent) is not str:
        raise _bad("session header parentSessionId must be a string or null", "parentSessionId")
    return Header(session_id=session_id, seed_length=seed_length, parent_session_id=parent)
