"""The fold of a log's chunks in the fast path of ``validate`` and ``replay``
(:mod:`schedlog.invariant.fastcheck`): :class:`ChunkFold` holds the fold so far and takes the
next chunk of complete lines into it.

A documented internal module of :mod:`schedlog.invariant`: :mod:`schedlog.invariant.fastcheck`
uses it; nothing outside schedlog should.

How a chunk of complete lines is taken (:meth:`ChunkFold.take`), all or nothing:

* first (:attr:`ChunkFold.whole`), the chunk is decoded in one call, which is taken only when
  its lines are compact envelopes proven by their bytes
  (:func:`~schedlog.invariant.chunk_lines.whole_envelopes`); the first chunk that is not, and
  the chunk after one of mostly changes (which the single pass decodes once, not twice), end
  that way for the rest of the log;
* else the chunk is split at every ``\\n`` and each line is decoded on its own, by one
  ``msgspec`` decoder call per line (all the lines in one ``map``), into an envelope of exactly
  ``type`` and ``data`` (``data`` kept raw); :mod:`schedlog.invariant.chunk_lines` argues why
  the fast path then sees exactly the lines the reference sees;
* the payloads of the ``schedule/change`` lines are decoded in one more call into typed
  changes, and those of the ``message/followup`` lines into the shape writers emit; integer
  ranges and ``version`` 1 are checked by the decoder;
* the checks :mod:`schedlog.eventlog.fastline` makes line by line are made for the whole
  chunk (:mod:`schedlog.invariant.chunk_checks`);
* the changes are checked (trimmed ids and prompts, titles, canonical instants) and folded.

A chunk that is not taken is read line by line, as the summary read reads it (``fastline``
first, the reference decoder for the rest), and folded the same way; a chunk whose count of
``:`` does not add up is first unfolded. A corrupt line, a change the fold refuses, a line
over the length limit or a log without a complete header ends the fast path (None).

The tail of a split log (:mod:`schedlog.invariant.fastcheck`), folded from an empty state,
keeps the deletes and dispatches of records it did not create, in order, instead of refusing
them, and gives up (:class:`~schedlog.invariant.chunk_lines.Invalid`) where it would read a
chunk line by line. :meth:`ChunkFold.join` then applies those to the first part's fold and
adds the tail's records and ids after its own, refusing the log as the whole fold would (an id
created in both parts, a change of a record the first part does not hold).

At the end, the fold gives its active records as the JSON text ``replay`` prints
(:meth:`ChunkFold.rendered`, each record in its :class:`RecordJson` form, a tail's as the text
it gave) and as a :class:`~schedlog.fold.state.FoldState` whose records are built only when
asked for (:meth:`ChunkFold.state`: ``validate`` counts them); docs/decisions.md, "A large
active set in ``replay``: printed from the log's text, built only when asked for".
"""

from __future__ import annotations

import io
from collections.abc import Callable, Iterable
from itertools import compress, repeat
from operator import attrgetter, is_, is_not, not_
from typing import Any, Final, Literal, cast

import msgspec
from msgspec.structs import replace

from schedlog.eventlog import wire
from schedlog.eventlog.changes import Change
from schedlog.eventlog.errors import CorruptLogError
from schedlog.eventlog.events import SCHEDULE_CHANGE_TYPE, LogEvent
from schedlog.eventlog.fastline import summary_line
from schedlog.eventlog.reader import reference_line
from schedlog.fold.state import FoldState
from schedlog.fold.steps import FoldError, decode_event_change, plan
from schedlog.invariant.chunk_checks import (
    check_escapes,
    check_followups,
    check_payloads,
    check_untyped,
    decode_joined,
    followup_colons,
    instants_ms,
    instants_ok,
    text_colons,
)
from schedlog.invariant.chunk_lines import (
    TYPED_KINDS,
    TYPED_LINES,
    Invalid,
    Kept,
    NotTaken,
    decode_envelope,
    each_line,
    line_decoder,
    whole_envelopes,
)
from schedlog.rules.instants import MAX_MS, CanonicalInstantParser, format_instant
from schedlog.rules.record import Record
from schedlog.rules.records import typed_texts_ok
from schedlog.rules.text import MAX_SAFE_INT, json_bytes

__all__ = ["ChunkFold", "RecordJson", "TailResult", "encode_tail"]

