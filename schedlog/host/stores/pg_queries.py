"""Every SQL statement of the PostgreSQL store, by name (as procrastinate keeps its
``sql/queries.sql``): the store, its admin part, its claims and its ``LISTEN`` thread load them
from here, so the whole dialect the backend speaks reads in one place.

``%s`` are psycopg parameters. The schema the statements run against is
:mod:`schedlog.host.stores.pg_schema`.
"""

from __future__ import annotations

from typing import Final

from schedlog.host.stores.pg_schema import NOTIFY_CHANNEL

#: The columns of a :data:`~schedlog.host.stores.pg_rows.Row`, in its order.
COLUMNS: Final = "seq, id, session_id, status, next_at, version, body"
VERSION_TABLE: Final = "schedlog_schema"
#: A row no live lease of another host holds (parameter: this host's owner).
_FREE: Final = "(lease_owner IS NULL OR lease_owner = %s OR lease_until <= now())"

# --- admin ----------------------------------------------------------------------------------

VERSION_TABLE_EXISTS: Final = "SELECT to_regclass(%s) IS NOT NULL"
SCHEMA_VERSION: Final = f"SELECT coalesce(max(version), 0) FROM {VERSION_TABLE}"
MIGRATION_LOCK: Final = "SELECT pg_advisory_xact_lock(%s)"
CREATE_VERSION_TABLE: Final = (
    f"CREATE TABLE IF NOT EXISTS {VERSION_TABLE} (version integer PRIMARY "
    "KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())"
)
RECORD_MIGRATION: Final = f"INSERT INTO {VERSION_TABLE} (version, name) VALUES (%s, %s)"
SYNCHRONOUS_COMMIT: Final = "SET synchronous_commit = on"

# --- reads ----------------------------------------------------------------------------------

ALL_TASKS: Final = f"SELECT {COLUMNS} FROM schedlog_tasks ORDER BY seq"
SESSION_TASKS: Final = f"SELECT {COLUMNS} FROM schedlog_tasks WHERE session_id = %s ORDER BY seq"
GET_TASK: Final = f"SELECT {COLUMNS} FROM schedlog_tasks WHERE id = %s"
GET_TASK_FOR_UPDATE: Final = f"{GET_TASK} FOR UPDATE"
ACTIVE_TARGETS: Final = (
    "SELECT next_at, seq, id FROM schedlog_tasks WHERE status = 'active' ORDER BY seq"
)
#: The catalog's order (docs/http-api.md): ``(next_at, id)``, ids by code point (the "C"
#: collation compares UTF-8 bytes, which is code point order), after a cursor. Parameters
#: (NULL for "any"): ``session``, ``active`` (any status but ``inactive``, so a paused row
#: counts as active, as the catalog reads it), the cursor's ``at`` and ``id``, and ``limit``
#: (NULL: every row).
_CATALOG_WHERE: Final = (
    f"SELECT {COLUMNS} FROM schedlog_tasks "
    "WHERE (%(session)s::text IS NULL OR session_id = %(session)s) "
    "AND (%(active)s::boolean IS NULL OR (status <> 'inactive') = %(active)s) "
    "AND (%(at)s::bigint IS NULL OR "
)
CATALOG_ASC: Final = (
    f'{_CATALOG_WHERE}(next_at, id COLLATE "C") > (%(at)s::bigint, %(id)s::text)) '
    'ORDER BY next_at, id COLLATE "C" LIMIT %(limit)s'
)
CATALOG_DESC: Final = (
    f'{_CATALOG_WHERE}(next_at, id COLLATE "C") < (%(at)s::bigint, %(id)s::text)) '
    'ORDER BY next_at DESC, id COLLATE "C" DESC LIMIT %(limit)s'
)
EARLIEST_ACTIVE: Final = "SELECT min(next_at) FROM schedlog_tasks WHERE status = 'active'"
COUNT: Final = "SELECT count(*) FROM schedlog_tasks"
ACTIVE_COUNT: Final = "SELECT count(*) FROM schedlog_tasks WHERE status = 'active'"
DUE_COUNT: Final = "SELECT count(*) FROM schedlog_tasks WHERE status = 'active' AND next_at <= %s"

# --- writes ---------------------------------------------------------------------------------

