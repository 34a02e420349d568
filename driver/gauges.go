package driver

import (
	"context"
	"time"

	"github.com/sluicehq/sluice/sluicetype"
)

// Gauges is the cluster's one shared count of live jobs behind the queue
// gauges of /metrics (sluice_gauges): each refresh, the one process that
// wins ClaimGauges runs Stats and writes the counts with PutGauges, and
// every other reads them with ReadGauges, so that N processes cost one
// Stats query per interval, not N.
type Gauges interface {
	// ClaimGauges moves the snapshot's taken_at to now if it is at least
	// p.Every old, both by the database clock, and reports whether it
	// did. Of callers that race, exactly one wins; a winner that dies
	// before PutGauges is replaced by the first claim p.Every later.
	ClaimGauges(ctx context.Context, p ClaimGaugesParams) (bool, error)
	// PutGauges replaces the snapshot's counts with p.Queues (their
	// Queue, Pending, Processing, Failed and OldestPending), whole.
	PutGauges(ctx context.Context, p PutGaugesParams) error
	// ReadGauges reads the snapshot, which holds no queues before the
	// first PutGauges.
	ReadGauges(ctx context.Context) (GaugeSnapshot, error)
}

// ClaimGaugesParams is the age past which ClaimGauges takes the refresh.
type ClaimGaugesParams struct {
	Every time.Duration
}

// PutGaugesParams is the counts PutGauges writes, as Stats returns them.
type PutGaugesParams struct {
	Queues []sluicetype.QueueStats
}

// GaugeSnapshot is the shared count: the live counts per queue, and when
// the last refresh was claimed, on the database clock.
type GaugeSnapshot struct {
	Queues  []sluicetype.QueueStats
	TakenAt time.Time
}
