package driver

import (
	"time"

	"github.com/sluicehq/sluice/sluicetype"
)

// AddStatsParams is the counts to add to their roll-up buckets: finished
// attempts in sluice_stats, and the queue-latency histogram slots in
// sluice_stats_latency.
type AddStatsParams struct {
	Rows    []sluicetype.StatRow
	Latency []sluicetype.LatencyRow
}

// ReadStatsParams bounds a read of the roll-ups (ReadStats, ReadLatency)
// to buckets at or after Since.
type ReadStatsParams struct {
	Since time.Time
}

// CompactStatsParams folds the minute buckets of the day before the hour
// of Before, in both roll-up tables.
type CompactStatsParams struct {
	Before time.Time
}

// PurgeNodesParams deletes heartbeat rows not seen for StaleAfter.
type PurgeNodesParams struct {
	StaleAfter time.Duration
}
