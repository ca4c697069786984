"""Shared pieces of the command line: request instants, the batch loop, output
(docs/protocol.md#batch)."""

from __future__ import annotations

import re
import sys
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any, Final, TextIO, cast

from schedlog.cli.run_log import CurrentStderr
from schedlog.errors import INTERNAL_MESSAGE, ScheduleError
from schedlog.rules.instants import DAY_MS, days_from_civil, days_in_month
from schedlog.rules.text import js_dumps
from schedlog.strictjson import JSONSyntaxError, loads_strict

__all__ = [
    "InvalidRequest",
    "configure_diagnostics",
    "parse_request_instant",
    "report_error",
    "run_batch",
    "wants_json",
    "write_json_line",
]

#: The longest request line answered, in characters without the newline (16 Mi). A longer line
#: gets ``invalid_request`` and, read from a stream, is never held in memory whole.
MAX_REQUEST_CHARS: Final = 16 * 1024 * 1024

_REQUEST_INSTANT: Final = re.compile(
    r"([+-][0-9]{6}|[0-9]{4})-([0-9]{2})-([0-9]{2})[Tt]([0-9]{2}):([0-9]{2}):([0-9]{2})"
    r"(?:\.([0-9]{1,9}))?([Zz]|[+-][0-9]{2}:[0-9]{2})",
    re.ASCII,
)


class InvalidRequest(Exception):
    """A batch request line that cannot be processed at all (docs/errors.md#cli-code)."""

    code = "invalid_request"

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


def parse_request_instant(value: object, field: str = "now") -> int:
    """Epoch ms of a request instant (docs/protocol.md#batch), with no range check.

    Lenient on purpose, unlike stored instants: lower-case ``t``/``z``, 1-9 fraction digits
    (truncated to ms), ECMAScript expanded years and year 0000 are accepted, so out-of-range
    values reach the rules layer, which answers ``time_out_of_range``.
    """
    if type(value) is not str:
        raise InvalidRequest(f"{field} must be an RFC 3339 instant string.")
    m = _REQUEST_INSTANT.fullmatch(value)
    if m is None:
        raise InvalidRequest(f"{field} must be an RFC 3339 instant string.")
    ytext, mo, d, h, mi, s, frac, off = m.groups()
    if ytext == "-000000":
        raise InvalidRequest(f"{field} must be an RFC 3339 instant string.")
    year = int(ytext)
    month, day, hour, minute, second = int(mo), int(d), int(h), int(mi), int(s)
    if not (1 <= month <= 12 and 1 <= day <= days_in_month(year, month)):
        raise InvalidRequest(f"{field} must name a real date.")
    if hour > 23 or minute > 59 or second > 59:
        raise InvalidRequest(f"{field} must name a real time of day.")
    millis = int((frac or "0")[:3].ljust(3, "0"))
    offset_ms = 0
    if off not in ("Z", "z"):
        oh, om = int(off[1:3]), int(off[4:6])
        if oh > 23 or om > 59:
            raise InvalidRequest(f"{field} has an invalid numeric offset.")
        offset_ms = (oh * 60 + om) * 60_000 * (-1 if off[0] == "-" else 1)
    local = days_from_civil(year, month, day) * DAY_MS + ((hour * 60 + minute) * 60 + second) * 1000
    return local + millis - offset_ms


def configure_diagnostics(stream: TextIO | None = None, *, on_first_use: bool = False) -> None:
    """Render structlog diagnostics as JSON lines on stderr, never on stdout
    (docs/protocol.md#batch, docs/diagnostics.md#events).

    With ``on_first_use`` (``session batch``, whose every logger is a
    :class:`~schedlog._lazy.LazyLogger`), ``structlog`` is imported and configured only
    when a line is first logged (:func:`~schedlog._lazy.configure_on_first_use`)."""

    def configure(structlog: Any) -> None:
        structlog.configure(
            processors=[
                structlog.processors.add_log_level,
                structlog.processors.TimeStamper(fmt="iso", utc=True),
                structlog.processors.JSONRenderer(),
            ],
            logger_factory=structlog.PrintLoggerFactory(
                stream if stream is not None else cast(TextIO, CurrentStderr())
            ),
            cache_logger_on_first_use=False,
        )

    if on_first_use:
        from schedlog._lazy import configure_on_first_use

        configure_on_first_use(configure)
    else:
        import structlog  # only the commands that log need it

        configure(structlog)


def write_json_line(value: Any, out: TextIO | None = None) -> None:
    stream = out if out is not None else sys.stdout
    stream.write(js_dumps(value) + "\n")
    stream.flush()


