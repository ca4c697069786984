"""Benchmark: whole-process ``schedlog replay --json`` against plain decoding of the same log.

Run from the repository root (schedlog installed, e.g. ``pip install -e .``)::

    python -m benchmarks.replay [--events 200000] [--seed 7] [--repeat 3] [--keep DIR]

It writes a session log of ``--events`` events (after the header) into a temporary directory,
generated from a fixed seed: creates of ``after``, ``at`` and ``every`` reminders, ``every``
dispatches with ``acceptedAt`` (the next target comes from the rules layer), one-shot
dispatches, deletes, delivered ``message/followup`` events and chatter (``message/user``,
``message/assistant``). The log is valid, so replay folds all of it and prints the active set.

Three whole processes are then timed, each ``--repeat`` times in turn (best wall time kept):

* ``replay``: ``schedlog replay --json --log FILE`` (the installed console script);
* ``msgspec``: a small script that decodes every line with one prebuilt typed
  ``msgspec.json.Decoder`` (a tagged union of frozen Structs, unknown fields forbidden) and
  keeps the values in a list, without folding: the floor for reading this file in Python;
* ``json``: the same with the stdlib ``json.loads`` per line, into dicts.

Each process starts the interpreter and imports what it needs, so start-up is included for all
three. The ratios ``replay / msgspec`` and ``replay / json`` are printed; the target is
``replay / msgspec <= 1.5``.
"""

from __future__ import annotations

import argparse
import os
import random
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from msgspec.structs import replace

from schedlog.rules.decide import decide
from schedlog.rules.instants import format_instant, parse_canonical_instant
from schedlog.rules.record import Record
from schedlog.rules.records import build_session_record
from schedlog.rules.text import js_dumps

START = "2026-05-01T09:00:00.000Z"
SESSION_ID = "bench-replay"

WORDS = [
    "review",
    "standup",
    "deploy",
    "notes",
    "coffee",
    "build",
    "release",
    "check",
    "inbox",
    "merge",
    "draft",
    "reply",
    "call",
    "sync",
    "backup",
    "report",
    "plan",
    "retro",
    "invoice",
    "water",
    "stretch",
    "会议",
    "Überprüfung",
    "café",
    "résumé",
    "📅",
]

# The typed decoder of the msgspec baseline: every line shape of the generated log.
MSGSPEC_SCRIPT = """
import sys
from msgspec import Struct
from msgspec.json import Decoder

class S(Struct, frozen=True, forbid_unknown_fields=True):
    pass

class After(S, tag_field="kind", tag="after"):
    id: str
    prompt: str
    afterSeconds: int
    scheduledAt: str

class At(S, tag_field="kind", tag="at"):
    id: str
    prompt: str
    scheduledAt: str

class Every(S, tag_field="kind", tag="every"):
    id: str
    prompt: str
    everySeconds: int
    scheduledAt: str

class Create(S, tag_field="operation", tag="create"):
    version: int
    schedule: After | At | Every

class Delete(S, tag_field="operation", tag="delete"):
    version: int
    id: str

class Dispatch(S, tag_field="operation", tag="dispatch"):
    version: int
    id: str
    acceptedAt: str | None = None

class Text(S):
    text: str

class Source(S):
    kind: str
    plugin: str

class Reminder(S):
    id: str
    occurrenceAt: str

class FollowupData(S):
    messageId: str
    role: str
    source: Source
    text: str
    reminders: list[Reminder]
    createdAt: str

class Header(S, tag_field="type", tag="session/header"):
    version: int
    sessionId: str
    seedLength: int
    parentSessionId: str | None

class Change(S, tag_field="type", tag="schedule/change"):
    data: Create | Delete | Dispatch

class User(S, tag_field="type", tag="message/user"):
    data: Text

class Assistant(S, tag_field="type", tag="message/assistant"):
    data: Text

class Followup(S, tag_field="type", tag="message/followup"):
    data: FollowupData

decode = Decoder(Header | Change | User | Assistant | Followup).decode
if sys.argv[2:] == ["--no-gc"]:
    import gc
    gc.disable()
with open(sys.argv[1], "rb") as f:
    values = [decode(line) for line in f]
print(len(values))
"""

JSON_SCRIPT = """
import json, sys
loads = json.loads
with open(sys.argv[1], "rb") as f:
    values = [loads(line) for line in f]
print(len(values))
"""


def _text(rng: random.Random, low: int, high: int) -> str:
    words = [rng.choice(WORDS) for _ in range(rng.randint(low, high))]
    return " ".join(words).capitalize()


