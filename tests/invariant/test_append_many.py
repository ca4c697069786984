"""``LogAppender.append_many``: the same log, byte for byte, and the same state, count and
delivered members as :meth:`LogAppender.append` of each event in order (the readable
reference); a refused event writes none of the others; a failed write leaves none of them;
with a crash point armed the lines are written one by one."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from schedlog import _crashpoints
from schedlog.eventlog import build_followup, read_log
from schedlog.invariant import InvariantError
from schedlog.invariant.appender import LogAppender
from tests.eventlog.helpers import change, chatter, create_data, delete_data, header, log_bytes
from tests.invariant.test_appender import partial_then_full_disk

T = "2026-05-01T09:00:00.000Z"
HOSTILE = st.sampled_from(["<b>x</b>&amp;", "a\u2028b", "lone \ud800 surrogate", "x" * 3000, "ü"])
TEXT = st.one_of(HOSTILE, st.text(min_size=1, max_size=20).filter(lambda s: s.strip() != ""))
FOLLOWUP = st.builds(
    lambda rid, text, created: build_followup("s-1", [(rid, T)], text, created, protocol="host"),
    TEXT,
    TEXT,
    st.integers(0, 2**40),
)
EVENT = st.one_of(FOLLOWUP, st.builds(chatter, TEXT))


def _state(log: LogAppender) -> tuple[Any, ...]:
    return (log.state, log.event_count, dict(log.delivered), log.synced)


@given(st.lists(st.lists(EVENT, max_size=6), max_size=4))
def test_append_many_is_append_of_each(batches: list[list[dict[str, Any]]]) -> None:
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        one, many = Path(tmp, "one.jsonl"), Path(tmp, "many.jsonl")
        with (
            LogAppender.open(one, session_id="s-1") as a,
            LogAppender.open(many, session_id="s-1") as b,
        ):
            for batch in batches:
                read_back = [a.append(event) for event in batch]
                assert b.append_many(batch) == read_back
                assert _state(a) == _state(b)
            a.flush()
            b.flush()
        assert one.read_bytes() == many.read_bytes()


def test_changes_are_judged_in_order(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    with LogAppender.open(path, session_id="s-1") as log:
        log.append_many(
            [change(create_data("a", "every", at=T)), chatter("hi"), change(delete_data("a"))]
        )
        assert log.state.active == () and log.state.seen_ids == ("a",)
        assert log.event_count == 3


def test_a_refused_event_writes_none_of_them(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    with LogAppender.open(path, session_id="s-1") as log:
        before = path.read_bytes()
        with pytest.raises(InvariantError):
            log.append_many([chatter("first"), change(delete_data("never-created"))])
        with pytest.raises(ValueError):
            log.append_many([chatter("first"), {"type": 5, "data": {}}])
        assert path.read_bytes() == before
        assert log.event_count == 0
        log.append_many([chatter("ok")])
        log.flush()
    assert path.read_bytes() == log_bytes(header(), chatter("ok"))


def test_a_failed_write_leaves_none_of_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "s.jsonl"
    with LogAppender.open(path, session_id="s-1") as log:
        monkeypatch.setattr(os, "write", partial_then_full_disk(30))
        with pytest.raises(OSError, match="No space"):
            log.append_many([chatter("a"), chatter("b")])
        monkeypatch.undo()
        assert log.event_count == 0
        assert path.read_bytes() == log_bytes(header())
        log.append_many([chatter("c")])
        log.flush()
    assert [e.data for e in read_log(path).events] == [chatter("c")["data"]]


def test_one_write_unless_a_crash_point_is_armed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    writes: list[bytes] = []
    real_write = os.write

    def counting(fd: int, data: bytes) -> int:
        writes.append(bytes(data))
        return real_write(fd, data)

    with LogAppender.open(tmp_path / "s.jsonl", session_id="s-1") as log:
        monkeypatch.setattr(os, "write", counting)
        log.append_many([chatter("a"), chatter("b"), chatter("c")])
        assert len(writes) == 1
        writes.clear()
        monkeypatch.setattr(_crashpoints, "_armed", {"batch.before_commit": 1})
        log.append_many([chatter("d"), chatter("e")])
        assert len(writes) == 2
