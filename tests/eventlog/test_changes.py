"""The change decoder (docs/protocol.md#changes) with the legacy record decoder behind it
(docs/protocol.md#record-decoders)."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from schedlog.errors import CorruptScheduleError
from schedlog.eventlog import (
    CorruptLogError,
    CreateChange,
    DeleteChange,
    DispatchChange,
    change_to_json,
    decode_change,
)
from schedlog.eventlog import changes as changes_module
from schedlog.rules.instants import MAX_MS, MIN_MS, parse_canonical_instant
from schedlog.rules.record import Record
from schedlog.rules.text import is_blank, is_trimmed, js_dumps
from schedlog.strictjson import JSONSyntaxError, loads_strict
from tests.eventlog.helpers import create_data, delete_data, dispatch_data, record

T = "2026-05-01T09:00:00.000Z"
T_MS = parse_canonical_instant(T)


def test_create_decodes_to_a_record() -> None:
    change = decode_change(create_data("schedule-1", "every", everySeconds=300.0))
    assert change == CreateChange(
        schedule=Record(
            id="schedule-1",
            kind="every",
            prompt="Prompt of schedule-1",
            scheduled_at=T_MS,
            every_seconds=300,
        )
    )


ACCEPTED: list[tuple[str, Any, Any]] = [
    ("version-float", {**delete_data("a"), "version": 1.0}, DeleteChange(id="a")),
    ("version-exponent", {**delete_data("a"), "version": 1e0}, DeleteChange(id="a")),
    ("dispatch-one-shot", dispatch_data("a"), DispatchChange(id="a")),
    ("dispatch-every", dispatch_data("a", T), DispatchChange(id="a", accepted_at=T_MS)),
    ("key-order-free", {"id": "a", "operation": "delete", "version": 1}, DeleteChange(id="a")),
    ("id-unicode", delete_data("schedule-é"), DeleteChange(id="schedule-é")),
]


@pytest.mark.parametrize(
    ("value", "expected"), [c[1:] for c in ACCEPTED], ids=[c[0] for c in ACCEPTED]
)
def test_accepted_changes(value: Any, expected: Any) -> None:
    assert decode_change(value) == expected


def test_create_with_optional_title_and_integral_floats() -> None:
    change = decode_change(create_data("s", "after", title="Stand", afterSeconds=6e2))
    assert isinstance(change, CreateChange)
    assert change.schedule.title == "Stand" and change.schedule.after_seconds == 600
    assert change_to_json(change)["schedule"]["afterSeconds"] == 600


REJECTED: list[tuple[str, Any, str]] = [
    ("null", None, "$"),
    ("array", [], "$"),
    ("string", "create", "$"),
    ("version-missing", {"operation": "delete", "id": "a"}, "$.version"),
    ("version-2", {**delete_data("a"), "version": 2}, "$.version"),
    ("version-1.5", {**delete_data("a"), "version": 1.5}, "$.version"),
    ("version-string", {**delete_data("a"), "version": "1"}, "$.version"),
    ("version-true", {**delete_data("a"), "version": True}, "$.version"),
    ("operation-missing", {"version": 1, "id": "a"}, "$.operation"),
    ("operation-unknown", {"version": 1, "operation": "update", "id": "a"}, "$.operation"),
    ("operation-case", {"version": 1, "operation": "Delete", "id": "a"}, "$.operation"),
    ("create-extra-key", {**create_data("a"), "why": 1}, "$.why"),
    ("create-missing-schedule", {"version": 1, "operation": "create"}, "$"),
    ("create-with-id", {**create_data("a"), "id": "a"}, "$.id"),
    ("delete-missing-id", {"version": 1, "operation": "delete"}, "$"),
    ("delete-accepted-at", {**delete_data("a"), "acceptedAt": T}, "$.acceptedAt"),
    ("dispatch-extra-key", {**dispatch_data("a", T), "x": 1}, "$.x"),
    ("id-empty", delete_data(""), "$.id"),
    ("id-padded", delete_data(" a"), "$.id"),
    ("id-nbsp", delete_data("a\u00a0"), "$.id"),
    ("id-number", {**delete_data("a"), "id": 1}, "$.id"),
    ("accepted-at-offset", dispatch_data("a", "2026-05-01T09:00:00.000+00:00"), "$.acceptedAt"),
    ("accepted-at-no-millis", dispatch_data("a", "2026-05-01T09:00:00Z"), "$.acceptedAt"),
    ("accepted-at-not-a-date", dispatch_data("a", "2026-02-29T09:00:00.000Z"), "$.acceptedAt"),
    ("accepted-at-number", dispatch_data("a", T_MS), "$.acceptedAt"),  # type: ignore[arg-type]
    ("record-not-object", {**create_data("a"), "schedule": []}, "$.schedule"),
    ("record-kind-daily", create_data("a", "daily"), "$.schedule.kind"),
    ("record-kind-cron", create_data("a", "cron"), "$.schedule.kind"),
    ("record-extra-key", create_data("a", note=1), "$.schedule"),
    ("record-id-padded", create_data(" a"), "$.schedule.id"),
    ("record-prompt-blank", create_data("a", prompt="\u2028"), "$.schedule.prompt"),
    ("record-prompt-padded", create_data("a", prompt=" x"), "$.schedule.prompt"),
    ("record-after-zero", create_data("a", afterSeconds=0), "$.schedule.afterSeconds"),
    ("record-after-bool", create_data("a", afterSeconds=True), "$.schedule.afterSeconds"),
    ("record-after-unsafe", create_data("a", afterSeconds=2**53), "$.schedule.afterSeconds"),
    ("record-every-299", create_data("a", "every", everySeconds=299), "$.schedule.everySeconds"),
    (
        "record-every-too-large",
        create_data("a", "every", everySeconds=9_007_199_254_741),
        "$.schedule.everySeconds",
    ),
    ("record-title-blank", create_data("a", title=" "), "$.schedule.title"),
    ("record-title-long", create_data("a", title="x" * 121), "$.schedule.title"),
    ("record-title-padded", create_data("a", title="x "), "$.schedule.title"),
    (
        "record-scheduled-year-0",
        create_data("a", at="0000-01-01T00:00:00.000Z"),
        "$.schedule.scheduledAt",
    ),
    (
        "record-scheduled-offset",
        create_data("a", at="2026-05-01T09:00:00.000+01:00"),
        "$.schedule.scheduledAt",
    ),
]


@pytest.mark.parametrize(("value", "path"), [c[1:] for c in REJECTED], ids=[c[0] for c in REJECTED])
def test_rejected_changes(value: Any, path: str) -> None:
    with pytest.raises(CorruptLogError) as info:
        decode_change(value)
    assert info.value.code == "corrupt_schedule_log"
    assert info.value.rule == "change"
    assert info.value.path == path
    assert info.value.message


def test_record_key_set_error_is_reported_for_the_record() -> None:
    value = {**create_data("a"), "schedule": record("a", "at", afterSeconds=5)}
    with pytest.raises(CorruptLogError) as info:
        decode_change(value)
    assert info.value.path == "$.schedule"


@pytest.mark.parametrize(
    ("field", "path"),
    [("prompt", "$.schedule.prompt"), ("odd key", '$.schedule["odd key"]'), (None, "$.schedule")],
)
def test_record_path_comes_from_the_error_field_not_its_message(
    monkeypatch: pytest.MonkeyPatch, field: str | None, path: str
) -> None:
    def failing(value: object) -> Record:
        raise CorruptScheduleError("schedule record scheduledAt is wrong", field=field)

    monkeypatch.setattr(changes_module, "decode_legacy_record", failing)
    # 600.0 takes the exact path (docs/protocol.md#json-numbers)
    with pytest.raises(CorruptLogError) as info:
        decode_change(create_data("a", afterSeconds=600.0))
    assert info.value.path == path
    assert info.value.message == "schedule record scheduledAt is wrong"  # passed on unchanged


instants = st.integers(min_value=MIN_MS, max_value=MAX_MS)
ids = st.text(min_size=1, max_size=12).filter(lambda s: is_trimmed(s) and not is_blank(s))


def _records() -> st.SearchStrategy[Record]:
    prompt = st.text(min_size=1, max_size=20).filter(lambda s: is_trimmed(s) and not is_blank(s))
    return st.one_of(
        st.builds(
            Record,
            id=ids,
            kind=st.just("after"),
            prompt=prompt,
            scheduled_at=instants,
            after_seconds=st.integers(1, 2**53 - 1),
        ),
        st.builds(Record, id=ids, kind=st.just("at"), prompt=prompt, scheduled_at=instants),
        st.builds(
            Record,
            id=ids,
            kind=st.just("every"),
            prompt=prompt,
            scheduled_at=instants,
            every_seconds=st.integers(300, 9_007_199_254_740),
        ),
    )


changes = st.one_of(
    st.builds(CreateChange, schedule=_records()),
    st.builds(DeleteChange, id=ids),
    st.builds(DispatchChange, id=ids, accepted_at=st.none() | instants),
)


@given(changes)
def test_decode_of_encode_is_identity(change: Any) -> None:
    assert decode_change(change_to_json(change)) == change


# --- the plain fast path agrees with the exact decoder -------------------------------------------

_titles = st.none() | st.sampled_from(["T", " T", "T\u3000", "", "\u2028", "x" * 120, "x" * 121])
_odd_values = st.sampled_from(
    [None, True, False, 0, 1, 1.0, -1, 299, 300, 300.0, 2**53, "1", "", " a", "a", [], {}]
)


@st.composite
def _near_changes(draw: st.DrawFn) -> Any:
    """Valid change objects, some mutated: a key dropped, added or given an odd value."""
    value = change_to_json(draw(changes))
    title = draw(_titles)
    if title is not None and "schedule" in value:
        value["schedule"] = {"title": title, **value["schedule"]}
    for _ in range(draw(st.integers(0, 2))):
        target = value
        if isinstance(value.get("schedule"), dict) and draw(st.booleans()):
            target = value["schedule"]
        op = draw(st.sampled_from(["drop", "add", "set"]))
        keys = sorted(target)
        if op == "drop" and keys:
            del target[draw(st.sampled_from(keys))]
        elif op == "add":
            extra = ["version", "id", "acceptedAt", "schedule", "title", "afterSeconds"]
            target[draw(st.sampled_from(extra))] = draw(_odd_values)
        elif keys:
            target[draw(st.sampled_from(keys))] = draw(_odd_values)
    return value


def _exact(value: Any) -> Any:
    try:
        return changes_module._decode_exact(value)
    except CorruptLogError as exc:
        return exc


@given(_near_changes())
def test_plain_fast_path_accepts_only_what_the_exact_decoder_accepts(value: Any) -> None:
    plain = changes_module._decode_plain(value)
    exact = _exact(value)
    if plain is not None:
        assert plain == exact
    result = _exact(value) if plain is None else plain
    if isinstance(exact, CorruptLogError):
        with pytest.raises(CorruptLogError) as info:
            decode_change(value)
        assert (info.value.message, info.value.path) == (exact.message, exact.path)
    else:
        assert decode_change(value) == exact == result


@given(changes, _titles.filter(lambda t: t in (None, "T", "x" * 120)))
def test_plain_fast_path_takes_every_change_a_writer_emits(change: Any, title: Any) -> None:
    value = change_to_json(change)
    if title is not None and "schedule" in value:
        value["schedule"] = {"title": title, **value["schedule"]}
    plain = changes_module._decode_plain(value)
    assert plain is not None and plain == changes_module._decode_exact(value)


def _with(value: dict[str, Any], path: tuple[str, ...], new: Any) -> dict[str, Any]:
    out = {**value}
    if len(path) == 1:
        out[path[0]] = new
    else:
        out[path[0]] = _with(out[path[0]], path[1:], new)
    return out


_AFTER = create_data("a")
_EVERY = create_data("a", "every")
_AT = create_data("a", "at")
TRICKY = [
    {**_AFTER, "id": "a"},
    {**_AFTER, "acceptedAt": T},
    {**_AFTER, "version": True},
    {**_AFTER, "version": 1.0},
    {**delete_data("a"), "version": True},
    _with(_AT, ("schedule", "afterSeconds"), 5),
    _with(_AT, ("schedule", "everySeconds"), 300),
    _with(_AFTER, ("schedule", "everySeconds"), 300),
    _with(_AFTER, ("schedule", "afterSeconds"), True),
    _with(_AFTER, ("schedule", "afterSeconds"), 600.0),
    _with(_AFTER, ("schedule", "afterSeconds"), 0),
    _with(_AFTER, ("schedule", "afterSeconds"), 2**53),
    _with(_EVERY, ("schedule", "everySeconds"), 299),
    _with(_EVERY, ("schedule", "everySeconds"), 9_007_199_254_741),
    _with(_EVERY, ("schedule", "everySeconds"), 300.0),
    _with(_AT, ("schedule", "title"), "x" * 121),
    _with(_AT, ("schedule", "title"), None),
    _with(_AT, ("schedule", "note"), 1),
    _with(_AT, ("schedule", "kind"), "daily"),
    _with(_AT, ("schedule", "prompt"), "\u3000"),
    _with(_AT, ("schedule", "id"), ""),
    {**delete_data("a"), "acceptedAt": T},
    {**delete_data("a"), "schedule": {}},
    {**dispatch_data("a"), "schedule": {}},
    {**dispatch_data("a"), "extra": T},
    dispatch_data("a", "2026-05-01T09:00:00Z"),
    dispatch_data(" a", T),
    {"version": 1, "operation": "dispatch", "acceptedAt": T, "x": "a"},
]


@pytest.mark.parametrize("value", TRICKY)
def test_plain_fast_path_on_tricky_values(value: dict[str, Any]) -> None:
    plain = changes_module._decode_plain(value)
    exact = _exact(value)
    assert plain is None or plain == exact
    if value.get("version") == 1.0 and type(value.get("version")) is float:
        assert plain is None and not isinstance(exact, CorruptLogError)  # exact path accepts


# --- whole lines decoded straight into the change (the summary read's fast path) ----------------


def _ordinary(body: bytes) -> Any:
    """What the ordinary path makes of a line: strict JSON, exact envelope, decode_change."""
    try:
        value = loads_strict(body)
    except JSONSyntaxError:
        return "json"
    if type(value) is not dict or value.keys() != {"type", "data"}:
        return "envelope"
    if value["type"] != "schedule/change":
        return "other type"
    return _exact(value["data"])


_CHANGE_ORDER = ("version", "operation", "schedule", "id", "acceptedAt")


def _canonical_order(value: Any) -> Any:
    """The members in the order writers use (unknown ones last), records included."""
    if type(value) is not dict:
        return value
    out = {k: value[k] for k in _CHANGE_ORDER if k in value}
    if type(out.get("schedule")) is dict:
        record = out["schedule"]
        out["schedule"] = {k: record[k] for k in _RECORD_ORDER if k in record}
        out["schedule"].update({k: v for k, v in record.items() if k not in _RECORD_ORDER})
    out.update({k: v for k, v in value.items() if k not in _CHANGE_ORDER})
    return out


def _lines(value: Any) -> list[bytes]:
    body = js_dumps({"type": "schedule/change", "data": value}).encode("utf-8", "surrogatepass")
    ordered = {"type": "schedule/change", "data": _canonical_order(value)}
    return [
        body,
        js_dumps(ordered).encode("utf-8", "surrogatepass"),
        js_dumps({**ordered, "type": "schedule/changes"}).encode("utf-8", "surrogatepass"),
        body.replace(b'"data":', b'"data" :', 1),
        body[:-1] + b',"data":{}}',
        js_dumps({"data": value, "type": "schedule/change"}).encode("utf-8", "surrogatepass"),
        js_dumps({"type": "schedule/change", "data": value, "x": 1}).encode(),
    ]


@given(_near_changes())
def test_change_line_fast_path_agrees_with_the_ordinary_path(value: Any) -> None:
    for body in _lines(value):
        fast = changes_module.decode_change_line(body)
        if fast is not None:
            assert fast == _ordinary(body)


@pytest.mark.parametrize("value", TRICKY)
def test_change_line_fast_path_on_tricky_values(value: dict[str, Any]) -> None:
    for body in _lines(value):
        fast = changes_module.decode_change_line(body)
        assert fast is None or fast == _ordinary(body)


@given(changes, _titles.filter(lambda t: t in (None, "T", "x" * 120)))
def test_change_line_fast_path_takes_every_line_a_writer_emits(change: Any, title: Any) -> None:
    value = change_to_json(change)
    if title is not None and "schedule" in value:
        value["schedule"] = {**value["schedule"], "title": title}
        value["schedule"] = {
            k: value["schedule"][k] for k in _RECORD_ORDER if k in value["schedule"]
        }
    body = js_dumps({"type": "schedule/change", "data": value}).encode("utf-8", "surrogatepass")
    assert changes_module.decode_change_line(body) == _ordinary(body)


_RECORD_ORDER = ("id", "kind", "title", "prompt", "afterSeconds", "everySeconds", "scheduledAt")
