"""Lone surrogates through the command line (issue 22 item 1; docs/protocol.md#json-output):
a ``host batch`` create carrying ``\\ud800`` escapes, then ``host catalog`` as a table and as
JSON, ``host batch`` reads, and ``validate --store``, on every backend, as real processes with
a strict UTF-8 stdout (a ``print`` of a lone surrogate there raises ``UnicodeEncodeError``)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests import pg

NOW = "2026-05-01T06:00:00Z"
CREATE = (
    '{"op":"schedule_create","session":"s-1","now":"' + NOW + '","args":{"title":"x\\ud800<&y",'
    '"prompt":"p\\udc00q","after_seconds":3600}}'
)
LIST = '{"op":"schedule_list","session":"s-1","now":"' + NOW + '","args":{}}'
CATALOG = '{"op":"catalog","now":"' + NOW + '","args":{}}'


@pytest.fixture(scope="module")
def pg_database() -> Iterator[str]:
    yield from pg.fresh_database()


@pytest.fixture(params=["sqlite", "json", "postgresql"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "postgresql":
        url = str(request.getfixturevalue("pg_database"))
        pg.reset(url)
        return url
    return str(tmp_path / ("store.json" if request.param == "json" else "store.db"))


def schedlog(*argv: str, stdin: str = "") -> subprocess.CompletedProcess[bytes]:
    env = {**os.environ, "PYTHONIOENCODING": "utf-8", "PYTHONUTF8": "1"}
    return subprocess.run(
        [sys.executable, "-m", "schedlog.cli.main", *argv],
        input=stdin.encode(),
        capture_output=True,
        env=env,
        timeout=120,
        check=False,
    )


def test_catalog_table_json_and_batch_reads_keep_the_escape(tmp_path: Path, store: str) -> None:
    sessions = str(tmp_path / "sessions")
    batch = ["host", "batch", "--store", store, "--sessions", sessions]
    created = schedlog(*batch, stdin=CREATE + "\n")
    assert created.returncode == 0, created.stderr
    assert b'"title":"x\\ud800<&y"' in created.stdout, created.stdout
    for _ in range(2):  # and again in a new process: what was stored reads back the same
        reads = schedlog(*batch, stdin=LIST + "\n" + CATALOG + "\n")
        assert reads.returncode == 0, reads.stderr
        listed, catalog = reads.stdout.splitlines()
        for line in (listed, catalog):
            assert b'"title":"x\\ud800<&y"' in line and b'"prompt":"p\\udc00q"' in line, line
            assert "ok" in json.loads(line)
        as_json = schedlog("host", "catalog", "--store", store, "--json")
        assert as_json.returncode == 0, as_json.stderr
        assert b'"title":"x\\ud800<&y"' in as_json.stdout
        table = schedlog("host", "catalog", "--store", store)
        assert table.returncode == 0, table.stderr
        assert b"Traceback" not in table.stderr
        assert b"x\\ud800<&y" in table.stdout, table.stdout
    checked = schedlog("validate", "--store", store)
    assert checked.returncode == 0, (checked.stdout, checked.stderr)
