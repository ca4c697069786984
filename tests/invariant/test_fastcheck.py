"""validate/replay's fast path (``schedlog.invariant.fastcheck``) against the reference.

The reference is the summary read with the reference line decoder alone
(``parse_lines(keep_events=False, fast=False)``) and ``validate_log``. Whatever
:func:`fast_check_bytes` returns, the reference returns too (the same header, event count,
torn tail, sizes and fold); where the fast path is unsure it returns None and the reference
gives the verdict. The logs are valid ones (writers' lines, compact or spaced, random chunk
sizes, seedLength, titles, ``:`` and unicode in the text) and the same logs mutated the ways
``tests/eventlog/test_fastline.py`` mutates lines: spacing, key order, escapes, big ints, floats
like ``300.0``, ``null`` members, keys given twice in every position, and broken lines and
folds.
"""

from __future__ import annotations

import io
import json
import re
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from schedlog.eventlog.errors import CorruptLogError
from schedlog.eventlog.reader import parse_lines
from schedlog.invariant import chunk_checks, fastcheck
from schedlog.invariant.chunk_fold import ChunkFold
from schedlog.invariant.fastcheck import fast_check, fast_check_bytes
from schedlog.invariant.logs import validate_log
from schedlog.rules.instants import format_instant, parse_canonical_instant
from schedlog.rules.text import js_dumps
from tests.eventlog.helpers import create_data, delete_data, dispatch_data, header
from tests.eventlog.test_fastline import _objects, dump, json_values, lines, to_tree

START = parse_canonical_instant("2026-05-01T09:00:00.000Z")
assert START is not None
PROMPTS = ["Call home", "a:b", "会议 at 9:30", "📅 review", 'say "hi"', "back\\slash", "é\u2028x"]
IDS = ["schedule-{n}", "s:{n}", "ü-{n}", "id {n}"]


def outcome(contents: Any, state: Any) -> Any:
    """What a check's result is compared by: header, counts, sizes, torn tail and state."""
    return (
        contents.header,
        contents.event_count,
        contents.complete_size,
        contents.header_size,
        contents.torn_tail,
        state,
    )


def reference(data: bytes) -> Any:
    """The reference's result: (header, counts, sizes, torn tail, state) or the error."""
    contents = parse_lines(io.BytesIO(data), file="f", keep_events=False, fast=False)
    try:
        state = validate_log(contents)
    except CorruptLogError as exc:
        return ("error", exc.rule, exc.message, exc.path, exc.line, exc.offset)
    return outcome(contents, state)


_TYPE_TEXT = re.compile(rb'"type"\s*:\s*"([^"\\]*)"')


def log_types(data: bytes) -> frozenset[str]:
    """The ``type`` texts written plainly in ``data`` (and one more), as a process that checked
    logs like it before would expect them (``fastcheck._KINDS_SEEN``)."""
    found = {t.decode("utf-8", "replace") for t in _TYPE_TEXT.findall(data)}
    return frozenset(found - {"", "session/header"} | {"message/user"})


