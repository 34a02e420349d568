package driver

import "time"

// DefaultKeepAttempts is how many attempts a job's history keeps when the
// caller sets no limit.
const DefaultKeepAttempts = 20

// MaxAttemptErrorLen bounds the error kept with each attempt of the
// history; last_error keeps the latest one at MaxErrorLen.
const MaxAttemptErrorLen = 1 << 10

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
	End        time.Time `json:"end,omitzero"`
	Outcome    Outcome   `json:"outcome"`
	Error      string    `json:"error,omitempty"`
	HTTPStatus int       `json:"http_status,omitempty"` // webhook handlers
	ExitCode   *int      `json:"exit_code,omitempty"`   // command handlers
}

// Duration is how long the attempt took, or 0 when its start is unknown.
func (a Attempt) Duration() time.Duration {
	if a.Start.IsZero() || a.End.IsZero() {
		return 0
	}
	return a.End.Sub(a.Start)
}

// KeepAttempts is n, or DefaultKeepAttempts when n is not positive.
func KeepAttempts(n int) int {
	if n <= 0 {
		return DefaultKeepAttempts
	}
	return n
}
