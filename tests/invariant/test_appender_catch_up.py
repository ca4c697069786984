"""LogAppender.catch_up: appends by another writer are seen by the file's length."""

from __future__ import annotations

from pathlib import Path

import pytest

from schedlog.eventlog import CorruptLogError, encode_line, read_log
from schedlog.eventlog.changes import decode_change
from schedlog.fold import fold
from schedlog.invariant.appender import LogAppender
from tests.eventlog.helpers import change, chatter, create_data, delete_data


def _foreign(path: Path, *values: object, raw: bytes = b"") -> None:
    with path.open("ab") as f:
        f.write(b"".join(encode_line(v) for v in values) + raw)


def test_foreign_appends_are_folded_in(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    with LogAppender.open(path, session_id="s") as log:
        log.append_change(decode_change(create_data("schedule-1")))
        assert log.catch_up() == []
        _foreign(path, chatter("x"), change(create_data("schedule-2")))
        events = log.catch_up()
        assert events is not None and [e.type for e in events] == [
            "message/user",
            "schedule/change",
        ]
        assert [r.id for r in log.state.active] == ["schedule-1", "schedule-2"]
        assert log.event_count == 3
        _foreign(path, raw=b'{"type":"message/us')  # a line still being written
        assert log.catch_up() == []
        _foreign(path, raw=b'er","data":{}}\n')
        assert [e.type for e in log.catch_up() or []] == ["message/user"]
        log.append(change(delete_data("schedule-2")))  # judged against the caught-up state
    contents = read_log(path)
    assert contents.ok and contents.event_count == 5
    assert fold(contents.events) == log.state


def test_a_corrupt_foreign_line_is_located_and_nothing_is_taken(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    with LogAppender.open(path, session_id="s") as log:
        _foreign(path, chatter(), change(delete_data("schedule-9")))
        with pytest.raises(CorruptLogError) as raised:
            log.catch_up()
        assert (raised.value.line, raised.value.rule) == (3, "delete_inactive")
        assert log.event_count == 0
        _foreign(path, raw=b"not json\n")
        with pytest.raises(CorruptLogError):
            log.catch_up()


@pytest.mark.parametrize("how", ["truncate", "replace"])
def test_a_truncated_or_replaced_log_asks_for_a_fresh_open(tmp_path: Path, how: str) -> None:
    path = tmp_path / "s.jsonl"
    with LogAppender.open(path, session_id="s") as log:
        log.append(chatter())
        data = path.read_bytes()
        if how == "truncate":
            with path.open("r+b") as f:
                f.truncate(len(data) - 1)
        else:
            copy = tmp_path / "copy"
            copy.write_bytes(data)
            copy.replace(path)
        assert log.catch_up() is None
