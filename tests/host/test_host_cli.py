"""``schedlog host batch`` (docs/protocol.md#batch-host, docs/quickstart.md#create) through its
handler, and the read commands."""

from __future__ import annotations

import argparse
import io
import json
from pathlib import Path
from typing import Any

import pytest

from schedlog.cli import host_cmd
from schedlog.cli.host_cmd import HostBatch
from schedlog.eventlog.reader import read_log
from schedlog.host.sessions import encode_session_id
from tests.host.helpers import sha256_files


def batch(tmp_path: Path, requests: list[Any], store: str = "schedule.db") -> list[Any]:
    hb = HostBatch(str(tmp_path / store), str(tmp_path / "sessions"))
    out = io.StringIO()
    try:
        hb.serve([r if isinstance(r, str) else json.dumps(r) for r in requests], out)
    finally:
        hb.close()
    return [json.loads(line) for line in out.getvalue().splitlines()]


CREATE = {
    "op": "schedule_create",
    "session": "s-1",
    "now": "2026-05-01T06:00:00Z",
    "args": {
        "prompt": "Post the standup notes",
        "title": "Standup",
        "daily": {"time": "09:30:00", "time_zone": "Europe/Berlin"},
    },
}


@pytest.mark.parametrize("store", ["schedule.db", "schedule.json"])
def test_spec_example(tmp_path: Path, store: str) -> None:
    created, ticked, listed = batch(
        tmp_path,
        [
            CREATE,
            {"op": "tick", "now": "2026-05-03T08:00:00Z"},
            {"op": "list", "now": "2026-05-03T08:00:00Z", "args": {"sessionId": "s-1"}},
        ],
        store,
    )
    view = created["ok"]
    rid = view.pop("id")
    assert rid.startswith("schedule-")
    assert view == {
        "kind": "daily",
        "title": "Standup",
        "prompt": "Post the standup notes",
        "time": "09:30:00.000",
        "timeZone": "Europe/Berlin",
        "scheduledAt": "2026-05-01T07:30:00.000Z",
        "state": "scheduled",
        "deliveryMode": "host",
    }
    (delivery,) = ticked["ok"]["delivered"]
    assert list(delivery) == ["sessionId", "messageId", "text", "reminders"]
    assert delivery["sessionId"] == "s-1"
    assert delivery["messageId"].startswith("schedule-message-")
    assert delivery["text"].startswith("[SCHEDULE REMINDER BATCH]\n")
    assert delivery["reminders"] == [{"id": rid, "occurrenceAt": "2026-05-03T07:30:00.000Z"}]
    assert listed["ok"][0]["scheduledAt"] == "2026-05-04T07:30:00.000Z"
    # the follow-up is in the session's log, created on first delivery
    contents = read_log(tmp_path / "sessions" / "s-1.jsonl")
    assert contents.header is not None and contents.header.session_id == "s-1"
    (event,) = contents.events
    assert event.type == "message/followup"
    assert event.data["messageId"] == delivery["messageId"]


def test_deliveries_only_on_tick(tmp_path: Path) -> None:
    due = {**CREATE, "args": {"prompt": "p", "title": "t", "after_seconds": 60}}
    out = batch(
        tmp_path,
        [
            due,
            {**due, "now": "2026-05-01T07:00:00Z"},  # the first is due: a create does not deliver
            {"op": "schedule_list", "session": "s-1", "now": "2026-05-01T07:00:00Z", "args": {}},
        ],
    )
    assert [v["state"] for v in out[2]["ok"]] == ["overdue", "scheduled"]
    assert not (tmp_path / "sessions").exists()


def test_invalid_requests(tmp_path: Path) -> None:
    out = batch(
        tmp_path,
        [
            "not json",
            {"op": "nope"},
            {"op": "schedule_list", "now": "2026-05-01T06:00:00Z", "args": {}},
            {"op": "schedule_list", "session": "s", "now": "yesterday", "args": {}},
            {"op": "catalog", "now": "2026-05-01T06:00:00Z", "args": []},
            {"op": "history", "now": "2026-05-01T06:00:00Z", "args": {"limit": 0}},
            {"op": "catalog", "now": "2026-05-01T06:00:00Z", "args": {}},
        ],
    )
    codes = [line.get("error", {}).get("code") for line in out]
    assert codes == [
        "invalid_request",
        "invalid_request",
        "invalid_request",
        "invalid_request",
        "invalid_request",
        "invalid_rule",
        None,
    ]
    assert out[-1] == {"ok": []}


