"""Issue 22 item 11: the webhook client ignores proxies from the environment
(docs/http-api.md#webhook-delivery): a delivery never goes through ``HTTP_PROXY``."""

from __future__ import annotations

import asyncio

import pytest

from tests.serve.deps import require_serve

require_serve()

from schedlog.host.webhook import WebhookSink  # noqa: E402
from schedlog.runtime.clock import VirtualClock  # noqa: E402
from tests.host.helpers import T0  # noqa: E402


def test_proxy_variables_of_the_environment_are_ignored(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "all_proxy"):
        monkeypatch.setenv(name, "http://127.0.0.1:9/")
    monkeypatch.delenv("NO_PROXY", raising=False)
    monkeypatch.delenv("no_proxy", raising=False)
    sink = WebhookSink("http://receiver.test/hook", b"s" * 32, VirtualClock(T0))
    try:
        assert sink._client.trust_env is False
        assert sink._client._mounts == {}  # no proxy transport was set up from the environment
    finally:
        asyncio.run(sink.aclose())
