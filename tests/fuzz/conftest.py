"""Close the fuzz environments (event loops, open logs and stores) when the session ends."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.fuzz.envs import close_all


@pytest.fixture(scope="session", autouse=True)
def _close_environments() -> Iterator[None]:
    yield
    close_all()
