"""The npm reference implementation (``@deepseek-ai/dsh-schedule@0.1.0-rc.8``) for the opt-in
differential tests: the opt-in gate, and one install shared by both.

Set ``SCHEDLOG_DIFFERENTIAL=1`` to run them (``.ci/run`` sets it). The package is installed
once (``npm install --ignore-scripts``) into ``SCHEDLOG_REFERENCE_DIR`` (default
``~/.cache/schedlog/dsh-schedule-0.1.0-rc.8``); a test skips when node, npm or the package is
unavailable.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

PACKAGE = "@deepseek-ai/dsh-schedule@0.1.0-rc.8"

opt_in = pytest.mark.skipif(
    os.environ.get("SCHEDLOG_DIFFERENTIAL") != "1"
    or shutil.which("node") is None
    or shutil.which("npm") is None,
    reason="differential test is opt-in (SCHEDLOG_DIFFERENTIAL=1) and needs node and npm",
)


def install_runner(name: str, source: str) -> Path:
    """Install the package if needed and write the Node ``source`` beside it as ``name``."""
    default = Path.home() / ".cache" / "schedlog" / "dsh-schedule-0.1.0-rc.8"
    root = Path(os.environ.get("SCHEDLOG_REFERENCE_DIR", default))
    if not (root / "node_modules" / "@deepseek-ai" / "dsh-schedule").is_dir():
        root.mkdir(parents=True, exist_ok=True)
        command = ["npm", "install", "--prefix", str(root), "--ignore-scripts", "--no-audit"]
        try:
            subprocess.run([*command, "--no-fund", PACKAGE], check=True, timeout=300)
        except (OSError, subprocess.SubprocessError) as exc:
            if os.environ.get("CI") == "true":  # CI has node and npm: the differential must run
                pytest.fail(f"cannot install {PACKAGE} under CI=true: {exc}")
            pytest.skip(f"cannot install {PACKAGE}: {exc}")
    runner = root / name
    runner.write_text(source, encoding="utf-8")
    return runner


def run_reference(runner: Path, cases: list[Any]) -> list[Any]:
    """Feed ``cases`` to the Node ``runner`` as one JSON array; its JSON array of answers."""
    done = subprocess.run(
        ["node", str(runner)],
        input=json.dumps(cases),
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
        cwd=runner.parent,
    )
    answers: list[Any] = json.loads(done.stdout)
    assert len(answers) == len(cases)
    return answers
