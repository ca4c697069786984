"""The fuzz targets: one input generator and one checked run per entry point.

Each :class:`Target` pairs a generator (``gen(src) -> input``) with ``run(input)``, which
raises :class:`~tests.fuzz.oracle.Escape` when the fuzz property fails. The Hypothesis tests
(``test_*.py``) and the long run (``run_long.py``) both go through :data:`TARGETS`.
"""

from __future__ import annotations

import contextlib
import io
import json
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any, Final

from hypothesis import strategies as st

from schedlog.absent import ABSENT
from schedlog.cli.common import run_batch
from schedlog.cli.main import _tolerate_invalid_utf8
from schedlog.cli.rules_cmd import RULES_OPS
from schedlog.errors import StoreOpenError
from schedlog.eventlog import (
    change_to_json,
    decode_change,
    decode_header,
    delivered_members,
    event_from_value,
    parse_followup,
    parse_log,
)
from schedlog.host.stores.json import validate_document
from schedlog.host.stores.open import open_store
from schedlog.host.task import decode_task, encode_task
from schedlog.invariant.logs import validate_log
from schedlog.rules.at import parse_at
from schedlog.rules.cron import canonical_cron, cron_latest, cron_next, parse_cron
from schedlog.rules.decide import decide
from schedlog.rules.instants import MAX_MS, MIN_MS, is_representable
from schedlog.rules.records import (
    build_host_record,
    build_session_record,
    decode_host_record,
    decode_legacy_record,
)
from schedlog.rules.text import js_dumps
from schedlog.rules.update import resolve_update
from schedlog.rules.zones import check_time_zone, get_zone
from schedlog.strictjson import JSONSyntaxError, loads_strict
from tests.fuzz import gen as g
from tests.fuzz import oracle as o
from tests.fuzz.envs import HostEnv, SessionEnv, captured, swallowed
from tests.fuzz.gen import Source, pick, weighted


@dataclass(frozen=True)
class Target:
    """A fuzz target; ``weight`` is its share of the long run's inputs, per mille."""

    name: str
    gen: Callable[[Source], Any]
    run: Callable[[Any], None]
    weight: int

    def strategy(self) -> st.SearchStrategy[Any]:
        return g.strategy(self.gen)


TARGETS: dict[str, Target] = {}


def target(name: str, gen: Callable[[Source], Any], weight: int) -> Callable[..., Target]:
    def register(run: Callable[[Any], None]) -> Target:
        t = Target(name, gen, run, weight)
        TARGETS[name] = t
        return t

    return register


# --- JSON text ------------------------------------------------------------------------------------


def _strict_stdlib(data: bytes) -> object:
    def pairs(items: list[tuple[str, Any]]) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for k, v in items:
            if k in out:
                raise ValueError("duplicate key")
            out[k] = v
        return out

    def constant(token: str) -> Any:
        raise ValueError(token)

    text = data.decode("utf-8")
    if text.startswith("\ufeff"):
        raise ValueError("BOM")
    return json.loads(text, object_pairs_hook=pairs, parse_constant=constant)


def _gen_json_text(src: Source) -> bytes:
    return weighted(
        src,
        (5, lambda: g.safe_serialize(src, g.any_value(src))),
        (4, lambda: g.mutate_bytes(src, g.safe_serialize(src, g.any_value(src)), src.int(1, 3))),
        (1, lambda: src.bytes(src.int(0, 64))),
        (
            1,
            lambda: pick(src, (b"[" * 100_000, b'{"a":' * 5_000, b"1" * 5_000, b"-" + b"9" * 5000)),
        ),
    )


@target("json_text", _gen_json_text, weight=60)
def json_text(data: bytes) -> None:
    """loads_strict: a value or JSONSyntaxError, and the same verdict as the strict stdlib."""
    got = o.expect("loads_strict", lambda: loads_strict(data), (), also=(JSONSyntaxError,))
    try:
        want: object = _strict_stdlib(data)
    except (ValueError, RecursionError, UnicodeDecodeError):
        want = JSONSyntaxError
    if isinstance(got, JSONSyntaxError):
        if want is not JSONSyntaxError:
            raise o.Escape(f"loads_strict rejected text the strict stdlib reads: {data[:200]!r}")
        return
    if want is JSONSyntaxError:
        raise o.Escape(f"loads_strict accepted text the strict stdlib rejects: {data[:200]!r}")
    with contextlib.suppress(RecursionError):
        if got != want:
            raise o.Escape(f"loads_strict and the stdlib disagree on {data[:200]!r}")


# --- session logs ---------------------------------------------------------------------------------

