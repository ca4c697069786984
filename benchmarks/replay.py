"""Benchmark: whole-process ``schedlog replay`` and ``validate`` against the upstream npm fold.

Run from the repository root (schedlog installed, e.g. ``pip install -e .``)::

    python -m benchmarks.replay [--events 200000] [--seed 7] [--repeat 3] [--warmup 1] [--keep DIR]
                                [--logs heavy-compact,...] [--cache DIR] [--no-upstream]
    python -m benchmarks.replay --corpus 3000 [--seed 7] [--repeat 3] ...
    python -m benchmarks.replay --open [--events 200000] [--repeat 3] [--baseline DIR] ...

``--corpus N`` instead writes a folder of N small valid logs (20-200 chat events each, about
10% schedule changes) and times ``schedlog validate --json DIR`` against one Node process that
folds every log of the folder and prints each full result (target: at least 3x). ``--open``
times ``schedlog session batch --log COPY`` answering one ``schedule_list`` (the session open,
on a fresh copy of the chat-compact log each run) against ``replay --json`` of the same log
(target: at most 2x replay, and 0.4 s). With ``--baseline DIR`` (a source tree holding an
older ``schedlog/``, e.g. ``git archive main | tar -x -C DIR``) every schedlog process of any
mode also runs with that tree first on ``PYTHONPATH``, interleaved with this tree's (named
``...-before``), and must print the same output.

By default it writes five session logs of ``--events`` events (after the header) from fixed seeds:

* ``heavy-compact``: mostly ``schedule/change`` events (creates of ``after``, ``at`` and
  ``every`` reminders, ``every`` dispatches with ``acceptedAt``, one-shot dispatches, deletes)
  with their ``message/followup`` deliveries and a little chatter, written compact (as
  ``JSON.stringify`` and schedlog's writers write);
* ``heavy-spaced``: the same events as Python's ``json.dumps`` writes them by default
  (separators ``", "`` and ``": "``, non-ASCII as ``\\uXXXX`` escapes);
* ``chat-compact``: chat and tool events of 150-600 bytes with nested ``data`` (messages with
  content parts and usage, tool calls with arguments, tool results with output and metadata)
  with about 2% schedule changes and their follow-ups among them;
* ``chat-spaced``: the same events, spaced;
* ``many-active``: 85% schedule changes with no cap on the active set (the earliest due
  reminder is dispatched), so most created reminders are still active at the end: the cost of
  printing a large result.

Every log is valid, so every process reads and folds all of it. The processes, each run
``--repeat`` times interleaved (one of each in turn), medians kept, after ``--warmup`` untimed
rounds (default 1: the file in the page cache, and Python's bytecode cached as an installed
package has it; the children run without ``PYTHONDONTWRITEBYTECODE``, which would make every
run compile every module again, about 0.07 s on this machine):

* ``replay``: ``schedlog replay --json --log FILE`` (the installed console script);
* ``validate``: ``schedlog validate --json FILE``;
* ``upstream``: Node with ``@deepseek-ai/dsh-schedule@0.1.0-rc.8`` from npm: read the file,
  ``JSON.parse`` each line, ``foldScheduleEvents(events, header.seedLength)``, print the whole
  result (session id, seedLength, active records, seen ids) as ``replay --json`` does. The
  package is installed once into ``--cache`` (default
  ``~/.cache/schedlog/dsh-schedule-0.1.0-rc.8``, or ``SCHEDLOG_REFERENCE_DIR``); without
  ``node`` and ``npm`` (or with ``--no-upstream``) this side is skipped with a message;
* ``msgspec``: a script that decodes every line with one prebuilt typed
  ``msgspec.json.Decoder`` into a list (no fold, no checks), and ``msgspec-nogc``, the same with
  the collector disabled: the floor for reading the file in Python (heavy logs only; its union
  knows the heavy line shapes).

The active sets of ``replay`` and ``upstream`` must be identical (ids, kinds, prompts and
targets, in order, and the seen ids), and ``validate`` must find the log valid with as many
active reminders.
Printed per log: the medians and the ratios ``upstream / replay`` and ``upstream / validate``
(target: at least 3.0 on every log, by wall time), the same by CPU time (a child's included:
``replay`` and ``validate`` check a long log in two processes on a machine with two cores,
docs/decisions.md), then a summary.
"""

