"""``schedlog migrate`` (docs/operations.md#migration): legacy reminders recreated as host tasks,
idempotently."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pytest

from schedlog.cli import host_cmd
from schedlog.eventlog.changes import CreateChange
from schedlog.host.migrate import derive_title
from schedlog.host.stores.open import open_store
from schedlog.invariant.appender import LogAppender
from schedlog.rules.record import Record
from tests.host.helpers import T0, sha256_files

EVERY = Record(
    id="schedule-1", kind="every", prompt="Drink water", every_seconds=600, scheduled_at=T0
)
AFTER = Record(
    id="schedule-2",
    kind="after",
    prompt="Call Bob\nabout the invoice",
    after_seconds=300,
    scheduled_at=T0 + 1,
)


def make_log(path: Path) -> None:
    with LogAppender.open(path, session_id="s-legacy") as log:
        log.append_change(CreateChange(schedule=EVERY))
        log.append_change(CreateChange(schedule=AFTER))
        assert log.flush()


def run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, object]:
    p = argparse.ArgumentParser(prog="schedlog")
    host_cmd.register(p.add_subparsers(dest="command", required=True))
    args = p.parse_args(argv)
    code = args.func(args)
    return code, json.loads(capsys.readouterr().out)


def test_migrate_idempotent_and_log_untouched(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    log, store = tmp_path / "s.jsonl", tmp_path / "schedule.json"
    make_log(log)
    before = sha256_files(log)
    argv = ["migrate", "--log", str(log), "--store", str(store)]
    code, dry = run([*argv, "--dry-run"], capsys)
    assert code == 0 and not store.exists()
    assert isinstance(dry, dict) and dry["dryRun"] is True and "created" not in dry
    assert [c["legacyId"] for c in dry["wouldCreate"]] == ["schedule-1", "schedule-2"]
    code, result = run(argv, capsys)
    assert code == 0
    assert isinstance(result, dict) and result["skipped"] == []
    assert [c["legacyId"] for c in result["created"]] == ["schedule-1", "schedule-2"]
    s = open_store(store)
    try:
        tasks = [st.task for st in s.tasks()]
    finally:
        s.close()
    assert [t.session_id for t in tasks] == ["s-legacy", "s-legacy"]
    assert [(t.record.kind, t.record.title, t.record.scheduled_at) for t in tasks] == [
        ("every", "Drink water", T0),
        ("after", "Call Bob", T0 + 1),
    ]
    assert tasks[0].record.every_seconds == 600 and tasks[1].record.after_seconds == 300
    assert tasks[0].id.startswith("schedule-") and tasks[0].id != "schedule-1"
    code, again = run(argv, capsys)
    assert again == {"created": [], "skipped": ["schedule-1", "schedule-2"]}
    assert sha256_files(log) == before


def test_derive_title() -> None:
    assert derive_title(EVERY) == "Drink water"
    long = Record(id="x", kind="at", prompt="a" * 119 + "\U0001f600b", scheduled_at=0)
    assert derive_title(long) == "a" * 119  # the surrogate pair is not split
    titled = Record(id="x", kind="at", title="Kept", prompt="p", scheduled_at=0)
    assert derive_title(titled) == "Kept"
    spaced = Record(id="x", kind="at", prompt="x" + " " * 130 + "y", scheduled_at=0)
    assert derive_title(spaced) == "x"
