"""Record decoders (docs/protocol.md#records,
docs/protocol.md#record-decoders) and record construction from
create arguments (docs/protocol.md#session-tools, docs/protocol.md#host-tools with
docs/protocol.md#host-tools).

Decoders are strict and never recompute anything: a stored ``scheduledAt`` is a committed
target (docs/rules.md#committed-targets) and a stored ``timeZone`` keeps its spelling. Every decoder
failure is a
:class:`CorruptScheduleError` whose message names the field and whose ``field`` attribute is
that field (``None`` when the record as a whole is wrong: not an object, wrong key set).
Builders raise
:class:`ScheduleInputError` with the codes and messages of the tools.
"""

from __future__ import annotations

from itertools import repeat
from operator import is_
from typing import TYPE_CHECKING, Final, Literal, NamedTuple, cast

from schedlog._lazy import lazy_module
from schedlog.errors import CorruptScheduleError, ScheduleInputError
from schedlog.rules.decide import (
    MIN_EVERY_SECONDS_HOST,
    MIN_EVERY_SECONDS_SESSION,
    cached_cron,
    check_after_seconds,
    check_every_seconds,
    first_calendar,
    first_cron,
    offset_target,
)
from schedlog.rules.instants import parse_canonical_instant
from schedlog.rules.record import Kind, Record
from schedlog.rules.text import (
    JS_WHITESPACE,
    is_blank,
    is_trimmed,
    js_trim,
    json_int,
    shown_value,
    utf16_len,
)

# The `at`, calendar, cron and zone modules load when a record of a kind that needs them is
# first built or decoded: session-local records (after, at, every) never need them.
if TYPE_CHECKING:
    from schedlog.rules import at as _at
    from schedlog.rules import calendar as _calendar
    from schedlog.rules import cron as _cron
    from schedlog.rules import zones as _zones
    from schedlog.rules.cron import CronRule
    from schedlog.rules.zones import Zone
else:
    _at = lazy_module("schedlog.rules.at")
    _calendar = lazy_module("schedlog.rules.calendar")
    _cron = lazy_module("schedlog.rules.cron")
    _zones = lazy_module("schedlog.rules.zones")

__all__ = [
    "HOST_SELECTORS",
    "MAX_EVERY_SECONDS",
    "MSG_HOST_SELECTOR",
    "MSG_PROMPT",
    "MSG_SESSION_SELECTOR",
    "MSG_TITLE_LENGTH",
    "MSG_TITLE_REQUIRED",
    "SESSION_SELECTORS",
    "CreateRequest",
    "build_host_record",
    "build_record",
    "build_session_record",
    "check_host_prompt",
    "check_prompt",
    "check_title",
    "decode_host_record",
    "decode_legacy_record",
    "json_type",
    "parse_cron_selector",
    "record_from_json",
    "typed_texts_ok",
    "validate_host_create_args",
    "validate_session_create_args",
]

#: Largest ``everySeconds`` whose interval in milliseconds is still a safe integer
# (docs/protocol.md#record-decoders).
MAX_EVERY_SECONDS: Final = 9_007_199_254_740
TITLE_MAX_UNITS: Final = 120
#: The longest prompt a host create or update takes, in UTF-16 code units (docs/http-api.md#limits).
PROMPT_MAX_UNITS: Final = 8000

MSG_PROMPT: Final = "prompt must be non-empty after trimming."
MSG_TITLE_REQUIRED: Final = "title is required and must be non-empty after trimming."
MSG_TITLE_LENGTH: Final = "title must be at most 120 characters."
MSG_PROMPT_LENGTH: Final = f"prompt must be at most {PROMPT_MAX_UNITS} characters."
MSG_SESSION_SELECTOR: Final = (
    "schedule_create accepts exactly one of after_seconds, at, or every_seconds."
)
MSG_HOST_SELECTOR: Final = (
    "schedule_create accepts exactly one of after_seconds, at, every_seconds, daily, weekly,"
    " or cron."
)
MSG_CRON_SHAPE: Final = "cron must be an object with exactly expression and time_zone."
_CRON_EXAMPLE: Final = '{"cron": {"expression": "0 9 * * 1-5", "time_zone": "Europe/Berlin"}}'

