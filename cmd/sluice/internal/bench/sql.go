package bench

import (
	"context"
	"fmt"
	"sync/atomic"

	"github.com/sluicehq/sluice/driver"
)

// dialect holds the statements the bench runs beyond the driver
// interface: preloading finished rows in bulk and reading results back.
// Those that need a database's own row generators and time arithmetic
// are the driver's (its queries/bench.sql), so that the bench never
// picks SQL by database name.
type dialect struct {
	driver.Dialect
	prefix                       string
	preload, analyze, latencySQL string
}

func newDialect(d driver.Driver, prefix string) (dialect, error) {
	qd, ok := d.(interface {
		BenchQueries() (preload, analyze, latencies string)
	})
	if !ok {
		return dialect{}, fmt.Errorf("the %s driver does not expose its bench queries", d.Name())
	}
	q := dialect{Dialect: d.Dialect(), prefix: prefix}
	q.preload, q.analyze, q.latencySQL = qd.BenchQueries()
	return q, nil
}

func (q dialect) jobs() string { return q.prefix + "jobs" }

// preloadChunk is the number of rows one preload statement inserts: large
// enough that round trips do not matter, small enough that progress moves.
const preloadChunk = 100_000

// preload inserts FinishedRows finished rows in chunks, then refreshes the
// planner statistics, as a long-lived table would have them.
func (r *runner) preload(ctx context.Context) error {
	var done atomic.Int64
	stop := r.track("preload", int64(r.cfg.FinishedRows), &done)
	defer stop()
	// Their finished_at is spread over the last minutes, one millisecond
	// apart, well inside the retention, so that the purger leaves them alone.
	stmt := r.sql.preload
	for done.Load() < int64(r.cfg.FinishedRows) {
		n := min(int64(preloadChunk), int64(r.cfg.FinishedRows)-done.Load())
		if _, err := r.d.DB().ExecContext(ctx, stmt, queue, preloadType, done.Load(), n); err != nil {
			return fmt.Errorf("preload finished rows at row %d: %w", done.Load(), err)
		}
		done.Add(n)
	}
	if _, err := r.d.DB().ExecContext(ctx, r.sql.analyze); err != nil {
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
	err := d.DB().QueryRowContext(ctx, "SELECT COUNT(*) FROM "+q.jobs()+" WHERE type = "+q.Placeholder(1)+" AND status = 'success'", jobType).Scan(&n)
	return n, err
}

// latencies streams, for every finished measured job, the microseconds
// from next_run_at to finished_at on the database clock: what riverpeer
// reads as finalized_at - scheduled_at.
func (q dialect) latencies(ctx context.Context, d driver.Driver, add func(us int64)) error {
	rows, err := d.DB().QueryContext(ctx, q.latencySQL, jobType)
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
