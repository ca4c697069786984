"""The appender: validation on open, torn-tail truncation, invariant-checked appends and the
``fsync`` durability barrier (docs/protocol.md#session-log, docs/protocol.md#torn-tail,
docs/protocol.md#durability, docs/protocol.md#fold)."""

from __future__ import annotations

import os
import stat
from collections.abc import Callable
from pathlib import Path

import pytest
from structlog.testing import capture_logs

from schedlog.eventlog import (
    CorruptLogError,
    DeleteChange,
    Header,
    build_followup,
    read_log,
)
from schedlog.fold import fold
from schedlog.invariant import InvariantError
from schedlog.invariant.appender import LogAppender
from schedlog.rules.instants import parse_canonical_instant
from tests.eventlog.helpers import (
    change,
    chatter,
    create_data,
    delete_data,
    dispatch_data,
    header,
    log_bytes,
)

T = "2026-05-01T09:00:00.000Z"


def test_new_log_gets_a_header_and_owner_only_mode(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    with LogAppender.open(path, session_id="s-1") as log:
        assert log.header == Header(session_id="s-1")
        assert log.flush() is True
    assert path.read_bytes() == log_bytes(header())
    assert stat.S_IMODE(path.stat().st_mode) == 0o600


def test_new_log_needs_a_session_id_and_leaves_nothing_behind(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    with pytest.raises(ValueError, match="session id"):
        LogAppender.open(path)
    assert not path.exists()


def test_existing_header_wins(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    path.write_bytes(log_bytes(header("original")))
    with LogAppender.open(path, session_id="other") as log:
        assert log.header.session_id == "original"


def test_appends_are_compact_lines_and_update_the_state(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    with LogAppender.open(path, session_id="s-1") as log:
        log.append(chatter("hi"))
        log.append(change(create_data("schedule-1", "every", at=T)))
        log.append_change(DeleteChange(id="schedule-1"))
        assert log.event_count == 3
        assert log.state.active == () and log.state.seen_ids == ("schedule-1",)
        log.flush()
    assert path.read_bytes() == log_bytes(
        header(),
        chatter("hi"),
        change(create_data("schedule-1", "every", at=T)),
        change(delete_data("schedule-1")),
    )
    contents = read_log(path)
    assert fold(contents.events) == log.state


def test_refused_change_writes_nothing(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    with LogAppender.open(path, session_id="s-1") as log:
        log.append(change(create_data("a")))
        before = path.read_bytes()
        state = log.state
        with pytest.raises(InvariantError) as info:
            log.append(change(dispatch_data("a", T)))
        assert info.value.rule == "one_shot_accepted_at"
        with pytest.raises(InvariantError) as info:
            log.append(change({"version": 3}))
        assert info.value.rule == "change"
        with pytest.raises(InvariantError) as info:
            log.append({**change(delete_data("a")), "extra": 1})
        assert info.value.rule == "envelope"
        assert path.read_bytes() == before
        assert log.state == state and log.event_count == 1
        log.append(change(dispatch_data("a")))  # the log still works
    assert fold(read_log(path).events).seen_ids == ("a",)


@pytest.mark.parametrize(
    "value",
    [
        {"type": 5, "data": {}},
        {"data": {}},
        {"type": "", "data": {}},
        {"type": "x", 1: "a", "1": "b"},
    ],
    ids=["numeric-type", "no-type", "empty-type", "keys-collide-after-encoding"],
)
def test_values_that_would_not_read_back_are_refused(tmp_path: Path, value: dict) -> None:
    path = tmp_path / "s.jsonl"
    with LogAppender.open(path, session_id="s-1") as log:
        with pytest.raises(ValueError):
            log.append(value)
        assert log.event_count == 0
    assert path.read_bytes() == log_bytes(header())


def test_open_for_append_truncates_a_torn_tail_and_logs_it(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    good = log_bytes(header(), change(create_data("a")))
    path.write_bytes(good + b'{"type":"schedule/chan')
    with capture_logs() as logs, LogAppender.open(path) as log:
        assert path.read_bytes() == good
        log.append(chatter())
    assert logs == [
        {
            "event": "session_log.torn_tail_truncated",
            "log_level": "warning",
            "path": str(path),
            "bytes": 22,
            "message": f"schedule: truncated 22 bytes of torn tail in {path}",
        }
    ]
    assert read_log(path).ok and read_log(path).torn_tail == b""


def test_torn_only_file_is_a_new_log(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    path.write_bytes(b'{"type":"session/hea')
    with capture_logs() as logs, LogAppender.open(path, session_id="s-9") as log:
        assert log.header.session_id == "s-9"
    assert path.read_bytes() == log_bytes(header("s-9"))
    assert [e["bytes"] for e in logs] == [20]


def test_no_warning_without_a_torn_tail(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    path.write_bytes(log_bytes(header()))
    with capture_logs() as logs, LogAppender.open(path):
        pass
    assert logs == []


@pytest.mark.parametrize(
    ("content", "line", "rule"),
    [
        (log_bytes(header(), chatter(), b"{oops}", chatter()) + b"torn", 3, "json"),
        (log_bytes({"type": "x"}), 1, "header"),
        (log_bytes(header(), change(delete_data("ghost"))) + b"torn", 2, "delete_inactive"),
        (log_bytes(header(seed=4), chatter()), 1, "seed_length"),
    ],
    ids=["bad-line", "bad-header", "fold-fails", "seed-length"],
)
def test_corrupt_log_is_refused_and_left_untouched(
    tmp_path: Path, content: bytes, line: int, rule: str
) -> None:
    path = tmp_path / "s.jsonl"
    path.write_bytes(content)
    with pytest.raises(CorruptLogError) as info:
        LogAppender.open(path)
    assert (info.value.line, info.value.rule, info.value.file) == (line, rule, str(path))
    assert path.read_bytes() == content


def test_fold_schedule_false_opens_a_log_whose_owned_changes_do_not_fold(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    content = log_bytes(header(), change(create_data("a")), change(delete_data("ghost")))
    path.write_bytes(content)
    with pytest.raises(CorruptLogError):
        LogAppender.open(path)
    with LogAppender.open(path, fold_schedule=False) as log:
        assert not log.schedule_folded and log.state.active == () and log.event_count == 2
        followup = build_followup("s-1", [("a", T)], "text", 0)
        log.append(chatter())
        log.append(followup)
        assert log.flush() is True
        assert log.delivered == {("a", parse_canonical_instant(T)): followup["data"]["messageId"]}
        # No invariant can be checked without the fold: schedule changes are refused.
        with pytest.raises(ValueError, match="without folding"):
            log.append(change(create_data("b")))
    assert path.read_bytes() == content + log_bytes(chatter(), followup)


@pytest.mark.parametrize(
    ("content", "line", "rule"),
    [
        (log_bytes(header(), chatter()) + b"not json\n", 3, "json"),
        (log_bytes(header(), chatter()) + b"\n", 3, "empty_line"),
        (log_bytes(header(), {"data": 1}), 2, "event"),
        (log_bytes({**header(), "version": 2}), 1, "header"),
    ],
    ids=["bad-json", "empty-line", "no-type", "bad-header"],
)
def test_fold_schedule_false_still_refuses_corrupt_lines(
    tmp_path: Path, content: bytes, line: int, rule: str
) -> None:
    path = tmp_path / "s.jsonl"
    path.write_bytes(content + b"torn")
    with pytest.raises(CorruptLogError) as info:
        LogAppender.open(path, fold_schedule=False)
    assert (info.value.line, info.value.rule) == (line, rule)
    assert path.read_bytes() == content + b"torn"  # untouched, torn tail included


def test_fold_schedule_false_creates_and_truncates_like_a_normal_open(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    with LogAppender.open(path, session_id="s-1", fold_schedule=False) as log:
        assert log.header == Header(session_id="s-1")
    path.write_bytes(path.read_bytes() + b'{"type":"x')
    with capture_logs() as logs, LogAppender.open(path, fold_schedule=False):
        pass
    assert path.read_bytes() == log_bytes(header())
    assert [e["event"] for e in logs] == ["session_log.torn_tail_truncated"]


def test_fork_prefix_is_not_validated(tmp_path: Path) -> None:
    path = tmp_path / "child.jsonl"
    path.write_bytes(log_bytes(header("c", 2, "p"), change("junk"), change(delete_data("x"))))
    with LogAppender.open(path) as log:
        log.append(change(create_data("x")))
        assert [r.id for r in log.state.active] == ["x"]


def test_delivered_members_follow_the_owned_suffix(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    inherited = build_followup("p", [("schedule-1", T)], "text", 0)
    path.write_bytes(log_bytes(header("s-1", 1, "p"), inherited))
    occurrence = parse_canonical_instant(T)
    with LogAppender.open(path) as log:
        assert dict(log.delivered) == {}
        own = build_followup("s-1", [("schedule-1", T)], "text", 0)
        log.append(own)
        assert log.delivered == {("schedule-1", occurrence): own["data"]["messageId"]}
    with LogAppender.open(path) as again:
        assert again.delivered == {("schedule-1", occurrence): own["data"]["messageId"]}


class FsyncCounter:
    def __init__(self) -> None:
        self.calls: list[int] = []
        self.real = os.fsync

    def __call__(self, fd: int) -> None:
        self.calls.append(fd)
        self.real(fd)


def test_flush_fsyncs_the_file_and_once_the_new_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    counter = FsyncCounter()
    monkeypatch.setattr(os, "fsync", counter)
    with LogAppender.open(tmp_path / "s.jsonl", session_id="s-1") as log:
        assert counter.calls == []  # writes are eager; durability is the barrier's job
        log.append(chatter())
        assert log.flush() is True
        assert len(counter.calls) == 2  # the file, then its directory (the file was created)
        log.append(chatter())
        assert log.flush() is True
        assert len(counter.calls) == 3  # the file only
    assert log.flush() is False  # closed: a negative barrier result


def test_a_deferred_directory_fsync_leaves_the_entry_pending_until_synced(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    counter = FsyncCounter()
    monkeypatch.setattr(os, "fsync", counter)
    with LogAppender.open(tmp_path / "s.jsonl", session_id="s-1") as log:
        assert log.directory_pending
        log.append(chatter())
        assert log.flush(directory=False) is True
        assert len(counter.calls) == 1 and log.directory_pending and not log.synced
        assert log.flush() is True  # a plain barrier fsyncs the directory it left
        assert len(counter.calls) == 3 and not log.directory_pending and log.synced
    with LogAppender.open(tmp_path / "t.jsonl", session_id="s-2") as log:
        log.flush(directory=False)
        log.directory_synced()  # the caller fsynced the directory
        assert not log.directory_pending and log.synced
        log.flush()
        assert len(counter.calls) == 5  # two file fsyncs, no directory one
    # An existing log whose entry is not known to be durable is a new one's equal.
    with LogAppender.open(tmp_path / "t.jsonl", entry_durable=False) as log:
        assert log.directory_pending
        log.flush()
        assert len(counter.calls) == 7 and not log.directory_pending


def test_existing_log_does_not_fsync_the_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "s.jsonl"
    path.write_bytes(log_bytes(header()))
    counter = FsyncCounter()
    monkeypatch.setattr(os, "fsync", counter)
    with LogAppender.open(path) as log:
        log.flush()
    assert len(counter.calls) == 1


def test_fsync_failure_is_sticky(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with LogAppender.open(tmp_path / "s.jsonl", session_id="s-1") as log:
        log.flush()

        def failing(fd: int) -> None:
            raise OSError(5, "Input/output error")

        monkeypatch.setattr(os, "fsync", failing)
        with pytest.raises(OSError):
            log.flush()
        monkeypatch.undo()
        with pytest.raises(OSError, match="not durable"):
            log.flush()
        with pytest.raises(OSError, match="refuses appends"):
            log.append(chatter())


def partial_then_full_disk(keep: int) -> Callable[[int, bytes], int]:
    """An ``os.write`` whose first call writes only ``keep`` bytes and whose later calls fail
    as on a full disk (ENOSPC)."""
    real_write = os.write
    calls = {"n": 0}

    def write(fd: int, data: bytes) -> int:
        calls["n"] += 1
        if calls["n"] == 1:
            return real_write(fd, bytes(data)[:keep])
        raise OSError(28, "No space left on device")

    return write


def test_failed_write_is_rolled_back(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "s.jsonl"
    with LogAppender.open(path, session_id="s-1") as log:
        monkeypatch.setattr(os, "write", partial_then_full_disk(7))
        with pytest.raises(OSError, match="No space"):
            log.append(change(create_data("a")))
        monkeypatch.undo()
        assert log.state.seen_ids == () and log.event_count == 0
        assert path.read_bytes() == log_bytes(header())
        log.append(change(create_data("a")))
        log.flush()
    assert fold(read_log(path).events).seen_ids == ("a",)
