"""Benchmark: successive cron targets with schedlog, cronsim and croniter, side by side.

Run from the repository root, with the ``bench`` extra installed::

    python -m benchmarks.cron_next [--count 100000] [--repeat 3] [--compare 5000]

For each case it walks the next ``--count`` targets from 2026-01-01T00:00:00Z with each library,
``--repeat`` times, and prints the median CPU time per target (``time.process_time``, so other
processes on a busy machine weigh less than in wall time) and the ratios. schedlog's memos
belong to the rule and the zone, and each run uses new ones, so each run starts cold. All three
read the same pinned ``tzdata`` files. It then compares the three libraries' targets and lists
where they differ, which is around DST changes: the libraries resolve nonexistent and repeated
local times differently.
"""

from __future__ import annotations

import argparse
import dataclasses
import statistics
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from importlib import resources
from io import BytesIO
from zoneinfo import ZoneInfo

from croniter import croniter
from cronsim import CronSim

from schedlog.rules.cron import cron_next, parse_cron
from schedlog.rules.instants import format_instant, parse_canonical_instant
from schedlog.rules.zones import Zone, get_zone

START = "2026-01-01T00:00:00.000Z"
CASES = [
    ("*/15 9-17 * * 1-5", "Asia/Shanghai"),
    ("30 2 * * *", "America/New_York"),
]
# Extra cases for the semantics comparison only: a repeated local time and another zone.
SEMANTICS_ONLY = [
    ("30 1 * * *", "America/New_York"),
    ("30 2 * * *", "Europe/Berlin"),
    ("*/30 1-3 * * *", "Europe/Berlin"),
]


def pinned_zoneinfo(name: str) -> ZoneInfo:
    """A ZoneInfo read from the pinned tzdata package, never the system's zoneinfo."""
    data = resources.files("tzdata").joinpath("zoneinfo", *name.split("/")).read_bytes()
    return ZoneInfo.from_file(BytesIO(data), key=name)


def to_ms(value: datetime) -> int:
    return int(value.timestamp() * 1000)


def ours(expression: str, zone_name: str) -> Iterator[int]:
    rule = parse_cron(expression)
    zone = get_zone(zone_name)
    assert zone is not None
    floor: int | None = parse_canonical_instant(START)
    while True:
        assert floor is not None
        floor = cron_next(rule, zone, floor)
        if floor is None:
            return
        yield floor


def start_datetime(zone_name: str) -> datetime:
    return datetime(2026, 1, 1, tzinfo=UTC).astimezone(pinned_zoneinfo(zone_name))


def with_cronsim(expression: str, zone_name: str) -> Iterator[int]:
    for value in CronSim(expression, start_datetime(zone_name)):
        yield to_ms(value)


def with_croniter(expression: str, zone_name: str) -> Iterator[int]:
    it = croniter(expression, start_datetime(zone_name))
    while True:
        yield to_ms(it.get_next(datetime))


def time_ours(expression: str, zone_name: str, count: int) -> float:
    # A new rule and a new zone own empty memos, so each run starts cold.
    rule = dataclasses.replace(parse_cron(expression))
    zone = Zone(zone_name)
    floor = parse_canonical_instant(START)
    assert floor is not None
    started = time.process_time()
    for _ in range(count):
        following = cron_next(rule, zone, floor)
        assert following is not None
        floor = following
    return time.process_time() - started


def time_cronsim(expression: str, zone_name: str, count: int) -> float:
    it = CronSim(expression, start_datetime(zone_name))
    started = time.process_time()
    for _ in range(count):
        next(it)
    return time.process_time() - started


def time_croniter(expression: str, zone_name: str, count: int) -> float:
    it = croniter(expression, start_datetime(zone_name))
    started = time.process_time()
    for _ in range(count):
        it.get_next(datetime)
    return time.process_time() - started


TIMERS: list[tuple[str, Callable[[str, str, int], float]]] = [
    ("schedlog", time_ours),
    ("cronsim", time_cronsim),
    ("croniter", time_croniter),
]


def benchmark(count: int, repeat: int) -> None:
    print(f"next {count:,} targets from {START}; median of {repeat} runs, CPU µs per target")
    print(f"{'expression':<20} {'zone':<18} {'schedlog':>9} {'cronsim':>9} {'croniter':>9}"
          f" {'cronsim/ours':>13} {'croniter/ours':>14}")  # fmt: skip
    for expression, zone_name in CASES:
        runs: dict[str, list[float]] = {name: [] for name, _ in TIMERS}
        for _ in range(repeat):  # interleaved, so slow phases of a busy machine hit all three
            for name, timer in TIMERS:
                runs[name].append(timer(expression, zone_name, count))
        per = {name: statistics.median(r) / count * 1e6 for name, r in runs.items()}
        print(
            f"{expression:<20} {zone_name:<18} {per['schedlog']:>9.2f} {per['cronsim']:>9.2f}"
            f" {per['croniter']:>9.2f} {per['cronsim'] / per['schedlog']:>12.1f}x"
            f" {per['croniter'] / per['schedlog']:>13.1f}x"
        )


def local_text(instant: int, zone_name: str) -> str:
    value = datetime.fromtimestamp(instant / 1000, tz=pinned_zoneinfo(zone_name))
    return value.strftime("%Y-%m-%d %H:%M %z")


def compare(count: int) -> None:
    print(f"\nDifferences in the first {count:,} targets (UTC instant, local reading):")
    for expression, zone_name in CASES + SEMANTICS_ONLY:
        lists = {
            "schedlog": take(ours(expression, zone_name), count),
            "cronsim": take(with_cronsim(expression, zone_name), count),
            "croniter": take(with_croniter(expression, zone_name), count),
        }
        mine = set(lists["schedlog"])
        print(f"  {expression!r} in {zone_name}:")
        for name in ("cronsim", "croniter"):
            theirs = set(lists[name])
            horizon = min(lists[name][-1], lists["schedlog"][-1])
            extra = sorted(t for t in theirs - mine if t <= horizon)
            missing = sorted(t for t in mine - theirs if t <= horizon)
            if not extra and not missing:
                print(f"    {name}: same targets")
                continue
            print(f"    {name}: {len(extra)} targets schedlog does not fire, "
                  f"{len(missing)} schedlog fires that {name} does not; first few:")  # fmt: skip
            for label, values in (("only " + name, extra), ("only schedlog", missing)):
                for t in values[:3]:
                    print(f"      {label:<15} {format_instant(t)}  {local_text(t, zone_name)}")


def take(values: Iterator[int], count: int) -> list[int]:
    out: list[int] = []
    for value in values:
        out.append(value)
        if len(out) == count:
            break
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--compare", type=int, default=5_000, help="targets compared per case")
    args = parser.parse_args()
    benchmark(args.count, args.repeat)
    compare(args.compare)


if __name__ == "__main__":
    main()
