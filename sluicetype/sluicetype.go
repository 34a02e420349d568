// Package sluicetype is sluice's public model: the job as stored and read
// back (JobRow, its Status and its attempt History), the live and rolled-up
// statistics, and the cluster-wide state that operators look at (circuits,
// rate buckets, schedules, leases, checkpoints, nodes). River's rivertype
// is the pattern: a leaf package that the root API, the driver interface
// (package driver) and the drivers all share, so that none of them copies
// another's types.
//
// It holds data and the rules that belong to the data (which statuses are
// final, what a payload filter may name, how a latency histogram is read)
// and nothing that touches a database.
package sluicetype

import (
	"errors"
	"time"
)

// Status is a job's state: the status column of sluice_jobs. Jobs move
// between the states as docs/design.md "Job lifecycle" describes.
type Status string

// Job states, the only values the status column holds.
const (
	StatusPending    Status = "pending"
	StatusProcessing Status = "processing"
	StatusSuccess    Status = "success"
	StatusFailed     Status = "failed"
	StatusCancelled  Status = "cancelled"
)

// Valid reports whether s is one of the job states.
func (s Status) Valid() bool {
	switch s {
	case StatusPending, StatusProcessing, StatusSuccess, StatusFailed, StatusCancelled:
		return true
	}
	return false
}

// IsFinal reports whether a status is one a job does not leave by itself.
func IsFinal(status Status) bool {
	return status == StatusSuccess || status == StatusFailed || status == StatusCancelled
}

// Dedupe modes for a business key.
const (
	// DedupePermanent makes a key block new jobs until its row is purged.
	DedupePermanent = "permanent"
	// DedupeActive makes a key block new jobs only while its job is pending or processing.
	DedupeActive = "active"
)

// Column limits shared by every driver, so that bad input fails the same way everywhere.
const (
	MaxQueueLen = 64
	MaxTypeLen  = 64
	MaxKeyLen   = 191
	// MaxPartitionLen bounds a job's partition (fairness key).
	MaxPartitionLen = 64
	MaxErrorLen     = 4 << 10
	MaxResultLen    = 64 << 10
)

// MaxKillGrace is the longest time a command may be given between SIGTERM
// and SIGKILL, and its default: a shutdown waits 15 s for stopped
// handlers before it hands their jobs back, so a longer grace would let a
// command outlive the shutdown that requeued its job.
const MaxKillGrace = 10 * time.Second

// Sentinel errors that drivers map their own errors to, and that the
// root API returns; match them with errors.Is.
var (
	ErrNotFound   = errors.New("job not found")
	ErrWrongState = errors.New("job is not in a state that allows this")
	// ErrKeyTaken: a retried job's business key is held by another
	// active job, so it cannot become pending again.
	ErrKeyTaken      = errors.New("its business key is held by another active job")
	ErrSchemaTooNew  = errors.New("database schema is newer than this binary")
	ErrSchemaMissing = errors.New("database schema is missing or too old; run `sluice migrate`")
	// ErrCheckpointLost: the batch checkpoint is gone (reset) or no longer
	// at the version the caller last wrote (another runner took it over),
	// so the caller no longer owns its shard.
	ErrCheckpointLost = errors.New("checkpoint deleted or moved on")
)