SESSION_SELECTORS: Final = ("after_seconds", "at", "every_seconds")
HOST_SELECTORS: Final = ("after_seconds", "at", "every_seconds", "daily", "weekly", "cron")
_SESSION_ARG_KEYS: Final = frozenset({"prompt", *SESSION_SELECTORS})
_HOST_ARG_KEYS: Final = frozenset({"prompt", "title", *HOST_SELECTORS})
_CRON_KEYS: Final = frozenset({"expression", "time_zone"})

Selector = Literal["after_seconds", "at", "every_seconds", "daily", "weekly", "cron"]

# --- decoders --------------------------------------------------------------------------------

#: The kind-specific keys of each record shape, in table order (docs/protocol.md#records).
_KIND_FIELDS: Final[dict[str, tuple[str, ...]]] = {
    "after": ("afterSeconds",),
    "at": (),
    "every": ("everySeconds",),
    "daily": ("time", "timeZone"),
    "weekly": ("time", "timeZone", "weekdays"),
    "cron": ("expression", "timeZone"),
}
_LEGACY_KINDS: Final = ("after", "at", "every")
_HOST_KINDS: Final = ("after", "at", "every", "daily", "weekly", "cron")


def _corrupt(field: str, requirement: str) -> CorruptScheduleError:
    return CorruptScheduleError(f"schedule record {field} {requirement}", field=field)


def _stored_title(value: object) -> str:
    """docs/protocol.md#records stored-title rules: non-blank string, raw length <= 120 units,
    already trimmed."""
    if type(value) is not str or is_blank(value):
        raise _corrupt("title", "is required and must be non-empty after trimming")
    if utf16_len(value) > TITLE_MAX_UNITS:
        raise _corrupt("title", "must be at most 120 characters")
    if not is_trimmed(value):
        raise _corrupt("title", "must be a trimmed string")
    return value


def _stored_weekdays(value: object) -> tuple[int, ...]:
    days: list[int] = []
    if type(value) is list and value:
        for element in value:
            n = json_int(element)
            if n is None or not 1 <= n <= 7 or (days and n <= days[-1]):
                days = []
                break
            days.append(n)
    if not days:
        raise _corrupt(
            "weekdays", "must be a non-empty strictly ascending array of ISO weekdays 1 through 7"
        )
    return tuple(days)


def _stored_zone(value: object) -> str:
    try:
        _zones.check_time_zone(value)
    except ScheduleInputError:
        raise _corrupt("timeZone", "must be UTC or a valid IANA Area/Location name") from None
    assert type(value) is str
    return value


def _stored_expression(value: object) -> str:
    if type(value) is not str:
        raise _corrupt("expression", "must be a cron expression string")
    try:
        rule = cached_cron(value)
    except ScheduleInputError as exc:
        raise _corrupt("expression", f"is not a valid cron expression: {exc.message}") from None
    if rule.canonical != value:
        raise _corrupt("expression", "is not canonical: cron expression must be canonical")
    return value


