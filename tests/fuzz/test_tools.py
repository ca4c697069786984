"""Fuzz every tool's arguments: session-local tools through a BatchSession on a temp log
(healthy or damaged), host tools and remote operations through a HostService on a temp store
(JSON and SQLite) with a virtual now."""

from __future__ import annotations

from typing import Any

from hypothesis import example, given

from tests.fuzz.gen import T0
from tests.fuzz.targets import TARGETS

_CREATE = {"prompt": "p", "title": "t", "after_seconds": 60}


@given(TARGETS["session_tools"].strategy())
def test_session_tools(item: Any) -> None:
    TARGETS["session_tools"].run(item)


# Regression: a session id the task document cannot hold ("") was written, and the store then
# refused to open (invalid-record); a lone surrogate reached SQLite's UTF-8 binding.
@example(("json", [("schedule_create", "", T0, _CREATE)]))
@example(("sqlite", [("schedule_create", "", T0, _CREATE)]))
@example(("sqlite", [("schedule_create", "\ud800", T0, _CREATE)]))
@example(("sqlite", [("schedule_delete", "s-1", T0, {"id": "\udc00"})]))
@example(("sqlite", [("schedule_update", "s-1", T0, {"id": "\udc00", "title": "x"})]))
@given(TARGETS["host_tools"].strategy())
def test_host_tools(item: Any) -> None:
    TARGETS["host_tools"].run(item)


# Regression: a remote id with a lone surrogate escaped as UnicodeEncodeError from SQLite.
@example(("sqlite", [("delete", T0, {"sessionId": "s-1", "id": "\udc00"})]))
@example(("sqlite", [("history", T0, {"sessionId": "s-1", "id": "\udc00", "limit": 5})]))
@example(("sqlite", [("list", T0, {"sessionId": "\udc00"})]))
@example(("sqlite", [("update", T0, {"sessionId": "s-1", "id": "\udc00", "expected": {}})]))
@given(TARGETS["host_remote"].strategy())
def test_host_remote(item: Any) -> None:
    TARGETS["host_remote"].run(item)
