package sqldriver

import (
	"context"
	"database/sql"

	"github.com/sluicehq/sluice/driver"
)

// The driver.Bench methods run the statements of each dialect's
// bench.sql, which each database writes with its own row generators and
// time arithmetic.

// SeedFinished inserts p.N finished jobs in one statement.
func (b *Base) SeedFinished(ctx context.Context, p driver.SeedFinishedParams) error {
	_, err := b.Write.ExecContext(ctx, b.Q.BenchPreload, p.Queue, p.Type, p.AgoMS, p.N)
	return err
}

// Analyze refreshes the jobs table's planner statistics.
func (b *Base) Analyze(ctx context.Context) error {
	_, err := b.Write.ExecContext(ctx, b.Q.BenchAnalyze)
	return err
}

// InsertPlain inserts one job as a plain-SQL enqueue does.
func (b *Base) InsertPlain(ctx context.Context, p driver.InsertPlainParams) error {
	_, err := b.Write.ExecContext(ctx, b.Q.BenchInsert, p.Type, p.Payload)
	return err
}

// CountJobs counts the jobs of a type in a status.
func (b *Base) CountJobs(ctx context.Context, p driver.CountJobsParams) (int64, error) {
	var n int64
	err := b.Read.QueryRowContext(ctx, b.Q.BenchCount, p.Type, string(p.Status)).Scan(&n)
	return n, err
}

// FinishedLatencies streams the finished jobs' latencies to p.Each, a
// row at a time: the bench reports its own peak memory.
func (b *Base) FinishedLatencies(ctx context.Context, p driver.FinishedLatenciesParams) error {
	return QueryEach(ctx, b.Read, "read finished latencies", b.Q.BenchLatencies, []any{p.Type}, func(rows *sql.Rows) error {
		var us int64
		if err := rows.Scan(&us); err != nil {
			return err
		}
		p.Each(us)
		return nil
	})
}