def _decode(value: object, *, host: bool) -> Record:
    """The shared decoder: check order of docs/protocol.md#record-decoders, first failure wins."""
    if not isinstance(value, dict):
        raise CorruptScheduleError("schedule record must be a JSON object")
    title: str | None = None
    if host or "title" in value:
        title = _stored_title(value.get("title"))
    kind = value.get("kind")
    kinds = _HOST_KINDS if host else _LEGACY_KINDS
    if type(kind) is not str or kind not in kinds:
        raise _corrupt("kind", f"must be one of {', '.join(kinds)}")
    specific = _KIND_FIELDS[kind]
    keys = ("id", "kind", *(("title",) if title is not None else ()), "prompt", *specific)
    keys = (*keys, "scheduledAt")
    if value.keys() != set(keys):
        raise CorruptScheduleError(
            f"schedule record keys for kind {kind} must be exactly {', '.join(keys)}"
        )
    record_id = value["id"]
    if type(record_id) is not str or not record_id or not is_trimmed(record_id):
        raise _corrupt("id", "must be a non-empty trimmed string")
    prompt = value["prompt"]
    if type(prompt) is not str or is_blank(prompt) or not is_trimmed(prompt):
        raise _corrupt("prompt", "must be a non-empty trimmed string")

    after_seconds: int | None = None
    every_seconds: int | None = None
    time: str | None = None
    time_zone: str | None = None
    expression: str | None = None
    weekdays: tuple[int, ...] | None = None
    if kind == "after":
        after_seconds = json_int(value["afterSeconds"])
        if after_seconds is None or after_seconds < 1:
            raise _corrupt("afterSeconds", "must be a positive safe integer")
    elif kind == "every":
        minimum = MIN_EVERY_SECONDS_HOST if host else MIN_EVERY_SECONDS_SESSION
        every_seconds = json_int(value["everySeconds"])
        if every_seconds is None or every_seconds < minimum:
            raise _corrupt("everySeconds", f"must be a safe integer of at least {minimum}")
        if every_seconds > MAX_EVERY_SECONDS:
            raise _corrupt("everySeconds", f"must be at most {MAX_EVERY_SECONDS}")
    elif kind in ("daily", "weekly"):
        raw_time = value["time"]
        if type(raw_time) is not str or _at.parse_normalized_time(raw_time) is None:
            raise _corrupt("time", "must be a normalized HH:MM:SS.mmm time of day")
        time = raw_time
        time_zone = _stored_zone(value["timeZone"])
        if kind == "weekly":
            weekdays = _stored_weekdays(value["weekdays"])
    elif kind == "cron":
        expression = _stored_expression(value["expression"])
        time_zone = _stored_zone(value["timeZone"])

    scheduled_at = parse_canonical_instant(value["scheduledAt"])
    if scheduled_at is None:
        raise _corrupt("scheduledAt", "must be a canonical YYYY-MM-DDTHH:MM:SS.mmmZ instant")
    return Record(
        id=record_id,
        kind=cast(Kind, kind),
        prompt=prompt,
        scheduled_at=scheduled_at,
        title=title,
        after_seconds=after_seconds,
        every_seconds=every_seconds,
        time=time,
        time_zone=time_zone,
        weekdays=weekdays,
        expression=expression,
    )


def typed_texts_ok(ids: list[str], prompts: list[str], titles: list[str]) -> bool:
    """The text rules of stored records, for many at once (the typed fast form of
    :func:`decode_legacy_record`'s checks, used by the typed line decoders of
    :mod:`schedlog.eventlog.wire`): every id, prompt and title trimmed, every title at most
    120 UTF-16 units. The lists hold non-empty strings (the typed decoders' ``Meta``)."""
    ws = repeat(JS_WHITESPACE)
    # str.strip returns its argument itself when there is nothing to strip
    if not (
        all(map(is_, map(str.strip, ids, ws), ids))
        and all(map(is_, map(str.strip, prompts, ws), prompts))
        and all(map(is_, map(str.strip, titles, ws), titles))
    ):
        return False
    return not titles or max(map(utf16_len, titles)) <= TITLE_MAX_UNITS


def decode_legacy_record(value: object) -> Record:
    """Decode a session-local (legacy) record (docs/protocol.md#record-decoders): kinds after, at,
    every; optional title.

    Raises :class:`CorruptScheduleError` (``corrupt_schedule_log``) naming the failing field.
    """
    return _decode(value, host=False)


def decode_host_record(value: object) -> Record:
    """Decode a host record (docs/protocol.md#record-decoders): all six kinds; ``title`` required
    and checked first.

    Raises :class:`CorruptScheduleError` (``corrupt_schedule_log``) naming the failing field.
    """
    return _decode(value, host=True)


def record_from_json(value: object, protocol: Literal["host", "legacy", "auto"]) -> Record:
    """Decode with the named decoder; ``auto`` is the batch ``decide`` rule
    (docs/protocol.md#batch-rules): the host decoder when the object has a ``title`` key, the legacy
    decoder otherwise."""
    if protocol == "auto":
        host = isinstance(value, dict) and "title" in value
    else:
        host = protocol == "host"
    return _decode(value, host=host)


# --- create arguments ------------------------------------------------------------------------


