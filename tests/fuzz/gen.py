"""Input generators for the fuzz suite, written once against a tiny :class:`Source`.

A generator is a function ``gen(src) -> value``. :class:`DrawSource` backs a source with
Hypothesis draws (so examples shrink and replay); :class:`RandomSource` backs it with a seeded
``random.Random`` (about a hundred times cheaper per input, for the long run).

Values mix three families, so the fuzzer gets past the first checks into the deep ones:

* fully random JSON-like values and bytes;
* nasty leaves: ints around 2**53 and the field limits, integral and fractional floats (never
  NaN), every JavaScript whitespace character, characters that look like whitespace but are
  not, lone surrogates, astral characters, non-ASCII digits, huge strings, deep nesting;
* valid documents of every shape (records, changes, headers, follow-ups, logs, tasks, store
  documents, tool arguments, batch requests) with one or a few members mutated.
"""

from __future__ import annotations

import json
import math
import random
import re
import struct
from collections.abc import Callable, Sequence
from typing import Any, Final, NamedTuple, Protocol, TypeVar

from hypothesis import strategies as st

from schedlog.eventlog.followups import build_followup
from schedlog.rules.cron import canonical_cron
from schedlog.rules.instants import MAX_MS, MIN_MS, format_instant
from schedlog.rules.text import MAX_SAFE_INT, js_dumps, js_trim, utf16_len

T = TypeVar("T")

# --- sources --------------------------------------------------------------------------------------


class Source(Protocol):
    def int(self, lo: int, hi: int) -> int: ...

    def bool(self, p: float = 0.5) -> bool: ...

    def float(self) -> float: ...

    def bytes(self, n: int) -> bytes: ...

    def text(self, max_len: int) -> str:
        """A string of :func:`char` characters, at most ``max_len`` long."""
        ...

    def native(self) -> object | None:
        """A value from Hypothesis' own JSON strategy, or None when there is no Hypothesis."""
        ...


class RandomSource:
    """A seeded ``random.Random`` behind the :class:`Source` interface."""

    def __init__(self, seed: int | bytes | str) -> None:
        self.r = random.Random(seed)
        self._random = self.r.random

    def int(self, lo: int, hi: int) -> int:
        span = hi - lo + 1
        if span <= 1 << 40:  # the float path is several times cheaper than randint
            return lo + int(self._random() * span)
        return self.r.randint(lo, hi)

    def bool(self, p: float = 0.5) -> bool:
        return self._random() < p

    def float(self) -> float:
        if self.r.random() < 0.5:
            return self.r.uniform(-1e6, 1e6)
        (value,) = struct.unpack("<d", self.r.randbytes(8))
        return value if math.isfinite(value) else 0.5

    def bytes(self, n: int) -> bytes:
        return self.r.randbytes(n)

    def text(self, max_len: int) -> str:
        return "".join(char(self) for _ in range(self.int(0, max_len)))

    def native(self) -> object | None:
        return None


NATIVE_JSON: Final = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=10), children, max_size=4)
    ),
    max_leaves=12,
)


class DrawSource:
    """Hypothesis draws behind the :class:`Source` interface (shrinks toward small choices)."""

    def __init__(self, draw: Callable[[st.SearchStrategy[Any]], Any]) -> None:
        self.draw = draw

    def int(self, lo: int, hi: int) -> int:
        return int(self.draw(st.integers(lo, hi)))

    def bool(self, p: float = 0.5) -> bool:
        if p <= 0:
            return False
        if p >= 1:
            return True
        # Shrinks to 0, which is False: the simpler branch.
        return bool(self.draw(st.integers(0, 1023)) >= (1 - p) * 1024)

    def float(self) -> float:
        return float(self.draw(st.floats(allow_nan=False, allow_infinity=False)))

    def bytes(self, n: int) -> bytes:
        return bytes(self.draw(st.binary(min_size=n, max_size=n)))

    def text(self, max_len: int) -> str:
        # One draw of Hypothesis' own string strategy: far cheaper than a draw per character.
        return str(self.draw(st.text(_ALPHABET, max_size=max_len)))

    def native(self) -> object | None:
        return self.draw(NATIVE_JSON)


_ALPHABET: Final = st.deferred(lambda: st.characters(codec=None) | st.sampled_from(ODD_CHARS))


def strategy(gen: Callable[[Source], T]) -> st.SearchStrategy[T]:
    """The Hypothesis strategy of a generator."""

    @st.composite
    def build(draw: Callable[[st.SearchStrategy[Any]], Any]) -> T:
        return gen(DrawSource(draw))

    return build()


def pick(src: Source, seq: Sequence[T]) -> T:
    return seq[src.int(0, len(seq) - 1)]


def weighted(src: Source, *options: tuple[int, Callable[[], T]]) -> T:
    """Call one option, chosen with the given integer weights (the first shrinks best)."""
    total = sum(w for w, _ in options)
    n = src.int(0, total - 1)
    for w, fn in options:
        if n < w:
            return fn()
        n -= w
    raise AssertionError("unreachable")


# --- nasty leaves ---------------------------------------------------------------------------------

