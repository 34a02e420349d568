package cli_test

import (
	"context"
	"database/sql"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/internal/testdb"
)

// TestImportPollingJobs imports the seed's polling_jobs table, written by
// an app whose MySQL session runs in Asia/Shanghai: every status, with and
// without keys, a key that a sluice job already holds; refused while a type
// is missing from the config, counted by --dry-run, then imported twice.
func TestImportPollingJobs(t *testing.T) {
	d, tg := testdb.OpenURL(t, "mysql")
	db := d.DB()
	ctx := context.Background()
	src := tg.Prefix + "polling_jobs"

	// The old app's connection: local time, as its NOW() wrote it.
	conn, err := db.Conn(ctx)
	require.NoError(t, err)
	for _, q := range []string{
		"SET time_zone = '+08:00'",
		`CREATE TABLE ` + src + ` (
		  id BIGINT PRIMARY KEY AUTO_INCREMENT, business_key VARCHAR(191) NULL UNIQUE, type VARCHAR(64) NOT NULL,
		  payload JSON NULL, status VARCHAR(16) NOT NULL DEFAULT 'pending', attempts INT NOT NULL DEFAULT 0,
		  max_attempts INT NOT NULL DEFAULT 3, next_run_at DATETIME(6) NULL, locked_by VARCHAR(64) NULL,
		  locked_until DATETIME NULL, last_error TEXT NULL, created_at DATETIME(6) NOT NULL,
		  updated_at DATETIME(6) NOT NULL, finished_at DATETIME(6) NULL)`,
		`INSERT INTO ` + src + ` (id, business_key, type, payload, status, attempts, max_attempts, next_run_at, locked_by, locked_until, last_error, created_at, updated_at, finished_at) VALUES
		  (1, 'order:1', 'order_sync', '{"order_id":1}', 'pending',    0, 3, '2026-11-30 10:00:00.250000', NULL, NULL, NULL, '2026-11-30 09:00:00', '2026-11-30 09:00:00', NULL),
		  (2, 'order:2', 'order_sync', '{"order_id":2}', 'processing', 1, 3, NOW(6), 'web-1', NOW(), NULL, NOW(6), NOW(6), NULL),
		  (3, 'order:3', 'order_sync', '{"order_id":3}', 'success',    1, 3, NOW(6), NULL, NULL, NULL, NOW(6), NOW(6), '2026-11-30 12:30:00'),
		  (4, 'order:4', 'order_sync', '{"order_id":4}', 'failed',     3, 3, NOW(6), NULL, NULL, 'HTTP 500 from partner', NOW(6), '2026-11-30 13:00:00', NULL),
		  (5, NULL,      'report',     NULL,             'pending',    0, 3, NULL, NULL, NULL, NULL, NOW(6), NOW(6), NULL),
		  (6, '',        'report',     '{}',             'pending',    3, 3, NULL, NULL, NULL, 'timeout', NOW(6), NOW(6), NULL),
		  (7, 'order:9', 'order_sync', '{"order_id":9}', 'pending',    0, 3, NULL, NULL, NULL, NULL, NOW(6), NOW(6), NULL)`,
	} {
		_, err := conn.ExecContext(ctx, q)
		require.NoError(t, err, q)
	}
	require.NoError(t, conn.Close())

	dir := t.TempDir()
	writeConfig := func(types string) {
		require.NoError(t, os.WriteFile(filepath.Join(dir, "sluice.yaml"), []byte("types:\n"+types), 0o644))
	}
	env := []string{"SLUICE_DB=" + tg.URL, "SLUICE_PREFIX=" + tg.Prefix}
	importArgs := []string{"import", "--table", src, "--time-zone", "Asia/Shanghai"}
	jobs := func() int {
		var n int
		require.NoError(t, db.QueryRow("SELECT COUNT(*) FROM "+tg.Prefix+"jobs").Scan(&n))
		return n
	}

	// A job the new code enqueued already holds order:9.
	writeConfig("  order_sync: { command: [\"true\"] }\n")
	r := runIn(t, dir, env, "", "enqueue", "order_sync", "--key", "order:9", "--payload", `{"new":true}`)
	require.Equal(t, 0, r.Code, r.Stderr)

	r = runIn(t, dir, env, "", importArgs...)
	require.NotEqual(t, 0, r.Code, r.Stdout)
	require.Contains(t, r.Stderr, "types not in the config's types: report (2 rows)")
	require.Contains(t, r.Stderr, "nothing written")
	require.Equal(t, 1, jobs())

	r = runIn(t, dir, env, "", "import", "--table", src)
	require.Equal(t, 2, r.Code, r.Stderr)
	require.Contains(t, r.Stderr, "--time-zone: required, since next_run_at, created_at, updated_at, finished_at are DATETIME columns")

	writeConfig("  order_sync: { command: [\"true\"] }\n  report: { command: [\"true\"], queue: reports, dedupe: active }\n")
	r = runIn(t, dir, env, "", append(importArgs, "--dry-run")...)
	require.Equal(t, 0, r.Code, r.Stderr)
	require.Equal(t, src+": 7 rows: pending 5 (1 were processing), success 1, failed 1, cancelled 0\ndry run: nothing written\n", r.Stdout)
	require.Equal(t, 1, jobs())

	before := time.Now().UTC()
	r = runIn(t, dir, env, "", importArgs...)
	require.Equal(t, 0, r.Code, r.Stderr)
	require.Contains(t, r.Stdout, "copied 6, already imported 0, key held by another sluice job 1\n")
	require.Equal(t, 7, jobs())

	type row struct {
		key                             sql.NullString
		typ, queue, status, payload     string
		attempts, maxAttempts           int
		nextRunAt, createdAt, updatedAt time.Time
		finishedAt                      sql.NullTime
		lastError, lockedBy             sql.NullString
	}
	get := func(where string, args ...any) row {
		var x row
		require.NoError(t, db.QueryRow(`SELECT business_key, type, queue, status, CAST(payload AS CHAR), attempts, max_attempts,
			next_run_at, created_at, updated_at, finished_at, last_error, locked_by FROM `+tg.Prefix+`jobs WHERE `+where, args...).Scan(
			&x.key, &x.typ, &x.queue, &x.status, &x.payload, &x.attempts, &x.maxAttempts, &x.nextRunAt, &x.createdAt,
			&x.updatedAt, &x.finishedAt, &x.lastError, &x.lockedBy), where)
		return x
	}
	shanghai := func(s string) time.Time {
		loc, err := time.LoadLocation("Asia/Shanghai")
		require.NoError(t, err)
		v, err := time.ParseInLocation("2006-01-02 15:04:05.000000", s, loc)
		require.NoError(t, err)
		return v.UTC()
	}

	j := get("business_key = 'order:1'")
	require.Equal(t, "pending", j.status)
	require.Equal(t, "default", j.queue)
	require.JSONEq(t, `{"order_id":1}`, j.payload)
	require.Equal(t, shanghai("2026-11-30 10:00:00.250000"), j.nextRunAt.UTC(), "local time converted to UTC")
	require.Equal(t, time.Date(2026, 11, 30, 1, 0, 0, 0, time.UTC), j.createdAt.UTC())
	require.Equal(t, 3, j.maxAttempts)

	j = get("business_key = 'order:2'")
	require.Equal(t, "pending", j.status, "processing goes back to pending")
	require.Equal(t, 1, j.attempts, "its interrupted run is not charged")
	require.False(t, j.lockedBy.Valid)
	require.WithinDuration(t, before, j.nextRunAt, time.Minute, "runnable at once")
	require.WithinDuration(t, before, j.createdAt, time.Minute, "NOW() in +08:00 is now in UTC")

	j = get("business_key = 'order:3'")
	require.Equal(t, "success", j.status)
	require.Equal(t, shanghai("2026-11-30 12:30:00.000000"), j.finishedAt.Time.UTC())

	j = get("business_key = 'order:4'")
	require.Equal(t, "failed", j.status)
	require.Equal(t, 3, j.attempts)
	require.Equal(t, "HTTP 500 from partner", j.lastError.String)
	require.Equal(t, shanghai("2026-11-30 13:00:00.000000"), j.finishedAt.Time.UTC(), "no finished_at: its last update")

	rows, err := db.Query("SELECT business_key FROM " + tg.Prefix + "jobs WHERE type = 'report' ORDER BY id")
	require.NoError(t, err)
	for rows.Next() {
		var k sql.NullString
		require.NoError(t, rows.Scan(&k))
		require.False(t, k.Valid, "no key, and an empty key, stay without one")
	}
	require.NoError(t, rows.Err())
	j = get("type = 'report' AND attempts = 3")
	require.Equal(t, "reports", j.queue, "the type's queue")
	require.Equal(t, "pending", j.status)
	require.Equal(t, 4, j.maxAttempts, "pending with no attempt left gets one")
	require.Equal(t, "{}", j.payload)

	j = get("business_key = 'order:9'")
	require.JSONEq(t, `{"new":true}`, j.payload, "the sluice job holding the key stands")

	// Again: nothing is copied twice.
	r = runIn(t, dir, env, "", importArgs...)
	require.Equal(t, 0, r.Code, r.Stderr)
	require.Contains(t, r.Stdout, "copied 0, already imported 7, key held by another sluice job 0\n")
	require.Equal(t, 7, jobs())

	// A row added to the old table after the cut-over's first pass is
	// copied by the next one.
	_, err = db.Exec(`INSERT INTO ` + src + ` (id, business_key, type, status, created_at, updated_at) VALUES (8, 'order:8', 'order_sync', 'pending', UTC_TIMESTAMP(), UTC_TIMESTAMP())`)
	require.NoError(t, err)
	r = runIn(t, dir, env, "", importArgs...)
	require.Equal(t, 0, r.Code, r.Stderr)
	require.Contains(t, r.Stdout, "copied 1, already imported 7, key held by another sluice job 0\n")
	require.Equal(t, 8, jobs())
}

