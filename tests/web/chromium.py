"""How this project launches Debian's Chromium: the flags that keep it off this closed network
and the one binary path it uses. Shared by the browser tests and ``benchmarks/web_catalog.py``
(no pytest import here, so the benchmark can use it)."""

from __future__ import annotations

#: Headless, no sandbox (root), no GPU, and none of the background connections that the
#: machine's closed network refuses (each start would otherwise try to reach Google's hosts).
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
