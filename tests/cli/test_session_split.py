"""``session batch`` opening a long log with its second half checked by a child process
(``schedlog.cli._session_batch._fork_split``) answers, and leaves the log, as the open in one
process does."""

from __future__ import annotations

import io
import os
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from schedlog.cli import _session_batch, _split
from schedlog.cli.common import run_batch
from schedlog.invariant import fastcheck
from schedlog.rules.text import js_dumps
from schedlog.runtime.batch import BatchSession
from tests.cli.test_split import _write_log

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="no os.fork on this platform")

REQUESTS = [
    '{"op":"schedule_list","now":"2026-05-01T09:00:00Z","args":{}}',
    '{"op":"tick","now":"2026-05-03T09:00:00Z"}',
    '{"op":"schedule_create","now":"2026-05-03T09:00:00Z","args":{"prompt":"p","after_seconds":60}}',
    '{"op":"schedule_list","now":"2026-05-03T09:00:00Z","args":{}}',
]


def _serve(path: Path, split: Any) -> list[str]:
    session = BatchSession(path, split=split)
    out = io.StringIO()
    try:
        run_batch(
            [line + "\n" for line in REQUESTS], _session_batch.session_batch_handlers(session), out
        )
    finally:
        session.close()
    return out.getvalue().split("\n")[:-1]


def _chatty_log(path: Path, rounds: int, *, broken_at: int | None = None) -> None:
    _write_log(path, rounds, broken_at=broken_at)
    lines = path.read_bytes().split(b"\n")
    chat = js_dumps({"type": "user/message", "data": {"text": "<b>hi</b> \u2028"}}).encode()
    path.write_bytes(b"\n".join(line + b"\n" + chat if line else line for line in lines))


@pytest.mark.parametrize("broken_at", [None, 30, 190])
def test_a_split_open_answers_as_one_process(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, broken_at: int | None
) -> None:
    path = tmp_path / "s-1.jsonl"
    _chatty_log(path, 200, broken_at=broken_at)
    copy = tmp_path / "copy" / "s-1.jsonl"
    copy.parent.mkdir()
    shutil.copyfile(path, copy)
    expected = _serve(copy, None)
    forks: list[int] = []
    real = _split.fork_split

    def counted(work: Callable[[], bytes]) -> Callable[[], bytes | None]:
        forks.append(1)
        return real(work)

    monkeypatch.setattr(fastcheck, "_MIN_SPLIT", 0)
    monkeypatch.setattr(_split, "fork_split", counted)
    assert _serve(path, _session_batch._fork_split) == expected
    assert path.read_bytes() == copy.read_bytes()
    # a corrupt log is opened again (and split again) by each request
    assert forks == [1] if broken_at is None else len(forks) >= len(REQUESTS)


def test_one_core_checks_the_whole_log_here(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "s-1.jsonl"
    _chatty_log(path, 50)
    copy = tmp_path / "copy" / "s-1.jsonl"
    copy.parent.mkdir()
    shutil.copyfile(path, copy)
    monkeypatch.setattr(fastcheck, "_MIN_SPLIT", 0)
    monkeypatch.setattr(_split, "split_available", lambda: False)
    monkeypatch.setattr(_split, "fork_split", None)  # no child
    assert _serve(path, _session_batch._fork_split) == _serve(copy, None)
