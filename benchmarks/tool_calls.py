"""Benchmark: the cost of one session-local tool call on a long session log.

Run from the repository root (schedlog installed, e.g. ``pip install -e .``)::

    python -m benchmarks.tool_calls [--events 200000] [--seed 7] [--calls 200] [--repeat 5]

It writes the ``chat-compact`` log of :mod:`benchmarks.replay` (``--events`` chat and tool
events with about 2% schedule changes, fixed seed), then runs whole-process
``schedlog session batch --log COPY`` on a fresh copy of it with 1 request and with ``--calls``
requests (``schedule_list`` and ``schedule_create`` alternating; every create appends a
change, which the next call must see), interleaved, ``--repeat`` times each. The cost of one
call is ``(median(N calls) - median(1 call)) / (N - 1)``, so opening the session (reading and
folding the whole log) counts once and is reported apart, as the median of the 1-call runs.
Every call's answer is checked (a list, or a created view). ``--baseline DIR`` runs the same
with the ``schedlog`` package found in DIR (a checkout of another commit, put first on
``PYTHONPATH``), interleaved with the installed one, for before/after figures.

The whole-process figure is a difference of two runs of several seconds (the open reads the
whole log), so on a loaded machine its noise is larger than a call. The same runs therefore also
time the calls inside one process (``IN_PROCESS``, a fresh process per run and side,
interleaved): open the session with one ``schedule_list``, then ``--calls`` calls as above,
timed together and divided by their number, with every ``os.fsync`` counted and timed.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.replay import generate_events, write_log
from schedlog.rules.text import js_dumps

NOW = "2026-06-01T00:00:00Z"

IN_PROCESS = """
import json, os, sys, time
from schedlog.rules.instants import parse_canonical_instant
from schedlog.runtime.batch import BatchSession

path, calls = sys.argv[1], int(sys.argv[2])
fsync = os.fsync
count, spent = [0], [0.0]


def timed(fd):
    start = time.perf_counter()
    fsync(fd)
    spent[0] += time.perf_counter() - start
    count[0] += 1


os.fsync = timed
now = parse_canonical_instant("2026-06-01T00:00:00.000Z")
session = BatchSession(path)
assert isinstance(session.schedule_list(now, {}), list)  # the open
count[0], spent[0] = 0, 0.0
start = time.perf_counter()
for i in range(calls):
    if i % 2:
        args = {"prompt": f"Reminder {i}", "after_seconds": 3600 + i}
        assert "id" in session.schedule_create(now, args)
    else:
        assert isinstance(session.schedule_list(now, {}), list)
elapsed = time.perf_counter() - start
session.close()
print(json.dumps({"call": elapsed / calls, "fsyncs": count[0], "fsync": spent[0] / calls}))
"""


def requests(calls: int) -> bytes:
    out = []
    for i in range(calls):
        if i % 2:
            args = {"prompt": f"Reminder {i}", "after_seconds": 3600 + i}
            out.append({"op": "schedule_create", "now": NOW, "args": args})
        else:
            out.append({"op": "schedule_list", "now": NOW, "args": {}})
    return "".join(js_dumps(r) + "\n" for r in out).encode()


def run(
    command: list[str], log: Path, source: Path, stdin: bytes, calls: int, path: str | None
) -> float:
    shutil.copyfile(source, log)
    env = dict(os.environ)
    if path is not None:
        env["PYTHONPATH"] = path
    start = time.perf_counter()
    done = subprocess.run([*command, "--log", str(log)], input=stdin, capture_output=True, env=env)
    elapsed = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"session batch failed: {done.stderr.decode()[-2000:]}")
    answers = [json.loads(line) for line in done.stdout.splitlines()]
    assert len(answers) == calls, done.stdout[-500:]
    for i, answer in enumerate(answers):
        value = answer.get("ok")
        assert isinstance(value, list) if i % 2 == 0 else "id" in value, answer
    return elapsed


def in_process(log: Path, source: Path, calls: int, path: str | None) -> dict[str, float]:
    """The calls timed inside one fresh process (``IN_PROCESS``) on a fresh copy of the log."""
    shutil.copyfile(source, log)
    env = dict(os.environ)
    if path is not None:
        env["PYTHONPATH"] = path
    done = subprocess.run(  # run from the log's folder: "" on sys.path must not be a checkout
        [sys.executable, "-c", IN_PROCESS, str(log), str(calls)],
        capture_output=True,
        env=env,
        check=False,
        cwd=log.parent,
    )
    if done.returncode != 0:
        raise SystemExit(f"in-process run failed: {done.stderr.decode()[-2000:]}")
    result: dict[str, float] = json.loads(done.stdout)
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=200_000)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--baseline", metavar="DIR", help="also time the schedlog found in DIR")
    args = parser.parse_args()
    exe = shutil.which("schedlog", path=os.path.dirname(sys.executable)) or shutil.which("schedlog")
    if exe is None:
        raise SystemExit("the schedlog console script is not installed (pip install -e .)")
    command = [exe, "session", "batch"]
    workdir = Path(tempfile.mkdtemp(prefix="schedlog-tools-"))
    try:
        source = workdir / "chat-compact.jsonl"
        values, _ = generate_events(args.events, args.seed, "chat")
        write_log(source, values, js_dumps)
        print(
            f"log: {args.events:,} events, {source.stat().st_size / 1e6:.1f} MB, seed {args.seed}"
        )
        log = workdir / "session.jsonl"
        one, many = requests(1), requests(args.calls)
        sides = (
            {"schedlog": None}
            if args.baseline is None
            else {
                "baseline": args.baseline,
                "schedlog": None,
            }
        )
        single: dict[str, list[float]] = {side: [] for side in sides}
        batch: dict[str, list[float]] = {side: [] for side in sides}
        inner: dict[str, list[dict[str, float]]] = {side: [] for side in sides}
        for _ in range(args.repeat):
            for side, path in sides.items():
                single[side].append(run(command, log, source, one, 1, path))
                batch[side].append(run(command, log, source, many, args.calls, path))
                inner[side].append(in_process(log, source, args.calls, path))
        print(f"{args.repeat} interleaved runs, wall s median (min):")
        for side in sides:
            s1, sn = single[side], batch[side]
            per_call = (statistics.median(sn) - statistics.median(s1)) / (args.calls - 1)
            print(
                f"  {side}: 1 call (open + 1 call) {statistics.median(s1):.3f} ({min(s1):.3f}),"
                f" {args.calls} calls {statistics.median(sn):.3f} ({min(sn):.3f}),"
                f" per call {per_call * 1000:.2f} ms (target <= 2 ms)"
            )
        print(f"in one process, {args.repeat} interleaved runs, median (min):")
        for side in sides:
            calls = [r["call"] * 1000 for r in inner[side]]
            fsyncs = [r["fsync"] * 1000 for r in inner[side]]
            print(
                f"  {side}: per call {statistics.median(calls):.2f} ms ({min(calls):.2f}),"
                f" of which fsync {statistics.median(fsyncs):.2f} ms;"
                f" {inner[side][0]['fsyncs']:.0f} fsyncs for {args.calls} calls"
            )
        print(f"load average {os.getloadavg()[0]:.1f}")
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    main()