HEADER_LINE: Final = (
    b'{"type":"session/header","version":1,"sessionId":"s-1","seedLength":0,'
    b'"parentSessionId":null}\n'
)


def _check_log(data: bytes, where: str) -> None:
    contents = o.expect(where, lambda: parse_log(data), ())
    if isinstance(contents, BaseException):
        return
    if contents.corruption is not None:
        err = contents.corruption.error()
        o.check_error(err, o.DECODER, where)
    o.expect(f"{where} validate_log", lambda: validate_log(contents), o.DECODER)
    seed = contents.header.seed_length if contents.header is not None else 0
    o.expect(f"{where} delivered", lambda: delivered_members(contents.events, seed_length=seed), ())


def _gen_log_line(src: Source) -> bytes:
    value = weighted(
        src,
        (4, lambda: g.maybe_mutate(src, g.event_json(src), 0.7)),
        (1, lambda: g.maybe_mutate(src, g.header_json(src), 0.7)),
    )
    line = g.safe_serialize(src, value).replace(b"\n", b" ")
    return g.mutate_bytes(src, line, src.int(1, 2)) if src.bool(0.3) else line


@target("log_line", _gen_log_line, weight=60)
def log_line(line: bytes) -> None:
    """One line as an event after a valid header, and as line 1 (the header)."""
    _check_log(HEADER_LINE + line + b"\n", "event line")
    _check_log(line + b"\n", "header line")


@target("session_log", g.log_bytes, weight=50)
def session_log(data: bytes) -> None:
    """A whole log: read, fold the owned suffix, find delivered members."""
    _check_log(data, "session log")


# --- decoders of values ---------------------------------------------------------------------------


@target("change", lambda src: g.maybe_mutate(src, g.change_json(src), 0.7), weight=70)
def change(value: object) -> None:
    got = o.expect("decode_change", lambda: decode_change(value), o.DECODER)
    if isinstance(got, BaseException):
        return
    again = o.expect("decode_change(to_json)", lambda: decode_change(change_to_json(got)), ())
    if again != got:
        raise o.Escape(f"decode_change does not round-trip: {got!r} -> {again!r}")


def _gen_event_value(src: Source) -> tuple[str, object]:
    return weighted(
        src,
        (2, lambda: ("event", g.maybe_mutate(src, g.event_json(src), 0.7))),
        (1, lambda: ("header", g.maybe_mutate(src, g.header_json(src), 0.7))),
        (2, lambda: ("followup", g.maybe_mutate(src, g.followup_json(src)["data"], 0.7))),
    )


@target("event_value", _gen_event_value, weight=70)
def event_value(item: tuple[str, object]) -> None:
    kind, value = item
    if kind == "event":
        o.expect("event_from_value", lambda: event_from_value(value), o.DECODER)
    elif kind == "header":
        o.expect("decode_header", lambda: decode_header(value), o.DECODER)
    else:
        o.expect("parse_followup", lambda: parse_followup(value), ())


def _record_target(host: bool) -> Callable[[object], None]:
    decoder = decode_host_record if host else decode_legacy_record
    where = "decode_host_record" if host else "decode_legacy_record"

    def run(value: object) -> None:
        got = o.expect(where, lambda: decoder(value), o.DECODER)
        if isinstance(got, BaseException):
            return
        o.round_trip(where, got.to_json(), decoder, lambda r: r.to_json())

    return run


legacy_record = target("legacy_record", lambda src: g.record_value(src, host=False), weight=60)(
    _record_target(host=False)
)
host_record = target("host_record", lambda src: g.record_value(src, host=True), weight=60)(
    _record_target(host=True)
)


@target("host_task", g.task_value, weight=50)
def host_task(item: tuple[str, object]) -> None:
    key, value = item
    got = o.expect("decode_task", lambda: decode_task(key, value), o.DECODER)
    if isinstance(got, BaseException):
        return
    # A stored key is JSON text like the task, so it reads back the same way (two lone
    # surrogates in a row join into one character on both sides).
    stored_key = o.check_json(key, "task key")
    o.round_trip("decode_task", encode_task(got), partial(decode_task, stored_key), encode_task)


def _gen_store(src: Source) -> tuple[bytes, bool]:
    return g.store_bytes(src), src.bool(0.1)


