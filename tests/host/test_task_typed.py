"""The bulk fast path of opening an SQLite store (schedlog.host.task_typed, sqlite_load) against
the readable reference (decode_row / check_row): for valid and invalid rows, hostile text
included, the fast path vouches only for rows the reference accepts, with the same timer keys,
and a whole load gives the same count, keys, or first error code, message and row."""

from __future__ import annotations

import json
import sqlite3
from typing import Any
from unittest import mock

import pytest
from hypothesis import given
from hypothesis import strategies as st
from sortedcontainers import SortedList

from schedlog.errors import StoreOpenError
from schedlog.host.due import index_order, timer_index
from schedlog.host.stores import sqlite_load
from schedlog.host.stores.sqlite_load import check_row, load_rows
from schedlog.host.task_typed import check_rows, instants_ms
from schedlog.rules.instants import format_instant, parse_canonical_instant
from schedlog.rules.text import js_dumps

T0 = 1_780_000_000_000
HOSTILE = [
    "\ud800",
    "a\udfffb",
    "<script>alert(1)</script>",
    "",
    " padded ",
    "\u2028x",
    "x\ufeff",
    'q"uo\\te',
    "a:b:c",
    "é" * 61,
    "𝄞" * 61,
    "x" * 20_000,
    "\x00",
    "\\u003a",
]
texts = st.one_of(st.sampled_from(HOSTILE), st.text(max_size=12), st.just("ok"))
instant_texts = st.one_of(
    st.integers(T0 - 10**9, T0 + 10**11).map(format_instant),
    st.sampled_from(
        [
            "2026-02-30T00:00:00.000Z",
            "2026-01-01T24:00:00.000Z",
            "2026-01-01T23:59:60.000Z",
            "0000-01-01T00:00:00.000Z",
            "2026-01-01T00:00:00Z",
            "2026-01-01T00:00:00.000+00:00",
            "２０２６-01-01T00:00:00.000Z",
            "2026-01-01t00:00:00.000Z",
        ]
    ),
)


@st.composite
def records(draw: st.DrawFn, task_id: str) -> dict[str, Any]:
    kind = draw(st.sampled_from(["at", "after", "every", "daily", "weekly", "cron"]))
    rec: dict[str, Any] = {
        "id": task_id,
        "kind": kind,
        "title": draw(st.sampled_from(["T", "Title a"])),
    }
    rec["prompt"] = "Do the thing"
    if kind == "after":
        rec["afterSeconds"] = draw(st.sampled_from([1, 600, 2**53 - 1]))
    elif kind == "every":
        rec["everySeconds"] = draw(st.sampled_from([60, 3600, 9_007_199_254_740]))
    elif kind in ("daily", "weekly"):
        rec["time"] = draw(st.sampled_from(["09:00:00.000", "23:59:59.999"]))
        rec["timeZone"] = draw(st.sampled_from(["UTC", "Europe/Berlin"]))
        if kind == "weekly":
            rec["weekdays"] = draw(st.sampled_from([[1], [1, 3, 5], [7]]))
    elif kind == "cron":
        rec["expression"] = draw(st.sampled_from(["0 9 * * 1-5", "*/5 * * * *"]))
        rec["timeZone"] = "UTC"
    rec["scheduledAt"] = format_instant(draw(st.integers(T0 - 10**9, T0 + 10**11)))
    return rec


@st.composite
def documents(draw: st.DrawFn, task_id: str, session: str) -> dict[str, Any]:
    doc: dict[str, Any] = {"sessionId": session, "record": draw(records(task_id))}
    status = draw(st.sampled_from(["active", "inactive", None]))
    if status is not None:
        doc["status"] = status
    if draw(st.sampled_from([False, False, True])) and status != "inactive":
        doc["pausedAt"] = format_instant(T0)
    n = draw(st.integers(0, 3))
    history = [
        {
            "scheduledAt": format_instant(T0 + i * 1000),
            "deliveredAt": format_instant(T0 + i * 1000 + 5),
            "messageId": f"m-{task_id}-{i}",
            **({"prompt": "p"} if i % 2 else {}),
        }
        for i in range(n)
    ]
    if history:
        doc["lastDelivery"] = {
            k: history[-1][k] for k in ("scheduledAt", "deliveredAt", "messageId")
        }
    if draw(st.booleans()) or history:
        doc["deliveryHistory"] = {
            "records": history,
            "earlierRecordsUnavailable": draw(st.booleans()),
        }
        if draw(st.booleans()):
            doc["deliveryHistory"]["earlierRecordsPruned"] = False
    return doc


