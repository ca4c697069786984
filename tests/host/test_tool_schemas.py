"""The host tool schemas (docs/protocol.md#host-tools): a well-formed JSON Schema document,
descriptions that say what the model must know, and types that accept every value HostTools actually
returns."""

from __future__ import annotations

import argparse
import asyncio
import json
import re
from typing import Any

import jsonschema
import msgspec
import pytest

from schedlog.cli.session_cmd import register_tools
from schedlog.errors import ScheduleInputError
from schedlog.host.service import HostService
from schedlog.host.tool_schemas import (
    RESULT_TYPES,
    TOOLS,
    ResumeEnded,
    tool_schemas,
    tool_schemas_markdown,
)
from schedlog.host.tools import PAUSE_TOOL_NAMES, TOOL_NAMES, HostTools, pause_tool_id
from schedlog.runtime.clock import VirtualClock
from tests.host.helpers import MemorySessions
from tests.host.test_service import args, run

#: keywords that say which JSON type(s) a schema admits, directly or through alternatives
TYPING_KEYWORDS = ("type", "enum", "const", "$ref", "oneOf", "anyOf")


def refs(value: Any) -> list[str]:
    if isinstance(value, dict):
        own = [value["$ref"]] if isinstance(value.get("$ref"), str) else []
        return own + [r for v in value.values() for r in refs(v)]
    if isinstance(value, list):
        return [r for v in value for r in refs(v)]
    return []


def check_typed(schema: Any, where: str) -> None:
    """Every schema that describes a value names its type, or offers alternatives that do.

    ``oneOf``/``anyOf``/``not`` next to ``type`` are constraints on that same value (such as
    "exactly one selector"), not alternatives, so their members are not value schemas."""
    assert isinstance(schema, dict), where
    assert any(k in schema for k in TYPING_KEYWORDS), where
    if "type" not in schema:
        for keyword in ("oneOf", "anyOf"):
            for i, member in enumerate(schema.get(keyword, ())):
                check_typed(member, f"{where}/{keyword}/{i}")
    for name, prop in schema.get("properties", {}).items():
        check_typed(prop, f"{where}/properties/{name}")
    if "items" in schema:
        check_typed(schema["items"], f"{where}/items")


