"""What the tool schemas of both protocols share (docs/protocol.md#session-tools,
docs/protocol.md#host-tools): the annotated field types, the local ``at`` object, the delete result,
and the rendering of a protocol's tool schemas as JSON Schema 2020-12 and as Markdown.

Each protocol declares its own Structs and descriptions (:mod:`schedlog.runtime.tool_schemas`,
:mod:`schedlog.host.tool_schemas`) and passes them to :func:`build_tool_schemas`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any, Final, Literal

import msgspec
from msgspec import UNSET, Meta, UnsetType

from schedlog.rules.text import MAX_SAFE_INT, js_dumps

__all__ = [
    "AfterSeconds",
    "AtString",
    "DeleteResult",
    "InputErrorCode",
    "Instant",
    "LocalAt",
    "LocalTime",
    "Prompt",
    "RecordId",
    "ResultTable",
    "State",
    "TimeZoneName",
    "ToolId",
    "ToolTable",
    "anthropic_tools",
    "build_tool_schemas",
    "model_parameters",
    "openai_tools",
    "render_markdown",
]

Instant = Annotated[
    str,
    Meta(
        pattern=r"^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]{3}Z$",
        description="Canonical UTC instant YYYY-MM-DDTHH:MM:SS.mmmZ.",
    ),
]
Prompt = Annotated[str, Meta(min_length=1, description="Reminder text, trimmed, non-empty.")]
RecordId = Annotated[str, Meta(min_length=1, description="Exact reminder id, e.g. schedule-1.")]
#: An id argument: non-empty, without surrounding whitespace.
ToolId = Annotated[RecordId, Meta(pattern=r"^\S(.*\S)?$")]
State = Literal["scheduled", "overdue"]
LocalTime = Annotated[
    str,
    Meta(
        pattern=r"^[0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]{1,3})?$",
        description="HH:mm:ss with optional 1-3 digit fraction",
    ),
]
TimeZoneName = Annotated[str, Meta(description="UTC or an IANA Area/Location name")]
AfterSeconds = Annotated[int, Meta(ge=1, le=MAX_SAFE_INT, description="Delay in seconds.")]
AtString = Annotated[
    str,
    Meta(
        description=(
            "RFC 3339 date-time with Z or a numeric offset "
            "(YYYY-MM-DDTHH:mm:ss[.sss]Z|+HH:MM), strictly in the future."
        )
    ),
]
#: The input error codes both protocols' tools return (docs/errors.md); each protocol adds its own.
InputErrorCode = Literal[
    "invalid_selector",
    "invalid_prompt",
    "invalid_rule",
    "invalid_time_zone",
    "not_future",
    "time_out_of_range",
    "frequency_too_high",
]


class LocalAt(msgspec.Struct, forbid_unknown_fields=True):
    """A local wall-clock date and time in an explicit IANA time zone."""

    date: Annotated[str, Meta(pattern=r"^[0-9]{4}-[0-9]{2}-[0-9]{2}$", description="YYYY-MM-DD")]
    time: LocalTime
    time_zone: TimeZoneName


class DeleteResult(msgspec.Struct, forbid_unknown_fields=True):
    """The result of schedule_delete; code is present only when nothing was deleted."""

    id: RecordId
    deleted: bool
    code: Literal["schedule_not_found"] | UnsetType = UNSET


#: name -> (description, parameters type)
ToolTable = Mapping[str, tuple[str, type[msgspec.Struct]]]
#: name -> the alternatives of the tool's result value (an array of views is a ``list`` type)
ResultTable = Mapping[str, tuple[Any, ...]]


def build_tool_schemas(
    protocol: str,
    tools: ToolTable,
    results: ResultTable,
    parameter_rules: Mapping[str, Mapping[str, Any]],
) -> dict[str, Any]:
    """The tool schemas as one JSON value: ``{"$schema","protocol","tools":[{name, description,
    parameters, result}], "$defs"}``; every schema is JSON Schema 2020-12.

    Parameters are self-contained (model APIs take them without ``$defs``), extended with the
    tool's ``parameter_rules`` (keywords a Struct cannot express, such as "exactly one
    selector"); results refer to the shared ``$defs``.
    """
    types: list[Any] = []
    for name, (_, params) in tools.items():
        types.append(params)
        types.extend(results[name])
    refs, defs = msgspec.json.schema_components(types, ref_template="#/$defs/{name}")
    position = 0
    entries = []
    for name, (description, _) in tools.items():
        parameters = _inline(refs[position], defs)
        position += 1
        parameters.update(parameter_rules.get(name, {}))
        alternatives = []
        for _ in results[name]:
            alternatives.append(refs[position])
            position += 1
        entries.append(
            {
                "name": name,
                "description": description,
                "parameters": parameters,
                "result": {"oneOf": alternatives},
            }
        )
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "protocol": protocol,
        "tools": entries,
        "$defs": defs,
    }


def _inline(schema: Any, defs: dict[str, Any]) -> Any:
    """``schema`` with every ``$ref`` replaced by its definition."""
    if isinstance(schema, dict):
        ref = schema.get("$ref")
        if isinstance(ref, str):
            return _inline(defs[ref.rsplit("/", 1)[1]], defs)
        return {key: _inline(value, defs) for key, value in schema.items()}
    if isinstance(schema, list):
        return [_inline(value, defs) for value in schema]
    return schema


def render_markdown(value: Mapping[str, Any]) -> str:
    """Tool schemas from :func:`build_tool_schemas` as Markdown: one section per tool with its
    description and schemas, then the shared definitions."""
    lines = [f"# schedlog {value['protocol']} tools", ""]
    for tool in value["tools"]:
        lines += [f"## {tool['name']}", "", tool["description"], "", "Parameters:", ""]
        lines += ["```json", js_dumps(tool["parameters"]), "```", "", "Result:", ""]
        lines += ["```json", js_dumps(tool["result"]), "```", ""]
    lines += ["## Shared definitions", "", "```json", js_dumps(value["$defs"]), "```", ""]
    return "\n".join(lines)


#: Keywords that the OpenAI and Anthropic tool APIs both refuse at the top level of a
#: parameters schema (OpenAI: "must have type 'object' and not have 'oneOf'/'anyOf'/'allOf'/
#: 'enum'/'not' at the top level"; Anthropic: "does not support oneOf, allOf, or anyOf at the
#: top level"). Nested uses are accepted.
TOP_LEVEL_COMBINATORS: Final = ("oneOf", "anyOf", "allOf", "not", "enum", "const")


def model_parameters(parameters: Mapping[str, Any]) -> dict[str, Any]:
    """A tool's parameters schema as model APIs take it: an ``object`` schema without the
    top-level combinators. What those encoded ("exactly one timing selector", "at least one
    change") is stated in the tool's description and enforced by the tool itself, which
    answers ``invalid_selector``."""
    return {k: v for k, v in parameters.items() if k not in TOP_LEVEL_COMBINATORS}


def openai_tools(value: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Tool schemas from :func:`build_tool_schemas` as OpenAI function tools:
    ``[{"type": "function", "function": {"name", "description", "parameters"}}, ...]``."""
    return [
        {
            "type": "function",
            "function": {
                "name": tool["name"],
                "description": tool["description"],
                "parameters": model_parameters(tool["parameters"]),
            },
        }
        for tool in value["tools"]
    ]


def anthropic_tools(value: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Tool schemas from :func:`build_tool_schemas` as Anthropic tools:
    ``[{"name", "description", "input_schema"}, ...]``."""
    return [
        {
            "name": tool["name"],
            "description": tool["description"],
            "input_schema": model_parameters(tool["parameters"]),
        }
        for tool in value["tools"]
    ]
