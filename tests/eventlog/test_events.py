"""``LogEvent`` data decoded on first use: an event built with ``data=msgspec.Raw(text)`` is
indistinguishable from one built with the decoded value (equality, hashing, ``repr``, encoding),
decodes once, and reads with ``json`` what ``msgspec`` refuses."""

from __future__ import annotations

import json
import math
from typing import Any

import msgspec
from hypothesis import given
from hypothesis import strategies as st

from schedlog.eventlog import events as events_module
from schedlog.eventlog.events import LogEvent

HOSTILE = st.sampled_from(["", "<b>&amp;</b>", "\ud800", "\x00\r\n", "é" * 3, "x" * 5000])
SCALARS = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | HOSTILE
)
VALUES = st.recursive(
    SCALARS | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=20,
)


def _lazy(value: Any, kind: str = "m") -> tuple[LogEvent, LogEvent]:
    """The same event built lazily (from its line's ``data`` text) and decoded."""
    text = json.dumps(value)  # escapes lone surrogates, which msgspec then refuses: json reads
    line = f'{{"type":{json.dumps(kind)},"data":{text}}}\n'.encode()
    lazy = LogEvent(type=kind, data=msgspec.Raw(text.encode()), raw=line)
    return lazy, LogEvent(type=kind, data=json.loads(text), raw=line)


def _stored(event: LogEvent) -> Any:
    return events_module._DATA_SLOT.__get__(event)


@given(VALUES)
def test_a_lazy_event_is_the_decoded_event(value: Any) -> None:
    lazy, eager = _lazy(value)
    assert type(_stored(lazy)) is msgspec.Raw  # nothing decoded yet
    # msgspec encodes the text itself, before any decode: the same JSON value
    try:
        expected = msgspec.json.encode(eager)
    except UnicodeEncodeError:  # a lone surrogate: only the text can be encoded
        expected = msgspec.json.encode(lazy)
    assert json.loads(msgspec.json.encode(lazy)) == json.loads(expected)
    assert type(_stored(lazy)) is msgspec.Raw
    assert lazy == eager
    assert not lazy != eager  # noqa: SIM202
    assert repr(lazy) == repr(eager) and repr(lazy.data) == repr(eager.data)
    assert type(_stored(lazy)) is not msgspec.Raw  # decoded once, kept
    assert lazy.data is lazy.data


def test_hash_and_inequality_see_the_decoded_value() -> None:
    lazy, eager = _lazy("<script>\u2028</script>")
    assert hash(lazy) == hash(eager)
    assert lazy != LogEvent(type="m", data="other", raw=lazy.raw)
    assert lazy != LogEvent(type="n", data=lazy.data, raw=lazy.raw)
    assert LogEvent(type="m", data=msgspec.Raw(b"1")) == LogEvent(type="m", data=1)
    assert LogEvent(type="m", data=msgspec.Raw(b"1")) != LogEvent(type="m", data=1, exact=False)
    assert (LogEvent(type="m") == "m") is False


def test_what_msgspec_refuses_is_read_with_json() -> None:
    line = b'{"type":"m","data":[1e400,-1E+999,"\\ud800"]}\n'
    event = LogEvent(type="m", data=msgspec.Raw(line[19:-2]), raw=line)
    assert event.data[0] == math.inf and event.data[1] == -math.inf
    assert event.data[2] == "\ud800"


def test_an_event_built_decoded_stays_as_built() -> None:
    value: dict[str, Any] = {"a": [1, 2.5]}
    event = LogEvent(type="m", data=value)
    assert event.data is value and _stored(event) is value