_MAX_EVERY_MS: Final = MAX_SAFE_INT // 1000  # everySeconds whose interval in ms is safe
_CHANGE: Final = SCHEDULE_CHANGE_TYPE
_FOLLOWUP: Final = "message/followup"
_KIND = attrgetter("type")
_PAYLOAD = attrgetter("data")
_SCHEDULE = attrgetter("schedule")
_ACCEPTED = attrgetter("acceptedAt")
_SCHEDULED_AT = attrgetter("scheduledAt")
_ID = attrgetter("id")
_PROMPT = attrgetter("prompt")
_TITLE = attrgetter("title")
#: A single-pass decoder is built for at most this many event types.
_MAX_KINDS: Final = 32
_decode_changes = msgspec.json.Decoder(list[wire.ChangeData]).decode
#: After a chunk taken in one call (:meth:`ChunkFold._whole`) of which more than one line in
#: this many is a change, the log's next chunks go the single pass (docs/decisions.md, "Every
#: compact chunk in one call").
_MOSTLY_CHANGES: Final = 4


class RecordJson(msgspec.Struct, kw_only=True, omit_defaults=True, gc=False):
    """An active ``after``, ``at`` or ``every`` record in its JSON form: encoded (by
    :func:`~schedlog.rules.text.json_bytes`), exactly the bytes of ``Record.to_json()``
    encoded, the same keys in the same order (docs/protocol.md#records); an unset member is
    left out, as ``to_json`` leaves it out. The fast form of ``to_json`` for ``replay``
    (:meth:`ChunkFold.rendered`); ``tests/invariant/test_fastcheck_rendered.py`` proves the
    two equal."""

    id: str
    kind: Literal["after", "at", "every"]
    title: str | None = None
    prompt: str
    afterSeconds: int | None = None
    everySeconds: int | None = None
    scheduledAt: str


#: What a tail fold gives (``fastcheck``'s tail work, :meth:`ChunkFold.tail_result`): events,
#: size of its complete lines, torn tail, created ids, the records still active (the JSON text
#: of their list, :data:`RecordJson` items, and their targets in epoch ms, None for an entry's,
#: which is its ``scheduledAt``), the changes of
#: records it did not create (:attr:`ChunkFold.foreign`).
TailResult = tuple[int, int, bytes, list[str], bytes, list[int | None], list[tuple[int, str, int]]]
encode_tail = msgspec.msgpack.Encoder().encode
_decode_tail = msgspec.msgpack.Decoder(TailResult).decode
_encode_json = msgspec.json.Encoder().encode
_decode_rendered = msgspec.json.Decoder(list[RecordJson]).decode


