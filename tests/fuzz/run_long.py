"""The long fuzz run: every target driven by a seeded generator, counting inputs and escapes.

Not part of CI. Usage (from the repository root, in the venv)::

    python -m tests.fuzz.run_long --total 1000000 --jobs 2 --seed 1
    python -m tests.fuzz.run_long --replay cron 1234567   # one input, verbose

Each target gets ``total × weight / Σ weights`` inputs, split into chunks that ``--jobs``
worker processes run. Input ``i`` of a chunk is generated from its own 64-bit seed, so every
escape is printed with ``--replay TARGET SEED`` and reproduces exactly. An escape is any
:class:`~tests.fuzz.oracle.Escape` (an undocumented exception, a code outside docs/errors.md, a
value that is not JSON, a swallowed exception); a generator failure is counted apart (it is a
bug of the fuzzer, not of the library).
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import random
import sys
import time
import traceback
from collections.abc import Iterator
from typing import Any, NamedTuple

CHUNK = 2_000
MAX_REPORTED = 5


class Chunk(NamedTuple):
    target: str
    count: int
    seed: int


class Result(NamedTuple):
    target: str
    inputs: int
    escapes: int
    generator_errors: int
    seconds: float
    samples: list[str]


def _setup() -> None:
    # Quiet diagnostics; the targets capture what they check.
    from tests.fuzz.envs import quiet_structlog

    quiet_structlog()


def run_chunk(chunk: Chunk) -> Result:
    from tests.fuzz.gen import RandomSource
    from tests.fuzz.oracle import Escape
    from tests.fuzz.targets import TARGETS

    target = TARGETS[chunk.target]
    seeds = random.Random(chunk.seed)
    escapes = generator_errors = 0
    samples: list[str] = []
    start = time.perf_counter()
    for _ in range(chunk.count):
        seed = seeds.getrandbits(64)
        try:
            value = target.gen(RandomSource(seed))
        except Exception as exc:
            generator_errors += 1
            if len(samples) < MAX_REPORTED:
                samples.append(f"generator {seed}: {exc!r}"[:500])
            continue
        try:
            target.run(value)
        except Escape as exc:
            escapes += 1
            if len(samples) < MAX_REPORTED:
                samples.append(f"escape {seed}: {exc}"[:1000])
        except Exception as exc:  # the harness itself failed: report it as an escape too
            escapes += 1
            if len(samples) < MAX_REPORTED:
                samples.append(f"harness {seed}: {exc!r}"[:1000])
    seconds = time.perf_counter() - start
    return Result(chunk.target, chunk.count, escapes, generator_errors, seconds, samples)


def plan(total: int, names: list[str], seed: int) -> list[Chunk]:
    from tests.fuzz.targets import TARGETS

    weights = {n: TARGETS[n].weight for n in names}
    scale = sum(weights.values())
    rng = random.Random(seed)
    chunks: list[Chunk] = []
    for name in names:
        count = -(-total * weights[name] // scale)
        while count > 0:
            n = min(CHUNK, count)
            chunks.append(Chunk(name, n, rng.getrandbits(64)))
            count -= n
    rng.shuffle(chunks)  # mix cheap and costly targets across the workers
    return chunks


def _results(chunks: list[Chunk], jobs: int) -> Iterator[Result]:
    if jobs <= 1:
        _setup()
        for chunk in chunks:
            yield run_chunk(chunk)
        return
    with multiprocessing.get_context("fork").Pool(jobs, initializer=_setup) as pool:
        yield from pool.imap_unordered(run_chunk, chunks)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.fuzz.run_long", description=__doc__)
    parser.add_argument("--total", type=int, default=1_000_000, help="inputs over all targets")
    parser.add_argument("--jobs", type=int, default=min(2, os.cpu_count() or 1))
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--targets", help="comma-separated subset (default: all)")
    parser.add_argument("--json", metavar="PATH", help="also write the figures as JSON")
    parser.add_argument("--replay", nargs=2, metavar=("TARGET", "SEED"), help="run one input")
    args = parser.parse_args(argv)

    from tests.fuzz.targets import TARGETS

    if args.replay:
        return replay(args.replay[0], int(args.replay[1]))
    names = args.targets.split(",") if args.targets else list(TARGETS)
    chunks = plan(args.total, names, args.seed)
    totals: dict[str, list[Any]] = {n: [0, 0, 0, 0.0, []] for n in names}
    started = time.perf_counter()
    done = 0
    for result in _results(chunks, args.jobs):
        row = totals[result.target]
        row[0] += result.inputs
        row[1] += result.escapes
        row[2] += result.generator_errors
        row[3] += result.seconds
        row[4].extend(result.samples[: MAX_REPORTED - len(row[4])])
        done += result.inputs
        print(
            f"\r{done:,} inputs, {sum(r[1] for r in totals.values())} escapes, "
            f"{time.perf_counter() - started:.0f} s",
            end="",
            file=sys.stderr,
            flush=True,
        )
    wall = time.perf_counter() - started
    print(file=sys.stderr)
    print(f"{'target':<16} {'inputs':>10} {'escapes':>8} {'gen err':>8} {'cpu s':>8} {'in/s':>8}")
    for name in names:
        inputs, escapes, gen_errors, seconds, _ = totals[name]
        rate = inputs / seconds if seconds else 0.0
        print(f"{name:<16} {inputs:>10,} {escapes:>8} {gen_errors:>8} {seconds:>8.1f} {rate:>8.0f}")
    all_inputs = sum(r[0] for r in totals.values())
    all_escapes = sum(r[1] for r in totals.values())
    all_gen = sum(r[2] for r in totals.values())
    print(f"{'TOTAL':<16} {all_inputs:>10,} {all_escapes:>8} {all_gen:>8}  wall {wall:.0f} s")
    for name in names:
        for sample in totals[name][4]:
            print(f"[{name}] {sample}")
    if args.json:
        figures = {
            "seed": args.seed,
            "jobs": args.jobs,
            "wall_seconds": round(wall, 1),
            "total_inputs": all_inputs,
            "total_escapes": all_escapes,
            "generator_errors": all_gen,
            "targets": {
                n: {"inputs": r[0], "escapes": r[1], "cpu_seconds": round(r[3], 1)}
                for n, r in totals.items()
            },
        }
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump(figures, f, indent=2)
    return 1 if all_escapes or all_gen else 0


def replay(name: str, seed: int) -> int:
    """Generate and run one input verbosely."""
    from tests.fuzz.gen import RandomSource
    from tests.fuzz.targets import TARGETS

    _setup()
    value = TARGETS[name].gen(RandomSource(seed))
    print(f"input: {value!r}"[:5000])
    try:
        TARGETS[name].run(value)
    except Exception:
        traceback.print_exc()
        return 1
    print("ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