def generate(path: Path, events: int, seed: int) -> dict[str, int]:
    """Write a valid session log of ``events`` events; return how many of each kind."""
    rng = random.Random(seed)
    now = parse_canonical_instant(START)
    assert now is not None
    active: dict[str, Record] = {}
    next_id = 1
    counts: dict[str, int] = {}
    lines = [
        js_dumps(
            {
                "type": "session/header",
                "version": 1,
                "sessionId": SESSION_ID,
                "seedLength": 0,
                "parentSessionId": None,
            }
        )
    ]

    def emit(kind: str, value: dict[str, Any]) -> None:
        counts[kind] = counts.get(kind, 0) + 1
        lines.append(js_dumps(value))

    def change(data: dict[str, Any]) -> dict[str, Any]:
        return {"type": "schedule/change", "data": data}

    while len(lines) <= events:
        now += rng.randint(1_000, 30_000)
        due = [r for r in active.values() if r.scheduled_at <= now]
        roll = rng.random()
        if due and roll < 0.45:
            record = rng.choice(due)
            occurrence = format_instant(record.scheduled_at)
            message_id = f"schedule-message-{rng.getrandbits(128):032x}"
            emit(
                "message/followup",
                {
                    "type": "message/followup",
                    "data": {
                        "messageId": message_id,
                        "role": "user",
                        "source": {"kind": "plugin", "plugin": "schedule"},
                        "text": f"[SCHEDULE REMINDER]\n{record.prompt}",
                        "reminders": [{"id": record.id, "occurrenceAt": occurrence}],
                        "createdAt": format_instant(now),
                    },
                },
            )
            if len(lines) > events:
                break
            data: dict[str, Any] = {"version": 1, "operation": "dispatch", "id": record.id}
            if record.kind == "every":
                data["acceptedAt"] = format_instant(now)
                following = decide(record, now).next_scheduled_at
                if following is None:
                    del active[record.id]
                else:
                    active[record.id] = replace(record, scheduled_at=following)
                emit("dispatch every", change(data))
            else:
                del active[record.id]
                emit("dispatch one-shot", change(data))
        elif roll < 0.62 and len(active) < 60:
            rid = f"schedule-{next_id}"
            next_id += 1
            kind = rng.choices(("after", "at", "every"), (3, 2, 3))[0]
            args: dict[str, Any] = {"prompt": _text(rng, 2, 12)}
            if kind == "after":
                args["after_seconds"] = rng.choice((60, 300, 900, 3600, 7200))
            elif kind == "at":
                args["at"] = format_instant(now + rng.randint(60, 86_400) * 1000)
            else:
                args["every_seconds"] = rng.choice((300, 600, 900, 1800, 3600))
            record = build_session_record(args, id=rid, now=now)
            active[rid] = record
            emit(
                f"create {kind}", change({"version": 1, "operation": "create", **_schedule(record)})
            )
        elif roll < 0.66 and active:
            rid = rng.choice(list(active))
            del active[rid]
            emit("delete", change({"version": 1, "operation": "delete", "id": rid}))
        else:
            role = rng.choice(("message/user", "message/assistant"))
            emit(role, {"type": role, "data": {"text": _text(rng, 3, 60)}})
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    counts["active at the end"] = len(active)
    return counts


def _schedule(record: Record) -> dict[str, Any]:
    return {"schedule": record.to_json()}


def _schedlog_command() -> list[str]:
    exe = shutil.which("schedlog", path=os.path.dirname(sys.executable)) or shutil.which("schedlog")
    if exe is None:
        raise SystemExit("the schedlog console script is not installed (pip install -e .)")
    return [exe]


def _cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _run(argv: list[str]) -> tuple[float, float, bytes]:
    """Wall time, CPU time (user + system) and stdout of one child process."""
    cpu = _cpu()
    start = time.perf_counter()
    done = subprocess.run(argv, capture_output=True, check=False)
    elapsed = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"{argv[0]} failed ({done.returncode}): {done.stderr.decode()[-2000:]}")
    return elapsed, _cpu() - cpu, done.stdout


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=200_000, help="events after the header")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--repeat", type=int, default=3, help="runs of each process (best kept)")
    parser.add_argument("--keep", metavar="DIR", help="write the log here and keep it")
    args = parser.parse_args()

    workdir = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="schedlog-replay-"))
    workdir.mkdir(parents=True, exist_ok=True)
    log = workdir / "replay-bench.jsonl"
    try:
        started = time.perf_counter()
        counts = generate(log, args.events, args.seed)
        size = log.stat().st_size
        print(
            f"log: {log} ({args.events:,} events, {size / 1e6:.1f} MB, seed {args.seed}, "
            f"generated in {time.perf_counter() - started:.1f} s)"
        )
        print("  " + ", ".join(f"{k}: {v:,}" for k, v in sorted(counts.items())))

        py = sys.executable
        scripts = {
            "replay": [*_schedlog_command(), "replay", "--json", "--log", str(log)],
            "msgspec": [py, "-c", MSGSPEC_SCRIPT, str(log)],
            "msgspec-nogc": [py, "-c", MSGSPEC_SCRIPT, str(log), "--no-gc"],
            "json": [py, "-c", JSON_SCRIPT, str(log)],
        }
        wall: dict[str, list[float]] = {name: [] for name in scripts}
        cpu: dict[str, list[float]] = {name: [] for name in scripts}
        outputs: dict[str, bytes] = {}
        for _ in range(args.repeat):
            for name, argv in scripts.items():
                elapsed, used, out = _run(argv)
                wall[name].append(elapsed)
                cpu[name].append(used)
                outputs[name] = out
        lines = args.events + 1
        for name in ("msgspec", "msgspec-nogc", "json"):
            assert outputs[name].strip() == str(lines).encode(), outputs[name][:200]
        replayed = outputs["replay"]
        assert replayed.startswith(b'{"sessionId":'), replayed[:200]

        print(f"whole process, best of {args.repeat}: wall s (median), CPU s user+sys (median)")
        labels = {
            "replay": "schedlog replay --json",
            "msgspec": "(a) msgspec typed decode, no fold",
            "msgspec-nogc": "(a') the same, collector disabled",
            "json": "(b) stdlib json.loads per line",
        }
        for name, label in labels.items():
            w, c = wall[name], cpu[name]
            print(
                f"  {label:36s} {min(w):7.3f} ({statistics.median(w):.3f})"
                f"  {min(c):7.3f} ({statistics.median(c):.3f})"
            )
        for name, label in (("msgspec", "(a)"), ("msgspec-nogc", "(a')"), ("json", "(b)")):
            ratio_wall = min(wall["replay"]) / min(wall[name])
            ratio_cpu = min(cpu["replay"]) / min(cpu[name])
            target = "  (target <= 1.5x)" if name == "msgspec" else ""
            print(f"  replay / {label:5s} wall {ratio_wall:.2f}x, CPU {ratio_cpu:.2f}x{target}")
    finally:
        if not args.keep:
            shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    main()
