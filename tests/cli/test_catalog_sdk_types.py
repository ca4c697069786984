"""``tools catalog --format openai|anthropic`` against the official SDKs' own tool parameter
types: each tool validates, strictly, as the ``openai`` ``ChatCompletionToolParam`` and the
``anthropic`` ``ToolParam`` TypedDicts (and the input schema as Anthropic's typed
``InputSchema``), and carries no key those types do not declare. Test-only dependencies
(docs/decisions.md, "Agent frameworks and model SDKs in tests"); nothing reaches a network."""

from __future__ import annotations

import importlib
import os
import subprocess
import sys
from typing import Any, get_type_hints, is_typeddict

import pytest

from schedlog.strictjson import loads_strict

RUNNER = "import sys\nfrom schedlog.cli.main import main\nsys.exit(main())\n"
PROTOCOLS = ["host", "session-local"]


def _sdk(name: str) -> Any:
    """The SDK (in the test extra): skipped when missing, except under CI=true."""
    if os.environ.get("CI") == "true":
        return importlib.import_module(name)
    return pytest.importorskip(name, reason=f"{name} is not installed: pip install -e '.[test]'")


def _catalog(protocol: str, fmt: str) -> Any:
    done = subprocess.run(
        [sys.executable, "-c", RUNNER, "tools", "catalog", "--protocol", protocol, "--format", fmt],
        capture_output=True,
        timeout=60,
        check=True,
    )
    return loads_strict(done.stdout)


def _validate(kind: Any, value: Any) -> None:
    from pydantic import TypeAdapter

    TypeAdapter(kind).validate_python(value, strict=True)


def _only_declared_keys(value: dict[str, Any], kind: Any, where: str) -> None:
    """Every key of ``value`` is a field of the TypedDict ``kind``; nested TypedDicts too."""
    hints = get_type_hints(kind)
    extra = set(value) - set(hints)
    assert not extra, f"{where}: {sorted(extra)} not in {kind.__name__}"
    for key, item in value.items():
        field = hints[key]
        inner = getattr(field, "__args__", (field,))[0] if not is_typeddict(field) else field
        if isinstance(item, dict) and is_typeddict(inner):
            _only_declared_keys(item, inner, f"{where}.{key}")


def _openai_checks() -> tuple[Any, list[tuple[Any, Any]]]:
    from openai.types.chat import ChatCompletionFunctionToolParam, ChatCompletionToolParam
    from openai.types.shared_params import FunctionDefinition

    return ChatCompletionToolParam, [
        (lambda tool: tool, ChatCompletionFunctionToolParam, True),
        (lambda tool: tool["function"], FunctionDefinition, True),
    ]


def _anthropic_checks() -> tuple[Any, list[tuple[Any, Any]]]:
    from anthropic.types import ToolParam, ToolUnionParam
    from anthropic.types.tool_param import InputSchemaTyped

    # InputSchema is "typed, or any dict": the typed arm is checked, not only the catch-all;
    # it allows keys beyond its own (a JSON Schema has many), so its keys are not closed.
    return ToolUnionParam, [
        (lambda tool: tool, ToolParam, True),
        (lambda tool: tool["input_schema"], InputSchemaTyped, False),
    ]


#: format -> (its SDK, its checks: the union each tool is, and (part of a tool, its TypedDict,
#: whether only declared keys may appear))
FORMATS: dict[str, tuple[str, Any]] = {
    "openai": ("openai", _openai_checks),
    "anthropic": ("anthropic", _anthropic_checks),
}


@pytest.mark.parametrize("fmt", list(FORMATS))
@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_the_format_is_accepted_by_the_sdk_types(protocol: str, fmt: str) -> None:
    sdk, checks = FORMATS[fmt]
    _sdk(sdk)
    union, parts = checks()
    tools = _catalog(protocol, fmt)
    assert len(tools) == len(catalog_tools(protocol))
    _validate(list[union], tools)
    for tool in tools:
        for part_of, kind, closed in parts:
            _validate(kind, part_of(tool))
            if closed:
                _only_declared_keys(part_of(tool), kind, f"{protocol} {fmt}")


def catalog_tools(protocol: str) -> list[Any]:
    return _catalog(protocol, "json")["tools"]  # type: ignore[no-any-return]


def test_the_check_catches_an_undeclared_key() -> None:
    _sdk("anthropic")
    from anthropic.types import ToolParam

    with pytest.raises(AssertionError, match="parameters"):
        _only_declared_keys({"name": "x", "input_schema": {}, "parameters": {}}, ToolParam, "x")
