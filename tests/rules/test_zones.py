"""Zones (docs/rules.md#time-zones): exact offsets from the bundled TZif data, local resolution,
names.

``zoneinfo`` is the reference for offsets. It is fed the same bundled bytes (never the OS
zoneinfo) and only asked about instants it can represent as ``datetime`` values.
"""

from __future__ import annotations

import struct
from bisect import bisect_left, bisect_right
from datetime import UTC, datetime, timedelta
from functools import cache
from importlib import resources
from io import BytesIO
from itertools import pairwise
from zoneinfo import ZoneInfo

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from schedlog.errors import ScheduleInputError
from schedlog.rules import _tzif
from schedlog.rules.instants import (
    DAY_MS,
    MAX_MS,
    MIN_MS,
    civil_from_days,
    days_from_civil,
    format_instant,
    parse_canonical_instant,
)
from schedlog.rules.zones import (
    SPAN_END,
    SPAN_START,
    Zone,
    canonical_zone_name,
    check_time_zone,
    get_zone,
    zone_names,
)
from tests.rules.messages import assert_error

HOUR_MS = 3_600_000
MINUTE_MS = 60_000
# datetime cannot hold local dates in years 0 and 10000, so the reference stays this far inside.
SAFE_MIN = MIN_MS + 2 * DAY_MS
SAFE_MAX = MAX_MS - 2 * DAY_MS
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_NAMES = zone_names()


def local(y: int, mo: int, d: int, h: int = 0, mi: int = 0, s: int = 0, ms: int = 0) -> int:
    """A local wall-clock value as epoch ms read as UTC; any year, including 0 and 10000."""
    return days_from_civil(y, mo, d) * DAY_MS + ((h * 60 + mi) * 60 + s) * 1000 + ms


def zone(name: str) -> Zone:
    z = get_zone(name)
    assert z is not None, name
    return z


def _tzif_bytes(name: str) -> bytes:
    return resources.files("tzdata").joinpath("zoneinfo", *name.split("/")).read_bytes()


@cache
def _reference(name: str) -> ZoneInfo:
    return ZoneInfo.from_file(BytesIO(_tzif_bytes(name)), key=name)


def reference_offset(info: ZoneInfo, u: int) -> int:
    assert SAFE_MIN <= u <= SAFE_MAX
    off = (_EPOCH + timedelta(milliseconds=u)).astimezone(info).utcoffset()
    assert off is not None
    return off // timedelta(milliseconds=1)


def candidates(z: Zone, local_ms: int) -> list[int]:
    """Every instant whose local value is ``local_ms``, by brute force over the zone's offsets.

    Any candidate u satisfies u = local_ms - offset(u), and offset(u) is one of the zone's
    offsets, so trying each of them finds all candidates.
    """
    return sorted({local_ms - o for o in set(z._offsets) if z.local(local_ms - o) == local_ms})


def check_invariants(z: Zone) -> None:
    t, o = z._transitions, z._offsets
    assert len(o) == len(t) + 1
    assert all(a < b for a, b in pairwise(t))
    assert all(MIN_MS < x <= MAX_MS for x in t)
    assert all(a != b for a, b in pairwise(o)), "a no-op transition was kept"
    assert all(abs(x) < DAY_MS for x in o)


# --- differential tests against zoneinfo ---------------------------------------------------


@given(name=st.sampled_from(_NAMES), u=st.integers(SAFE_MIN, SAFE_MAX))
def test_offset_matches_zoneinfo(name: str, u: int) -> None:
    assert zone(name).offset(u) == reference_offset(_reference(name), u)


@given(
    name=st.sampled_from(_NAMES),
    pick=st.integers(0, 2**32),
    delta=st.integers(-3 * HOUR_MS, 3 * HOUR_MS),
)
def test_offset_matches_zoneinfo_near_transitions(name: str, pick: int, delta: int) -> None:
    z = zone(name)
    assume(z._transitions)
    u = z._transitions[pick % len(z._transitions)] + delta
    assume(SAFE_MIN <= u <= SAFE_MAX)
    assert z.offset(u) == reference_offset(_reference(name), u)


