"""Benchmark: whole-process ``schedlog replay`` and ``validate`` against the upstream npm fold.

Run from the repository root (schedlog installed, e.g. ``pip install -e .``)::

    python -m benchmarks.replay [--events 200000] [--seed 7] [--repeat 3] [--warmup 1] [--keep DIR]
                                [--logs heavy-compact,...] [--cache DIR] [--no-upstream]

It writes four session logs of ``--events`` events (after the header) from fixed seeds:

* ``heavy-compact``: mostly ``schedule/change`` events (creates of ``after``, ``at`` and
  ``every`` reminders, ``every`` dispatches with ``acceptedAt``, one-shot dispatches, deletes)
  with their ``message/followup`` deliveries and a little chatter, written compact (as
  ``JSON.stringify`` and schedlog's writers write);
* ``heavy-spaced``: the same events as Python's ``json.dumps`` writes them by default
  (separators ``", "`` and ``": "``, non-ASCII as ``\\uXXXX`` escapes);
* ``chat-compact``: chat and tool events of 150-600 bytes with nested ``data`` (messages with
  content parts and usage, tool calls with arguments, tool results with output and metadata)
  with about 2% schedule changes and their follow-ups among them;
* ``chat-spaced``: the same events, spaced.

Every log is valid, so every process reads and folds all of it. The processes, each run
``--repeat`` times interleaved (one of each in turn), medians kept, after ``--warmup`` untimed
rounds (default 1: the file in the page cache, and Python's bytecode cached as an installed
package has it; the children run without ``PYTHONDONTWRITEBYTECODE``, which would make every
run compile every module again, about 0.07 s on this machine):

* ``replay``: ``schedlog replay --json --log FILE`` (the installed console script);
* ``validate``: ``schedlog validate --json FILE``;
* ``upstream``: Node with ``@deepseek-ai/dsh-schedule@0.1.0-rc.8`` from npm: read the file,
  ``JSON.parse`` each line, ``foldScheduleEvents(events, header.seedLength)``. The package is
  installed once into ``--cache`` (default ``~/.cache/schedlog/dsh-schedule-0.1.0-rc.8``, or
  ``SCHEDLOG_REFERENCE_DIR``); without ``node`` and ``npm`` (or with ``--no-upstream``) this
  side is skipped with a message;
* ``msgspec``: a script that decodes every line with one prebuilt typed
  ``msgspec.json.Decoder`` into a list (no fold, no checks), and ``msgspec-nogc``, the same with
  the collector disabled: the floor for reading the file in Python (heavy logs only; its union
  knows the heavy line shapes).

The active sets of ``replay`` and ``upstream`` must be identical (ids, kinds, prompts and
targets, in order), and ``validate`` must find the log valid with as many active reminders.
Printed per log: the medians and the ratios ``upstream / replay`` and ``upstream / validate``
(target: at least 2.0 on every log, by wall time), the same by CPU time (a child's included:
``replay`` and ``validate`` check a long log in two processes on a machine with two cores,
docs/decisions.md), then a summary.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
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


PACKAGE = "@deepseek-ai/dsh-schedule@0.1.0-rc.8"

UPSTREAM_SCRIPT = """
import { readFileSync } from 'node:fs';
import { foldScheduleEvents } from '@deepseek-ai/dsh-schedule';
const lines = readFileSync(process.argv[2], 'utf8').split('\\n');
lines.pop();
const header = JSON.parse(lines[0]);
const events = [];
for (let i = 1; i < lines.length; i++) events.push(JSON.parse(lines[i]));
const folded = foldScheduleEvents(events, header.seedLength);
process.stdout.write(JSON.stringify(folded.active.map(
  (r) => [r.id, r.kind, r.prompt, r.scheduledAt])) + '\\n');
