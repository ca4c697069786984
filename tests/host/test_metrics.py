"""The pieces of schedlog.host.metrics that a scripted serve run does not reach: the webhook
attempt counter by result, and store timing that keeps the store's type and protocols
(docs/operations.md#metrics)."""

from __future__ import annotations

import asyncio
import contextlib
from pathlib import Path

from tests.serve.deps import require_modules

require_modules(("prometheus_client",), "metrics")

from prometheus_client.parser import text_string_to_metric_families  # noqa: E402

from schedlog.host.metrics import HostMetrics  # noqa: E402
from schedlog.host.stores.base import InsertsMany  # noqa: E402
from schedlog.host.stores.open import open_store  # noqa: E402
from schedlog.host.webhook import WebhookError  # noqa: E402
from tests.host.helpers import task  # noqa: E402


def _samples(metrics: HostMetrics) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    text = metrics.render().decode()
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


def test_webhook_attempts_are_counted_by_result() -> None:
    metrics = HostMetrics("sqlite")
    outcomes = iter(
        [None, WebhookError("503", "refused"), WebhookError("slow", "timeout"), RuntimeError()]
    )

    async def post(outgoing: object) -> None:
        error = next(outcomes)
        if error is not None:
            raise error

    counted = metrics.counted_post(post)

    async def run() -> None:
        for _ in range(4):
            with contextlib.suppress(Exception):
                await counted(object())  # type: ignore[arg-type]

    asyncio.run(run())
    got = _samples(metrics)
    results = {
        dict(labels)["result"]: value
        for (name, labels), value in got.items()
        if name == "schedlog_webhook_attempts_total"
    }
    assert results == {"ok": 1, "refused": 1, "timeout": 1, "unreachable": 0, "error": 1}
    # Before any service is watched the state gauges are absent, never made up.
    assert ("schedlog_active_tasks", ()) not in got
    assert got[("schedlog_event_stream_clients", ())] == 0


def test_timed_store_keeps_its_type_and_counts_each_call(tmp_path: Path) -> None:
    store = open_store(tmp_path / "s.db")
    try:
        kind = type(store)
        metrics = HostMetrics("sqlite")
        metrics.instrument_store(store)
        assert type(store) is kind and isinstance(store, InsertsMany)
        store.insert(task("schedule-1", session="<s>", after_seconds=5))
        assert store.get("schedule-1") is not None
        assert store.get("schedule-2") is None
        got = _samples(metrics)
        count = "schedlog_store_operation_seconds_count"
        assert got[(count, (("backend", "sqlite"), ("op", "get")))] == 2
        assert got[(count, (("backend", "sqlite"), ("op", "insert")))] == 1
    finally:
        store.close()
