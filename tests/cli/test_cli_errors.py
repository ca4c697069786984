"""Errors for the commonest command-line mistakes (issue 23 item 8, docs/cli.md#exit-status):
the right code, a message that names the flag and echoes the value (escaped), the nearest zone
names, one exit-status rule, and JSON on stdout with ``--json``. Each runs the real entry point
(``schedlog.cli.main.main``); stdout is captured, so it is not a terminal unless a test says so.
"""

from __future__ import annotations

import io
import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest

from schedlog.cli.main import main

AT = "2026-01-01T00:00:00Z"


class Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


def run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    try:
        code = main(argv)
    except SystemExit as exc:  # argparse's own usage errors
        code = int(exc.code or 0)
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def error_line(out: str) -> dict[str, Any]:
    (line,) = out.splitlines()
    value: dict[str, Any] = json.loads(line)["error"]
    return value


# --- rules next --------------------------------------------------------------------------------

NEXT_MISTAKES = [
    # (id, flags, code, fragments the message must hold)
    (
        "zone-typo",
        ["--daily", "09:00:00", "--time-zone", "Europe/Berln"],
        "invalid_time_zone",
        ["--time-zone", '"Europe/Berln"', "Europe/Berlin"],
    ),
    (
        "zone-markup",
        ["--daily", "09:00:00", "--time-zone", '<script>"x</script>'],
        "invalid_time_zone",
        ["--time-zone", '"<script>\\"x</script>"'],
    ),
    (
        "zone-huge",
        ["--daily", "09:00:00", "--time-zone", "A/" + "b" * 10_000],
        "invalid_time_zone",
        ["--time-zone", '"A/' + "b" * 50],
    ),
    (
        "bad-after",
        ["--every", "600", "--after", "tomorrow"],
        "invalid_request",
        ["--after", '"tomorrow"'],
    ),
    ("bad-at", ["--every", "600", "--at", "<b>"], "invalid_request", ["--at", '"<b>"']),
    ("empty-at", ["--every", "600", "--at", ""], "invalid_request", ["--at", '""']),
    (
        "at-and-after",
        ["--every", "600", "--at", AT, "--after", AT],
        "invalid_request",
        ["--at", "--after"],
    ),
    ("count-0", ["--every", "600", "--count", "0"], "invalid_request", ["--count", "Got 0"]),
    (
        "count-negative",
        ["--every", "600", "--count", "-3"],
        "invalid_request",
        ["--count", "Got -3"],
    ),
    ("count-huge", ["--every", "600", "--count", "1001"], "invalid_request", ["--count", "1000"]),
    ("cron-shape", ["--cron", "0 9 * *"], "invalid_rule", ["--cron", '"0 9 * *"']),
    ("cron-field", ["--cron", "0 9 * * MON"], "invalid_rule", ["--cron", "day-of-week", '"MON"']),
    ("daily-time", ["--daily", "25:00"], "invalid_rule", ["--daily", '"25:00"']),
    (
        "weekdays",
        ["--weekly", "09:00:00", "--weekdays", "8"],
        "invalid_rule",
        ["--weekdays", '"8"'],
    ),
    (
        "weekday-names",
        ["--weekly", "09:00:00", "--weekdays", "mon"],
        "invalid_request",
        ["--weekdays", '"mon"'],
    ),
    ("every-low", ["--every", "10"], "frequency_too_high", ["--every", "Got 10"]),
    ("no-rule", [], "invalid_request", ["--cron", "--every"]),
    ("record-json", ["--record", "{"], "invalid_request", ["--record", "not valid JSON"]),
    (
        "record-file",
        ["--record", "@/nonexistent/r.json"],
        "invalid_request",
        ["--record", "cannot read"],
    ),
    ("record-shape", ["--record", '{"id":"x"}'], "corrupt_schedule_log", ["--record"]),
]


