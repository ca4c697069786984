"""``validate``'s summary of a small log (``schedlog.invariant.small_check``) against the
reference.

The reference is the summary read with the reference line decoder alone and
``validate_log``. Whatever :func:`small_summary` returns, the reference finds the log valid
with the same header, event count, torn tail and count of active reminders; where it is
unsure it returns None. The logs are the fast check's: valid ones in every spelling, mutated
ones, broken ones, hostile text (markup, lone surrogates, huge and empty values), with and
without the event types of earlier logs expected.
"""

from __future__ import annotations

import io
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from schedlog.eventlog.errors import CorruptLogError
from schedlog.eventlog.reader import parse_lines
from schedlog.invariant import small_check
from schedlog.invariant.logs import validate_log
from schedlog.invariant.small_check import SMALL_LOG, small_summary
from schedlog.rules.text import js_dumps
from tests.eventlog.helpers import create_data, header
from tests.invariant.test_fastcheck import log_types, mutated_logs, spell, valid_events, valid_logs


def reference(data: bytes) -> Any:
    """The reference's summary of ``data`` (the summary read with the reference line decoder
    alone, then ``validate_log``): (header, events, torn tail, active count), or None when it
    finds the log invalid."""
    contents = parse_lines(io.BytesIO(data), file="f", keep_events=False, fast=False)
    try:
        state = validate_log(contents)
    except CorruptLogError:
        return None
    return contents.header, contents.event_count, contents.torn_tail, len(state.active)


def summary(data: bytes, kinds: frozenset[str] = frozenset()) -> Any:
    """The summary of ``data`` with ``kinds`` expected (as after earlier logs), or None."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(small_check, "_KINDS_SEEN", [kinds])
        return small_summary(data)


def agree(data: bytes) -> bool:
    """Whether the summary took ``data``; fails when it took it and the reference differs."""
    taken = False
    for kinds in (frozenset(), log_types(data)):
        got = summary(data, kinds)
        if got is None:
            continue
        assert (got.header, got.events, got.torn_tail, got.active) == reference(data)
        taken = True
    return taken


@given(valid_logs())
def test_valid_logs_agree(data: bytes) -> None:
    agree(data)


@given(valid_events())
def test_compact_writer_logs_are_taken(events: list[Any]) -> None:
    data = b"".join(spell(v, "compact") for v in [header(), *events])
    assert agree(data)


@given(mutated_logs())
def test_mutated_logs_agree(data: bytes) -> None:
    agree(data)


HEAD = js_dumps(header()).encode() + b"\n"
CREATE = js_dumps(
    {"type": "schedule/change", "data": create_data("a", "at", "2026-05-01T09:00:00.000Z")}
).encode()
HOSTILE_TEXT = st.sampled_from(
    [
        "",
        "<script>alert(1)</script>",
        "\ud800",
        "a\udfffb",
        "x" * 70_000,
        "会议 📅 \u2028",
        '"\\',
        "\x00\x1f",
    ]
)


@given(HOSTILE_TEXT, st.sampled_from(["message/user", "", "<b>", "\ud83d", "会议"]))
def test_hostile_payloads_agree(text: str, kind: str) -> None:
    line = js_dumps({"type": kind, "data": {"text": text}}).encode("utf-8", "surrogatepass")
    for data in (HEAD + line + b"\n", HEAD + CREATE + b"\n" + line + b"\n" + CREATE + b"\n"):
        agree(data)


@pytest.mark.parametrize(
    "data",
    [
        b"",
        b'{"type":"session/head',
        HEAD,
        HEAD + b'{"type":"message/user","data":1}',  # a torn tail only
        HEAD + CREATE + b"\n\xff",
        HEAD + CREATE + b"\n" + CREATE + b"\n",  # an id created twice
        HEAD.replace(b'"seedLength":0', b'"seedLength":5') + CREATE + b"\n",
        HEAD.replace(b"{", b"{ ", 1) + CREATE + b"\n",
        b"[]\n" + CREATE + b"\n",
    ],
)
def test_chosen_logs_agree(data: bytes) -> None:
    agree(data)


def test_a_log_of_a_chunk_or_more_is_left_to_the_whole_check() -> None:
    line = js_dumps({"type": "message/user", "data": "x" * 1000}).encode() + b"\n"
    data = HEAD + line * (SMALL_LOG // len(line) + 1)
    assert len(data) >= SMALL_LOG and small_summary(data) is None
    assert small_summary(data[: SMALL_LOG - 1 - (SMALL_LOG - 1 - len(HEAD)) % len(line)])
