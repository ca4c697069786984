"""Host task ids come from an injectable source: random ``schedule-<uuid4>`` by default, any
deterministic sequence a test passes."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path

from schedlog.host.config import Retention
from schedlog.host.service import HostService
from schedlog.host.stores.open import open_store
from schedlog.host.task import new_task_id
from schedlog.runtime.clock import VirtualClock
from tests.host.conftest import store_path
from tests.host.helpers import T0, MemorySessions
from tests.host.test_service import args

UUID4_ID = re.compile(
    r"schedule-[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}"
)


def test_default_ids_are_random_uuid4() -> None:
    first, second = new_task_id(), new_task_id()
    assert UUID4_ID.fullmatch(first) and UUID4_ID.fullmatch(second) and first != second


def test_an_injected_source_gives_deterministic_ids(tmp_path: Path) -> None:
    ids = iter(["schedule-fixed-1", "schedule-fixed-2"])

    async def main() -> list[str]:
        store = open_store(store_path(tmp_path, "sqlite"))
        service = HostService(
            store,
            MemorySessions(),
            VirtualClock(T0),
            Retention(),
            auto_drive=False,
            task_ids=ids.__next__,
        )
        try:
            made = [await service.create("s-1", args(after_seconds=60)) for _ in range(2)]
            listed = [r.id for r in service.list_records("s-1")]
            assert listed == [r.id for r in made]
            return listed
        finally:
            await service.aclose()

    assert asyncio.run(main()) == ["schedule-fixed-1", "schedule-fixed-2"]