def test_every_zone_matches_zoneinfo_at_each_change() -> None:
    """Both sides of every transition in the files, and of the rule's changes to 2200 and
    in 9970-9999 (where the rule's 400-year pattern has been repeated the most)."""
    horizon, tail = local(2200, 1, 1), local(9970, 1, 1)
    for name in sorted({zone(n).name for n in _NAMES}):
        z = zone(name)
        check_invariants(z)
        info = _reference(name)
        points = {t * 1000 for t in _tzif.read_tzif(_tzif_bytes(name)).times}
        points.update(t for t in z._transitions if t < horizon or t > tail)
        for t in points:
            for u in (t - 1, t):
                if SAFE_MIN <= u <= SAFE_MAX:
                    assert z.offset(u) == reference_offset(info, u), (name, format_instant(u))


# --- span: stretches of constant offset ---------------------------------------------------

# Zones with many changes, changes close together (Gaza, Casablanca), a skipped date (Apia),
# half-hour DST (Lord Howe), negative DST (Dublin), none at all (UTC), plus every 10th zone.
SPAN_ZONES = sorted(
    {
        zone(n).name
        for n in [
            "UTC",
            "America/New_York",
            "Asia/Gaza",
            "Africa/Casablanca",
            "Pacific/Apia",
            "Australia/Lord_Howe",
            "Europe/Dublin",
            *sorted({zone(n).name for n in _NAMES})[::10],
        ]
    }
)


def check_span(z: Zone, u: int) -> None:
    """span(u) holds u, has offset(u), no change inside, and a change or a sentinel at each end."""
    start, end, o = z.span(u)
    assert start <= u < end
    assert z.offset(u) == o == z.offset(start) == z.offset(end - 1)
    t = z._transitions
    assert bisect_left(t, end) == bisect_right(t, start), "a change inside the stretch"
    if start == SPAN_START:
        assert not t or u < t[0]
        assert z.offset(MIN_MS) == z.offset(-(2**70)) == o
    else:
        assert start in t
        assert z.offset(start - 1) != o
    if end == SPAN_END:
        assert not t or u >= t[-1]
        assert z.offset(MAX_MS) == z.offset(2**70) == o
    else:
        assert end in t
        assert z.offset(end) != o


@given(
    name=st.sampled_from(_NAMES),
    u=st.one_of(
        st.integers(MIN_MS - 2 * DAY_MS, MAX_MS + 2 * DAY_MS),
        st.integers(SPAN_START, SPAN_END - 1),
    ),
)
def test_span_agrees_with_offset(name: str, u: int) -> None:
    check_span(zone(name), u)


@pytest.mark.parametrize("name", SPAN_ZONES)
def test_span_agrees_with_offset_at_each_change(name: str) -> None:
    """Both sides of every change, up to year 10000: the stretches tile the whole line."""
    z = zone(name)
    before = z.span(SPAN_START)
    assert before[0] == SPAN_START
    for t in z._transitions:
        assert z.span(t - 1) == before
        after = z.span(t)
        assert before[1] == t == after[0]
        assert before[2] == z.offset(t - 1) != after[2] == z.offset(t)
        before = after
    assert before[1] == SPAN_END
    assert z.span(SPAN_END - 1) == before
    check_span(z, SPAN_START)
    check_span(z, SPAN_END - 1)


def test_span_vectors() -> None:
    new_york = zone("America/New_York")
    spring = parse_canonical_instant("2026-03-08T07:00:00.000Z")
    autumn = parse_canonical_instant("2026-11-01T06:00:00.000Z")
    assert spring is not None and autumn is not None
    assert new_york.span(spring) == (spring, autumn, -4 * HOUR_MS)
    assert new_york.span(autumn - 1) == (spring, autumn, -4 * HOUR_MS)
    assert new_york.span(spring - 1)[1:] == (spring, -5 * HOUR_MS)
    assert zone("UTC").span(0) == (SPAN_START, SPAN_END, 0)
    assert zone("Asia/Kolkata").span(0) == (
        zone("Asia/Kolkata")._transitions[-1],
        SPAN_END,
        (5 * 60 + 30) * MINUTE_MS,
    )
    # Beyond the sentinels the offset is still right; the bounds no longer hold the instant.
    for far in (-(2**70), 2**70):
        assert new_york.span(far)[2] == new_york.offset(far)


# --- resolve_local against the brute-force candidate set ------------------------------------


@given(name=st.sampled_from(_NAMES), local_ms=st.integers(MIN_MS - DAY_MS, MAX_MS + DAY_MS))
def test_resolve_local_is_earliest_candidate(name: str, local_ms: int) -> None:
    z = zone(name)
    found = candidates(z, local_ms)
    assert z.resolve_local(local_ms) == (found[0] if found else None)


