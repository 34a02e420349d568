-- `sluice import` (driver.Importer: Driver.ImportSourceColumns, ScanImport
-- and Import): jobs copied from another job table of the same database, each
-- row recorded in sluice_imports so that running the import again copies
-- only what it has not.

-- name: ImportColumns
-- The source table's columns and their types (Driver.ImportSourceColumns).
SELECT LOWER(COLUMN_NAME), LOWER(DATA_TYPE) FROM information_schema.COLUMNS
WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = ?

-- name: ImportMaxValue
-- The largest value the server takes in one statement's parameter.
SELECT @@max_allowed_packet

-- name: ImportLedgerCreate
CREATE TABLE IF NOT EXISTS sluice_imports (
  source VARCHAR(64) NOT NULL, source_id BIGINT NOT NULL, job_id BIGINT NOT NULL,
  imported_at DATETIME(6) NOT NULL DEFAULT (UTC_TIMESTAMP(6)), PRIMARY KEY (source, source_id)
) CHARACTER SET utf8mb4

-- name: ImportLedgerHas
SELECT COUNT(*) FROM sluice_imports WHERE source = ? AND source_id = ? FOR UPDATE

-- name: ImportKeyHolder
SELECT id FROM sluice_jobs WHERE key_active = CAST(? AS BINARY) FOR UPDATE

-- name: ImportInsert
-- max_attempts 0, queue '' and dedupe '' are left to the insert trigger,
-- which gives the type's settings (sluice_types) as for any plain INSERT.
INSERT INTO sluice_jobs (type, business_key, payload, status, attempts, next_run_at, last_error,
  created_at, updated_at, finished_at, max_attempts, queue, dedupe)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)

-- name: ImportLedgerAdd
INSERT INTO sluice_imports (source, source_id, job_id) VALUES (?, ?, ?)