JS_WHITESPACE: Final = (
    "\t\n\v\f\r \u00a0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008"
    "\u2009\u200a\u2028\u2029\u202f\u205f\u3000\ufeff"
)
NOT_WHITESPACE: Final = "\u0085\u180e\u200b\u001c\u001d\u001e\u001f"
LONE_SURROGATES: Final = ("\ud800", "\udbff", "\udc00", "\udfff", "\udcff")
ODD_CHARS: Final = (
    *JS_WHITESPACE,
    *NOT_WHITESPACE,
    *LONE_SURROGATES,
    "\x00",
    "\x7f",
    "\U0001f4c5",
    "\U0010ffff",
    "\u0663",  # ARABIC-INDIC DIGIT THREE
    "\uff13",  # FULLWIDTH DIGIT THREE
    "\u00e9",
    "\ufffe",
    '"',
    "\\",
    "/",
    "\u212a",  # KELVIN SIGN: casefolds to ASCII k
    "\u017f",  # LATIN SMALL LETTER LONG S: casefolds to ASCII s
    "\u0130",  # I WITH DOT ABOVE: lower() grows
)

NASTY_INTS: Final = (
    0,
    1,
    -1,
    2,
    7,
    8,
    59,
    60,
    61,
    100,
    101,
    120,
    121,
    299,
    300,
    301,
    3600,
    86_400,
    2**31 - 1,
    2**31,
    2**32,
    MAX_SAFE_INT - 1,
    MAX_SAFE_INT,
    MAX_SAFE_INT + 1,
    MAX_SAFE_INT + 2,
    -MAX_SAFE_INT,
    -MAX_SAFE_INT - 1,
    -MAX_SAFE_INT - 2,
    2**63 - 1,
    2**63,
    2**64,
    -(2**63),
    10**20,
    9_007_199_254_740,
    9_007_199_254_741,
    MIN_MS,
    MAX_MS,
    MIN_MS - 1,
    MAX_MS + 1,
    10**400,
    -(10**400),
)
NASTY_FLOATS: Final = (
    0.0,
    -0.0,
    0.5,
    1.0,
    1.5,
    7.0,
    60.0,
    300.0,
    299.9,
    300.00000000000006,
    1e300,
    -1e300,
    5e-324,
    float(2**53),
    float(2**53 + 2),
    9_007_199_254_740_991.0,
    1e16,
    1e-7,
    1.0000000000000002,
    float(MAX_MS),
)
NASTY_STRINGS: Final = (
    "",
    " ",
    "\u3000",
    "\u200b",
    "\ud800",
    "x\udc00y",
    "\U0001f4c5",
    "\x00",
    "null",
    "true",
    "1",
    "300",
    "1e3",
    "-0",
    "NaN",
    "UTC",
    "Europe/Berlin",
    "schedule-1",
    "2026-05-01T09:00:00.000Z",
    "0 9 * * 1-5",
    "{",
    "[]",
    "\n",
    "\r\n",
    "\\",
    '"',
    "a" * 120,
    "a" * 121,
    "\U0001f4c5" * 60,
    "\U0001f4c5" * 61,
    " a ",
    "\u00a0a\u00a0",
    "\u0085a",
    "\u212a",
)

KNOWN_KEYS: Final = (
    "id",
    "kind",
    "title",
    "prompt",
    "afterSeconds",
    "everySeconds",
    "scheduledAt",
    "time",
    "timeZone",
    "weekdays",
    "expression",
    "version",
    "operation",
    "schedule",
    "acceptedAt",
    "type",
    "data",
    "sessionId",
    "seedLength",
    "parentSessionId",
    "messageId",
    "role",
    "source",
    "text",
    "reminders",
    "occurrenceAt",
    "createdAt",
    "record",
    "status",
    "lastDelivery",
    "deliveryHistory",
    "records",
    "earlierRecordsUnavailable",
    "earlierRecordsPruned",
    "deliveredAt",
    "unit",
    "global",
    "tables",
    "tasks",
    "name",
    "after_seconds",
    "at",
    "every_seconds",
    "daily",
    "weekly",
    "cron",
    "time_zone",
    "date",
    "op",
    "now",
    "args",
    "protocol",
    "current",
    "expected",
    "change",
    "events",
    "limit",
    "before",
    "session",
    "Title",
    "__proto__",
    "",
)


def char(src: Source) -> str:
    return weighted(
        src,
        (6, lambda: chr(src.int(0x20, 0x7E))),
        (3, lambda: pick(src, ODD_CHARS)),
        (1, lambda: chr(src.int(0, 0xFFFF))),
        (1, lambda: chr(src.int(0x10000, 0x10FFFF))),
    )


def text(src: Source, max_len: int = 12) -> str:
    return src.text(max_len)


