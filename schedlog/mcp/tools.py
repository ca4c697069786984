"""The MCP form of the tools (docs/agents.md#what-the-model-sees): the catalog's tools as MCP
``Tool`` definitions, and a tool value as a ``CallToolResult``.

A tool definition is the catalog entry of ``schedlog tools catalog`` unchanged: the same name,
description and parameters schema (``inputSchema``); the result schema is the ``outputSchema``
as ``{"result": RESULT}`` (MCP wants an object, and a ``schedule_list`` value is an array), with
the catalog's shared ``$defs``. A result carries the tool value twice, as MCP recommends: as the
JSON text the batch commands print inside ``ok`` (what a model reads), and as
``structuredContent`` ``{"result": VALUE}``. An error value (``{"code", "message"}``) is marked
``isError``; a result code (``{"id", "deleted": false, "code"}``) is a normal result.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from typing import Any, Final

import mcp_types as types

from schedlog.rules.text import js_dumps

__all__ = ["PROTOCOL_SCHEMAS", "is_error_value", "mcp_tools", "tool_result"]

#: protocol -> the module whose ``tool_schemas()`` is its catalog (as ``tools catalog``).
PROTOCOL_SCHEMAS: Final = {
    "host": "schedlog.host.tool_schemas",
    "session-local": "schedlog.runtime.tool_schemas",
}


def mcp_tools(protocol: str) -> list[types.Tool]:
    """The tools of ``protocol`` (``host`` or ``session-local``), in catalog order."""
    catalog: dict[str, Any] = importlib.import_module(PROTOCOL_SCHEMAS[protocol]).tool_schemas()
    return [
        types.Tool(
            name=tool["name"],
            description=tool["description"],
            input_schema=tool["parameters"],
            output_schema={
                "type": "object",
                "properties": {"result": tool["result"]},
                "required": ["result"],
                "additionalProperties": False,
                "$defs": catalog["$defs"],
            },
        )
        for tool in catalog["tools"]
    ]


def is_error_value(value: object) -> bool:
    """An error value ``{"code", "message", ...}`` (docs/errors.md#shapes), not a result."""
    return isinstance(value, Mapping) and "code" in value and "message" in value


def tool_result(value: Any) -> types.CallToolResult:
    """A tool value as the MCP result. The text is the value's JSON as the batch commands write
    it (a lone surrogate escaped as ``\\udXXX``); UTF-8 cannot carry a lone surrogate, so in the
    structured copy each one becomes those six characters of text."""
    text = js_dumps(value)
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=text)],
        structured_content={"result": _encodable(value) if _has_surrogate(text) else value},
        is_error=is_error_value(value),
    )


def _has_surrogate(text: str) -> bool:
    return "\\ud" in text.lower()  # js_dumps writes each lone surrogate as an escape


def _encodable(value: Any) -> Any:
    if isinstance(value, str):
        return "".join(f"\\u{ord(c):04x}" if 0xD800 <= ord(c) <= 0xDFFF else c for c in value)
    if isinstance(value, dict):
        return {_encodable(k): _encodable(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_encodable(v) for v in value]
    return value