from __future__ import annotations

import argparse
import heapq
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

# The upstream side prints its whole result, as ``replay --json`` does (one JSON line a log).
UPSTREAM_SCRIPT = """
import { readFileSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { foldScheduleEvents } from '@deepseek-ai/dsh-schedule';
function replay(path) {
  const lines = readFileSync(path, 'utf8').split('\\n');
  lines.pop();
  const header = JSON.parse(lines[0]);
  const events = [];
  for (let i = 1; i < lines.length; i++) events.push(JSON.parse(lines[i]));
  const folded = foldScheduleEvents(events, header.seedLength);
  return JSON.stringify({sessionId: header.sessionId, seedLength: header.seedLength,
    active: folded.active, seenIds: folded.seenIds}) + '\\n';
}
const target = process.argv[2];
if (statSync(target).isDirectory()) {
  const out = [];
  for (const name of readdirSync(target).filter((n) => n.endsWith('.jsonl')).sort())
    out.push(replay(join(target, name)));
  process.stdout.write(out.join(''));
} else {
  process.stdout.write(replay(target));
}
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
    # heavy: almost every step is schedule activity; chat: about 1 step in 50; small: chat
    # with 1 in 10; many: 85% schedule changes, most reminders never deleted (no cap on the
    # active set, the earliest due one dispatched)
    schedule_rate = {"heavy": 0.97, "chat": 0.014, "small": 0.10, "many": 0.85}[shape]
    dispatch_rate = 0.15 if shape in ("heavy", "many") else 0.45
    cap = 10**9 if shape == "many" else 60
    due_heap: list[tuple[int, str]] = []  # "many": (target, id), stale entries skipped

    def chatter(now: int) -> dict[str, Any]:
        if shape in ("chat", "small"):
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
        due = _due(active, due_heap, now) if shape == "many" else _all_due(active, now)
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
                    if shape == "many":
                        heapq.heappush(due_heap, (following, record.id))
                emit("dispatch every", change(data))
            else:
                del active[record.id]
                emit("dispatch one-shot", change(data))
        elif roll < 0.80 and len(active) < cap:
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
            if shape == "many":
                heapq.heappush(due_heap, (record.scheduled_at, rid))
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


def _all_due(active: dict[str, Record], now: int) -> list[Record]:
    return [r for r in active.values() if r.scheduled_at <= now]


def _due(active: dict[str, Record], heap: list[tuple[int, str]], now: int) -> list[Record]:
    """The earliest due record of a large active set (``heap`` holds every target pushed; an
    entry whose record is gone or has moved on is dropped), as a list of at most one."""
    while heap and heap[0][0] <= now:
        target, rid = heap[0]
        record = active.get(rid)
        if record is not None and record.scheduled_at == target:
            return [record]
        heapq.heappop(heap)
    return []


def _spaced(value: Any) -> str:
    return json.dumps(value)  # ", " and ": ", ensure_ascii: as Python writes by default


LOGS: dict[str, tuple[str, Callable[[Any], str]]] = {
    "heavy-compact": ("heavy", js_dumps),
    "heavy-spaced": ("heavy", _spaced),
    "chat-compact": ("chat", js_dumps),
    "chat-spaced": ("chat", _spaced),
    "many-active": ("many", js_dumps),
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
    """The active set of one ``replay --json`` (or upstream) result: ids, kinds, prompts and
    targets, in order."""
    report = json.loads(out)
    return [[r["id"], r["kind"], r["prompt"], r["scheduledAt"]] for r in report["active"]]


def _seen_of_replay(out: bytes) -> list[str]:
    seen: list[str] = json.loads(out)["seenIds"]
    return seen


def _timed_rounds(
    processes: dict[str, list[str]],
    warmup: int,
    repeat: int,
    before: Callable[[str], None] | None = None,
    cwd: dict[str, Path] | None = None,
) -> tuple[dict[str, list[float]], dict[str, list[float]], dict[str, bytes]]:
    """Run every process ``warmup + repeat`` times interleaved (``before(name)`` first, untimed):
    the wall and CPU seconds of the timed runs, and each one's last output."""
    wall: dict[str, list[float]] = {p: [] for p in processes}
    cpu: dict[str, list[float]] = {p: [] for p in processes}
    outputs: dict[str, bytes] = {}
    for turn in range(warmup + repeat):
        for process, argv in processes.items():
            if before is not None:
                before(process)
            elapsed, used, out = _run(argv, (cwd or {}).get(process))
            outputs[process] = out
            if turn >= warmup:
                wall[process].append(elapsed)
                cpu[process].append(used)
    return wall, cpu, outputs