def wants_json(args: Any, out: TextIO | None = None) -> bool:
    """JSON output: with ``--json``, or whenever stdout is not a terminal (docs/cli.md#schedlog)."""
    stream = out if out is not None else sys.stdout
    return bool(getattr(args, "json", False)) or not stream.isatty()


def report_error(prog: str, error: Mapping[str, Any], as_json: bool) -> None:
    """An error the way docs/cli.md#schedlog states: one ``{"error":{"code","message"}}`` line
    on stdout in JSON output, else ``PROG: error: MESSAGE (CODE)`` on stderr (a lone surrogate
    in the message written as ``\\udxxx``)."""
    if as_json:
        write_json_line({"error": dict(error)})
        return
    from schedlog.rules.text import printable

    message = printable(str(error.get("message", "")))
    print(f"{prog}: error: {message} ({error.get('code')})", file=sys.stderr, flush=True)


Handler = Callable[[dict[str, Any]], Any]


def run_batch(
    lines: Iterable[str], handlers: Mapping[str, Handler], out: TextIO | None = None
) -> None:
    """Answer each request line with exactly one ``{"ok":…}`` or ``{"error":…}`` line.

    A handler returns the ``ok`` value or raises :class:`ScheduleError` (a rule-level error) or
    :class:`InvalidRequest`. Anything else escaping a handler is a bug, reported as
    ``internal_error`` for that line so one bad request never stops the batch.

    ``lines`` may be a text stream (``sys.stdin``): it is then read one bounded line at a time.
    """
    for line in _bounded_lines(lines):
        text = line[:-1] if line.endswith("\n") else line
        try:
            if len(text) > MAX_REQUEST_CHARS:
                raise InvalidRequest(f"request line is longer than {MAX_REQUEST_CHARS} characters.")
            request = decode_request(text)
            op = request.get("op")
            handler = handlers.get(op) if isinstance(op, str) else None
            if handler is None:
                raise InvalidRequest(f"unknown op {js_dumps(request.get('op'))}.")
            result: dict[str, Any] = {"ok": handler(request)}
        except InvalidRequest as exc:
            result = {"error": {"code": exc.code, "message": exc.message}}
        except ScheduleError as exc:
            result = {"error": exc.to_value()}
        except Exception as exc:  # pragma: no cover - defensive, logged for the operator
            diagnostic = {
                "event": "batch.internal_error",
                "level": "error",
                "error": repr(exc),
                "message": f"schedule: batch request failed: {exc!r}",
            }
            print(js_dumps(diagnostic), file=sys.stderr)
            result = {"error": {"code": "internal_error", "message": INTERNAL_MESSAGE}}
        write_json_line(result, out)


class _Overlong(str):
    """Stands for a request line over the limit that was skipped, not kept."""

    def __len__(self) -> int:
        return MAX_REQUEST_CHARS + 1


def _bounded_lines(lines: Iterable[str]) -> Iterator[str]:
    readline = getattr(lines, "readline", None)
    if readline is None:
        yield from lines
        return
    limit = MAX_REQUEST_CHARS + 1
    while line := readline(limit):
        if len(line) < limit or line.endswith("\n"):
            yield line
            continue
        while (rest := readline(1 << 20)) and not rest.endswith("\n"):
            pass
        yield _Overlong()


def decode_request(text: str) -> dict[str, object]:
    """One request line as a JSON object, else :class:`InvalidRequest` (docs/protocol.md#batch)."""
    try:
        request = loads_strict(text.encode("utf-8", "surrogatepass"))
    except JSONSyntaxError as exc:
        raise InvalidRequest(f"request is not valid JSON: {exc.message}") from None
    if not isinstance(request, dict):
        raise InvalidRequest("request must be a JSON object.")
    return request


def require(request: dict[str, Any], key: str, kind: type | tuple[type, ...]) -> Any:
    """A required request member of a JSON type, else ``invalid_request`` naming it."""
    if key not in request:
        raise InvalidRequest(f"{key} is required.")
    value = request[key]
    if not isinstance(value, kind) or (isinstance(value, bool) and kind is not bool):
        from schedlog.rules.records import json_type

        names: dict[type, str] = {dict: "a JSON object", list: "a JSON array", str: "a string"}
        wanted = names.get(kind if isinstance(kind, type) else type(None), "another JSON type")
        raise InvalidRequest(f"{key} must be {wanted}, not {json_type(value)}.")
    return value
