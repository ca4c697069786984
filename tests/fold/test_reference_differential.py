"""Optional differential test against the upstream reference fold (npm
``@deepseek-ai/dsh-schedule@0.1.0-rc.8``, run with Node).

Opt-in (``.ci/run`` opts in): set ``SCHEDLOG_DIFFERENTIAL=1``. The package is installed once
(``npm install --ignore-scripts``) into ``SCHEDLOG_REFERENCE_DIR`` (default
``~/.cache/schedlog/dsh-schedule-0.1.0-rc.8``); the test skips when node, npm or the package is
unavailable. Random streams (valid steps plus occasional invalid ones) are folded by both;
``active`` and ``seenIds`` must be identical, or both folds must fail, with the same message
for the fold rules of docs/protocol.md#fold.

Intentional differences, kept out of the generated streams: the optional ``title`` of
session-local records (docs/protocol.md#records tolerates it; the reference rejects it) and envelope
keys (the reference never sees envelopes; docs/protocol.md#session-log checks them, see
``tests/fold/test_fold.py``).
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pytest

from schedlog.eventlog import event_from_value
from schedlog.fold import FoldError, fold
from schedlog.rules.instants import MAX_MS, format_instant
from tests.fold.reference import install_runner, opt_in, run_reference

CASES = 400
FOLD_RULES = {"seed_length", "id_reused", "delete_inactive", "dispatch_inactive"}
FOLD_RULES |= {"one_shot_accepted_at", "every_accepted_at"}

pytestmark = opt_in

RUNNER = """
import { foldScheduleEvents } from '@deepseek-ai/dsh-schedule';
let input = '';
for await (const chunk of process.stdin) input += chunk;
const out = JSON.parse(input).map(({ events, seedLength }) => {
  try {
    const folded = foldScheduleEvents(events, seedLength);
    return { ok: { active: folded.active, seenIds: folded.seenIds } };
  } catch (error) {
    return { error: String(error && error.message) };
  }
});
process.stdout.write(JSON.stringify(out));
"""


@pytest.fixture(scope="module")
def reference() -> Path:
    return install_runner("fold_cases.mjs", RUNNER)


BASE = 1_777_626_000_000  # 2026-05-01T09:00:00.000Z


def _maybe(rng: random.Random, good: Any, *bad: Any, rate: float = 0.04) -> Any:
    """Usually ``good``; now and then one of the invalid spellings."""
    return rng.choice(bad) if bad and rng.random() < rate else good


def _stream(rng: random.Random) -> dict[str, Any]:
    events: list[dict[str, Any]] = []
    ids = ["schedule-1", "schedule-2", "schedule-3", "schedule-4", "x"]
    active: dict[str, tuple[str, int]] = {}  # what a valid stream would have: id -> kind, target
    for _ in range(rng.randint(0, 14)):
        roll = rng.random()
        if roll < 0.1:
            events.append({"type": "message/user", "data": {"text": "hi"}})
            continue
        known = list(active) if active and rng.random() < 0.95 else ids
        rid = rng.choice(known)
        if roll < 0.45 or (not active and rng.random() < 0.9):
            rid = rng.choice(ids)
            kind = rng.choice(["after", "at", "every"])
            when = rng.choice([BASE + rng.randint(0, 10**9)] * 5 + [MAX_MS - rng.randint(0, 10**6)])
            record: dict[str, Any] = {"id": _maybe(rng, rid, " padded", "")}
            record["kind"] = _maybe(rng, kind, "daily", "cron")
            record["prompt"] = _maybe(rng, "Stand up", " padded", "", "\u3000")
            if kind == "after":
                record["afterSeconds"] = _maybe(rng, rng.choice([600, 600.0]), 0, 1.5, True)
            elif kind == "every":
                seconds = rng.choice([300, 3600, 3600.0, 86_400])
                record["everySeconds"] = _maybe(rng, seconds, 299, "300")
            record["scheduledAt"] = _maybe(
                rng, format_instant(when), "2026-02-30T00:00:00.000Z", "2026-05-01T09:00:00Z"
            )
            if rng.random() < 0.03:
                record["extra"] = 1
            data: Any = {
                "version": _maybe(rng, rng.choice([1, 1.0]), 2, "1"),
                "operation": "create",
            }
            data["schedule"] = record
            active.setdefault(rid, (kind, when))
        elif roll < 0.6:
            data = {"version": 1, "operation": "delete", "id": rid}
            active.pop(rid, None)
        else:
            data = {"version": 1, "operation": "dispatch", "id": rid}
            kind, anchor = active.get(rid, ("every", BASE))
            if (kind == "every") != (rng.random() < 0.05):
                at = min(max(anchor + rng.randint(-(10**5), 10**9), 0), MAX_MS)
                data["acceptedAt"] = _maybe(rng, format_instant(at), "2026-05-01T09:00:00Z")
            if kind != "every":
                active.pop(rid, None)
        if rng.random() < 0.02:
            data = rng.choice([None, [], "create", {"version": 1}, {**data, "extra": 1}])
        events.append({"type": "schedule/change", "data": data})
    seed = rng.choice([0] * 12 + [rng.randint(0, len(events))] * 7 + [len(events) + 1])
    return {"events": events, "seedLength": seed}


def _ours(case: dict[str, Any]) -> dict[str, Any]:
    try:
        state = fold([event_from_value(e) for e in case["events"]], seed_length=case["seedLength"])
    except FoldError as exc:
        return {"error": exc.message, "rule": exc.rule}
    return {"ok": state.to_json()}


def test_fold_agrees_with_the_reference(reference: Path) -> None:
    rng = random.Random(20260501)
    cases = [_stream(rng) for _ in range(CASES)]
    theirs = run_reference(reference, cases)
    failures = 0
    for case, ref in zip(cases, theirs, strict=True):
        ours = _ours(case)
        if "ok" in ours:
            assert ref == ours, case
        else:
            failures += 1
            assert "error" in ref, (case, ours)
            if ours["rule"] in FOLD_RULES:
                assert ref["error"] == ours["error"], case
    assert 0 < failures < len(cases)  # both outcomes were exercised