@target("store_document", _gen_store, weight=30)
def store_document(item: tuple[bytes, bool]) -> None:
    """validate_document, and now and then a real open of the file (left byte-for-byte)."""
    data, open_file = item
    got = o.expect("validate_document", lambda: validate_document(data), o.STORE_OPEN_CODES)
    if not open_file:
        return
    from tests.fuzz.envs import scratch_dir

    path = scratch_dir() / "schedule.json"
    path.write_bytes(data)
    store = o.expect("open_store", lambda: open_store(path, "json"), o.STORE_OPEN_CODES)
    if isinstance(store, StoreOpenError):
        if path.read_bytes() != data:
            raise o.Escape("a refused store was modified")
        if not isinstance(got, StoreOpenError) or got.code != store.code:
            raise o.Escape(f"open_store and validate_document disagree: {store!r} vs {got!r}")
    elif not isinstance(store, BaseException):
        store.close()
    _rmtree(path.parent)


def _rmtree(path: Path) -> None:
    import shutil

    shutil.rmtree(path, ignore_errors=True)


# --- rules: cron, at, zones, decisions, creation, update ------------------------------------------


def _gen_cron(src: Source) -> tuple[object, int, int]:
    expression = weighted(
        src,
        (6, lambda: g.cron_expression(src, valid=src.bool(0.4))),
        (1, lambda: g.nasty_string(src)),
        (1, lambda: g.any_value(src)),
    )
    return expression, g.instant_ms(src), src.int(0, len(g.ZONES) - 1)


@target("cron", _gen_cron, weight=60)
def cron(item: tuple[object, int, int]) -> None:
    """Parse, canonical fixed point, and next/latest from an arbitrary floor."""
    expression, floor, zone_index = item
    canonical = o.expect("canonical_cron", lambda: canonical_cron(expression), o.CRON)
    if isinstance(canonical, BaseException):
        return
    again = o.expect("canonical_cron(canonical)", lambda: canonical_cron(canonical), ())
    if again != canonical:
        raise o.Escape(f"canonical cron is not a fixed point: {canonical!r} -> {again!r}")
    rule = parse_cron(canonical)
    zone = get_zone(g.ZONES[zone_index])
    assert zone is not None
    nxt = o.expect("cron_next", lambda: cron_next(rule, zone, floor), ())
    if nxt is not None and not (isinstance(nxt, int) and floor < nxt <= MAX_MS and nxt >= MIN_MS):
        raise o.Escape(f"cron_next({canonical!r}, {floor}) = {nxt!r}")
    if is_representable(floor):
        latest = o.expect("cron_latest", lambda: cron_latest(rule, zone, floor, floor), ())
        if latest is not None and not (isinstance(latest, int) and MIN_MS <= latest <= floor):
            raise o.Escape(f"cron_latest({canonical!r}, {floor}) = {latest!r}")


def _gen_at(src: Source) -> tuple[object, int]:
    now = g.instant_ms(src)
    return g.at_value(src, near=now if is_representable(now) else g.T0), now


@target("at", _gen_at, weight=70)
def at(item: tuple[object, int]) -> None:
    value, now = item
    got = o.expect("parse_at", lambda: parse_at(value, now), o.AT)
    if isinstance(got, int) and not (is_representable(got) and got > now):
        raise o.Escape(f"parse_at({value!r}, {now}) = {got} is not a future instant")


def _gen_zone(src: Source) -> tuple[object, list[int]]:
    probes = [
        weighted(
            src,
            (4, lambda: g.representable_ms(src)),
            (1, lambda: g.nasty_int(src)),
            (1, lambda: src.int(-(2**80), 2**80)),
        )
        for _ in range(src.int(1, 4))
    ]
    return g.zone_value(src), probes


@target("zone", _gen_zone, weight=70)
def zone(item: tuple[object, list[int]]) -> None:
    """check_time_zone, canonical idempotence, offsets and local resolution at any int."""
    value, probes = item
    got = o.expect("check_time_zone", lambda: check_time_zone(value), o.ZONE)
    if isinstance(got, BaseException):
        return
    z, canonical = got
    again = o.expect("check_time_zone(canonical)", lambda: check_time_zone(canonical), ())
    if isinstance(again, BaseException) or again[1] != canonical:
        raise o.Escape(f"canonical zone {canonical!r} is not a fixed point: {again!r}")
    for u in probes:
        off = o.expect("Zone.offset", partial(z.offset, u), ())
        if not isinstance(off, int) or abs(off) >= 86_400_000:
            raise o.Escape(f"{z!r}.offset({u}) = {off!r}")
        resolved = o.expect("Zone.resolve_local", partial(z.resolve_local, u), ())
        if resolved is not None and (not isinstance(resolved, int) or z.local(resolved) != u):
            raise o.Escape(f"{z!r}.resolve_local({u}) = {resolved!r} does not map back")


def _gen_decide(src: Source) -> tuple[object, bool, int]:
    host = src.bool()
    record = g.record_value(src, host=host)
    delta = weighted(
        src,
        (6, lambda: src.int(0, 400 * g.DAY)),
        (1, lambda: -src.int(1, g.DAY)),
        (1, lambda: g.nasty_int(src)),
        (1, lambda: src.int(0, MAX_MS - MIN_MS)),
    )
    return record, host, delta


