"""A non-browser layer for the page's JavaScript (issue 22): the pure helpers of
``schedlog/serve/static/api.js`` under Node's built-in test runner (``node --test``), on stubbed
browser globals. Skips without Node, except under ``CI=true``."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
STATIC = ROOT / "schedlog" / "serve" / "static"


def _node() -> str:
    node = shutil.which("node")
    if node is None:
        if os.environ.get("CI") == "true":
            pytest.fail("node is needed for the JavaScript unit tests under CI=true")
        pytest.skip("node is not installed: the JavaScript unit tests need it")
    return node


def test_api_js_helpers_under_node_test(tmp_path: Path) -> None:
    node = _node()
    shutil.copy(STATIC / "api.js", tmp_path / "api.mjs")  # an ES module, whatever package.json says
    shutil.copy(Path(__file__).parent / "js" / "api.test.mjs", tmp_path / "api.test.mjs")
    done = subprocess.run(
        [node, "--test", "api.test.mjs"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "# fail 0" in done.stdout and "# pass 8" in done.stdout, done.stdout