def fast(
    data: bytes, chunk: int, kinds: frozenset[str] = frozenset(), *, whole: bool = True
) -> Any:
    """The fast path's result, its first chunk tried in one pass with ``kinds`` expected (none:
    the first chunk in two passes); each chunk first in one call unless ``whole`` is false."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(fastcheck, "_KINDS_SEEN", [kinds])
        result = fast_check_bytes(data, file="f", chunk=chunk, whole=whole)
    if result is None:
        return None
    contents, state = result
    assert contents.corruption is None and contents.file == "f" and not contents.events_kept
    return outcome(contents, state)


def agree(data: bytes, chunk: int) -> bool:
    """Whether the fast path took ``data``; fails when it took it differently, or took it
    differently with the event types of earlier logs expected, or without the one call."""
    got = fast(data, chunk)
    guessed = fast(data, chunk, log_types(data), whole=False)
    if guessed is not None:
        assert guessed == reference(data)
    apart = fast(data, chunk, whole=False)  # the line-apart ways alone, never in one call
    if apart is not None:
        assert apart == reference(data)
    if got is None:
        return False
    assert got == reference(data)
    return True


# --- valid logs, as writers write them ---------------------------------------------------------


@st.composite
def valid_events(draw: st.DrawFn) -> list[Any]:
    """The events of a valid log: creates, deletes, one-shot and every dispatches (acceptedAt
    an hour apart, never before a target), follow-ups and chatter."""
    events: list[Any] = []
    active: dict[str, str] = {}  # id -> kind
    created = 0
    clock = START + 1500 * 86_400_000  # after every target
    for _ in range(draw(st.integers(0, 40))):
        op = draw(st.sampled_from(["create", "create", "delete", "dispatch", "followup", "chat"]))
        if op == "create" or (not active and op in ("delete", "dispatch")):
            created += 1
            rid = draw(st.sampled_from(IDS)).format(n=created)
            kind = draw(st.sampled_from(["after", "at", "every"]))
            extra: dict[str, Any] = {"prompt": draw(st.sampled_from(PROMPTS))}
            if draw(st.booleans()):
                extra["title"] = draw(st.sampled_from(["Title", "t:1", "📅" * 60, "ü"]))
            if kind == "after":
                extra["afterSeconds"] = draw(st.sampled_from([1, 60, 2**53 - 1]))
            if kind == "every":
                extra["everySeconds"] = draw(st.sampled_from([300, 600, 3600]))
            day = draw(st.sampled_from([0, 1, 59, 1400]))  # 1400 days on: a February 29
            at = format_instant(START + day * 86_400_000 + draw(st.integers(0, 86_399_999)))
            events.append({"type": "schedule/change", "data": create_data(rid, kind, at, **extra)})
            active[rid] = kind
        elif op == "delete":
            rid = draw(st.sampled_from(sorted(active)))
            events.append({"type": "schedule/change", "data": delete_data(rid)})
            del active[rid]
        elif op == "dispatch":
            rid = draw(st.sampled_from(sorted(active)))
            if active[rid] == "every":
                clock += 3_600_000
                data = dispatch_data(rid, format_instant(clock))
            else:
                data = dispatch_data(rid)
                del active[rid]
            events.append({"type": "schedule/change", "data": data})
        elif op == "followup":
            events.append(
                {
                    "type": "message/followup",
                    "data": {
                        "messageId": "schedule-message-1",
                        "role": "user",
                        "source": draw(
                            st.sampled_from(
                                [{"kind": "plugin", "plugin": "schedule"}, {"kind": "schedule"}]
                            )
                        ),
                        "text": "[SCHEDULE REMINDER]\n" + draw(st.sampled_from(PROMPTS)),
                        "reminders": [
                            {"id": "schedule-1", "occurrenceAt": format_instant(clock)}
                            for _ in range(draw(st.integers(0, 2)))
                        ],
                        "createdAt": format_instant(clock),
                    },
                }
            )
        else:
            kind = draw(st.sampled_from(["message/user", "tool/result", "会议/x"]))
            events.append({"type": kind, "data": draw(json_values)})
    return events


def spell(value: Any, style: str) -> bytes:
    if style == "compact":
        return js_dumps(value).encode("utf-8", "surrogatepass") + b"\n"
    if style == "spaced":
        return json.dumps(value).encode() + b"\n"
    return json.dumps(value, ensure_ascii=False).encode("utf-8", "surrogatepass") + b"\r\n"


@st.composite
def valid_logs(draw: st.DrawFn) -> bytes:
    events = draw(valid_events())
    styles = st.sampled_from(["compact", "spaced", "crlf"])
    style = draw(styles)
    mixed = draw(st.booleans())
    seed = draw(st.integers(0, len(events))) if draw(st.booleans()) else 0
    out = [spell(header(seed=seed), style)]
    out += [spell(e, draw(styles) if mixed else style) for e in events]
    torn = draw(st.sampled_from([b"", b"", b'{"type":"sched', b"\xff"]))
    return b"".join(out) + torn


CHUNKS = st.sampled_from([16, 100, 700, 4096, 1 << 18])


@given(valid_logs(), CHUNKS)
def test_valid_logs_agree(data: bytes, chunk: int) -> None:
    # A valid log all in the spellings writers use is taken (all of it, by construction).
    assert agree(data, chunk) or reference(data)[0] == "error"


@given(valid_events(), CHUNKS, st.sampled_from(["compact", "spaced"]))
def test_writer_logs_are_taken_a_chunk_at_a_time(events: list[Any], chunk: int, style: str) -> None:
    data = b"".join(spell(v, style) for v in [header(), *events])
    taken = []
    real = ChunkFold._fast

    def counted(self: Any, body: bytes, rows: list[bytes]) -> int:
        taken.append(body)
        return real(self, body, rows)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(ChunkFold, "_fast", counted)
        lines_read = []
        slow = ChunkFold._lines
        patch.setattr(
            ChunkFold, "_lines", lambda self, body: (lines_read.append(1), slow(self, body))
        )
        assert agree(data, chunk)
    # Lines of other events are all JSON the fast path can read whole, but a payload may hold
    # a ":" escaped or a nesting it counts; the changes and follow-ups writers emit never do.
    if all(e["type"] in ("schedule/change", "message/followup") for e in events):
        assert not lines_read


# --- the same logs, mutated ----------------------------------------------------------------


@st.composite
def mutated_logs(draw: st.DrawFn) -> bytes:
    """A valid log with a few lines replaced: respelled with a mutation, or a random line."""
    data = draw(valid_logs())
    parts = data.split(b"\n")
    body, torn = parts[:-1], parts[-1]
    for _ in range(draw(st.integers(1, 3))):
        i = draw(st.integers(0, len(body) - 1))
        choice = draw(st.sampled_from(["mutate", "random", "blank", "swap"]))
        if choice == "random":
            body[i] = draw(lines())[:-1]
            continue
        if choice == "blank":
            body[i] = draw(st.sampled_from([b"", b" ", b"\r", b"[]", b"{}", b"1 2"]))
            continue
        if choice == "swap" and len(body) > 2:
            j = draw(st.integers(1, len(body) - 1))
            body[i], body[j] = body[j], body[i]
            continue
        try:
            tree = to_tree(json.loads(body[i].decode("utf-8", "surrogatepass")))
        except ValueError:
            continue
        objects = _objects(tree, [])
        if objects:
            obj = draw(st.sampled_from(objects))
            if obj:
                k = draw(st.integers(0, len(obj) - 1))
                op = draw(st.sampled_from(["duplicate", "shuffle", "null", "drop", "float"]))
                if op == "duplicate":
                    key, value = obj[k]
                    obj.insert(draw(st.integers(0, len(obj))), (key, value))
                elif op == "shuffle":
                    obj[:] = draw(st.permutations(list(obj)))
                elif op == "null":
                    obj[k] = (obj[k][0], None)
                elif op == "drop":
                    del obj[k]
                elif isinstance(obj[k][1], int) and not isinstance(obj[k][1], bool):
                    obj[k] = (obj[k][0], float(obj[k][1]))
        item = draw(st.sampled_from([",", ", ", " ,"]))
        key = draw(st.sampled_from([":", ": "]))
        style = draw(st.sampled_from(["compact", "ascii", "colon-escaped", "upper-escapes"]))
        body[i] = dump(tree, item, key, style).encode("utf-8", "surrogatepass")
    return b"\n".join(body) + b"\n" + torn


@given(mutated_logs(), CHUNKS)
def test_mutated_logs_agree(data: bytes, chunk: int) -> None:
    agree(data, chunk)


# --- chosen cases --------------------------------------------------------------------------

HEAD = js_dumps(header()).encode() + b"\n"
CREATE = js_dumps(
    {"type": "schedule/change", "data": create_data("a", "at", "2026-05-01T09:00:00.000Z")}
).encode()

DELETE = js_dumps({"type": "schedule/change", "data": delete_data("a")}).encode()


@pytest.mark.parametrize(
    "body",
    [
        # keys twice where the count of ':' could be evened out by another line of the chunk
        CREATE + b"\n" + b'{"type":"message/user","data":{},"data":{"x":1}}\n',
        CREATE + b"\n" + b'{"type":"message/user","type":"x","data":1}\n',
        b'{"type":"message/user","data":"a\\u003ab"}\n'
        + CREATE.replace(b'"kind":"at"', b'"kind":"at","kind":"at"')
        + b"\n",
        CREATE.replace(b'"prompt"', b'"title":null,"prompt"') + b"\n",
        CREATE.replace(b'"id":"a"', b'"id":"a","id":"a"') + b'\n{"type":"x:y","data":1}\n',
        # an integral float, a big int, a February 29 of a leap year and of another year
        CREATE.replace(b'"version":1', b'"version":1.0') + b"\n",
        CREATE.replace(b"2026-05-01", b"2028-02-29") + b"\n",
        CREATE.replace(b"2026-05-01", b"2027-02-29") + b"\n",
        CREATE.replace(b"2026-05-01", b"0000-05-01") + b"\n",
        CREATE.replace(b"09:00:00.000Z", b"24:00:00.000Z") + b"\n",
        # empty, blank or untrimmed text (kept active, or deleted again)
        *(
            CREATE.replace(old, new) + b"\n" + tail
            for old, new in (
                (b'"id":"a"', b'"id":""'),
                (b'"prompt":"Prompt of a"', b'"prompt":""'),
                (b'"prompt":"Prompt of a"', b'"prompt":" "'),
                (b'"prompt":"Prompt of a"', b'"prompt":"Prompt\\u3000"'),
                (b'"prompt"', b'"title":"","prompt"'),
                (b'"prompt"', b'"title":" t","prompt"'),
                (b'"prompt"', b'"title":"' + "📅".encode() * 61 + b'","prompt"'),
            )
            for tail in (b"", DELETE.replace(b'"id":"a"', b'"id":""') + b"\n", DELETE + b"\n")
        ),
        # the same, deleted again in the chunk (never built into a record)
        *(
            CREATE.replace(b"2026-05-01T09:00:00.000Z", bad) + b"\n" + DELETE + b"\n"
            for bad in (
                b"2028-02-29T09:00:00.000Z",
                b"2027-02-29T09:00:00.000Z",
                b"2026-04-31T09:00:00.000Z",
                b"0000-05-01T09:00:00.000Z",
                b"2026-05-01T24:00:00.000Z",
                b"2026-05-01T09:60:00.000Z",
                b"2026-05-01T09:00:00.000z",
                b"2026-05-01T09:00:00Z",
                b"2026-05-01 09:00:00.000Z",
                b"\\u0032026-05-01T09:00:00.000Z",
            )
        ),
        # lines: blank, two values, deep nesting, a long integer, invalid UTF-8, a BOM
        CREATE + b"\n\n",
        CREATE + b"\n \n",
        CREATE + b" " + CREATE + b"\n",
        b'{"type":"a","data":' + b"[" * 300 + b"]" * 300 + b"}\n",
        # nesting the reference refuses (docs/protocol.md#limits), in '[' or '{' alone or both,
        # after a payload with ':' (the openers are counted with the ':' in one pass)
        b'{"type":"a","data":{"k:":1}}\n{"type":"a","data":' + b"[" * 1000 + b"]" * 1000 + b"}\n",
        b'{"type":"a","data":{"k:":1}}\n{"type":"a","data":'
        + b'{"a":' * 1000
        + b"1"
        + b"}" * 1000
        + b"}\n",
        b'{"type":"a","data":' + b'[{"a":' * 500 + b"1" + b"}]" * 500 + b"}\n",
        b'{"type":"a","data":[' + b"1" * 4400 + b"]}\n",
        b'{"type":"a","data":"\xff"}\n',
        b'\xef\xbb\xbf{"type":"a","data":1}\n',
        b'{"type":"","data":1}\n',
        # folds that fail: a reused id, an inactive target, acceptedAt on a one-shot
        CREATE + b"\n" + CREATE + b"\n",
        js_dumps({"type": "schedule/change", "data": delete_data("a")}).encode() + b"\n",
        CREATE
        + b"\n"
        + js_dumps(
            {"type": "schedule/change", "data": dispatch_data("a", "2026-05-02T09:00:00.000Z")}
        ).encode()
        + b"\n",
    ],
)
@pytest.mark.parametrize("chunk", [8, 1 << 18])
def test_chosen_logs_agree(body: bytes, chunk: int) -> None:
    agree(HEAD + body, chunk)


@pytest.mark.parametrize(
    "data",
    [
        b"",
        b'{"type":"session/header"',
        HEAD,
        js_dumps(header(seed=3)).encode() + b"\n" + CREATE + b"\n",  # seedLength beyond the log
        b"x" * 100 + b"\n" + CREATE + b"\n",
    ],
)
def test_logs_without_a_valid_start_are_left_to_the_reference(data: bytes) -> None:
    assert not agree(data, 16) or data == HEAD


def test_a_valid_log_from_a_file(tmp_path: Any) -> None:
    path = tmp_path / "log.jsonl"
    path.write_bytes(HEAD + CREATE + b"\n")
    result = fast_check(path)
    assert result is not None
    assert [r.id for r in result[1].active] == ["a"]


# --- the chunk-wide instants and creates ---------------------------------------------------

_MIN_MS = parse_canonical_instant("0001-01-01T00:00:00.000Z")
_MAX_MS = parse_canonical_instant("9999-12-31T23:59:59.999Z")
assert _MIN_MS is not None and _MAX_MS is not None
_canonical = st.integers(_MIN_MS, _MAX_MS).map(format_instant)
_instant_like = st.one_of(
    _canonical,
    _canonical.map(lambda t: t.replace("-02-28", "-02-29")),
    _canonical.map(lambda t: t[:-1] + "z"),
    _canonical.map(lambda t: t.replace("T", " ")),
    _canonical.map(lambda t: t[:-5] + "Z"),
    _canonical.map(lambda t: t[:-1] + "+00:00"),
    st.sampled_from(
        [
            "0000-01-01T00:00:00.000Z",
            "2026-04-31T09:00:00.000Z",
            "2026-05-01T24:00:00.000Z",
            "2026-05-01T09:60:00.000Z",
            "2026-05-01T09:00:60.000Z",
            "2028-02-29T09:00:00.000Z",
            "2000-02-29T09:00:00.000Z",
            "2100-02-29T09:00:00.000Z",
            "1900-02-29T09:00:00.000Z",
            "2026-05-01T09:00:00.000Z\n2026-05-01T09:00:00.000Z",
            '2026-05-01T09:00:00.000Z","2026-05-01T09:00:00.000Z',
            "",
        ]
    ),
    st.text(max_size=30),
    # the shape of a canonical instant with any digits in place
    st.lists(st.sampled_from("0123456789"), min_size=17, max_size=17).map(
        lambda d: "{}{}{}{}-{}{}-{}{}T{}{}:{}{}:{}{}.{}{}{}Z".format(*d)
    ),
)


@given(st.lists(_instant_like, max_size=12))
def test_instants_of_a_chunk_are_parsed_as_one_by_one(texts: list[str]) -> None:
    parse = parse_canonical_instant
    assert chunk_checks.instants_ms(texts, parse) == [parse(t) for t in texts]


@given(st.lists(_canonical, min_size=1, max_size=12))
def test_canonical_instants_of_a_chunk_take_the_one_decode(texts: list[str]) -> None:
    texts = [t for t in texts if "-02-29" not in t] or ["2026-05-01T09:00:00.000Z"]
    called = []
    real = chunk_checks._decode_datetimes

    def counted(data: bytes) -> Any:
        called.append(1)
        return real(data)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(chunk_checks, "_decode_datetimes", counted)
        assert chunk_checks.instants_ms(texts, parse_canonical_instant) == [
            parse_canonical_instant(t) for t in texts
        ]
    assert called == [1]


def _every(rid: str, at: str, seconds: int = 300) -> bytes:
    data = create_data(rid, "every", at, everySeconds=seconds)
    return js_dumps({"type": "schedule/change", "data": data}).encode() + b"\n"


def _dispatch(rid: str, at: str | None = None) -> bytes:
    return js_dumps({"type": "schedule/change", "data": dispatch_data(rid, at)}).encode() + b"\n"


def _create(rid: str, kind: str = "at", at: str = "2026-05-01T09:00:00.000Z", **kw: Any) -> bytes:
    return js_dumps({"type": "schedule/change", "data": create_data(rid, kind, at, **kw)}).encode()


@pytest.mark.parametrize(
    ("body", "taken"),
    [
        # the first and last instants, an every record whose next target is past the last
        (_create("a", at="0001-01-01T00:00:00.000Z") + b"\n", True),
        (_create("a", at="9999-12-31T23:59:59.999Z") + b"\n", True),
        (
            _every("e", "9999-12-31T23:50:00.000Z") + _dispatch("e", "9999-12-31T23:58:00.000Z"),
            True,
        ),
        (
            _every("e", "9999-12-31T23:50:00.000Z") + _dispatch("e", "9999-12-31T23:52:00.000Z"),
            True,
        ),
        (
            _every("e", "2026-05-01T09:00:00.000Z") + _dispatch("e", "2026-05-01T09:00:00.000Z"),
            True,
        ),
        (
            _every("e", "2026-05-01T09:00:00.000Z") + _dispatch("e", "2026-05-03T10:07:00.001Z"),
            True,
        ),
        # an acceptedAt before the target, not canonical, on February 29, or missing
        (
            _every("e", "2026-05-01T09:00:00.000Z") + _dispatch("e", "2026-05-01T08:59:59.999Z"),
            False,
        ),
        (_every("e", "2026-05-01T09:00:00.000Z") + _dispatch("e", "2026-05-01T10:00:00Z"), False),
        (
            _every("e", "2026-05-01T09:00:00.000Z") + _dispatch("e", "2027-02-29T10:00:00.000Z"),
            False,
        ),
        (
            _every("e", "2026-05-01T09:00:00.000Z") + _dispatch("e", "2028-02-29T10:00:00.000Z"),
            True,
        ),
        (_every("e", "2026-05-01T09:00:00.000Z") + _dispatch("e"), False),
        # an id created twice in one chunk, ids, prompts and titles with whitespace at an end
        (_create("a") + b"\n" + _create("b") + b"\n" + _create("a") + b"\n", False),
        (_create("\u00a0a") + b"\n", False),
        (_create("a\u2029") + b"\n", False),
        (_create("a", prompt="p\t") + b"\n", False),
        (_create("a", prompt="\ufeffp") + b"\n", False),
        (_create("a", title="t ") + b"\n", False),
        (_create("a b", prompt="p q", title="t u") + b"\n", True),
        (_create("a", title="📅" * 60) + b"\n" + _create("b", title="t") + b"\n", True),
        (_create("a", title="t") + b"\n" + _create("b", title="📅" * 61) + b"\n", False),
    ],
)
@pytest.mark.parametrize("chunk", [8, 1 << 18])
def test_chunk_wide_checks_agree(body: bytes, taken: bool, chunk: int) -> None:
    # Taken or not as the reference finds the log valid or not; equal whenever taken.
    data = HEAD + body
    assert agree(data, chunk) == taken
    assert (reference(data)[0] != "error") == taken


@pytest.mark.parametrize(
    ("payload", "deep"),
    [
        (b"[" * 150 + b"]" * 150, False),
        (b"[" * 199 + b"]" * 199, True),
        (b'{"a":' * 199 + b"1" + b"}" * 199, True),
        (b'[{"a":' * 100 + b"1" + b"}]" * 100, True),
        (b"[" * 100 + b'"' + b"[" * 300 + b'"' + b"]" * 100, False),  # a '[' in a string counts too
    ],
)
def test_a_deep_untyped_payload_sends_its_chunk_line_by_line(payload: bytes, deep: bool) -> None:
    # The fast path refuses nesting past 199 levels in a chunk (chunk_checks.check_untyped),
    # beside payloads holding ':' and over 380 bytes; the reference then reads it.
    body = b'{"type":"a","data":{"k:":"' + b"x" * 400 + b'"}}\n'
    body += b'{"type":"a","data":' + payload + b"}\n" + CREATE + b"\n"
    lines_read: list[int] = []
    slow = ChunkFold._lines
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(
            ChunkFold, "_lines", lambda self, body: (lines_read.append(1), slow(self, body))
        )
        assert agree(HEAD + body, 1 << 18)
    assert bool(lines_read) == (deep or b'"' in payload)
