"""Shared test configuration: Hypothesis profiles, and the end-of-run lines about what this
machine could not run. The derandomized `ci` profile is the default, so the README's test
command gives the same result on every machine; `dev` draws new examples on each run."""

import os
from collections.abc import Iterator

import pytest
from hypothesis import HealthCheck, settings

settings.register_profile(
    "ci",
    max_examples=150,
    derandomize=True,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
    print_blob=True,
)
settings.register_profile("dev", max_examples=100, deadline=None)
settings.register_profile("long", max_examples=5000, deadline=None)
# The Hypothesis fuzz suite at scale (tests/fuzz); the million-input run is tests/fuzz/run_long.py.
settings.register_profile(
    "fuzz", max_examples=20_000, deadline=None, suppress_health_check=list(HealthCheck)
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """One line per missing piece (PostgreSQL, Chromium, ...) that made tests skip: how many,
    what is missing and how to enable them (tests/missing.py)."""
    from tests.missing import summary_lines

    reasons = []
    for report in terminalreporter.stats.get("skipped", []):
        longrepr = getattr(report, "longrepr", None)
        if isinstance(longrepr, tuple) and len(longrepr) == 3:
            reasons.append(str(longrepr[2]))
    lines = summary_lines(reasons)
    if lines:
        terminalreporter.section("not run on this machine", sep="-", yellow=True)
        for line in lines:
            terminalreporter.write_line(line, yellow=True)


@pytest.fixture(autouse=True)
def _structlog_defaults() -> object:
    """Undo a command's logging set-up after each test: a CLI run in-process binds structlog
    to that test's captured stderr, which is closed once the test ends, and every later log
    line (an access line of an in-process app, say) would fail on it."""
    yield
    import structlog

    structlog.reset_defaults()


@pytest.fixture(scope="module")
def database() -> Iterator[str]:
    """A fresh PostgreSQL database for one test module, dropped after it (``tests/pg.py``:
    skips without a server, fails under ``CI=true``). Only tests that ask for it connect."""
    from tests import pg

    yield from pg.fresh_database()


@pytest.fixture
def url(database: str) -> str:
    """The module's PostgreSQL database, emptied before each test."""
    from tests import pg

    pg.reset(database)
    return database
