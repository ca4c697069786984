"""docs/protocol.md#batch: request instants are lenient RFC 3339 and carry no range check."""

import pytest

from schedlog.cli.common import InvalidRequest, parse_request_instant
from schedlog.rules.instants import MAX_MS, MIN_MS


@pytest.mark.parametrize(
    ("text", "ms"),
    [
        ("1970-01-01T00:00:00Z", 0),
        ("1970-01-01t00:00:00z", 0),
        ("1970-01-01T00:00:00.123456789Z", 123),
        ("1970-01-01T00:00:00.5Z", 500),
        ("1970-01-01T01:00:00+01:00", 0),
        ("1970-01-01T00:00:00-00:00", 0),
        ("0001-01-01T00:00:00Z", MIN_MS),
        ("9999-12-31T23:59:59.999Z", MAX_MS),
        ("0000-06-01T00:00:00Z", MIN_MS - 214 * 86_400_000),
        ("+012000-01-01T00:00:00Z", 316_516_204_800_000),
        ("-000001-12-31T00:00:00Z", MIN_MS - 367 * 86_400_000),
    ],
    ids=[
        "epoch",
        "lower-case",
        "nine-digit-fraction",
        "one-digit-fraction",
        "offset",
        "minus-zero-offset",
        "min",
        "max",
        "year-0",
        "expanded-year",
        "negative-year",
    ],
)
def test_parse_request_instant(text: str, ms: int) -> None:
    assert parse_request_instant(text) == ms


@pytest.mark.parametrize(
    "value",
    [
        "2026-02-30T00:00:00Z",
        "2026-01-01T24:00:00Z",
        "2026-01-01T23:59:60Z",
        "2026-01-01T00:00:00",
        "2026-01-01 00:00:00Z",
        "2026-01-01T00:00:00.Z",
        "2026-01-01T00:00:00.1234567890Z",
        "2026-01-01T00:00:00+0800",
        "-000000-01-01T00:00:00Z",
        0,
        None,
        ["x"],
    ],
    ids=[
        "no-feb-30",
        "hour-24",
        "leap-second",
        "no-offset",
        "space",
        "empty-fraction",
        "ten-digits",
        "offset-no-colon",
        "minus-zero-year",
        "number",
        "null",
        "array",
    ],
)
def test_parse_request_instant_rejects(value: object) -> None:
    with pytest.raises(InvalidRequest):
        parse_request_instant(value)
