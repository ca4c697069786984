"""``benchmarks/burst.py`` at a tiny size: the report's shape and its exactly-once check, never
its timings (docs/benchmarks.md#burst)."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest

from benchmarks import burst
from schedlog.cli._host import HostBatch

T = "2026-05-01T06:00:00.000Z"
RUN_KEYS = {
    "side",
    "mode",
    "store",
    "hosts",
    "reminders",
    "sessions",
    "p50_s",
    "p99_s",
    "p100_s",
    "followups",
    "missing",
    "doubled",
    "finished",
    "exit_codes",
    "load_avg_before",
    "round",
}


def _lines(text: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def test_a_tiny_burst_reports_every_reminder_once(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    argv = ["--reminders", "20", "--sessions", "4", "--margin", "1.5", "--poll-ms", "10"]
    code = burst.main([*argv, "--timeout", "120", "--dir", str(tmp_path)])
    header, run, summary = _lines(capsys.readouterr().out)
    assert code == 0
    assert set(header) == {"load_avg", "argv"}
    assert set(run) >= RUN_KEYS
    assert (run["mode"], run["store"], run["hosts"], run["side"]) == (
        "logs",
        "sqlite",
        1,
        "current",
    )
    assert (run["followups"], run["missing"], run["doubled"]) == (20, 0, 0)
    assert run["finished"] is True and run["exit_codes"] == [0] and run["errors"] == []
    for name in ("p50_s", "p99_s", "p100_s"):
        assert isinstance(run[name], float)
    assert run["p50_s"] <= run["p99_s"] <= run["p100_s"]
    assert summary["summary"] == "current" and summary["runs"] == 1
    assert (summary["missing"], summary["doubled"]) == (0, 0)
    assert list(tmp_path.iterdir()) == []  # every run's store and logs are removed


def _delivered_logs(tmp_path: Path) -> tuple[Path, list[str]]:
    """Two sessions' logs with one follow-up each (hostile session ids and prompts)."""
    store, sessions = tmp_path / "store.db", tmp_path / "sessions"
    requests = [
        {
            "op": "schedule_create",
            "session": session,
            "now": "2026-05-01T05:59:00.000Z",
            "args": {"prompt": f'<&"\U0001f600 {i}', "title": '<b>&amp;"', "at": T},
        }
        for i, session in enumerate(['<a href="&">', "\u00e9" * 40])
    ]
    requests.append({"op": "tick", "now": T})
    batch = HostBatch(str(store), str(sessions))
    out = io.StringIO()
    batch.serve([json.dumps(r) for r in requests], out)
    batch.close()
    ids = [line["ok"]["id"] for line in _lines(out.getvalue())[:2]]
    return sessions, ids


def test_the_exactly_once_check_counts_doubled_and_missing(tmp_path: Path) -> None:
    sessions, ids = _delivered_logs(tmp_path)
    assert burst.check_logs(sessions, set(ids)) == {"followups": 2, "missing": 0, "doubled": 0}
    missing = burst.check_logs(sessions, {*ids, "schedule-never-created"})
    assert (missing["missing"], missing["doubled"]) == (1, 0)
    log = sorted(sessions.glob("*.jsonl"))[0]
    followup = log.read_bytes().splitlines(keepends=True)[-1]
    with log.open("ab") as stream:
        stream.write(followup)  # the same message twice: its id and its member are doubled
    doubled = burst.check_logs(sessions, set(ids))
    assert (doubled["followups"], doubled["missing"], doubled["doubled"]) == (3, 0, 2)


def test_the_log_watch_reads_only_whole_new_lines(tmp_path: Path) -> None:
    sessions, ids = _delivered_logs(tmp_path)
    log = sorted(sessions.glob("*.jsonl"))[0]
    whole = log.read_bytes()
    log.write_bytes(whole[:-20])  # a torn last line is not counted until it is complete
    watch = burst.LogWatch(sessions, set(ids))
    watch.poll()
    assert len(watch.seen) == 1 and not watch.complete()
    log.write_bytes(whole + b"\n")
    watch.poll()
    assert watch.complete() and set(watch.seen) == set(ids)


def test_lateness_shares_of_all_expected() -> None:
    target_ms = 1_000_000
    stamps = [1000.0 + i / 10 for i in range(1, 101)]  # 0.1 s .. 10 s late
    assert burst.lateness(stamps, target_ms, 100) == {"p50_s": 5.0, "p99_s": 9.9, "p100_s": 10.0}
    # Half of them never arrived: 50% is the last one seen, 99% and 100% never happened.
    assert burst.lateness(stamps[:50], target_ms, 100) == {
        "p50_s": 5.0,
        "p99_s": None,
        "p100_s": None,
    }
    assert burst.lateness([], target_ms, 0) == {"p50_s": None, "p99_s": None, "p100_s": None}


def test_the_api_probe_reports_from_a_process_of_its_own(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    argv = ["--reminders", "20", "--sessions", "4", "--margin", "5", "--poll-ms", "10"]
    code = burst.main([*argv, "--api-probe", "--timeout", "120", "--dir", str(tmp_path)])
    _, run, _ = _lines(capsys.readouterr().out)
    assert code == 0 and run["mode"] == "api-probe"
    assert (run["followups"], run["missing"], run["doubled"]) == (20, 0, 0)
    assert run["probe_failed"] == 0  # -1: the probe process gave no report
    assert {"probe_list_calls", "probe_create_calls"} <= set(run)
