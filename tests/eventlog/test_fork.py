"""Forks (docs/protocol.md#events): a byte-for-byte prefix under a new header; the child folds only
its own."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from schedlog.eventlog import CorruptLogError, Header, fork_log, read_log
from schedlog.invariant import validate_log
from schedlog.invariant.appender import LogAppender
from tests.eventlog.helpers import change, chatter, create_data, delete_data, header, log_bytes

# Unusual but valid spellings, which a re-encoding copy would change.
PARENT_EVENTS = [
    b'{ "type" : "message/user" , "data" : {"text":"caf\\u00e9 \xe2\x98\x95"} }',
    b'{"type":"schedule/change","data":{"version":1.0,"operation":"create","schedule":'
    b'{"id":"schedule-1","kind":"after","prompt":"P","afterSeconds":6e2,'
    b'"scheduledAt":"2026-05-01T09:00:00.000Z"}}}\r',
    b'{"type":"schedule/change","data":"corrupt but inherited"}',
    log_bytes(chatter("after the fork point"))[:-1],
]


@pytest.fixture
def parent(tmp_path: Path) -> Path:
    path = tmp_path / "parent.jsonl"
    path.write_bytes(log_bytes(header("s-parent"), *PARENT_EVENTS) + b'{"torn')
    return path


@pytest.mark.parametrize("point", [0, 1, 2, 3, 4])
def test_fork_copies_the_prefix_byte_for_byte(parent: Path, tmp_path: Path, point: int) -> None:
    child = tmp_path / "child.jsonl"
    got = fork_log(parent, point, "s-child", child)
    assert got == Header(session_id="s-child", seed_length=point, parent_session_id="s-parent")
    expected = log_bytes(got.to_json(), *PARENT_EVENTS[:point])
    assert child.read_bytes() == expected
    assert stat.S_IMODE(child.stat().st_mode) == 0o600
    assert sorted(os.listdir(tmp_path)) == ["child.jsonl", "parent.jsonl"]  # no temp file left


def test_child_inherits_neither_reminders_nor_ids(parent: Path, tmp_path: Path) -> None:
    child = tmp_path / "child.jsonl"
    fork_log(parent, 4, "s-child", child)
    state = validate_log(read_log(child))  # the corrupt inherited event is not folded
    assert state.active == () and state.seen_ids == ()
    with LogAppender.open(child) as log:
        log.append(change(create_data("schedule-1", "at")))
        log.append(change(delete_data("schedule-1")))
        assert log.state.seen_ids == ("schedule-1",)


def test_fork_of_a_fork_names_its_direct_parent(parent: Path, tmp_path: Path) -> None:
    child, grandchild = tmp_path / "c.jsonl", tmp_path / "g.jsonl"
    fork_log(parent, 2, "s-child", child)
    got = fork_log(child, 2, "s-grandchild", grandchild)
    assert got.parent_session_id == "s-child" and got.seed_length == 2
    assert read_log(grandchild).events == read_log(child).events


def test_fork_point_bounds(parent: Path, tmp_path: Path) -> None:
    for bad in (-1, 5, 1.5, "2", None):
        with pytest.raises(ValueError, match="fork point"):
            fork_log(parent, bad, "s-child", tmp_path / "c.jsonl")  # type: ignore[arg-type]
    assert not (tmp_path / "c.jsonl").exists()
    assert fork_log(parent, 2.0, "s-child", tmp_path / "c.jsonl").seed_length == 2  # type: ignore[arg-type]


def test_destination_must_not_exist(parent: Path, tmp_path: Path) -> None:
    dest = tmp_path / "c.jsonl"
    dest.write_bytes(b"keep me")
    with pytest.raises(FileExistsError):
        fork_log(parent, 1, "s-child", dest)
    assert dest.read_bytes() == b"keep me"
    assert sorted(os.listdir(tmp_path)) == ["c.jsonl", "parent.jsonl"]  # no temp file left


def test_corruption_inside_the_copied_part_refuses(tmp_path: Path) -> None:
    parent = tmp_path / "p.jsonl"
    parent.write_bytes(log_bytes(header("p"), chatter(), b"not json", chatter()))
    assert fork_log(parent, 1, "c", tmp_path / "ok.jsonl").seed_length == 1
    with pytest.raises(CorruptLogError) as info:
        fork_log(parent, 2, "c", tmp_path / "bad.jsonl")
    assert info.value.line == 3
    assert not (tmp_path / "bad.jsonl").exists()


def test_parent_without_header_cannot_be_forked(tmp_path: Path) -> None:
    parent = tmp_path / "p.jsonl"
    parent.write_bytes(b"")
    with pytest.raises(ValueError, match="no header"):
        fork_log(parent, 0, "c", tmp_path / "c.jsonl")


def test_new_session_id_must_be_non_empty(parent: Path, tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="session id"):
        fork_log(parent, 0, "", tmp_path / "c.jsonl")
