"""The SDK's streamable-HTTP client against a real ``schedlog host serve`` process."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

from tests.serve.process import ServeProcess, start_serve


@contextlib.contextmanager
def serving(store: Path | str, sessions: Path, *extra: str) -> Iterator[ServeProcess]:
    server = start_serve(store, ["--sessions", str(sessions), *extra])
    try:
        yield server
    finally:
        server.stop()


def mcp_url(server: ServeProcess, session_id: str) -> str:
    return server.url.removesuffix("/v1") + f"/mcp/sessions/{session_id}"


@contextlib.asynccontextmanager
async def client(
    server: ServeProcess,
    session_id: str,
    *,
    token: str | None = None,
    mode: str = "auto",
    **options: Any,
) -> AsyncIterator[Any]:
    """An entered SDK ``Client`` for ``session_id`` (``mode="legacy"``: the 2025 handshake;
    ``options``: more ``Client`` fields)."""
    import httpx2
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    headers = {"Authorization": f"Bearer {token if token is not None else server.token}"}
    async with httpx2.AsyncClient(headers=headers, timeout=30) as http:
        transport = streamable_http_client(mcp_url(server, session_id), http_client=http)
        async with Client(transport, mode=mode, **options) as entered:
            yield entered