@given(
    name=st.sampled_from(_NAMES),
    pick=st.integers(0, 2**32),
    delta=st.integers(-3 * HOUR_MS, 3 * HOUR_MS),
)
def test_resolve_local_near_transitions(name: str, pick: int, delta: int) -> None:
    z = zone(name)
    assume(z._transitions)
    t = z._transitions[pick % len(z._transitions)]
    local_ms = t + z._offsets[pick % len(z._transitions)] + delta
    found = candidates(z, local_ms)
    assert z.resolve_local(local_ms) == (found[0] if found else None)


@given(name=st.sampled_from(_NAMES), u=st.integers(MIN_MS, MAX_MS))
def test_resolve_local_round_trips(name: str, u: int) -> None:
    z = zone(name)
    back = z.resolve_local(z.local(u))
    assert back is not None
    assert back <= u
    assert z.local(back) == z.local(u)


# --- vectors: DST spring/autumn pairs and other skipped or repeated local times -------------

RESOLVE_VECTORS = [
    # (zone, local wall clock, expected instant or None for a gap)
    ("America/New_York", local(2027, 3, 14, 2, 30), None),
    ("America/New_York", local(2027, 3, 14, 1, 59, 59, 999), "2027-03-14T06:59:59.999Z"),
    ("America/New_York", local(2027, 3, 14, 3), "2027-03-14T07:00:00.000Z"),
    ("America/New_York", local(2027, 11, 7, 1, 30), "2027-11-07T05:30:00.000Z"),
    ("America/New_York", local(2027, 11, 7, 2), "2027-11-07T07:00:00.000Z"),
    ("Europe/Berlin", local(2027, 3, 28, 2, 30), None),
    ("Europe/Berlin", local(2027, 3, 28, 3), "2027-03-28T01:00:00.000Z"),
    ("Europe/Berlin", local(2027, 10, 31, 2, 30), "2027-10-31T00:30:00.000Z"),
    ("Europe/Berlin", local(2027, 10, 31, 3), "2027-10-31T02:00:00.000Z"),
    # Lord Howe shifts by 30 minutes: gap 02:00-02:30 in October, overlap 01:30-02:00 in April.
    ("Australia/Lord_Howe", local(2026, 10, 4, 2, 15), None),
    ("Australia/Lord_Howe", local(2026, 10, 4, 2, 30), "2026-10-03T15:30:00.000Z"),
    ("Australia/Lord_Howe", local(2027, 4, 4, 1, 45), "2027-04-03T14:45:00.000Z"),
    ("Australia/Lord_Howe", local(2027, 4, 4, 2), "2027-04-03T15:30:00.000Z"),
    # Samoa skipped the whole local date 2011-12-30 when it moved across the date line.
    ("Pacific/Apia", local(2011, 12, 29, 23, 59, 59, 999), "2011-12-30T09:59:59.999Z"),
    ("Pacific/Apia", local(2011, 12, 30), None),
    ("Pacific/Apia", local(2011, 12, 30, 12), None),
    ("Pacific/Apia", local(2011, 12, 30, 23, 59, 59, 999), None),
    ("Pacific/Apia", local(2011, 12, 31), "2011-12-30T10:00:00.000Z"),
    # Kiritimati skipped 1994-12-31 (-10 to +14) and 40 minutes in 1979 (-10:40 to -10).
    ("Pacific/Kiritimati", local(1994, 12, 31, 12), None),
    ("Pacific/Kiritimati", local(1995, 1, 1), "1994-12-31T10:00:00.000Z"),
    ("Pacific/Kiritimati", local(1979, 10, 1, 0, 20), None),
    ("Pacific/Kiritimati", local(1979, 10, 1, 0, 40), "1979-10-01T10:40:00.000Z"),
    # Liberia's -0:44:30 ended with a 44 min 30 s gap; seconds-precision offsets are kept.
    ("Africa/Monrovia", local(1971, 12, 31, 12), "1971-12-31T12:44:30.000Z"),
    ("Africa/Monrovia", local(1972, 1, 7, 0, 44, 29, 999), None),
    ("Africa/Monrovia", local(1972, 1, 7, 0, 44, 30), "1972-01-07T00:44:30.000Z"),
    # Sitka repeated a whole day when Alaska moved from Russian to American dates.
    ("America/Sitka", local(1867, 10, 19, 12), "1867-10-18T21:01:13.000Z"),
    ("America/Sitka", local(1867, 10, 18, 15, 29, 59, 999), "1867-10-18T00:31:12.999Z"),
    ("America/Sitka", local(1867, 10, 19, 15, 30), "1867-10-20T00:31:13.000Z"),
]


