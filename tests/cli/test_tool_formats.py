"""``schedlog tools catalog --format openai|anthropic``: the tool definitions of both protocols
in the shapes those APIs take (OpenAI: ``{"type":"function","function":{"name","description",
"parameters"}}``; Anthropic: ``{"name","description","input_schema"}``)."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from jsonschema import Draft202012Validator

from schedlog.cli.main import main
from schedlog.tool_schemas import TOP_LEVEL_COMBINATORS

NAMES = {
    "session-local": ["schedule_create", "schedule_list", "schedule_delete"],
    "host": [
        "schedule_create",
        "schedule_list",
        "schedule_delete",
        "schedule_update",
        "schedule_pause",
        "schedule_resume",
    ],
}
#: The function / tool name rule both APIs publish.
NAME_RULE = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")
PROTOCOLS = sorted(NAMES)


def _print(capsys: pytest.CaptureFixture[str], *argv: str) -> Any:
    assert main(["tools", "catalog", *argv]) == 0
    out = capsys.readouterr().out
    assert out.endswith("\n") and out.count("\n") == 1  # one JSON line
    return json.loads(out)


def _check_parameters(schema: Any) -> None:
    assert isinstance(schema, dict)
    assert schema["type"] == "object"
    assert isinstance(schema["properties"], dict)
    assert set(schema.get("required", [])) <= set(schema["properties"])
    for keyword in TOP_LEVEL_COMBINATORS:
        assert keyword not in schema, keyword
    assert "$ref" not in json.dumps(schema)  # self-contained: no $defs to resolve
    Draft202012Validator.check_schema(schema)


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_openai_shape(protocol: str, capsys: pytest.CaptureFixture[str]) -> None:
    tools = _print(capsys, "--protocol", protocol, "--format", "openai")
    assert [t["function"]["name"] for t in tools] == NAMES[protocol]
    for tool in tools:
        assert set(tool) == {"type", "function"}
        assert tool["type"] == "function"
        function = tool["function"]
        assert set(function) == {"name", "description", "parameters"}
        assert NAME_RULE.match(function["name"])
        assert isinstance(function["description"], str) and function["description"].strip()
        _check_parameters(function["parameters"])


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_anthropic_shape(protocol: str, capsys: pytest.CaptureFixture[str]) -> None:
    tools = _print(capsys, "--protocol", protocol, "--format", "anthropic")
    assert [t["name"] for t in tools] == NAMES[protocol]
    for tool in tools:
        assert set(tool) == {"name", "description", "input_schema"}
        assert NAME_RULE.match(tool["name"])
        assert isinstance(tool["description"], str) and tool["description"].strip()
        _check_parameters(tool["input_schema"])


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_formats_carry_the_catalog(protocol: str, capsys: pytest.CaptureFixture[str]) -> None:
    """Nothing but the top-level combinators is dropped, and both formats say the same."""
    catalog = _print(capsys, "--protocol", protocol)
    openai = _print(capsys, "--protocol", protocol, "--format", "openai")
    anthropic = _print(capsys, "--protocol", protocol, "--format", "anthropic")
    for entry, o, a in zip(catalog["tools"], openai, anthropic, strict=True):
        expected = {k: v for k, v in entry["parameters"].items() if k not in TOP_LEVEL_COMBINATORS}
        assert o["function"]["parameters"] == expected == a["input_schema"]
        assert o["function"]["description"] == entry["description"] == a["description"]


@pytest.mark.parametrize(
    ("protocol", "args", "valid"),
    [
        ("host", {"prompt": "Stand up", "title": "Break", "after_seconds": 600}, True),
        (
            "host",
            {
                "prompt": "p",
                "title": "t",
                "cron": {"expression": "0 9 * * 1-5", "time_zone": "Europe/Berlin"},
            },
            True,
        ),
        ("host", {"prompt": 7, "title": "t", "after_seconds": 600}, False),
        ("host", {"prompt": "p", "title": "t", "after_seconds": 0}, False),
        ("host", {"prompt": "p", "title": "t", "surprise": 1}, False),
        ("session-local", {"prompt": "p", "every_seconds": 600}, True),
        ("session-local", {"prompt": "p", "every_seconds": 60}, False),
        ("session-local", {"prompt": "p", "title": "t", "at": "2026-05-01T09:00:00Z"}, False),
    ],
)
def test_create_schema_accepts_and_rejects(
    protocol: str, args: dict[str, Any], valid: bool, capsys: pytest.CaptureFixture[str]
) -> None:
    tools = _print(capsys, "--protocol", protocol, "--format", "anthropic")
    schema = tools[0]["input_schema"]
    assert Draft202012Validator(schema).is_valid(args) is valid


def test_unknown_format_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["tools", "catalog", "--protocol", "host", "--format", "gemini"])
    assert exc.value.code == 2
    assert "invalid choice" in capsys.readouterr().err