"""

TOOLS = ("read_file", "grep", "run_tests", "edit_file", "list_dir", "web_fetch")
MODELS = ("model-large-2026-04", "model-small-2026-03")


def _text(rng: random.Random, low: int, high: int) -> str:
    words = [rng.choice(WORDS) for _ in range(rng.randint(low, high))]
    return " ".join(words).capitalize()


def _chat_event(rng: random.Random, now: int, turn: int) -> dict[str, Any]:
    """One chat or tool event of about 150-600 bytes with nested ``data``."""
    roll = rng.random()
    stamp = format_instant(now)
    if roll < 0.25:
        return {
            "type": "message/user",
            "data": {
                "messageId": f"m-{turn}",
                "content": [{"type": "text", "text": _text(rng, 4, 40)}],
                "createdAt": stamp,
            },
        }
    if roll < 0.5:
        text = _text(rng, 6, 45)
        if rng.random() < 0.4:
            text += "\n\n- " + _text(rng, 2, 8) + "\n- " + _text(rng, 2, 8)
        return {
            "type": "message/assistant",
            "data": {
                "messageId": f"m-{turn}",
                "model": rng.choice(MODELS),
                "content": [{"type": "text", "text": text}],
                "usage": {
                    "inputTokens": rng.randint(100, 90_000),
                    "outputTokens": rng.randint(5, 900),
                },
                "stopReason": rng.choice(("end_turn", "tool_use")),
                "createdAt": stamp,
            },
        }
    if roll < 0.75:
        tool = rng.choice(TOOLS)
        return {
            "type": "tool/call",
            "data": {
                "callId": f"call-{turn}",
                "name": tool,
                "arguments": {
                    "path": f"src/{rng.choice(WORDS)}/{rng.randint(1, 99)}.py",
                    "pattern": _text(rng, 1, 3),
                    "limit": rng.randint(1, 500),
                    "recursive": rng.random() < 0.5,
                },
                "createdAt": stamp,
            },
        }
    lines = [f"{rng.randint(1, 400)}: {_text(rng, 2, 9)}" for _ in range(rng.randint(1, 6))]
    return {
        "type": "tool/result",
        "data": {
            "callId": f"call-{turn - 1}",
            "ok": rng.random() < 0.9,
            "output": "\n".join(lines),
            "metadata": {
                "durationMs": rng.randint(1, 20_000),
                "exitCode": rng.choice((0, 0, 0, 1)),
                "truncated": False,
                "bytes": rng.randint(10, 100_000),
            },
            "createdAt": stamp,
        },
    }


def generate_events(
    events: int, seed: int, shape: str
) -> tuple[list[dict[str, Any]], dict[str, int]]:
    """The header and ``events`` events of a valid log of ``shape`` (``heavy`` or ``chat``),
    as JSON values, and how many of each kind."""
    rng = random.Random(seed)
    now = parse_canonical_instant(START)
    assert now is not None
    active: dict[str, Record] = {}
    next_id = 1
    counts: dict[str, int] = {}
    values: list[dict[str, Any]] = [
        {
            "type": "session/header",
            "version": 1,
            "sessionId": SESSION_ID,
            "seedLength": 0,
            "parentSessionId": None,
        }
    ]
    # heavy: almost every step is schedule activity; chat: about 1 step in 50
    schedule_rate = 0.97 if shape == "heavy" else 0.014
    dispatch_rate = 0.15 if shape == "heavy" else 0.45

    def chatter(now: int) -> dict[str, Any]:
        if shape == "chat":
            return _chat_event(rng, now, len(values))
        role = rng.choice(("message/user", "message/assistant"))
        return {"type": role, "data": {"text": _text(rng, 3, 60)}}

    step_ms = (1_000, 30_000) if shape == "heavy" else (200, 4_000)

    def emit(kind: str, value: dict[str, Any]) -> None:
        counts[kind] = counts.get(kind, 0) + 1
        values.append(value)

    def change(data: dict[str, Any]) -> dict[str, Any]:
        return {"type": "schedule/change", "data": data}

    while len(values) <= events:
        now += rng.randint(*step_ms)
        if rng.random() >= schedule_rate:
            emit("chat", chatter(now))
            continue
        due = [r for r in active.values() if r.scheduled_at <= now]
        roll = rng.random()
        if due and roll < dispatch_rate:
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
            if len(values) > events:
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
        elif roll < 0.80 and len(active) < 60:
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
                f"create {kind}",
                change({"version": 1, "operation": "create", "schedule": record.to_json()}),
            )
        elif active:
            rid = rng.choice(list(active))
            del active[rid]
            emit("delete", change({"version": 1, "operation": "delete", "id": rid}))
        else:
            emit("chat", chatter(now))
    counts["active at the end"] = len(active)
    return values, counts


def _spaced(value: Any) -> str:
    return json.dumps(value)  # ", " and ": ", ensure_ascii: as Python writes by default


LOGS: dict[str, tuple[str, Callable[[Any], str]]] = {
    "heavy-compact": ("heavy", js_dumps),
    "heavy-spaced": ("heavy", _spaced),
    "chat-compact": ("chat", js_dumps),
    "chat-spaced": ("chat", _spaced),
}


def write_log(path: Path, values: list[dict[str, Any]], dumps: Callable[[Any], str]) -> None:
    path.write_text("".join(dumps(v) + "\n" for v in values), encoding="utf-8")


def install_upstream(cache: Path) -> Path | None:
    """The Node runner beside the npm package in ``cache`` (installed there if missing), or
    None with a message when node or npm is unavailable or the install fails."""
    if shutil.which("node") is None or shutil.which("npm") is None:
        print("upstream side skipped: node and npm are needed (Node 20)")
        return None
    if not (cache / "node_modules" / "@deepseek-ai" / "dsh-schedule").is_dir():
        cache.mkdir(parents=True, exist_ok=True)
        command = ["npm", "install", "--prefix", str(cache), "--ignore-scripts", "--no-audit"]
        try:
            subprocess.run([*command, "--no-fund", PACKAGE], check=True, timeout=300)
        except (OSError, subprocess.SubprocessError) as exc:
            print(f"upstream side skipped: cannot install {PACKAGE}: {exc}")
            return None
    runner = cache / "replay_fold.mjs"
    runner.write_text(UPSTREAM_SCRIPT, encoding="utf-8")
    return runner


def _schedlog_command() -> list[str]:
    exe = shutil.which("schedlog", path=os.path.dirname(sys.executable)) or shutil.which("schedlog")
    if exe is None:
        raise SystemExit("the schedlog console script is not installed (pip install -e .)")
    return [exe]


def _cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


#: The children's environment: bytecode may be cached (an installed package has it compiled).
CHILD_ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


def _run(argv: list[str], cwd: Path | None = None) -> tuple[float, float, bytes]:
    """Wall time, CPU time (user + system) and stdout of one child process."""
    cpu = _cpu()
    start = time.perf_counter()
    done = subprocess.run(argv, capture_output=True, check=False, cwd=cwd, env=CHILD_ENV)
    elapsed = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"{argv[0]} failed ({done.returncode}): {done.stderr.decode()[-2000:]}")
    return elapsed, _cpu() - cpu, done.stdout


def _active_of_replay(out: bytes) -> list[list[str]]:
    report = json.loads(out)
    return [[r["id"], r["kind"], r["prompt"], r["scheduledAt"]] for r in report["active"]]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=200_000, help="events after the header")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--repeat", type=int, default=3, help="runs of each process (median)")
    parser.add_argument("--warmup", type=int, default=1, help="untimed rounds before them")
    parser.add_argument("--keep", metavar="DIR", help="write the logs here and keep them")
    parser.add_argument("--logs", default=",".join(LOGS), help="which logs, comma-separated")
    parser.add_argument("--no-upstream", action="store_true", help="skip the npm side")
    parser.add_argument("--no-msgspec", action="store_true", help="skip the msgspec baselines")
    default_cache = Path.home() / ".cache" / "schedlog" / "dsh-schedule-0.1.0-rc.8"
    parser.add_argument(
        "--cache",
        type=Path,
        default=Path(os.environ.get("SCHEDLOG_REFERENCE_DIR", default_cache)),
        help="where the npm package is installed",
    )
    args = parser.parse_args()
    names = [n for n in args.logs.split(",") if n]
    unknown = [n for n in names if n not in LOGS]
    if unknown:
        parser.error(f"unknown log {unknown[0]!r}; choose from {', '.join(LOGS)}")

    runner = None if args.no_upstream else install_upstream(args.cache)
    workdir = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="schedlog-replay-"))
    workdir.mkdir(parents=True, exist_ok=True)
    py = sys.executable
    schedlog = _schedlog_command()
    ratios: dict[str, tuple[float, float, float, float]] = {}
    try:
        generated: dict[str, tuple[list[dict[str, Any]], dict[str, int]]] = {}
        for name in names:
            shape, dumps = LOGS[name]
            if shape not in generated:
                generated[shape] = generate_events(args.events, args.seed, shape)
            values, counts = generated[shape]
            log = workdir / f"{name}.jsonl"
            write_log(log, values, dumps)
            changes = sum(
                v for k, v in counts.items() if k.startswith(("create", "dispatch", "delete"))
            )
            print(
                f"\n{name}: {log} ({args.events:,} events, {log.stat().st_size / 1e6:.1f} MB, "
                f"seed {args.seed}, {changes / args.events:.1%} schedule changes)"
            )
            print("  " + ", ".join(f"{k}: {v:,}" for k, v in sorted(counts.items())))
            processes: dict[str, list[str]] = {
                "replay": [*schedlog, "replay", "--json", "--log", str(log)],
                "validate": [*schedlog, "validate", "--json", str(log)],
            }
            if runner is not None:
                processes["upstream"] = ["node", str(runner), str(log)]
            if shape == "heavy" and not args.no_msgspec:
                processes["msgspec"] = [py, "-c", MSGSPEC_SCRIPT, str(log)]
                processes["msgspec-nogc"] = [py, "-c", MSGSPEC_SCRIPT, str(log), "--no-gc"]
            wall: dict[str, list[float]] = {p: [] for p in processes}
            cpu: dict[str, list[float]] = {p: [] for p in processes}
            outputs: dict[str, bytes] = {}
            for turn in range(args.warmup + args.repeat):
                for process, argv in processes.items():
                    cwd = runner.parent if process == "upstream" and runner else None
                    elapsed, used, out = _run(argv, cwd)
                    outputs[process] = out
                    if turn >= args.warmup:
                        wall[process].append(elapsed)
                        cpu[process].append(used)
            active = _active_of_replay(outputs["replay"])
            report = json.loads(outputs["validate"])
            assert report["ok"] is True and report["active"] == len(active), report
            if "upstream" in outputs:
                upstream = json.loads(outputs["upstream"])
                if upstream != active:
                    raise SystemExit(f"{name}: the active sets differ (replay vs upstream)")
                print(f"  active sets identical ({len(active)} reminders)")
            for process in ("msgspec", "msgspec-nogc"):
                if process in outputs:
                    assert outputs[process].strip() == str(args.events + 1).encode()
            print(
                f"  whole process, {args.repeat} interleaved runs after {args.warmup} untimed: "
                "wall s median (min), CPU s median"
            )
            for process in processes:
                w, c = wall[process], cpu[process]
                print(
                    f"    {process:13s} {statistics.median(w):7.3f} ({min(w):.3f})"
                    f"  {statistics.median(c):7.3f}"
                )
            if "upstream" in wall:
                up = statistics.median(wall["upstream"])
                r = up / statistics.median(wall["replay"])
                v = up / statistics.median(wall["validate"])
                up_cpu = statistics.median(cpu["upstream"])
                rc = up_cpu / statistics.median(cpu["replay"])
                vc = up_cpu / statistics.median(cpu["validate"])
                ratios[name] = (r, v, rc, vc)
                print(f"  upstream / replay {r:.2f}x, upstream / validate {v:.2f}x (target >= 2.0)")
                print(f"  by CPU time (both processes of a split log): {rc:.2f}x, {vc:.2f}x")
        if ratios:
            print(
                f"\nsummary (load average {os.getloadavg()[0]:.1f}): "
                "upstream / schedlog, median wall (median CPU)"
            )
            for name, (r, v, rc, vc) in ratios.items():
                mark = "ok" if min(r, v) >= 2.0 else "BELOW TARGET"
                print(
                    f"  {name:14s} replay {r:5.2f}x ({rc:.2f}x)  validate {v:5.2f}x ({vc:.2f}x)"
                    f"  {mark}"
                )
    finally:
        if not args.keep:
            shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    main()