def wall(local_ms: int) -> str:
    """A local wall-clock value for test ids, years 0 and 10000 included."""
    days, rem = divmod(local_ms, DAY_MS)
    y, mo, d = civil_from_days(days)
    return f"{y:04d}-{mo:02d}-{d:02d} {format_instant(rem)[11:-1]}"


def _vector_id(v: tuple[str, int, str | None]) -> str:
    name, local_ms, expected = v
    return f"{name} {wall(local_ms)} -> {expected or 'gap'}"


@pytest.mark.parametrize("vector", RESOLVE_VECTORS, ids=[_vector_id(v) for v in RESOLVE_VECTORS])
def test_resolve_local_vectors(vector: tuple[str, int, str | None]) -> None:
    name, local_ms, expected = vector
    got = zone(name).resolve_local(local_ms)
    assert (None if got is None else format_instant(got)) == expected


OFFSET_VECTORS = [
    # (zone, instant, offset ms)
    ("America/New_York", "1883-11-18T16:59:59.999Z", -(4 * HOUR_MS + 56 * MINUTE_MS + 2000)),
    ("America/New_York", "1883-11-18T17:00:00.000Z", -5 * HOUR_MS),
    ("America/Sitka", "1867-10-19T00:31:12.999Z", 14 * HOUR_MS + 58 * MINUTE_MS + 47_000),
    ("America/Sitka", "1867-10-19T00:31:13.000Z", -(9 * HOUR_MS + MINUTE_MS + 13_000)),
    ("Africa/Monrovia", "1950-06-01T00:00:00.000Z", -(44 * MINUTE_MS + 30_000)),
    ("Australia/Lord_Howe", "2027-01-01T00:00:00.000Z", 11 * HOUR_MS),
    ("Australia/Lord_Howe", "2027-07-01T00:00:00.000Z", 10 * HOUR_MS + 30 * MINUTE_MS),
    ("Europe/Dublin", "2027-01-15T12:00:00.000Z", 0),
    ("Europe/Dublin", "2027-07-15T12:00:00.000Z", HOUR_MS),
    ("America/Nuuk", "2027-03-28T00:59:59.999Z", -2 * HOUR_MS),
    ("America/Nuuk", "2027-03-28T01:00:00.000Z", -HOUR_MS),
    ("America/New_York", "9999-07-01T00:00:00.000Z", -4 * HOUR_MS),
    ("Australia/Sydney", "9999-07-01T00:00:00.000Z", 10 * HOUR_MS),
]


@pytest.mark.parametrize(
    ("name", "instant", "expected"),
    OFFSET_VECTORS,
    ids=[f"{n} {i}" for n, i, _ in OFFSET_VECTORS],
)
def test_offset_vectors(name: str, instant: str, expected: int) -> None:
    u = parse_canonical_instant(instant)
    assert u is not None
    assert zone(name).offset(u) == expected


# --- range edges: MIN and MAX with far-offset zones ---------------------------------------

EDGE_VECTORS = [
    # (zone, local wall clock, expected instant); results outside [MIN, MAX] are returned as is
    ("Etc/GMT+12", local(0, 12, 31, 12), MIN_MS),
    ("Etc/GMT+12", local(0, 12, 31, 11, 59, 59, 999), MIN_MS - 1),
    ("Etc/GMT+12", local(9999, 12, 31, 11, 59, 59, 999), MAX_MS),
    ("Etc/GMT-14", local(1, 1, 1, 14), MIN_MS),
    ("Etc/GMT-14", local(10000, 1, 1, 13, 59, 59, 999), MAX_MS),
    ("Etc/GMT-14", local(10000, 1, 1, 14), MAX_MS + 1),
    ("Pacific/Kiritimati", local(0, 12, 31, 13, 30, 40), MIN_MS),
    ("Pacific/Kiritimati", local(10000, 1, 1, 13, 59, 59, 999), MAX_MS),
    ("Etc/GMT+3", local(0, 12, 31, 22), MIN_MS + HOUR_MS),
    ("Etc/GMT-2", local(10000, 1, 1, 0, 30), MAX_MS + 1 - 90 * MINUTE_MS),
]


