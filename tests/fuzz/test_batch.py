"""Fuzz batch request lines: structured-but-wrong JSON and raw bytes through run_batch with
each command's handler table (rules, session, host); one JSON answer per line, always."""

from __future__ import annotations

from typing import Any

from hypothesis import example, given

from tests.fuzz.targets import TARGETS


@given(TARGETS["batch_lines"].strategy())
def test_batch_lines(item: Any) -> None:
    TARGETS["batch_lines"].run(item)


# Regression: under a UTF-8 locale stdin is decoded strictly, and the first invalid byte ended
# the whole batch with a UnicodeDecodeError instead of an invalid_request answer.
@example(("rules", b'{"op":"canonical_zone","time_zone":"\xff"}\n{"op":"canonical_zone"}\n'))
@example(("rules", b"\xc8"))
@example(("host", b"\xff\n{}\n"))
@example(("session", b'{"op":"tick","now":"2026-05-01T00:00:00Z"}\n\xff\xfe\n'))
@given(TARGETS["batch_bytes"].strategy())
def test_batch_bytes(item: Any) -> None:
    TARGETS["batch_bytes"].run(item)


def test_strict_utf8_stdin_end_to_end(tmp_path: Any) -> None:
    """The real command under a strict UTF-8 stdin answers every line (the fix in cli.main)."""
    import os
    import subprocess
    import sys

    env = dict(os.environ, PYTHONIOENCODING="utf-8:strict")
    lines = (
        b'{"op":"canonical_zone","time_zone":"\xff"}\n\xfe\n'
        b'{"op":"canonical_zone","time_zone":"UTC"}\n'
    )
    done = subprocess.run(
        [sys.executable, "-m", "schedlog.cli.main", "rules", "batch"],
        input=lines,
        capture_output=True,
        env=env,
        check=False,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    answers = done.stdout.decode().splitlines()
    assert [a.startswith('{"error":{"code":"invalid_request"') for a in answers] == [
        True,
        True,
        False,
    ]
    assert answers[2] == '{"ok":"UTC"}'
