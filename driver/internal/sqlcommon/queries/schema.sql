-- The database clock, the schema version and migrations, dropping tables,
-- and type settings: the statements every dialect runs as written here.

-- name: SchemaVersion
SELECT version FROM sluice_schema WHERE id = 1

-- name: TypesList
-- Every job type's settings that plain-SQL enqueues take (see SyncTypes).
SELECT type, queue, max_attempts, dedupe FROM sluice_types