@pytest.mark.parametrize(
    ("name", "local_ms", "expected"),
    EDGE_VECTORS,
    ids=[f"{n} {wall(lm)}" for n, lm, _ in EDGE_VECTORS],
)
def test_range_edge_vectors(name: str, local_ms: int, expected: int) -> None:
    z = zone(name)
    assert z.resolve_local(local_ms) == expected
    assert z.local(expected) == local_ms


CLAMP_VECTORS = [
    # (zone, offset at MIN, offset at MAX); the nearer bound's offset applies outside the range
    ("Etc/GMT+12", -12 * HOUR_MS, -12 * HOUR_MS),
    ("Etc/GMT-14", 14 * HOUR_MS, 14 * HOUR_MS),
    ("Pacific/Kiritimati", -(10 * HOUR_MS + 29 * MINUTE_MS + 20_000), 14 * HOUR_MS),
    ("America/New_York", -(4 * HOUR_MS + 56 * MINUTE_MS + 2000), -5 * HOUR_MS),
    # Sydney is in summer time at MAX; July after MAX must not fall back to winter time.
    ("Australia/Sydney", 10 * HOUR_MS + 4 * MINUTE_MS + 52_000, 11 * HOUR_MS),
    ("UTC", 0, 0),
]


@pytest.mark.parametrize(
    ("name", "at_min", "at_max"), CLAMP_VECTORS, ids=[v[0] for v in CLAMP_VECTORS]
)
def test_offsets_clamp_outside_the_range(name: str, at_min: int, at_max: int) -> None:
    z = zone(name)
    assert z.offset(MIN_MS) == at_min
    assert z.offset(MAX_MS) == at_max
    for below in (MIN_MS - 1, MIN_MS - 200 * DAY_MS, local(-400, 1, 1), -(2**70)):
        assert z.offset(below) == at_min
    for above in (MAX_MS + 1, MAX_MS + 200 * DAY_MS, local(10400, 7, 1), 2**70):
        assert z.offset(above) == at_max
    assert z.resolve_local(local(-5, 6, 1)) == local(-5, 6, 1) - at_min
    assert z.resolve_local(local(10005, 6, 1)) == local(10005, 6, 1) - at_max


# --- the POSIX footer rule, on hand-made TZif files ---------------------------------------


def make_tzif(
    footer: str,
    types: list[tuple[int, bool]],
    transitions: list[tuple[int, int]] | None = None,
    *,
    version: bytes = b"2",
) -> bytes:
    """A TZif file: (utoff seconds, isdst) types, (UTC seconds, type index) transitions."""
    transitions = transitions or []
    ttinfos = b"".join(struct.pack(">lBB", utoff, isdst, 0) for utoff, isdst in types)
    indices = bytes(i for _, i in transitions)

    def block(time_format: str, times: list[int]) -> bytes:
        counts = struct.pack(">6l", 0, 0, 0, len(times), len(types), 4)
        packed = struct.pack(f">{len(times)}{time_format}", *times)
        return b"TZif" + version + bytes(15) + counts + packed + indices + ttinfos + b"ZZZ\0"

    times = [t for t, _ in transitions]
    if version == b"\0":
        return block("l", times)
    # Version 2+ readers skip the 32-bit block, so it may hold anything consistent; keep it empty.
    empty = b"TZif" + version + bytes(15) + struct.pack(">6l", 0, 0, 0, 0, len(types), 4)
    return empty + ttinfos + b"ZZZ\0" + block("q", times) + b"\n" + footer.encode() + b"\n"


def _tzif_with_footer(footer: str, utoff: int) -> bytes:
    return make_tzif(footer, [(utoff, False)])


def _table(data: bytes) -> tuple[list[int], list[int]]:
    return _tzif.offset_table(_tzif.read_tzif(data))


def test_transitions_outside_the_range_only_set_the_bound_offsets() -> None:
    min_s, max_s = MIN_MS // 1000, MAX_MS // 1000
    types = [(3600, False), (7200, False), (10800, False)]
    # The "big bang" transition at -2**59 is what zic writes into fat files.
    moves = [(-(2**59), 1), (min_s - 86_400, 2), (0, 0), (max_s + 86_400, 1)]
    assert _table(make_tzif("", types, moves)) == ([0], [3 * HOUR_MS, HOUR_MS])
    assert _table(make_tzif("", types, [(min_s, 1), (max_s, 2)])) == (
        [MAX_MS - 999],
        [2 * HOUR_MS, 3 * HOUR_MS],
    )