@target("decide", _gen_decide, weight=60)
def decide_target(item: tuple[object, bool, int]) -> None:
    """Decisions on decoded records at arbitrary instants (relative to the target)."""
    value, host, delta = item
    decoder = decode_host_record if host else decode_legacy_record
    record = o.expect("decode", lambda: decoder(value), o.DECODER)
    if isinstance(record, BaseException):
        return
    when = record.scheduled_at + delta
    d = o.expect("decide", lambda: decide(record, when), o.DECIDE)
    if isinstance(d, BaseException):
        return
    ok = record.scheduled_at <= d.occurrence_at <= when
    if d.next_scheduled_at is not None:
        ok = ok and not record.is_one_shot and when < d.next_scheduled_at <= MAX_MS
    if not ok:
        raise o.Escape(f"decide({record!r}, {when}) = {d!r} breaks docs/rules.md#catch-up")


def _gen_create(src: Source) -> tuple[bool, object, int]:
    host = src.bool()
    now = g.instant_ms(src)
    near = now if is_representable(now) else g.T0
    return host, g.create_args(src, host=host, near=near), now


@target("create_record", _gen_create, weight=60)
def create_record(item: tuple[bool, object, int]) -> None:
    host, args, now = item
    build = build_host_record if host else build_session_record
    got = o.expect("build record", lambda: build(args, id="schedule-1", now=now), o.CREATE)
    if isinstance(got, BaseException):
        return
    decoder = decode_host_record if host else decode_legacy_record
    o.round_trip("built record", got.to_json(), decoder, lambda r: r.to_json())
    if not got.scheduled_at > now:
        raise o.Escape(f"first target {got.scheduled_at} is not after now {now}")


def _absent_or(src: Source, fn: Callable[[], object]) -> object:
    return ABSENT if src.bool(0.5) else fn()


def _gen_update(src: Source) -> dict[str, object]:
    current = g.record_json(src, host=True)
    expected: object = json.loads(json.dumps(current)) if src.bool(0.8) else g.any_value(src)
    if src.bool(0.2):
        expected = g.mutate(src, expected)
    now = g.instant_ms(src)
    near = now if is_representable(now) else g.T0
    return {
        "current": current,
        "expected": expected,
        "now": now,
        "change": _absent_or(src, lambda: g.change_value(src, near)),
        "title": _absent_or(
            src, lambda: g.pad(src, g.title_text(src)) if src.bool() else g.leaf(src)
        ),
        "prompt": _absent_or(src, lambda: g.prompt_text(src) if src.bool() else g.leaf(src)),
    }


@target("update", _gen_update, weight=50)
def update(item: dict[str, Any]) -> None:
    current = decode_host_record(item["current"])
    got = o.expect(
        "resolve_update",
        lambda: resolve_update(
            current,
            item["expected"],
            item["now"],
            change=item["change"],
            title=item["title"],
            prompt=item["prompt"],
        ),
        o.UPDATE,
    )
    if isinstance(got, BaseException):
        return
    o.check_json(got.to_json(id=current.id), "update result")
    if got.record is not None:
        o.round_trip(
            "updated record", got.record.to_json(), decode_host_record, lambda r: r.to_json()
        )


# --- session-local tools --------------------------------------------------------------------------

# Built lazily, so that importing this module writes nothing.
_SESSION: list[SessionEnv] = []
_HOST: dict[str, HostEnv] = {}


def session_env() -> SessionEnv:
    if not _SESSION:
        _SESSION.append(SessionEnv())
    return _SESSION[0]


def host_env(backend: str = "json") -> HostEnv:
    if backend not in _HOST:
        _HOST[backend] = HostEnv(backend)  # type: ignore[arg-type]
    return _HOST[backend]


def _jsonable(value: object) -> object:
    """Tool and remote arguments are JSON: a Python value nested past what JSON text can carry
    (docs/protocol.md#json-input decoding stops near 1000 levels) is replaced by a marker."""
    try:
        js_dumps(value)
    except RecursionError:
        return {"nested": "too deep for JSON"}
    except Exception:
        pass  # refs and the like: resolved later
    return value