class CreateRequest(NamedTuple):
    """Create arguments parsed once by the shape-only checks (no clock, no persistence);
    :func:`build_record` builds the record from it without checking them again."""

    selector: Selector
    #: ``after_seconds`` / ``every_seconds``: the checked interval (an ``int``); ``at``,
    #: ``daily``, ``weekly``, ``cron``: the raw JSON value, parsed by :func:`build_record`
    #: (``at`` needs the clock sample).
    value: object
    prompt: str  #: trimmed
    title: str | None  #: trimmed; None for the session-local protocol


def check_prompt(value: object) -> str:
    """A prompt argument: a string, non-blank after trimming; returns it trimmed
    (docs/protocol.md#records)."""
    if type(value) is not str or is_blank(value):
        raise ScheduleInputError("invalid_prompt", MSG_PROMPT)
    return js_trim(value)


def check_host_prompt(value: object) -> str:
    """A host prompt argument [H]: :func:`check_prompt`, then at most :data:`PROMPT_MAX_UNITS`
    UTF-16 code units once trimmed (docs/protocol.md#host-tools)."""
    trimmed = check_prompt(value)
    if len(trimmed) * 2 > PROMPT_MAX_UNITS and utf16_len(trimmed) > PROMPT_MAX_UNITS:
        raise ScheduleInputError("invalid_prompt", MSG_PROMPT_LENGTH)
    return trimmed


def check_title(value: object) -> str:
    """A title argument at creation or update [H]: returns it trimmed (docs/protocol.md#records)."""
    if type(value) is not str or is_blank(value):
        raise ScheduleInputError("invalid_prompt", MSG_TITLE_REQUIRED)
    trimmed = js_trim(value)
    if utf16_len(trimmed) > TITLE_MAX_UNITS:
        raise ScheduleInputError("invalid_prompt", MSG_TITLE_LENGTH)
    return trimmed


def _only_selector(
    args: object, allowed: frozenset[str], selectors: tuple[str, ...], message: str
) -> tuple[dict[object, object], Selector]:
    """The arguments and their one selector, else ``invalid_selector``: the recommended
    ``message``, then what was wrong (the arguments' JSON type, the unknown keys, or the
    selectors given)."""
    if not isinstance(args, dict):
        raise ScheduleInputError("invalid_selector", f"{message} {_not_object('arguments', args)}")
    unknown = [key for key in args if key not in allowed]
    if unknown:
        names = ", ".join(_shown_key(key) for key in unknown[:5])
        detail = f"Unknown key{'s' * (len(unknown) > 1)}: {names}."
        if "time_zone" in unknown:
            detail += " A time_zone goes inside its selector: " + _CRON_EXAMPLE + "."
        raise ScheduleInputError("invalid_selector", f"{message} {detail}")
    present = [key for key in selectors if key in args]
    if len(present) != 1:
        given = f"Got {', '.join(present)}." if present else "Got none."
        raise ScheduleInputError("invalid_selector", f"{message} {given}")
    return args, cast(Selector, present[0])


def json_type(value: object) -> str:
    """The JSON type name of a decoded value, for messages."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    return "an array" if isinstance(value, list) else "an object"


def _not_object(what: str, value: object) -> str:
    return f"The {what} must be a JSON object, not {json_type(value)}."


def _shown_key(key: object) -> str:
    return shown_value(key) if isinstance(key, str) else repr(key)


def _check_numeric(selector: Selector, value: object, every_minimum: int) -> object:
    """The checked interval of a numeric selector; any other selector's value unchanged."""
    if selector == "after_seconds":
        return check_after_seconds(value)
    if selector == "every_seconds":
        return check_every_seconds(value, every_minimum)
    return value


def validate_session_create_args(args: object) -> CreateRequest:
    """Shape-only checks of session-local ``schedule_create`` (docs/protocol.md#session-tools).

    Selector (``invalid_selector``; ``title`` is an unknown key here), prompt
    (``invalid_prompt``), then ``after_seconds`` / ``every_seconds`` (``invalid_rule``,
    ``frequency_too_high`` below 300). Needs neither the clock nor persistence.
    """
    mapping, selector = _only_selector(
        args, _SESSION_ARG_KEYS, SESSION_SELECTORS, MSG_SESSION_SELECTOR
    )
    prompt = check_prompt(mapping.get("prompt"))
    value = _check_numeric(selector, mapping[selector], MIN_EVERY_SECONDS_SESSION)
    return CreateRequest(selector, value, prompt, None)