def _print_medians(wall: dict[str, list[float]], cpu: dict[str, list[float]]) -> None:
    for process in wall:
        w, c = wall[process], cpu[process]
        print(
            f"    {process:13s} {statistics.median(w):7.3f} ({min(w):.3f})"
            f"  {statistics.median(c):7.3f}"
        )


def write_corpus(folder: Path, logs: int, seed: int) -> int:
    """``logs`` small valid logs (20-200 events, chat with about 10% schedule changes) in
    ``folder``: their total size in bytes."""
    folder.mkdir(parents=True, exist_ok=True)
    rng = random.Random(seed)
    total = 0
    for number in range(logs):
        values, _ = generate_events(rng.randint(20, 200), seed + number, "small")
        values[0]["sessionId"] = f"corpus-{number:05d}"
        path = folder / f"log-{number:05d}.jsonl"
        write_log(path, values, js_dumps)
        total += path.stat().st_size
    return total


def bench_corpus(args: argparse.Namespace, runner: Path | None, workdir: Path) -> None:
    """``--corpus N``: ``schedlog validate --json DIR`` of N small logs against the upstream
    fold of every log of DIR in one Node process."""
    folder = workdir / "corpus"
    size = write_corpus(folder, args.corpus, args.seed)
    print(f"\ncorpus: {folder} ({args.corpus:,} logs, {size / 1e6:.1f} MB, seed {args.seed})")
    processes = {"validate": [*_schedlog_command(), "validate", "--json", str(folder)]}
    if args.baseline is not None:
        processes["validate-before"] = [*_baseline_env(args), *processes["validate"]]
    if runner is not None:
        processes["upstream"] = ["node", str(runner), str(folder)]
    cwd = {"upstream": runner.parent} if runner is not None else None
    wall, cpu, outputs = _timed_rounds(processes, args.warmup, args.repeat, cwd=cwd)
    reports = [json.loads(line) for line in outputs["validate"].splitlines()]
    assert len(reports) == args.corpus and all(r["ok"] for r in reports), reports[:3]
    if "validate-before" in outputs:
        assert outputs["validate-before"] == outputs["validate"], "the baseline's output differs"
    if "upstream" in outputs:
        folded = [json.loads(line) for line in outputs["upstream"].splitlines()]
        assert [len(f["active"]) for f in folded] == [r["active"] for r in reports]
        print(f"  active counts identical ({sum(r['active'] for r in reports)} reminders)")
    print(f"  whole process, {args.repeat} interleaved runs: wall s median (min), CPU s median")
    _print_medians(wall, cpu)
    for side in ("validate", "validate-before"):
        if "upstream" in wall and side in wall:
            ratio = statistics.median(wall["upstream"]) / statistics.median(wall[side])
            by_cpu = statistics.median(cpu["upstream"]) / statistics.median(cpu[side])
            mark = "ok" if ratio >= TARGET else "BELOW TARGET"
            print(
                f"  upstream / {side} {ratio:.2f}x (CPU {by_cpu:.2f}x; target >= {TARGET}) "
                f"{mark}, load average {os.getloadavg()[0]:.1f}"
            )


OPEN_REQUEST = b'{"op":"schedule_list","now":"2026-06-01T00:00:00Z","args":{}}\n'


