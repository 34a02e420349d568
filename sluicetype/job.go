package sluicetype

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// JobRow is a job as stored, and as the Client, the CLI's and the HTTP
// API's JSON show it.
type JobRow struct {
	ID     int64  `json:"id"`
	Queue  string `json:"queue"`
	Type   string `json:"type"`
	Key    string `json:"key,omitempty"`
	Dedupe string `json:"dedupe"`
	// Payload is the job's JSON document as stored. Its JSON form is the
	// document itself, or, for a row written by hand that holds no valid
	// JSON, the text as a JSON string.
	Payload     []byte     `json:"payload"`
	Status      Status     `json:"status"`
	Priority    int        `json:"priority"`
	Attempts    int        `json:"attempts"`
	MaxAttempts int        `json:"max_attempts"`
	NextRunAt   time.Time  `json:"next_run_at"`
	LockedBy    string     `json:"locked_by,omitempty"`
	LockedUntil *time.Time `json:"locked_until,omitempty"`
	LastError   string     `json:"last_error,omitempty"`
	Result      string     `json:"result,omitempty"`
	CreatedAt   time.Time  `json:"created_at"`
	UpdatedAt   time.Time  `json:"updated_at"`
	FinishedAt  *time.Time `json:"finished_at,omitempty"`
	// Partition is the job's fairness key; "" for none.
	Partition string `json:"partition,omitempty"`
	// Deadline, if set, is when the job must have started by: a claim
	// never starts it later, and maintenance cancels it once it passes.
	Deadline *time.Time `json:"deadline,omitempty"`
	// ProgressTimeout, if positive, is the job's own progress timeout: a
	// running attempt that reports no progress for this long is stuck
	// (its type's OnStuck policy). Zero defers to its type's, which the
	// worker's config holds. Its JSON form is a Go duration ("5m0s").
	ProgressTimeout time.Duration `json:"-"`
	// Progress is what the job's current or last attempt last reported
	// while it ran, or nil: a claim clears it.
	Progress *Progress `json:"progress,omitempty"`
	// TraceParent is the W3C trace context recorded at enqueue, or "".
	// The JSON form shows its trace id (TraceID) instead.
	TraceParent string `json:"-"`
	// History is the job's last attempts, oldest first; only GetJob (and
	// Client.Job) reads it, and it is empty for a job that never failed.
	History []Attempt `json:"history,omitempty"`
}

// jobFields is JobRow without its methods, so that its JSON methods can
// marshal the plain fields without calling themselves.
type jobFields JobRow

// MarshalJSON writes the payload as the JSON document it holds and adds
// the trace id, which is what readers of a job's JSON use.
func (j JobRow) MarshalJSON() ([]byte, error) {
	payload := json.RawMessage(j.Payload)
	if !json.Valid(payload) {
		// A row written by hand may hold anything; keep the JSON valid.
		payload, _ = json.Marshal(string(j.Payload))
	}
	var timeout string
	if j.ProgressTimeout > 0 {
		timeout = j.ProgressTimeout.String()
	}
	return json.Marshal(struct {
		jobFields
		Payload         json.RawMessage `json:"payload"`
		TraceID         string          `json:"trace_id,omitempty"`
		ProgressTimeout string          `json:"progress_timeout,omitempty"`
	}{jobFields(j), payload, j.TraceID(), timeout})
}

// UnmarshalJSON reads what MarshalJSON wrote, the payload as its JSON
// document. The trace id is not read back: TraceParent is not in the JSON.
func (j *JobRow) UnmarshalJSON(b []byte) error {
	v := struct {
		*jobFields
		Payload         json.RawMessage `json:"payload"`
		ProgressTimeout string          `json:"progress_timeout"`
	}{jobFields: (*jobFields)(j)}
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	j.Payload = v.Payload
	if v.ProgressTimeout != "" {
		d, err := time.ParseDuration(v.ProgressTimeout)
		if err != nil {
			return fmt.Errorf("progress_timeout: %w", err)
		}
		j.ProgressTimeout = d
	}
	return nil
}

