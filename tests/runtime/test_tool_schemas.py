"""The session-local tool schemas: valid, self-contained schemas, and types that accept every
value the tools actually return."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

import msgspec
import pytest

from schedlog.cli.session_cmd import register_tools
from schedlog.runtime.clock import VirtualClock
from schedlog.runtime.tool_schemas import RESULT_TYPES, TOOLS, tool_schemas, tool_schemas_markdown
from schedlog.runtime.tools import SessionTools
from tests.runtime.helpers import Harness, ms

NOW = ms("2026-05-01T08:50:00Z")


def refs(value: Any) -> list[str]:
    if isinstance(value, dict):
        own = [value["$ref"]] if isinstance(value.get("$ref"), str) else []
        return own + [r for v in value.values() for r in refs(v)]
    if isinstance(value, list):
        return [r for v in value for r in refs(v)]
    return []


def test_catalog_is_json_with_resolvable_refs_and_self_contained_parameters() -> None:
    value = tool_schemas()
    assert json.loads(json.dumps(value)) == value
    assert [t["name"] for t in value["tools"]] == list(TOOLS)
    for ref in refs(value):
        assert ref.startswith("#/$defs/") and ref.removeprefix("#/$defs/") in value["$defs"]
    for tool in value["tools"]:
        assert refs(tool["parameters"]) == []
        assert tool["parameters"]["type"] == "object"
    create = value["tools"][0]["parameters"]
    assert create["additionalProperties"] is False
    assert create["oneOf"] == [
        {"required": ["after_seconds"]},
        {"required": ["at"]},
        {"required": ["every_seconds"]},
    ]


def test_markdown_has_one_section_per_tool() -> None:
    text = tool_schemas_markdown()
    for name in TOOLS:
        assert f"\n## {name}\n" in text


@pytest.mark.parametrize("fmt", ["json", "markdown"])
def test_cli_prints_the_catalog(fmt: str, capsys: pytest.CaptureFixture[str]) -> None:
    parser = argparse.ArgumentParser()
    register_tools(parser.add_subparsers())
    args = parser.parse_args(["tools", "catalog", "--protocol", "session-local", "--format", fmt])
    assert args.func(args) == 0
    out = capsys.readouterr().out
    if fmt == "json":
        assert json.loads(out)["protocol"] == "session-local"
    else:
        assert out.startswith("# schedlog session-local tools\n")


def conforms(tool: str, value: Any) -> bool:
    for alternative in RESULT_TYPES[tool]:
        try:
            msgspec.convert(value, type=alternative)
        except msgspec.ValidationError:
            continue
        return True
    return False


def test_result_types_accept_every_value_the_tools_return(tmp_path: Path) -> None:
    harness = Harness(tmp_path / "s-1.jsonl")
    tools = SessionTools(harness, VirtualClock(NOW))
    values: list[tuple[str, Any]] = []
    for args in (
        {"prompt": "a", "after_seconds": 60},
        {"prompt": "b", "at": "2026-05-01T10:00:00+02:00"},
        {"prompt": "c", "at": {"date": "2026-05-02", "time": "09:00:00", "time_zone": "UTC"}},
        {"prompt": "d", "every_seconds": 300},
        {"prompt": "e"},
        {"prompt": "f", "every_seconds": 10},
        {"prompt": "g", "at": "yesterday"},
    ):
        values.append(("schedule_create", tools.schedule_create(args)))
    values.append(("schedule_list", tools.schedule_list({})))
    values.append(("schedule_delete", tools.schedule_delete({"id": "schedule-1"})))
    values.append(("schedule_delete", tools.schedule_delete({"id": "schedule-1"})))
    values.append(("schedule_delete", tools.schedule_delete({"id": " "})))
    harness.barrier_results = [True, False, False, False]
    values.append(("schedule_create", tools.schedule_create({"prompt": "h", "after_seconds": 1})))
    values.append(("schedule_list", tools.schedule_list({})))
    values.append(("schedule_delete", tools.schedule_delete({"id": "schedule-2"})))
    for tool, value in values:
        assert conforms(tool, value), (tool, value)
    assert not conforms("schedule_create", {"id": "x", "kind": "daily"})
