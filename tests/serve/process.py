"""``schedlog host serve`` in a real subprocess on a free loopback port (tests, benchmarks)."""

from __future__ import annotations

import os
import queue
import signal
import subprocess
import sys
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

RUNNER = "import sys\nfrom schedlog.cli.main import main\nsys.exit(main())\n"


@dataclass
class ServeProcess:
    """A running server: its ``/v1`` URL, token, and the lines it printed."""

    proc: subprocess.Popen[str]
    url: str
    token: str
    store: Path | str
    stdout: list[str] = field(default_factory=list)
    stderr: list[str] = field(default_factory=list)

    @property
    def headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.token}"}

    def stop(self, sig: int = signal.SIGTERM, timeout: float = 30) -> tuple[int, str]:
        """Send ``sig`` and wait; returns the exit code and stderr."""
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
        self.proc.wait(timeout=timeout)
        for thread in self._readers:  # both pipes reach their end once the process is gone
            thread.join(timeout=timeout)
        for pipe in (self.proc.stdout, self.proc.stderr):
            if pipe is not None:
                pipe.close()
        return self.proc.returncode, "".join(self.stderr)

    _readers: tuple[threading.Thread, ...] = ()


def start_serve(
    store: Path | str,
    args: Sequence[str],
    *,
    env: dict[str, str] | None = None,
    timeout: float = 30,
    runner: str = RUNNER,
) -> ServeProcess:
    """Start ``schedlog host serve --store STORE --listen 127.0.0.1:0 ARGS`` (a path or a
    ``postgresql://`` URL) and wait (at most
    ``timeout`` s) for the URL it prints. ``runner`` is the Python program that runs the CLI
    (a benchmark runs a baseline's with its own import path)."""
    command = [sys.executable, "-c", runner, "host", "serve", "--store", str(store)]
    proc = subprocess.Popen(
        [*command, "--listen", "127.0.0.1:0", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, **(env or {})},
    )
    lines: queue.Queue[str | None] = queue.Queue()

    def pump() -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            lines.put(line)
        lines.put(None)

    pumper = threading.Thread(target=pump, daemon=True)
    pumper.start()
    errors: list[str] = []

    def drain() -> None:
        # Read stderr all along: a server whose diagnostics fill the pipe blocks on writing.
        assert proc.stderr is not None
        for line in proc.stderr:
            errors.append(line)

    drainer = threading.Thread(target=drain, daemon=True)
    drainer.start()
    printed: list[str] = []
    while len(printed) < 2:
        try:
            line = lines.get(timeout=timeout)
        except queue.Empty:
            line = None
        if line is None:
            proc.kill()
            proc.wait(timeout=10)
            drainer.join(timeout=10)
            pumper.join(timeout=10)
            for pipe in (proc.stdout, proc.stderr):
                if pipe is not None:
                    pipe.close()
            raise RuntimeError(f"host serve did not start: {printed} {''.join(errors)}")
        printed.append(line.rstrip("\n"))
    url = printed[0].removeprefix("schedlog host serve: ")
    token_source = printed[1].removeprefix("token: ")
    token = (env or {}).get("SCHEDLOG_TOKEN") or Path(token_source).read_text().strip()
    server = ServeProcess(proc, url, token, store, printed, errors)
    server._readers = (pumper, drainer)
    return server
