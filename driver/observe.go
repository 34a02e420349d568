package driver

import "time"

// Outcomes of a finished attempt: the outcome column of the sluice_stats
// roll-ups and the outcome label of sluice_jobs_completed_total.
const (
	OutcomeSuccess   = "success"
	OutcomeRetry     = "retry"
	OutcomeFailed    = "failed"
	OutcomeCancelled = "cancelled"
)

// StatRow is one roll-up bucket: Count jobs of Type in Queue finished with
// Outcome during the minute (or, once compacted, the hour) starting at Bucket.
type StatRow struct {
	Queue   string
	Type    string
	Outcome string
	Bucket  time.Time
	Count   int64
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

// Checkpoint is one batch shard's cursor row, as the dashboard shows it.
type Checkpoint struct {
	Batch      string
	Shard      string
	RowsDone   int64
	ChunksDone int64
	ChunkSize  int
	Status     string
	LastError  string
	Owner      string
	CreatedAt  time.Time
	UpdatedAt  time.Time
}
