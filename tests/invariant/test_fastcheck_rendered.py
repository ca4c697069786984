"""The JSON text of the active records the fast path gives (``fast_check(..., rendered=[])``)
for ``replay``, and the records it builds only when asked for (``FoldState.built_later``).

The text must be exactly ``json_bytes([r.to_json() for r in state.active])``, split or not,
wherever the log is split: a record no dispatch moved keeps the target text its log wrote, a
moved one is formatted. Each record's JSON form (``chunk_fold.RecordJson``) is proven equal to
``Record.to_json()`` on hostile text (markup, lone surrogates, huge and one-character values).
And a text the typed path takes for a canonical instant is the one ``format_instant`` gives
back.
"""

from __future__ import annotations

import pickle
from typing import Any

import msgspec
import pytest
from hypothesis import given
from hypothesis import strategies as st

from schedlog.eventlog import wire
from schedlog.fold.state import FoldState
from schedlog.invariant import chunk_fold
from schedlog.invariant.chunk_checks import instants_ms
from schedlog.invariant.fastcheck import fast_check_bytes
from schedlog.rules.instants import MAX_MS, CanonicalInstantParser, format_instant
from schedlog.rules.record import Record
from schedlog.rules.text import MAX_SAFE_INT, json_bytes
from tests.eventlog.helpers import create_data, dispatch_data, header
from tests.invariant.test_fastcheck import CHUNKS, spell, valid_events, valid_logs
from tests.invariant.test_fastcheck_split import SPLITS, garbage, nothing, now, split_check

SHAPED = st.builds(
    "{:04d}-{:02d}-{:02d}T{:02d}:{:02d}:{:02d}.{:03d}Z".format,
    st.integers(0, 9999),
    st.integers(0, 99),
    st.integers(0, 99),
    st.integers(0, 99),
    st.integers(0, 99),
    st.integers(0, 99),
    st.integers(0, 999),
)


@given(st.lists(SHAPED, min_size=1, max_size=8))
def test_a_text_taken_for_an_instant_is_the_one_format_instant_gives(texts: list[str]) -> None:
    for text, ms in zip(texts, instants_ms(texts, CanonicalInstantParser().parse), strict=True):
        if ms is not None:
            assert format_instant(ms) == text


@given(st.integers(0, MAX_MS))
def test_format_instant_of_a_target_is_taken_back(ms: int) -> None:
    assert instants_ms([format_instant(ms)], CanonicalInstantParser().parse) == [ms]


def _checked(result: Any, rendered: list[bytes]) -> None:
    """The kept text is the records' ``to_json()`` encoded; building them keeps the count."""
    if result is None:
        assert rendered == []
        return
    state = result[1]
    count = state.active_count
    assert rendered == [json_bytes([r.to_json() for r in state.active])]
    assert len(state.active) == count


@given(valid_logs(), CHUNKS)
def test_the_kept_text_is_the_records_json(data: bytes, chunk: int) -> None:
    rendered: list[bytes] = []
    result = fast_check_bytes(data, file="f", chunk=chunk, rendered=rendered)
    _checked(result, rendered)
    assert result == fast_check_bytes(data, file="f", chunk=chunk)


@given(
    valid_events(),
    CHUNKS,
    SPLITS,
    st.sampled_from(["compact", "spaced"]),
    st.sampled_from([now, nothing, garbage]),
)
def test_the_kept_text_of_a_split_log(
    events: list[Any], chunk: int, line: int, style: str, split: Any
) -> None:
    data = b"".join(spell(v, style) for v in [header(), *events])
    whole: list[bytes] = []
    expected = fast_check_bytes(data, file="f", chunk=chunk, rendered=whole)
    rendered: list[bytes] = []
    got, _ = split_check(data, chunk, line, split, rendered=rendered)
    assert got == expected
    assert rendered == whole
    _checked(got, rendered)


def test_a_moved_target_is_formatted() -> None:
    at = "2026-05-01T09:00:00.000Z"
    lines = [
        header(),
        {"type": "schedule/change", "data": create_data("e-1", "every", at=at, everySeconds=300)},
        {"type": "schedule/change", "data": create_data("a-1", "at", at=at)},
        {"type": "schedule/change", "data": dispatch_data("e-1", accepted_at=at)},
    ]
    data = b"".join(spell(v, "compact") for v in lines)
    rendered: list[bytes] = []
    result = fast_check_bytes(data, file="f", rendered=rendered)
    assert result is not None
    assert [r.id for r in result[1].active] == ["e-1", "a-1"]
    forms = msgspec.json.decode(rendered[0])
    assert [(f["id"], f["scheduledAt"]) for f in forms] == [
        ("e-1", "2026-05-01T09:05:00.000Z"),
        ("a-1", at),
    ]


# --- each record's JSON form, on hostile text --------------------------------------------------

HOSTILE = st.one_of(
    st.sampled_from(["x", "<b>&amp;</b>", '"quoted"', "back\\slash", "\u2028", "\x00\x1f\x7f"]),
    st.sampled_from(["lone \ud800 surrogate", "\udfff", "会议 📅", "a" * 5000, " padded "]),
    st.text(min_size=1, max_size=40),
)


