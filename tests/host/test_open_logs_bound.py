"""A host delivering into many sessions keeps a bounded number of session logs open
(docs/operations.md#host-run): :class:`SessionsDirectory` closes the log resolved longest ago,
so 400 sessions deliver under a 64-descriptor limit (issue 22, the slowloris item's EMFILE)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from schedlog.eventlog.reader import read_log
from schedlog.host.sessions import MAX_OPEN_LOGS, SessionsDirectory, default_max_open
from schedlog.rules.instants import format_instant
from tests.host.helpers import T0

SESSIONS = 400
#: Session ids with hostile text: markup, a bidi override, a long one (a lone surrogate is
#: refused in a session id; it goes into the prompts).
ODD = ["<b>&amp;", "\u202eevil", "x" * 200]

#: In a subprocess: lower RLIMIT_NOFILE, create one due task per session through ``host
#: batch``, tick once, then print what was delivered and the descriptors still open.
RUNNER = """
import io, json, os, resource, sys
limit = int(sys.argv[3])
resource.setrlimit(resource.RLIMIT_NOFILE, (limit, limit))
from schedlog.cli.host_cmd import HostBatch
requests = [json.loads(line) for line in sys.stdin]
batch = HostBatch(sys.argv[1], sys.argv[2])
out = io.StringIO()
batch.serve([json.dumps(r) for r in requests], out)
answers = [json.loads(line) for line in out.getvalue().splitlines()]
fds = len(os.listdir("/proc/self/fd"))
batch.close()
with open(sys.argv[4], "w") as result:
    json.dump({"answers": answers, "fds": fds, "limit": limit}, result)
"""


def _requests() -> list[dict[str, object]]:
    now = format_instant(T0)
    sessions = [f"s-{i}" for i in range(SESSIONS - len(ODD))] + ODD
    out: list[dict[str, object]] = []
    for session in sessions:
        args = {"prompt": f"p <i>{session}</i> \ud800", "title": "t&amp;", "after_seconds": 60}
        out.append({"op": "schedule_create", "session": session, "now": now, "args": args})
    out.append({"op": "tick", "now": format_instant(T0 + 120_000)})
    return out


def test_many_sessions_deliver_under_a_low_descriptor_limit(tmp_path: Path) -> None:
    store, sessions = tmp_path / "store.db", tmp_path / "sessions"
    lines = "".join(json.dumps(r) + "\n" for r in _requests())
    done = subprocess.run(
        [sys.executable, "-c", RUNNER, str(store), str(sessions), "64", str(tmp_path / "out")],
        input=lines,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    result = json.loads((tmp_path / "out").read_text())
    *created, tick = result["answers"]
    refused = [a for a in created if "id" not in a.get("ok", {})]
    assert not refused, refused[:3]
    delivered = tick["ok"]["delivered"]
    assert len(delivered) == SESSIONS, tick
    assert len({d["messageId"] for d in delivered}) == SESSIONS
    logs = sorted(sessions.glob("*.jsonl"))
    assert len(logs) == SESSIONS
    for log in logs:
        (event,) = read_log(log).events  # exactly one follow-up each: none lost, none twice
        assert event.type == "message/followup"
    # 64 // 8 = 8 logs at most, plus the store, the directory, stdio and the interpreter's own
    assert result["fds"] <= 8 + 16, result["fds"]


def test_the_least_recently_resolved_log_is_closed(tmp_path: Path) -> None:
    directory = SessionsDirectory(tmp_path / "sessions", max_open=3)
    try:
        logs = {s: directory.resolve(s) for s in ("a", "b", "c")}
        assert directory.resolve("a") is logs["a"]  # a is now the most recent
        d = directory.resolve("d")
        assert logs["b"].closed and not logs["a"].closed and not logs["c"].closed
        again = directory.resolve("b")  # re-opened, re-read: a fresh handle
        assert again is not logs["b"] and not again.closed and logs["c"].closed
        assert not d.closed and directory.resolve("a") is logs["a"]
        open_count = sum(not log.closed for log in (logs["a"], again, d, logs["c"]))
        assert open_count == 3
    finally:
        directory.close()
    assert all(log.closed for log in (*logs.values(), d, again))


def test_the_bound_follows_the_descriptor_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    import resource

    monkeypatch.setattr(resource, "getrlimit", lambda _which: (128, 4096))
    assert default_max_open() == 16
    monkeypatch.setattr(resource, "getrlimit", lambda _which: (20, 20))
    assert default_max_open() == 4
    monkeypatch.setattr(resource, "getrlimit", lambda _which: (1 << 20, 1 << 20))
    assert default_max_open() == MAX_OPEN_LOGS
    monkeypatch.setattr(resource, "getrlimit", lambda _w: (resource.RLIM_INFINITY,) * 2)
    assert default_max_open() == MAX_OPEN_LOGS
    with pytest.raises(ValueError, match="max_open"):
        SessionsDirectory("unused", max_open=0)
