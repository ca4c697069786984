"""What ``schedlog host run`` and ``schedlog session run`` tell their operator, on stderr.

Both commands log structlog events: their own (``host.started``, ``delivery.sent``,
``host.stopped``, and the ``session.*`` pair) and every diagnostic of the library. This module
renders them in one of two forms (docs/operations.md#host-run):

* **human**, the default when stderr is a terminal: one line per event, the local time of day
  first, with a sentence for the run commands' own events and ``warning: <message>`` for
  diagnostics;
* **json**, with ``--log-format json`` or whenever stderr is not a terminal: one JSON object per
  event, with ``level`` and a UTC ``timestamp``, for log collectors.

``--log-level`` drops the events below a level. Local time here is for display only: rules
always use the zone stored with a reminder.

The commands' argparse wiring imports this module for :func:`add_run_log_args`, so it imports
only the standard library at the top; structlog and the rules layer load when used.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable, Iterable, Mapping, MutableMapping
from datetime import UTC, datetime
from typing import Any, Final, Literal, NamedTuple, TextIO, cast

__all__ = [
    "LOG_FORMATS",
    "LOG_LEVELS",
    "MESSAGE_PREFIX",
    "SERVE_SWITCH_INTERVAL_S",
    "CurrentStderr",
    "HumanRenderer",
    "JsonLines",
    "add_run_log_args",
    "configure_run_logging",
    "json_lines",
    "local_clock",
    "local_clock_reference",
    "local_text",
    "resolve_format",
    "serve_started_message",
    "serve_stopped_message",
    "start_fields",
    "started_message",
    "stopped_message",
    "tune_interpreter",
    "utc_stamp",
    "utc_stamp_reference",
    "write_info_lines",
]

LogFormat = Literal["human", "json"]

#: The interpreter's switch interval in ``host serve`` (seconds; Python's default, 0.005, is
#: kept by ``host run``): the event loop woken by a request, and the writer thread back from a
#: create's ``COMMIT``, wait about this long for the interpreter lock each time while the
#: delivery threads plan and append (docs/decisions.md "Pipelined runs").
SERVE_SWITCH_INTERVAL_S: Final = 0.001


def tune_interpreter() -> None:
    """Set :data:`SERVE_SWITCH_INTERVAL_S` for ``host serve`` (process-wide: the CLI's only)."""
    sys.setswitchinterval(SERVE_SWITCH_INTERVAL_S)


LOG_FORMATS: Final = ("human", "json")
LOG_LEVELS: Final = ("debug", "info", "warning", "error")


def add_run_log_args(parser: argparse.ArgumentParser) -> None:
    """``--log-format`` and ``--log-level`` for a long-running command."""
    parser.add_argument(
        "--log-format",
        choices=LOG_FORMATS,
        help="human lines or JSON objects on stderr (default: human on a terminal, else json)",
    )
    parser.add_argument(
        "--log-level",
        choices=LOG_LEVELS,
        default="info",
        help="the least severe event written",
    )


def resolve_format(requested: str | None, stream: TextIO) -> LogFormat:
    """The explicit choice, else human on a terminal and JSON otherwise."""
    if requested == "human":
        return "human"
    if requested == "json":
        return "json"
    isatty = getattr(stream, "isatty", None)
    return "human" if callable(isatty) and isatty() else "json"


def local_text(instant_ms: int) -> str:
    """An instant in the machine's local time, ``2026-05-04 09:30:00 +02:00``."""
    try:
        local = datetime.fromtimestamp(instant_ms / 1000).astimezone()
    except (OverflowError, OSError, ValueError):  # outside what the platform's time_t holds
        return "local time unavailable"
    offset = local.strftime("%z")
    return f"{local:%Y-%m-%d %H:%M:%S} {offset[:3]}:{offset[3:]}"


def start_fields(next_target: int | None) -> dict[str, Any]:
    """``nextTarget`` (canonical UTC, or None) and ``nextTargetLocal`` of a start event."""
    from schedlog.rules.instants import format_instant

    if next_target is None:
        return {"nextTarget": None, "nextTargetLocal": None}
    return {"nextTarget": format_instant(next_target), "nextTargetLocal": local_text(next_target)}


def _count(n: int, noun: str, plural: str | None = None) -> str:
    return f"{n} {noun}" if n == 1 else f"{n} {plural or noun + 's'}"


def _next(fields: Mapping[str, Any]) -> str:
    target = fields.get("nextTarget")
    if not isinstance(target, str):
        return "no target"
    local = fields.get("nextTargetLocal")
    return f"next target {target}" + (f" ({local} local)" if isinstance(local, str) else "")


def started_message(noun: Literal["host", "session"], fields: Mapping[str, Any]) -> str:
    """The start line: where the command works, how much is active, the next target."""
    if noun == "host":
        where = (
            f"store {fields.get('store')} ({fields.get('backend')}), "
            f"sessions {fields.get('sessions')}"
        )
        active = _count(int(fields.get("active", 0)), "active task")
    else:
        where = f"log {fields.get('log')}, session {fields.get('sessionId')}"
        active = _count(int(fields.get("active", 0)), "active reminder")
    return f"schedule: {noun} run started: {where}, {active}, {_next(fields)}"


def serve_started_message(fields: Mapping[str, Any]) -> str:
    """The start line of ``host serve``: its URL, store, sink, active tasks, next target."""
    sink = fields.get("sessions")
    where = f"sessions {sink}" if sink is not None else f"webhook {fields.get('deliverTo')}"
    active = _count(int(fields.get("active", 0)), "active task")
    return (
        f"schedule: host serve started at {fields.get('url')}: store {fields.get('store')} "
        f"({fields.get('backend')}), {where}, {active}, {_next(fields)}"
    )


def serve_stopped_message(delivered: int, requests: int) -> str:
    return (
        f"schedule: host serve stopped: {_count(delivered, 'delivery', 'deliveries')}, "
        f"{_count(requests, 'request')}"
    )


def stopped_message(noun: Literal["host", "session"], delivered: int) -> str:
    return f"schedule: {noun} run stopped: {_count(delivered, 'delivery', 'deliveries')}"


#: The prefix every diagnostic ``message`` starts with (docs/diagnostics.md); on a terminal of
#: this program it says nothing, so the human form leaves it out.
MESSAGE_PREFIX: Final = "schedule: "


class HumanRenderer:
    """A structlog renderer: the local time of day, then the event's ``message`` without its
    ``schedule: `` prefix (after ``warning:`` or ``error:`` for those levels), or the event's
    name and fields when it has no message."""

    def __call__(self, _logger: Any, _name: str, event_dict: MutableMapping[str, Any]) -> str:
        fields = dict(event_dict)
        event = str(fields.pop("event", ""))
        level = str(fields.pop("level", "info"))
        fields.pop("timestamp", None)
        clock = local_clock(time.time_ns())
        message = fields.get("message", fields.get("text"))
        text = str(message) if message is not None else _plain(event, fields)
        text = text.removeprefix(MESSAGE_PREFIX)
        if level in ("warning", "error", "critical"):
            text = f"{'error' if level == 'critical' else level}: {text}"
        return f"{clock} {text}"


def local_clock(instant_ns: int) -> str:
    """The local time of day (``HH:MM:SS``) of the system clock's reading ``instant_ns``, as
    ``datetime.now().astimezone().strftime("%H:%M:%S")`` gives it at that reading
    (:func:`local_clock_reference`); formatted once per second."""
    global _clock
    key = (instant_ns // 1_000_000_000, time.tzname)  # a changed zone (time.tzset) is a new key
    cached = _clock
    if cached[0] != key:
        cached = _clock = (key, time.strftime("%H:%M:%S", time.localtime(key[0])))
    return cached[1]


_clock: tuple[tuple[int, tuple[str, str]] | None, str] = (None, "")


def local_clock_reference(instant_ns: int) -> str:
    """:func:`local_clock`, through a ``datetime``."""
    moment = datetime.fromtimestamp(instant_ns // 1_000_000_000).astimezone()
    return moment.strftime("%H:%M:%S")


def _plain(event: str, fields: Mapping[str, Any]) -> str:
    rest = " ".join(f"{key}={value}" for key, value in fields.items())
    return f"{event} {rest}".rstrip()


class CurrentStderr:
    """Writes to whatever ``sys.stderr`` is at the time of each write. Diagnostics configured
    by one in-process CLI call (an embedding host, a test) then never keep writing to a stream
    that was swapped out and closed after that call."""

    def write(self, text: str) -> int:
        return sys.stderr.write(text)

    def flush(self) -> None:
        sys.stderr.flush()

    def isatty(self) -> bool:
        return sys.stderr.isatty()


def utc_stamp(instant_ns: int) -> str:
    """What structlog's ``TimeStamper(fmt="iso", utc=True)`` writes for the system clock's
    reading ``instant_ns`` (``time.time_ns()``): ``datetime.now(timezone.utc)`` keeps the
    microseconds below it, ``isoformat`` leaves them out when they are 0, ``+00:00`` becomes
    ``Z``. The date and time of day are formatted once per second (:func:`utc_stamp_reference`
    is the readable form, and the tests hold the two equal)."""
    global _second
    seconds, rest = divmod(instant_ns, 1_000_000_000)
    micros = rest // 1000
    cached = _second
    if cached[0] != seconds:
        day = datetime.fromtimestamp(seconds, UTC).replace(tzinfo=None)
        cached = _second = (seconds, day.isoformat())
    return f"{cached[1]}.{micros:06d}Z" if micros else f"{cached[1]}Z"


_second: tuple[int | None, str] = (None, "")


def utc_stamp_reference(instant_ns: int) -> str:
    """:func:`utc_stamp`, as structlog computes it from a ``datetime``."""
    seconds, rest = divmod(instant_ns, 1_000_000_000)
    moment = datetime.fromtimestamp(seconds, UTC).replace(microsecond=rest // 1000)
    return moment.isoformat().replace("+00:00", "Z")


def _json_encode(renderer: Any) -> Callable[[Any], str] | None:
    """One reused ``json.JSONEncoder`` with structlog's ``JSONRenderer``'s own arguments:
    ``json.dumps(obj, **kw)`` is ``JSONEncoder(**kw).encode(obj)``, without building an encoder
    per line. None when the renderer is not the plain ``json.dumps`` one."""
    import json  # with structlog's renderer only: the offline commands never load json

    kw = getattr(renderer, "_dumps_kw", None)
    if getattr(renderer, "_dumps", None) is not json.dumps or not isinstance(kw, dict):
        return None
    try:
        return json.JSONEncoder(**kw).encode
    except TypeError:  # arguments only dumps takes (cls=...): keep the renderer's own way
        return None


class _RunLines(NamedTuple):
    """What :func:`configure_run_logging` set up, for :func:`write_info_lines`."""

    processors: tuple[Callable[..., Any], ...]
    factory: Callable[[], Any]
    writes_info: bool
    #: The JSON form's one encoder (:func:`_json_encode`), None for the human form.
    json_encode: Callable[[Any], str] | None = None


_configured: _RunLines | None = None


def configure_run_logging(
    log_format: str | None, level: str = "info", stream: TextIO | None = None
) -> LogFormat:
    """Route every structlog event of this process to ``stream`` (stderr) in the chosen form,
    dropping events below ``level``; returns the form in use."""
    import structlog  # the long-running commands only; registering their flags stays light

    global _configured
    out = stream if stream is not None else cast(TextIO, CurrentStderr())
    form = resolve_format(log_format, out)
    renderer: Any = HumanRenderer() if form == "human" else structlog.processors.JSONRenderer()
    processors = [
        structlog.processors.add_log_level,
        structlog.processors.TimeStamper(fmt="iso", utc=True),
        renderer,
    ]
    factory = structlog.PrintLoggerFactory(out)
    structlog.configure(
        processors=processors,
        wrapper_class=structlog.make_filtering_bound_logger(level),
        logger_factory=factory,
        cache_logger_on_first_use=False,
    )
    writes_info = LOG_LEVELS.index(level) <= LOG_LEVELS.index("info")
    encode = _json_encode(renderer) if form == "json" else None
    _configured = _RunLines(tuple(processors), factory, writes_info, encode)
    return form


def write_info_lines(event: str, events: Iterable[Mapping[str, Any]]) -> bool:
    """Log ``event`` at info level once per mapping of fields in ``events``, as
    ``structlog.get_logger().info(event, **fields)`` would, in one print and one flush.

    Only while the configuration :func:`configure_run_logging` made is in force (its
    processors render each line, so every line is what the logger would have written);
    otherwise (a test capturing logs, another configuration) returns False and writes
    nothing, and the caller logs each event itself. ``events`` is not read then."""
    import structlog

    run = _configured
    if run is None:
        return False
    config = structlog.get_config()
    if config["logger_factory"] is not run.factory or tuple(config["processors"]) != (
        run.processors
    ):
        return False
    if not run.writes_info:
        return True  # below the level: the logger would drop every one of them
    lines = _json_lines(event, events, run.json_encode) if run.json_encode else None
    if lines is None:
        lines = []
        for fields in events:
            event_dict: Any = {**fields, "event": event}
            for processor in run.processors:
                event_dict = processor(None, "info", event_dict)
            lines.append(str(event_dict))
    if lines:
        # One print of them all through the factory's logger: under the lock structlog keeps
        # for the stream, so a line another thread logs meanwhile is never cut into them.
        run.factory().msg("\n".join(lines))
    return True


_now_ns = time.time_ns  # the clock TimeStamper reads (datetime.now); tests fix it


def _json_lines(
    event: str, events: Iterable[Mapping[str, Any]], encode: Callable[[Any], str]
) -> list[str]:
    """The JSON form's lines of ``events``: what its processors (``add_log_level``, the UTC
    ``TimeStamper``, ``JSONRenderer``) make of each, the same keys in the same order, with
    :func:`utc_stamp` and one reused encoder (``tests/cli/test_delivery_lines.py`` holds them
    equal to the processors' lines)."""
    lines = []
    for fields in events:
        event_dict = {**fields, "event": event}
        event_dict["level"] = "info"
        event_dict["timestamp"] = utc_stamp(_now_ns())
        lines.append(encode(event_dict))
    return lines


class JsonLines(NamedTuple):
    """The JSON form's writer of whole lines (:func:`json_lines`)."""

    #: Writes the rendered lines in one print, or nothing when info is below the level.
    write: Callable[[list[str]], None]
    #: The ``timestamp`` the form's stamper would give an event now (:func:`utc_stamp`).
    stamp: Callable[[], str]


def json_lines() -> JsonLines | None:
    """When the JSON form :func:`configure_run_logging` set up is in force: how to write lines a
    caller renders itself, each exactly what the processors render of its event's fields
    (an ``info`` event: its fields, ``event``, ``level``, ``timestamp``, by ``json.dumps``);
    otherwise None, and the caller writes through :func:`write_info_lines` or the logger."""
    import structlog

    run = _configured
    if run is None or run.json_encode is None:
        return None
    config = structlog.get_config()
    if config["logger_factory"] is not run.factory or tuple(config["processors"]) != (
        run.processors
    ):
        return None

    def write(lines: list[str]) -> None:
        if lines and run.writes_info:
            run.factory().msg("\n".join(lines))

    return JsonLines(write, lambda: utc_stamp(_now_ns()))
