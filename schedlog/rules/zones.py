"""IANA zones from the pinned ``tzdata`` package only (docs/rules.md#time-zones).

The operating system's zoneinfo is never consulted: names come from ``tzdata/zoneinfo/tzdata.zi``
and ``zone.tab``, offsets from the TZif files inside the package.

Policy, applied by :meth:`Zone.resolve_local`: a local time that does not exist (a DST gap) has
no instant; a repeated local time (an overlap) resolves to the **earlier** instant.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from functools import cache
from importlib import resources
from typing import Final

from schedlog.errors import ScheduleInputError
from schedlog.rules._tzif import offset_table, read_tzif
from schedlog.rules.instants import DAY_MS
from schedlog.rules.text import shown_value

__all__ = [
    "SPAN_END",
    "SPAN_START",
    "Zone",
    "canonical_zone_name",
    "check_time_zone",
    "get_zone",
    "nearest_zones",
    "zone_names",
]

_SHAPE: Final = re.compile(r"[A-Za-z][A-Za-z0-9_+.\-]*(?:/[A-Za-z0-9_+.\-]+)+", re.ASCII)
MSG_NOT_STRING: Final = "time_zone must be a string."
MSG_INVALID: Final = "time_zone must be UTC or a valid IANA Area/Location name."
#: Values longer than this are not compared with the zone names.
_COMPARED_MAX: Final = 64

#: Bounds :meth:`Zone.span` gives a stretch with no offset change before or after it: -2**63 and
#: 2**63 ms, about 292 million years from 1970, far beyond every instant in [MIN, MAX].
SPAN_START: Final = -(2**63)
SPAN_END: Final = 2**63
#: An empty stretch (start == end): the span memo of a zone before its first lookup.
_NO_SPAN: Final = (0, 0, 0)


def _data_text(name: str) -> str:
    return resources.files("tzdata").joinpath("zoneinfo", name).read_text("utf-8")


class _Names:
    """The zone and link tables of the bundled data, built once."""

    def __init__(self) -> None:
        self.zones: set[str] = set()
        self.links: dict[str, str] = {}
        for line in _data_text("tzdata.zi").splitlines():
            if line.startswith("Z "):
                self.zones.add(line.split()[1])
            elif line.startswith("L "):
                _, target, link = line.split()[:3]
                self.links[link] = target
        self.country: set[str] = set()
        for line in _data_text("zone.tab").splitlines():
            if line and not line.startswith("#"):
                self.country.add(line.split("\t")[2])
        self.by_folded: dict[str, str] = {n.casefold(): n for n in (*self.zones, *self.links)}

    def data_zone(self, name: str) -> str:
        """Follow links to the zone whose rules the name uses."""
        seen = 0
        while name in self.links and seen < 16:
            name = self.links[name]
            seen += 1
        return name

    def canonical(self, name: str) -> str:
        """The name a user of the region recognizes (docs/rules.md#zone-names)."""
        if self.data_zone(name) == "Etc/UTC":
            return "UTC"
        seen = 0
        while name not in self.zones and name not in self.country and seen < 16:
            name = self.links[name]
            seen += 1
        return name


@cache
def _names() -> _Names:
    return _Names()


def zone_names() -> list[str]:
    """Every zone and link name in the bundled data, sorted."""
    names = _names()
    return sorted((*names.zones, *names.links))


class Zone:
    """UTC offsets of one zone of the bundled data, by UTC instant in epoch ms.

    The zone's TZif file is read once, into a sorted list of the instants where the offset
    changes (explicit transitions, then the POSIX footer rule carried up to year 10000), so a
    lookup is one bisection and never touches ``datetime``.
    """

    __slots__ = ("_offsets", "_transitions", "name", "recent_span")

    def __init__(self, name: str) -> None:
        data = resources.files("tzdata").joinpath("zoneinfo", *name.split("/")).read_bytes()
        transitions, offsets = offset_table(read_tzif(data))
        self._set(name, transitions, offsets)

    @classmethod
    def from_table(cls, name: str, transitions: list[int], offsets: list[int]) -> Zone:
        """A zone from its offset table: ``offsets[i]`` holds from ``transitions[i - 1]``
        (inclusive) to ``transitions[i]`` (exclusive); one more offset than transitions."""
        zone = cls.__new__(cls)
        zone._set(name, transitions, offsets)
        return zone

    def _set(self, name: str, transitions: list[int], offsets: list[int]) -> None:
        self.name = name
        self._transitions = transitions
        self._offsets = offsets
        #: The stretch of the last :meth:`span_near` lookup (a memo; ``(0, 0, 0)``, holding no
        #: instant, before the first). Sequential walks mostly stay in one stretch.
        self.recent_span: tuple[int, int, int] = _NO_SPAN

    def offset(self, u: int) -> int:
        """Offset in ms in effect at instant ``u``; outside [MIN, MAX] the nearer bound's."""
        # The table holds no transitions outside (MIN, MAX], which gives the clamping for free.
        return self._offsets[bisect_right(self._transitions, u)]

    def local(self, u: int) -> int:
        """The local wall-clock value of instant ``u``, in epoch ms read as if it were UTC."""
        return u + self._offsets[bisect_right(self._transitions, u)]

    def span(self, u: int) -> tuple[int, int, int]:
        """``(start, end, offset)``: the stretch of constant offset around instant ``u``.

        The offset is :meth:`offset` of every instant in the half-open interval [start, end),
        and it differs at ``start - 1`` and at ``end`` (both are instants where the offset
        changes), except at the ends of the table: the first stretch starts at
        :data:`SPAN_START` and the last ends at :data:`SPAN_END`, meaning "no change before" and
        "no change after" (offsets are clamped outside [MIN, MAX], so those stretches are
        unbounded). ``start <= u < end`` holds for every ``u`` in [SPAN_START, SPAN_END); for an
        instant beyond those sentinels the offset is still right but the bounds do not hold it.
        """
        transitions = self._transitions
        i = bisect_right(transitions, u)
        return (
            transitions[i - 1] if i else SPAN_START,
            transitions[i] if i < len(transitions) else SPAN_END,
            self._offsets[i],
        )

    def span_near(self, u: int) -> tuple[int, int, int]:
        """:meth:`span` of ``u``, without a bisection when the last lookup's stretch holds it.

        A memo of a pure function of the pinned zone data, owned by the zone: results never
        depend on it, only speed.
        """
        span = self.recent_span
        if span[0] <= u < span[1]:
            return span
        span = self.recent_span = self.span(u)
        return span

    def resolve_local(self, local_ms: int) -> int | None:
        """The earliest instant whose local wall-clock value is ``local_ms``, or None in a gap.

        Policy (docs/rules.md#local-time): a nonexistent local time (a DST gap) has no instant; a
        repeated one (an overlap) resolves to the earliest instant. Results may lie outside [MIN,
        MAX]; the caller decides what that means.
        """
        transitions = self._transitions
        offsets = self._offsets
        # Every offset is well under a day, so each candidate u = local_ms - offset lies within
        # the window, and only the offsets in effect somewhere inside it can produce one.
        i = bisect_right(transitions, local_ms - _WINDOW_MS)
        n = len(transitions)
        if i == n or transitions[i] > local_ms + _WINDOW_MS:
            return local_ms - offsets[i]
        j = bisect_right(transitions, local_ms + _WINDOW_MS, i)
        # Interval k is [transitions[k - 1], transitions[k]) with offsets[k]; the intervals are
        # ordered, so the first one holding its own candidate holds the earliest candidate.
        for k in range(i, j + 1):
            u = local_ms - offsets[k]
            if (k == 0 or transitions[k - 1] <= u) and (k == n or u < transitions[k]):
                return u
        return None

    def __repr__(self) -> str:
        return f"Zone({self.name!r})"


_WINDOW_MS: Final = 2 * DAY_MS


@cache
def _zone(data_name: str) -> Zone:
    return Zone(data_name)


def get_zone(name: str) -> Zone | None:
    """The zone a name (any case, zone or link) resolves to, or None."""
    names = _names()
    real = names.by_folded.get(name.casefold())
    if real is None:
        return None
    return _zone(names.data_zone(real))


def canonical_zone_name(name: str) -> str | None:
    """The canonical spelling of a zone name (docs/rules.md#zone-names), or None when it does not
    resolve."""
    names = _names()
    real = names.by_folded.get(name.casefold())
    return None if real is None else names.canonical(real)


def nearest_zones(value: str, count: int = 3) -> list[str]:
    """Up to ``count`` canonical zone names closest to ``value`` (:mod:`difflib`, any case),
    best first; none for a value longer than 64 characters."""
    import difflib  # only an error needs it

    if len(value) > _COMPARED_MAX:
        return []
    names = _names()
    close = difflib.get_close_matches(value.casefold(), names.by_folded, n=count * 2, cutoff=0.6)
    out: list[str] = []
    for folded in close:
        name = names.canonical(names.by_folded[folded])
        if name not in out:
            out.append(name)
    return out[:count]


def _invalid(value: str) -> ScheduleInputError:
    """``invalid_time_zone`` with the recommended message, the value, and the nearest names."""
    near = nearest_zones(value)
    hint = f"; nearest names: {', '.join(near)}" if near else ""
    return ScheduleInputError("invalid_time_zone", f"{MSG_INVALID} Got {shown_value(value)}{hint}.")


def check_time_zone(value: object) -> tuple[Zone, str]:
    """Validate a ``time_zone`` input (docs/rules.md#zone-check): the zone and its canonical name.

    Raises :class:`ScheduleInputError` with code ``invalid_time_zone``; for a string, the
    message is the recommended one followed by the value and the nearest zone names.
    """
    if type(value) is not str:
        raise ScheduleInputError("invalid_time_zone", MSG_NOT_STRING)
    if value != "UTC" and _SHAPE.fullmatch(value) is None:
        raise _invalid(value)
    canonical = canonical_zone_name(value)
    zone = get_zone(value)
    if canonical is None or zone is None:
        raise _invalid(value)
    return zone, canonical
