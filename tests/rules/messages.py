"""How the rules tests compare error messages. A message is the recommended one of
docs/errors.md, alone or followed by what was wrong (the value, the unknown keys, the nearest
zone names); the details have tests of their own (tests/rules/test_messages.py)."""

from __future__ import annotations


def recommended(actual: str, expected: str) -> bool:
    """``actual`` is ``expected``, or ``expected`` followed by a space and detail."""
    return actual == expected or actual.startswith(expected + " ")


def assert_error(info_value: object, code: str, message: str) -> None:
    got_code, got_message = getattr(info_value, "code"), getattr(info_value, "message")  # noqa: B009
    assert got_code == code and recommended(got_message, message), (got_code, got_message)
