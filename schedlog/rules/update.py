"""Pure resolution of a host update: compare-and-set, content rules, timing equivalence
(docs/protocol.md#update "Resolution", steps 1-7).

The service looks the task up, checks it is active and samples ``now`` inside its FIFO slot;
this module decides what, if anything, to write. An equivalent timing change is a no-op that
keeps the committed target, the kind and the stored zone spelling; any other timing change
rebuilds the record exactly as at creation from the same ``now``, keeping the id.
"""

from __future__ import annotations

from typing import Any, Final, Literal, NamedTuple, cast

from msgspec.structs import replace

from schedlog.absent import ABSENT, Absent
from schedlog.errors import CorruptScheduleError, ScheduleInputError
from schedlog.rules.at import MSG_OUT_OF_RANGE, check_future, parse_at_instant
from schedlog.rules.calendar import parse_calendar
from schedlog.rules.decide import (
    MIN_EVERY_SECONDS_HOST,
    cached_cron,
    check_every_seconds,
    first_calendar,
    first_cron,
    first_every,
)
from schedlog.rules.instants import is_representable
from schedlog.rules.record import Record
from schedlog.rules.records import (
    check_host_prompt,
    check_title,
    decode_host_record,
    parse_cron_selector,
)
from schedlog.rules.zones import canonical_zone_name

__all__ = [
    "KIND_OF_SELECTOR",
    "MSG_CHANGE_KEYS",
    "MSG_CHANGE_SHAPE",
    "MSG_EXPECTED",
    "UpdateResult",
    "check_update_text",
    "matches_expected",
    "resolve_update",
]

MSG_EXPECTED: Final = "expected must be a complete valid Schedule record."
MSG_CHANGE_SHAPE: Final = (
    "Timing change must be an object with exactly one supported timing selector."
)
MSG_CHANGE_KEYS: Final = "Timing change must contain exactly kind and its matching timing selector."

ChangeKind = Literal["at", "every", "daily", "weekly", "cron"]
#: The selector key that goes with each change kind.
_SELECTOR_KEY: Final[dict[str, str]] = {
    "at": "at",
    "every": "every_seconds",
    "daily": "daily",
    "weekly": "weekly",
    "cron": "cron",
}
#: The change kind of each timing selector of the update tool, in the tool's order.
KIND_OF_SELECTOR: Final[dict[str, ChangeKind]] = {
    key: cast(ChangeKind, kind) for kind, key in _SELECTOR_KEY.items()
}


def check_update_text(title: object, prompt: object) -> tuple[str | Absent, str | Absent]:
    """The title, then the prompt of an update, each checked when present and returned
    trimmed (:data:`ABSENT`, "keep", as it is): ``invalid_prompt`` otherwise. The one check
    of both: the update tool runs it before it looks the task up (docs/protocol.md#host-tools
    step 4), :func:`resolve_update` after the compare-and-set."""
    new_title = title if isinstance(title, Absent) else check_title(title)
    new_prompt = prompt if isinstance(prompt, Absent) else check_host_prompt(prompt)
    return new_title, new_prompt


class UpdateResult(NamedTuple):
    """The result of a resolution.

    ``updated`` True: write ``record``. ``updated`` False with a ``record``: nothing changed
    (``record`` is the current one). ``updated`` False with ``code == "schedule_conflict"``:
    ``expected`` no longer matches; ``record`` is None.
    """

    updated: bool
    record: Record | None
    code: str | None = None

    def to_json(self, *, id: str | None = None) -> dict[str, Any]:
        """The result value: ``{"id"?, "updated", "record"}`` or ``{"id"?, "updated", "code"}``."""
        out: dict[str, Any] = {} if id is None else {"id": id}
        out["updated"] = self.updated
        if self.record is not None:
            out["record"] = self.record.to_json()
        if self.code is not None:
            out["code"] = self.code
        return out


def _same_zone(stored: str | None, canonical: str) -> bool:
    return stored is not None and canonical_zone_name(stored) == canonical


def _check_now(now: int) -> None:
    if not is_representable(now):
        raise ScheduleInputError("time_out_of_range", MSG_OUT_OF_RANGE)


def _change_kind(change: object) -> tuple[ChangeKind, object]:
    """Step 5: the change's kind and its selector value."""
    if not isinstance(change, dict):
        raise ScheduleInputError("invalid_rule", MSG_CHANGE_SHAPE)
    kind = change.get("kind")
    if type(kind) is not str or kind not in _SELECTOR_KEY:
        raise ScheduleInputError("invalid_rule", MSG_CHANGE_SHAPE)
    key = _SELECTOR_KEY[kind]
    if change.keys() != {"kind", key}:
        raise ScheduleInputError("invalid_rule", MSG_CHANGE_KEYS)
    return cast(ChangeKind, kind), change[key]


