"""Benchmark: the hot paths whose memos moved onto objects (issue 10), for an A/B of two trees.

Run from a tree's root with the ``bench`` extra installed, alternating trees::

    python -m benchmarks.memo_owners LABEL

Prints ``LABEL``, schedlog's CPU µs per cron target for the two ``benchmarks.cron_next`` cases
(best of 3 cold runs of 100,000 targets, ``benchmarks.cron_next.time_ours``), and CPU µs per
``parse_canonical_instant`` call over 1,680 distinct instants of 28 dates (best of 5 runs).
"""

from __future__ import annotations

import sys
import time

from benchmarks.cron_next import CASES, time_ours
from schedlog.rules.instants import parse_canonical_instant


def main() -> None:
    out = [sys.argv[1] if len(sys.argv) > 1 else "run"]
    for expression, zone in CASES:
        best = min(time_ours(expression, zone, 100_000) for _ in range(3))
        out.append(f"{best / 100_000 * 1e6:.2f}")
    texts = [f"2026-05-{d:02d}T09:{m:02d}:00.000Z" for d in range(1, 29) for m in range(60)]
    runs = []
    for _ in range(5):
        started = time.process_time()
        for _ in range(30):
            for text in texts:
                parse_canonical_instant(text)
        runs.append((time.process_time() - started) / (30 * len(texts)) * 1e6)
    out.append(f"{min(runs):.3f}")
    print(*out)


if __name__ == "__main__":
    main()
