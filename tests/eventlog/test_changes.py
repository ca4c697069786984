"""The change decoder (SPEC §10.2) with the legacy record decoder behind it (SPEC §6.3)."""

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
from schedlog.rules.text import is_blank, is_trimmed
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
    with pytest.raises(CorruptLogError) as info:
        decode_change(create_data("a"))
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