class ChunkFold:
    """The fold so far, and how the next chunk of complete lines is taken."""

    def __init__(
        self, start: int, *, tail: bool = False, kinds: frozenset[str] = frozenset()
    ) -> None:
        self.start = start  # the first owned event index (seedLength)
        # A tail (the second part of a split log) keeps the deletes and dispatches of records
        # it did not create, in order: (_DELETE, id, 0), (_ONE_SHOT, id, 0), (_EVERY, id, ms).
        self.foreign: list[tuple[int, str, int]] | None = [] if tail else None
        self.later_seen: list[str] = []  # the ids a joined tail created, after ``seen``
        self.count = 0  # events so far
        #: The active records in create order: a :class:`Record`, or an entry that no dispatch
        #: moved on, the typed record as the log created it, its ``scheduledAt`` a canonical
        #: instant (an ``every`` one with that target in epoch ms: :meth:`_entries`).
        self.active: dict[str, Any] = {}
        self.seen: dict[str, None] = {}
        self.instants = CanonicalInstantParser()
        #: The records a joined tail added, after those of ``active``: the JSON text of their
        #: list (:data:`TailResult`), and their targets in epoch ms; their :class:`Record`
        #: are built only when asked for (:meth:`records`).
        self.later_json = b"[]"
        self.later_targets: list[int | None] = []
        # The event types seen so far, or expected (``kinds``): the first chunk is then tried
        # in one pass too; a line of another type sends it to two.
        self.kinds: frozenset[str] = kinds if len(kinds) <= _MAX_KINDS else frozenset()
        self.decode_line: Callable[[bytes], Any] | None = None  # for those types
        #: With ``keep``: every chunk taken, as (its lines, how they were decoded), see
        #: :data:`Kept`.
        self.kept: list[Kept] | None = None
        self._decoded: list[Any] = []  # the lines of the chunk just taken, decoded
        self._ends: list[int] | None = None  # with ``kept``: where the lines taken whole end
        #: Whether a chunk is first tried in one call (:meth:`_whole`; set by the callers of
        #: ``fastcheck`` for every log, cleared after a chunk not so taken or mostly changes).
        self.whole = False

    def take(self, carry: bytes, lines: memoryview) -> None:
        """Check and fold the complete lines ``carry + lines`` (each ends with ``\\n``): with
        :attr:`whole`, in one call when they are compact; else in one pass when every type is
        one seen before, else in two, else line by line."""
        body = b"".join((carry, lines))
        kept = self.kept
        if self.count >= self.start:
            if self.whole:
                try:
                    self.count += self._whole(body)
                except NotTaken:
                    self.whole = False  # not compact: the log's next chunks go the other ways
                else:
                    if kept is not None:
                        kept.append((body, self._decoded, self._ends))
                    return
            rows = _rows(body, kept)
            for way in (self._single, self._fast):
                try:
                    self.count += way(body, rows)
                except NotTaken:
                    continue
                if kept is not None:
                    kept.append((rows, self._decoded, None))
                return
        if self.foreign is not None:
            raise Invalid  # a tail knows too little to fold line by line: the head does it
        self._settle()
        self._lines(body)
        if kept is not None:
            kept.append((body.split(b"\n")[:-1], None, None))

    def _single(self, body: bytes, rows: list[bytes]) -> int:
        """:meth:`_fast` in one decoding pass, with the types seen in earlier chunks."""
        decode = self.decode_line
        if decode is None:
            if not self.kinds or len(self.kinds) > _MAX_KINDS:
                raise NotTaken
            decode = self.decode_line = line_decoder(self.kinds)
        lines = self._decoded = each_line(decode, rows)
        events = len(lines)
        classes = list(map(type, lines))
        typed_lines = list(map(TYPED_LINES.__contains__, classes))
        check_escapes(body, rows, typed_lines)
        # What is left after the envelopes' 2 each, the untyped payloads' and the follow-ups'
        # must be the changes' own.
        colons = body.count(b":") - 2 * events
        others = list(compress(lines, map(not_, typed_lines))) if False in typed_lines else []
        if others:
            colons -= check_untyped(list(map(_PAYLOAD, others)))
        if wire.FollowupLine in classes:
            followups = compress(lines, map(is_, classes, repeat(wire.FollowupLine)))
            colons -= followup_colons(list(map(_PAYLOAD, followups)))
        if wire.ChangeLine not in classes:
            if colons:
                raise NotTaken
            return events
        typed = list(map(_PAYLOAD, compress(lines, map(is_, classes, repeat(wire.ChangeLine)))))
        self._fold_chunk(typed, colons, None)
        return events

    # -- the chunk at once ------------------------------------------------------------------

    def _whole(self, body: bytes) -> int:
        """:meth:`_fast` with the chunk's lines decoded in one call and proven exact compact
        envelopes by their bytes (:func:`~schedlog.invariant.chunk_lines.whole_lines`), so no
        ``:`` of the chunk needs counting: only the typed payloads' are, by their own bytes."""
        self._ends = None if self.kept is None else []
        envelopes = self._decoded = whole_envelopes(body, self._ends)
        kinds, payloads = list(map(_KIND, envelopes)), list(map(_PAYLOAD, envelopes))
        if "" in kinds:
            raise NotTaken
        if not self.kinds.issuperset(kinds):
            self.kinds, self.decode_line = self.kinds.union(kinds), None
        check_payloads(body, payloads)
        changes, followups = _CHANGE in kinds, _FOLLOWUP in kinds
        if followups:
            check_followups(list(compress(payloads, map(_FOLLOWUP.__eq__, kinds))))
        if changes:
            changed = list(compress(payloads, map(_CHANGE.__eq__, kinds)))
            typed, counted = decode_joined(_decode_changes, changed)
            self._fold_chunk(typed, counted, counted)
            if len(changed) * _MOSTLY_CHANGES > len(kinds):
                self.whole = False  # the single pass decodes changes once, not twice
        return len(kinds)

    def _fast(self, body: bytes, rows: list[bytes]) -> int:
        envelopes = self._decoded = each_line(decode_envelope, rows)
        lines = len(envelopes)
        kinds = list(map(_KIND, envelopes))
        payloads = list(map(_PAYLOAD, envelopes))
        if "" in kinds:
            raise NotTaken
        if not self.kinds.issuperset(kinds):
            self.kinds, self.decode_line = self.kinds.union(kinds), None
        # The ':' of the payloads, if every envelope has exactly its two; each part is taken
        # off below, and what is left must be nothing.
        colons = body.count(b":") - 2 * lines
        changes, followups = _CHANGE in kinds, _FOLLOWUP in kinds
        others = (
            list(compress(payloads, map(not_, map(TYPED_KINDS.__contains__, kinds))))
            if changes or followups
            else payloads
        )
        if others:
            colons -= check_untyped(others)
        if followups:
            colons -= check_followups(list(compress(payloads, map(_FOLLOWUP.__eq__, kinds))))
        if not changes:
            if colons:
                raise NotTaken
            return lines
        changed = compress(payloads, map(_CHANGE.__eq__, kinds))
        typed, counted = decode_joined(_decode_changes, changed)
        self._fold_chunk(typed, colons, counted)
        return lines

    def _fold_chunk(self, typed: list[wire.ChangeData], colons: int, counted: int | None) -> None:
        """Check and fold a chunk's changes, whose payloads hold ``colons`` ``:`` bytes by the
        count of the chunk, and ``counted`` by the count of their own bytes (None: unknown).
        When that is not the count their typed members account for (a key given twice or a
        null member), the chunk is not taken (the chunk goes line by line); that is decided
        from the typed changes alone, before anything is folded, so nothing is undone."""
        classes = list(map(type, typed))
        records = list(map(_SCHEDULE, compress(typed, map(is_, classes, repeat(wire.CreateData)))))
        accepts = list(
            map(_ACCEPTED, compress(typed, map(is_, classes, repeat(wire.DispatchData))))
        )
        stamps = list(compress(accepts, map(is_not, accepts, repeat(None))))
        titles = list(filter(None, map(_TITLE, records)))  # a title is never empty
        # version, operation and id of every change; acceptedAt and an instant's 2; schedule;
        # id, kind, prompt, scheduledAt and its 2; the seconds but for at; title
        kinds = list(map(type, records))
        ats = kinds.count(wire.AtRecord) if records else 0
        expected = 3 * len(typed) + 3 * len(stamps) + 7 * len(records) - ats + len(titles)
        if not (
            (counted is None or colons == counted)
            and (colons == expected or colons == expected + text_colons(typed))
        ):
            raise NotTaken
        ids = list(map(_ID, records))
        entries: list[Any] = records
        if records:
            self._check_creates(records, ids, titles)
            entries = self._entries(records, kinds)
        self._fold_typed(typed, classes, stamps, ids, entries)

    def _entries(self, records: list[wire.WireRecord], kinds: list[type]) -> list[Any]:
        """The entries of the records a chunk creates (``kinds``: their classes), each
        ``scheduledAt`` a canonical instant: an ``every`` record (which a dispatch may move
        on) with its target in epoch ms, converted all at once (:func:`instants_ms`); a
        one-shot alone (only checked: its target is read when its :class:`Record` is built,
        :meth:`_as_record`, and a dispatch takes it out)."""
        parse = self.instants.parse
        if wire.EveryRecord not in kinds:
            if not instants_ok(list(map(_SCHEDULED_AT, records)), parse):
                raise Invalid  # not a canonical instant of a real day
            return records
        every = list(map(is_, kinds, repeat(wire.EveryRecord)))
        recurring = list(compress(records, every))
        whens = instants_ms(list(map(_SCHEDULED_AT, recurring)), parse)
        once = list(compress(records, map(not_, every)))
        if None in whens or not instants_ok(list(map(_SCHEDULED_AT, once)), parse):
            raise Invalid
        timed = iter(zip(recurring, whens, strict=True)).__next__
        return [timed() if moves else record for record, moves in zip(records, every, strict=True)]

    def _check_creates(
        self, records: list[wire.WireRecord], ids: list[str], titles: list[str]
    ) -> None:
        """Check the records a chunk creates (``titles``: their titles that are set), all at
        once: ids never created before (in the log or the chunk), ids, prompts and titles
        trimmed, titles not too long; the ids are then seen."""
        seen = self.seen
        fresh = dict.fromkeys(ids)
        if len(fresh) != len(ids) or not seen.keys().isdisjoint(fresh):
            raise Invalid
        if not typed_texts_ok(ids, list(map(_PROMPT, records)), titles):
            raise Invalid
        seen.update(fresh)

    def _fold_typed(
        self,
        typed: list[wire.ChangeData],
        classes: list[type],
        stamps: list[str],
        ids: list[str],
        entries: Iterable[wire.WireRecord | tuple[wire.WireRecord, int]],
    ) -> None:
        """Fold typed changes in order, whose creates :meth:`_check_creates` checked (``ids``
        and ``entries``: theirs, in order, their ``scheduledAt`` canonical instants);
        ``stamps`` are the dispatches' ``acceptedAt`` that are set, in order.

        A created record stays an entry (:meth:`_entries`) in ``active`` until a dispatch moves
        it on or :meth:`records` builds its :class:`Record`: ``replay`` prints the text and
        ``validate`` counts it. The ``acceptedAt`` instants are converted up front, all at once
        (:func:`instants_ms`).
        """
        active: dict[str, Any] = self.active
        pop = active.pop
        next_create = iter(zip(ids, entries, strict=True)).__next__
        accepted_ms = iter(instants_ms(stamps, self.instants.parse)).__next__
        as_record = self._as_record
        for change, kind in zip(typed, classes, strict=True):
            if kind is wire.DeleteData:
                if pop(change.id, None) is None:  # type: ignore[union-attr]
                    self._foreign(_DELETE, change.id, 0)  # type: ignore[union-attr]
                continue
            if kind is wire.CreateData:
                record_id, entry = next_create()
                active[record_id] = entry
                continue
            target = change.id  # type: ignore[union-attr]
            current = active.get(target)
            if current is None:
                if change.acceptedAt is None:  # type: ignore[union-attr]
                    self._foreign(_ONE_SHOT, target, 0)
                elif (at := accepted_ms()) is None:
                    raise Invalid
                else:
                    self._foreign(_EVERY, target, at)
            elif change.acceptedAt is None:  # type: ignore[union-attr]
                if not _is_one_shot(current):
                    raise Invalid
                del active[target]
            elif (at := accepted_ms()) is None:
                raise Invalid
            else:
                _dispatch_every(active, target, as_record(current), at)

    def _as_record(self, current: Any) -> Record:
        """The :class:`Record` of an active record or entry (:meth:`_entries`)."""
        kind = type(current)
        if kind is Record:
            record: Record = current
            return record
        if kind is tuple:
            return wire.record_of(*current)
        at = self.instants.parse(current.scheduledAt)
        assert at is not None  # a canonical instant (:meth:`_entries`)
        return wire.record_of(current, at)

    def _foreign(self, code: int, target: str, at: int) -> None:
        """A delete or dispatch of ``target``, which is not active: in a tail, of a record
        the head may hold (not one created in this tail); the log is invalid otherwise."""
        if self.foreign is None or target in self.seen:
            raise Invalid
        self.foreign.append((code, target, at))

    def join(self, result: bytes | None) -> tuple[bytes, int] | None:
        """Fold a tail's result (what ``fastcheck``'s tail work gave for the rest of the log) into
        this fold of all lines before it: the tail's torn tail and size of complete lines, or
        None when there is no result to join (the caller folds the rest itself)."""
        if not result or self.count < self.start:  # or the tail's lines are not all owned
            return None
        try:
            count, complete, carry, seen_ids, rendered, targets, foreign = _decode_tail(result)
        except msgspec.DecodeError:
            return None
        active: dict[str, Any] = self.active
        if not self.seen.keys().isdisjoint(seen_ids):  # each a key of the tail's ``seen``
            raise Invalid
        for code, target, at in foreign:
            current = active.get(target)
            if current is None or (code == _ONE_SHOT and not _is_one_shot(current)):
                raise Invalid
            if code == _EVERY:
                _dispatch_every(active, target, self._as_record(current), at)
            else:
                del active[target]
        self.later_seen = seen_ids
        self.later_json, self.later_targets = rendered, targets  # all final
        self.count += count
        return carry, complete

    def tail_result(self, complete: int, carry: bytes) -> bytes:
        """The encoded :data:`TailResult` of this tail fold, whose complete lines are
        ``complete`` bytes long and whose torn tail is ``carry``; nothing (no result) when a
        record cannot be given so."""
        assert self.foreign is not None
        values: Any = self.active.values()
        rendered = list(map(_rendered, values))
        if dict in map(type, rendered):
            return b""  # not a kind RecordJson holds (a tail never reads line by line)
        try:
            text = _encode_json(rendered)
        except UnicodeEncodeError:
            return b""  # a lone surrogate (which msgspec never decodes): the head folds it
        targets = list(map(_target_ms, values))
        seen = list(self.seen)
        return encode_tail((self.count, complete, carry, seen, text, targets, self.foreign))

    def rendered(self) -> bytes:
        """The JSON text of the active records' list, exactly ``json_bytes`` of
        ``[r.to_json() for r in self.records()]``, without building the records: each is
        given in its JSON form (:class:`RecordJson`, or ``to_json()`` for another kind), and
        the records a joined tail added are the text it gave.

        The ``scheduledAt`` of a record no dispatch moved on (an entry) is the text the log
        wrote when it created the record, which is ``format_instant`` of the target: the typed
        path created the record only if :func:`~schedlog.invariant.chunk_checks.instants_ms`
        took the text for a canonical instant, which is exactly the text ``format_instant``
        gives (docs/rules.md#instants); ``tests/invariant/test_fastcheck_rendered.py`` proves
        it. Only a moved target is formatted."""
        own = json_bytes(list(map(_rendered, self.active.values())))
        later = self.later_json
        if later == b"[]":
            return own
        if own == b"[]":
            return later
        return b"".join((own[:-1], b",", later[1:]))

    def records(self) -> list[Record]:
        """The active records, in order: the :class:`Record` of each entry built now, and of
        each record a joined tail added."""
        records = list(map(self._as_record, self.active.values()))
        if self.later_targets:
            later = _decode_rendered(self.later_json)
            records += map(self._record_of_json, later, self.later_targets)
        return records

    def _record_of_json(self, rendered: RecordJson, scheduled_at: int | None) -> Record:
        """The :class:`Record` a tail gave in its JSON form (:meth:`tail_result`), whose target
        is ``scheduled_at``, or its ``scheduledAt`` where that is None (an entry's: a canonical
        instant): the fields of ``wire.record_of``'s."""
        if scheduled_at is None:
            scheduled_at = self.instants.parse(rendered.scheduledAt)
            assert scheduled_at is not None
        return Record(
            id=rendered.id,
            kind=rendered.kind,
            prompt=rendered.prompt,
            scheduled_at=scheduled_at,
            title=rendered.title,
            after_seconds=rendered.afterSeconds,
            every_seconds=rendered.everySeconds,
        )

    def state(self) -> FoldState:
        """The fold as a :class:`FoldState` whose records are built on first use
        (:meth:`records`): ``validate`` only counts them, ``replay`` prints :meth:`rendered`."""
        count = len(self.active) + len(self.later_targets)
        seen = (*self.seen, *self.later_seen)
        return FoldState.built_later(count, lambda: tuple(self.records()), seen)

    # -- line by line -------------------------------------------------------------------------

    def _settle(self) -> None:
        """Build the :class:`Record` of every entry in ``active`` (the reference fold's steps,
        which read the records, come next)."""
        active: dict[str, Any] = self.active
        for record_id, value in active.items():
            if type(value) is not Record:
                active[record_id] = self._as_record(value)

    def _lines(self, body: bytes) -> None:
        """The chunk as the summary read and the fold take it, one line at a time."""
        start = self.start
        for raw in io.BytesIO(body):
            index = self.count
            self.count += 1
            taken = summary_line(raw)
            if taken is True:
                continue
            change: Change | None = taken
            if change is None:
                try:
                    item = reference_line(raw, index + 2)
                except CorruptLogError:
                    raise Invalid from None
                assert type(item) is LogEvent
                if item.type != SCHEDULE_CHANGE_TYPE or index < start:
                    continue
                try:
                    change = decode_event_change(item)
                except FoldError:
                    raise Invalid from None
            elif index < start:
                continue
            self._apply(change)

    def _apply(self, change: Change) -> None:
        try:
            # Records only: :meth:`_settle` built them before the first line.
            effect = plan(change, cast("dict[str, Record]", self.active), self.seen)
        except FoldError:
            raise Invalid from None
        if effect.created:
            self.seen[effect.id] = None
        if effect.record is None:
            del self.active[effect.id]
        else:
            self.active[effect.id] = effect.record