// TestImportBadRows refuses a table with a row that cannot be copied, naming
// the row and the column, and writes nothing.
func TestImportBadRows(t *testing.T) {
	d, tg := testdb.OpenURL(t, "mysql")
	db := d.DB()
	src := tg.Prefix + "jobs_old"
	for _, q := range []string{
		`CREATE TABLE ` + src + ` (job_id BIGINT PRIMARY KEY, kind VARCHAR(64) NOT NULL, body TEXT NULL, state VARCHAR(16) NOT NULL,
		  tries INT NOT NULL DEFAULT 0, created TIMESTAMP NOT NULL DEFAULT CURRENT_TIMESTAMP)`,
		`INSERT INTO ` + src + ` (job_id, kind, body, state) VALUES (1, 'sync', '{"a":1}', 'new'), (2, 'sync', '[1,2]', 'done'), (3, 'sync', NULL, 'weird')`,
	} {
		_, err := db.Exec(q)
		require.NoError(t, err, q)
	}
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "sluice.yaml"), []byte("types:\n  sync: { command: [\"true\"] }\n"), 0o644))
	env := []string{"SLUICE_DB=" + tg.URL, "SLUICE_PREFIX=" + tg.Prefix}
	args := []string{"import", "--table", src, "--column", "id=job_id", "--column", "type=kind", "--column", "payload=body",
		"--column", "status=state", "--column", "attempts=tries", "--column", "created_at=created",
		"--column", "business_key=", "--column", "max_attempts=", "--column", "next_run_at=", "--column", "last_error=",
		"--column", "updated_at=", "--column", "finished_at=", "--status", "new=pending", "--status", "done=success"}
	r := runIn(t, dir, env, "", args...)
	require.NotEqual(t, 0, r.Code)
	require.Contains(t, r.Stderr, "row id 2: payload: want a JSON object")
	require.Contains(t, r.Stderr, `row id 3: status "weird": not mapped; add --status weird=pending|success|failed|cancelled`)
	var n int
	require.NoError(t, db.QueryRow("SELECT COUNT(*) FROM "+tg.Prefix+"jobs").Scan(&n))
	require.Zero(t, n)

	_, err := db.Exec(`UPDATE ` + src + ` SET body = '{}', state = 'done' WHERE job_id IN (2, 3)`)
	require.NoError(t, err)
	r = runIn(t, dir, env, "", args...) // TIMESTAMP columns: no --time-zone needed
	require.Equal(t, 0, r.Code, r.Stderr)
	require.Equal(t, src+": 3 rows: pending 1, success 2, failed 0, cancelled 0\ncopied 3, already imported 0, key held by another sluice job 0\n", r.Stdout)

	r = runIn(t, dir, env, "", "import", "--table", src)
	require.Equal(t, 2, r.Code)
	require.Contains(t, r.Stderr, "has no column id (for id; map it with --column id=SOURCE")
}
