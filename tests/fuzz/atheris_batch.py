"""Coverage-guided fuzzing of batch request lines with atheris (libFuzzer). Not run in CI.

``atheris`` is not a dependency: ``pip install -e '.[fuzz]'`` (or ``pip install atheris``),
then from the repository root::

    python -m tests.fuzz.atheris_batch -runs=200000            # raw bytes on stdin
    SCHEDLOG_ATHERIS=structured python -m tests.fuzz.atheris_batch -max_len=8192 -len_control=0

Raw mode: the first byte picks the handler table (rules, session, host), the rest is what
arrives on stdin, decoded as a strict UTF-8 locale decodes it. Structured mode: the bytes
drive the Hypothesis strategy of the ``batch_lines`` target (valid requests mutated one member
at a time). Either way the property is the fuzz suite's: one JSON answer per request line,
codes from docs/errors.md, no exception escaping. Any libFuzzer flag (``-runs``, ``-max_len``,
``-max_total_time``, a corpus directory) is passed through.
"""

from __future__ import annotations

import os
import sys
from typing import Any

import atheris  # type: ignore[import-not-found]

with atheris.instrument_imports(include=["schedlog"]):
    import schedlog.cli.common
    import schedlog.cli.main
    import schedlog.eventlog
    import schedlog.host.service
    import schedlog.rules.records
    import schedlog.runtime.batch  # noqa: F401  (instrumented for coverage feedback)

from hypothesis import given, settings

from tests.fuzz.envs import quiet_structlog
from tests.fuzz.targets import TABLES, TARGETS


def raw_input(data: bytes) -> None:
    table = TABLES[data[0] % len(TABLES)] if data else "rules"
    TARGETS["batch_bytes"].run((table, data[1:]))


@settings(database=None)
@given(TARGETS["batch_lines"].strategy())
def _structured(item: Any) -> None:
    TARGETS["batch_lines"].run(item)


def structured_input(data: bytes) -> None:
    _structured.hypothesis.fuzz_one_input(data)


def main() -> None:
    quiet_structlog()
    structured = os.environ.get("SCHEDLOG_ATHERIS") == "structured"
    atheris.Setup(sys.argv, structured_input if structured else raw_input)
    atheris.Fuzz()


if __name__ == "__main__":
    main()
