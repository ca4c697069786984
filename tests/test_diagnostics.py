"""Every diagnostic event follows the one schema of :mod:`schedlog.diagnostics`, and
docs/diagnostics.md documents exactly that table."""

from __future__ import annotations

import ast
import io
import json
from pathlib import Path

import pytest

from schedlog.cli.common import run_batch
from schedlog.diagnostics import (
    EVENTS,
    failure_fields,
    instant_field,
    recovered_fields,
    sent_fields,
)
from schedlog.eventlog.followups import Member

ROOT = Path(__file__).resolve().parents[1]
LEVELS = frozenset({"debug", "info", "warning", "error", "exception", "critical"})
#: The field helpers, by name: the keys they contribute.
HELPERS = {
    "recovered_fields": set(recovered_fields(Member("a", 0), "m")),
    "failure_fields": set(failure_fields("x", "y")),
    "sent_fields": set(sent_fields("s", "m", [Member("a", 0)])),
}


def logging_calls() -> list[tuple[str, int, str, str, set[str]]]:
    """``(file, line, level, event, keys)`` of every ``<logger>.<level>("event", ...)`` call."""
    found = []
    for path in sorted((ROOT / "schedlog").rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if not (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr in LEVELS
                and isinstance(node.func.value, ast.Name)
                and node.func.value.id in {"log", "_log", "logger"}
            ):
                continue
            assert node.args and isinstance(node.args[0], ast.Constant), (path, node.lineno)
            keys: set[str] = set()
            for kw in node.keywords:
                if kw.arg is not None:
                    keys.add(kw.arg)
                else:
                    call = kw.value
                    assert isinstance(call, ast.Call) and isinstance(call.func, ast.Name)
                    keys |= HELPERS[call.func.id]
            rel = str(path.relative_to(ROOT))
            found.append((rel, node.lineno, node.func.attr, str(node.args[0].value), keys))
    return found


def test_every_logging_call_uses_a_documented_event_level_and_field_set() -> None:
    calls = logging_calls()
    assert len(calls) >= 12  # the scan sees the package's calls
    for rel, line, level, event, keys in calls:
        spec = EVENTS.get(event)
        assert spec is not None, f"{rel}:{line}: {event} is not in schedlog.diagnostics.EVENTS"
        assert level == spec.level, f"{rel}:{line}: {event} is {spec.level}, logged as {level}"
        assert keys == {*spec.fields, "message"}, f"{rel}:{line}: {event} fields {sorted(keys)}"
    # every structlog event in the table is logged somewhere (batch.internal_error is printed)
    assert {event for *_, event, _ in calls} | {"batch.internal_error"} == set(EVENTS)


def test_field_names_are_camel_case_wire_names() -> None:
    for spec in EVENTS.values():
        for name in spec.fields:
            assert "_" not in name, name


def test_instant_fields_are_canonical_when_representable() -> None:
    assert instant_field(0) == "1970-01-01T00:00:00.000Z"
    assert instant_field(10**20) == 10**20
    assert recovered_fields(Member("schedule-1", 1_777_626_000_000), "schedule-message-x") == {
        "id": "schedule-1",
        "occurrenceAt": "2026-05-01T09:00:00.000Z",
        "messageId": "schedule-message-x",
        "message": "schedule: reminder schedule-1 at 2026-05-01T09:00:00.000Z already delivered"
        " as schedule-message-x",
    }


def test_batch_internal_error_line_follows_the_schema(capsys: pytest.CaptureFixture[str]) -> None:
    def boom(request: object) -> object:
        raise RuntimeError("boom")

    out = io.StringIO()
    run_batch(['{"op":"x"}'], {"x": boom}, out)
    assert json.loads(out.getvalue()) == {
        "error": {"code": "internal_error", "message": "The schedule operation failed."}
    }
    (line,) = capsys.readouterr().err.splitlines()
    value = json.loads(line)
    spec = EVENTS["batch.internal_error"]
    assert value.keys() == {"event", "level", *spec.fields, "message"}
    assert value["event"] == "batch.internal_error" and value["level"] == spec.level


def _doc_rows() -> dict[str, tuple[str, tuple[str, ...]]]:
    text = (ROOT / "docs" / "diagnostics.md").read_text(encoding="utf-8")
    rows: dict[str, tuple[str, tuple[str, ...]]] = {}
    for line in text.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 5 and cells[0].startswith("`") and cells[0] != "`event`":
            fields = tuple(f.strip("` ") for f in cells[2].split(",") if f.strip("` -"))
            rows[cells[0].strip("`")] = (cells[1], fields)
    return rows


def test_docs_list_exactly_the_table() -> None:
    assert _doc_rows() == {name: (s.level, s.fields) for name, s in EVENTS.items()}
