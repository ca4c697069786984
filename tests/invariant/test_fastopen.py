"""The open's fast path (``schedlog.invariant.fastopen``) against the reference: ``read_log`` with
every event kept, then ``validate_log``. Same contents (header, every event's type, data,
``exact`` and raw line, sizes, torn tail) and the same fold, or the same error, on valid,
mutated, reframed and chosen logs."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings

from schedlog.eventlog.errors import CorruptLogError
from schedlog.eventlog.reader import read_log
from schedlog.invariant import fastopen
from schedlog.invariant.logs import validate_log
from tests.invariant.test_fastcheck import CREATE, HEAD, mutated_logs, valid_logs
from tests.invariant.test_fastcheck_lines import BROKEN, reframed_logs


def _reference(path: Path) -> Any:
    contents = read_log(path)
    try:
        return contents, validate_log(contents)
    except CorruptLogError as exc:
        return ("error", exc.rule, exc.message, exc.line)


def _fast(path: Path) -> Any:
    try:
        return fastopen.read_for_open(path)
    except CorruptLogError as exc:
        return ("error", exc.rule, exc.message, exc.line)


def _agree(tmp: Path, data: bytes) -> bool:
    """Whether the fast path took the log; fails when the two differ."""
    path = tmp / "log.jsonl"
    path.write_bytes(data)
    taken = []
    real = fastopen._with_events

    def counted(*args: Any) -> Any:
        result = real(*args)
        taken.append(result is not None)
        return result

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(fastopen, "_with_events", counted)
        got = _fast(path)
    expected = _reference(path)
    assert got == expected
    if type(got) is tuple and type(got[0]) is not str:
        # == takes 1 for 1.0 and True: the decoded values must be the very same ones
        assert [repr(event.data) for event in got[0].events] == [
            repr(event.data) for event in expected[0].events
        ]
    return taken == [True]


SETTINGS = settings(suppress_health_check=[HealthCheck.function_scoped_fixture])


@SETTINGS
@given(valid_logs())
def test_valid_logs_agree(tmp_path: Path, data: bytes) -> None:
    _agree(tmp_path, data)


@SETTINGS
@given(mutated_logs())
def test_mutated_logs_agree(tmp_path: Path, data: bytes) -> None:
    _agree(tmp_path, data)


@SETTINGS
@given(reframed_logs())
def test_reframed_logs_agree(tmp_path: Path, data: bytes) -> None:
    _agree(tmp_path, data)


@pytest.mark.parametrize(
    ("body", "taken"),
    [
        (CREATE + b"\n" + b'{"type":"m","data":{"a":[1,2.5,-0.0,1e2,"<&\\"\\u00e9"]}}\n', True),
        (b'{"type":"m","data":{"k":1,"k":2}}\r\n' + CREATE + b"\n", True),  # last value counts
        (b'{"type":"m","data":123456789012345678901234567890}\n', True),
        (b'{"type": "m", "data": {"x": null}}\n', True),
        # str.splitlines would split at these; the open's split must not
        (b'{"type":"m","data":"\xc2\x85\xe2\x80\xa8\xe2\x80\xa9"}\n' + CREATE + b"\n", True),
        (b'{"type":"m","data":"\\u000b\\u000c\\u001c"}\x0c\x0b \n', False),
        # a number msgspec cannot decode: the event reads its line with json on first use
        (b'{"type":"m","data":1e400}\n', True),
        (b'{"type":"m","data":{"k":-1E+999,"k":[1e-999,"<b>\\u0000</b>"]}}\n', True),
        # a lone surrogate escape, which msgspec refuses even kept raw: the reference reads it
        (b'{"type":"m","data":[-1E+999,"\\ud800\\udfff\\udc00"]}\n', False),
        (b'{"type":"m","data":{"k":"\\ud800","k":"<b>\\u0000</b>"}}\n', False),
        # an envelope of other keys: the reference reads it
        (b'{"type":"m","data":1,"model":"x"}\n', False),
        (b'{"type":"m"}\n', False),
        (CREATE + b"\n" + b'{"type":"m","data":1}\n{"type":"sched', True),  # a torn tail
        *((body, False) for body in BROKEN.values()),
    ],
)
def test_chosen_logs_agree(tmp_path: Path, body: bytes, taken: bool) -> None:
    assert _agree(tmp_path, HEAD + body) == taken


def test_an_appender_opens_by_the_fast_path_with_the_reference_result(tmp_path: Path) -> None:
    from schedlog.invariant.appender import LogAppender

    path = tmp_path / "log.jsonl"
    path.write_bytes(HEAD + CREATE + b"\n" + b'{"type":"m","data":{"t":"<&>"}}\n')
    contents, state = _reference(path)
    with LogAppender.open(path) as log:
        assert log.events_at_open == contents.events and log.state == state


def test_the_open_leaves_event_data_unread_until_used(tmp_path: Path) -> None:
    import msgspec

    from schedlog.eventlog import events as events_module

    path = tmp_path / "log.jsonl"
    chat = b'{"type":"m","data":{"t":"<&>\\u0000","n":[1,2.5]}}\n'
    path.write_bytes(HEAD + chat * 3 + CREATE + b"\n" + chat)
    contents, _ = fastopen.read_for_open(path)
    stored = [events_module._DATA_SLOT.__get__(event) for event in contents.events]
    assert [type(value) is msgspec.Raw for value in stored] == [True] * 5
    assert [bytes(value) for value in stored][:1] == [b'{"t":"<&>\\u0000","n":[1,2.5]}']
    assert contents.events[0].data == {"t": "<&>\x00", "n": [1, 2.5]}
    assert contents.events[0].raw == chat
    assert contents == _reference(path)[0]