def _rows(body: bytes, kept: list[Kept] | None) -> list[bytes]:
    """The lines of ``body``, each apart, as the reference reads them: split at every ``\\n``
    and nowhere else (without a ``\\r``, ``splitlines`` splits there too, and keeps the ``\\n``
    a kept line needs). For a chunk :meth:`ChunkFold._whole` took, line ``i`` is so exactly
    the bytes of envelope ``i`` (:func:`~schedlog.invariant.chunk_lines.whole_envelopes`)."""
    if kept is not None and b"\r" not in body:
        return body.splitlines(keepends=True)
    rows = body.split(b"\n")
    rows.pop()  # after the last "\n"
    return rows


_DELETE: Final = 0
_ONE_SHOT: Final = 1
_EVERY: Final = 2


def _is_one_shot(current: Any) -> bool:
    """Whether an active record or entry is a one-shot (``after`` or ``at``)."""
    kind = type(current)
    if kind is Record:
        one_shot: bool = current.is_one_shot
        return one_shot
    return kind is not tuple and kind is not wire.EveryRecord


def _target_ms(value: Any) -> int | None:
    """The target of an active record or entry in epoch ms, None for a one-shot entry (whose
    ``scheduledAt`` says it)."""
    kind = type(value)
    if kind is Record:
        at: int = value.scheduled_at
        return at
    return value[1] if kind is tuple else None


