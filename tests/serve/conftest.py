"""Fixtures of the HTTP API tests."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest


@pytest.fixture
def api(tmp_path: Path) -> Iterator[Any]:
    """A running application (:class:`tests.serve.support.Api`)."""
    from tests.serve.support import running_api  # the serve extra loads only when used

    with running_api(tmp_path) as running:
        yield running