// TraceID is the id of the trace the job was enqueued in, "" for none.
func (j *JobRow) TraceID() string {
	if j.TraceParent == "" {
		return ""
	}
	ctx := propagation.TraceContext{}.Extract(context.Background(), propagation.MapCarrier{"traceparent": j.TraceParent})
	if sc := trace.SpanContextFromContext(ctx); sc.IsValid() {
		return sc.TraceID().String()
	}
	return ""
}

// QueueLatency is how long a job that a claim returned waited between
// becoming runnable (next_run_at) and its claim, when it left the queue.
// Every claim writes updated_at from the database clock, so both ends are
// database time whatever the worker's clock says. A job a worker claimed
// ahead (prefetched) may then wait for a free handler slot: that is the
// worker's saturation, not the queue's, and is not counted here.
func (j *JobRow) QueueLatency() time.Duration { return max(j.UpdatedAt.Sub(j.NextRunAt), 0) }

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

// Outcomes that only the attempt history shows, beside OutcomeSuccess,
// OutcomeRetry and OutcomeFailed.
const (
	// AttemptReleased: the attempt was given back without being charged
	// (a snooze, or a shutdown that interrupted it).
	AttemptReleased Outcome = "released"
	// AttemptLeaseExpired: the worker stopped heartbeating and the job
	// was rescued.
	AttemptLeaseExpired Outcome = "lease_expired"
)

// Attempt is one attempt of a job as its history keeps it. Start is the
// claim and End the completion, both read from the database clock; Start
// is zero for an attempt whose worker vanished (the rescue that ended it
// knows only when its lease ran out).
type Attempt struct {
	Number     int       `json:"attempt"`
	Node       string    `json:"node,omitempty"` // host:pid of the process that ran it
	Start      time.Time `json:"start,omitzero"`
	End        time.Time `json:"end"`
	Outcome    Outcome   `json:"outcome"`
	Error      string    `json:"error,omitempty"`
	HTTPStatus int       `json:"http_status,omitempty"` // webhook handlers
	ExitCode   *int      `json:"exit_code,omitempty"`   // command handlers
	// Progress is what the attempt last reported while it ran, or nil.
	Progress *Progress `json:"progress,omitempty"`
}

// Progress is what a running attempt reports: Done of Total (Total 0 when
// unknown) and a short Message, cut to MaxProgressMessageLen bytes.
type Progress struct {
	Done    int64  `json:"done"`
	Total   int64  `json:"total"`
	Message string `json:"message,omitempty"`
	// At is when the database recorded it; zero in a history entry, whose
	// end says when the attempt stopped reporting.
	At time.Time `json:"at,omitzero"`
}

// ProgressToken is what a webhook receiver posts its progress with
// (X-Sluice-Progress-Token): hex SHA-256 of the attempt's lease token, a
// colon and the job's id. It names one attempt of one job: a claim's
// token is shared by the jobs of its batch, so it is never sent raw, and
// a new attempt has a new token, so a stale attempt's is refused.
func ProgressToken(leaseToken string, jobID int64) string {
	sum := sha256.Sum256([]byte(leaseToken + ":" + strconv.FormatInt(jobID, 10)))
	return hex.EncodeToString(sum[:])
}

// MaxProgressMessageLen bounds a progress message in bytes, so that a
// chatty handler's status line stays a status line.
const MaxProgressMessageLen = 200

// Duration is how long the attempt took, or 0 when its start is unknown.
func (a Attempt) Duration() time.Duration {
	if a.Start.IsZero() || a.End.IsZero() {
		return 0
	}
	return a.End.Sub(a.Start)
}

// attemptFields is Attempt without its methods (see jobFields).
type attemptFields Attempt

// MarshalJSON adds duration_ms, the Duration in milliseconds, for an
// attempt whose start is known.
func (a Attempt) MarshalJSON() ([]byte, error) {
	var ms *float64
	if !a.Start.IsZero() {
		v := float64(a.Duration()) / float64(time.Millisecond)
		ms = &v
	}
	return json.Marshal(struct {
		attemptFields
		DurationMS *float64 `json:"duration_ms,omitempty"`
	}{attemptFields(a), ms})
}

