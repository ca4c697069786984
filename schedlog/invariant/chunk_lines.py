"""The lines of a chunk of a log, each decoded alone, as the reference decodes them: the part
of the fast path of ``validate`` and ``replay`` (:mod:`schedlog.invariant.fastcheck`) that
proves it sees exactly the lines the reference sees.

A documented internal module of :mod:`schedlog.invariant`: :mod:`schedlog.invariant.chunk_fold`
and :mod:`schedlog.invariant.fastcheck` use it; nothing outside schedlog should.

Lines. The fast path must see the lines the reference sees: the reference splits the log at
every ``\\n`` byte and nowhere else (``\\r`` is only JSON whitespace) and decodes each line
alone, as one JSON text. A chunk once became one JSON array, every ``\\n`` turned into ``,``;
then two events on one line (``{..},{..}``) were two elements and one event over two lines
(``{"a":1`` / ``"b":2}``) one, and both passed (issue 19). No rewriting of the line ends into
JSON separators can be made safe: whatever bytes replace a ``\\n``, a line can hold the same
bytes between two values (a joined line), and the replacement can fall inside a value of a
line broken in two (inside a string, or between the elements of a nested array or object:
``\\n`` -> ``],[`` with one-element arrays still takes ``{..}],[{..}`` as two lines and
``[[1`` / ``2]]`` as one), so one of each in a chunk even keeps the count of values equal to
the count of lines. So each line is decoded alone: ``msgspec`` decodes exactly one JSON value
per call and refuses anything after it but JSON whitespace (space, tab, ``\\r``, ``\\n``: the
same four bytes Python's ``json`` skips), which covers the shapes to review:

* two values on a line, with or without a separator (``,``, ``],[``, a space, a lone
  ``\\r``), and a line in brackets (``[{..}]``, an array, not an envelope): refused;
* a value over two lines, broken anywhere (in a string, an array, an object, at a ``[`` or
  ``]`` at a line edge): each half is an incomplete value, refused;
* an empty or whitespace-only line (``""``, spaces, tabs, a lone ``\\r``): no value, refused;
* a NUL: outside strings not JSON, inside one a control character, refused as the
  reference refuses it (so are a raw ``\\r`` and every other control character in a string);
* a ``\\r`` before the ``\\n`` (CRLF), or spaces around the value: whitespace for both.

The payloads a line decoded into (``msgspec.Raw``, each a whole JSON value the decoder checked)
are then joined with ``,`` into arrays (the changes', the follow-ups'): a whole value ends where
it ends whatever follows it, so such an array has exactly one element per payload.
``tests/invariant/test_fastcheck_lines.py`` holds every shape above and reframes valid logs at
random (line ends turned into separators, lines broken in two, both in one chunk).

The whole chunk in one call (:func:`whole_envelopes`, tried first for every chunk of
``validate``, ``replay`` and the session open: docs/decisions.md, "Every compact chunk in one
call").
A chunk of compact lines, each ``{"type":K,"data":D}`` as writers write it, can be decoded at
once and still be proven to hold exactly the reference's lines, by its bytes rather than by
any count. Every ``\\n`` is deleted and what is left (``joined``) decoded as a sequence of
envelopes (``msgspec``'s ``decode_lines``: values one after the other, JSON whitespace
between them allowed). Then the compact text of each envelope, ``{"type":"`` + K's UTF-8 +
``","data":`` + D's raw bytes + ``}``, followed by ``\\n``, is put together, and the chunk is
taken only if that text is the chunk, byte for byte. Why that is enough: each envelope's value
spans at least the bytes of its compact text (an escape in K, whitespace, a key given twice or
any other member only makes it longer, and a line end in K must be escaped), the spans do not
overlap, and the compact texts are all of the chunk but the one ``\\n`` after each, so at most
all of ``joined``: each span is then exactly its compact text, no compact text holds a
``\\n``, and the spans tile ``joined`` in order with nothing between them. So line ``i`` of the
chunk is exactly the bytes ``msgspec`` decoded as envelope ``i`` (``D`` a slice of ``joined``,
which holds no ``\\n``), and a JSON value is the same value wherever it is parsed.
Each shape above breaks the equality: a joined line lacks a ``\\n`` after its first value, a
split line has one inside a value; a whitespace-only line, spaces, a ``\\r`` or a NUL are
bytes no compact text holds. A spaced log (``{"type": ...``) never matches (it is not even
decoded: a chunk must start with :data:`COMPACT_START`), and goes the line-by-line ways.
Line ``i`` being exactly envelope ``i``'s compact text and its ``\\n``, the chunk's lines are
cut out of it where :func:`whole_line_ends` says, with no second split (the session open).

The chunk is decoded with its ``\\n`` bytes in place (no copy of it without them), and taken
only when it holds exactly one ``\\n`` an envelope (docs/decisions.md, "The session open: the
chunk decoded with its line ends"). That decode gives exactly the envelopes, with the same
``data`` bytes, that decoding ``joined`` gives: a ``\\n`` the decoder takes is whitespace
between two tokens (inside a string it refuses it as a control character), deleting
whitespace never merges two tokens of a value it took (two adjacent tokens of valid JSON are
never both scalars, and the values of a sequence here are objects), and no ``data`` holds a
``\\n``: the compact texts put together hold one ``\\n`` an envelope after each, and the chunk
they must equal holds no other. So the proof above applies unchanged. Without that count a
value over two lines broken at whitespace (``{"type":"a","data":[1`` / ``,2]}``) would be
one envelope whose compact text, ``\\n`` inside, is the chunk.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import lru_cache, reduce
from itertools import accumulate, islice
from operator import add, attrgetter, or_
from typing import Any, Final

import msgspec

from schedlog.eventlog import wire
from schedlog.eventlog.events import SCHEDULE_CHANGE_TYPE

__all__ = [
    "COMPACT_START",
    "TYPED_KINDS",
    "TYPED_LINES",
    "Invalid",
    "Kept",
    "NotTaken",
    "decode_envelope",
    "each_line",
    "line_decoder",
    "single_line_tag",
    "whole_envelopes",
    "whole_line_ends",
    "whole_lines",
]

#: The event types whose payloads the fast path decodes typed.
TYPED_KINDS: Final = frozenset({SCHEDULE_CHANGE_TYPE, "message/followup"})
#: The classes of the single-pass decoder's typed lines.
TYPED_LINES: Final = frozenset({wire.ChangeLine, wire.FollowupLine})


class Invalid(Exception):
    """The log is not valid, or not surely: the reference decides."""


class NotTaken(Exception):
    """This chunk goes line by line."""


@lru_cache(maxsize=8)
def line_decoder(kinds: frozenset[str]) -> Callable[[bytes], Any]:
    """The decoder of one line of the given types, tagged by its ``type``: a change or
    follow-up decoded typed, any other payload kept raw. The last few are kept: building one
    costs more than checking a small log (``validate DIR``)."""
    lines: list[type] = [wire.ChangeLine, wire.FollowupLine]
    for number, kind in enumerate(sorted(kinds - TYPED_KINDS)):
        lines.append(
            msgspec.defstruct(
                f"_Line{number}",
                [("data", msgspec.Raw)],
                tag_field="type",
                tag=kind,
                forbid_unknown_fields=True,
                gc=False,
            )
        )
    union = reduce(or_, lines)
    decode: Callable[[bytes], Any] = msgspec.json.Decoder(union).decode
    return decode


#: One line decoded as an envelope of exactly ``type`` and raw ``data``.
decode_envelope = msgspec.json.Decoder(wire.Envelope).decode


def each_line(decode: Callable[[bytes], Any], rows: list[bytes]) -> list[Any]:
    """Every line of a chunk decoded alone, one call each (module docstring)."""
    try:
        return list(map(decode, rows))
    except (msgspec.DecodeError, RecursionError):
        raise NotTaken from None


_KIND: Final = attrgetter("type")
_PAYLOAD: Final = attrgetter("data")
_decode_envelopes = msgspec.json.Decoder(wire.Envelope).decode_lines
#: At most this many event types keep their compact line start (:class:`_Starts`).
_MAX_STARTS: Final = 64


class _Starts(dict[str, bytes]):
    """The compact text between two payloads: the end of a line, and the start of the next,
    of the event type ``kind``: ``}\n{"type":"kind","data":``."""

    def __missing__(self, kind: str) -> bytes:
        start = b'}\n{"type":"' + kind.encode("utf-8", "surrogatepass") + b'","data":'
        if len(self) < _MAX_STARTS:
            self[kind] = start
        return start


_STARTS: Final = _Starts()


#: How every line of a compact chunk starts (:func:`whole_envelopes` looks no further when
#: the chunk does not).
COMPACT_START: Final = b'{"type":"'


def whole_envelopes(body: bytes, ends: list[int] | None = None) -> list[wire.Envelope]:
    """The envelope (``type`` and raw ``data``) of each line of the chunk ``body`` (complete
    lines, each ending with ``\n``), decoded in one call and proven to be the lines the
    reference sees (module docstring, "The whole chunk in one call"): line ``i`` is exactly
    the bytes of envelope ``i`` and its ``\n``. :class:`NotTaken` unless every line is
    compact. With ``ends``, it is filled with where each line ends, as
    :func:`whole_line_ends` (the readable form) gives them, from the rebuilt pieces."""
    if not body.startswith(COMPACT_START):
        raise NotTaken
    try:
        envelopes: list[wire.Envelope] = _decode_envelopes(body)
    except (msgspec.DecodeError, RecursionError):
        raise NotTaken from None
    if not envelopes or body.count(b"\n") != len(envelopes):
        raise NotTaken  # a payload holding a line end (module docstring)
    pieces: list[Any] = [b"}\n"] * (2 * len(envelopes) + 1)
    pieces[0:-1:2] = map(_STARTS.__getitem__, map(_KIND, envelopes))
    pieces[1::2] = map(_PAYLOAD, envelopes)
    pieces[0] = pieces[0][2:]  # no line before the first
    if b"".join(pieces) != body:
        raise NotTaken
    if ends is not None:  # line i ends after piece 2i + 1 (its payload) and its "}\n"
        ends[:] = islice(accumulate(map(len, pieces), initial=2), 2, None, 2)
    return envelopes


def whole_line_ends(envelopes: list[wire.Envelope]) -> list[int]:
    """Where each line of a chunk :func:`whole_envelopes` took ends (just after its ``\\n``),
    counted from the chunk's start: line ``i`` is envelope ``i``'s compact text and its
    ``\\n``, as long as the text between two payloads (``}\\n{"type":"K","data":``) and
    the payload together."""
    starts = map(len, map(_STARTS.__getitem__, map(_KIND, envelopes)))
    return list(accumulate(map(add, starts, map(len, map(_PAYLOAD, envelopes)))))


def whole_lines(body: bytes) -> tuple[list[str], list[msgspec.Raw]]:
    """The ``type`` and raw ``data`` of each line of :func:`whole_envelopes`."""
    envelopes = whole_envelopes(body)
    return list(map(_KIND, envelopes)), list(map(_PAYLOAD, envelopes))


#: A chunk of event lines the check took, kept for the caller (``keep``): its lines in order
#: (each with its ``\n``, or each without it when the chunk held a ``\r``), or the chunk's
#: bytes when it was taken in one call (:func:`whole_envelopes`: each of its lines is exactly
#: the bytes of one envelope, then its ``\n``), and how they were
#: decoded, one item a line: :class:`~schedlog.eventlog.wire.Envelope` items; or the
#: single-pass decoder's, whose class is tagged by the event type
#: (:func:`single_line_tag`) and whose ``data`` is raw unless the line is a
#: :class:`~schedlog.eventlog.wire.ChangeLine` or :class:`~schedlog.eventlog.wire.FollowupLine`;
#: or None, a chunk read line by line; and, for a chunk taken in one call, where each of its
#: lines ends (:func:`whole_line_ends`), else None.
Kept = tuple["list[bytes] | bytes", "list[Any] | None", "list[int] | None"]


def single_line_tag(cls: type) -> str:
    """The event type of a line the single-pass decoder gave as an item of class ``cls``."""
    tag: str = cls.__struct_config__.tag  # type: ignore[attr-defined]
    return tag
