-- The database clock, the schema version and migrations, dropping tables,
-- and type settings.
-- Also run here, written once for every dialect in
-- driver/internal/sqldriver/queries/schema.sql: SchemaVersion, TypesList.

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

-- name: TypesServe
-- Stamps one type as served now (ServeTypes).
UPDATE sluice_types SET served_at = strftime('%Y-%m-%d %H:%M:%f', 'now') WHERE type = ?

-- name: TypesUnserved
-- Pending jobs, by type, of the types no process has served (ServeTypes)
-- since now + the (negative) duration given.
SELECT j.type, COUNT(*) FROM sluice_jobs j WHERE j.status = 'pending' AND NOT EXISTS (
  SELECT 1 FROM sluice_types t WHERE t.type = j.type AND t.served_at >= strftime('%Y-%m-%d %H:%M:%f', 'now', ?))
GROUP BY j.type ORDER BY j.type
