"""``validate``'s report of a small log from its summary (``cli/_logs.py``, ``_validate_one``)
against the report of the whole check: the same JSON text and the same table row, for valid,
broken and hostile logs (markup and lone surrogates in the text, the path and the session id;
torn tails; empty and huge values), and for what is not a small regular file."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from schedlog.cli import _logs
from schedlog.cli._logs import check_session_log, read_summary, validate_report
from schedlog.invariant.small_check import SMALL_LOG
from schedlog.rules.text import js_dumps
from tests.eventlog.helpers import create_data, header
from tests.invariant.test_fastcheck import mutated_logs, valid_logs

NAMES = st.sampled_from(["a.jsonl", "<b>&.jsonl", "会议 📅.jsonl", "x\udcff.jsonl", "'\".jsonl"])


def reference(name: str, as_json: bool) -> tuple[bool, Any]:
    """What ``validate`` showed for ``name`` from the whole check with the summary read."""
    check = check_session_log(name, read_summary, split=False)
    shown = js_dumps(validate_report(check)) if as_json else _logs._human_validate_row(check)
    return check.ok, shown


def shown(name: str, as_json: bool) -> tuple[bool, Any]:
    return _logs._validate_one(name, None, as_json, False)


def same(path: Path, data: bytes) -> None:
    path.write_bytes(data)
    for as_json in (True, False):
        assert shown(str(path), as_json) == reference(str(path), as_json)


@settings(suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.one_of(valid_logs(), mutated_logs()), NAMES)
def test_the_summary_shows_what_the_whole_check_shows(
    tmp_path: Path, data: bytes, name: str
) -> None:
    same(tmp_path / name, data)


HOSTILE = ["", "<script>x</script>", "\ud800", "a\udfffb", "x" * 70_000, "\u2028📅"]


@pytest.mark.parametrize("text", HOSTILE)
@pytest.mark.parametrize("session", ["s", "<i>", "\udc80", "会议" * 50])
def test_hostile_text_shows_the_same(tmp_path: Path, text: str, session: str) -> None:
    head = header()
    head["sessionId"] = session
    create = {"type": "schedule/change", "data": create_data("a", "at", "2026-05-01T09:00:00Z")}
    lines = [head, {"type": "message/user", "data": {"text": text}}, create]
    data = b"".join(js_dumps(v).encode("utf-8", "surrogatepass") + b"\n" for v in lines)
    for torn in (b"", b'{"type":', b"\xff"):
        same(tmp_path / "log.jsonl", data + torn)


def test_what_is_not_a_small_regular_file_shows_the_same(tmp_path: Path) -> None:
    line = js_dumps({"type": "message/user", "data": "x" * 1000}).encode() + b"\n"
    head = js_dumps(header()).encode() + b"\n"
    same(tmp_path / "long.jsonl", head + line * (SMALL_LOG // len(line) + 1))
    (tmp_path / "folder.jsonl").mkdir()
    for as_json in (True, False):
        for name in ("folder.jsonl", "missing.jsonl"):
            path = str(tmp_path / name)
            assert shown(path, as_json) == reference(path, as_json)


def _report(path: str, events: int) -> dict[str, Any]:
    return {
        "path": path,
        "kind": "session-log",
        "ok": True,
        "sessionId": header()["sessionId"],
        "events": events,
        "seedLength": 0,
        "tornTail": False,
        "active": 0,
    }


def test_a_log_that_grows_while_it_is_read_is_checked_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "log.jsonl"
    head = js_dumps(header()).encode() + b"\n"
    path.write_bytes(head)
    real = os.read
    grown = []

    def read(fd: int, size: int) -> bytes:
        if not grown:  # another writer appends a line between the fstat and the read
            grown.append(1)
            with open(path, "ab") as out:
                out.write(b'{"type":"message/user","data":1}\n')
        return real(fd, size)

    monkeypatch.setattr(os, "read", read)
    assert _logs._small_file(str(path)) is None
    monkeypatch.undo()
    assert shown(str(path), True) == (True, js_dumps(_report(str(path), 1)))


def test_validate_of_logs_freezes_the_heap_at_exit_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Without --store (nothing but the logs was opened), once a process.
    import atexit
    import gc

    from tests.cli.test_logs_cmd import run

    registered: list[Any] = []
    monkeypatch.setattr(atexit, "register", registered.append)
    monkeypatch.setattr(_logs, "_FREEZE_REGISTERED", [False])
    (tmp_path / "a.jsonl").write_bytes(js_dumps(header()).encode() + b"\n")
    store = {"path": "s", "kind": "store", "ok": True, "tasks": 0}
    assert run(["validate", "--store", "s", str(tmp_path)], lambda *_: store) == 0
    assert registered == []
    assert run(["validate", str(tmp_path)]) == 0
    assert run(["validate", str(tmp_path)]) == 0
    assert registered == [gc.freeze]


@pytest.mark.parametrize("enabled", [True, False])
def test_validate_leaves_the_collector_as_it_found_it(tmp_path: Path, enabled: bool) -> None:
    # The imports run without it and the checks with the heap frozen; then all is as before.
    import gc

    from tests.cli.test_logs_cmd import run

    (tmp_path / "a.jsonl").write_bytes(js_dumps(header()).encode() + b"\n")
    frozen = gc.get_freeze_count()
    was = gc.isenabled()
    try:
        if not enabled:
            gc.disable()
        assert run(["validate", str(tmp_path)]) == 0
        assert gc.isenabled() is enabled
        assert gc.get_freeze_count() == frozen
    finally:
        if was:
            gc.enable()


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs here")
def test_a_fifo_is_left_to_the_whole_check_without_waiting_for_a_writer(tmp_path: Path) -> None:
    # Opened without waiting, and not read: the whole check opens it as it always did.
    import signal

    fifo = tmp_path / "fifo.jsonl"
    os.mkfifo(fifo)

    def waited(*_: object) -> None:
        raise RuntimeError("the open waited for a writer")

    previous = signal.signal(signal.SIGALRM, waited)
    signal.alarm(5)  # a blocking open would otherwise hang here
    try:
        assert _logs._small_file(str(fifo)) is None
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)