@pytest.mark.parametrize(
    ("flags", "code", "fragments"),
    [m[1:] for m in NEXT_MISTAKES],
    ids=[m[0] for m in NEXT_MISTAKES],
)
def test_rules_next_mistakes_exit_2_with_json_on_stdout(
    flags: list[str], code: str, fragments: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["rules", "next", *flags, "--json"]
    if "--at" not in flags and "--after" not in flags:
        argv += ["--at", AT]
    status, out, err = run(argv, capsys)
    assert status == 2 and err == ""
    error = error_line(out)
    assert error["code"] == code
    for fragment in fragments:
        assert fragment in error["message"], error["message"]
    assert len(error["message"]) < 1000  # a huge value is echoed cut, not whole


@pytest.mark.parametrize("tty", [True, False], ids=["terminal", "piped"])
def test_rules_next_without_json_writes_the_error_to_stderr(
    tty: bool, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    if tty:
        monkeypatch.setattr(sys, "stdout", Tty())
    argv = ["rules", "next", "--daily", "09:00:00", "--time-zone", "Europe/Berln", "--at", AT]
    status, out, err = run(argv, capsys)
    assert status == 2 and out == ""
    if tty:
        assert sys.stdout.getvalue() == ""  # type: ignore[attr-defined]
    assert err == (
        "schedlog rules next: error: --time-zone must be UTC or a valid IANA Area/Location "
        'name. Got "Europe/Berln"; nearest names: Europe/Berlin, Europe/Dublin, '
        "Europe/London. (invalid_time_zone)\n"
    )


def test_rules_next_lone_surrogate_is_escaped(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["rules", "next", "--daily", "09:00:00", "--time-zone", "Eu\udcffrope", "--at", AT]
    status, _, err = run(argv, capsys)
    assert status == 2 and "\\udcff" in err and "\udcff" not in err


def test_rules_next_count_1_and_the_after_alias_still_work(
    capsys: pytest.CaptureFixture[str],
) -> None:
    status, out, _ = run(
        ["rules", "next", "--every", "600", "--after", AT, "--count", "1", "--json"], capsys
    )
    assert status == 0 and json.loads(out)["upcoming"] == ["2026-01-01T00:10:00.000Z"]


# --- the log commands ------------------------------------------------------------------------


def test_replay_of_a_directory_has_its_own_code(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = tmp_path / "<b>sessions"
    folder.mkdir()
    status, out, err = run(["replay", "--log", str(folder), "--json"], capsys)
    assert status == 2 and err == ""
    error = error_line(out)
    assert error["code"] == "session_log_not_regular"
    assert json.dumps(str(folder)) in error["message"] and "--log" in error["message"]
    status, out, err = run(["replay", "--log", str(folder)], capsys)
    assert status == 2 and out == "" and "(session_log_not_regular)" in err
    status, out, err = run(["repair", "--log", str(folder), "--json"], capsys)
    assert status == 2 and error_line(out)["code"] == "session_log_not_regular"


def test_validate_of_a_folder_without_logs_fails(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "notes.txt").write_text("not a log")
    status, out, err = run(["validate", str(tmp_path)], capsys)
    assert status == 2 and out == ""
    assert "holds no *.jsonl" in err and json.dumps(str(tmp_path)) in err
    status, out, err = run(["validate", str(tmp_path), "--json"], capsys)
    assert status == 2 and err == ""
    assert error_line(out)["code"] == "invalid_request"


def test_validate_of_a_missing_path_with_json(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    missing = tmp_path / "nope\n.jsonl"
    status, out, err = run(["validate", str(missing), "--json"], capsys)
    assert status == 2 and err == ""
    assert json.dumps(str(missing)) in error_line(out)["message"]


def test_repair_dry_run_says_it_wrote_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    log = tmp_path / "s.jsonl"
    header = {
        "type": "session/header",
        "version": 1,
        "sessionId": "s",
        "seedLength": 0,
        "parentSessionId": None,
    }
    log.write_bytes(json.dumps(header).encode() + b'\n{"ty')
    before = log.read_bytes()
    status, out, _ = run(["repair", "--log", str(log), "--dry-run"], capsys)
    report = json.loads(out)
    assert status == 0 and report["dryRun"] is True
    assert (report["truncatedBytes"], report["wouldTruncateBytes"]) == (0, 4)
    assert log.read_bytes() == before
    status, out, _ = run(["repair", "--log", str(log)], capsys)
    assert "dryRun" not in json.loads(out) and json.loads(out)["truncatedBytes"] == 4


# --- the host read commands and stores ---------------------------------------------------------


def make_store(tmp_path: Path) -> Path:
    store = tmp_path / "store.db"
    create = {
        "op": "schedule_create",
        "session": "s-1",
        "now": "2026-05-01T06:00:00Z",
        "args": {
            "prompt": "<b>p</b>",
            "title": "T\udcff<i>x</i>",
            "after_seconds": 60,
        },
    }
    import subprocess

    subprocess.run(
        [
            sys.executable,
            "-m",
            "schedlog.cli.main",
            "host",
            "batch",
            "--store",
            str(store),
            "--sessions",
            str(tmp_path / "sessions"),
        ],
        input=json.dumps(create) + "\n" + json.dumps(create) + "\n",
        text=True,
        check=True,
        capture_output=True,
    )
    return store


def test_catalog_prints_json_lines_when_piped_and_with_json(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store = make_store(tmp_path)
    for extra in ([], ["--json"]):
        status, out, _ = run(["host", "catalog", "--store", str(store), *extra], capsys)
        lines = out.splitlines()
        assert status == 0 and len(lines) == 2
        assert all(json.loads(line)["sessionId"] == "s-1" for line in lines)


def test_catalog_and_history_on_a_terminal_are_tables(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    store = make_store(tmp_path)
    out = Tty()
    monkeypatch.setattr(sys, "stdout", out)
    assert main(["host", "catalog", "--store", str(store)]) == 0
    assert out.getvalue().startswith("SCHEDULED AT")
    task_id = out.getvalue().splitlines()[1].split()[4]
    assert (
        main(["host", "history", "--store", str(store), "--session", "s-1", "--id", task_id]) == 0
    )
    assert "DELIVERED AT" in out.getvalue()
    assert (
        main(["host", "history", "--store", str(store), "--session", "s-2", "--id", task_id]) == 1
    )
    assert "(schedule_not_found)" in capsys.readouterr().err


def test_history_piped_is_json_and_a_bad_limit_is_a_usage_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store = make_store(tmp_path)
    status, out, _ = run(["host", "catalog", "--store", str(store)], capsys)
    task_id = json.loads(out.splitlines()[0])["id"]
    history = ["host", "history", "--store", str(store), "--session", "s-1", "--id", task_id]
    status, out, _ = run(history, capsys)
    assert status == 0 and json.loads(out)["records"] == []
    status, out, _ = run([*history, "--limit", "0", "--json"], capsys)
    assert status == 2 and error_line(out)["code"] == "invalid_rule"
    assert "--limit 0" in error_line(out)["message"]


def test_a_store_in_a_missing_directory(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    store = tmp_path / "no-such-dir" / "store.db"
    status, out, _ = run(["host", "catalog", "--store", str(store)], capsys)
    assert status == 1 and error_line(out)["code"] == "store-not-found"
    import subprocess

    served = subprocess.run(
        [
            sys.executable,
            "-m",
            "schedlog.cli.main",
            "host",
            "run",
            "--store",
            str(store),
            "--sessions",
            str(tmp_path),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert served.returncode == 1
    error = json.loads(served.stderr.splitlines()[-1])["error"]
    assert error["code"] == "store-not-found" and "directory" in error["message"]
    assert not (tmp_path / "no-such-dir").exists()


def test_psycopg_missing_and_a_refused_connection(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    url = "postgresql://nobody@127.0.0.1:1/none"
    status, out, _ = run(["validate", "--store", url], capsys)
    report = json.loads(out)
    assert status == 1 and report["error"]["code"] in ("store-unreachable", "backend-unavailable")
    if report["error"]["code"] == "store-unreachable":
        assert "127.0.0.1" in report["error"]["message"]
    status, out, _ = run(["host", "catalog", "--store", url], capsys)
    assert status == 1 and error_line(out)["code"] == report["error"]["code"]
    monkeypatch.setitem(sys.modules, "psycopg", None)  # as on a machine without it
    status, out, _ = run(["host", "catalog", "--store", url], capsys)
    assert status == 1
    error = error_line(out)
    assert error["code"] == "backend-unavailable" and "schedlog[postgres]" in error["message"]


def test_migrate_dry_run_is_marked(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    log = tmp_path / "s.jsonl"
    header = {
        "type": "session/header",
        "version": 1,
        "sessionId": "s",
        "seedLength": 0,
        "parentSessionId": None,
    }
    log.write_text(json.dumps(header) + "\n")
    store = tmp_path / "store.db"
    status, out, _ = run(["migrate", "--log", str(log), "--store", str(store), "--dry-run"], capsys)
    assert status == 0 and json.loads(out) == {"dryRun": True, "wouldCreate": [], "skipped": []}
    status, out, _ = run(["migrate", "--log", str(log), "--store", str(store)], capsys)
    assert json.loads(out) == {"created": [], "skipped": []}
    assert os.path.exists(store)
