"""Helpers of the MCP tests: the SDK's real client against ``schedlog mcp`` (stdio) and
``schedlog host serve`` (streamable HTTP), and the batch commands to compare with.

The tests skip when the ``mcp`` SDK is missing, except under ``CI=true``, where they fail.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from schedlog.rules.text import js_dumps
from schedlog.strictjson import loads_strict
from tests.serve.deps import require_modules

RUNNER = "import sys\nfrom schedlog.cli.main import main\nsys.exit(main())\n"
#: Hostile but valid text: markup, quotes and a non-BMP character.
HOSTILE = 'Stand up <b>&amp;</b> "now" \U0001f600'


def require_mcp() -> None:
    """Skip the calling module when the SDK is missing (fail under CI=true)."""
    require_modules(("mcp", "httpx2"), "mcp")


def stdio_params(*args: str) -> Any:
    """``schedlog mcp ARGS`` as the SDK client starts a server."""
    from mcp import StdioServerParameters

    return StdioServerParameters(
        command=sys.executable, args=["-c", RUNNER, "mcp", *args], env=dict(os.environ)
    )


def now_text() -> str:
    """The current instant as a batch request's ``now`` (the servers run on the real clock)."""
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


def batch(command: Sequence[str], requests: Sequence[dict[str, Any]]) -> list[Any]:
    """Run ``schedlog COMMAND`` (``host batch ...`` or ``session batch ...``) over request
    lines; the decoded answer lines."""
    lines = "".join(js_dumps(r) + "\n" for r in requests)
    done = subprocess.run(
        [sys.executable, "-c", RUNNER, *command],
        input=lines.encode("utf-8"),
        capture_output=True,
        timeout=60,
        check=True,
    )
    return [loads_strict(line) for line in done.stdout.splitlines()]


def host_batch(store: str, sessions: str, requests: Sequence[dict[str, Any]]) -> list[Any]:
    return batch(["host", "batch", "--store", store, "--sessions", sessions], requests)


def value_of(result: Any) -> Any:
    """The tool value of an MCP ``CallToolResult``: its JSON text, checked against its
    structured copy."""
    (content,) = result.content
    value = loads_strict(content.text)
    assert result.structured_content == {"result": value}
    assert result.is_error == (isinstance(value, dict) and "message" in value)
    return value


def catalog(protocol: str) -> dict[str, Any]:
    done = subprocess.run(
        [sys.executable, "-c", RUNNER, "tools", "catalog", "--protocol", protocol],
        capture_output=True,
        timeout=60,
        check=True,
    )
    return loads_strict(done.stdout)  # type: ignore[no-any-return]
