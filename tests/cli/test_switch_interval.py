"""``host serve`` sets the interpreter's switch interval, ``host run`` keeps Python's
(cli/run_log.py, docs/decisions.md "Pipelined runs")."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from schedlog.cli import run_log


@pytest.mark.parametrize("command", ["run", "serve"])
def test_host_serve_sets_the_switch_interval_host_run_keeps_pythons(
    tmp_path: Path, command: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from schedlog.cli.main import main

    before = sys.getswitchinterval()
    try:
        sys.setswitchinterval(0.005)
        store = str(tmp_path / "s.db")
        args = ["host", command, "--store", store, "--sessions", str(tmp_path / "sessions")]
        # An out-of-range flag: refused after the interval is set, before anything opens.
        assert main([*args, "--retry-base-ms", "0"]) == 2
        expected = run_log.SERVE_SWITCH_INTERVAL_S if command == "serve" else 0.005
        assert sys.getswitchinterval() == pytest.approx(expected)
    finally:
        sys.setswitchinterval(before)
