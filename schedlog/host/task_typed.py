"""The task document as schedlog writes it, typed: a bulk fast path of the strict task decoder
(:func:`schedlog.host.task.decode_task`, the readable reference) for opening a large store.

:func:`check_rows` takes many stored rows ``(seq, id, session_id, body)`` at once and either
vouches for all of them, returning the timer-index keys of their active, unpaused tasks, or
returns None ("not taken"): then the caller decodes those rows with the reference, which gives
every verdict, error code and message. :func:`check_chunk` is the same for rows whose column
checks the caller has made (the SQLite store's chunk query), given their seqs and their
bodies joined by commas; both share :func:`decode_bodies` and :func:`task_keys`. The fast
path never produces an error of its own, so a bad row is always reported exactly as before;
it only has to be right when it vouches.

It vouches only when:

* every column is text and each body decodes into the structs below (every member known, of
  the right type and range, none missing) and encodes back to its very same bytes. Our writers
  emit exactly that form (``js_dumps`` of :func:`~schedlog.host.task.encode_task`: no spaces,
  members in writing order, msgspec's escaping). The same bytes rule out a key given twice, a
  member given as ``null`` (which a struct reads as absent) and any other spelling of a value
  (``loads_strict``'s own fast path is this check);
* each record's members are exactly those of its kind, the text rules hold (ids, prompts,
  titles and message ids trimmed, titles at most 120 UTF-16 units), the ``id`` and
  ``session_id`` columns match the record id and ``sessionId``, and every instant is canonical;
* daily, weekly and cron records pass :func:`~schedlog.rules.records.decode_host_record`
  itself (on the value the body denotes), and rows with a delivery receipt or history records
  pass the receipt and history rules, checked row by row.

The differential tests (``tests/host/test_task_typed.py``) prove it equal to the reference.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from itertools import compress, repeat
from operator import attrgetter, floordiv, is_, is_not, sub
from typing import Annotated, Final, Literal

import msgspec
from msgspec import Meta

from schedlog.errors import CorruptScheduleError
from schedlog.rules.decide import MIN_EVERY_SECONDS_HOST
from schedlog.rules.records import MAX_EVERY_SECONDS, TITLE_MAX_UNITS, decode_host_record
from schedlog.rules.text import JS_WHITESPACE, MAX_SAFE_INT, utf16_len

__all__ = [
    "Row",
    "TimerKey",
    "WireTask",
    "check_chunk",
    "check_rows",
    "decode_bodies",
    "live_keys",
    "task_keys",
    "task_targets",
    "vouched",
]

#: A stored row as read: ``(seq, id, session_id, body)``; the columns may hold any SQLite type.
Row = tuple[int, object, object, object]
#: ``(scheduledAt epoch ms, seq, id)`` of an active, unpaused task (the timer index's key).
TimerKey = tuple[int, int, str]

Text = Annotated[str, Meta(min_length=1)]


class _Wire(msgspec.Struct, kw_only=True, forbid_unknown_fields=True, omit_defaults=True, gc=False):
    pass


class WireRecord(_Wire, kw_only=True):
    """A host record; the optional members in the order :meth:`Record.to_json` writes them
    (after: afterSeconds; every: everySeconds; daily: time, timeZone; weekly: time, timeZone,
    weekdays; cron: expression, timeZone)."""

    id: Text
    kind: Literal["after", "at", "every", "daily", "weekly", "cron"]
    title: Text | None = None
    prompt: Text
    afterSeconds: Annotated[int, Meta(ge=1, le=MAX_SAFE_INT)] | None = None
    everySeconds: Annotated[int, Meta(ge=MIN_EVERY_SECONDS_HOST, le=MAX_EVERY_SECONDS)] | None = (
        None
    )
    time: str | None = None
    expression: str | None = None
    timeZone: str | None = None
    weekdays: list[int] | None = None
    scheduledAt: str


class WireReceipt(_Wire):
    scheduledAt: str
    deliveredAt: str
    messageId: Text


class WireHistoryRecord(_Wire):
    scheduledAt: str
    deliveredAt: str
    messageId: Text
    prompt: str | None = None


class WireHistory(_Wire):
    records: list[WireHistoryRecord]
    earlierRecordsUnavailable: bool
    earlierRecordsPruned: bool | None = None


class WireTask(_Wire):
    """The task document in writing order (:func:`~schedlog.host.task.encode_task`)."""

    sessionId: Text
    record: WireRecord
    status: Literal["active", "inactive"] | None = None
    pausedAt: str | None = None
    lastDelivery: WireReceipt | None = None
    deliveryHistory: WireHistory | None = None


_decode: Final = msgspec.json.Decoder(list[WireTask]).decode
_encode: Final = msgspec.json.Encoder().encode

#: The kind-specific members and the kinds that have each (docs/protocol.md#records).
_MEMBER_KINDS: Final[dict[str, frozenset[str]]] = {
    "afterSeconds": frozenset({"after"}),
    "everySeconds": frozenset({"every"}),
    "time": frozenset({"daily", "weekly"}),
    "expression": frozenset({"cron"}),
    "timeZone": frozenset({"daily", "weekly", "cron"}),
    "weekdays": frozenset({"weekly"}),
}
#: Kinds whose members need the rule parsers: checked by the reference record decoder.
_RULE_KINDS: Final = frozenset({"daily", "weekly", "cron"})

_EPOCH: Final = datetime(1970, 1, 1, tzinfo=UTC)
_MS: Final = timedelta(milliseconds=1)
_PREFIX: Final = repeat('{"sessionId":')
_SHAPE: Final = "0000-00-00T00:00:00.000Z"
_ZERO_DIGITS: Final = str.maketrans("123456789", "000000000")


def trimmed(texts: list[str]) -> bool:
    """Whether no text has JavaScript whitespace at either end (``str.strip`` returns the very
    string when there is nothing to strip)."""
    return all(map(is_, map(str.strip, texts, repeat(JS_WHITESPACE)), texts))


def titles_ok(titles: list[str]) -> bool:
    """Whether every title is trimmed and at most 120 UTF-16 units (a title of at most 60
    characters always is)."""
    if not trimmed(titles):
        return False
    if not titles or max(map(len, titles)) <= TITLE_MAX_UNITS // 2:
        return True
    return max(map(utf16_len, titles)) <= TITLE_MAX_UNITS


def instants_ms(texts: Sequence[str]) -> list[int] | None:
    """Epoch ms of each text, or None unless every one is a canonical instant
    (``YYYY-MM-DDTHH:MM:SS.mmmZ`` of a real date and time, as
    :func:`~schedlog.rules.instants.parse_canonical_instant` accepts)."""
    if not texts:
        return []
    joined = "".join(texts)
    if (
        set(map(len, texts)) != {24}
        or not joined.isascii()
        or joined.translate(_ZERO_DIGITS) != _SHAPE * len(texts)
    ):
        return None
    try:  # the shape is exact, so only an impossible date or time of day is left to refuse
        stamps = list(map(datetime.fromisoformat, texts))
    except ValueError:
        return None
    return list(map(floordiv, map(sub, stamps, repeat(_EPOCH)), repeat(_MS)))


def _kinds_match(records: list[WireRecord], kinds: list[str]) -> bool:
    """Whether each record has exactly the kind-specific members of its kind."""
    n = len(records)
    counts = Counter(kinds)
    for member, owners in _MEMBER_KINDS.items():
        values = list(map(attrgetter(member), records))
        if not any(counts[k] for k in owners):
            if values.count(None) != n:
                return False
        elif list(map(is_not, values, repeat(None))) != list(map(owners.__contains__, kinds)):
            return False
    return True


def _rule_records_ok(records: list[WireRecord], kinds: list[str]) -> bool:
    """Daily, weekly and cron records through the reference record decoder."""
    for record in compress(records, map(_RULE_KINDS.__contains__, kinds)):
        try:
            decode_host_record(msgspec.to_builtins(record))
        except CorruptScheduleError:
            return False
    return True


def _deliveries_ok(tasks: list[WireTask]) -> bool:
    """The receipt and history rules of every row that has a receipt or history records:
    instants canonical, message ids trimmed and unrepeated, the receipt the last record's."""
    instants: list[str] = []
    ids: list[str] = []
    for task in tasks:
        receipt, history = task.lastDelivery, task.deliveryHistory
        if receipt is not None:
            instants += (receipt.scheduledAt, receipt.deliveredAt)
            ids.append(receipt.messageId)
        if history is None:
            continue
        if not history.records:
            if receipt is not None:
                return False
            continue
        records = history.records
        last = records[-1]
        if receipt is None or (receipt.scheduledAt, receipt.deliveredAt, receipt.messageId) != (
            last.scheduledAt,
            last.deliveredAt,
            last.messageId,
        ):
            return False
        record_ids = [r.messageId for r in records]
        if len(set(record_ids)) != len(record_ids):
            return False
        ids += record_ids
        for r in records:
            instants += (r.scheduledAt, r.deliveredAt)
    return trimmed(ids) and instants_ms(instants) is not None


