"""Fixtures of the web page tests: a live server per test, one Chromium per test session."""

from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from tests.host.helpers import T0
from tests.web.chromium import CHROMIUM_ARGS
from tests.web.harness import (
    Live,
    chromium_path,
    live_server,
    require_playwright,
    require_serve,
)

VIEWER_ZONE = "America/New_York"


class ConsoleLog:
    """Every console error and uncaught exception of a page. A test that provokes an error
    status on purpose (409, 422) allows it: Chromium logs each such response as
    "Failed to load resource"; anything else fails the test at teardown."""

    def __init__(self) -> None:
        self.errors: list[str] = []
        self.allowed: set[int] = set()

    def allow_status(self, *statuses: int) -> None:
        self.allowed.update(statuses)

    def unexpected(self) -> list[str]:
        out = []
        for text in self.errors:
            m = re.search(r"status of (\d{3})", text)
            if m and int(m.group(1)) in self.allowed:
                continue
            out.append(text)
        return out


@pytest.fixture
def live(tmp_path: Path) -> Iterator[Live]:
    require_serve()
    with live_server(tmp_path, T0) as running:
        yield running


@pytest.fixture(scope="session")
def browser() -> Iterator[Any]:
    require_serve()
    require_playwright()
    executable = chromium_path()
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        chromium = pw.chromium.launch(executable_path=executable, args=CHROMIUM_ARGS)
        try:
            yield chromium
        finally:
            chromium.close()


@pytest.fixture
def console() -> ConsoleLog:
    return ConsoleLog()


def open_context(browser: Any, console: ConsoleLog, width: int = 1440, height: int = 900) -> Any:
    context = browser.new_context(
        viewport={"width": width, "height": height},
        timezone_id=VIEWER_ZONE,
        locale="en-US",
        reduced_motion="reduce",
    )
    # The page's relative hints ("in 3 h") read the browser clock: pin it to the server's
    # virtual start so the screenshots and the texts are the same on every run.
    context.clock.set_fixed_time(datetime.fromtimestamp(T0 / 1000, UTC))
    context.on("weberror", lambda e: console.errors.append(f"pageerror: {e.error}"))
    context.on(
        "console", lambda m: m.type == "error" and console.errors.append(f"console: {m.text}")
    )
    return context


@pytest.fixture
def page(browser: Any, console: ConsoleLog) -> Iterator[Any]:
    context = open_context(browser, console)
    page = context.new_page()
    page.set_default_timeout(10_000)
    try:
        yield page
    finally:
        context.close()
    assert console.unexpected() == [], console.unexpected()


def signed_in_url(live: Live, hash_path: str = "") -> str:
    """The URL ``host serve`` prints (a fresh one-time sign-in code in the fragment),
    optionally then a route."""
    if hash_path:
        return f"{live.base}/{hash_path}"
    return f"{live.base}/#code={live.app.state.signin.issue()}"