def bench_open(args: argparse.Namespace, workdir: Path) -> None:
    """``--open``: ``schedlog session batch`` with one ``schedule_list`` (the session open and
    its first answer) on a fresh copy of the chat-compact log, against ``replay`` of it."""
    values, _ = generate_events(args.events, args.seed, "chat")
    log, copy = workdir / "open-chat-compact.jsonl", workdir / "open-copy.jsonl"
    write_log(log, values, js_dumps)
    print(f"\nopen: {log} ({args.events:,} events, {log.stat().st_size / 1e6:.1f} MB)")
    schedlog = _schedlog_command()
    trees = {"": []} if args.baseline is None else {"": [], "-before": _baseline_env(args)}
    processes: dict[str, list[str]] = {}
    for suffix, env in trees.items():
        processes["replay" + suffix] = [*env, *schedlog, "replay", "--json", "--log", str(log)]
        batch = f"exec {' '.join(env)} {schedlog[0]} session batch --log {copy}"
        processes["session-open" + suffix] = ["sh", "-c", f"{batch} < {workdir / 'open.in'}"]
    (workdir / "open.in").write_bytes(OPEN_REQUEST)

    def fresh(process: str) -> None:
        if process.startswith("session-open"):
            shutil.copyfile(log, copy)

    wall, cpu, outputs = _timed_rounds(processes, args.warmup, args.repeat, before=fresh)
    print(f"  whole process, {args.repeat} interleaved runs: wall s median (min), CPU s median")
    _print_medians(wall, cpu)
    for suffix in trees:
        answer = json.loads(outputs["session-open" + suffix])
        assert len(answer["ok"]) == len(_active_of_replay(outputs["replay" + suffix])), answer
        opened = statistics.median(wall["session-open" + suffix])
        ratio = opened / statistics.median(wall["replay" + suffix])
        mark = "ok" if ratio <= 2.0 and opened <= 0.4 else "BELOW TARGET"
        print(
            f"  {suffix.strip('-') or 'this tree'}: open / replay {ratio:.2f}x (target <= 2.0),"
            f" open {opened:.3f} s (target <= 0.4) {mark}, load average"
            f" {os.getloadavg()[0]:.1f}"
        )


def _baseline_env(args: argparse.Namespace) -> list[str]:
    """The prefix that runs a child with the ``--baseline`` tree's ``schedlog`` package first
    on its path (a source tree holding ``schedlog/``, e.g. from ``git archive``)."""
    tree = Path(args.baseline).resolve()
    if not (tree / "schedlog" / "__init__.py").is_file():
        raise SystemExit(f"--baseline {tree}: no schedlog/ package there")
    return ["env", f"PYTHONPATH={tree}"]


