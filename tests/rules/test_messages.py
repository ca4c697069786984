"""The details after the recommended message: the value echoed (bounded, JSON-escaped), the
unknown keys named, the JSON type given, and for zones the nearest names (difflib over the
bundled zone list)."""

from __future__ import annotations

import pytest

from schedlog.errors import ScheduleInputError
from schedlog.rules.records import (
    MSG_CRON_SHAPE,
    MSG_HOST_SELECTOR,
    MSG_SESSION_SELECTOR,
    build_host_record,
    validate_host_create_args,
    validate_session_create_args,
)
from schedlog.rules.text import shown_value
from schedlog.rules.zones import MSG_INVALID, check_time_zone, nearest_zones

NOW = 1_777_615_200_000  # 2026-05-01T06:00:00.000Z


def _message(func: object, *args: object, **kwargs: object) -> tuple[str, str]:
    assert callable(func)
    with pytest.raises(ScheduleInputError) as info:
        func(*args, **kwargs)
    return info.value.code, info.value.message


def test_a_misspelt_zone_is_echoed_with_the_nearest_names() -> None:
    code, message = _message(check_time_zone, "Europe/Berln")
    assert code == "invalid_time_zone"
    assert message.startswith(f'{MSG_INVALID} Got "Europe/Berln"; nearest names: Europe/Berlin')
    assert nearest_zones("asia/shanghia")[0] == "Asia/Shanghai"
    assert nearest_zones("US/Estern")[0] == "America/New_York"  # a link's canonical name


@pytest.mark.parametrize(
    "value",
    ["", " ", "Mars/Olympus_Mons", '<&">/x', "Europe/\ud800", "x" * 10_000, "Europe/Paris\n"],
)
def test_hostile_zone_values_are_echoed_safely(value: str) -> None:
    code, message = _message(check_time_zone, value)
    assert code == "invalid_time_zone" and message.startswith(MSG_INVALID)
    assert shown_value(value) in message
    assert len(message) < 400 and "\n" not in message
    assert all(ch.isprintable() for ch in message)


def test_shown_value_is_bounded_json() -> None:
    assert shown_value('a"b') == '"a\\"b"'
    assert shown_value("y" * 65) == '"' + "y" * 64 + '"\u2026'
    assert shown_value("\ud800") == '"\\ud800"'


def test_unknown_key_is_named_with_where_a_time_zone_goes() -> None:
    args = {"prompt": "p", "title": "t", "cron": "0 9 * * 1-5", "time_zone": "Europe/Berlin"}
    code, message = _message(validate_host_create_args, args)
    assert code == "invalid_selector"
    assert message.startswith(f'{MSG_HOST_SELECTOR} Unknown key: "time_zone". A time_zone goes')
    assert '{"cron": {"expression": "0 9 * * 1-5", "time_zone": "Europe/Berlin"}}' in message


def test_several_unknown_keys_and_hostile_keys() -> None:
    args = {"prompt": "p", '<&">': 1, "\ud800": 2, "k" * 500: 3}
    code, message = _message(validate_session_create_args, args)
    assert code == "invalid_selector" and message.startswith(MSG_SESSION_SELECTOR)
    assert 'Unknown keys: "<&\\">", "\\ud800", "' + "k" * 64 + '"\u2026.' in message


@pytest.mark.parametrize(
    ("args", "detail"),
    [
        ("remind me", "The arguments must be a JSON object, not a string."),
        (None, "The arguments must be a JSON object, not null."),
        ([1], "The arguments must be a JSON object, not an array."),
        ({"prompt": "p", "title": "t"}, "Got none."),
        ({"prompt": "p", "title": "t", "at": None, "cron": None}, "Got at, cron."),
    ],
)
def test_selector_errors_say_what_was_given(args: object, detail: str) -> None:
    assert _message(validate_host_create_args, args) == (
        "invalid_selector",
        f"{MSG_HOST_SELECTOR} {detail}",
    )


@pytest.mark.parametrize(
    ("cron", "detail"),
    [
        ("0 9 * * 1-5", 'Got a string: "0 9 * * 1-5". Example: '),
        (None, "Got null. Example: "),
        ({"expression": "0 9 * * *"}, 'Got keys: "expression".'),
        ({}, "Got keys: none."),
    ],
)
def test_cron_shape_errors_say_what_was_given(cron: object, detail: str) -> None:
    args = {"prompt": "p", "title": "t", "cron": cron}
    code, message = _message(build_host_record, args, id="schedule-1", now=NOW)
    assert code == "invalid_rule" and message.startswith(f"{MSG_CRON_SHAPE} {detail}")
