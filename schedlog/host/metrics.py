"""Prometheus metrics of a running host (docs/operations.md#metrics): what ``host serve``
answers at ``GET /metrics`` and ``host run --metrics-listen`` serves.

One :class:`HostMetrics` per process, on a registry of its own (never the global one), so that
tests and embedders can hold several. Counters and histograms are updated where things happen
(a delivery listener, a failure listener, timed store operations, a timed webhook POST, the
HTTP access middleware); the gauges are read from the service at scrape time, on the service's
event loop even when the scrape runs on another thread.

No label holds a session id, a task id or any user text: the labels are small fixed sets
(``outcome``, ``result``, ``op``, ``backend``), the route *template* and the status code.
Needs ``prometheus-client`` (the ``metrics`` extra; the ``serve`` extra includes it).
"""

from __future__ import annotations

import asyncio
import functools
import time
from collections.abc import Awaitable, Callable, Iterator
from typing import TYPE_CHECKING, Any, Final, NamedTuple, TypeVar

from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

if TYPE_CHECKING:
    from schedlog.host.core import Outgoing
    from schedlog.host.delivery import Delivered, GroupFailed
    from schedlog.host.service import HostService

__all__ = [
    "CONTENT_TYPE",
    "DELIVERY_OUTCOMES",
    "STORE_OPERATIONS",
    "WEBHOOK_RESULTS",
    "HostMetrics",
    "serve_metrics",
]

#: The exposition format answered (Prometheus text format 0.0.4).
CONTENT_TYPE: Final = "text/plain; version=0.0.4; charset=utf-8"
#: ``schedlog_deliveries_total{outcome}``: a follow-up sent and committed, or a group that failed.
DELIVERY_OUTCOMES: Final = ("sent", "failed")
#: ``schedlog_webhook_attempts_total{result}``.
WEBHOOK_RESULTS: Final = ("ok", "refused", "timeout", "unreachable", "error")
#: The store methods timed in ``schedlog_store_operation_seconds{op,backend}`` (when present).
STORE_OPERATIONS: Final = (
    "get",
    "insert",
    "insert_many",
    "replace",
    "replace_many",
    "delete",
    "claim_due",
    "commit_claimed",
    "release",
    "hold",
    "extend_leases",
    "next_wake",
)
#: Lateness buckets (seconds): from on time to an hour behind.
LATENESS_BUCKETS: Final = (
    0.01,
    0.05,
    0.1,
    0.25,
    0.5,
    1.0,
    2.5,
    5.0,
    10.0,
    30.0,
    60.0,
    300.0,
    3600.0,
)
STORE_BUCKETS: Final = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 5.0)
#: How long a scrape from another thread waits for the service's loop to read the gauges.
SNAPSHOT_TIMEOUT_S: Final = 5.0

F = TypeVar("F", bound=Callable[..., Any])


class _Snapshot(NamedTuple):
    active: int
    due: int
    takeovers: int


class _StateCollector(Collector):
    """The gauges, and the takeover counter the store keeps, read at scrape time."""

    def __init__(self, metrics: HostMetrics) -> None:
        self._metrics = metrics

    def describe(self) -> list[Metric]:  # no scrape at registration
        return []

    def collect(self) -> Iterator[Metric]:
        m = self._metrics
        snap = m.snapshot()
        if snap is not None:
            yield GaugeMetricFamily(
                "schedlog_active_tasks", "Active tasks in the store.", value=snap.active
            )
            yield GaugeMetricFamily(
                "schedlog_due_tasks",
                "Active tasks whose target has passed and that are not delivered yet.",
                value=snap.due,
            )
            yield CounterMetricFamily(
                "schedlog_lease_takeovers",
                "Claims that took tasks over from another host's lease (shared stores).",
                value=snap.takeovers,
            )
        clients = m.event_clients
        yield GaugeMetricFamily(
            "schedlog_event_stream_clients",
            "Open /v1/events streams (host serve).",
            value=0 if clients is None else clients(),
        )