def test_time_type_zero_applies_before_the_first_transition() -> None:
    # RFC 8536 docs/rules.md#instants; zoneinfo would use the first standard-time type (+5:00) here
    # instead.
    data = make_tzif("", [(3600, True), (18000, False)], [(0, 1)])
    assert _table(data) == ([0], [HOUR_MS, 5 * HOUR_MS])


def test_rule_takes_over_without_repeating_the_last_offset() -> None:
    # The file's last transition already enters daylight time before the rule's own March start
    # (zic never writes this); the table must not record March as a change.
    feb = local(2020, 2, 1) // 1000
    data = make_tzif("EST5EDT,M3.2.0,M11.1.0", [(-18000, False), (-14400, True)], [(feb, 1)])
    transitions, offsets = _table(data)
    assert [format_instant(t) for t in transitions[:3]] == [
        "2020-02-01T00:00:00.000Z",
        "2020-11-01T06:00:00.000Z",
        "2021-03-14T07:00:00.000Z",
    ]
    assert offsets[:4] == [-5 * HOUR_MS, -4 * HOUR_MS, -5 * HOUR_MS, -4 * HOUR_MS]


def test_version_1_files_are_read() -> None:
    data = make_tzif("", [(0, False), (3600, True)], [(-1000, 1), (1000, 0)], version=b"\0")
    assert _table(data) == ([-1_000_000, 1_000_000], [0, HOUR_MS, 0])


def test_offset_changes_only_are_kept() -> None:
    # Three types, two with the same offset (a DST flag change): that transition is no change.
    data = make_tzif("", [(0, False), (0, True), (3600, False)], [(10, 1), (20, 2), (30, 1)])
    assert _table(data) == ([20_000, 30_000], [0, HOUR_MS, 0])


FOOTERS = [
    ("<-02>2<-01>,M3.5.0/-1,M10.5.0/0", -7200),
    ("IST-1GMT0,M10.5.0,M3.5.0/1", 3600),
    ("EET-2EEST,M3.4.4/50,M10.4.4/50", 7200),
    ("<-04>4<-03>,M9.1.6/24,M4.1.6/24", -14400),
    ("<+1245>-12:45<+1345>,M9.5.0/2:45,M4.1.0/3:45", 45900),
    ("<+13>-13<+14>,M9.5.0/3,M4.1.0/4", 46800),
    ("NST3:30NDT,M3.2.0,M11.1.0", -12600),
    ("AAA3BBB,J60/2,J300/2", -10800),
    ("AAA-5:30:15BBB-6:45:30,M2.5.3/1:30:30,M10.5.3/-3", 19815),
    ("AAA+4BBB+3,J100/-100,J200/100:59:59", -14400),
    # Start and end fall on the same instant: daylight time all year.
    ("AAA0BBB,M3.2.0/2,M3.2.0/3", 0),
]
# CPython's zoneinfo (3.11) reads a zero-based day ``n`` one day early and maps J59 to
# February 29 in leap years, so those forms are checked against POSIX by hand below instead.


@pytest.mark.parametrize(("footer", "utoff"), FOOTERS, ids=[f for f, _ in FOOTERS])
def test_footer_rules_match_zoneinfo(footer: str, utoff: int) -> None:
    data = _tzif_with_footer(footer, utoff)
    transitions, offsets = _tzif.offset_table(_tzif.read_tzif(data))
    info = ZoneInfo.from_file(BytesIO(data))
    points = [t + d for t in transitions if t < local(2400, 1, 1) for d in (-1, 0)]
    points += [local(y, mo, 1) for y in (1, 1600, 2027, 5000, 9999) for mo in (1, 4, 7, 10)]
    for u in points:
        if SAFE_MIN <= u <= SAFE_MAX:
            got = offsets[bisect_right(transitions, u)]
            assert got == reference_offset(info, u), format_instant(u)


RULE_DAYS = [
    # (rule date, year, local date it names)
    ("J1", 2028, (2028, 1, 1)),
    ("J59", 2027, (2027, 2, 28)),
    ("J59", 2028, (2028, 2, 28)),
    ("J60", 2028, (2028, 3, 1)),
    ("J365", 2028, (2028, 12, 31)),
    ("0", 2027, (2027, 1, 1)),
    ("59", 2027, (2027, 3, 1)),
    ("59", 2028, (2028, 2, 29)),
    ("365", 2028, (2028, 12, 31)),
    ("M3.2.0", 2027, (2027, 3, 14)),
    ("M3.5.0", 2027, (2027, 3, 28)),
    ("M10.1.0", 2026, (2026, 10, 4)),
    ("M9.1.6", 2027, (2027, 9, 4)),
    ("M2.5.2", 2028, (2028, 2, 29)),
    ("M2.5.3", 2028, (2028, 2, 23)),
    ("M1.1.0", 0, (0, 1, 2)),
    ("M12.5.0", 10000, (10000, 12, 31)),
]


