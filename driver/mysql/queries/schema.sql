-- The database clock, the schema version and migrations, dropping tables,
-- and type settings.
-- Also run here, written once for every dialect in
-- driver/internal/sqldriver/queries/schema.sql: SchemaVersion, TypesList.

-- name: Now
SELECT UTC_TIMESTAMP(6)

-- name: SchemaSet
-- The version only grows: on a Galera cluster GET_LOCK does not keep two
-- nodes' migrations apart, and a slower one recording an older version
-- after a faster one recorded the newest would make every later migrate
-- re-run applied migrations.
INSERT INTO sluice_schema (id, version) VALUES (1, ?)
ON DUPLICATE KEY UPDATE version = GREATEST(version, VALUES(version))

-- name: MigrateLock
SELECT GET_LOCK(?, 60)

-- name: MigrateUnlock
SELECT RELEASE_LOCK(?)

-- name: DropList
-- Every table of the database, as a DROP statement and the name it drops
-- (see DropTables), the tables with a foreign key first: MySQL refuses to
-- drop a table another references (sluice_attempt_logs references
-- sluice_jobs), and on Galera a refused DDL still goes to every node,
-- whose appliers log it and carry on.
SELECT CONCAT('DROP TABLE IF EXISTS `', REPLACE(t.table_name, '`', '``'), '`'), t.table_name
FROM information_schema.tables t WHERE t.table_schema = DATABASE()
ORDER BY EXISTS (SELECT 1 FROM information_schema.referential_constraints rc
  WHERE rc.constraint_schema = t.table_schema AND rc.table_name = t.table_name) DESC

-- name: TypesPut
INSERT INTO sluice_types (type, queue, max_attempts, dedupe, updated_at) VALUES (?, ?, ?, ?, UTC_TIMESTAMP(6))
ON DUPLICATE KEY UPDATE queue = VALUES(queue), max_attempts = VALUES(max_attempts), dedupe = VALUES(dedupe),
  updated_at = VALUES(updated_at)

-- name: TypesServe
-- Stamps one type as served now (ServeTypes).
UPDATE sluice_types SET served_at = UTC_TIMESTAMP(6) WHERE type = ?

-- name: TypesUnserved
-- Pending jobs, by type, of the types no process has served (ServeTypes)
-- since now + the (negative) duration given.
SELECT j.type, COUNT(*) FROM sluice_jobs j WHERE j.status = 'pending' AND NOT EXISTS (
  SELECT 1 FROM sluice_types t WHERE t.type = j.type AND t.served_at >= UTC_TIMESTAMP(6) + INTERVAL ? MICROSECOND)
GROUP BY j.type ORDER BY j.type
