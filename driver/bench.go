package driver

import (
	"context"

	"github.com/sluicehq/sluice/sluicetype"
)

// Bench is what `sluice bench` does to its own tables beyond the queue:
// seeding finished jobs in bulk, refreshing the planner's statistics,
// enqueueing as a plain-SQL application does, and reading its results
// back. Each database does these with its own row generators and time
// arithmetic, so the bench writes no SQL of its own.
type Bench interface {
	// SeedFinished inserts p.N jobs of p.Queue and p.Type in status
	// success, generated in the database, finished p.AgoMS milliseconds
	// ago and earlier, one millisecond apart.
	SeedFinished(ctx context.Context, p SeedFinishedParams) error
	// Analyze refreshes the planner's statistics of the jobs table, as a
	// long-lived table would have them.
	Analyze(ctx context.Context) error
	// InsertPlain inserts one job the way a plain-SQL enqueue does: its
	// type and payload only, every other column left to the table's
	// defaults and its insert trigger.
	InsertPlain(ctx context.Context, p InsertPlainParams) error
	// CountJobs counts the jobs of p.Type in p.Status.
	CountJobs(ctx context.Context, p CountJobsParams) (int64, error)
	// FinishedLatencies calls p.Each with, for every finished job of
	// p.Type, the microseconds from its next_run_at to its finished_at on
	// the database clock.
	FinishedLatencies(ctx context.Context, p FinishedLatenciesParams) error
}

// SeedFinishedParams describes the finished jobs SeedFinished generates.
type SeedFinishedParams struct {
	Queue, Type string
	// AgoMS is how many milliseconds ago the newest of them finished.
	AgoMS int64
	N     int64
}

// InsertPlainParams is the one job InsertPlain inserts.
type InsertPlainParams struct {
	Type    string
	Payload string
}

// CountJobsParams selects the jobs CountJobs counts.
type CountJobsParams struct {
	Type   string
	Status sluicetype.Status
}

// FinishedLatenciesParams names the job type whose latencies are read and
// what receives each one.
type FinishedLatenciesParams struct {
	Type string
	Each func(us int64)
}
