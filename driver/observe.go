package driver

import "time"

// Outcome is how a finished attempt ended: the outcome column of the
// sluice_stats roll-ups and the outcome label of sluice_jobs_completed_total.
type Outcome string

// The outcomes of an attempt.
const (
	OutcomeSuccess   Outcome = "success"
	OutcomeRetry     Outcome = "retry"
	OutcomeFailed    Outcome = "failed"
	OutcomeCancelled Outcome = "cancelled"
)

// StatRow is one roll-up bucket: Count jobs of Type in Queue finished with
// Outcome during the minute (or, once compacted, the hour) starting at Bucket.
type StatRow struct {
	Queue   string
	Type    string
	Outcome Outcome
	Bucket  time.Time
	Count   int64
}

// AddStatsParams is the counts to add to their roll-up buckets: finished
// attempts in sluice_stats, and the queue-latency histogram slots in
// sluice_stats_latency.
type AddStatsParams struct {
	Rows    []StatRow
	Latency []LatencyRow
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

// Node is one process's heartbeat row in sluice_nodes.
type Node struct {
	ID          string // host:pid
	Version     string
	StartedAt   time.Time
	LastSeen    time.Time // written from the database clock
	Concurrency int
	Running     int
}

// CheckpointRunning is the status of a batch shard that has not finished:
// package batch names it StatusRunning, and the metrics refresh reads it to
// find stalled shards.
const CheckpointRunning = "running"

// Checkpoint is one batch shard's cursor row in sluice_checkpoints (see
// package batch). Version grows with every change of the row, so that each
// runner's write can be fenced on the version it last saw.
type Checkpoint struct {
	Batch      string    `json:"batch"`
	Shard      string    `json:"shard"`
	Cursor     string    `json:"cursor"` // JSON array of the last key done; "" before the first chunk
	RowsDone   int64     `json:"rows_done"`
	ChunksDone int64     `json:"chunks_done"`
	ChunkSize  int       `json:"chunk_size"`
	Status     string    `json:"status"`
	LastError  string    `json:"last_error,omitempty"`
	Owner      string    `json:"owner,omitempty"`
	Version    int64     `json:"version"`
	CreatedAt  time.Time `json:"created_at"`
	UpdatedAt  time.Time `json:"updated_at"`
}
