package cli_test

import (
	"context"
	"database/sql"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/internal/testkit/testdb"
)

// TestImportPollingJobs imports the seed's polling_jobs table, written by
// an app whose MySQL session runs in Asia/Shanghai: every status, with and
// without keys, a key that a sluice job already holds; refused while a type
// is missing from the config, counted by --dry-run, then imported twice.
func TestImportPollingJobs(t *testing.T) {
	t.Parallel()
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
	require.Contains(t, r.Stderr, "--time-zone: required, since next_run_at, created_at, updated_at, finished_at, locked_until are DATETIME columns")

	writeConfig("  order_sync: { command: [\"true\"] }\n  report: { command: [\"true\"], queue: reports, dedupe: active }\n")
	r = runIn(t, dir, env, "", append(importArgs, "--dry-run")...)
	require.Equal(t, 0, r.Code, r.Stderr)
	require.Equal(t, src+": 7 rows: pending 5 (1 were processing), success 1, failed 1, cancelled 0\n"+
		"sample row id 1, times as read -> as stored (UTC):\n"+
		"  next_run_at: 2026-11-30 10:00:00.25 (DATETIME, read in Asia/Shanghai) -> 2026-11-30 02:00:00.25\n"+
		"  created_at: 2026-11-30 09:00:00 (DATETIME, read in Asia/Shanghai) -> 2026-11-30 01:00:00\n"+
		"  updated_at: 2026-11-30 09:00:00 (DATETIME, read in Asia/Shanghai) -> 2026-11-30 01:00:00\n"+
		"dry run: nothing written\n", r.Stdout)
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
	t.Parallel()
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
		"--column", "updated_at=", "--column", "finished_at=", "--column", "locked_until=", "--status", "new=pending", "--status", "done=success"}
	r := runIn(t, dir, env, "", args...)
	require.NotEqual(t, 0, r.Code)
	require.Contains(t, r.Stderr, src+": row id 2: payload: must be a JSON object, got ")
	require.Contains(t, r.Stderr, src+`: row id 3: status "weird": not mapped; add --status weird=pending|success|failed|cancelled`+"\n")
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

