"""The golden fixtures of valid logs, checked independently of the code that wrote them.

``fixtures/logs/*.expected.json`` record what the CLI printed when the fixtures were made. For
every fixture whose log is valid, this recomputes the active set and the seen ids from the raw
file with the standard library only (``json``, ``datetime``) and the plain model fold of the
state-machine tests (:class:`tests.invariant.test_state_machine.Model`), and compares them with
the recorded ``replay`` output.
"""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path
from typing import Any

import pytest

from tests.invariant.test_state_machine import Model

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "logs"
VALID = sorted(
    p.name.removesuffix(".expected.json")
    for p in FIXTURES.glob("*.expected.json")
    if json.loads(p.read_text(encoding="utf-8"))["validate"]["ok"]
)
EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)


def epoch_ms(text: str) -> int:
    assert text.endswith("Z")
    instant = dt.datetime.fromisoformat(text[:-1] + "+00:00")
    return (instant - EPOCH) // dt.timedelta(milliseconds=1)


def model_of(data: bytes) -> tuple[Model, dict[str, dict[str, Any]]]:
    """The model fold of the owned suffix, and each created record as written."""
    lines = data.split(b"\n")[:-1]  # the bytes after the last newline are a torn tail
    model = Model()
    records: dict[str, dict[str, Any]] = {}
    if not lines:
        return model, records
    header = json.loads(lines[0])
    for line in lines[1:][header["seedLength"] :]:
        event = json.loads(line)
        if event["type"] != "schedule/change":
            continue
        change = event["data"]
        op = change["operation"]
        if op == "create":
            record = change["schedule"]
            seconds = record.get("everySeconds")
            created = model.create(
                record["id"],
                record["kind"],
                epoch_ms(record["scheduledAt"]),
                None if seconds is None else int(seconds),
            )
            assert created, record
            records[record["id"]] = record
        elif op == "delete":
            assert model.delete(change["id"]), change
        else:
            accepted = change.get("acceptedAt")
            assert model.dispatch(change["id"], None if accepted is None else epoch_ms(accepted))
    return model, records


def test_there_are_valid_fixtures() -> None:
    assert len(VALID) >= 8


@pytest.mark.parametrize("name", VALID)
def test_valid_fixture_active_set_matches_the_model(name: str) -> None:
    expected = json.loads((FIXTURES / f"{name}.expected.json").read_text(encoding="utf-8"))
    model, records = model_of((FIXTURES / f"{name}.jsonl").read_bytes())
    replay = expected["replay"]
    assert replay["seenIds"] == model.seen
    assert [
        (r["id"], r["kind"], epoch_ms(r["scheduledAt"]), r.get("everySeconds"))
        for r in replay["active"]
    ] == model.rows()
    for shown in replay["active"]:
        written = records[shown["id"]]
        assert shown["prompt"] == written["prompt"].strip()
        assert shown.get("title") == written.get("title")
