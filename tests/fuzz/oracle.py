"""The fuzz property: what may come out of the library for hostile input.

* No exception escapes except the documented ones: :class:`ScheduleError` subclasses (with a
  docs/errors.md code) and, where documented, :class:`JSONSyntaxError`.
* Every rejection (raised error, error value, result code) carries a code from docs/errors.md, and
  from the narrower set the documentation allows at that entry point.
* Every value handed back to a caller is JSON that our own writer can encode and read back.

A violation raises :class:`Escape`, which names what escaped and from where.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any, Final, TypeVar

from schedlog.errors import ScheduleError
from schedlog.rules.text import js_dumps
from schedlog.strictjson import loads_strict

T = TypeVar("T")

#: Every code of docs/errors.md, table by table.
INPUT_CODES: Final = frozenset(  # docs/errors.md#input-codes
    {
        "invalid_selector",
        "invalid_prompt",
        "invalid_session_id",
        "invalid_rule",
        "invalid_time_zone",
        "not_future",
        "time_out_of_range",
        "frequency_too_high",
        "corrupt_schedule_log",
        "persistence_uncertain",
        "internal_error",
    }
)
RESULT_CODES: Final = frozenset(  # docs/errors.md#result-codes
    {
        "schedule_not_found",
        "schedule_ended",
        "schedule_conflict",
        "delivery_cursor_not_found",
        "pause_unsupported",
    }
)
STORE_OPEN_CODES: Final = frozenset({"malformed-medium", "version-mismatch", "invalid-record"})
#: Opening a store another service holds (our addition to the three validation failures).
STORE_LOCK_CODES: Final = frozenset({"store-locked"})
#: Opening a store that is not there, or whose driver or server is not (docs/errors.md#store-open).
STORE_REACH_CODES: Final = frozenset(
    {"store-not-found", "backend-unavailable", "store-unreachable"}
)
#: ``host run`` / ``host serve`` refusing to start (docs/errors.md#startup).
STARTUP_CODES: Final = frozenset({"sessions-not-directory", "listen-failed"})
CLI_CODES: Final = frozenset({"invalid_request"})  # docs/errors.md#cli-code
#: Answered by the Python API's tool dispatchers only (docs/errors.md#embedding-codes): no batch
#: line can carry arguments that are not an object, nor reach an engine that is not running.
EMBEDDING_CODES: Final = frozenset({"invalid_arguments", "engine_not_running"})
#: docs/errors.md#session-log-files
SESSION_LOG_CODES: Final = frozenset({"session_log_not_regular", "session_log_unreadable"})
#: Every stable code: the code headings of docs/errors.md (tests/fuzz/test_oracle.py checks).
STABLE_CODES: Final = (
    INPUT_CODES
    | RESULT_CODES
    | STORE_OPEN_CODES
    | STORE_LOCK_CODES
    | STORE_REACH_CODES
    | STARTUP_CODES
    | CLI_CODES
    | EMBEDDING_CODES
    | SESSION_LOG_CODES
)

# Narrower sets, per entry point, as the documentation states them.
#: docs/protocol.md#record-decoders, docs/protocol.md#changes, docs/protocol.md#fold
DECODER: Final = frozenset({"corrupt_schedule_log"})
CRON: Final = frozenset({"invalid_rule"})  # docs/rules.md#cron-grammar
ZONE: Final = frozenset({"invalid_time_zone"})  # docs/rules.md#zone-check
AT: Final = frozenset({"invalid_rule", "invalid_time_zone", "time_out_of_range", "not_future"})
DECIDE: Final = frozenset({"time_out_of_range", "invalid_rule"})  # docs/rules.md#catch-up
CREATE: Final = INPUT_CODES - {
    "corrupt_schedule_log",
    "persistence_uncertain",
    "internal_error",
    "invalid_session_id",  # host only (HOST_TOOL)
}
UPDATE: Final = CREATE | {"schedule_conflict"}
#: Host tool values (docs/protocol.md#host-tools) never carry corrupt_schedule_log or
# persistence_uncertain.
#: internal_error is allowed (a session id the store cannot hold fails the write), but any
#: exception that reached the tools' catch-all is reported separately (``tool.failed``).
#: HostTools.call answers invalid_arguments for arguments that are not an object (a fuzzed
#: call passes them straight to it; a batch line cannot).
HOST_TOOL: Final = INPUT_CODES - {"corrupt_schedule_log", "persistence_uncertain"} | {
    "invalid_arguments",
    "schedule_not_found",
    "schedule_ended",
    "schedule_conflict",
    "pause_unsupported",  # docs/protocol.md#pause: pausing in the schedule.json document
}
HOST_REMOTE: Final = HOST_TOOL | {"delivery_cursor_not_found"}
#: Session tool values (docs/protocol.md#session-tools) on a readable log; corrupt logs add
# corrupt_schedule_log.
SESSION_TOOL: Final = CREATE | {"schedule_not_found", "corrupt_schedule_log"}
SESSION_TOOL_DAMAGED: Final = SESSION_TOOL | {"persistence_uncertain"}


class Escape(AssertionError):
    """The fuzz property was violated: an undocumented exception, code or value."""


def check_code(code: object, allowed: Iterable[str], where: str) -> None:
    if type(code) is not str or code not in STABLE_CODES:
        raise Escape(f"{where}: code {code!r} is not a docs/errors.md code")
    if code not in allowed:
        raise Escape(f"{where}: code {code!r} is not allowed here (allowed: {sorted(allowed)})")


def check_error(exc: ScheduleError, allowed: Iterable[str], where: str) -> None:
    check_code(exc.code, allowed, where)
    if type(exc.message) is not str or not exc.message:
        raise Escape(f"{where}: {exc!r} has no message")


def expect(
    where: str,
    fn: Callable[[], T],
    allowed: Iterable[str],
    also: tuple[type[BaseException], ...] = (),
) -> T | BaseException:
    """Run ``fn``: its value, or the documented error it raised (after checking its code)."""
    try:
        return fn()
    except ScheduleError as exc:
        check_error(exc, allowed, where)
        return exc
    except also as exc:
        return exc
    except Escape:
        raise
    except BaseException as exc:
        if isinstance(exc, KeyboardInterrupt | SystemExit):
            raise
        raise Escape(f"{where}: {type(exc).__name__} escaped: {exc!r}"[:2000]) from exc


def check_json(value: object, where: str) -> Any:
    """``value`` must encode as compact JSON and decode back; returns the decoded copy."""
    try:
        text = js_dumps(value)
        return loads_strict(text)
    except Exception as exc:
        raise Escape(f"{where}: value is not JSON our writer can round-trip: {exc!r}") from exc


def check_value(value: object, allowed: Iterable[str], where: str) -> None:
    """A tool or remote value: JSON, and every ``code`` it carries is allowed."""
    check_json(value, where)
    items = value if isinstance(value, list) else [value]
    for item in items:
        if isinstance(item, dict) and "code" in item:
            check_code(item["code"], allowed, where)
            if "message" in item and (type(item["message"]) is not str or not item["message"]):
                raise Escape(f"{where}: error value {item!r} has no message")


def round_trip(
    where: str, encoded: object, decode: Callable[[Any], T], encode: Callable[[T], object]
) -> None:
    """What we write must read back as itself: ``encode(decode(json(encoded))) == json(encoded)``.

    Compared as JSON, since JSON itself joins two lone surrogates into one astral character.
    """
    data = check_json(encoded, where)
    again = expect(f"{where} read back", lambda: decode(data), ())
    if isinstance(again, BaseException) or check_json(encode(again), where) != data:
        raise Escape(f"{where} does not read back as itself: {data!r} -> {again!r}"[:2000])