@st.composite
def records(draw: st.DrawFn) -> Record:
    kind = draw(st.sampled_from(["after", "at", "every", "daily", "weekly", "cron"]))
    fields: dict[str, Any] = {}
    if kind == "daily" or kind == "weekly":
        fields = {"time": "09:30", "time_zone": "Europe/Paris"}
        if kind == "weekly":
            fields["weekdays"] = (1, 3)
    elif kind == "cron":
        fields = {"expression": "*/5 * * * *", "time_zone": "UTC"}
    seconds = st.one_of(st.none(), st.integers(1, MAX_SAFE_INT))
    return Record(
        id=draw(HOSTILE),
        kind=kind,  # type: ignore[arg-type]
        prompt=draw(HOSTILE),
        scheduled_at=draw(st.integers(0, MAX_MS)),
        title=draw(st.one_of(st.none(), HOSTILE)),
        after_seconds=draw(seconds),
        every_seconds=draw(seconds),
        **fields,
    )


@given(st.lists(records(), max_size=4))
def test_the_json_form_of_a_record_is_its_to_json(given_records: list[Record]) -> None:
    forms = [chunk_fold._rendered(r) for r in given_records]
    assert json_bytes(forms) == json_bytes([r.to_json() for r in given_records])


@st.composite
def entries(draw: st.DrawFn) -> tuple[wire.WireRecord, int]:
    ms = draw(st.integers(0, MAX_MS))
    texts = {"id": draw(HOSTILE), "prompt": draw(HOSTILE), "title": draw(st.none() | HOSTILE)}
    kind = draw(st.sampled_from(["after", "at", "every"]))
    if kind == "after":
        record: wire.WireRecord = wire.AfterRecord(
            **texts, scheduledAt=format_instant(ms), afterSeconds=draw(st.integers(1, 10**6))
        )
    elif kind == "every":
        record = wire.EveryRecord(
            **texts, scheduledAt=format_instant(ms), everySeconds=draw(st.integers(300, 10**6))
        )
    else:
        record = wire.AtRecord(**texts, scheduledAt=format_instant(ms))
    return record, ms


@given(st.lists(entries(), max_size=4), st.booleans())
def test_the_json_form_of_an_entry_is_its_records_to_json(given: list[Any], known: bool) -> None:
    fold = chunk_fold.ChunkFold(0)
    forms = [chunk_fold._rendered(record) for record, _ in given]
    built = [wire.record_of(*entry) for entry in given]
    assert list(map(fold._as_record, [record for record, _ in given])) == built
    # an every entry holds its target in epoch ms too (chunk_fold.ChunkFold._entries)
    assert list(map(fold._as_record, given)) == built
    assert list(map(chunk_fold._rendered, given)) == forms
    assert json_bytes(forms) == json_bytes([r.to_json() for r in built])
    # and a tail's form of it builds the same record back (when msgspec can encode it), with
    # its target given or read from its text
    try:
        text = msgspec.json.encode(forms)
    except UnicodeEncodeError:
        return
    back = msgspec.json.decode(text, type=list[chunk_fold.RecordJson])
    targets = [ms if known else None for _, ms in given]
    assert list(map(fold._record_of_json, back, targets)) == built


# --- a state built later ---------------------------------------------------------------------


def test_a_state_built_later_equals_the_state_built_at_once() -> None:
    record = Record(id="a", kind="at", prompt="p", scheduled_at=5)
    built: list[int] = []

    def build() -> tuple[Record, ...]:
        built.append(1)
        return (record,)

    later = FoldState.built_later(1, build, ("a", "b"))
    assert later.active_count == 1 and built == []
    assert later == FoldState((record,), ("a", "b")) and FoldState((record,), ("a", "b")) == later
    assert built == [1] and later.active == (record,) and built == [1]  # built once
    assert hash(later) == hash(FoldState((record,), ("a", "b")))
    assert pickle.loads(pickle.dumps(later)) == later
    assert repr(later) == repr(FoldState((record,), ("a", "b")))
    assert later != FoldState((record,), ("a",)) and later != (record,)
    with pytest.raises(AttributeError):
        later.seen_ids = ()  # type: ignore[misc]
    wrong = FoldState.built_later(2, build, ())
    with pytest.raises(AssertionError):
        _ = wrong.active


def test_a_tail_gives_no_result_for_a_record_it_cannot_give_as_json() -> None:
    # A tail never holds another kind (it never reads line by line), nor a lone surrogate
    # (msgspec never decodes one); if it did, the head would fold the tail itself.
    cron = Record(
        id="c", kind="cron", prompt="p", scheduled_at=0, expression="* * * * *", time_zone="UTC"
    )
    lone = wire.AtRecord(id="a", prompt="lone \ud800", scheduledAt=format_instant(0))
    fine = wire.AtRecord(id="a", prompt="p", scheduledAt=format_instant(0))
    for value, expected in ((cron, False), (lone, False), (fine, True)):
        fold = chunk_fold.ChunkFold(0, tail=True)
        fold.active["a"] = value
        assert bool(fold.tail_result(0, b"")) is expected
