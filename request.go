package sluice

import (
	"bytes"
	"encoding/json"
	"time"

	"github.com/sluicehq/sluice/internal/dur"
)

// JobRequest is one job as JSON spells it: the body of POST /v1/jobs, an
// element of POST /v1/jobs/batch, and a line of `sluice enqueue --ndjson`.
type JobRequest struct {
	Type        string          `json:"type"`
	Key         string          `json:"key"`
	Payload     json.RawMessage `json:"payload"`
	Queue       string          `json:"queue"`
	Priority    int             `json:"priority"`
	Delay       string          `json:"delay"`  // "30s", "2h", "7d"
	RunAt       string          `json:"run_at"` // RFC 3339
	MaxAttempts int             `json:"max_attempts"`
	Dedupe      string          `json:"dedupe"`
	Partition   string          `json:"partition"`
}

// Params converts the request. Errors are *InputError values naming the
// field; the rest of the checking happens when the job is enqueued.
func (r JobRequest) Params() (EnqueueParams, error) {
	p := EnqueueParams{Type: r.Type, Key: r.Key, Queue: r.Queue, Priority: r.Priority,
		MaxAttempts: r.MaxAttempts, Dedupe: r.Dedupe, Partition: r.Partition}
	// An absent or null payload is the default {}; anything else is stored
	// as sent.
	if len(r.Payload) > 0 && !bytes.Equal(bytes.TrimSpace(r.Payload), []byte("null")) {
		p.Payload = r.Payload
	}
	if r.MaxAttempts < 0 {
		return p, inputErr("max_attempts", "must be at least 1")
	}
	if r.Delay != "" {
		d, err := dur.Parse(r.Delay)
		if err != nil {
			return p, inputErr("delay", "%v", err)
		}
		p.Delay = d
	}
	if r.RunAt != "" {
		t, err := time.Parse(time.RFC3339Nano, r.RunAt)
		if err != nil {
			return p, inputErr("run_at", "%q is not an RFC 3339 time such as 2025-01-02T15:04:05Z", r.RunAt)
		}
		p.RunAt = t
	}
	return p, nil
}