@pytest.mark.parametrize(
    ("name", "content", "code"),
    [
        ("schedule.json", b'{"unit":{"name":"schedule","version":2}}', "malformed-medium"),
        (
            "schedule.json",
            b'{"unit":{"name":"schedule","version":2},"global":null,"tables":{"tasks":{}}}',
            "version-mismatch",
        ),
        ("schedule.db", b"SQLite format 3\x00" + b"\x01" * 200, "malformed-medium"),
    ],
)
def test_open_failure_answers_every_line(
    tmp_path: Path, name: str, content: bytes, code: str
) -> None:
    path = tmp_path / name
    path.write_bytes(content)
    before = sha256_files(path, Path(f"{path}-wal"), Path(f"{path}-shm"))
    out = batch(tmp_path, [CREATE, "garbage", {"op": "tick", "now": "x"}], name)
    assert [line["error"]["code"] for line in out] == [code, code, code]
    assert sha256_files(path, Path(f"{path}-wal"), Path(f"{path}-shm")) == before


def test_session_history_and_isolation_through_batch(tmp_path: Path) -> None:
    every = {**CREATE, "args": {"prompt": "p", "title": "t", "every_seconds": 60}}
    created = batch(tmp_path, [every])[0]["ok"]
    rid = created["id"]
    ticks = [{"op": "tick", "now": f"2026-05-01T06:0{m}:00Z"} for m in range(1, 6)]
    out = batch(
        tmp_path,
        [
            *ticks,
            {
                "op": "history",
                "now": "2026-05-01T07:00:00Z",
                "args": {"sessionId": "s-1", "id": rid, "limit": 2},
            },
            {
                "op": "history",
                "now": "2026-05-01T07:00:00Z",
                "args": {"sessionId": "s-2", "id": rid, "limit": 2},
            },
            {
                "op": "schedule_delete",
                "session": "s-2",
                "now": "2026-05-01T07:00:00Z",
                "args": {"id": rid},
            },
        ],
    )
    assert all(len(line["ok"]["delivered"]) == 1 for line in out[:5])
    page = out[5]["ok"]
    assert [r["scheduledAt"] for r in page["records"]] == [
        "2026-05-01T06:05:00.000Z",
        "2026-05-01T06:04:00.000Z",
    ]
    assert page["nextBefore"] == page["records"][1]["messageId"]
    assert out[6] == {"ok": {"id": rid, "code": "schedule_not_found"}}
    assert out[7]["ok"]["code"] == "schedule_not_found"


def test_archive_ops(tmp_path: Path) -> None:
    out = batch(
        tmp_path,
        [
            CREATE,
            {"op": "archive_activity", "now": "2026-05-01T06:00:00Z", "args": {"sessionId": "s-1"}},
            {"op": "archive_stop", "now": "2026-05-01T06:00:00Z", "args": {"sessionId": "s-1"}},
            {"op": "archive_activity", "now": "2026-05-01T06:00:00Z", "args": {"sessionId": "s-1"}},
        ],
    )
    rid = out[0]["ok"]["id"]
    assert out[1] == {"ok": {"kind": "schedule", "items": [{"id": rid, "label": "Standup"}]}}
    assert out[2] == {"ok": {"deleted": [rid]}}
    assert out[3] == {"ok": None}


def test_session_id_encoding() -> None:
    assert encode_session_id("s-1_a.b") == "s-1_a.b"
    assert encode_session_id(".hidden") == "%2Ehidden"
    assert encode_session_id("a/b c") == "a%2Fb%20c"
    assert encode_session_id("é") == "%C3%A9"


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="schedlog")
    host_cmd.register(p.add_subparsers(dest="command", required=True))
    return p


@pytest.mark.parametrize(
    "argv",
    [
        ["host", "batch", "--store", "s.db"],
        ["host", "batch", "--store", "s.db", "--sessions", "d", "--history-days", "0"],
        ["host", "batch", "--store", "s.db", "--sessions", "d", "--history-records", "10001"],
    ],
)
def test_usage_errors_exit_2(argv: list[str]) -> None:
    with pytest.raises(SystemExit) as info:
        parser().parse_args(argv)
    assert info.value.code == 2


def test_catalog_and_history_commands(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rid = batch(tmp_path, [CREATE, {"op": "tick", "now": "2026-05-01T08:00:00Z"}])[0]["ok"]["id"]
    store = str(tmp_path / "schedule.db")
    args = parser().parse_args(["host", "catalog", "--store", store, "--json"])
    assert args.func(args) == 0
    (line,) = capsys.readouterr().out.splitlines()  # JSON Lines: one entry a line
    entry = json.loads(line)
    assert entry["lastDelivery"]["scheduledAt"] == "2026-05-01T07:30:00.000Z"
    args = parser().parse_args(["host", "catalog", "--store", store])
    assert args.func(args) == 0
    assert "Standup" in capsys.readouterr().out
    argv = ["host", "history", "--store", store, "--session", "s-1", "--id", rid]
    args = parser().parse_args(argv)
    assert args.func(args) == 0
    assert "2026-05-01T07:30:00.000Z" in capsys.readouterr().out
    args = parser().parse_args([*argv[:4], "--session", "s-2", "--id", rid])
    assert args.func(args) == 1
    assert json.loads(capsys.readouterr().out)["code"] == "schedule_not_found"