def _op_now(src: Source) -> int:
    return weighted(
        src,
        (6, lambda: g.T0 + src.int(0, 60 * g.DAY) // 1000 * 1000),
        (1, lambda: g.instant_ms(src)),
    )


def _session_op(src: Source) -> tuple[str, int, object]:
    now = _op_now(src)
    name = weighted(
        src,
        (5, lambda: "schedule_create"),
        (2, lambda: "schedule_list"),
        (3, lambda: "schedule_delete"),
        (2, lambda: "tick"),
        (1, lambda: "archive_activity"),
        (1, lambda: "archive_stop"),
    )
    near = now if is_representable(now) else g.T0
    args: object = {}
    if name == "schedule_create":
        args = g.create_args(src, host=False, near=near)
    elif name == "schedule_delete":
        args = g.maybe_mutate(src, {"id": f"schedule-{src.int(1, 8)}"}, 0.4)
    elif name == "schedule_list":
        args = g.maybe_mutate(src, {}, 0.3)
    return name, now, _jsonable(args)


def _gen_session_tools(src: Source) -> tuple[bytes | None, list[tuple[str, int, object]]]:
    damaged = g.log_bytes(src) if src.bool(0.3) else None
    return damaged, [_session_op(src) for _ in range(src.int(1, 4))]


@target("session_tools", _gen_session_tools, weight=30)
def session_tools(item: tuple[bytes | None, list[tuple[str, int, object]]]) -> None:
    """Tool calls, ticks and archive admission on a BatchSession (a healthy or a damaged log)."""
    damaged, ops = item
    env = session_env()
    if damaged is None:
        _session_ops(env.use(), ops, o.SESSION_TOOL, "session")
        o.expect("session log after tools", env.check_log, ())
    else:
        with env.on_bytes(damaged) as session:
            _session_ops(session, ops, o.SESSION_TOOL_DAMAGED, "damaged session")


def _session_ops(
    session: Any, ops: list[tuple[str, int, object]], allowed: Any, where: str
) -> None:
    for name, now, args in ops:
        here = f"{where} {name}"
        with captured() as logs:
            if name in ("schedule_create", "schedule_list", "schedule_delete"):
                value = o.expect(here, partial(getattr(session, name), now, args), ())
            elif name == "archive_stop":
                value = o.expect(
                    here, partial(session.archive_stop, now), allowed - {"schedule_not_found"}
                )
            else:
                value = o.expect(here, partial(getattr(session, name), now), ())
        if not isinstance(value, BaseException):
            o.check_value(value, allowed - {"internal_error"}, here)
        if swallowed(logs):
            raise o.Escape(f"{here}: an exception was swallowed: {swallowed(logs)}")


# --- host tools and remote operations -------------------------------------------------------------


def _refs(src: Source) -> tuple[g.Ref, g.Ref, g.Ref]:
    index = src.int(0, 63)
    return (
        g.Ref("id", index),
        g.Ref("session", index),
        g.Ref("record", index, src.int(0, 2**32), src.int(0, 2) if src.bool(0.3) else 0),
    )


def _host_tool_op(src: Source) -> tuple[str, object, int, object]:
    now = _op_now(src)
    near = now if is_representable(now) else g.T0
    task_ref, session_ref, _ = _refs(src)
    session: object = session_ref if src.bool(0.7) else g.session_arg(src)
    name = weighted(
        src,
        (4, lambda: "schedule_create"),
        (1, lambda: "schedule_list"),
        (2, lambda: "schedule_delete"),
        (4, lambda: "schedule_update"),
        (2, lambda: "schedule_pause"),
        (2, lambda: "schedule_resume"),
        (1, lambda: "tick"),
        (1, lambda: "archive_activity"),
    )
    args: object = {}
    if name == "schedule_create":
        args = g.create_args(src, host=True, near=near)
    elif name == "schedule_delete":
        args = g.maybe_mutate(src, {"id": task_ref if src.bool(0.8) else g.task_id_arg(src)}, 0.3)
    elif name == "schedule_update":
        upd: dict[str, object] = {"id": task_ref if src.bool(0.8) else g.task_id_arg(src)}
        if src.bool(0.4):
            upd["title"] = g.title_text(src) if src.bool(0.7) else g.leaf(src)
        if src.bool(0.4):
            upd["prompt"] = g.prompt_text(src) if src.bool(0.7) else g.leaf(src)
        if src.bool(0.7):
            selector = pick(src, g.UPDATE_SELECTORS)
            upd[selector] = g.selector_value(src, selector, host=True, near=near)
        args = g.maybe_mutate(src, upd, 0.3)
    elif name in ("schedule_pause", "schedule_resume"):
        args = g.maybe_mutate(src, {"id": task_ref if src.bool(0.8) else g.task_id_arg(src)}, 0.3)
    elif name == "schedule_list":
        args = g.maybe_mutate(src, {}, 0.3)
    return name, session, now, _jsonable(args)


def _gen_host_tools(src: Source) -> tuple[str, list[tuple[str, object, int, object]]]:
    backend = "json" if src.bool(0.7) else "sqlite"
    return backend, [_host_tool_op(src) for _ in range(src.int(1, 4))]


@target("host_tools", _gen_host_tools, weight=15)
def host_tools(item: tuple[str, list[tuple[str, object, int, object]]]) -> None:
    """The six host tools, ticks and archive admission through a HostService (virtual now)."""
    backend, ops = item
    env = host_env(backend)
    batch = env.use()
    assert batch.service is not None
    for name, session_arg, now, raw_args in ops:
        session = env.resolve(session_arg)
        args = env.resolve(raw_args)
        here = f"host {name}"
        batch.clock.now = now
        with captured() as logs:
            if name == "tick":
                value = o.expect(here, env.tick, ())
            elif name == "archive_activity":
                sid = session if type(session) is str else "s-1"
                value = o.expect(here, partial(batch.service.archive_activity, sid), ())
            else:
                sid = session if type(session) is str else "s-1"
                value = o.expect(here, partial(env.call_tool, name, sid, args), ())
        if not isinstance(value, BaseException):
            o.check_value(value, o.HOST_TOOL, here)
        if swallowed(logs):
            raise o.Escape(f"{here}: an exception was swallowed: {swallowed(logs)}")
    o.expect("store after host tools", env.check_store, ())


def _remote_op(src: Source) -> tuple[str, int, object]:
    now = _op_now(src)
    near = now if is_representable(now) else g.T0
    task_ref, session_ref, record_ref = _refs(src)
    consistent = src.bool(0.8)
    session = session_ref if consistent else g.session_arg(src)
    task = task_ref if consistent else g.task_id_arg(src)
    name = pick(
        src,
        ("catalog", "list", "history", "history", "update", "update", "delete", "pause", "resume"),
    )
    args: dict[str, object] = {}
    if name == "list":
        args = {"sessionId": session}
    elif name == "history":
        args = {"sessionId": session, "id": task}
        args["limit"] = src.int(1, 100) if src.bool(0.8) else g.leaf(src)
        if src.bool(0.5):
            args["before"] = g.Ref("message", src.int(0, 63)) if src.bool(0.7) else g.leaf(src)
    elif name == "update":
        args = {"sessionId": session, "id": task, "expected": record_ref}
        if src.bool(0.6):
            args["change"] = g.change_value(src, near)
        if src.bool(0.3):
            args["title"] = g.title_text(src) if src.bool(0.7) else g.leaf(src)
        if src.bool(0.3):
            args["prompt"] = g.prompt_text(src) if src.bool(0.7) else g.leaf(src)
    elif name == "delete":
        args = {"sessionId": session, "id": task}
    elif name in ("pause", "resume"):
        args = {"sessionId": session, "id": task}
        if src.bool(0.5):
            args["expected"] = record_ref if src.bool(0.7) else g.leaf(src)
    mutated = g.maybe_mutate(src, args, 0.25)
    return name, now, _jsonable(mutated if isinstance(mutated, dict) else args)


def _gen_host_remote(src: Source) -> tuple[str, list[tuple[str, int, object]]]:
    backend = "json" if src.bool(0.7) else "sqlite"
    return backend, [_remote_op(src) for _ in range(src.int(1, 4))]


@target("host_remote", _gen_host_remote, weight=20)
def host_remote(item: tuple[str, list[tuple[str, int, object]]]) -> None:
    backend, ops = item
    env = host_env(backend)
    batch = env.use()
    assert batch.service is not None
    for name, now, raw_args in ops:
        args = env.resolve(raw_args)
        assert isinstance(args, dict)
        here = f"remote {name}"
        batch.clock.now = now
        with captured() as logs:
            value = o.expect(here, partial(env.call_remote, name, args), o.HOST_REMOTE)
        if not isinstance(value, BaseException):
            o.check_value(value, o.HOST_REMOTE, here)
        if swallowed(logs):
            raise o.Escape(f"{here}: an exception was swallowed: {swallowed(logs)}")
    o.expect("store after remote operations", env.check_store, ())


# --- batch request lines --------------------------------------------------------------------------


def request_instant(src: Source) -> object:
    ms = g.representable_ms(src)
    from schedlog.rules.instants import format_instant

    text = format_instant(ms)
    return weighted(
        src,
        (6, lambda: text),
        (1, lambda: text[:-5] + "Z"),
        (1, lambda: text[:-1] + "123456z"),
        (
            1,
            lambda: (
                text.replace("T", "t")[:-1] + pick(src, ("+05:30", "-00:00", "-23:59", "+24:00"))
            ),
        ),
        (
            1,
            lambda: pick(
                src,
                (
                    "+012000-01-01T00:00:00Z",
                    "-000001-06-01T00:00:00Z",
                    "0000-06-01T00:00:00Z",
                    "-000000-01-01T00:00:00Z",
                    "+275760-09-13T00:00:00Z",
                    "2026-02-29T00:00:00Z",
                    "2026-05-01T23:59:60Z",
                    "2026-05-01 09:00:00Z",
                ),
            ),
        ),
        (1, lambda: g.any_value(src)),
    )


def _rules_request(src: Source) -> object:
    op = pick(src, tuple(RULES_OPS))
    req: dict[str, object] = {"op": op}
    if op == "create":
        host = src.bool()
        req.update(
            protocol="host" if host else "session-local",
            now=request_instant(src),
            id="schedule-1",
            args=g.create_args(src, host=host),
        )
    elif op == "decide":
        req.update(record=g.record_value(src, host=src.bool()), at=request_instant(src))
    elif op == "canonical_cron":
        req["expression"] = (
            g.cron_expression(src, valid=src.bool()) if src.bool(0.9) else g.any_value(src)
        )
    elif op == "canonical_zone":
        req["time_zone"] = g.zone_value(src)
    elif op == "parse_at":
        req.update(at=g.at_value(src), now=request_instant(src))
    elif op == "decode_record":
        host = src.bool()
        req.update(protocol="host" if host else "legacy", record=g.record_value(src, host=host))
    elif op == "update":
        u = _gen_update(src)
        req.update(current=u["current"], expected=u["expected"], now=request_instant(src))
        for k in ("change", "title", "prompt"):
            if u[k] is not ABSENT:
                req[k] = u[k]
    elif op == "decode_change":
        req["change"] = g.maybe_mutate(src, g.change_json(src), 0.5)
    elif op == "fold":
        events = g.log_events(src)
        req["events"] = events
        if src.bool(0.3):
            req["seedLength"] = src.int(0, len(events)) if src.bool(0.8) else g.leaf(src)
    return g.maybe_mutate(src, req, 0.25)


def _session_request(src: Source) -> object:
    name, now, args = _session_op(src)
    req: dict[str, object] = {
        "op": name,
        "now": request_instant(src) if src.bool(0.3) else _instant_text(now),
    }
    if name.startswith("schedule_"):
        req["args"] = args
    return g.maybe_mutate(src, req, 0.25)


def _instant_text(ms: int) -> str:
    from schedlog.rules.instants import format_instant

    return format_instant(ms) if is_representable(ms) else "2026-05-01T06:00:00Z"


def _host_request(src: Source) -> object:
    if src.bool(0.5):
        name, session, now, args = _host_tool_op(src)
        if name in ("tick", "archive_activity"):
            req: dict[str, object] = {"op": name, "now": _instant_text(now)}
            if name == "archive_activity":
                req["args"] = {"sessionId": session}
        else:
            req = {"op": name, "session": session, "now": _instant_text(now), "args": args}
    else:
        name, now, args = _remote_op(src)
        req = {"op": name, "now": _instant_text(now), "args": args}
    if src.bool(0.2):
        req["now"] = request_instant(src)
    return g.maybe_mutate(src, req, 0.25)


TABLES: Final = ("rules", "session", "host")


def _gen_batch(src: Source) -> tuple[str, list[object], int]:
    table = pick(src, TABLES)
    make = {"rules": _rules_request, "session": _session_request, "host": _host_request}[table]
    return table, [make(src) for _ in range(src.int(1, 3))], src.int(0, 2**32)


def _handlers(table: str, backend: str = "json") -> tuple[Any, Any]:
    if table == "rules":
        return RULES_OPS, None
    if table == "session":
        return session_env().handlers(), None
    env = host_env(backend)
    return env.use().handlers(), env


BATCH_ERRORS: Final = {
    "rules": o.CREATE | o.DECODER | o.CLI_CODES,
    "session": o.CLI_CODES | {"persistence_uncertain", "corrupt_schedule_log"},
    "host": o.CLI_CODES | {"invalid_rule"},
}
BATCH_VALUES: Final = {
    "rules": o.UPDATE,
    "session": o.SESSION_TOOL,
    "host": o.HOST_REMOTE,
}


def _check_batch_output(table: str, out: str, lines: int, stderr: str, logs: list[Any]) -> None:
    where = f"{table} batch"
    if "batch.internal_error" in stderr or swallowed(logs):
        raise o.Escape(
            f"{where}: an exception escaped a handler: {stderr[:1000]} {swallowed(logs)}"
        )
    if not out.endswith("\n") and lines:
        raise o.Escape(f"{where}: output does not end with a newline: {out[-200:]!r}")
    answers = out.split("\n")[:-1]
    if len(answers) != lines:
        raise o.Escape(f"{where}: {lines} request lines got {len(answers)} answers: {out[:500]!r}")
    for answer in answers:
        value = o.expect(f"{where} output", partial(loads_strict, answer), ())
        if not isinstance(value, dict) or len(value) != 1 or not value.keys() <= {"ok", "error"}:
            raise o.Escape(
                f"{where}: answer is not one {{ok}} or {{error}} object: {answer[:300]!r}"
            )
        if "error" in value:
            error = value["error"]
            if not isinstance(error, dict) or error.keys() != {"code", "message"}:
                raise o.Escape(f"{where}: malformed error {answer[:300]!r}")
            o.check_code(error["code"], BATCH_ERRORS[table], where)
        else:
            o.check_value(value["ok"], BATCH_VALUES[table], where)


def _serialize_line(seed: int, value: object) -> str:
    data = g.safe_serialize(g.RandomSource(seed), value)
    return data.decode("utf-8", "surrogatepass").replace("\n", " ").replace("\r", " ")


@target("batch_lines", _gen_batch, weight=35)
def batch_lines(item: tuple[str, list[object], int]) -> None:
    """Structured request lines (valid, mutated, wrong) through run_batch with each table."""
    table, requests, seed = item
    handlers, env = _handlers(table, "json" if seed % 3 else "sqlite")
    if env is not None:
        requests = [env.resolve(r) for r in requests]
    lines = [_serialize_line(seed + i, r) for i, r in enumerate(requests)]
    out, err = io.StringIO(), io.StringIO()
    with captured() as logs, contextlib.redirect_stderr(err):
        o.expect(f"{table} run_batch", lambda: run_batch(lines, handlers, out), ())
        if env is not None:
            o.expect("store after host batch", env.check_store, ())
    _check_batch_output(table, out.getvalue(), len(lines), err.getvalue(), logs)


def _gen_batch_bytes(src: Source) -> tuple[str, bytes]:
    table = pick(src, TABLES)

    def structured() -> bytes:
        make = {"rules": _rules_request, "session": _session_request, "host": _host_request}
        requests = [make[table](src) for _ in range(src.int(1, 3))]
        text = b"\n".join(g.safe_serialize(src, r).replace(b"\n", b" ") for r in requests)
        return g.mutate_bytes(src, text, src.int(1, 3))

    data = weighted(
        src,
        (4, structured),
        (2, lambda: src.bytes(src.int(0, 96))),
        (1, lambda: pick(src, (b"", b"\n", b"\r\n\r", b"\xff\n{}", b"\x00", b"{" * 50_000))),
    )
    return table, data + (b"\n" if src.bool(0.7) else b"")


def _stdin(data: bytes, errors: str) -> io.TextIOWrapper:
    # How ``sys.stdin`` decodes: UTF-8, universal newlines; the locale decides ``errors``.
    return io.TextIOWrapper(io.BytesIO(data), encoding="utf-8", errors=errors, newline=None)


@target("batch_bytes", _gen_batch_bytes, weight=20)
def batch_bytes(item: tuple[str, bytes]) -> None:
    """Raw bytes on stdin, decoded as a strict UTF-8 locale decodes them: ``schedlog rules
    batch`` end to end (now and then; building the parser dominates), otherwise the same stdin
    preparation and run_batch with each table."""
    table, data = item
    expected = len(_stdin(data, "surrogateescape").readlines())
    out, err = io.StringIO(), io.StringIO()
    with captured() as logs, contextlib.redirect_stderr(err):
        if table == "rules" and zlib.crc32(data) % 4 == 0:
            _run_main(data, out)
        else:
            handlers, env = _handlers(table, "json" if zlib.crc32(data) % 3 else "sqlite")
            stdin = _stdin(data, "strict")
            _tolerate_invalid_utf8(stdin)
            o.expect(f"{table} run_batch", lambda: run_batch(stdin, handlers, out), ())
            if env is not None:
                o.expect("store after host batch", env.check_store, ())
    _check_batch_output(table, out.getvalue(), expected, err.getvalue(), logs)


def _run_main(data: bytes, out: io.StringIO) -> None:
    import sys

    from schedlog.cli.main import main

    saved = sys.stdin, sys.stdout
    sys.stdin, sys.stdout = _stdin(data, "strict"), out
    try:
        code = o.expect("schedlog rules batch", lambda: main(["rules", "batch"]), ())
    finally:
        sys.stdin, sys.stdout = saved
    if code != 0:
        raise o.Escape(f"schedlog rules batch exited {code!r}")
