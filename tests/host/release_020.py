"""A store as schedlog 0.2.0 wrote it (the release of 2026-12-01), for the migration tests:
its SQLite schema and its PostgreSQL migrations 1-3, copied verbatim from that release
(``schedlog/host/store_sqlite.py`` and ``schedlog/host/pg_schema.py`` at commit ec37414), and a
task body as it wrote one. Nothing here imports the current schema, so a change to it cannot
change the fixture."""

from __future__ import annotations

from typing import Final

#: 0.2.0's ``schedlog/host/store_sqlite.py`` SCHEMA.
SQLITE_SCHEMA: Final = """
CREATE TABLE schedlog_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE tasks (seq INTEGER PRIMARY KEY AUTOINCREMENT, id TEXT NOT NULL UNIQUE,
  session_id TEXT NOT NULL, body TEXT NOT NULL);
INSERT INTO schedlog_meta (key, value) VALUES ('unit.name', 'schedule'), ('unit.version', '1');
PRAGMA user_version = 1;
"""

#: 0.2.0's PostgreSQL migrations ``(version, name, sql)``.
PG_MIGRATIONS: Final = (
    (
        1,
        "tasks",
        """
CREATE TABLE schedlog_tasks (
  seq bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  id text NOT NULL UNIQUE CHECK (id <> ''),
  session_id text NOT NULL CHECK (session_id <> ''),
  status text NOT NULL CHECK (status IN ('active', 'inactive')),
  next_at bigint NOT NULL CHECK (next_at BETWEEN -62135596800000 AND 253402300799999),
  version bigint NOT NULL DEFAULT 1 CHECK (version >= 1),
  body text NOT NULL CHECK (left(body, 1) = '{' AND right(body, 1) = '}')
);
CREATE INDEX schedlog_tasks_due ON schedlog_tasks (next_at, seq) WHERE status = 'active';
CREATE INDEX schedlog_tasks_session ON schedlog_tasks (session_id, seq);
""",
    ),
    (
        2,
        "leases and change notifications",
        """
ALTER TABLE schedlog_tasks
  ADD COLUMN lease_owner text CHECK (lease_owner <> ''),
  ADD COLUMN lease_until timestamptz,
  ADD CONSTRAINT schedlog_tasks_lease_pair CHECK ((lease_owner IS NULL) = (lease_until IS NULL));
CREATE INDEX schedlog_tasks_leased ON schedlog_tasks (lease_until) WHERE lease_owner IS NOT NULL;
CREATE FUNCTION schedlog_notify_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_notify('schedlog_changed', '');
  RETURN NULL;
END $$;
CREATE TRIGGER schedlog_tasks_changed AFTER INSERT OR UPDATE OR DELETE ON schedlog_tasks
  FOR EACH STATEMENT EXECUTE FUNCTION schedlog_notify_changed();
""",
    ),
    (
        3,
        "per-task change notifications",
        """
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
  PERFORM pg_notify('schedlog_changed', json_build_object(
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

#: A task body as 0.2.0 wrote it: an every-10-minutes reminder, created at 2026-05-01T06:00Z.
TASK_ID: Final = "schedule-020"
TASK_BODY: Final = (
    '{"sessionId":"s-1","record":{"id":"schedule-020","kind":"every","title":"Standup <b>",'
    '"prompt":"Post the notes","everySeconds":600,"scheduledAt":"2026-05-01T06:10:00.000Z"},'
    '"status":"active","deliveryHistory":{"records":[],"earlierRecordsUnavailable":false}}'
)
