"""Fixtures for the host tests: a store on each backend (the contract suite's parameter).

The ``postgresql`` parameter runs on a fresh database per test module (tests/pg.py), reset and
migrated before each test; it skips with a message when no server is reachable (not under CI).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from schedlog.host.stores.base import TaskStore
from schedlog.host.stores.open import open_store
from tests import pg

BACKENDS = ("sqlite", "json", "postgresql")
#: The current module's PostgreSQL database (set by the ``backend`` fixture).
_PG: dict[str, str] = {}
#: Contract items about a file store owned by one service, and why they do not apply.
FILE_ONLY = {
    "test_files_are_owner_only": "a PostgreSQL store has no files",
    "test_exclusive_lock": "a PostgreSQL store is shared by several services by design",
}


def store_path(tmp_path: Path, backend: str) -> Path | str:
    if backend == "postgresql":
        return _PG["url"]
    return tmp_path / ("schedule.json" if backend == "json" else "schedule.db")


@pytest.fixture(scope="module")
def pg_database() -> Iterator[str]:
    yield from pg.fresh_database()


#: The backends that can hold a paused task (the upstream JSON document cannot; pausing there
#: answers ``pause_unsupported``, tested on its own).
PAUSABLE_BACKENDS = ("sqlite", "postgresql")


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest) -> str:
    return _backend(request, str(request.param))


@pytest.fixture(params=PAUSABLE_BACKENDS)
def pausable_backend(request: pytest.FixtureRequest) -> str:
    return _backend(request, str(request.param))


def _backend(request: pytest.FixtureRequest, name: str) -> str:
    if name == "postgresql":
        if request.node.originalname in FILE_ONLY:
            pytest.skip(FILE_ONLY[request.node.originalname])
        url = str(request.getfixturevalue("pg_database"))
        pg.reset(url)
        _PG["url"] = url
    return name


@pytest.fixture
def store(tmp_path: Path, backend: str) -> Iterator[TaskStore]:
    s = open_store(store_path(tmp_path, backend))
    yield s
    s.close()
