"""Lone surrogates in titles and prompts on every backend (issue 22 item 1; docs/decisions.md
"Hostile input", lone surrogates in the stores): a service create, a reopen of the store, then
the catalog, the session's list and a webhook body, all with the string as it came in."""

from __future__ import annotations

import asyncio
from pathlib import Path

from schedlog.host.config import Retention
from schedlog.host.service import HostService
from schedlog.host.stores.open import open_store
from schedlog.rules.text import js_dumps, json_bytes
from schedlog.runtime.clock import VirtualClock
from tests.host.conftest import store_path
from tests.host.helpers import T0, MemorySessions

TITLE = 'x\ud800<&"y'
PROMPT = "p\udc00q\udbff"


def _service(tmp_path: Path, backend: str) -> HostService:
    store = open_store(store_path(tmp_path, backend))
    return HostService(store, MemorySessions(), VirtualClock(T0), Retention())


def test_the_string_round_trips_through_the_store(tmp_path: Path, backend: str) -> None:
    async def create() -> str:
        service = _service(tmp_path, backend)
        try:
            args = {"title": TITLE, "prompt": PROMPT, "after_seconds": 3600}
            record = await service.create("s-1", args)
            return record.id
        finally:
            await service.aclose()

    async def read(task_id: str) -> None:
        service = _service(tmp_path, backend)
        try:
            (entry,) = service.catalog()
            assert (entry["title"], entry["prompt"]) == (TITLE, PROMPT)
            (record,) = service.core.list_records("s-1")
            assert (record.title, record.prompt) == (TITLE, PROMPT)
            assert '"title":"x\\ud800<&\\"y"' in js_dumps(record.to_json())
            assert b'"prompt":"p\\udc00q\\udbff"' in json_bytes(entry)
            found = service.find("s-1", task_id)
            assert found is not None and found.record.title == TITLE
        finally:
            await service.aclose()

    task_id = asyncio.run(create())
    asyncio.run(read(task_id))
