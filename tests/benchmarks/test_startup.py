"""``benchmarks/startup.py`` at a tiny size: a real ``host run`` delivers the one due reminder
of a cached store, and the CPU mode reports its figures; never its timings
(docs/benchmarks.md#startup)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from benchmarks import startup


def _lines(text: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def test_a_tiny_store_starts_and_delivers(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert startup.main(["--tasks", "40", "--rounds", "1", "--cache", str(tmp_path)]) == 0
    runs = [line for line in _lines(capsys.readouterr().out) if "side" in line]
    assert len(runs) == 1 and runs[0]["errors"] == []
    assert runs[0]["to_delivered_s"] is not None and runs[0]["to_started_s"] is not None
    assert runs[0]["cpu_to_delivered_s"] is not None
    assert (tmp_path / "schedlog-startup-40.db").exists()  # cached for the next run
    assert startup.main(["--tasks", "40", "--rounds", "1", "--cache", str(tmp_path), "--cpu"]) == 0
    cpu = [line for line in _lines(capsys.readouterr().out) if "side" in line]
    assert cpu[0]["active"] == 40 and cpu[0]["total_cpu_s"] >= 0
    assert cpu[0]["early_open_cpu_s"] >= 0
