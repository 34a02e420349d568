package bench

import (
	"context"
	"fmt"
	"sync/atomic"

	"github.com/sluicehq/sluice/driver"
)

// dialect holds the few statements the bench needs beyond the driver
// interface: preloading finished rows in bulk and reading results back. They touch only tables under the bench prefix.
// Preloading and the latency read use each database's own generators and
// time arithmetic, so those two still choose their SQL by database name.
type dialect struct {
	driver.Dialect
	prefix string
}

func (q dialect) jobs() string { return q.prefix + "jobs" }

// preloadChunk is the number of rows one preload statement inserts: large
// enough that round trips do not matter, small enough that progress moves.
const preloadChunk = 100_000

// preloadSQL inserts $1 finished rows, generated in the database; their
// finished_at is spread over the last minutes (offset $2 milliseconds on),
// well inside the retention, so that the purger leaves them alone.
func (q dialect) preloadSQL() string {
	cols := "(queue, type, payload, status, attempts, max_attempts, next_run_at, created_at, updated_at, finished_at)"
	vals := fmt.Sprintf("'%s', '%s', '{}', 'success', 1, 5, t, t, t, t", queue, preloadType)
	switch q.Name {
	case "sqlite":
		return `WITH RECURSIVE g(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM g WHERE n < ?)
INSERT INTO ` + q.jobs() + " " + cols + `
SELECT ` + vals + ` FROM (SELECT strftime('%Y-%m-%d %H:%M:%f', 'now', '-' || ((? + n) / 1000.0) || ' seconds') AS t FROM g)`
	case "mysql":
		// MySQL has no generate_series and caps recursive CTEs at 1,000
		// levels by default, so rows come from a cross join of digits.
		digits := "(SELECT 0 AS n UNION ALL SELECT 1 UNION ALL SELECT 2 UNION ALL SELECT 3 UNION ALL SELECT 4" +
			" UNION ALL SELECT 5 UNION ALL SELECT 6 UNION ALL SELECT 7 UNION ALL SELECT 8 UNION ALL SELECT 9)"
		return `INSERT INTO ` + q.jobs() + " " + cols + `
SELECT ` + vals + ` FROM (
  SELECT UTC_TIMESTAMP(6) - INTERVAL ((? + a.n + 10 * b.n + 100 * c.n + 1000 * d.n + 10000 * e.n) * 1000) MICROSECOND AS t
  FROM ` + digits + ` a CROSS JOIN ` + digits + ` b CROSS JOIN ` + digits + ` c CROSS JOIN ` + digits + ` d CROSS JOIN ` + digits + ` e
  LIMIT ?) s`
	default:
		return `INSERT INTO ` + q.jobs() + " " + cols + `
SELECT ` + vals + ` FROM (SELECT now() - ($2::bigint + g) * interval '1 millisecond' AS t FROM generate_series(1, $1::bigint) g) s`
	}
}

// preload inserts FinishedRows finished rows in chunks, then refreshes the
// planner statistics, as a long-lived table would have them.
func (r *runner) preload(ctx context.Context) error {
	var done atomic.Int64
	stop := r.track("preload", int64(r.cfg.FinishedRows), &done)
	defer stop()
	stmt := r.sql.preloadSQL()
	for done.Load() < int64(r.cfg.FinishedRows) {
		n := min(int64(preloadChunk), int64(r.cfg.FinishedRows)-done.Load())
		var args []any
		switch r.sql.Name {
		case "mysql":
			args = []any{done.Load(), n}
		default:
			args = []any{n, done.Load()}
		}
		if _, err := r.d.DB().ExecContext(ctx, stmt, args...); err != nil {
			return fmt.Errorf("preload finished rows at row %d: %w", done.Load(), err)
		}
		done.Add(n)
	}
	analyze := "ANALYZE " + r.sql.jobs()
	if r.sql.Name == "mysql" {
		analyze = "ANALYZE TABLE " + r.sql.jobs()
	}
	if _, err := r.d.DB().ExecContext(ctx, analyze); err != nil {
		return fmt.Errorf("analyze after preload: %w", err)
	}
	return nil
}

// plainInsert is the INSERT an application that does not use sluice runs:
// type and payload ($1, $2), every other column left to its default.
func (q dialect) plainInsert() string {
	return "INSERT INTO " + q.jobs() + " (type, payload) VALUES (" + q.Placeholder(1) + ", " + q.Placeholder(2) + ")"
}

// succeeded counts the measured jobs in status success.
func (q dialect) succeeded(ctx context.Context, d driver.Driver) (int64, error) {
	var n int64
	err := d.DB().QueryRowContext(ctx, "SELECT COUNT(*) FROM "+q.jobs()+" WHERE type = '"+jobType+"' AND status = 'success'").Scan(&n)
	return n, err
}

// latencies streams, for every finished measured job, the microseconds
// from next_run_at to finished_at on the database clock: what riverpeer
// reads as finalized_at - scheduled_at.
func (q dialect) latencies(ctx context.Context, d driver.Driver, add func(us int64)) error {
	var diff string
	switch q.Name {
	case "sqlite":
		diff = "CAST((julianday(finished_at) - julianday(next_run_at)) * 86400000000 AS INTEGER)"
	case "mysql":
		diff = "TIMESTAMPDIFF(MICROSECOND, next_run_at, finished_at)"
	default:
		diff = "(EXTRACT(EPOCH FROM finished_at - next_run_at) * 1000000)::bigint"
	}
	rows, err := d.DB().QueryContext(ctx, "SELECT "+diff+" FROM "+q.jobs()+
		" WHERE type = '"+jobType+"' AND finished_at IS NOT NULL")
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var us int64
		if err := rows.Scan(&us); err != nil {
			return err
		}
		add(us)
	}
	return rows.Err()
}
