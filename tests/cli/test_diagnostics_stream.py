"""Diagnostics configured by one in-process CLI call follow ``sys.stderr`` as it is at each
write: a later caller that swapped stderr (pytest's capture, an embedding host) and closed the
old stream gets the lines, instead of ``ValueError: I/O operation on closed file``."""

from __future__ import annotations

import io

import pytest
import structlog

from schedlog.cli.common import configure_diagnostics
from schedlog.cli.run_log import configure_run_logging


@pytest.mark.parametrize("configure", ["diagnostics", "run"])
def test_lines_go_to_the_stderr_of_the_moment(
    configure: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    first, second = io.StringIO(), io.StringIO()
    monkeypatch.setattr("sys.stderr", first)
    if configure == "diagnostics":
        configure_diagnostics()
    else:
        configure_run_logging("json")
    first.close()  # the caller that configured it is gone, with its stream
    monkeypatch.setattr("sys.stderr", second)
    structlog.get_logger("schedlog.test").warning("probe.line", message="<b>x</b> \ud800")
    assert '"event":"probe.line"' in second.getvalue().replace(" ", "")
    structlog.reset_defaults()
