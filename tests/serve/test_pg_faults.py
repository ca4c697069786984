"""A slow, frozen and cut PostgreSQL behind ``host serve`` (docs/reliability.md#slow-postgresql,
issue 22 "A slow or frozen PostgreSQL").

A loopback proxy the test controls (tests/pg_proxy.py) sits between the store and the server.
The store's bound is lowered to 4 s for the test (10 s by default). Then: every packet delayed
200 ms (everything still works), the connection frozen (API calls answer 503
``service_unavailable`` within the bound instead of hanging, ``/readyz`` turns not-ready, a create
is not stored), thawed and cut (``/readyz`` ready again, deliveries that fell due meanwhile
resume on their own: each reminder delivered exactly once).
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests import pg
from tests.serve.deps import require_serve

require_serve()
pg.require_psycopg()

from schedlog.eventlog.reader import read_log  # noqa: E402
from schedlog.host.retry import Backoff  # noqa: E402
from schedlog.host.stores import pg_deadline  # noqa: E402
from tests.host.helpers import T0  # noqa: E402
from tests.pg_proxy import FaultProxy  # noqa: E402
from tests.serve.support import Api, running_api  # noqa: E402

BOUND_S = 4.0
#: The longest an answer may take while frozen: the pool's wait, or one query's watchdog,
#: plus slack for a loaded 2-core machine.
ANSWER_S = 3 * BOUND_S + 2


@pytest.fixture
def proxied(
    database: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[tuple[Api, FaultProxy]]:
    monkeypatch.setattr(pg_deadline, "QUERY_DEADLINE_S", BOUND_S)
    pg.reset(database)
    proxy = FaultProxy(pg_port(database))
    try:
        with running_api(
            tmp_path, store=proxy.url(database), backoff=Backoff(1_000, 30_000)
        ) as api:
            yield api, proxy
    finally:
        proxy.close()


def pg_port(url: str) -> int:
    import urllib.parse

    return urllib.parse.urlsplit(url).port or 5432


def timed(call: Any) -> tuple[Any, float]:
    start = time.monotonic()
    answer = call()
    return answer, time.monotonic() - start


def delivered_ids(sessions: Path) -> list[str]:
    out = []
    for log in sessions.glob("*.jsonl"):
        for event in read_log(log).events:
            if event.type == "message/followup":
                out.extend(r["id"] for r in event.data["reminders"])
    return out


def test_a_frozen_postgresql_answers_503_in_bounded_time_and_loses_nothing(
    proxied: tuple[Api, FaultProxy],
) -> None:
    api, proxy = proxied
    ids = [
        api.create(session, title=title, after_seconds=60)["id"]
        for session, title in (("s-1", "<b>&amp;"), ("s-2", "\u202eevil"), ("s-2", "plain"))
    ]
    # 200 ms on every packet: slower, still right.
    proxy.delay(200)
    page, took = timed(lambda: api.client.get("/v1/tasks"))
    assert page.status_code == 200 and len(page.json()["items"]) == 3
    assert api.client.get("/readyz").status_code == 200
    proxy.delay(0)

    proxy.freeze()
    ready, took = timed(lambda: api.client.get("/readyz"))
    assert ready.status_code == 503 and took < ANSWER_S, (ready.text, took)
    assert ready.json()["error"]["code"] == "service_unavailable"
    page, took = timed(lambda: api.client.get("/v1/tasks"))
    assert page.status_code == 503 and took < ANSWER_S, (page.text, took)
    assert page.json()["error"]["code"] == "service_unavailable"
    created, took = timed(
        lambda: api.tool(
            "s-3", "schedule_create", {"title": "t", "prompt": "p", "after_seconds": 60}
        )
    )
    assert created.status_code == 503 and took < ANSWER_S, (created.text, took)
    assert created.json()["code"] == "service_unavailable"
    # The three fall due while frozen: finding and delivering them fails within the bound
    # (each attempt waits the bound in real time, so only a few are let happen).
    api.run_until(T0 + 60_300)
    assert delivered_ids(api.sessions) == []

    proxy.thaw()
    proxy.cut()  # and every connection the store had is gone
    deadline = time.monotonic() + 30
    while api.client.get("/readyz").status_code != 200:
        assert time.monotonic() < deadline, "readyz did not turn ready after the thaw"
        time.sleep(0.2)
    api.run_until(T0 + 600_000)  # the retries, on their own
    assert sorted(delivered_ids(api.sessions)) == sorted(ids)  # 0 lost, 0 duplicated
    entries = api.client.get("/v1/tasks").json()["items"]
    assert sorted(e["id"] for e in entries) == sorted(ids)  # the refused create is not there