def _retime(
    current: Record, kind: ChangeKind, value: object, now: int, title: str | None, prompt: str
) -> Record | None:
    """Step 6: None when the change is equivalent, else the record rebuilt at ``now``."""
    base = Record(id=current.id, kind="at", title=title, prompt=prompt, scheduled_at=0)
    if kind == "at":
        instant = parse_at_instant(value, now)
        if current.kind in ("after", "at") and instant == current.scheduled_at:
            return None
        check_future(instant, now)
        return replace(base, scheduled_at=instant)
    if kind == "every":
        seconds = check_every_seconds(value, MIN_EVERY_SECONDS_HOST)
        _check_now(now)
        if current.kind == "every" and current.every_seconds == seconds:
            return None
        target = first_every(seconds, now, MIN_EVERY_SECONDS_HOST)
        return replace(base, kind="every", every_seconds=seconds, scheduled_at=target)
    if kind in ("daily", "weekly"):
        rule = parse_calendar(kind, value)
        _check_now(now)
        if (
            current.kind == rule.kind
            and current.time == rule.time
            and _same_zone(current.time_zone, rule.time_zone)
            and (rule.weekdays is None or current.weekdays == rule.weekdays)
        ):
            return None
        target = first_calendar(rule, now)
        return replace(
            base,
            kind=rule.kind,
            time=rule.time,
            time_zone=rule.time_zone,
            weekdays=rule.weekdays,
            scheduled_at=target,
        )
    cron, zone, canonical = parse_cron_selector(value)
    _check_now(now)
    if current.kind == "cron" and _same_zone(current.time_zone, canonical):
        stored = current.expression
        try:
            stored_canonical = None if stored is None else cached_cron(stored).canonical
        except ScheduleInputError:
            stored_canonical = None
        if stored_canonical == cron.canonical:
            return None
    target = first_cron(cron, zone, now)
    return replace(
        base, kind="cron", expression=cron.canonical, time_zone=canonical, scheduled_at=target
    )


def matches_expected(current: Record, expected: object) -> bool:
    """Compare-and-set: whether ``expected``, the raw JSON record a caller last saw, is the
    ``current`` record (docs/protocol.md#update; also a pause or resume with ``expected``).
    Raises :class:`ScheduleInputError` ``invalid_rule`` when ``expected`` does not decode."""
    try:
        decoded = decode_host_record(expected)
    except CorruptScheduleError:
        raise ScheduleInputError("invalid_rule", MSG_EXPECTED) from None
    return decoded == current


def resolve_update(
    current: Record,
    expected: object,
    now: int,
    *,
    change: object = ABSENT,
    title: object = ABSENT,
    prompt: object = ABSENT,
) -> UpdateResult:
    """Resolve an update of ``current`` at clock sample ``now`` (epoch ms), docs/protocol.md#update.

    ``expected`` is the raw JSON record the caller saw; ``change``, ``title`` and ``prompt`` are
    raw JSON values or :data:`ABSENT` ("keep"). Check order: ``expected`` decodes (else
    ``invalid_rule``), compare-and-set (else the ``schedule_conflict`` result), title, prompt,
    change shape, then timing. Raises :class:`ScheduleInputError` for ``{code,message}`` errors.

    Decision (docs/rules.md#instants): an update whose ``now`` is not representable fails with
    ``time_out_of_range`` once its content checks pass, even when it would be a no-op.
    """
    if not matches_expected(current, expected):
        return UpdateResult(updated=False, record=None, code="schedule_conflict")

    checked_title, checked_prompt = check_update_text(title, prompt)
    new_title = current.title if isinstance(checked_title, Absent) else checked_title
    new_prompt = current.prompt if isinstance(checked_prompt, Absent) else checked_prompt
    rebuilt: Record | None = None
    if isinstance(change, Absent):
        _check_now(now)
    else:
        kind, value = _change_kind(change)
        rebuilt = _retime(current, kind, value, now, new_title, new_prompt)

    if rebuilt is not None:
        return UpdateResult(updated=True, record=rebuilt)
    if new_title == current.title and new_prompt == current.prompt:
        return UpdateResult(updated=False, record=current)
    return UpdateResult(updated=True, record=replace(current, title=new_title, prompt=new_prompt))
