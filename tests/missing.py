"""Tests that need something this machine may lack skip through :func:`missing`, and the run
ends with one line per missing piece (``pytest_terminal_summary`` in ``tests/conftest.py``):
how many tests it skipped, what is missing and how to enable them. Under ``CI=true`` a missing
piece fails the test instead: CI must run everything.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from typing import Final, NoReturn

import pytest

#: Each piece a test may need, and how to enable the tests that need it.
PIECES: Final = {
    "PostgreSQL": (
        "start a server on 127.0.0.1:5432 with trust auth for the user postgres, or set "
        "SCHEDLOG_TEST_POSTGRES=postgresql://USER@HOST:PORT/DB (a role that may CREATE DATABASE)"
    ),
    "Chromium": "apt-get install -y chromium, or set SCHEDLOG_CHROMIUM=/path/to/chromium",
    "Playwright": "pip install -e '.[test]' (it includes Playwright)",
    "serve extra": "pip install -e '.[test]' (it includes the serve extra)",
    "build tools": "pip install -e '.[dev]' (build, twine, hatchling)",
    "systemd-analyze": "apt-get install -y systemd",
}

#: The reason prefix that marks a skip as :func:`missing`'s: ``[needs PostgreSQL] ...``.
_TAG: Final = re.compile(r"\[needs ([^\]]+)\] (.*)", re.S)


def missing(piece: str, detail: str, *, module: bool = False) -> NoReturn:
    """Skip the calling test (or module) because ``piece`` is missing; fail under CI=true."""
    if piece not in PIECES:
        raise ValueError(f"unknown piece {piece!r}")
    if os.environ.get("CI") == "true":
        pytest.fail(f"{piece} is missing: {detail} (under CI=true these tests must run)")
    pytest.skip(f"[needs {piece}] {detail}", allow_module_level=module)


def summary_lines(reasons: Iterable[str]) -> list[str]:
    """One line per missing piece among the skip ``reasons``: the count, the first detail
    given, and how to enable them. Other skips are not counted here."""
    counts: dict[str, int] = {}
    details: dict[str, str] = {}
    for reason in reasons:
        m = _TAG.search(reason)
        if m is None:
            continue
        piece = m.group(1)
        counts[piece] = counts.get(piece, 0) + 1
        details.setdefault(piece, " ".join(m.group(2).split()))
    return [
        f"SKIPPED {counts[p]} test{'s' * (counts[p] != 1)} needing {p}: {details[p]}. "
        f"To run them: {PIECES.get(p, 'see the test')}."
        for p in sorted(counts)
    ]
