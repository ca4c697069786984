"""Every ``$ command`` in the console blocks of README.md (and of README.pypi.md, the PyPI
page) prints exactly the lines shown after it,
and exits with the status the README documents: 1 when a shown result line reports a checked
file that failed (``"ok":false``, the offline commands' exit-1 case), else 0."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def _examples() -> list[tuple[str, str]]:
    text = "\n".join((ROOT / name).read_text("utf-8") for name in ("README.md", "README.pypi.md"))
    examples: list[tuple[str, str]] = []
    for block in re.findall(r"```console\n(.*?)```", text, flags=re.S):
        command: str | None = None
        output: list[str] = []
        for line in block.splitlines():
            if line.startswith("$ "):
                if command is not None:
                    examples.append((command, "\n".join(output)))
                command, output = line[2:], []
            else:
                output.append(line)
        if command is not None:
            examples.append((command, "\n".join(output)))
    return examples


EXAMPLES = _examples()


def test_readme_has_examples() -> None:
    assert len(EXAMPLES) >= 6


@pytest.mark.parametrize(
    ("command", "expected"), EXAMPLES, ids=[f"{i}-{c[0][:50]}" for i, c in enumerate(EXAMPLES)]
)
def test_readme_example(command: str, expected: str) -> None:
    bindir = str(Path(sys.executable).parent)
    env = {**os.environ, "PATH": bindir + os.pathsep + os.environ.get("PATH", "")}
    done = subprocess.run(
        ["bash", "-c", command], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120
    )
    assert done.stdout.rstrip("\n") == expected, done.stderr
    assert done.returncode == expected_status(expected), done.stderr


def expected_status(output: str) -> int:
    """The exit status the shown output implies: 1 when a checked file failed, else 0."""
    return (
        1
        if any(line.startswith("{") and '"ok":false' in line for line in output.splitlines())
        else 0
    )


def test_expected_status_rule() -> None:
    assert [status for _, status in ((c, expected_status(o)) for c, o in EXAMPLES)].count(1) == 1
    assert expected_status('{"ok":true}\n{"ok":false,"error":{}}') == 1
    assert expected_status('{"ok":"0 0 * * 0,5-6"}') == 0