// ListParams filters a keyset-paginated listing of jobs, newest first.
type ListParams struct {
	Status    Status
	Type      string
	Queue     string
	KeyPrefix string
	// PayloadField and PayloadValue keep the jobs whose payload holds
	// PayloadValue, compared as text, at PayloadField, a dotted path of
	// names (customer.id; see ValidPayloadField). No database indexes
	// payloads, so this filter reads only the newest PayloadScan jobs that
	// match the other filters: a bounded scan, never the whole table.
	PayloadField string
	PayloadValue string
	AfterID      int64 // 0: from the newest; otherwise ids below this one
	Limit        int
	// Tx, if set, is the caller's transaction that the listing reads in,
	// so that it lists the jobs the transaction enqueued and has not
	// committed (package sluicetest asserts on them). A bulk action's
	// filter must leave it nil: Client.Bulk refuses one, and drivers ignore it.
	Tx *sql.Tx
}

// PayloadScan bounds the rows a payload filter reads (see ListParams).
const PayloadScan = 1000

// ValidPayloadField reports whether f is a dotted path of names made of
// letters, digits and underscores, the only payload paths ListParams
// accepts: each database builds its JSON path from it.
func ValidPayloadField(f string) bool {
	if f == "" {
		return false
	}
	for _, part := range strings.Split(f, ".") {
		if part == "" {
			return false
		}
		for _, r := range part {
			if !(r == '_' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z') {
				return false
			}
		}
	}
	return true
}

// Bulk actions on a filtered set of jobs (Client.Bulk).
const (
	BulkRetry  = "retry"  // failed or cancelled jobs back to pending
	BulkCancel = "cancel" // pending or failed jobs to cancelled
	BulkDelete = "delete" // any job not processing, deleted
)

// BulkStatuses lists, per bulk action, the statuses it applies to; a job
// in another status is left alone.
var BulkStatuses = map[string][]Status{
	BulkRetry:  {StatusFailed, StatusCancelled},
	BulkCancel: {StatusPending, StatusFailed},
	BulkDelete: {StatusPending, StatusSuccess, StatusFailed, StatusCancelled},
}

// MaxBulk bounds the jobs one bulk action changes, and its count.
const MaxBulk = 1000

// BulkScan bounds the rows a bulk selection reads per status when it
// filters on more than the status: no index serves such a filter, so it
// looks at the newest BulkScan jobs of each status the action applies to.
const BulkScan = 10000

// BulkCount is how many jobs a bulk action would change now: Count, at
// most MaxBulk (Capped when more match), and the newest one's id, which the
// action's UpTo takes so that jobs arriving after the count are left alone.
type BulkCount struct {
	Count  int64
	Capped bool
	UpTo   int64
}

// Attempt logs: what one attempt wrote (a command's stdout and stderr,
// interleaved as written), kept as its first MaxLogHead and last
// MaxLogTail bytes with a marker line between that says how many were
// left out (docs/http-api.md "Handler protocol").
const (
	MaxLogHead = 32 << 10
	MaxLogTail = 32 << 10
	// MaxLogLen bounds what a driver stores: the head, the tail and room
	// for the marker line.
	MaxLogLen = MaxLogHead + MaxLogTail + 1<<10
)

// AttemptLog is the output kept of one attempt of a job.
type AttemptLog struct {
	JobID   int64 `json:"job_id"`
	Attempt int   `json:"attempt"`
	// Text is what was kept, at most MaxLogHead+MaxLogTail bytes and the
	// marker line, as valid UTF-8 without NUL bytes.
	Text string `json:"text"`
	// Bytes is how many bytes the attempt wrote in all; Omitted how many
	// of them Text leaves out.
	Bytes     int64     `json:"bytes"`
	Omitted   int64     `json:"omitted"`
	CreatedAt time.Time `json:"created_at,omitzero"`
}