def validate_host_create_args(args: object) -> CreateRequest:
    """Shape-only checks of host ``schedule_create`` (docs/protocol.md#host-tools).

    Selector, prompt, title required, title length, then ``after_seconds`` / ``every_seconds``
    (``frequency_too_high`` below 60). Needs neither the clock nor persistence.
    """
    mapping, selector = _only_selector(args, _HOST_ARG_KEYS, HOST_SELECTORS, MSG_HOST_SELECTOR)
    prompt = check_host_prompt(mapping.get("prompt"))
    title = check_title(mapping.get("title"))
    value = _check_numeric(selector, mapping[selector], MIN_EVERY_SECONDS_HOST)
    return CreateRequest(selector, value, prompt, title)


def parse_cron_selector(value: object) -> tuple[CronRule, Zone, str]:
    """A ``cron`` selector ``{"expression","time_zone"}`` (docs/rules.md#cron): the parsed rule, the
    zone and its canonical name. The expression is checked before the zone."""
    if not isinstance(value, dict):
        shown = f": {shown_value(value)}" if isinstance(value, str) else ""
        detail = f"Got {json_type(value)}{shown}. Example: {_CRON_EXAMPLE}."
        raise ScheduleInputError("invalid_rule", f"{MSG_CRON_SHAPE} {detail}")
    if value.keys() != _CRON_KEYS:
        keys = ", ".join(_shown_key(key) for key in list(value)[:5]) or "none"
        raise ScheduleInputError("invalid_rule", f"{MSG_CRON_SHAPE} Got keys: {keys}.")
    rule = _cron.parse_cron(value["expression"])
    zone, canonical = _zones.check_time_zone(value["time_zone"])
    return rule, zone, canonical


def build_record(request: CreateRequest, *, id: str, now: int) -> Record:
    """Build the record of a parsed create request at clock sample ``now`` (epoch ms).

    The request's prompt, title and interval were checked when it was parsed and are not
    checked again. Raises :class:`ScheduleInputError` for what needs the clock or the rule
    parsers (``invalid_rule``, ``invalid_time_zone``, ``time_out_of_range``, ``not_future``).
    """
    selector, value, prompt, title = request
    if selector == "after_seconds":
        seconds = cast(int, value)
        return Record(
            id=id,
            kind="after",
            title=title,
            prompt=prompt,
            after_seconds=seconds,
            scheduled_at=offset_target(now, seconds),
        )
    if selector == "at":
        target = _at.parse_at(value, now)
        return Record(id=id, kind="at", title=title, prompt=prompt, scheduled_at=target)
    if selector == "every_seconds":
        seconds = cast(int, value)
        return Record(
            id=id,
            kind="every",
            title=title,
            prompt=prompt,
            every_seconds=seconds,
            scheduled_at=offset_target(now, seconds),
        )
    if selector in ("daily", "weekly"):
        rule = _calendar.parse_calendar(selector, value)
        target = first_calendar(rule, now)
        return Record(
            id=id,
            kind=rule.kind,
            title=title,
            prompt=prompt,
            time=rule.time,
            time_zone=rule.time_zone,
            weekdays=rule.weekdays,
            scheduled_at=target,
        )
    cron, zone, canonical = parse_cron_selector(value)
    target = first_cron(cron, zone, now)
    return Record(
        id=id,
        kind="cron",
        title=title,
        prompt=prompt,
        expression=cron.canonical,
        time_zone=canonical,
        scheduled_at=target,
    )


def build_session_record(args: object, *, id: str, now: int) -> Record:
    """The record session-local ``schedule_create`` builds at ``now``
    (docs/protocol.md#session-tools).

    ``id`` is the allocated id (docs/protocol.md#id-allocation); ``now`` is the one clock sample,
    epoch ms.
    """
    return build_record(validate_session_create_args(args), id=id, now=now)


def build_host_record(args: object, *, id: str, now: int) -> Record:
    """The record host ``schedule_create`` builds at ``now`` (docs/protocol.md#host-tools
    step 4), for all six kinds. ``now`` is the one clock sample, epoch ms."""
    return build_record(validate_host_create_args(args), id=id, now=now)
