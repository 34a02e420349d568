-- The database clock, the schema version and migrations, dropping tables,
-- and type settings.
-- Also run here, written once for every dialect in
-- driver/internal/sqldriver/queries/schema.sql: SchemaVersion, TypesList.

-- name: Now
SELECT now()

-- name: SchemaExists
SELECT to_regclass('sluice_schema') IS NOT NULL

-- name: SchemaSet
INSERT INTO sluice_schema (id, version) VALUES (1, $1) ON CONFLICT (id) DO UPDATE SET version = excluded.version

-- name: DropList
-- Every table and function of the schema, as a DROP statement and the name
-- it drops (see DropTables). Functions go too: the insert trigger's
-- function outlives its table.
SELECT 'DROP TABLE IF EXISTS ' || quote_ident(tablename) || ' CASCADE', tablename
FROM pg_tables WHERE schemaname = current_schema()
UNION ALL
SELECT 'DROP FUNCTION IF EXISTS ' || quote_ident(p.proname) || ' CASCADE', p.proname
FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace WHERE n.nspname = current_schema()

-- name: TypesPut
INSERT INTO sluice_types (type, queue, max_attempts, dedupe, updated_at) VALUES ($1, $2, $3, $4, now())
ON CONFLICT (type) DO UPDATE SET queue = excluded.queue, max_attempts = excluded.max_attempts,
  dedupe = excluded.dedupe, updated_at = excluded.updated_at

-- name: TypesServe
-- Stamps one type as served now (ServeTypes).
UPDATE sluice_types SET served_at = now() WHERE type = $1

-- name: TypesUnserved
-- Pending jobs, by type, of the types no process has served (ServeTypes)
-- since now + the (negative) duration given.
SELECT j.type, COUNT(*) FROM sluice_jobs j WHERE j.status = 'pending' AND NOT EXISTS (
  SELECT 1 FROM sluice_types t WHERE t.type = j.type AND t.served_at >= now() + $1::bigint * interval '1 microsecond')
GROUP BY j.type ORDER BY j.type
