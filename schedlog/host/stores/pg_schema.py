"""The PostgreSQL store's schema: numbered forward migrations and the version they leave.

``schedlog store migrate --store postgresql://…`` applies the missing migrations, each in its
own transaction under a transaction-level advisory lock, so two concurrent ``migrate`` commands
apply each step once. A host never migrates: it refuses a database whose schema version is not
:data:`SCHEMA_VERSION` with ``version-mismatch`` (see docs/decisions.md, "PostgreSQL store").

The task body is kept as the exact JSON text the writer produced (``text``, not ``jsonb``, which
would normalize it) and is strict-decoded on every read. The other columns are what the engine
queries; they are derived from the body by the writer, checked by CHECK constraints as far as SQL
can, and compared with the decoded body on read.
"""

from __future__ import annotations

from typing import Final, NamedTuple

from schedlog.rules.instants import MAX_MS, MIN_MS

__all__ = [
    "MIGRATIONS",
    "MIGRATION_LOCK",
    "NOTIFY_CHANNEL",
    "NOTIFY_CHUNK_BYTES",
    "SCHEMA_VERSION",
    "Migration",
]

#: ``pg_advisory_xact_lock`` key serializing ``migrate`` runs ("schedlog" + 1).
MIGRATION_LOCK: Final = 0x5C4ED1_0001
#: The channel every committed task write notifies.
NOTIFY_CHANNEL: Final = "schedlog_changed"
#: Bytes of changes one notification of a rewriting statement carries at most (PostgreSQL's
#: payload limit is 8,000 bytes; a single change longer than this still goes alone, as before).
NOTIFY_CHUNK_BYTES: Final = 7_000


class Migration(NamedTuple):
    version: int
    name: str
    sql: str


MIGRATIONS: tuple[Migration, ...] = (
    Migration(
        1,
        "tasks",
        f"""
CREATE TABLE schedlog_tasks (
  seq bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  id text NOT NULL UNIQUE CHECK (id <> ''),
  session_id text NOT NULL CHECK (session_id <> ''),
  status text NOT NULL CHECK (status IN ('active', 'inactive')),
  next_at bigint NOT NULL CHECK (next_at BETWEEN {MIN_MS} AND {MAX_MS}),
  version bigint NOT NULL DEFAULT 1 CHECK (version >= 1),
  body text NOT NULL CHECK (left(body, 1) = '{{' AND right(body, 1) = '}}')
);
CREATE INDEX schedlog_tasks_due ON schedlog_tasks (next_at, seq) WHERE status = 'active';
CREATE INDEX schedlog_tasks_session ON schedlog_tasks (session_id, seq);
""",
    ),
    Migration(
        2,
        "leases and change notifications",
        f"""
ALTER TABLE schedlog_tasks
  ADD COLUMN lease_owner text CHECK (lease_owner <> ''),
  ADD COLUMN lease_until timestamptz,
  ADD CONSTRAINT schedlog_tasks_lease_pair CHECK ((lease_owner IS NULL) = (lease_until IS NULL));
CREATE INDEX schedlog_tasks_leased ON schedlog_tasks (lease_until) WHERE lease_owner IS NOT NULL;
CREATE FUNCTION schedlog_notify_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_notify('{NOTIFY_CHANNEL}', '');
  RETURN NULL;
END $$;
CREATE TRIGGER schedlog_tasks_changed AFTER INSERT OR UPDATE OR DELETE ON schedlog_tasks
  FOR EACH STATEMENT EXECUTE FUNCTION schedlog_notify_changed();
""",
    ),
)

# Version 3: one notification per changed task, naming it and the writer, so that a host can
# tell other hosts' commits from its own and report them as change events. Claims and lease
# extensions leave ``version`` alone and notify nobody.
MIGRATIONS += (
    Migration(
        3,
        "per-task change notifications",
        f"""
DROP TRIGGER schedlog_tasks_changed ON schedlog_tasks;
CREATE OR REPLACE FUNCTION schedlog_notify_changed() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  kind text;
  row schedlog_tasks;
BEGIN
  IF TG_OP = 'DELETE' THEN
    row := OLD;
    kind := 'deleted';
  ELSIF TG_OP = 'INSERT' THEN
    row := NEW;
    kind := 'created';
  ELSE
    row := NEW;
    BEGIN
      kind := CASE WHEN (NEW.body::jsonb -> 'lastDelivery') IS DISTINCT FROM
                        (OLD.body::jsonb -> 'lastDelivery') THEN 'delivered' ELSE 'updated' END;
    EXCEPTION WHEN others THEN  -- a body that is not JSON (an invalid row written by hand)
      kind := 'updated';
    END;
  END IF;
  PERFORM pg_notify('{NOTIFY_CHANNEL}', json_build_object(
    'writer', current_setting('application_name'), 'id', row.id,
    'sessionId', row.session_id, 'kind', kind)::text);
  RETURN NULL;
END $$;
CREATE TRIGGER schedlog_tasks_written AFTER INSERT OR DELETE ON schedlog_tasks
  FOR EACH ROW EXECUTE FUNCTION schedlog_notify_changed();
CREATE TRIGGER schedlog_tasks_rewritten AFTER UPDATE ON schedlog_tasks
  FOR EACH ROW WHEN (OLD.version IS DISTINCT FROM NEW.version)
  EXECUTE FUNCTION schedlog_notify_changed();
""",
    ),
)