def _dispatch_every(active: dict[str, Any], target: str, current: Record, at: int) -> None:
    """Fold the dispatch of the every record ``current`` accepted at ``at`` (epoch ms)."""
    if current.kind != "every":
        raise Invalid
    # decide(current, at).next_scheduled_at of an every record (rules.decide._decide_every),
    # inlined: a canonical instant is representable.
    target_at = current.scheduled_at
    seconds = current.every_seconds
    if at < target_at or type(seconds) is not int or not 0 < seconds <= _MAX_EVERY_MS:
        raise Invalid  # decide refuses it: the reference reports it
    interval = seconds * 1000
    following = target_at + (at - target_at) // interval * interval + interval
    if following > MAX_MS:
        del active[target]
    else:
        active[target] = replace(current, scheduled_at=following)


def _rendered(value: Any) -> Any:
    """The JSON form of an active record or entry (:meth:`ChunkFold.rendered`)."""
    if type(value) is not Record:
        record: Any = value[0] if type(value) is tuple else value
        kind = type(record)
        if kind is wire.AfterRecord:
            return RecordJson(
                id=record.id,
                kind="after",
                title=record.title,
                prompt=record.prompt,
                afterSeconds=record.afterSeconds,
                scheduledAt=record.scheduledAt,
            )
        if kind is wire.EveryRecord:
            return RecordJson(
                id=record.id,
                kind="every",
                title=record.title,
                prompt=record.prompt,
                everySeconds=record.everySeconds,
                scheduledAt=record.scheduledAt,
            )
        return RecordJson(
            id=record.id,
            kind="at",
            title=record.title,
            prompt=record.prompt,
            scheduledAt=record.scheduledAt,
        )
    return _record_json(value)


def _record_json(record: Record) -> RecordJson | dict[str, Any]:
    """The JSON form of ``record``: ``to_json()`` but for the kinds :class:`RecordJson`
    holds."""
    kind = record.kind
    after = record.after_seconds if kind == "after" else None
    every = record.every_seconds if kind == "every" else None
    if (kind == "at" or after is not None or every is not None) and kind in _SESSION_KINDS:
        return RecordJson(
            id=record.id,
            kind=kind,  # type: ignore[arg-type]
            title=record.title,
            prompt=record.prompt,
            afterSeconds=after,
            everySeconds=every,
            scheduledAt=format_instant(record.scheduled_at),
        )
    return record.to_json()


_SESSION_KINDS: Final = frozenset({"after", "at", "every"})