def _tasks_ok(tasks: list[WireTask], paused: list[str | None], pausable: bool) -> bool:
    """The task-level rules: ``pausedAt`` (``paused``, of each task) only where the store
    holds it, canonical, and only on an active task; receipts and histories."""
    if paused.count(None) != len(paused):
        given = [p for p in paused if p is not None]
        statuses = list(
            compress(map(attrgetter("status"), tasks), map(is_not, paused, repeat(None)))
        )
        if not pausable or "inactive" in statuses or instants_ms(given) is None:
            return False
    if list(map(attrgetter("lastDelivery"), tasks)).count(None) == len(tasks):
        # No receipt at all: then no history may hold records (the receipt is the last one's).
        histories = filter(None, map(attrgetter("deliveryHistory"), tasks))
        return not any(map(attrgetter("records"), histories))
    with_deliveries = [
        t
        for t in tasks
        if t.lastDelivery is not None
        or (t.deliveryHistory is not None and t.deliveryHistory.records)
    ]
    return _deliveries_ok(with_deliveries)


def check_rows(rows: Sequence[Row], *, pausable: bool) -> list[TimerKey] | None:
    """The timer-index keys of the active, unpaused tasks of ``rows`` (in row order) when the
    reference decoder accepts every row; None when the fast path does not vouch for them all.
    The column checks in Python; :func:`check_chunk` when the query has made them."""
    found = vouched(rows, pausable=pausable)
    if found is None:
        return None
    tasks, targets = found
    return live_keys(tasks, [row[0] for row in rows], targets)