class HostMetrics:
    """Every series of docs/operations.md#metrics, for one host process."""

    def __init__(self, backend: str) -> None:
        self.backend = backend
        self.registry = CollectorRegistry(auto_describe=False)
        r = self.registry
        self.deliveries = Counter(
            "schedlog_deliveries",
            "Delivery groups by outcome: a follow-up sent and committed, or a failed group.",
            ["outcome"],
            registry=r,
        )
        self.lateness = Histogram(
            "schedlog_delivery_lateness_seconds",
            "How long after its occurrence each delivered reminder was committed.",
            buckets=LATENESS_BUCKETS,
            registry=r,
        )
        self.store_seconds = Histogram(
            "schedlog_store_operation_seconds",
            "Task store operations by name and backend.",
            ["op", "backend"],
            buckets=STORE_BUCKETS,
            registry=r,
        )
        self.webhook_attempts = Counter(
            "schedlog_webhook_attempts",
            "Webhook POSTs by result (--deliver-to).",
            ["result"],
            registry=r,
        )
        self.http_requests = Counter(
            "schedlog_http_requests",
            "HTTP requests by route template and status (host serve).",
            ["route", "status"],
            registry=r,
        )
        for outcome in DELIVERY_OUTCOMES:
            self.deliveries.labels(outcome)
        for result in WEBHOOK_RESULTS:
            self.webhook_attempts.labels(result)
        # The children counted once per delivery and per POST, looked up once (a burst).
        self._sent = self.deliveries.labels("sent")
        self._posted = self.webhook_attempts.labels("ok")
        self.service: HostService | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        #: The number of open event streams, when there is an event hub (host serve).
        self.event_clients: Callable[[], int] | None = None
        r.register(_StateCollector(self))

    # --- wiring ----------------------------------------------------------------------------

    def watch(self, service: HostService) -> None:
        """Count ``service``'s deliveries and failures and read its gauges; call inside the
        service's running loop."""
        self.service = service
        self._loop = asyncio.get_running_loop()
        service.subscribe_deliveries(self.delivered)
        service.subscribe_failures(self.failed)

    def delivered(self, message: Delivered) -> None:
        self._sent.inc()
        service = self.service
        if service is None:
            return
        now = service.clock.now_ms()
        for member in message.members:
            self.lateness.observe(max(0, now - member.occurrence_at) / 1000)

    def failed(self, failure: GroupFailed) -> None:
        self.deliveries.labels("failed").inc()

    def instrument_store(self, store: object) -> None:
        """Time each of :data:`STORE_OPERATIONS` ``store`` has (wrapping it on the instance,
        so the store keeps its type and every protocol it satisfies)."""
        for op in STORE_OPERATIONS:
            method = getattr(store, op, None)
            if callable(method):
                setattr(store, op, self._timed(method, self.store_seconds.labels(op, self.backend)))

    @staticmethod
    def _timed(method: F, histogram: Any) -> F:
        @functools.wraps(method)
        def timed(*args: Any, **kwargs: Any) -> Any:
            start = time.perf_counter()
            try:
                return method(*args, **kwargs)
            finally:
                histogram.observe(time.perf_counter() - start)

        return timed  # type: ignore[return-value]

    def counted_post(
        self, post: Callable[[Outgoing], Awaitable[None]]
    ) -> Callable[[Outgoing], Awaitable[None]]:
        """``post`` (the webhook sink's) counting each attempt by its result."""

        async def counted(outgoing: Outgoing) -> None:
            try:
                await post(outgoing)
            except Exception as exc:
                kind = getattr(exc, "kind", "error")
                self.webhook_attempts.labels(kind if kind in WEBHOOK_RESULTS else "error").inc()
                raise
            self._posted.inc()

        return counted

    def request(self, route: str, status: int) -> None:
        self.http_requests.labels(route, str(status)).inc()

    # --- scraping --------------------------------------------------------------------------

    def _read_state(self) -> _Snapshot | None:
        service = self.service
        if service is None or not service.running:
            return None
        core = service.core
        takeovers = getattr(core.store, "lease_takeovers", 0)
        due = core.due_tasks.due_count(service.clock.now_ms())
        return _Snapshot(core.active_count(), due, int(takeovers))

    def snapshot(self) -> _Snapshot | None:
        """The gauges, read on the service's loop; None before it runs, after it stops, when
        the store cannot say (a database that is unreachable), or when the loop does not
        answer within :data:`SNAPSHOT_TIMEOUT_S` (a batched burst can keep it that busy)."""
        loop = self._loop
        if loop is None:
            return None
        try:
            running = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        try:
            if running is loop:
                return self._read_state()

            async def read() -> _Snapshot | None:
                return self._read_state()

            future = asyncio.run_coroutine_threadsafe(read(), loop)
            return future.result(timeout=SNAPSHOT_TIMEOUT_S)
        except Exception:  # a scrape never fails for the gauges' sake
            return None

    def render(self) -> bytes:
        """The exposition text of every series."""
        return generate_latest(self.registry)


def serve_metrics(host: str, port: int, metrics: HostMetrics) -> tuple[int, Callable[[], None]]:
    """Serve ``GET /metrics`` on ``host:port`` from a daemon thread (``host run
    --metrics-listen``); returns the port bound and how to stop. Raises OSError when it
    cannot listen."""
    from prometheus_client import start_http_server

    server, thread = start_http_server(port, host, registry=metrics.registry)

    def stop() -> None:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)

    return int(server.server_port), stop
