-- The database clock, the schema version and migrations, dropping tables,
-- and type settings.
-- Also run here, written once for every dialect in
-- driver/internal/sqlcommon/queries/schema.sql: SchemaVersion, TypesList.

-- name: Now
SELECT strftime('%Y-%m-%d %H:%M:%f', 'now')

-- name: SchemaSet
INSERT INTO sluice_schema (id, version) VALUES (1, ?) ON CONFLICT (id) DO UPDATE SET version = excluded.version

-- name: DropList
-- Every table, as a DROP statement and the name it drops (see DropTables).
SELECT 'DROP TABLE IF EXISTS "' || replace(name, '"', '""') || '"', name FROM sqlite_master WHERE type = 'table'

-- name: TypesPut
INSERT INTO sluice_types (type, queue, max_attempts, dedupe, updated_at) VALUES (?, ?, ?, ?, strftime('%Y-%m-%d %H:%M:%f', 'now'))
ON CONFLICT (type) DO UPDATE SET queue = excluded.queue, max_attempts = excluded.max_attempts,
  dedupe = excluded.dedupe, updated_at = excluded.updated_at
