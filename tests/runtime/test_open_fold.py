"""The fold a session log's open made starts the engine's fold cursors
(``FileSession.resume_fold``, ``FoldCursor.resume``): the first fold after the open folds only
what came after it, and every fold still equals ``fold`` of the events."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from schedlog.fold import fold
from schedlog.fold.incremental import FoldCursor
from schedlog.runtime.session_file import FileSession
from schedlog.runtime.tools import read_state

HEAD = {
    "type": "session/header",
    "version": 1,
    "sessionId": "s-1",
    "seedLength": 0,
    "parentSessionId": None,
}


def _create(number: int, prompt: str = "<b>p</b> \u00e9 \ud83d\ude00") -> dict[str, object]:
    schedule = {
        "id": f"schedule-{number}",
        "kind": "at",
        "prompt": prompt,
        "scheduledAt": "2026-05-01T09:00:00.000Z",
    }
    return {
        "type": "schedule/change",
        "data": {"version": 1, "operation": "create", "schedule": schedule},
    }


def _write(path: Path, *events: dict[str, object]) -> None:
    with path.open("a", encoding="utf-8") as out:
        for event in events:
            out.write(json.dumps(event, separators=(",", ":")) + "\n")


def _log(tmp_path: Path) -> Path:
    path = tmp_path / "log.jsonl"
    _write(path, HEAD, _create(1), {"type": "m", "data": {"x": "<&>\u0000"}}, _create(2))
    return path


def test_the_first_fold_after_the_open_is_the_open_fold(tmp_path: Path) -> None:
    session = FileSession(_log(tmp_path))
    cursor = FoldCursor()
    state = read_state(session, cursor)
    assert state is session._log.state  # type: ignore[union-attr]  # not folded again
    assert state == fold(session.events(), seed_length=0)
    assert [r.id for r in state.active] == ["schedule-1", "schedule-2"]
    session.close()


def test_appends_after_the_open_are_folded_on_top(tmp_path: Path) -> None:
    path = _log(tmp_path)
    session = FileSession(path)
    session.open()
    session.append(_create(3, prompt="x" * 4000))
    _write(path, _create(4), {"type": "m", "data": ""})  # another writer
    state = read_state(session, FoldCursor())
    events = session.events()
    assert len(events) == 6
    assert state == fold(events, seed_length=0)
    assert [r.id for r in state.active][-2:] == ["schedule-3", "schedule-4"]
    session.close()


def test_a_replaced_log_is_folded_from_its_own_open(tmp_path: Path) -> None:
    path = _log(tmp_path)
    session = FileSession(path)
    cursor = FoldCursor()
    read_state(session, cursor)
    path.unlink()
    _write(path, HEAD, _create(9))
    state = read_state(session, FoldCursor())
    assert [r.id for r in state.active] == ["schedule-9"]
    assert state == fold(session.events(), seed_length=0)
    session.close()


def test_resume_refuses_a_count_beyond_the_events() -> None:
    with pytest.raises(ValueError):
        FoldCursor().resume([], 1, seed_length=0, state=fold([], seed_length=0))