INSERT: Final = (
    "INSERT INTO schedlog_tasks (id, session_id, status, next_at, body) "
    "VALUES (%s, %s, %s, %s, %s) RETURNING seq"
)
REPLACE: Final = (
    "UPDATE schedlog_tasks SET status = %s, next_at = %s, body = %s, "
    "version = version + 1 WHERE id = %s AND session_id = %s"
)
REPLACE_VERSION: Final = f"{REPLACE} AND version = %s"
DELETE: Final = "DELETE FROM schedlog_tasks WHERE seq = %s"

# --- claims (several hosts) -----------------------------------------------------------------

#: When to look for work next, in ONE statement so that both halves read one ``now()``: the
#: earliest ``next_at`` of an active task this host could claim, and the earliest end of a live
#: lease of another host. Two statements (each its own autocommit transaction) could straddle
#: a lease's end, the first seeing it live and the second expired, and answer "nothing to do"
#: while a dead host's task waited (parameters: owner, excluded ids, owner).
NEXT_WAKE: Final = (
    f"SELECT (SELECT next_at FROM schedlog_tasks WHERE status = 'active' AND {_FREE} "
    "AND NOT (id = ANY(%s)) ORDER BY next_at, seq LIMIT 1), "
    "(SELECT ceil(extract(epoch FROM min(lease_until)) * 1000)::bigint "
    "FROM schedlog_tasks WHERE lease_owner IS NOT NULL AND lease_owner <> %s "
    "AND lease_until > now())"
)
CLAIM_DUE: Final = (
    f"SELECT {COLUMNS} FROM schedlog_tasks WHERE status = 'active' "
    f"AND next_at <= %s AND {_FREE} AND NOT (id = ANY(%s)) "
    "ORDER BY next_at, seq LIMIT %s FOR UPDATE SKIP LOCKED"
)
SESSION_DUE_CANDIDATES: Final = (
    f"SELECT {COLUMNS} FROM schedlog_tasks WHERE status = 'active' "
    f"AND next_at <= %s AND {_FREE} AND session_id = ANY(%s) "
    "AND NOT (id = ANY(%s)) AND NOT (seq = ANY(%s))"
)
CLAIM_SEQS: Final = (
    f"SELECT {COLUMNS} FROM schedlog_tasks WHERE seq = ANY(%s) "
    f"AND status = 'active' AND next_at <= %s AND {_FREE} "
    "FOR UPDATE SKIP LOCKED"
)
#: Returns each claimed row's previous lease owner: another host's is a takeover.
LEASE: Final = (
    "UPDATE schedlog_tasks AS t SET lease_owner = %s, "
    "lease_until = now() + make_interval(secs => %s) "
    "FROM (SELECT seq, lease_owner AS previous FROM schedlog_tasks WHERE seq = ANY(%s)) AS old "
    "WHERE t.seq = old.seq RETURNING old.previous"
)
EXTEND_LEASES: Final = (
    "UPDATE schedlog_tasks SET lease_until = now() + make_interval(secs => %s) "
    "WHERE id = ANY(%s) AND lease_owner = %s AND lease_until > now() RETURNING id"
)
COMMIT_CLAIMED: Final = (
    "UPDATE schedlog_tasks SET status = %s, next_at = %s, body = %s, "
    "version = version + 1, lease_owner = NULL, lease_until = NULL "
    "WHERE id = %s AND session_id = %s AND version = %s "
    "AND lease_owner = %s AND lease_until > now()"
)
RELEASE: Final = (
    "UPDATE schedlog_tasks SET lease_owner = NULL, lease_until = NULL "
    "WHERE id = ANY(%s) AND lease_owner = %s"
)
HOLD: Final = (
    "UPDATE schedlog_tasks AS t SET lease_until = now() + "
    "make_interval(secs => h.ms / 1000.0) "
    "FROM unnest(%s::text[], %s::bigint[]) AS h(id, ms) "
    "WHERE t.id = h.id AND t.lease_owner = %s AND t.status = 'active'"
)
RELEASE_ALL: Final = (
    "UPDATE schedlog_tasks SET lease_owner = NULL, lease_until = NULL WHERE lease_owner = %s"
)
SESSION_LOCK_KEY: Final = "SELECT hashtextextended(%s, %s)"
SESSION_LOCK: Final = "SELECT pg_advisory_lock(%s)"
SESSION_UNLOCK: Final = "SELECT pg_advisory_unlock(%s)"
LISTEN: Final = f"LISTEN {NOTIFY_CHANNEL}"

