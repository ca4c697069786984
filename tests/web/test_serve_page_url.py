"""``schedlog host serve`` prints the page URL with a one-time sign-in code (never the token)
in the fragment, and serves the page there (a subprocess on a free loopback port)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.serve.deps import require_serve

require_serve()

import httpx  # noqa: E402

from tests.serve.process import RUNNER  # noqa: E402

TOKEN = "printed-url-token-0123456789"


def test_host_serve_prints_a_one_time_sign_in_url_never_the_token(tmp_path: Path) -> None:
    command = [sys.executable, "-c", RUNNER, "host", "serve", "--store", str(tmp_path / "s.db")]
    command += ["--sessions", str(tmp_path / "sessions"), "--listen", "127.0.0.1:0"]
    env = {"SCHEDLOG_TOKEN": TOKEN, "PATH": "/usr/bin:/bin"}
    proc = subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env
    )
    try:
        assert proc.stdout is not None
        lines = [proc.stdout.readline().rstrip("\n") for _ in range(3)]
        api = lines[0].removeprefix("schedlog host serve: ")
        base = api.removesuffix("/v1")
        assert lines[1] == "token: SCHEDLOG_TOKEN"
        assert lines[2].startswith(f"page: {base}/#code=")
        assert TOKEN not in "".join(lines)  # the token itself is never printed
        page = httpx.get(lines[2].removeprefix("page: "), timeout=30)  # the fragment stays here
        assert page.status_code == 200
        assert '<script type="module" src="static/app.js">' in page.text
        code = lines[2].partition("#code=")[2]
        exchange = httpx.post(f"{api}/signin", json={"code": code}, timeout=30)
        assert exchange.json() == {"token": TOKEN}
        again = httpx.post(f"{api}/signin", json={"code": code}, timeout=30)
        assert again.status_code == 401
    finally:
        proc.terminate()
        proc.communicate(timeout=30)