def huge_string(src: Source) -> str:
    n = pick(src, (1_000, 4_301, 20_000)) if src.bool(0.95) else pick(src, (65_536, 1 << 20))
    unit = pick(src, ("x", " ", "\u3000", "\U0001f4c5", "0", "\ud800", "a\\"))
    return unit * (n // len(unit))


def nasty_string(src: Source) -> str:
    return weighted(
        src,
        (4, lambda: pick(src, NASTY_STRINGS)),
        (4, lambda: text(src)),
        (2, lambda: pad(src, text(src, 6) or "a")),
        (1, lambda: huge_string(src) if src.bool(0.2) else text(src, 40)),
    )


def pad(src: Source, value: str) -> str:
    """``value`` with whitespace (or whitespace look-alikes) on one or both sides."""
    left = "".join(pick(src, JS_WHITESPACE + NOT_WHITESPACE) for _ in range(src.int(0, 2)))
    right = "".join(pick(src, JS_WHITESPACE + NOT_WHITESPACE) for _ in range(src.int(0, 2)))
    return left + value + right


def nasty_int(src: Source) -> int:
    return weighted(
        src,
        (4, lambda: pick(src, NASTY_INTS)),
        (3, lambda: src.int(-5, 400)),
        (2, lambda: pick(src, NASTY_INTS) + src.int(-3, 3)),
        (1, lambda: src.int(-(2**70), 2**70)),
    )


def nasty_float(src: Source) -> float:
    return pick(src, NASTY_FLOATS) if src.bool(0.7) else src.float()


def leaf(src: Source) -> object:
    return weighted(
        src,
        (1, lambda: None),
        (1, lambda: src.bool()),
        (3, lambda: nasty_int(src)),
        (2, lambda: nasty_float(src)),
        (4, lambda: nasty_string(src)),
    )


def json_value(src: Source, depth: int = 3) -> object:
    """A random JSON-like value (keys are strings; no NaN)."""
    if depth <= 0 or src.bool(0.55):
        return leaf(src)
    if src.bool():
        return [json_value(src, depth - 1) for _ in range(src.int(0, 4))]
    return {key(src): json_value(src, depth - 1) for _ in range(src.int(0, 4))}


def key(src: Source) -> str:
    return pick(src, KNOWN_KEYS) if src.bool(0.6) else text(src, 8)


def deep_value(src: Source) -> object:
    depth = pick(src, (50, 500, 990, 1_100, 5_000))
    value: object = pick(src, (None, 1, "x", [], {}))
    as_list = src.bool()
    for _ in range(depth):
        value = [value] if as_list else {"a": value}
    return value


def _native_or_json(src: Source) -> object:
    value = src.native()
    return json_value(src) if value is None else value


def any_value(src: Source) -> object:
    return weighted(
        src,
        (6, lambda: json_value(src)),
        (3, lambda: leaf(src)),
        (2, lambda: _native_or_json(src)),
        (1, lambda: deep_value(src)),
    )


# --- structure-aware mutation ---------------------------------------------------------------------

_DELETE: Final = object()


def mutate(src: Source, value: object, count: int = 1) -> object:
    """``value`` with ``count`` random members replaced, removed, retyped or added (in place
    where possible; the result may be a new root)."""
    for _ in range(count):
        value = _mutate_once(src, value)
    return value


def _mutate_once(src: Source, value: object) -> object:
    parent: dict[str, object] | list[object] | None = None
    slot: Any = None
    node = value
    while isinstance(node, dict | list) and node and src.bool(0.65):
        parent = node
        if isinstance(node, dict):
            slot = pick(src, list(node))
            node = node[slot]
        else:
            slot = src.int(0, len(node) - 1)
            node = node[slot]
    new = _mutate_node(src, node, parent is not None)
    if parent is None:
        return any_value(src) if new is _DELETE else new
    if new is _DELETE:
        del parent[slot]
    else:
        parent[slot] = new
    return value


def _mutate_node(src: Source, node: object, deletable: bool) -> object:
    options: list[tuple[int, Callable[[], object]]] = [
        (3, lambda: leaf(src)),
        (1, lambda: json_value(src, 2)),
        (1, lambda: [node] if src.bool() else {"value": node}),
    ]
    if deletable:
        options.append((3, lambda: _DELETE))
    if type(node) is str:
        options += [
            (3, lambda: pad(src, node)),
            (1, lambda: node.upper() if src.bool() else node.lower()),
            (2, lambda: _edit_string(src, node)),
            (1, lambda: node + pick(src, LONE_SURROGATES)),
        ]
    elif type(node) is int:
        options += [
            (3, lambda: node + src.int(-2, 2)),
            (2, lambda: float(node) if abs(node) < 2**1000 else 1e300),
            (1, lambda: str(node)),
            (1, lambda: -node),
            (1, lambda: node * pick(src, (1000, 60, 2**20))),
        ]
    elif type(node) is float:
        options += [(2, lambda: int(node) if math.isfinite(node) else 0), (1, lambda: node + 0.5)]
    elif type(node) is dict:
        options += [
            (4, lambda: _add_key(src, node)),
            (2, lambda: _rename_key(src, node)),
            (1, lambda: {}),
        ]
    elif type(node) is list:
        options += [
            (2, lambda: [*node, any_value(src)]),
            (1, lambda: node[::-1]),
            (1, lambda: node + node),
            (1, lambda: []),
        ]
    return weighted(src, *options)


def _edit_string(src: Source, value: str) -> str:
    if not value:
        return char(src)
    i = src.int(0, len(value) - 1)
    return weighted(
        src,
        (2, lambda: value[:i] + char(src) + value[i + 1 :]),
        (2, lambda: value[:i] + char(src) + value[i:]),
        (1, lambda: value[:i] + value[i + 1 :]),
        (1, lambda: value[:i]),
        (1, lambda: value.replace(pick(src, "0123456789"), pick(src, ("\u0663", "\uff13")))),
    )


def _add_key(src: Source, node: dict[str, object]) -> dict[str, object]:
    node[key(src)] = any_value(src)
    return node


def _rename_key(src: Source, node: dict[str, object]) -> dict[str, object]:
    if not node:
        return node
    old = pick(src, list(node))
    new = weighted(src, (2, lambda: old.upper()), (2, lambda: pad(src, old)), (1, lambda: key(src)))
    return {(new if k == old else k): v for k, v in node.items()}


def maybe_mutate(src: Source, value: object, p: float = 0.5) -> object:
    """Usually ``value`` or a mutation of it; now and then a fully random value."""
    return weighted(
        src,
        (int((1 - p) * 100), lambda: value),
        (int(p * 90), lambda: mutate(src, value, src.int(1, 3))),
        (10, lambda: any_value(src)),
    )


# --- bytes ----------------------------------------------------------------------------------------

BYTE_TOKENS: Final = (
    b"NaN",
    b"Infinity",
    b"-Infinity",
    b"-0",
    b"1e999",
    b"1" * 5_000,
    b"\xff",
    b"\xc3",
    b"\xed\xa0\x80",
    b"\xef\xbb\xbf",
    b"\n",
    b"\r",
    b"\r\n",
    b"\x00",
    b'"',
    b"\\",
    b"{",
    b"}",
    b"[",
    b"]",
    b",",
    b":",
    b'"type":"x",',
    b"\\ud800",
    b"\\u0000",
    b" ",
    b"[" * 2_000,
)


def mutate_bytes(src: Source, data: bytes, count: int = 1) -> bytes:
    for _ in range(count):
        data = _mutate_bytes_once(src, data)
    return data


def _mutate_bytes_once(src: Source, data: bytes) -> bytes:
    n = len(data)
    i = src.int(0, n)
    j = src.int(i, min(n, i + 64))
    return weighted(
        src,
        (3, lambda: data[:i] + pick(src, BYTE_TOKENS) + data[i:]),
        (2, lambda: data[:i] + bytes([src.int(0, 255)]) + data[i + 1 :]),
        (2, lambda: data[:i] + data[j:]),
        (1, lambda: data[:j] + data[i:j] + data[j:]),
        (1, lambda: data[:i]),
        (2, lambda: _duplicate_key(src, data)),
        (1, lambda: src.bytes(src.int(0, 32))),
    )


_MEMBER_START: Final = re.compile(rb'[{,]"')


def _duplicate_key(src: Source, data: bytes) -> bytes:
    """Insert ``"k":0,`` before a member ``"k":…`` so the object holds the key twice."""
    starts = [m.start() for m in _MEMBER_START.finditer(data, 0, 1 << 16)]
    if not starts:
        return data
    i = pick(src, starts) + 1
    end = data.find(b'":', i + 1)
    if end < 0:
        return data
    name = data[i : end + 2]
    return data[:i] + name + b"0," + data[i:]


def serialize(src: Source, value: object) -> bytes:
    """JSON text of ``value`` in one of the spellings other producers use."""
    return weighted(
        src,
        (6, lambda: js_dumps(value).encode("utf-8", "surrogatepass")),
        (2, lambda: json.dumps(value, separators=(", ", ": ")).encode()),
        (1, lambda: json.dumps(value, ensure_ascii=False).encode("utf-8", "surrogatepass")),
        (1, lambda: json.dumps(value, indent=2).encode()),
    )


def safe_serialize(src: Source, value: object) -> bytes:
    try:
        js_dumps(value)  # fails fast (in C) for values nested deeper than JSON text can be
        return serialize(src, value)
    except (ValueError, TypeError, RecursionError, OverflowError):
        return b"null"


# --- instants, zones, times -----------------------------------------------------------------------

T0: Final = 1_777_615_200_000  # 2026-05-01T06:00:00.000Z
DAY: Final = 86_400_000


def representable_ms(src: Source) -> int:
    return weighted(
        src,
        (5, lambda: T0 + src.int(-10 * DAY, 400 * DAY) // 1000 * 1000),
        (2, lambda: src.int(MIN_MS, MAX_MS)),
        (1, lambda: MIN_MS + src.int(0, 3 * DAY)),
        (1, lambda: MAX_MS - src.int(0, 3 * DAY)),
    )


def instant_ms(src: Source) -> int:
    """Mostly representable instants; sometimes just outside, sometimes absurd."""
    return weighted(
        src,
        (8, lambda: representable_ms(src)),
        (1, lambda: pick(src, (MIN_MS - 1, MAX_MS + 1, MIN_MS - DAY, MAX_MS + DAY))),
        (1, lambda: nasty_int(src)),
    )


def canonical_instant(src: Source) -> str:
    return format_instant(representable_ms(src))


def instant_text(src: Source) -> str:
    """A stored instant: canonical, or canonical with one realistic defect."""
    good = canonical_instant(src)
    return weighted(
        src,
        (6, lambda: good),
        (1, lambda: good[:-2] + "Z"),
        (1, lambda: good[:-1] + "+00:00"),
        (1, lambda: good.replace("T", "t") if src.bool() else good.lower()),
        (1, lambda: pick(src, ("2026-04-31T00:00:00.000Z", "0000-12-31T23:59:59.999Z"))),
        (1, lambda: pick(src, ("10000-01-01T00:00:00.000Z", "2026-05-01T24:00:00.000Z"))),
        (1, lambda: _edit_string(src, good)),
    )


ZONES: Final = (
    "UTC",
    "Etc/UTC",
    "Etc/Universal",
    "Etc/Zulu",
    "Etc/GMT",
    "Etc/GMT+12",
    "Etc/GMT-14",
    "Europe/Berlin",
    "Europe/Amsterdam",
    "Europe/Kiev",
    "Europe/Kyiv",
    "US/Eastern",
    "America/New_York",
    "Asia/Calcutta",
    "Asia/Kolkata",
    "Asia/Shanghai",
    "Australia/Lord_Howe",
    "Pacific/Chatham",
    "Asia/Kathmandu",
    "America/St_Johns",
    "Antarctica/Troll",
    "Africa/Casablanca",
    "Pacific/Apia",
    "Pacific/Kiritimati",
    "America/Sao_Paulo",
    "Europe/Dublin",
    "Asia/Tehran",
    "Pacific/Honolulu",
    "America/Argentina/Buenos_Aires",
)
BAD_ZONES: Final = (
    "",
    "Europe",
    "UTC+8",
    "Europe/Paris ",
    "Mars/Olympus_Mons",
    "utc",
    "GMT",
    "Europe//Berlin",
    "/Europe/Berlin",
    "Europe/Berlin/",
    "Europe/Berlin\x00",
    "Etc/GMT+13",
    "posixrules",
    "right/UTC",
    "Europe/../Europe/Berlin",
    "Europe/./Berlin",
    "Factory",
    "EST5EDT",
    "zone.tab",
    "Europe/Ber\u212alin",
    "Europe/\u0130stanbul",
    "1Europe/Berlin",
    "Europe/Berlin\n",
)


def zone_name(src: Source) -> str:
    return weighted(
        src,
        (6, lambda: pick(src, ZONES)),
        (2, lambda: _recase(src, pick(src, ZONES))),
        (2, lambda: pick(src, BAD_ZONES)),
        (1, lambda: "".join(pick(src, "Aaz/_+-.09") for _ in range(src.int(0, 12)))),
        (1, lambda: nasty_string(src)),
    )


def zone_value(src: Source) -> object:
    return zone_name(src) if src.bool(0.9) else any_value(src)


def _recase(src: Source, name: str) -> str:
    return "".join(c.upper() if src.bool() else c.lower() for c in name)


def _two(n: int) -> str:
    return f"{n:02d}"


def time_text(src: Source, *, normalized: bool, exact: bool = False) -> str:
    """``HH:MM:SS`` with an optional 1-3 digit fraction, or the normalized ``.mmm`` form."""
    p = 1.0 if exact else 0.9
    h = src.int(0, 23) if src.bool(p) else src.int(0, 99)
    m = src.int(0, 59) if src.bool(p) else src.int(0, 99)
    s = src.int(0, 59) if src.bool(p) else src.int(0, 99)
    base = f"{_two(h)}:{_two(m)}:{_two(s)}"
    if normalized:
        out = f"{base}.{src.int(0, 999):03d}"
    else:
        digits = src.int(0, 3)
        out = base if digits == 0 else f"{base}.{src.int(0, 10**digits - 1):0{digits}d}"
    return out if exact or src.bool(0.85) else _edit_string(src, out)


# --- cron -----------------------------------------------------------------------------------------

CRON_FIELDS: Final = ((0, 59), (0, 23), (1, 31), (1, 12), (0, 7))
BAD_CRON_ELEMENTS: Final = (
    "JAN",
    "MON",
    "L",
    "W",
    "5#2",
    "?",
    "5/2",
    "*5",
    "-5",
    "+1",
    "",
    "\u0663",
    "*/0",
    "*/",
    "1-",
    "1--2",
    "9" * 30,
    "0" * 40 + "7",
    "*/" + "9" * 20,
)


def cron_number(src: Source, lo: int, hi: int) -> str:
    n = src.int(lo, hi) if src.bool(0.85) else src.int(max(0, lo - 2), hi + 3)
    return ("0" * src.int(1, 3) + str(n)) if src.bool(0.1) else str(n)


def cron_element(src: Source, lo: int, hi: int, *, valid: bool) -> str:
    if not valid and src.bool(0.15):
        return pick(src, BAD_CRON_ELEMENTS)

    def rng() -> str:
        a = src.int(lo, hi)
        b = src.int(a, hi) if valid or src.bool(0.8) else src.int(lo, hi)
        return f"{a}-{b}" if valid else f"{cron_number(src, a, a)}-{cron_number(src, b, b)}"

    step_hi = hi - lo + 3

    def step() -> str:
        return str(src.int(1, step_hi)) if valid or src.bool(0.9) else cron_number(src, 0, 100)

    return weighted(
        src,
        (3, lambda: "*"),
        (2, lambda: f"*/{step()}"),
        (4, lambda: str(src.int(lo, hi)) if valid else cron_number(src, lo, hi)),
        (2, rng),
        (1, lambda: f"{rng()}/{step()}"),
    )


def cron_expression(src: Source, *, valid: bool = False) -> str:
    fields = [
        ",".join(cron_element(src, lo, hi, valid=valid) for _ in range(src.int(1, 3)))
        for lo, hi in CRON_FIELDS
    ]
    if not valid and src.bool(0.1):
        if src.bool():
            fields.append("0")
        else:
            fields.pop()
    seps = [" " if valid or src.bool(0.8) else pad(src, "") or "\u3000" for _ in fields[1:]]
    out = fields[0] + "".join(sep + f for sep, f in zip(seps, fields[1:], strict=True))
    if not valid and src.bool(0.05):
        out = pick(src, ("@daily", "@reboot", "* * * * * *", "0 9 * * MON-FRI"))
    if not valid and src.bool(0.05):
        out = pad(src, out)
    return out


def canonical_cron_expression(src: Source) -> str:
    for _ in range(4):
        try:
            return canonical_cron(cron_expression(src, valid=True))
        except Exception:
            continue
    return "0 9 * * 1-5"


# --- `at` -----------------------------------------------------------------------------------------


def at_string(src: Source, near: int = T0) -> str:
    """The RFC 3339 ``at`` form with realistic and unrealistic parts."""
    if src.bool(0.5):
        base = format_instant(max(MIN_MS, min(MAX_MS, near + src.int(-DAY, 60 * DAY))))
        base = base[:-5] if src.bool() else base[:-1]  # drop ".mmmZ" or just "Z"
    else:
        y = pick(src, (src.int(1, 9999), 0, 9999, 1, 2026))
        mo = src.int(1, 12) if src.bool(0.9) else src.int(0, 13)
        d = src.int(1, 31) if src.bool(0.9) else src.int(0, 32)
        base = f"{y:04d}-{_two(mo)}-{_two(d)}T{time_text(src, normalized=False)}"
    offset = weighted(
        src,
        (3, lambda: "Z"),
        (3, lambda: f"{pick(src, '+-')}{_two(src.int(0, 23))}:{_two(src.int(0, 59))}"),
        (1, lambda: pick(src, ("-00:00", "+24:00", "+23:60", "+0800", "z", "", "+23:59"))),
    )
    out = base + offset
    return out if src.bool(0.85) else _edit_string(src, out)


def at_local(src: Source, near: int = T0) -> dict[str, object]:
    day = format_instant(max(MIN_MS, min(MAX_MS, near + src.int(-DAY, 60 * DAY))))[:10]
    value: dict[str, object] = {
        "date": day if src.bool(0.8) else pick(src, ("0000-12-31", "2026-02-29", "2027-03-28")),
        "time": time_text(src, normalized=src.bool(0.3)),
        "time_zone": zone_value(src),
    }
    return value


def at_value(src: Source, near: int = T0) -> object:
    return weighted(
        src,
        (5, lambda: at_string(src, near)),
        (4, lambda: at_local(src, near)),
        (1, lambda: any_value(src)),
    )


# --- records --------------------------------------------------------------------------------------

KINDS: Final = ("after", "at", "every", "daily", "weekly", "cron")
LEGACY_KINDS: Final = ("after", "at", "every")


def record_id(src: Source) -> str:
    return weighted(
        src,
        (5, lambda: f"schedule-{src.int(1, 6)}"),
        (1, lambda: "schedule-0b6c1f2e-8f1d-4b7a-9a53-7e3c8d5f1a20"),
        (1, lambda: js_trim(text(src, 8)) or "x"),
    )


def prompt_text(src: Source) -> str:
    raw = weighted(
        src,
        (5, lambda: pick(src, ("Stand up", 'Check "build" / deploy\nthen report', "p"))),
        (3, lambda: text(src, 20)),
        (1, lambda: huge_string(src) + "!" if src.bool(0.05) else text(src, 80)),
    )
    return js_trim(raw) or "p"


def title_text(src: Source) -> str:
    raw = js_trim(text(src, 20)) if src.bool(0.5) else pick(src, ("Standup", "T", "a" * 120))
    while utf16_len(raw) > 120:
        raw = js_trim(raw[:-1])
    return raw or "T"


def weekdays(src: Source) -> list[int]:
    days = sorted({src.int(1, 7) for _ in range(src.int(1, 7))})
    return days


def record_json(src: Source, *, host: bool, kind: str | None = None) -> dict[str, object]:
    """A valid record of the host or legacy decoder, keys in the canonical order."""
    kind = kind or pick(src, KINDS if host else LEGACY_KINDS)
    out: dict[str, object] = {"id": record_id(src), "kind": kind}
    if host or src.bool(0.3):
        out["title"] = title_text(src)
    out["prompt"] = prompt_text(src)
    if kind == "after":
        out["afterSeconds"] = pick(src, (1, 600, MAX_SAFE_INT, src.int(1, 10**7)))
    elif kind == "every":
        minimum = 60 if host else 300
        out["everySeconds"] = pick(src, (minimum, 3600, 9_007_199_254_740, src.int(minimum, 10**6)))
    elif kind in ("daily", "weekly"):
        out["time"] = time_text(src, normalized=True, exact=True)
        out["timeZone"] = pick(src, ZONES)
        if kind == "weekly":
            out["weekdays"] = weekdays(src)
    elif kind == "cron":
        out["expression"] = canonical_cron_expression(src)
        out["timeZone"] = pick(src, ZONES)
    out["scheduledAt"] = canonical_instant(src)
    return out


def record_value(src: Source, *, host: bool) -> object:
    return maybe_mutate(src, record_json(src, host=host), 0.6)


# --- changes, headers, events, logs ---------------------------------------------------------------


def change_json(src: Source) -> dict[str, object]:
    op = pick(src, ("create", "delete", "dispatch", "dispatch"))
    if op == "create":
        return {"version": 1, "operation": "create", "schedule": record_json(src, host=False)}
    out: dict[str, object] = {"version": 1, "operation": op, "id": record_id(src)}
    if op == "dispatch" and src.bool():
        out["acceptedAt"] = canonical_instant(src)
    return out


def header_json(src: Source, session_id: str = "s-1", seed: int = 0) -> dict[str, object]:
    parent = None if seed == 0 and src.bool(0.8) else "parent-1"
    return {
        "type": "session/header",
        "version": 1,
        "sessionId": session_id,
        "seedLength": seed,
        "parentSessionId": parent,
    }


def followup_json(src: Source, session_id: str = "s-1") -> dict[str, object]:
    members = [(record_id(src), representable_ms(src)) for _ in range(src.int(0, 3))]
    return build_followup(
        session_id,
        members,
        "[SCHEDULE REMINDER]\n" + prompt_text(src),
        representable_ms(src),
        protocol=pick(src, ("session-local", "host")),
    )


def event_json(src: Source) -> dict[str, object]:
    return weighted(
        src,
        (4, lambda: {"type": "schedule/change", "data": change_json(src)}),
        (2, lambda: followup_json(src)),
        (1, lambda: {"type": "message/user", "data": {"text": text(src)}, "extra": 1}),
        (1, lambda: {"type": pick(src, ("session/header", "x", "schedule/changed")), "data": None}),
    )


class _Active(NamedTuple):
    id: str
    kind: str
    scheduled_at: int
    every: int


def log_events(src: Source, session_id: str = "s-1") -> list[dict[str, object]]:
    """Events that mostly fold: creates with fresh ids, dispatches and deletes of active ids,
    every dispatches at or after the target, follow-ups and foreign events in between."""
    events: list[dict[str, object]] = []
    active: list[_Active] = []
    counter = 0
    for _ in range(src.int(0, 10)):
        op = src.int(0, 9)
        if op <= 3 or not active:
            counter += 1
            record = record_json(src, host=False)
            record["id"] = f"schedule-{counter}"
            record["scheduledAt"] = format_instant(T0 + src.int(0, 30 * DAY))
            every = int(record.get("everySeconds", 0) or 0) * 1000
            at = _ms(str(record["scheduledAt"]))
            active.append(_Active(record["id"], str(record["kind"]), at, every))
            change: dict[str, object] = {"version": 1, "operation": "create", "schedule": record}
            events.append({"type": "schedule/change", "data": change})
        elif op <= 5:
            target = active.pop(src.int(0, len(active) - 1))
            change = {"version": 1, "operation": "dispatch", "id": target.id}
            if target.kind == "every":
                accepted = target.scheduled_at + src.int(0, 5 * target.every)
                if accepted > MAX_MS:
                    continue
                change["acceptedAt"] = format_instant(accepted)
                occurrence = target.scheduled_at + (
                    (accepted - target.scheduled_at) // target.every * target.every
                )
                following = occurrence + target.every
                if following <= MAX_MS:
                    active.append(target._replace(scheduled_at=following))
            events.append({"type": "schedule/change", "data": change})
        elif op == 6:
            target = active.pop(src.int(0, len(active) - 1))
            change = {"version": 1, "operation": "delete", "id": target.id}
            events.append({"type": "schedule/change", "data": change})
        else:
            events.append(event_json(src) if op == 9 else followup_json(src, session_id))
    return events


def _ms(text: str) -> int:
    from schedlog.rules.instants import parse_canonical_instant

    value = parse_canonical_instant(text)
    assert value is not None
    return value


def log_bytes(src: Source) -> bytes:
    """A whole session log: usually well formed, with line-, member- or byte-level damage."""
    events = log_events(src)
    seed = 0
    if events and src.bool(0.15):
        seed = src.int(0, len(events))
    header: object = header_json(src, "s-1", seed)
    if src.bool(0.1):
        header = maybe_mutate(src, header, 1.0)
    values: list[object] = [header, *events]
    if values and src.bool(0.3):
        i = src.int(0, len(values) - 1)
        values[i] = mutate(src, values[i], src.int(1, 2))
    lines = [safe_serialize(src, v).replace(b"\n", b" ") for v in values]
    if lines and src.bool(0.2):
        i = src.int(0, len(lines) - 1)
        lines[i] = weighted(
            src,
            (2, lambda: b""),
            (1, lambda: lines[i] + b"\r"),
            (1, lambda: src.bytes(src.int(0, 16)).replace(b"\n", b"")),
            (1, lambda: lines[src.int(0, len(lines) - 1)]),
        )
    data = b"".join(line + b"\n" for line in lines)
    if src.bool(0.15):
        data += safe_serialize(src, event_json(src))[: src.int(0, 40)]  # a torn tail
    if src.bool(0.2):
        data = mutate_bytes(src, data, src.int(1, 3))
    if src.bool(0.02):
        data = b""
    return data


# --- host tasks and store documents ---------------------------------------------------------------


def message_id(src: Source, n: int) -> str:
    return f"schedule-message-{n:032x}" if src.bool(0.9) else f"m{n}"


def task_json(src: Source, task_id: str | None = None) -> dict[str, object]:
    """A valid host task (docs/protocol.md#task-document) with a consistent receipt and history."""
    record = record_json(src, host=True)
    if task_id is not None:
        record["id"] = task_id
    out: dict[str, object] = {"sessionId": pick(src, ("s-1", "s-2", "s\u00e9")), "record": record}
    if src.bool(0.8):
        out["status"] = pick(src, ("active", "inactive"))
    receipts = []
    base = representable_ms(src)
    for n in range(src.int(0, 4)):
        at = min(MAX_MS, base + n * DAY)
        receipt: dict[str, object] = {
            "scheduledAt": format_instant(at),
            "deliveredAt": format_instant(min(MAX_MS, at + src.int(0, 5_000))),
            "messageId": message_id(src, n),
        }
        receipts.append(receipt)
    with_history = src.bool(0.7)
    if receipts and (src.bool(0.8) or not with_history):
        out["lastDelivery"] = dict(receipts[-1])
    if with_history:
        records = [dict(r, prompt=prompt_text(src)) if src.bool() else dict(r) for r in receipts]
        history: dict[str, object] = {"records": records, "earlierRecordsUnavailable": src.bool()}
        if src.bool():
            history["earlierRecordsPruned"] = src.bool()
        out["deliveryHistory"] = history
        if receipts:
            out["lastDelivery"] = dict(receipts[-1])
    return out


def task_value(src: Source) -> tuple[str, object]:
    task = task_json(src)
    record = task["record"]
    assert isinstance(record, dict)
    key = str(record["id"]) if src.bool(0.9) else record_id(src)
    return key, maybe_mutate(src, task, 0.6)


def store_document(src: Source) -> dict[str, object]:
    tasks = {}
    for n in range(src.int(0, 4)):
        task = task_json(src, f"schedule-{n + 1}")
        tasks[f"schedule-{n + 1}"] = task
    return {"unit": {"name": "schedule", "version": 1}, "global": None, "tables": {"tasks": tasks}}


def store_bytes(src: Source) -> bytes:
    doc: object = store_document(src)
    if src.bool(0.5):
        doc = mutate(src, doc, src.int(1, 3))
    data = (
        weighted(
            src,
            (
                4,
                lambda: (json.dumps(doc, indent=2, ensure_ascii=False) + "\n").encode(
                    "utf-8", "surrogatepass"
                ),
            ),
            (2, lambda: safe_serialize(src, doc)),
        )
        if _encodable(doc)
        else b"{}"
    )
    if src.bool(0.3):
        data = mutate_bytes(src, data, src.int(1, 3))
    return data


def _encodable(value: object) -> bool:
    try:
        json.dumps(value)
    except (ValueError, TypeError, RecursionError):
        return False
    return True


# --- tool arguments -------------------------------------------------------------------------------


def selector_value(src: Source, selector: str, *, host: bool, near: int = T0) -> object:
    if selector == "after_seconds":
        return weighted(src, (3, lambda: src.int(1, 10**6)), (1, lambda: nasty_int(src)))
    if selector == "every_seconds":
        lo = 60 if host else 300
        return weighted(src, (3, lambda: src.int(lo, 10**6)), (1, lambda: nasty_int(src)))
    if selector == "at":
        return at_value(src, near)
    if selector == "daily":
        return {"time": time_text(src, normalized=src.bool(0.2)), "time_zone": zone_value(src)}
    if selector == "weekly":
        days: list[object] = [src.int(1, 7) for _ in range(src.int(1, 4))]
        if src.bool(0.2):
            days.append(pick(src, (0, 8, 1.0, 1.5, True, "1", None)))
        return {
            "time": time_text(src, normalized=src.bool(0.2)),
            "time_zone": zone_value(src),
            "weekdays": days,
        }
    expression: object = (
        cron_expression(src, valid=src.bool(0.6)) if src.bool(0.95) else any_value(src)
    )
    return {"expression": expression, "time_zone": zone_value(src)}


SESSION_SELECTORS: Final = ("after_seconds", "at", "every_seconds")
HOST_SELECTORS: Final = ("after_seconds", "at", "every_seconds", "daily", "weekly", "cron")
UPDATE_SELECTORS: Final = ("at", "every_seconds", "daily", "weekly", "cron")


def create_args(src: Source, *, host: bool, near: int = T0) -> object:
    selector = pick(src, HOST_SELECTORS if host else SESSION_SELECTORS)
    args: dict[str, object] = {"prompt": pad(src, prompt_text(src)) if src.bool(0.2) else "p"}
    if host:
        args["title"] = title_text(src)
    args[selector] = selector_value(src, selector, host=host, near=near)
    return maybe_mutate(src, args, 0.4)


def change_value(src: Source, near: int = T0) -> object:
    selector = pick(src, UPDATE_SELECTORS)
    kind = "every" if selector == "every_seconds" else selector
    change = {"kind": kind, selector: selector_value(src, selector, host=True, near=near)}
    return maybe_mutate(src, change, 0.3)


# --- runtime references (resolved against a live environment) -------------------------------------


class Ref(NamedTuple):
    """A placeholder that an environment replaces with live data when the input runs.

    ``what``: ``"id"`` (an existing task or record id), ``"record"`` (its current record JSON,
    mutated ``mutations`` times with a generator seeded by ``seed``), ``"message"`` (a
    ``messageId`` from its history), ``"session"`` (its session id).
    """

    what: str
    index: int
    seed: int = 0
    mutations: int = 0


def ref(src: Source, what: str) -> Ref:
    mutations = src.int(0, 2) if what == "record" and src.bool(0.4) else 0
    return Ref(what, src.int(0, 63), src.int(0, 2**32), mutations)


def task_id_arg(src: Source) -> object:
    return weighted(
        src,
        (6, lambda: ref(src, "id")),
        (1, lambda: pad(src, "schedule-1")),
        (1, lambda: "schedule-missing"),
        (1, lambda: any_value(src)),
    )


def session_arg(src: Source) -> object:
    return weighted(
        src,
        (6, lambda: ref(src, "session")),
        (2, lambda: pick(src, ("s-1", "s-2", "s-3"))),
        (1, lambda: nasty_string(src)),
        (1, lambda: any_value(src)),
    )