// Issue 33 "Moving from polling_jobs", on the seed's table as an app in
// Asia/Shanghai wrote it: a TIMESTAMP column is an instant (a retry
// planned for +2 h stays +2 h away, whatever --time-zone says); a
// processing row whose lock is live stops the import unless
// --ignore-locks; payloads that every other enqueue path refuses stop it,
// one row per line, naming the row; an accepted payload is copied byte for
// byte.
func TestImportInstantsLocksAndPayloads(t *testing.T) {
	t.Parallel()
	d, tg := testdb.OpenURL(t, "mysql")
	db := d.DB()
	ctx := context.Background()
	src := tg.Prefix + "polling_jobs"
	conn, err := db.Conn(ctx)
	require.NoError(t, err)
	for _, q := range []string{
		"SET time_zone = '+08:00'",
		`CREATE TABLE ` + src + ` (
		  id BIGINT PRIMARY KEY AUTO_INCREMENT, business_key VARCHAR(191) NULL UNIQUE, type VARCHAR(64) NOT NULL,
		  payload LONGBLOB NULL, status VARCHAR(16) NOT NULL DEFAULT 'pending', attempts INT NOT NULL DEFAULT 0,
		  max_attempts INT NOT NULL DEFAULT 3, next_run_at TIMESTAMP(6) NULL, locked_by VARCHAR(64) NULL,
		  locked_until DATETIME NULL, last_error TEXT NULL, created_at DATETIME(6) NOT NULL,
		  updated_at DATETIME(6) NOT NULL, finished_at DATETIME(6) NULL)`,
		// 1: a retry planned two hours ahead; 2: held by a running old
		// worker for another hour; 3-8: payloads no enqueue accepts.
		`INSERT INTO ` + src + ` (id, type, payload, status, attempts, next_run_at, locked_by, locked_until, created_at, updated_at) VALUES
		  (1, 'sync', '{"b": 1,  "a": [2]}', 'pending', 1, NOW(6) + INTERVAL 2 HOUR, NULL, NULL, NOW(6), NOW(6)),
		  (2, 'sync', '{"id":2}', 'processing', 1, NOW(6), 'web-1', NOW() + INTERVAL 1 HOUR, NOW(6), NOW(6)),
		  (3, 'sync', CONCAT('{"a":"', REPEAT('x', 1048576), '"}'), 'pending', 0, NULL, NULL, NULL, NOW(6), NOW(6)),
		  (4, 'sync', '{"a":"\\u0000"}', 'pending', 0, NULL, NULL, NULL, NOW(6), NOW(6)),
		  (5, 'sync', '{"a":1,"a":2}', 'pending', 0, NULL, NULL, NULL, NOW(6), NOW(6)),
		  (6, 'sync', '{"a":1e400}', 'pending', 0, NULL, NULL, NULL, NOW(6), NOW(6)),
		  (7, 'sync', X'7B2261223A22FF227D', 'pending', 0, NULL, NULL, NULL, NOW(6), NOW(6))`,
	} {
		_, err := conn.ExecContext(ctx, q)
		require.NoError(t, err, q)
	}
	require.NoError(t, conn.Close())

	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "sluice.yaml"), []byte("types:\n  sync: { command: [\"true\"] }\n"), 0o644))
	env := []string{"SLUICE_DB=" + tg.URL, "SLUICE_PREFIX=" + tg.Prefix}
	args := []string{"import", "--table", src, "--time-zone", "Asia/Shanghai"}
	jobs := func() int {
		var n int
		require.NoError(t, db.QueryRow("SELECT COUNT(*) FROM "+tg.Prefix+"jobs").Scan(&n))
		return n
	}

	r := runIn(t, dir, env, "", args...)
	require.NotEqual(t, 0, r.Code, r.Stdout)
	problems := []string{
		"row id 2: status processing, locked_until ",
		"row id 3: payload: 1048584 bytes, at most 1048576 allowed",
		"row id 4: payload.a: a value contains a NUL character",
		"row id 5: payload",
		"row id 6: payload.a: the number 1e400 is out of range",
		"row id 7: payload",
	}
	lines := strings.Split(strings.TrimSpace(r.Stderr), "\n")
	require.Len(t, lines, len(problems)+1, r.Stderr)
	for i, p := range problems {
		require.True(t, strings.HasPrefix(lines[i], src+": "+p), "line %d: %s", i, lines[i])
	}
	require.Contains(t, lines[0], "the old loop may still be running it")
	require.Contains(t, lines[3], "duplicate")
	require.Contains(t, lines[5], "UTF-8")
	require.Equal(t, "sluice: import "+src+": 6 problems (listed above); nothing written", lines[len(problems)])
	require.Zero(t, jobs())

	_, err = db.Exec("DELETE FROM " + src + " WHERE id >= 3")
	require.NoError(t, err)
	r = runIn(t, dir, env, "", append(args, "--dry-run")...)
	require.NotEqual(t, 0, r.Code, r.Stdout)
	require.Contains(t, r.Stderr, "row id 2: status processing, locked_until")
	r = runIn(t, dir, env, "", append(args, "--dry-run", "--ignore-locks")...)
	require.Equal(t, 0, r.Code, r.Stderr)
	require.Contains(t, r.Stdout, "next_run_at: ")
	require.Contains(t, r.Stdout, "(TIMESTAMP, an instant) -> ")
	before := time.Now().UTC()
	r = runIn(t, dir, env, "", append(args, "--ignore-locks")...)
	require.Equal(t, 0, r.Code, r.Stderr)
	require.Contains(t, r.Stdout, "1 rows still locked by the old loop are copied as runnable (--ignore-locks)")
	require.Contains(t, r.Stdout, "copied 2, already imported 0")

	var payload []byte
	var nextRunAt time.Time
	require.NoError(t, db.QueryRow("SELECT payload, next_run_at FROM "+tg.Prefix+"jobs WHERE status = 'pending' AND attempts = 1 AND payload LIKE '%\"b\"%'").Scan(&payload, &nextRunAt))
	require.Equal(t, `{"b": 1,  "a": [2]}`, string(payload), "copied byte for byte")
	require.WithinDuration(t, before.Add(2*time.Hour), nextRunAt.UTC(), 5*time.Minute, "a TIMESTAMP is an instant: the retry stays two hours ahead")
}
