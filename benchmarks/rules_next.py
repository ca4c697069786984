"""Benchmark: whole-process ``schedlog rules next --record REC --count N`` against cronsim.

Run from the repository root, with the ``bench`` extra installed::

    python -m benchmarks.rules_next [--count 100000] [--repeat 5] [--baseline DIR]

For each case (``*/15 9-17 * * 1-5`` in Asia/Shanghai, ``30 2 * * *`` in America/New_York) it
times, as whole processes, interleaved, ``--repeat`` times each (medians kept):

* ``schedlog rules next --record REC --count N`` and the same with ``--count 1``, where REC is
  the host record of the cron rule created at 2026-01-01T00:00:00Z;
* a Python script that iterates ``cronsim.CronSim`` N times (and 1 time) from the same instant,
  with the zone read from the pinned ``tzdata`` package, keeping the datetimes in a list.

Start-up is taken off by subtracting the 1-target run: per target =
``(median(N) - median(1)) / (N - 1)``. The target of issue 9 is schedlog at least 10x faster
per target than cronsim. ``--baseline DIR`` also runs the ``schedlog`` package found in DIR
(another commit's checkout, first on ``PYTHONPATH``) and requires the same output.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import time

from schedlog.rules.instants import parse_canonical_instant
from schedlog.rules.records import build_host_record
from schedlog.rules.text import js_dumps

START = "2026-01-01T00:00:00.000Z"
CASES = [("*/15 9-17 * * 1-5", "Asia/Shanghai"), ("30 2 * * *", "America/New_York")]

CRONSIM_SCRIPT = """
import sys
from datetime import datetime, timezone
from importlib import resources
from io import BytesIO
from zoneinfo import ZoneInfo
from cronsim import CronSim

expression, name, count = sys.argv[1], sys.argv[2], int(sys.argv[3])
data = resources.files("tzdata").joinpath("zoneinfo", *name.split("/")).read_bytes()
zone = ZoneInfo.from_file(BytesIO(data), key=name)
start = datetime(2026, 1, 1, tzinfo=timezone.utc).astimezone(zone)
it = CronSim(expression, start)
targets = [next(it) for _ in range(count)]
print(len(targets), targets[-1].isoformat())
"""


def _run(argv: list[str], path: str | None = None) -> tuple[float, bytes]:
    env = dict(os.environ)
    if path is not None:
        env["PYTHONPATH"] = path
    start = time.perf_counter()
    done = subprocess.run(argv, capture_output=True, env=env)
    elapsed = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"{argv[:3]} failed: {done.stderr.decode()[-2000:]}")
    return elapsed, done.stdout


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--baseline", metavar="DIR", help="also time the schedlog found in DIR")
    args = parser.parse_args()
    exe = shutil.which("schedlog", path=os.path.dirname(sys.executable)) or shutil.which("schedlog")
    if exe is None:
        raise SystemExit("the schedlog console script is not installed (pip install -e .)")
    now = parse_canonical_instant(START)
    assert now is not None
    for expression, zone in CASES:
        create = {
            "prompt": "p",
            "title": "t",
            "cron": {"expression": expression, "time_zone": zone},
        }
        record = js_dumps(build_host_record(create, id="r", now=now).to_json())
        sides: dict[str, tuple[list[str], str | None]] = {}
        if args.baseline is not None:
            sides["baseline"] = (
                [exe, "rules", "next", "--record", record, "--at", START],
                args.baseline,
            )
        sides["schedlog"] = ([exe, "rules", "next", "--record", record, "--at", START], None)
        sides["cronsim"] = ([sys.executable, "-c", CRONSIM_SCRIPT, expression, zone], None)
        times: dict[tuple[str, int], list[float]] = {}
        outputs: dict[str, bytes] = {}
        for _ in range(args.repeat):
            for side, (argv, path) in sides.items():
                for count in (1, args.count):
                    extra = [str(count)] if side == "cronsim" else ["--count", str(count)]
                    elapsed, out = _run([*argv, *extra], path)
                    times.setdefault((side, count), []).append(elapsed)
                    if count == args.count:
                        outputs[side] = out
        upcoming = json.loads(outputs["schedlog"])["upcoming"]
        assert len(upcoming) == args.count
        if "baseline" in outputs and outputs["baseline"] != outputs["schedlog"]:
            raise SystemExit(f"{expression} {zone}: the output differs from the baseline")
        print(f"{expression!r} in {zone}: {args.repeat} interleaved runs, wall s median (min)")
        per: dict[str, float] = {}
        for side in sides:
            one, many = times[side, 1], times[side, args.count]
            per[side] = (statistics.median(many) - statistics.median(one)) / (args.count - 1)
            print(
                f"  {side:9s} count 1 {statistics.median(one):.3f} ({min(one):.3f}),"
                f" count {args.count} {statistics.median(many):.3f} ({min(many):.3f}),"
                f" per target {per[side] * 1e6:.2f} us"
            )
        for side in sides:
            if side != "cronsim":
                print(
                    f"  cronsim / {side}: {per['cronsim'] / per[side]:.1f}x per target"
                    " (target >= 10)"
                )
        if "baseline" in outputs:
            print("  output identical to the baseline's")
    print(f"load average {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
