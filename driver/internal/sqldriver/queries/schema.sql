-- Schema and type-settings statements every dialect runs as written
-- here; the rest are in each dialect's queries/schema.sql.

-- name: SchemaVersion
SELECT version FROM sluice_schema WHERE id = 1

-- name: TypesList
-- Every job type's settings that plain-SQL enqueues take (see SyncTypes).
SELECT type, queue, max_attempts, dedupe FROM sluice_types