@pytest.mark.parametrize(
    ("date", "year", "expected"), RULE_DAYS, ids=[f"{d} in {y}" for d, y, _ in RULE_DAYS]
)
def test_rule_dates(date: str, year: int, expected: tuple[int, int, int]) -> None:
    rule = _tzif.parse_posix_tz(f"AAA0BBB,{date},M12.1.0").start
    assert rule is not None
    assert rule.local_day(year) == days_from_civil(*expected)


def test_zero_based_day_rules_give_exact_offsets() -> None:
    # DST from day 59 at 02:00 standard time to day 300 at -03:00 daylight time, at +1:00/+2:00.
    data = _tzif_with_footer("AAA-1BBB,59/2,300/-3", 3600)
    transitions, offsets = _tzif.offset_table(_tzif.read_tzif(data))
    at = {format_instant(t): o for t, o in zip(transitions, offsets[1:], strict=True)}
    assert at["2028-02-29T01:00:00.000Z"] == 2 * HOUR_MS
    assert at["2028-10-26T19:00:00.000Z"] == HOUR_MS
    assert at["2027-03-01T01:00:00.000Z"] == 2 * HOUR_MS
    assert at["2027-10-27T19:00:00.000Z"] == HOUR_MS
    assert len([t for t in at if t.startswith("2028-")]) == 2


def test_year_round_daylight_time_has_no_transitions() -> None:
    # zoneinfo evaluates rules per UTC year, so it reports standard time for the first five
    # hours of each UTC year here; the rule itself never leaves daylight time.
    data = _tzif_with_footer("EST5EDT,0/0,J365/25", -18000)
    assert _tzif.offset_table(_tzif.read_tzif(data)) == ([], [-4 * HOUR_MS])


def _rule_dates(months: tuple[int, int]) -> st.SearchStrategy[str]:
    first, last = months
    julian = st.integers(days_from_civil(2001, first, 1), days_from_civil(2001, last + 1, 1) - 1)
    return st.one_of(
        st.builds(
            lambda m, w, d: f"M{m}.{w}.{d}",
            st.integers(first, last),
            st.integers(1, 5),
            st.integers(0, 6),
        ),
        julian.map(lambda d: d - days_from_civil(2001, 1, 1) + 1)
        .filter(lambda n: n != 59)
        .map(lambda n: f"J{n}"),
    )


@st.composite
def _footers(draw: st.DrawFn) -> tuple[str, int]:
    std = draw(st.integers(-14 * 60, 12 * 60))
    dst = std + draw(st.sampled_from([-60, -30, 30, 60, 120]))
    hours = st.integers(-48, 72)

    def posix(minutes: int) -> str:
        sign = "-" if minutes > 0 else ""  # POSIX counts hours west of Greenwich
        return f"{sign}{abs(minutes) // 60}:{abs(minutes) % 60:02d}"

    # Both changes stay months away from each other and from New Year: rules whose order flips
    # between years have no agreed meaning, and zoneinfo evaluates rules per UTC year.
    start, end = draw(_rule_dates((2, 5))), draw(_rule_dates((8, 11)))
    if draw(st.booleans()):
        start, end = end, start
    footer = f"<AAA>{posix(std)}<BBB>{posix(dst)},{start}/{draw(hours)},{end}/{draw(hours)}"
    return footer, std * 60


@given(_footers(), st.integers(SAFE_MIN, SAFE_MAX))
def test_random_footer_rules_match_zoneinfo(footer: tuple[str, int], u: int) -> None:
    text, utoff = footer
    data = _tzif_with_footer(text, utoff)
    transitions, offsets = _tzif.offset_table(_tzif.read_tzif(data))
    info = ZoneInfo.from_file(BytesIO(data))
    assert offsets[bisect_right(transitions, u)] == reference_offset(info, u), text


