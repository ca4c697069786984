"""Fixtures for the host tests: a store on each backend (the contract suite's parameter)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from schedlog.host.store import TaskStore, open_store

BACKENDS = ("sqlite", "json")


def store_path(tmp_path: Path, backend: str) -> Path:
    return tmp_path / ("schedule.json" if backend == "json" else "schedule.db")


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def store(tmp_path: Path, backend: str) -> Iterator[TaskStore]:
    s = open_store(store_path(tmp_path, backend))
    yield s
    s.close()