# Version 4 (docs/decisions.md#pause-and-resume): a paused task's ``status`` column is
# ``paused`` (its body stays ``"status":"active"`` with ``pausedAt``), so every query of active
# tasks, the due index and the claims leave it out as they stand; a pause or a resume by another
# host is notified as such.
MIGRATIONS += (
    Migration(
        4,
        "paused tasks",
        f"""
ALTER TABLE schedlog_tasks DROP CONSTRAINT schedlog_tasks_status_check,
  ADD CONSTRAINT schedlog_tasks_status_check CHECK (status IN ('active', 'inactive', 'paused'));
CREATE OR REPLACE FUNCTION schedlog_notify_changed() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  kind text;
  row schedlog_tasks;
BEGIN
  IF TG_OP = 'DELETE' THEN
    row := OLD;
    kind := 'deleted';
  ELSIF TG_OP = 'INSERT' THEN
    row := NEW;
    kind := 'created';
  ELSIF NEW.status = 'paused' AND OLD.status <> 'paused' THEN
    row := NEW;
    kind := 'paused';
  ELSIF OLD.status = 'paused' AND NEW.status <> 'paused' THEN
    row := NEW;
    kind := 'resumed';
  ELSE
    row := NEW;
    BEGIN
      kind := CASE WHEN (NEW.body::jsonb -> 'lastDelivery') IS DISTINCT FROM
                        (OLD.body::jsonb -> 'lastDelivery') THEN 'delivered' ELSE 'updated' END;
    EXCEPTION WHEN others THEN  -- a body that is not JSON (an invalid row written by hand)
      kind := 'updated';
    END;
  END IF;
  PERFORM pg_notify('{NOTIFY_CHANNEL}', json_build_object(
    'writer', current_setting('application_name'), 'id', row.id,
    'sessionId', row.session_id, 'kind', kind)::text);
  RETURN NULL;
END $$;
""",
    ),
)

# Version 5 (docs/decisions.md#one-notification-per-statement): a statement that rewrites many
# tasks (a batched delivery's commit: about a thousand rows) notifies once per chunk of about
# 7,000 bytes of changes, not once per row: ``{"writer", "changes": [{"id", "sessionId",
# "kind"}, ...]}``, the kinds computed as version 4 does, in row order. Inserts and deletes keep
# version 4's row trigger and payload.
MIGRATIONS += (
    Migration(
        5,
        "one change notification per rewriting statement",
        f"""
DROP TRIGGER schedlog_tasks_rewritten ON schedlog_tasks;
CREATE FUNCTION schedlog_notify_rewritten() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  r record;
  kind text;
  item text;
  chunk text := '';
  head text := '{{"writer":' || to_json(current_setting('application_name'))::text
               || ',"changes":[';
BEGIN
  FOR r IN SELECT n.id, n.session_id, n.status AS new_status, o.status AS old_status,
                  n.body AS new_body, o.body AS old_body
           FROM schedlog_new n JOIN schedlog_old o ON o.seq = n.seq
           WHERE o.version IS DISTINCT FROM n.version ORDER BY n.seq LOOP
    IF r.new_status = 'paused' AND r.old_status <> 'paused' THEN
      kind := 'paused';
    ELSIF r.old_status = 'paused' AND r.new_status <> 'paused' THEN
      kind := 'resumed';
    ELSE
      BEGIN
        kind := CASE WHEN (r.new_body::jsonb -> 'lastDelivery') IS DISTINCT FROM
                          (r.old_body::jsonb -> 'lastDelivery') THEN 'delivered' ELSE 'updated' END;
      EXCEPTION WHEN others THEN  -- a body that is not JSON (an invalid row written by hand)
        kind := 'updated';
      END;
    END IF;
    item := json_build_object('id', r.id, 'sessionId', r.session_id, 'kind', kind)::text;
    IF chunk <> '' AND octet_length(chunk) + octet_length(item) > {NOTIFY_CHUNK_BYTES} THEN
      PERFORM pg_notify('{NOTIFY_CHANNEL}', head || chunk || ']}}');
      chunk := '';
    END IF;
    chunk := CASE WHEN chunk = '' THEN item ELSE chunk || ',' || item END;
  END LOOP;
  IF chunk <> '' THEN
    PERFORM pg_notify('{NOTIFY_CHANNEL}', head || chunk || ']}}');
  END IF;
  RETURN NULL;
END $$;
CREATE TRIGGER schedlog_tasks_rewritten AFTER UPDATE ON schedlog_tasks
  REFERENCING OLD TABLE AS schedlog_old NEW TABLE AS schedlog_new
  FOR EACH STATEMENT EXECUTE FUNCTION schedlog_notify_rewritten();
""",
    ),
)

SCHEMA_VERSION: Final = MIGRATIONS[-1].version