# --- batched claims (schedlog.host.stores.pg_batch) -----------------------------------------

#: Seed of the session advisory-lock hash (``hashtextextended``).
SESSION_SEED: Final = 0x5C4ED1
#: The keys of every advisory lock held now (a ``bigint`` key is shown as its high half in
#: ``classid`` and its low half in ``objid``, with ``objsubid`` 1).
_HELD_LOCKS: Final = (
    "ARRAY(SELECT (classid::bigint << 32) | objid::bigint FROM pg_locks "
    "WHERE locktype = 'advisory' AND objsubid = 1 AND granted)"
)
#: The sessions with due rows that no lease and no session lock holds, with how many each
#: has, the session of the earliest due row first (parameters: now, owner, excluded ids,
#: seed, limit). No row is locked.
BATCH_SESSIONS: Final = (
    f"SELECT session_id, count(*) FROM schedlog_tasks WHERE status = 'active' "
    f"AND next_at <= %s AND {_FREE} AND NOT (id = ANY(%s)) "
    f"AND NOT (hashtextextended(session_id, %s) = ANY({_HELD_LOCKS})) "
    "GROUP BY session_id ORDER BY min(next_at), min(seq) LIMIT %s"
)
#: Try each session's lock on this connection: the sessions locked (parameters: seed, ids).
BATCH_TRY_LOCKS: Final = (
    "SELECT s FROM unnest(%s::text[]) AS s WHERE pg_try_advisory_lock(hashtextextended(s, %s))"
)
BATCH_UNLOCK: Final = (
    "SELECT pg_advisory_unlock(hashtextextended(s, %s)) FROM unnest(%s::text[]) AS s"
)
BATCH_UNLOCK_ALL: Final = "SELECT pg_advisory_unlock_all()"
#: :data:`CLAIM_DUE` and :data:`LEASE` in one statement, inside the sessions locked: the rows
#: claimed and each one's previous lease owner (parameters: now, owner, excluded, sessions,
#: limit, owner, lease seconds).
BATCH_CLAIM: Final = (
    "WITH picked AS (SELECT seq, lease_owner AS previous FROM schedlog_tasks "
    f"WHERE status = 'active' AND next_at <= %s AND {_FREE} AND NOT (id = ANY(%s)) "
    "AND session_id = ANY(%s) ORDER BY next_at, seq LIMIT %s FOR UPDATE SKIP LOCKED) "
    "UPDATE schedlog_tasks AS t SET lease_owner = %s, "
    "lease_until = now() + make_interval(secs => %s) FROM picked WHERE t.seq = picked.seq "
    "RETURNING t.seq, t.id, t.session_id, t.status, t.next_at, t.version, t.body, "
    "picked.previous"
)
#: Each row's ``seq`` and version, for a batch's read before planning (every body write bumps
#: the version).
BATCH_VERSIONS: Final = "SELECT id, seq, version FROM schedlog_tasks WHERE id = ANY(%s)"
#: The ids of ``ids`` this host still leases with at least ``secs`` left (a read: no WAL).
BATCH_LEASED: Final = (
    "SELECT id FROM schedlog_tasks WHERE id = ANY(%s) AND lease_owner = %s "
    "AND lease_until > now() + make_interval(secs => %s)"
)
#: A batch's delivery commits in one statement: each row only at the version claimed and
#: while this host's lease holds (:data:`COMMIT_CLAIMED` for many rows).
BATCH_COMMIT: Final = (
    "UPDATE schedlog_tasks AS t SET status = u.status, next_at = u.next_at, body = u.body, "
    "version = t.version + 1, lease_owner = NULL, lease_until = NULL "
    "FROM unnest(%s::text[], %s::text[], %s::text[], %s::bigint[], %s::text[], %s::bigint[]) "
    "AS u(id, session_id, status, next_at, body, version) "
    "WHERE t.id = u.id AND t.session_id = u.session_id AND t.version = u.version "
    "AND t.lease_owner = %s AND t.lease_until > now()"
)
