"""Rate limits for repeated diagnostics of ``schedlog host serve``
(docs/reliability.md#hostile-peers).

A flood of bad connections makes uvicorn and asyncio log the same line once per connection (or
per failed ``accept``); without a limit that fills a disk. :class:`RepeatLimiter` lets at most
``burst`` lines with the same key through per ``window_s`` seconds and counts the rest; the
first line let through after a quiet spell says how many were suppressed. It is installed as
a :class:`logging.Filter` on the stdlib loggers (:func:`install`) and as a structlog processor
(:func:`structlog_processor`) on the service's own events.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable, MutableMapping
from dataclasses import dataclass
from typing import Any, Final

__all__ = ["LOGGERS", "RepeatLimiter", "install", "structlog_processor"]

#: The stdlib loggers a hostile peer can make talk: uvicorn's and asyncio's (accept failures).
LOGGERS: Final = ("uvicorn.error", "uvicorn", "asyncio")
_MAX_KEYS: Final = 1024


@dataclass
class _Window:
    start: float
    passed: int = 0
    suppressed: int = 0


class RepeatLimiter:
    """At most ``burst`` lines per key per ``window_s`` seconds (``now`` is a monotonic clock
    in seconds, injected so that tests run on a virtual one)."""

    def __init__(
        self,
        burst: int = 10,
        window_s: float = 60.0,
        now: Callable[[], float] = time.monotonic,
    ) -> None:
        self._burst = burst
        self._window_s = window_s
        self._now = now
        self._windows: dict[str, _Window] = {}

    def admit(self, key: str) -> int | None:
        """None to drop the line; else the number of lines with this key suppressed since the
        last one let through (0 mostly)."""
        now = self._now()
        window = self._windows.get(key)
        if window is None or now - window.start >= self._window_s:
            suppressed = 0 if window is None else window.suppressed
            if window is None and len(self._windows) >= _MAX_KEYS:
                self._forget(now)
            self._windows[key] = _Window(now, 1)
            return suppressed
        if window.passed < self._burst:
            window.passed += 1
            return 0
        window.suppressed += 1
        return None

    def _forget(self, now: float) -> None:
        old = [k for k, w in self._windows.items() if now - w.start >= self._window_s]
        for key in old or list(self._windows)[: _MAX_KEYS // 2]:
            del self._windows[key]


class _Filter(logging.Filter):
    def __init__(self, limiter: RepeatLimiter) -> None:
        super().__init__()
        self._limiter = limiter

    def filter(self, record: logging.LogRecord) -> bool:
        suppressed = self._limiter.admit(f"{record.name}\0{record.msg}")
        if suppressed is None:
            return False
        if suppressed:
            record.msg = f"{record.msg} ({suppressed} similar lines suppressed)"
        return True


def install(limiter: RepeatLimiter, names: Iterable[str] = LOGGERS) -> None:
    """Filter the records logged on ``names`` through ``limiter``."""
    log_filter = _Filter(limiter)
    for name in names:
        logging.getLogger(name).addFilter(log_filter)


def structlog_processor(
    limiter: RepeatLimiter,
) -> Callable[[Any, str, MutableMapping[str, Any]], MutableMapping[str, Any]]:
    """A structlog processor dropping repeats of one event with one ``code`` and ``path``;
    access lines (``http.request``) all pass."""
    import structlog

    def process(logger: Any, method: str, event: MutableMapping[str, Any]) -> Any:
        if event.get("event") == "http.request":
            return event  # an access line is never dropped (one per request, no peer text)
        key = f"{event.get('event')}\0{event.get('code')}\0{event.get('path')}"
        suppressed = limiter.admit(key)
        if suppressed is None:
            raise structlog.DropEvent
        if suppressed:
            event["suppressed"] = suppressed
        return event

    return process
