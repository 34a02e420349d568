package sqlcommon

import (
	"context"

	"github.com/sluicehq/sluice/driver"
)

// The driver.Bench methods run the bench_* query files, which each
// database writes with its own row generators and time arithmetic.

// SeedFinished inserts p.N finished jobs in one statement.
func (b *Base) SeedFinished(ctx context.Context, p driver.SeedFinishedParams) error {
	_, err := b.Write.ExecContext(ctx, b.Q["bench_preload"], p.Queue, p.Type, p.AgoMS, p.N)
	return err
}

// Analyze refreshes the jobs table's planner statistics.
func (b *Base) Analyze(ctx context.Context) error {
	_, err := b.Write.ExecContext(ctx, b.Q["bench_analyze"])
	return err
}

// InsertPlain inserts one job as a plain-SQL enqueue does.
func (b *Base) InsertPlain(ctx context.Context, p driver.InsertPlainParams) error {
	_, err := b.Write.ExecContext(ctx, b.Q["bench_insert"], p.Type, p.Payload)
	return err
}

// CountJobs counts the jobs of a type in a status.
func (b *Base) CountJobs(ctx context.Context, p driver.CountJobsParams) (int64, error) {
	var n int64
	err := b.Read.QueryRowContext(ctx, b.Q["bench_count"], p.Type, string(p.Status)).Scan(&n)
	return n, err
}

// FinishedLatencies streams the finished jobs' latencies to p.Each.
func (b *Base) FinishedLatencies(ctx context.Context, p driver.FinishedLatenciesParams) error {
	rows, err := b.Read.QueryContext(ctx, b.Q["bench_latencies"], p.Type)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var us int64
		if err := rows.Scan(&us); err != nil {
			return err
		}
		p.Each(us)
	}
	return rows.Err()
}
