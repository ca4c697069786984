"""The API probe of ``benchmarks/burst.py --api-probe``, in a process of its own.

One call at a time to a ``host serve``: ``GET /v1/tasks?limit=50`` and a ``schedule_create``
(due a day later), alternately, from a start instant until told to stop; then the p50, p99 and
max of each kind. It runs apart from the driver, whose main thread polls the session logs
every few milliseconds: in the driver's process, a call's time also held the waits for the
driver's own interpreter lock (docs/benchmarks.md#burst).

Usage (the driver runs it)::

    python -m benchmarks.burst_probe URL START_EPOCH_S [LIMIT]

with the token in ``SCHEDLOG_TOKEN``; it probes until a line (or the end) arrives on its
standard input, then prints one JSON object (:meth:`Probe.report`).
"""

from __future__ import annotations

import http.client
import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any, Final

from benchmarks.http import _percentile

__all__ = ["Probe", "ProbeProcess"]

ROOT: Final = Path(__file__).resolve().parent.parent
#: The longest the probe process may take to end once told to stop.
STOP_TIMEOUT_S: Final = 60.0


class Probe(threading.Thread):
    """One call at a time to a ``host serve``: ``GET /v1/tasks?limit=50`` and a
    ``schedule_create`` alternately, from ``start`` (epoch s) until stopped; at most
    ``limit`` calls."""

    def __init__(self, url: str, token: str, start: float, limit: int = 100_000) -> None:
        super().__init__(daemon=True)
        rest = url.removeprefix("http://")
        self.host, self.base = rest.split("/", 1)[0], "/" + rest.split("/", 1)[1]
        self.headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}
        self.start_at, self.limit = start, limit
        self.stop_flag = threading.Event()
        self.latencies: dict[str, list[float]] = {"list": [], "create": []}
        self.failed = 0

    def run(self) -> None:
        conn = http.client.HTTPConnection(self.host, timeout=30)
        while time.time() < self.start_at and not self.stop_flag.wait(0.005):
            pass
        for i in range(self.limit):
            if self.stop_flag.is_set():
                break
            kind = "list" if i % 2 == 0 else "create"
            body = json.dumps({"prompt": f"probe {i}", "title": "Probe", "after_seconds": 86_400})
            started = time.perf_counter()
            try:
                if kind == "list":
                    conn.request("GET", f"{self.base}/tasks?limit=50", headers=self.headers)
                else:
                    path = f"{self.base}/sessions/probe/tools/schedule_create"
                    conn.request("POST", path, body=body, headers=self.headers)
                response = conn.getresponse()
                response.read()
            except (OSError, http.client.HTTPException):
                self.failed += 1
                conn.close()
                self.stop_flag.wait(0.05)
                continue
            if response.status != 200:
                self.failed += 1
                continue
            self.latencies[kind].append(time.perf_counter() - started)
        conn.close()

    def report(self) -> dict[str, Any]:
        out: dict[str, Any] = {"probe_failed": self.failed}
        for kind, values in self.latencies.items():
            out[f"probe_{kind}_calls"] = len(values)
            if values:
                out[f"probe_{kind}_p50_ms"] = round(_percentile(values, 0.50) * 1000, 1)
                out[f"probe_{kind}_p99_ms"] = round(_percentile(values, 0.99) * 1000, 1)
                out[f"probe_{kind}_max_ms"] = round(max(values) * 1000, 1)
        return out


class ProbeProcess:
    """A :class:`Probe` in a process of its own (started here); :meth:`stop` ends it and
    returns its report."""

    def __init__(self, url: str, token: str, start: float) -> None:
        env = {**os.environ, "SCHEDLOG_TOKEN": token}
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "benchmarks.burst_probe", url, repr(start)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            env=env,
            cwd=ROOT,
        )

    def stop(self) -> dict[str, Any]:
        try:
            out, _ = self.proc.communicate("stop\n", timeout=STOP_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            return {"probe_failed": -1}
        try:
            report: dict[str, Any] = json.loads(out)
        except ValueError:
            return {"probe_failed": -1}
        return report


def main(argv: list[str]) -> int:
    url, start = argv[0], float(argv[1])
    limit = int(argv[2]) if len(argv) > 2 else 100_000
    probe = Probe(url, os.environ["SCHEDLOG_TOKEN"], start, limit)
    probe.start()
    sys.stdin.readline()  # a line, or the end: stop
    probe.stop_flag.set()
    probe.join(timeout=STOP_TIMEOUT_S)
    print(json.dumps(probe.report()), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