def vouched(rows: Sequence[Row], *, pausable: bool) -> tuple[list[WireTask], list[int]] | None:
    """The typed tasks of ``rows`` and their records' targets (epoch ms), in row order, when
    the reference decoder accepts every row; None when the fast path does not vouch for them
    all (see the module)."""
    if not rows:
        return [], []
    _seqs, keys, sessions, bodies = zip(*rows, strict=True)
    if set(map(type, keys)) | set(map(type, sessions)) | set(map(type, bodies)) != {str}:
        return None
    if not all(map(str.startswith, bodies, _PREFIX)):
        return None
    tasks = decode_bodies(",".join(bodies), len(rows))
    if tasks is None:
        return None
    if list(keys) != [t.record.id for t in tasks] or list(sessions) != [t.sessionId for t in tasks]:
        return None
    targets = task_targets(tasks, pausable=pausable)
    return None if targets is None else (tasks, targets)


def check_chunk(seqs: list[int], joined: str, *, pausable: bool) -> list[TimerKey] | None:
    """:func:`check_rows` of rows whose columns the caller has checked: ``joined`` is their
    bodies joined by commas, in the order of ``seqs``, and each row's ``id``, ``session_id``
    and ``body`` are text, and its body starts with ``{"sessionId":`` and the JSON text of its
    ``session_id`` column, then ``,"record":{"id":`` and the JSON text of its ``id`` column
    (so the body's own ``sessionId`` and record ``id`` are the columns', once the body is the
    exact writing form that :func:`decode_bodies` requires)."""
    if not seqs:
        return []
    tasks = decode_bodies(joined, len(seqs))
    if tasks is None:
        return None
    return task_keys(tasks, seqs, pausable=pausable)


def decode_bodies(joined: str, count: int) -> list[WireTask] | None:
    """The ``count`` task bodies ``joined`` by commas, each of which starts with
    ``{"sessionId":``, decoded together; None unless each is one task in its exact writing
    form.

    One JSON array of every body, decoded and encoded back in one call each. The encoding
    writes every quote inside a string escaped, so ``{"sessionId":`` occurs in it only where a
    task object starts; a body that starts with it starts a task, and since each does, each
    body is exactly one task's text."""
    blob = ("[" + joined + "]").encode("utf-8", "surrogatepass")
    try:
        tasks = _decode(blob)
        if len(tasks) != count or _encode(tasks) != blob:
            return None
    except Exception:  # any shape, syntax or encoding surprise: the reference decides
        return None
    return tasks


def task_keys(tasks: list[WireTask], seqs: list[int], *, pausable: bool) -> list[TimerKey] | None:
    """The timer keys of decoded ``tasks`` (stored at ``seqs``) when every task-level rule
    holds (ids and sessions aside: the caller compares them with the columns); else None."""
    targets = task_targets(tasks, pausable=pausable)
    return None if targets is None else live_keys(tasks, seqs, targets)


def task_targets(tasks: list[WireTask], *, pausable: bool) -> list[int] | None:
    """The records' targets (epoch ms) of decoded ``tasks`` when every task-level rule holds
    (ids and sessions aside); else None."""
    records = list(map(attrgetter("record"), tasks))
    titles = list(map(attrgetter("title"), records))
    kinds = list(map(attrgetter("kind"), records))
    paused = list(map(attrgetter("pausedAt"), tasks))
    if (
        None in titles
        or not trimmed(list(map(attrgetter("id"), records)))
        or not trimmed(list(map(attrgetter("prompt"), records)))
        or not titles_ok(titles)
        or not _kinds_match(records, kinds)
        or not _rule_records_ok(records, kinds)
        or not _tasks_ok(tasks, paused, pausable)
    ):
        return None
    return instants_ms(list(map(attrgetter("scheduledAt"), records)))


def live_keys(tasks: list[WireTask], seqs: list[int], targets: list[int]) -> list[TimerKey]:
    """The timer keys ``(target, seq, id)`` of the active, unpaused ones of vouched ``tasks``."""
    record_ids = [task.record.id for task in tasks]
    if "inactive" not in map(attrgetter("status"), tasks) and all(
        task.pausedAt is None for task in tasks
    ):
        return list(zip(targets, seqs, record_ids, strict=True))  # every task is live
    live = [t.status != "inactive" and t.pausedAt is None for t in tasks]
    return list(
        zip(compress(targets, live), compress(seqs, live), compress(record_ids, live), strict=True)
    )
