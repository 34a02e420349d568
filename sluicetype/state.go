package sluicetype

import (
	"encoding/json"
	"time"
)

// Circuit breaker states, as stored in sluice_circuits.state.
const (
	// CircuitClosed: jobs of the type run.
	CircuitClosed = "closed"
	// CircuitOpen: no job of the type starts until Until; then one probe may.
	CircuitOpen = "open"
	// CircuitHalfOpen: one probe job runs; no other job of the type starts
	// until its outcome is recorded or Until (the probe's deadline) passes.
	CircuitHalfOpen = "half_open"
)

// Circuit is a job type's circuit breaker as stored, shared by every
// node. Types whose breaker never counted a failure have none.
type Circuit struct {
	Type string `json:"type"`
	// State is CircuitClosed, CircuitOpen or CircuitHalfOpen.
	State string `json:"state"`
	// Failures counts consecutive transient failures while closed.
	Failures int `json:"failures"`
	// Opens counts the openings since the circuit last closed; the
	// cool-down doubles with each.
	Opens int `json:"opens"`
	// Manual: opened by hand; no probe runs until a hand closes it.
	Manual bool `json:"manual"`
	// Until is the end of the cool-down when open, the probe's deadline
	// when half-open; a closed circuit may keep an old one (see Expiry).
	Until time.Time `json:"-"`
	// Probe is the lease token of the probe job while half-open.
	Probe     string    `json:"-"`
	UpdatedAt time.Time `json:"-"`
}

// Expiry is Until where it means something: for an open circuit that
// failures opened, and for a half-open one; zero otherwise.
func (c Circuit) Expiry() time.Time {
	if c.State == CircuitClosed || c.Manual {
		return time.Time{}
	}
	return c.Until
}

// circuitFields is Circuit without its methods (see jobFields).
type circuitFields Circuit

// MarshalJSON writes Expiry as until, left out when zero.
func (c Circuit) MarshalJSON() ([]byte, error) {
	return json.Marshal(struct {
		circuitFields
		Until time.Time `json:"until,omitzero"`
	}{circuitFields(c), c.Expiry()})
}

// RateBucket is a cluster-wide rate limit's token bucket as last written:
// "queue:NAME" (a queue's cluster rate), "type:NAME" (a type's) or
// "partition:QUEUE#PARTITION" (a queue's cluster rate per partition). Its
// tokens have refilled since UpdatedAt.
type RateBucket struct {
	Name      string    `json:"name"`
	Tokens    float64   `json:"tokens"`
	UpdatedAt time.Time `json:"updated_at"`
}

// ScheduleState is a schedule's progress.
type ScheduleState struct {
	Found     bool
	Name      string
	LastSlot  time.Time // the last slot handled (fired or skipped)
	LastJobID int64     // the job of the last fired slot, 0 if none
	Version   int64
	Fires     int64
	Skips     int64
	UpdatedAt time.Time
}

// LeaseState is the state of a named lease after an acquire attempt.
type LeaseState struct {
	Name   string // set by ListLeases
	Held   bool   // true if Holder holds it now
	Holder string // the current holder
	Fence  int64  // grows with every change of holder
	Since  time.Time
	Until  time.Time
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
