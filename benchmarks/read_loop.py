"""Benchmark: the reader's read loop, ``schedlog.eventlog.reader.parse_lines``, in its four modes.

Run from the repository root (schedlog installed, e.g. ``pip install -e .``)::

    python -m benchmarks.read_loop [--events 50000] [--seed 7] [--repeat 5] [--inner 3]
                                   [--baseline DIR]

It writes the ``heavy-compact`` and ``chat-compact`` logs of :mod:`benchmarks.replay` (``--events``
events after the header, fixed seeds) and a third, ``corrupt-early``: the chat log with its line
2 made invalid JSON, so everything after it is only measured. For each log and each mode
(``keep``/``summary`` = ``keep_events`` True/False; ``fast``/``ref`` = ``fast`` True/False) a
child process reads the file into memory once and times ``parse_lines`` over it ``--inner``
times (CPU time, the best kept). The children run ``--repeat`` times, interleaved (with
``--baseline DIR``, a source tree holding an older ``schedlog/``, e.g. ``git archive main | tar
-x -C DIR``, each child also runs with that tree first on ``PYTHONPATH``, named ``-before``, and
must give the same result); the medians are printed in ms per log, and the ratio after / before.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from benchmarks.replay import LOGS, generate_events, write_log

MODES = {
    "keep-fast": (True, True),
    "summary-fast": (False, True),
    "keep-ref": (True, False),
    "summary-ref": (False, False),
}

#: The child: prints ``{"ms": best CPU ms, "result": what the read found}``.
CHILD = """
import io, json, sys, time
from schedlog.eventlog.reader import parse_lines
path, keep, fast, inner = sys.argv[1], sys.argv[2] == "1", sys.argv[3] == "1", int(sys.argv[4])
data = open(path, "rb").read()
best = None
for _ in range(inner):
    start = time.process_time()
    out = parse_lines(io.BytesIO(data), file="f", keep_events=keep, fast=fast)
    spent = time.process_time() - start
    best = spent if best is None else min(best, spent)
corruption = None if out.corruption is None else [out.corruption.line, out.corruption.rule]
result = [out.event_count, len(out.events), len(out.changes), out.complete_size,
          len(out.torn_tail), out.header_size, corruption]
print(json.dumps({"ms": best * 1000, "result": result}))
"""


def write_logs(folder: Path, events: int, seed: int) -> dict[str, Path]:
    paths: dict[str, Path] = {}
    for name in ("heavy-compact", "chat-compact"):
        shape, dumps = LOGS[name]
        values, _counts = generate_events(events, seed, shape)
        paths[name] = folder / f"{name}.jsonl"
        write_log(paths[name], values, dumps)
    lines = paths["chat-compact"].read_bytes().split(b"\n")
    lines[1] = b"{not json"
    paths["corrupt-early"] = folder / "corrupt-early.jsonl"
    paths["corrupt-early"].write_bytes(b"\n".join(lines) + b"torn")
    return paths


def child(tree: Path | None, path: Path, keep: bool, fast: bool, inner: int) -> tuple[float, str]:
    """The best CPU ms of the child's reads, and what they found (as JSON text)."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    if tree is not None:
        env["PYTHONPATH"] = str(tree)
    argv = [sys.executable, "-c", CHILD, str(path), str(int(keep)), str(int(fast)), str(inner)]
    # cwd: the log's folder, so that `python -c` (cwd first on sys.path) imports the tree asked for.
    done = subprocess.run(argv, capture_output=True, check=True, env=env, cwd=path.parent)
    out = json.loads(done.stdout)
    return float(out["ms"]), json.dumps(out["result"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--events", type=int, default=50_000, help="events after the header")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--repeat", type=int, default=5, help="child runs of each (median)")
    parser.add_argument("--inner", type=int, default=3, help="reads per child (best kept)")
    parser.add_argument("--baseline", metavar="DIR", help="a source tree with an older schedlog/")
    args = parser.parse_args()
    trees: dict[str, Path | None] = {"": None}
    if args.baseline is not None:
        base = Path(args.baseline).resolve()
        if not (base / "schedlog" / "__init__.py").is_file():
            raise SystemExit(f"--baseline {base}: no schedlog/ package there")
        trees["-before"] = base
    with tempfile.TemporaryDirectory() as tmp:
        paths = write_logs(Path(tmp), args.events, args.seed)
        print(f"{'log':<15} {'mode':<13}" + "".join(f" {'ms' + s:>10}" for s in trees), end="")
        print("  after/before" if len(trees) > 1 else "")
        for log, path in paths.items():
            for mode, (keep, fast) in MODES.items():
                times: dict[str, list[float]] = {suffix: [] for suffix in trees}
                results: set[str] = set()
                for _ in range(args.repeat):
                    for suffix, tree in trees.items():
                        ms, result = child(tree, path, keep, fast, args.inner)
                        times[suffix].append(ms)
                        results.add(result)
                assert len(results) == 1, f"{log} {mode}: the trees read differently: {results}"
                medians = {suffix: statistics.median(t) for suffix, t in times.items()}
                row = f"{log:<15} {mode:<13}" + "".join(f" {m:>10.1f}" for m in medians.values())
                if len(trees) > 1:
                    row += f"  {medians[''] / medians['-before']:>12.3f}"
                print(row, flush=True)


if __name__ == "__main__":
    main()
