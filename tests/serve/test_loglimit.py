"""Repeated log lines are rate-limited (schedlog.serve.loglimit), on a virtual clock."""

from __future__ import annotations

import logging

import pytest

from schedlog.serve.loglimit import RepeatLimiter, install


def test_a_burst_passes_then_repeats_are_counted_and_reported() -> None:
    now = [0.0]
    limiter = RepeatLimiter(burst=3, window_s=60, now=lambda: now[0])
    assert [limiter.admit("k") for _ in range(5)] == [0, 0, 0, None, None]
    assert limiter.admit('other <&"\ud800') == 0  # another key has its own window
    now[0] = 60.0
    assert limiter.admit("k") == 2  # the two dropped lines are reported on the next one


def test_the_filter_drops_repeats_on_a_stdlib_logger(caplog: pytest.LogCaptureFixture) -> None:
    limiter = RepeatLimiter(burst=2, window_s=60, now=lambda: 0.0)
    install(limiter, ["schedlog.test.loglimit"])
    log = logging.getLogger("schedlog.test.loglimit")
    with caplog.at_level(logging.WARNING, "schedlog.test.loglimit"):
        for _ in range(1000):
            log.warning("Invalid HTTP request received.")
    assert len(caplog.records) == 2