BAD_FOOTERS = [
    ("dst without rules", "EST5EDT"),
    ("no offset", "EST"),
    ("one rule", "EST5EDT,M3.2.0"),
    ("J0", "EST5EDT,J0,J100"),
    ("J366", "EST5EDT,J366,J100"),
    ("day 366", "EST5EDT,366,20"),
    ("short name", "AB5CDT,M3.2.0,M11.1.0"),
    ("month 13", "EST5EDT,M13.1.0,M1.1.0"),
    ("week 6", "EST5EDT,M3.6.0,M11.1.0"),
    ("weekday 7", "EST5EDT,M3.1.7,M11.1.0"),
    ("hour 168", "EST5EDT,M3.1.0/168,M11.1.0"),
    ("minute 60", "EST5EDT,M3.1.0/2:60,M11.1.0"),
    ("offset 25h", "EST25"),
    ("rule without dst", "EST5,M3.2.0,M11.1.0"),
    ("trailing text", "EST5EDT,M3.2.0,M11.1.0,"),
]


@pytest.mark.parametrize("footer", [f for _, f in BAD_FOOTERS], ids=[i for i, _ in BAD_FOOTERS])
def test_bad_footers_are_rejected(footer: str) -> None:
    with pytest.raises(ValueError):
        _tzif.parse_posix_tz(footer)


def test_bad_tzif_files_are_rejected() -> None:
    good = _tzif_bytes("Europe/Berlin")
    for bad in (b"", b"TZjf" + good[4:], good[:60], good[: len(good) - 1]):
        with pytest.raises(ValueError):
            _tzif.read_tzif(bad)


# --- names ----------------------------------------------------------------------------------

CANONICAL = [
    ("us/eastern", "America/New_York"),
    ("US/Eastern", "America/New_York"),
    ("Asia/Calcutta", "Asia/Kolkata"),
    ("Europe/Kiev", "Europe/Kyiv"),
    ("Europe/Amsterdam", "Europe/Amsterdam"),
    ("europe/amsterdam", "Europe/Amsterdam"),
    ("Etc/Universal", "UTC"),
    ("Etc/Zulu", "UTC"),
    ("Etc/UCT", "UTC"),
    ("Etc/UTC", "UTC"),
    ("UTC", "UTC"),
    ("utc", "UTC"),
    ("Etc/GMT", "Etc/GMT"),
    ("Etc/GMT+5", "Etc/GMT+5"),
    ("asia/shanghai", "Asia/Shanghai"),
    ("Mars/Olympus_Mons", None),
]


@pytest.mark.parametrize(("name", "expected"), CANONICAL, ids=[n for n, _ in CANONICAL])
def test_canonical_zone_name(name: str, expected: str | None) -> None:
    assert canonical_zone_name(name) == expected


def test_links_share_their_target_zone() -> None:
    assert zone("US/Eastern") is zone("America/New_York")
    assert zone("Etc/GMT+5").name == "Etc/GMT+5"
    assert zone("Etc/GMT+5").offset(0) == -5 * HOUR_MS


def test_zone_names_are_sorted_and_complete() -> None:
    assert sorted(_NAMES) == _NAMES
    assert {"UTC", "Europe/Kyiv", "Europe/Kiev", "America/New_York"} <= set(_NAMES)


NOT_STRING = "time_zone must be a string."
INVALID = "time_zone must be UTC or a valid IANA Area/Location name."
CHECK_TIME_ZONE = [
    ("not a string", 8, NOT_STRING),
    ("None", None, NOT_STRING),
    ("bytes", b"UTC", NOT_STRING),
    ("no slash", "Europe", INVALID),
    ("UTC+8", "UTC+8", INVALID),
    ("trailing space", "Europe/Paris ", INVALID),
    ("leading space", " UTC", INVALID),
    ("unknown", "Mars/Olympus_Mons", INVALID),
    ("empty", "", INVALID),
    ("lower-case utc", "utc", INVALID),
    ("non-ASCII digit", "Etc/GMT+\u0665", INVALID),
]


@pytest.mark.parametrize(
    ("value", "message"), [v[1:] for v in CHECK_TIME_ZONE], ids=[v[0] for v in CHECK_TIME_ZONE]
)
def test_check_time_zone_rejects(value: object, message: str) -> None:
    with pytest.raises(ScheduleInputError) as info:
        check_time_zone(value)
    assert_error(info.value, "invalid_time_zone", message)


@pytest.mark.parametrize(
    ("value", "canonical"),
    [("UTC", "UTC"), ("us/eastern", "America/New_York"), ("Europe/Amsterdam", "Europe/Amsterdam")],
)
def test_check_time_zone_accepts(value: str, canonical: str) -> None:
    z, name = check_time_zone(value)
    assert name == canonical
    assert z is get_zone(value)