def test_catalog_is_well_formed_json_schema() -> None:
    value = tool_schemas()
    assert json.loads(json.dumps(value)) == value
    assert value["protocol"] == "host"
    assert value["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    # the published catalog holds every tool the host dispatches, pause and resume included
    assert [t["name"] for t in value["tools"]] == list(TOOL_NAMES) == list(TOOLS)
    assert set(PAUSE_TOOL_NAMES) <= set(TOOL_NAMES)
    for ref in refs(value):
        assert ref.startswith("#/$defs/") and ref.removeprefix("#/$defs/") in value["$defs"]
    for name, schema in value["$defs"].items():
        check_typed(schema, f"$defs/{name}")
    for tool in value["tools"]:
        assert refs(tool["parameters"]) == [], "parameters must be self-contained"
        assert tool["parameters"]["type"] == "object"
        check_typed(tool["parameters"], f"{tool['name']}/parameters")
        check_typed(tool["result"], f"{tool['name']}/result")
    create, _, _, update, pause, resume = (t["parameters"] for t in value["tools"])
    for by_id in (pause, resume):
        assert by_id["required"] == ["id"] and by_id["additionalProperties"] is False
        assert list(by_id["properties"]) == ["id"]
    assert create["additionalProperties"] is False and create["required"] == ["prompt", "title"]
    assert [s["required"] for s in create["oneOf"]] == [
        ["after_seconds"],
        ["at"],
        ["every_seconds"],
        ["daily"],
        ["weekly"],
        ["cron"],
    ]
    assert "after_seconds" not in update["properties"] and update["required"] == ["id"]
    assert create["properties"]["every_seconds"]["minimum"] == 60


def test_catalog_passes_the_2020_12_metaschema() -> None:
    value = tool_schemas()
    jsonschema.Draft202012Validator.check_schema(value)
    for tool in value["tools"]:
        jsonschema.Draft202012Validator.check_schema(tool["parameters"])
        jsonschema.Draft202012Validator.check_schema({**tool["result"], "$defs": value["$defs"]})


def test_descriptions_say_what_section_11_10_asks() -> None:
    """The SHOULD of docs/protocol.md#host-tools's last paragraph, phrase by phrase."""
    text = {name: description for name, (description, _) in TOOLS.items()}
    for name, description in text.items():
        assert "this session" in description or "current session" in description, name
    create = text["schedule_create"]
    for phrase in (
        "exactly one timing parameter",
        "after_seconds",
        "at (",
        "every_seconds (a fixed interval of at least 60 seconds)",
        "daily",
        "weekly",
        "cron",
        "explicit IANA time zone",
        "does not exist in the zone (a DST gap) is skipped",
        "fires once, at the earlier instant",
        "delivers only the latest missed one",
        "Delivery can repeat after a crash",
    ):
        assert phrase in create, phrase
    delete = text["schedule_delete"]
    assert "active or has ended" in delete and "already queued is not retracted" in delete
    update = text["schedule_update"]
    for phrase in (
        "the id stays the same",
        "a new title, a new prompt, and/or at most one timing parameter",
        "omitted fields are kept",
        "every_seconds is re-anchored at the time of the save",
        "relative delay (after_seconds) cannot be edited",
    ):
        assert phrase in update, phrase


def test_markdown_has_one_section_per_tool_with_json_blocks() -> None:
    text = tool_schemas_markdown()
    assert text.startswith("# schedlog host tools\n")
    for name in TOOL_NAMES:
        assert f"\n## {name}\n" in text
    blocks = re.findall(r"```json\n(.*?)\n```", text, flags=re.S)
    assert len(blocks) == 2 * len(TOOL_NAMES) + 1
    assert json.loads(blocks[-1]) == tool_schemas()["$defs"]


@pytest.mark.parametrize("fmt", ["json", "markdown"])
def test_cli_prints_the_host_catalog(fmt: str, capsys: pytest.CaptureFixture[str]) -> None:
    parser = argparse.ArgumentParser()
    register_tools(parser.add_subparsers())
    parsed = parser.parse_args(["tools", "catalog", "--protocol", "host", "--format", fmt])
    assert parsed.func(parsed) == 0
    out = capsys.readouterr().out
    if fmt == "json":
        assert json.loads(out) == tool_schemas()
    else:
        assert out == tool_schemas_markdown()


def test_cli_rejects_an_unknown_protocol(capsys: pytest.CaptureFixture[str]) -> None:
    parser = argparse.ArgumentParser()
    register_tools(parser.add_subparsers())
    with pytest.raises(SystemExit):
        parser.parse_args(["tools", "catalog", "--protocol", "remote"])
    assert "session-local" in capsys.readouterr().err


# --- drift: every value the real tools return conforms ---------------------------------------

Call = tuple[str, dict[str, Any], Any]  # (tool, arguments, returned value)

DAILY = {"time": "09:30:00", "time_zone": "Europe/Berlin"}
WEEKLY = {"time": "08:00:00.5", "time_zone": "US/Eastern", "weekdays": [5, 1, 3]}
CRON = {"expression": "0 9 * * 1,2,3,4,5", "time_zone": "US/Eastern"}
LOCAL_AT = {"date": "2026-05-02", "time": "09:00:00", "time_zone": "Asia/Tokyo"}


async def scenario(svc: HostService, clock: VirtualClock, _: MemorySessions) -> list[Call]:
    tools = HostTools(svc)
    calls: list[Call] = []

    async def call(name: str, arguments: dict[str, Any], session: str = "s-1") -> Any:
        value = await tools.call(name, session, arguments)
        calls.append((name, arguments, value))
        return value

    ids = {}
    for kind, selector in (
        ("after", {"after_seconds": 600}),
        ("at", {"at": "2026-05-01T10:00:00+02:00"}),
        ("local", {"at": LOCAL_AT}),
        ("every", {"every_seconds": 60}),
        ("daily", {"daily": DAILY}),
        ("weekly", {"weekly": WEEKLY}),
        ("cron", {"cron": CRON}),
    ):
        ids[kind] = (await call("schedule_create", args(kind, **selector)))["id"]
    for bad in (
        {**args(after_seconds=60), "every_seconds": 60},  # invalid_selector
        {"prompt": "p", "after_seconds": 60},  # invalid_prompt (no title)
        args(after_seconds=0),  # invalid_rule
        args(every_seconds=59),  # frequency_too_high
        args(at="2020-01-01T00:00:00Z"),  # not_future
        args(daily={"time": "09:00:00", "time_zone": "Mars/Base"}),  # invalid_time_zone
        args(after_seconds=9_007_199_254_740_991),  # time_out_of_range
        args(weekly={**WEEKLY, "weekdays": [1, 1]}),  # invalid_rule
        args(cron={"expression": "0 9 * * MON", "time_zone": "UTC"}),  # invalid_rule
    ):
        await call("schedule_create", bad)
    await call("schedule_list", {})

    # updates that return each view kind, a no-op, and the values without a record
    await call("schedule_update", {"id": ids["after"], "title": "After, renamed"})
    await call("schedule_update", {"id": ids["at"], "prompt": "  new prompt  "})
    await call("schedule_update", {"id": ids["every"], "every_seconds": 120})
    await call("schedule_update", {"id": ids["daily"], "daily": DAILY})  # no-op
    await call("schedule_update", {"id": ids["weekly"], "weekly": {**WEEKLY, "weekdays": [2]}})
    await call("schedule_update", {"id": ids["local"], "cron": CRON})
    await call("schedule_update", {"id": "schedule-missing", "title": "x"})
    await call("schedule_update", {"id": ids["cron"], "title": "x"}, session="s-2")
    for bad in (
        {"id": ids["at"], "after_seconds": 60},
        {"id": ids["at"]},
        {"id": f" {ids['at']}", "title": "x"},
        {"id": ids["at"], "title": " "},
        {"id": ids["at"], "every_seconds": 59},
        {"id": ids["at"], "at": "2020-01-01T00:00:00Z"},
    ):
        await call("schedule_update", bad)

    # the one-shot "after" is delivered and ends: schedule_ended, yet it can be deleted
    clock.set(clock.now_ms() + 601_000)
    await svc.tick()
    ended = await call("schedule_update", {"id": ids["after"], "title": "late"})
    assert ended["code"] == "schedule_ended"
    await call("schedule_delete", {"id": ids["after"]})

    # an update queued behind a delivery that advanced the record conflicts
    clock.set(clock.now_ms() + 3_600_000)
    drive = asyncio.ensure_future(svc.drive())
    await asyncio.sleep(0)
    conflict = await call("schedule_update", {"id": ids["every"], "title": "Edited"})
    await drive
    assert conflict["code"] == "schedule_conflict"

    # pause and resume: each result, its no-op, the refusals and a paused view
    await call("schedule_pause", {"id": ids["daily"]})
    await call("schedule_pause", {"id": ids["daily"]})  # already paused: changed false
    await call("schedule_list", {})  # a paused view
    await call("schedule_update", {"id": ids["daily"], "title": "Paused, renamed"})
    await call("schedule_resume", {"id": ids["daily"]})
    await call("schedule_resume", {"id": ids["daily"]})  # not paused: changed false
    for name in ("schedule_pause", "schedule_resume"):
        await call(name, {"id": "schedule-missing"})
        await call(name, {"id": ids["daily"]}, session="s-2")  # another session's
        await call(name, {"id": " x"})  # invalid_rule

    await call("schedule_delete", {"id": ids["at"]})
    await call("schedule_delete", {"id": ids["at"]})  # schedule_not_found
    await call("schedule_delete", {"id": ids["cron"]}, session="s-2")  # another session's
    await call("schedule_delete", {"id": " x"})  # invalid_rule
    await call("schedule_list", {})

    # unexpected failures are internal_error values
    async def broken(*_: object, **__: object) -> Any:
        raise RuntimeError("boom")

    def broken_list(*_: object) -> Any:
        raise RuntimeError("boom")

    svc.create = broken  # type: ignore[method-assign]
    svc.delete = broken  # type: ignore[method-assign]
    svc.update = broken  # type: ignore[method-assign]
    svc.list_tasks = broken_list  # type: ignore[method-assign]
    svc.pause = broken  # type: ignore[method-assign]
    await call("schedule_pause", {"id": ids["cron"]})
    await call("schedule_resume", {"id": ids["cron"]})
    await call("schedule_create", args(after_seconds=60))
    await call("schedule_list", {})
    await call("schedule_delete", {"id": ids["cron"]})
    await call("schedule_update", {"id": ids["cron"], "title": "x"})
    return calls


def matching(tool: str, value: Any) -> list[Any]:
    """The declared result alternatives of ``tool`` that accept ``value``."""
    accepted = []
    for alternative in RESULT_TYPES[tool]:
        try:
            msgspec.convert(value, type=alternative)
        except msgspec.ValidationError:
            continue
        accepted.append(alternative)
    return accepted


@pytest.fixture(scope="module")
def calls(tmp_path_factory: pytest.TempPathFactory) -> list[Call]:
    return run(tmp_path_factory.mktemp("catalog"), "sqlite", scenario)


def test_result_types_accept_every_value_the_tools_return(calls: list[Call]) -> None:
    used: dict[str, set[Any]] = {name: set() for name in TOOL_NAMES}
    for tool, arguments, value in calls:
        accepted = matching(tool, value)
        assert len(accepted) == 1, (tool, arguments, value, accepted)
        used[tool].add(accepted[0])
    # the scenario exercises every declared alternative, so none of them is dead weight (a
    # resume that ends its task needs the end of representable time: tests/host/test_pause.py)
    for tool in TOOL_NAMES:
        assert used[tool] == set(RESULT_TYPES[tool]) - {ResumeEnded}, tool
    codes = {v["code"] for _, _, v in calls if isinstance(v, dict) and "code" in v}
    assert codes >= {
        "invalid_selector",
        "invalid_prompt",
        "invalid_rule",
        "invalid_time_zone",
        "not_future",
        "time_out_of_range",
        "frequency_too_high",
        "internal_error",
        "schedule_not_found",
        "schedule_ended",
        "schedule_conflict",
    }


def test_result_types_reject_what_the_host_never_returns() -> None:
    view = {
        "id": "schedule-1",
        "kind": "daily",
        "title": "Standup",
        "prompt": "Post the notes",
        "time": "09:30:00.000",
        "timeZone": "Europe/Berlin",
        "scheduledAt": "2026-05-04T07:30:00.000Z",
        "state": "scheduled",
        "deliveryMode": "host",
    }
    assert len(matching("schedule_create", view)) == 1
    for wrong in (
        {**view, "deliveryMode": "session-local"},
        {k: v for k, v in view.items() if k != "title"},
        {**view, "time": "09:30:00"},
        {"code": "persistence_uncertain", "message": "m", "operation": "create"},
        {"code": "corrupt_schedule_log", "message": "m"},
    ):
        assert matching("schedule_create", wrong) == [], wrong
    assert matching("schedule_update", {"id": "x", "updated": True, "code": "schedule_ended"}) == []


def test_parameter_schemas_fit_the_arguments_the_tools_accept(calls: list[Call]) -> None:
    """Arguments a tool accepted convert into its parameters type and validate against the
    published schema (jsonschema is a test dependency); selector-shape rejections do not."""
    params = {name: cls for name, (_, cls) in TOOLS.items()}
    accepted = [
        (tool, arguments)
        for tool, arguments, value in calls
        if not (isinstance(value, dict) and set(value) == {"code", "message"})
    ]
    assert len(accepted) > 20
    for tool, arguments in accepted:
        msgspec.convert(arguments, type=params[tool])
    schemas = {t["name"]: t["parameters"] for t in tool_schemas()["tools"]}
    for tool, arguments in accepted:
        jsonschema.validate(arguments, schemas[tool], cls=jsonschema.Draft202012Validator)
    rejected = [
        (tool, arguments)
        for tool, arguments, value in calls
        if isinstance(value, dict) and value.get("code") == "invalid_selector"
    ]
    assert len(rejected) == 3
    for tool, arguments in rejected:
        assert not jsonschema.Draft202012Validator(schemas[tool]).is_valid(arguments), arguments


def test_result_schemas_validate_every_value_the_tools_return(calls: list[Call]) -> None:
    value = tool_schemas()
    for tool in value["tools"]:
        validator = jsonschema.Draft202012Validator({**tool["result"], "$defs": value["$defs"]})
        for name, arguments, returned in calls:
            if name == tool["name"]:
                assert validator.is_valid(returned), (name, arguments, returned)


# --- schedule_pause and schedule_resume (docs/protocol.md#pause) ------------------------------


def test_pause_and_resume_descriptions_say_what_happens_to_missed_occurrences() -> None:
    text = {name: description for name, (description, _) in TOOLS.items()}
    for phrase in (
        "keeps its id, title, prompt, timing and history",
        "Occurrences that fall inside the pause are skipped, never delivered later",
        "a one-shot reminder whose time passes while paused is delivered once, when it is resumed",
        "it stays paused",
        "changed: false if it was already paused",
        "schedule_not_found",
        "schedule_ended",
        "pause_unsupported",
    ):
        assert phrase in text["schedule_pause"], phrase
    for phrase in (
        "keeping its cadence",
        "first occurrence after now",
        "every_seconds keeps its original anchor",
        "the occurrences missed during the pause are not delivered",
        "whose time passed during the pause is delivered once, right away",
        "changed: false if the reminder was not paused",
        "schedule_not_found",
        "schedule_ended",
    ):
        assert phrase in text["schedule_resume"], phrase
    assert "paused" in text["schedule_list"]


AT = "2026-05-04T07:30:00.000Z"
PAUSED = {"id": "s-1", "paused": True, "changed": True, "pausedAt": AT}
RESUMED = {"id": "s-1", "paused": False, "changed": True, "scheduledAt": AT, "state": "scheduled"}


def coded(code: str, **members: Any) -> dict[str, Any]:
    return {"id": "s-1", "changed": False, "code": code, **members}


P, R = "schedule_pause", "schedule_resume"
PAUSE_VALUES: list[tuple[str, Any, str | None]] = [
    # (tool, value, the alternative that accepts it; None: no alternative may)
    (P, PAUSED, "PauseResult"),
    (P, {**PAUSED, "changed": False}, "PauseResult"),
    (P, coded("schedule_not_found"), "PauseNotApplied"),
    (P, coded("schedule_ended"), "PauseNotApplied"),
    (P, coded("pause_unsupported"), "PauseNotApplied"),
    (P, {"code": "invalid_rule", "message": "m"}, "ErrorValue"),
    (P, {**PAUSED, "paused": False}, None),
    (P, {k: v for k, v in PAUSED.items() if k != "pausedAt"}, None),
    (P, {**PAUSED, "pausedAt": '<&">'}, None),
    (P, coded("schedule_ended", changed=True), None),
    (P, coded("schedule_conflict"), None),
    (P, coded("schedule_ended", id=""), None),
    (R, RESUMED, "ResumeResult"),
    (R, {**RESUMED, "changed": False, "state": "overdue"}, "ResumeResult"),
    (R, coded("schedule_ended", paused=False, changed=True), "ResumeEnded"),
    (R, coded("schedule_not_found"), "ResumeNotApplied"),
    (R, coded("schedule_ended"), "ResumeNotApplied"),
    (R, {"code": "internal_error", "message": "m"}, "ErrorValue"),
    (R, {**RESUMED, "state": "paused"}, None),
    (R, {**RESUMED, "paused": True}, None),
    (R, coded("schedule_ended", paused=False), None),
    (R, coded("pause_unsupported"), None),
    (R, coded("schedule_not_found", changed=True), None),
]


@pytest.mark.parametrize(("tool", "value", "accepted_by"), PAUSE_VALUES)
def test_pause_and_resume_result_types(tool: str, value: Any, accepted_by: str | None) -> None:
    """Each stable result value fits exactly one declared alternative, by the Structs and by the
    published JSON Schema alike; what the host must never return fits none."""
    accepted = [t.__name__ for t in matching(tool, value)]
    assert accepted == ([] if accepted_by is None else [accepted_by]), accepted
    catalog = tool_schemas()
    (entry,) = (t for t in catalog["tools"] if t["name"] == tool)
    validator = jsonschema.Draft202012Validator({**entry["result"], "$defs": catalog["$defs"]})
    assert validator.is_valid(value) is (accepted_by is not None)


def test_every_pause_and_resume_alternative_is_covered() -> None:
    for tool in PAUSE_TOOL_NAMES:
        covered = {by for name, _, by in PAUSE_VALUES if name == tool and by is not None}
        assert covered == {t.__name__ for t in RESULT_TYPES[tool]}, tool


def test_a_paused_view_is_a_view_state() -> None:
    view = {
        "id": "schedule-1",
        "kind": "every",
        "title": "Standup",
        "prompt": "Post the notes",
        "everySeconds": 3600,
        "scheduledAt": AT,
        "state": "paused",
        "deliveryMode": "host",
    }
    assert len(matching("schedule_update", view)) == 1
    assert len(matching("schedule_list", [view])) == 1
    assert matching("schedule_update", {**view, "state": "ended"}) == []


@pytest.mark.parametrize("tool", PAUSE_TOOL_NAMES)
def test_pause_tool_id_checks_the_id_like_schedule_delete(tool: str) -> None:
    assert pause_tool_id(tool, {"id": "schedule-1", "other": "ignored"}) == "schedule-1"
    assert pause_tool_id(tool, {"id": '<&"> \ud800'}) == '<&"> \ud800'  # unusual: not found later
    for bad in ({}, {"id": ""}, {"id": " x"}, {"id": "x\n"}, {"id": 1}, {"id": None}, [], "x"):
        with pytest.raises(ScheduleInputError) as info:
            pause_tool_id(tool, bad)
        assert info.value.code == "invalid_rule"
        assert info.value.message == f"{tool} id must be non-empty without surrounding whitespace."
    with pytest.raises(KeyError):
        pause_tool_id("schedule_delete", {"id": "x"})


def test_pause_and_resume_are_dispatched_and_published(tmp_path: Any) -> None:
    """The host's tool call, its HTTP routes and its OpenAPI document know every tool."""
    from schedlog.serve.openapi import openapi

    async def scenario(svc: HostService, _clock: VirtualClock, _: MemorySessions) -> None:
        for name in PAUSE_TOOL_NAMES:
            value = await HostTools(svc).call(name, "s-1", {"id": "schedule-1"})
            assert value == {"id": "schedule-1", "changed": False, "code": "schedule_not_found"}

    run(tmp_path, "sqlite", scenario)
    paths = openapi()["paths"]
    for name in TOOL_NAMES:
        assert f"/v1/sessions/{{sessionId}}/tools/{name}" in paths
    for op in ("pause", "resume"):
        assert f"/v1/sessions/{{sessionId}}/tasks/{{id}}/{op}" in paths
    assert {t["name"] for t in tool_schemas()["tools"]} >= set(PAUSE_TOOL_NAMES)
