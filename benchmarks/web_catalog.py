"""The web page's catalog at scale (issue 13): the first page with 100,000 tasks in the store.

Usage::

    python -m benchmarks.web_catalog                  # 1,000 and 100,000 tasks (~2 min)
    python -m benchmarks.web_catalog --sizes 100000 --runs 20

For each size:

1. **Populate** a SQLite store with N active tasks, as ``benchmarks/store_scale.py`` does (one
   ``executemany`` transaction into a store that ``open_store`` initialized; 1000 sessions,
   random ids, ``at`` and ``every`` reminders with targets over the next year). One task is due
   at once and is delivered when the server starts.
2. Start the real ``schedlog host serve`` in a subprocess on a free loopback port, and wait for
   ``/readyz`` (opening validates every task; that start-up time is printed too).
3. **API**: ``runs`` GETs of ``/v1/tasks?limit=50`` (the page's first page) over loopback with
   httpx, one at a time, then the same with a title filter that matches 1 in 10,000 tasks,
   with ``order=desc``, and the second page (``cursor``). Wall time per request from send to
   the last body byte: server time + transfer.
4. **Browser**: ``runs`` fresh Chromium contexts (Debian's ``chromium``, driven by Playwright)
   each open the printed page URL (token in the fragment) and wait for the 50 rows. Reported:
   the catalog request as the browser saw it (Resource Timing ``responseEnd - startTime``:
   server time + transfer, the acceptance figure), and the time from navigation start to the
   rows being rendered (the page's ``schedlog:catalog-rendered`` performance mark; it also
   includes loading the page's own files and the JavaScript start).

The baseline is the issue's target: the first page in under 300 ms at 100,000 tasks. For
comparison, ``--reference`` also times the readable reference catalog (a full scan that decodes
every task, ``schedlog.host.catalog.scan_page``) in process on the same store, once. The
machine may be shared; the load average is printed before and after.
"""

from __future__ import annotations

import argparse
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx

from benchmarks.store_scale import populate_sqlite
from schedlog.rules.instants import format_instant
from tests.web.chromium import CHROMIUM_ARGS

TOKEN = "benchmark-token-0123456789abcdef"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _stats(samples: list[float]) -> str:
    ordered = sorted(samples)
    p95 = ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]
    return (
        f"median {statistics.median(ordered):7.1f} ms  p95 {p95:7.1f} ms  "
        f"min {ordered[0]:7.1f}  max {ordered[-1]:7.1f}  (n={len(ordered)})"
    )


def _serve(store: Path, sessions: Path) -> tuple[subprocess.Popen[str], str, float]:
    port = _free_port()
    env = {**os.environ, "SCHEDLOG_TOKEN": TOKEN}
    cmd = [sys.executable, "-m", "schedlog.cli.main", "host", "serve", "--store", str(store)]
    cmd += ["--sessions", str(sessions), "--listen", f"127.0.0.1:{port}"]
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    base = f"http://127.0.0.1:{port}"
    while True:
        if proc.poll() is not None:
            raise RuntimeError(f"host serve exited: {proc.stderr.read() if proc.stderr else ''}")
        try:
            if httpx.get(f"{base}/readyz", timeout=2).status_code == 200:
                break
        except httpx.HTTPError:
            pass
        time.sleep(0.1)
    return proc, base, time.perf_counter() - start


def _api(base: str, runs: int) -> dict[str, list[float]]:
    out: dict[str, list[float]] = {}
    headers = {"Authorization": f"Bearer {TOKEN}"}
    with httpx.Client(base_url=base, headers=headers, timeout=60) as client:
        first = client.get("/v1/tasks?limit=50").json()
        queries = {
            "first page": "/v1/tasks?limit=50",
            "title filter": "/v1/tasks?limit=50&title=Reminder%2099",
            "order=desc": "/v1/tasks?limit=50&order=desc",
            "second page": f"/v1/tasks?limit=50&cursor={first['nextCursor']}",
        }
        for name, url in queries.items():
            samples = []
            for _ in range(runs):
                t = time.perf_counter()
                r = client.get(url)
                r.raise_for_status()
                samples.append((time.perf_counter() - t) * 1000)
            out[name] = samples
    return out


def _browser(base: str, runs: int, chromium: str) -> dict[str, list[float]]:
    from playwright.sync_api import sync_playwright

    request: list[float] = []
    rendered: list[float] = []
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=chromium, args=CHROMIUM_ARGS)
        try:
            for _ in range(runs):
                context = browser.new_context(viewport={"width": 1440, "height": 900})
                page = context.new_page()
                page.goto(f"{base}/#token={TOKEN}")
                page.wait_for_function("document.querySelectorAll('#rows tr').length === 50")
                timing: Any = page.evaluate(
                    """() => {
                      const r = performance.getEntriesByType('resource')
                        .find(e => e.name.includes('/v1/tasks?'));
                      const m = performance.getEntriesByName('schedlog:catalog-rendered')[0];
                      return [r.responseEnd - r.startTime, m.startTime];
                    }"""
                )
                request.append(float(timing[0]))
                rendered.append(float(timing[1]))
                context.close()
        finally:
            browser.close()
    return {"catalog request (browser)": request, "navigation to rows rendered": rendered}


def _reference(store: Path) -> float:
    from schedlog.host.catalog import CatalogQuery, scan_page
    from schedlog.host.stores.open import open_store

    opened = open_store(store)
    try:
        t = time.perf_counter()
        page = scan_page(
            (st.task for st in opened.tasks()), CatalogQuery(50), lambda t: t.effective_status
        )
        assert len(page.tasks) == 50
        return (time.perf_counter() - t) * 1000
    finally:
        opened.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1_000, 100_000])
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--reference", action="store_true", help="also time the full scan")
    parser.add_argument("--chromium", default="/usr/bin/chromium")
    parser.add_argument("--dir", default=None, help="where the stores go (a real disk)")
    args = parser.parse_args()
    print(f"load average before: {os.getloadavg()}")
    now = int(time.time() * 1000)
    print(f"now: {format_instant(now)}")
    for n in args.sizes:
        with tempfile.TemporaryDirectory(dir=args.dir) as d:
            store = Path(d) / "store.db"
            t = time.perf_counter()
            populate_sqlite(store, n, 1, now)
            print(f"\n== {n:,} tasks (populated in {time.perf_counter() - t:.1f} s)")
            if args.reference:
                print(f"  reference full scan (in process):      {_reference(store):9.1f} ms")
            proc, base, started = _serve(store, Path(d) / "sessions")
            try:
                print(f"  host serve ready after {started:.1f} s")
                for name, samples in _api(base, args.runs).items():
                    print(f"  API {name:<34} {_stats(samples)}")
                for name, samples in _browser(base, args.runs, args.chromium).items():
                    print(f"  {name:<38} {_stats(samples)}")
            finally:
                proc.terminate()
                proc.communicate(timeout=30)
    print(f"\nload average after: {os.getloadavg()}")


if __name__ == "__main__":
    main()
