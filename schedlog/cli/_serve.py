"""The implementation of ``schedlog host serve`` (docs/http-api.md).

One process: the host service on the real clock (delivering as ``host run`` does) and its HTTP
API, served by uvicorn on the same event loop, so every write goes through the one FIFO.
Needs the ``serve`` extra.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import gc
import os
import signal
import socket
import sys
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING, Any

from schedlog.cli.common import write_json_line
from schedlog.cli.run_log import configure_run_logging, tune_interpreter
from schedlog.clock import Clock
from schedlog.errors import StoreOpenError
from schedlog.host.config import Retention
from schedlog.host.endpoint import remove_endpoint, with_serve_hint, write_endpoint
from schedlog.host.sessions import SessionsDirectory, SessionsPathError, check_sessions_path
from schedlog.host.stores.base import TaskStore
from schedlog.host.stores.open import open_store, select_backend

if TYPE_CHECKING:
    import uvicorn
    from starlette.applications import Starlette

    from schedlog.cli.serve_log import ServeRunLog
    from schedlog.host.metrics import HostMetrics
    from schedlog.serve.app import Host

__all__ = ["cmd_serve", "parse_listen"]

_SIGNALS = (signal.SIGINT, signal.SIGTERM)


def _fail(code: str, message: str) -> int:
    write_json_line({"error": {"code": code, "message": message}}, sys.stderr)
    return 1


def parse_listen(text: str) -> tuple[str, int]:
    """``HOST:PORT`` or ``[V6]:PORT`` -> (host, port); raises ValueError naming the value."""
    host, sep, port = text.rpartition(":")
    if not sep or not port.isdigit() or not 0 <= int(port) <= 65535 or not host:
        raise ValueError(f"--listen must be HOST:PORT, not {text!r}")
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    return host, int(port)


def _bind(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    # proto IPPROTO_TCP, not 0: asyncio sets TCP_NODELAY on accepted connections only then,
    # and without it a response written in two parts waits ~40 ms for a delayed ACK.
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
        sock.listen(2048)
    except OSError:
        sock.close()
        raise
    sock.set_inheritable(True)
    return sock


def _limit_logs() -> None:
    """Rate-limit repeated log lines of uvicorn, asyncio and the service (serve.loglimit)."""
    import structlog

    from schedlog.serve.loglimit import RepeatLimiter, install, structlog_processor

    limiter = RepeatLimiter()
    install(limiter)
    processors = structlog.get_config()["processors"]
    structlog.configure(processors=[structlog_processor(limiter), *processors])


def _opener(
    args: argparse.Namespace,
    store: TaskStore,
    clock: Clock,
    metrics: HostMetrics,
    run_log: ServeRunLog,
    secret: bytes | None,
) -> Callable[[], Awaitable[Host]]:
    """The application's start: the host service over ``store``, delivering into the sessions
    directory or, with ``--deliver-to``, to the webhook."""
    keep = Retention(args.history_days, args.history_records)

    async def opener() -> Host:
        from schedlog.host.retry import Backoff
        from schedlog.host.service import HostService
        from schedlog.serve.app import Host
        from schedlog.serve.webhook import retry_lookup

        # Failed deliveries are retried on the timer with capped backoff, into a session
        # log as to a webhook (docs/operations.md#retries).
        backoff = Backoff(args.retry_base_ms, args.retry_cap_ms)
        if args.deliver_to is None:
            sessions = SessionsDirectory(args.sessions)

            async def close_sessions() -> None:
                sessions.close()

            service = HostService(store, sessions, clock, keep, backoff=backoff)
            run_log.watch(service)
            return Host(service, retry_state=retry_lookup(backoff), close=close_sessions)
        from schedlog.host.webhook import WebhookSessions, WebhookSink

        assert secret is not None
        sink = WebhookSink(args.deliver_to, secret, clock, timeout_s=args.webhook_timeout)
        service = HostService(
            store,
            WebhookSessions(),
            clock,
            keep,
            post=metrics.counted_post(sink.post),
            backoff=backoff,
            post_concurrency=args.webhook_concurrency,
        )
        run_log.watch(service)
        return Host(service, retry_state=retry_lookup(backoff), close=sink.aclose)

    return opener


def _server(args: argparse.Namespace, app: Starlette) -> uvicorn.Server:
    """The uvicorn server of ``app``: it ends the event streams first on a signal, and
    SIGINT/SIGTERM stop it gracefully."""
    import uvicorn

    from schedlog.serve.limits import ACCEPT_BURST, Limits, connection_cap, protocol_class

    loop = asyncio.get_running_loop()

    class Server(uvicorn.Server):
        def handle_exit(self, sig: int, frame: FrameType | None) -> None:
            hub = app.state.serve.hub
            if hub is not None:  # end the event streams first: uvicorn waits for them
                loop.call_soon_threadsafe(hub.close)
            super().handle_exit(sig, frame)

        @contextlib.contextmanager
        def capture_signals(self) -> Iterator[None]:
            """SIGINT/SIGTERM stop the server gracefully and the command exits 0, as
            ``host run`` does (uvicorn would raise the signal again after shutdown)."""
            handlers = {sig: signal.signal(sig, self.handle_exit) for sig in _SIGNALS}
            try:
                yield
            finally:
                for sig, handler in handlers.items():
                    signal.signal(sig, handler)

    config = uvicorn.Config(
        app,
        http=protocol_class(Limits(connection_cap(args.max_connections), args.header_timeout)),
        # asyncio accepts up to `backlog` connections in one go before any is refused and
        # closed: keep that burst inside the descriptors the connection cap leaves free.
        backlog=ACCEPT_BURST,
        lifespan="on",
        log_level="warning",
        access_log=False,
        server_header=False,
        proxy_headers=False,
        # Half of --stop-timeout for open connections, half for the delivery in flight.
        timeout_graceful_shutdown=max(0.1, args.stop_timeout / 2),
    )
    _limit_logs()  # after the Config: it configures uvicorn's logging
    return Server(config)


#: Net allocations of tracked objects between two young collections once started (the
#: interpreter's default is 700).
YOUNG_COLLECTION_EVERY = 10_000


def _settle_collector() -> None:
    """The collector of a started ``host serve`` (docs/decisions.md, "Webhook burst: the
    protocol-based client, no full collections over start-up's objects"): what start-up built
    (modules, the catalog, the due index) lives as long as the process, so it is frozen out of
    every later collection, which a burst's allocations would otherwise run over all of it;
    and a young collection runs every :data:`YOUNG_COLLECTION_EVERY` net allocations instead
    of 700, which a burst's short-lived objects otherwise trigger hundreds of times."""
    gc.freeze()
    _, middle, old = gc.get_threshold()
    gc.set_threshold(YOUNG_COLLECTION_EVERY, middle, old)


async def _serve(
    args: argparse.Namespace,
    store: TaskStore,
    token: str,
    token_file: Any,
    secret: bytes | None,
) -> int:
    from schedlog.cli.serve_log import ServeRunLog
    from schedlog.host.metrics import HostMetrics
    from schedlog.runtime.clock import SystemClock
    from schedlog.serve.app import build_app
    from schedlog.serve.auth import allowed_hosts
    from schedlog.serve.web import page_url

    host, port = parse_listen(args.listen)
    try:
        sock = _bind(host, port)
    except OSError as exc:
        store.close()
        return _fail("listen-failed", f"cannot listen on {args.listen}: {exc.strerror}")
    port = sock.getsockname()[1]
    url_host = f"[{host}]" if ":" in host else host
    url = f"http://{url_host}:{port}"
    clock = SystemClock()
    metrics = HostMetrics(select_backend(args.store, args.backend))
    metrics.instrument_store(store)
    run_log = ServeRunLog()
    app = build_app(
        _opener(args, store, clock, metrics, run_log, secret),
        token=token,
        hosts=allowed_hosts(host, port, args.allow_host or ()),
        epoch=clock.now_ms(),
        cors_origins=args.cors_origin or (),
        max_event_clients=args.max_event_clients,
        metrics=metrics,
        metrics_public=args.metrics_public,
        stop_timeout=args.stop_timeout / 2,
    )
    server = _server(args, app)
    task = asyncio.ensure_future(server.serve(sockets=[sock]))
    while not server.started and not task.done():
        await asyncio.sleep(0.02)
    # A PostgreSQL store is shared, never locked: no endpoint file (it would be a store-locked
    # hint) and there is no file beside a URL to hold one.
    shared = select_backend(args.store, args.backend) == "postgresql"
    if server.started:
        if not shared:
            write_endpoint(args.store, url)
        print(f"schedlog host serve: {url}/v1", flush=True)
        where = "SCHEDLOG_TOKEN" if token_file is None else str(token_file)
        print(f"token: {where}", flush=True)
        # The web page with a one-time sign-in code (never the token) in the fragment.
        print(f"page: {page_url(url, app.state.signin.issue())}", flush=True)
        run_log.started(url, args, app.state.serve.service)
        _settle_collector()
    try:
        await task
    finally:
        if not shared:
            remove_endpoint(args.store)
        sock.close()
        if server.started:
            run_log.stopped(app.state.access.requests)
    return 0 if server.started else 1


def cmd_serve(args: argparse.Namespace) -> int:
    configure_run_logging(args.log_format, args.log_level)
    tune_interpreter()
    try:
        import starlette  # noqa: F401
        import uvicorn  # noqa: F401
    except ImportError:
        return _fail(
            "missing-extra", "host serve needs the serve extra: pip install 'schedlog[serve]'"
        )
    from schedlog.serve.auth import TOKEN_ENV, TokenError, load_token, token_path

    try:
        parse_listen(args.listen)
        if not 0 < args.retry_base_ms <= args.retry_cap_ms:
            raise ValueError("--retry-base-ms must be positive and at most --retry-cap-ms")
        if not 0 < args.webhook_timeout <= 600:
            raise ValueError("--webhook-timeout must be more than 0 and at most 600 seconds")
        if not 1 <= args.max_event_clients <= 10_000:
            raise ValueError("--max-event-clients must be from 1 through 10000")
        if not 1 <= args.webhook_concurrency <= 1_000:
            raise ValueError("--webhook-concurrency must be from 1 through 1000")
        if not 1 <= args.max_connections <= 100_000:
            raise ValueError("--max-connections must be from 1 through 100000")
        if not 0.1 <= args.header_timeout <= 600:
            raise ValueError("--header-timeout must be from 0.1 through 600 seconds")
        if not 0.1 <= args.stop_timeout <= 3600:
            raise ValueError("--stop-timeout must be from 0.1 through 3600 seconds")
    except ValueError as exc:
        print(f"schedlog host serve: {exc}", file=sys.stderr)
        return 2
    try:
        # Beside a file store; beside the sessions directory for a postgresql:// store.
        shared = select_backend(args.store, args.backend) == "postgresql"
        beside = args.sessions if shared else None
        if shared and beside is None and args.token_file is None and not os.environ.get(TOKEN_ENV):
            # --deliver-to on a database: no file beside the store, no sessions directory.
            raise TokenError(
                f"host serve --deliver-to on a postgresql:// store needs --token-file PATH or "
                f"{TOKEN_ENV} (there is no file beside a database URL to keep the token in)"
            )
        given = Path(args.token_file) if args.token_file is not None else None
        token, token_file = load_token(given or token_path(beside or args.store))
    except TokenError as exc:
        return _fail(exc.code, str(exc))
    secret: bytes | None = None
    if args.deliver_to is not None:
        from schedlog.serve.webhook import SecretError, check_url, load_secret

        try:
            check_url(args.deliver_to)
            secret = load_secret(args.webhook_secret_file)
        except SecretError as exc:
            return _fail(exc.code, str(exc))
    if args.sessions is not None:
        try:
            check_sessions_path(args.sessions)
        except SessionsPathError as exc:
            write_json_line({"error": exc.to_value()}, sys.stderr)
            return 1
    try:
        store = open_store(args.store, args.backend)
    except StoreOpenError as exc:
        write_json_line({"error": with_serve_hint(exc, args.store).to_value()}, sys.stderr)
        return 1
    return asyncio.run(_serve(args, store, token, token_file, secret))