def _paths(value: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out = [prefix]
    if isinstance(value, dict):
        for k, v in value.items():
            out += _paths(v, (*prefix, k))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            out += _paths(v, (*prefix, i))
    return out


def _set(doc: Any, path: tuple[Any, ...], value: Any, delete: bool = False) -> None:
    for step in path[:-1]:
        doc = doc[step]
    if delete:
        del doc[path[-1]]
    else:
        doc[path[-1]] = value


@st.composite
def mutated(draw: st.DrawFn, doc: dict[str, Any]) -> str | Any:
    """The body of ``doc``, perhaps broken in one of many ways (as text or as value)."""
    how = draw(
        st.sampled_from(["none"] * 6 + ["value", "delete", "add", "text", "kind-member", "history"])
    )
    if how in ("value", "delete"):
        path = draw(st.sampled_from(_paths(doc)[1:]))
        if how == "delete":
            _set(doc, path, None, delete=True)
        else:
            new = draw(
                st.one_of(
                    texts,
                    instant_texts,
                    st.sampled_from(
                        [None, 0, -1, 5.0, 1e300, True, [], {}, 2**53, 2**64, [2, 1], [0]]
                    ),
                )
            )
            _set(doc, path, new)
    elif how == "add":
        path = draw(st.sampled_from([p for p in _paths(doc) if isinstance(_get(doc, p), dict)]))
        key = draw(
            st.sampled_from(
                [
                    "pausedAt",
                    "status",
                    "title",
                    "prompt",
                    "extra",
                    "afterSeconds",
                    "time",
                    "weekdays",
                    "earlierRecordsPruned",
                ]
            )
        )
        _get(doc, path)[key] = draw(
            st.one_of(texts, instant_texts, st.sampled_from([None, 1, 600, [1]]))
        )
    elif how == "history" and "lastDelivery" in doc:
        history = doc["deliveryHistory"]["records"]
        edit = draw(st.sampled_from(["empty", "no-receipt", "other-receipt", "repeat", "title"]))
        if edit == "empty":
            history.clear()
        elif edit == "no-receipt":
            del doc["lastDelivery"]
        elif edit == "other-receipt":
            doc["lastDelivery"]["deliveredAt"] = history[0]["scheduledAt"]
        elif edit == "repeat":
            history.append(dict(history[-1]))
            doc["lastDelivery"] = {k: history[-1][k] for k in doc["lastDelivery"]}
        else:
            del doc["record"]["title"]
    elif how == "kind-member":
        doc["record"]["kind"] = draw(
            st.sampled_from(["at", "after", "every", "daily", "weekly", "cron", "bogus"])
        )
    body = js_dumps(doc)
    if how == "text":
        edit = draw(st.integers(0, 8))
        if edit == 0:
            body = " " + body
        elif edit == 1:
            body = body.replace('"status":', '"status":"active","status":', 1)
        elif edit == 2:
            body = body.replace('"status"', '"st\\u0061tus"', 1)
        elif edit == 3:
            body = body + "," + body
        elif edit == 4:
            body = body.replace(",", ", ", 1)
        elif edit == 5:
            body = body.replace("}", "}}", 1)
        elif edit == 6:
            body = "\ufeff" + body
        elif edit == 7:
            body = json.dumps(doc)  # the stdlib's escaping (\\u for non-ASCII)
        else:
            body = body.replace('"Do the thing"', '"Do the \\ud800 thing"')
    return body


def _get(doc: Any, path: tuple[Any, ...]) -> Any:
    for step in path:
        doc = doc[step]
    return doc


@st.composite
def row_lists(draw: st.DrawFn, most: int = 6) -> list[tuple[int, Any, Any, Any]]:
    rows = []
    for seq in range(1, draw(st.integers(1, most)) + 1):
        task_id = draw(
            st.sampled_from(
                [f"schedule-{seq}"] * 4 + [f"schedule-{seq} ", "schedule-1", f"s:{seq}"]
            )
        )
        session = draw(st.sampled_from(["s-1", "s-2", "sé"]))
        body = draw(mutated(draw(documents(task_id, session))))
        key: Any = task_id
        column = draw(st.sampled_from(["same"] * 12 + ["key", "session", "bytes", "null"]))
        if column == "key":
            key = f"other-{seq}"
        elif column == "session":
            session = "s-other"
        elif column == "bytes":
            body = body.encode("utf-8", "surrogatepass")
        elif column == "null":
            key = None
        rows.append((seq, key, session, body))
    return rows


def reference(rows: list[tuple[int, Any, Any, Any]], pausable: bool) -> Any:
    """The reference verdict: the timer keys in row order, or the first error and its row."""
    keys = []
    for i, row in enumerate(rows):
        try:
            stored = check_row(row, pausable=pausable)
        except StoreOpenError as exc:
            return ("error", exc.code, exc.message, i)
        t = stored.task
        if t.active and not t.paused:
            keys.append((t.record.scheduled_at, stored.seq, t.id))
    return keys


@given(st.one_of(row_lists(1), row_lists()), st.booleans())
def test_fast_path_vouches_only_for_what_the_reference_accepts(rows: Any, pausable: bool) -> None:
    fast = check_rows(rows, pausable=pausable)
    if fast is not None:
        assert fast == reference(rows, pausable)


def test_the_fast_path_takes_rows_as_our_writers_write_them() -> None:
    """Not a vacuous property: plain rows of every kind are vouched for."""
    docs = []
    for i, sel in enumerate(
        [
            {"at": "2030-01-01T00:00:00Z"},
            {"after_seconds": 60},
            {"every_seconds": 3600},
            {"daily": {"time": "09:00:00", "time_zone": "Europe/Berlin"}},
            {"weekly": {"time": "09:00:00", "time_zone": "UTC", "weekdays": [1, 5]}},
            {"cron": {"expression": "0 9 * * 1-5", "time_zone": "UTC"}},
        ]
    ):
        from tests.host.helpers import task

        t = task(f"schedule-{i}", **sel)
        from schedlog.host.task import encode_task

        docs.append((i + 1, t.id, t.session_id, js_dumps(encode_task(t))))
    fast = check_rows(docs, pausable=False)
    assert fast is not None and fast == reference(docs, False) and len(fast) == 6


def test_a_body_holding_two_tasks_is_not_taken() -> None:
    """Joined, two bodies may read as two tasks although neither is one alone."""
    record = (
        '"id":"a","kind":"at","title":"T","prompt":"p","scheduledAt":"2030-01-01T00:00:00.000Z"'
    )
    a = '{"sessionId":"s","record":{' + record + "}}"
    b_head, b_tail = a.replace('"a"', '"b"').split(',"record"')
    rows = [(1, "a", "s", a + "," + b_head), (2, "b", "s", '"record"' + b_tail)]
    assert check_rows(rows, pausable=False) is None
    assert reference(rows, False)[0] == "error"


@given(st.lists(instant_texts, max_size=5))
def test_instants_equal_the_shared_parser(values: list[str]) -> None:
    parsed = [parse_canonical_instant(v) for v in values]
    got = instants_ms(values)
    assert got == (None if None in parsed else parsed)


def _db(rows: list[tuple[int, Any, Any, Any]]) -> sqlite3.Connection | None:
    conn = sqlite3.connect(":memory:", isolation_level=None)
    conn.execute(
        "CREATE TABLE tasks (seq INTEGER PRIMARY KEY, id TEXT, session_id TEXT, body TEXT)"
    )
    try:
        conn.executemany("INSERT INTO tasks VALUES (?, ?, ?, ?)", rows)
    except (UnicodeEncodeError, sqlite3.Error):
        return None  # a lone surrogate has no UTF-8 form: no store can hold it
    return conn


@given(rows=row_lists(), pausable=st.booleans())
def test_load_equals_the_reference(rows: Any, pausable: bool) -> None:
    conn = _db(rows)
    if conn is None:
        return
    stored = conn.execute("SELECT seq, id, session_id, body FROM tasks ORDER BY seq").fetchall()
    expected = reference(stored, pausable)
    with mock.patch.object(sqlite_load, "CHUNK_ROWS", 2):
        targets: list[tuple[int, int, str]] = []
        try:
            count = load_rows(conn, pausable=pausable, targets=targets)
        except StoreOpenError as exc:
            assert expected[0] == "error"
            assert (exc.code, exc.message) == expected[1:3]
            return
    assert expected == [] or expected[0] != "error"
    assert count == len(stored)
    assert targets == expected


#: Ids and session ids that need escapes in JSON, or that SQLite's text functions might cut
#: short (NUL): the column check of the chunk query must never take a body whose own ids are
#: not the columns'.
HOSTILE_IDS = [
    'q"uo\\te',
    "tab\there",
    "nul\x00x",
    "é",
    "\u2028x",
    "x\x7f",
    "<b>&amp;</b>",
    "\x01\x1f",
    "/slash/",
    "𝄞",
]
SEQS = [-(2**63), -5, 0, 1, 2, 3, 4096, 4097, 10**6, 2**62, 2**63 - 2, 2**63 - 1]


@st.composite
def hostile_rows(draw: st.DrawFn) -> list[tuple[int, Any, Any, Any]]:
    """Rows at sparse seqs (both ends of the range), with hostile ids and sessions, in the
    body and in the columns, the same or not."""
    seqs = sorted(draw(st.sets(st.sampled_from(SEQS), min_size=1, max_size=6)))
    rows = []
    for seq in seqs:
        task_id = draw(st.sampled_from([f"schedule-{seq}", *HOSTILE_IDS]))
        session = draw(st.sampled_from(["s-1", *HOSTILE_IDS]))
        body = draw(mutated(draw(documents(task_id, session))))
        key: Any = task_id
        column = draw(st.sampled_from(["same"] * 8 + ["key", "session", "int", "blob-key"]))
        if column == "key":
            key = draw(st.sampled_from(HOSTILE_IDS))
        elif column == "session":
            session = draw(st.sampled_from(HOSTILE_IDS))
        elif column == "int":
            key = seq
        elif column == "blob-key":
            key = task_id.encode("utf-8", "surrogatepass")
        rows.append((seq, key, session, body))
    return rows


def _load_verdict(conn: sqlite3.Connection, pausable: bool, chunk: int) -> Any:
    with mock.patch.object(sqlite_load, "CHUNK_ROWS", chunk):
        targets: list[tuple[int, int, str]] = []
        try:
            count = load_rows(conn, pausable=pausable, targets=targets)
        except StoreOpenError as exc:
            return ("error", exc.code, exc.message)
    return count, targets


@given(rows=hostile_rows(), pausable=st.booleans(), chunk=st.sampled_from([1, 2, 3, 4096]))
def test_load_of_hostile_columns_and_sparse_seqs_equals_the_reference(
    rows: Any, pausable: bool, chunk: int
) -> None:
    conn = _db(rows)
    if conn is None:
        return
    stored = conn.execute("SELECT seq, id, session_id, body FROM tasks ORDER BY seq").fetchall()
    expected = reference(stored, pausable)
    got = _load_verdict(conn, pausable, chunk)
    if expected and expected[0] == "error":
        assert got == expected[:3]
    else:
        assert got == (len(stored), expected)


def test_the_chunk_query_takes_clean_rows_with_hostile_ids() -> None:
    """Not vacuous: rows as our writers write them, with ids and sessions that need escapes,
    at sparse seqs, are all vouched for by the chunk query (the reference never runs)."""
    rows = []
    for seq, text in zip(SEQS, [*HOSTILE_IDS, "a", "b"], strict=True):
        doc = _delivered_doc()
        doc["sessionId"] = f"s{text}"
        doc["record"]["id"] = f"id{text}!"  # trimmed
        rows.append((seq, f"id{text}!", f"s{text}", js_dumps(doc)))
    conn = _db(rows)
    assert conn is not None
    expected = reference(rows, True)
    assert len(expected) == len(rows)
    with mock.patch.object(sqlite_load, "_reference", side_effect=AssertionError("not taken")):
        for chunk in (1, 2, 5, 4096):
            assert _load_verdict(conn, True, chunk) == (len(rows), expected)


@pytest.mark.parametrize("column", ["id", "session_id", "body"])
@pytest.mark.parametrize("kind", ["blob", "null", "int"])
def test_a_column_that_is_not_text_is_refused_as_by_the_reference(column: str, kind: str) -> None:
    """A valid row but for the type of one column (a blob holding the very text, NULL, or an
    integer): the chunk query does not take it, and the reference's error is reported."""
    doc = _delivered_doc()
    row: dict[str, Any] = {"id": "schedule-1", "session_id": "s-1", "body": js_dumps(doc)}
    value = row[column]
    row[column] = {"blob": value.encode(), "null": None, "int": 7}[kind]
    rows = [(1, "schedule-1", "s-1", js_dumps(doc)), (2, row["id"], row["session_id"], row["body"])]
    rows[0] = (1, "schedule-0", "s-1", js_dumps(doc).replace("schedule-1", "schedule-0"))
    conn = _db(rows)
    assert conn is not None
    stored = conn.execute("SELECT seq, id, session_id, body FROM tasks ORDER BY seq").fetchall()
    expected = reference(stored, True)
    assert expected[0] == "error"
    for chunk in (1, 2):
        assert _load_verdict(conn, True, chunk) == expected[:3]


def test_an_id_column_the_driver_cannot_read_fails_as_the_reference_does() -> None:
    conn = sqlite3.connect(":memory:", isolation_level=None)
    conn.execute(
        "CREATE TABLE tasks (seq INTEGER PRIMARY KEY, id TEXT, session_id TEXT, body TEXT)"
    )
    doc = _delivered_doc()
    conn.execute("INSERT INTO tasks VALUES (1, ?, 's-1', ?)", ("schedule-1", js_dumps(doc)))
    conn.execute(
        "INSERT INTO tasks VALUES (2, CAST(x'ff' AS TEXT), 's-1', ?)",
        (js_dumps(doc).replace("schedule-1", "\u00ff"),),
    )
    with pytest.raises(sqlite3.Error):
        list(conn.execute("SELECT seq, id, session_id, body FROM tasks ORDER BY seq"))
    with pytest.raises(sqlite3.Error):
        load_rows(conn, pausable=True)


def test_a_row_the_driver_cannot_read_is_reported_after_an_earlier_bad_row() -> None:
    """Text that is not UTF-8 fails in the driver; an earlier bad row of the same chunk wins."""
    conn = sqlite3.connect(":memory:", isolation_level=None)
    conn.execute(
        "CREATE TABLE tasks (seq INTEGER PRIMARY KEY, id TEXT, session_id TEXT, body TEXT)"
    )
    conn.execute("INSERT INTO tasks VALUES (1, 'a', 's', '{}')")
    conn.execute("INSERT INTO tasks VALUES (2, 'b', 's', CAST(x'ff' AS TEXT))")
    with pytest.raises(StoreOpenError) as exc:
        load_rows(conn, pausable=False)
    assert exc.value.code == "invalid-record" and "'a'" in exc.value.message
    conn.execute("DELETE FROM tasks WHERE seq = 1")
    with pytest.raises(sqlite3.Error):
        load_rows(conn, pausable=False)


def test_index_order_is_the_sorted_order() -> None:
    keys = [(5, 1, "a"), (3, 2, "b"), (5, 3, "c"), (-(10**14), 4, "d"), (3, 5, "e")]
    assert index_order(keys) == sorted(keys)
    assert index_order([(5, 2, "a"), (3, 1, "b")]) is None  # not in storage order
    assert index_order([(5, 1, "a"), (3, 1, "b")]) is None  # a seq twice
    assert index_order([(2**53, 1, "a")]) is None  # a float would not be exact


def _same_index(fast: SortedList[Any], keys: list[Any]) -> None:
    """``fast`` is laid out exactly as the reference ``SortedList(keys)``, and consistent."""
    ref = SortedList(keys)
    fast._check()  # type: ignore[attr-defined]
    assert list(fast) == list(ref) and len(fast) == len(ref)
    assert fast._lists == ref._lists and fast._maxes == ref._maxes  # type: ignore[attr-defined]


key_lists = st.lists(
    st.tuples(
        st.one_of(st.integers(T0 - 5, T0 + 5), st.integers(-(2**60), 2**60)),
        st.integers(-(2**63), 2**63 - 1),
        st.sampled_from(["a", "b", "schedule-1", "é"]),
    ),
    max_size=40,
)


@given(key_lists, st.booleans(), st.lists(st.integers(0, 50), max_size=8))
def test_timer_index_equals_the_sorted_list(
    keys: list[tuple[int, int, str]], storage_order: bool, removals: list[int]
) -> None:
    """For keys in storage order (ties on the target included) and in any order: the same
    index as ``SortedList(keys)``, and the same after the same adds and removals."""
    if storage_order:
        keys = sorted({k[1]: k for k in keys}.values(), key=lambda k: k[1])
    fast = timer_index(list(keys))
    _same_index(fast, keys)
    ref = SortedList(keys)
    for i in removals:
        key = (T0 + i, i, "new")
        gone = keys[i % len(keys)] if keys else key
        for index in (fast, ref):
            index.add(key)
            if gone in index:
                index.remove(gone)
        assert list(fast) == list(ref)
        fast._check()  # type: ignore[attr-defined]


def test_timer_index_of_many_keys_spans_several_lists() -> None:
    keys = [(T0 + (i * 7919) % 3001, i, f"schedule-{i}") for i in range(5000)]
    fast = timer_index(keys)
    _same_index(fast, keys)
    assert len(fast._lists) > 1  # type: ignore[attr-defined]


def test_another_sortedcontainers_release_gets_the_plain_sorted_list(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The private layout is written only for the release it was proven against."""
    from schedlog.host import due

    def never(keys: Any) -> None:
        raise AssertionError("the layout was used for another sortedcontainers release")

    keys = [(T0 + (i * 7919) % 3001, i, f"schedule-{i}") for i in range(5000)]
    monkeypatch.setattr(due.sortedcontainers, "__version__", "3.0.0")
    monkeypatch.setattr(due, "index_order", never)
    _same_index(timer_index(keys), keys)


def _delivered_doc() -> dict[str, Any]:
    history = [
        {"scheduledAt": format_instant(T0 + i), "deliveredAt": format_instant(T0 + i + 5)}
        | {"messageId": f"m-{i}"}
        for i in range(2)
    ]
    record = {"id": "schedule-1", "kind": "every", "title": "T", "prompt": "p"}
    record |= {"everySeconds": 60, "scheduledAt": format_instant(T0 + 60_000)}
    return {
        "sessionId": "s-1",
        "record": record,
        "status": "active",
        "lastDelivery": dict(history[-1]),
        "deliveryHistory": {"records": history, "earlierRecordsUnavailable": False},
    }


def _edit(doc: dict[str, Any], edit: str) -> None:
    records = doc["deliveryHistory"]["records"]
    if edit == "no-records":
        records.clear()
    elif edit == "no-receipt":
        del doc["lastDelivery"]
    elif edit == "other-receipt":
        doc["lastDelivery"] = dict(records[0])
    elif edit == "repeated-id":
        records[0]["messageId"] = records[1]["messageId"]
    elif edit == "untrimmed-id":
        records[0]["messageId"] = " m"
    elif edit == "bad-instant":
        records[0]["deliveredAt"] = "2026-02-30T00:00:00.000Z"
    elif edit == "no-title":
        del doc["record"]["title"]
    elif edit == "null-title":
        doc["record"]["title"] = None
    elif edit == "paused-inactive":
        doc["status"] = "inactive"
        doc["pausedAt"] = format_instant(T0)
        order = ["sessionId", "record", "status", "pausedAt", "lastDelivery", "deliveryHistory"]
        for key in order:  # the writing order, so that only the rule is broken
            doc[key] = doc.pop(key)


@pytest.mark.parametrize(
    "edit",
    [
        "no-records",
        "no-receipt",
        "other-receipt",
        "repeated-id",
        "untrimmed-id",
        "bad-instant",
        "no-title",
        "null-title",
        "paused-inactive",
    ],
)
def test_each_task_rule_is_checked(edit: str) -> None:
    """Each rule broken alone: the reference refuses the row and the fast path does not vouch;
    the same row unbroken is vouched for."""
    doc = _delivered_doc()
    row = [(1, "schedule-1", "s-1", js_dumps(doc))]
    assert (
        check_rows(row, pausable=True) == reference(row, True) == [(T0 + 60_000, 1, "schedule-1")]
    )
    _edit(doc, edit)
    row = [(1, "schedule-1", "s-1", js_dumps(doc))]
    assert reference(row, True)[0] == "error"
    assert check_rows(row, pausable=True) is None