def bench_log(
    args: argparse.Namespace,
    name: str,
    runner: Path | None,
    workdir: Path,
    generated: dict[str, tuple[list[dict[str, Any]], dict[str, int]]],
) -> tuple[float, float, float, float] | None:
    """One log of ``LOGS``: replay, validate, upstream (and the msgspec floors) timed; the
    ratios upstream / replay and upstream / validate, by wall and by CPU time."""
    shape, dumps = LOGS[name]
    if shape not in generated:
        generated[shape] = generate_events(args.events, args.seed, shape)
    values, counts = generated[shape]
    log = workdir / f"{name}.jsonl"
    write_log(log, values, dumps)
    changes = sum(v for k, v in counts.items() if k.startswith(("create", "dispatch", "delete")))
    print(
        f"\n{name}: {log} ({args.events:,} events, {log.stat().st_size / 1e6:.1f} MB, "
        f"seed {args.seed}, {changes / args.events:.1%} schedule changes)"
    )
    print("  " + ", ".join(f"{k}: {v:,}" for k, v in sorted(counts.items())))
    schedlog = _schedlog_command()
    processes: dict[str, list[str]] = {
        "replay": [*schedlog, "replay", "--json", "--log", str(log)],
        "validate": [*schedlog, "validate", "--json", str(log)],
    }
    if args.baseline is not None:
        before = _baseline_env(args)
        processes["replay-before"] = [*before, *processes["replay"]]
        processes["validate-before"] = [*before, *processes["validate"]]
    if runner is not None:
        processes["upstream"] = ["node", str(runner), str(log)]
    if shape == "heavy" and not args.no_msgspec:
        processes["msgspec"] = [sys.executable, "-c", MSGSPEC_SCRIPT, str(log)]
        processes["msgspec-nogc"] = [sys.executable, "-c", MSGSPEC_SCRIPT, str(log), "--no-gc"]
    cwd = {"upstream": runner.parent} if runner is not None else None
    wall, cpu, outputs = _timed_rounds(processes, args.warmup, args.repeat, cwd=cwd)
    active = _active_of_replay(outputs["replay"])
    report = json.loads(outputs["validate"])
    assert report["ok"] is True and report["active"] == len(active), report
    if "upstream" in outputs:
        if _active_of_replay(outputs["upstream"]) != active or _seen_of_replay(
            outputs["upstream"]
        ) != _seen_of_replay(outputs["replay"]):
            raise SystemExit(f"{name}: the results differ (replay vs upstream)")
        print(f"  active sets and seen ids identical ({len(active)} reminders)")
    for process in ("replay", "validate"):
        if process + "-before" in outputs:
            assert outputs[process + "-before"] == outputs[process], f"{process}: baseline differs"
    for process in ("msgspec", "msgspec-nogc"):
        if process in outputs:
            assert outputs[process].strip() == str(args.events + 1).encode()
    print(
        f"  whole process, {args.repeat} interleaved runs after {args.warmup} untimed: "
        "wall s median (min), CPU s median"
    )
    _print_medians(wall, cpu)
    if "upstream" not in wall:
        return None
    up, up_cpu = statistics.median(wall["upstream"]), statistics.median(cpu["upstream"])
    r = up / statistics.median(wall["replay"])
    v = up / statistics.median(wall["validate"])
    rc = up_cpu / statistics.median(cpu["replay"])
    vc = up_cpu / statistics.median(cpu["validate"])
    print(f"  upstream / replay {r:.2f}x, upstream / validate {v:.2f}x (target >= {TARGET})")
    if "replay-before" in wall:
        rb = up / statistics.median(wall["replay-before"])
        vb = up / statistics.median(wall["validate-before"])
        print(f"  baseline: upstream / replay {rb:.2f}x, upstream / validate {vb:.2f}x")
    print(f"  by CPU time (both processes of a split log): {rc:.2f}x, {vc:.2f}x")
    return r, v, rc, vc


#: The target ratio upstream / schedlog, whole process (issue 19).
TARGET = 3.0


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
    parser.add_argument(
        "--corpus", type=int, metavar="N", help="only: validate a folder of N small logs"
    )
    parser.add_argument(
        "--open", action="store_true", help="only: open a session (session batch) vs replay"
    )
    parser.add_argument(
        "--baseline",
        metavar="DIR",
        help="also time the schedlog/ package of this source tree, interleaved",
    )
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
    runner = None if args.no_upstream or args.open else install_upstream(args.cache)
    workdir = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="schedlog-replay-"))
    workdir.mkdir(parents=True, exist_ok=True)
    try:
        if args.corpus is not None:
            bench_corpus(args, runner, workdir)
        elif args.open:
            bench_open(args, workdir)
        else:
            _bench_logs(args, names, runner, workdir)
    finally:
        if not args.keep:
            shutil.rmtree(workdir, ignore_errors=True)


def _bench_logs(
    args: argparse.Namespace, names: list[str], runner: Path | None, workdir: Path
) -> None:
    generated: dict[str, tuple[list[dict[str, Any]], dict[str, int]]] = {}
    ratios = {}
    for name in names:
        result = bench_log(args, name, runner, workdir, generated)
        if result is not None:
            ratios[name] = result
    if not ratios:
        return
    print(
        f"\nsummary (load average {os.getloadavg()[0]:.1f}): "
        "upstream / schedlog, median wall (median CPU)"
    )
    for name, (r, v, rc, vc) in ratios.items():
        mark = "ok" if min(r, v) >= TARGET else "BELOW TARGET"
        print(f"  {name:14s} replay {r:5.2f}x ({rc:.2f}x)  validate {v:5.2f}x ({vc:.2f}x)  {mark}")


if __name__ == "__main__":
    main()
