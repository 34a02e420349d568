package driver

import (
	"context"

	"github.com/sluicehq/sluice/sluicetype"
)

// AttemptLogs reads the per-attempt output logs (sluice_attempt_logs).
// They are written by Complete and CompleteTx, from Completion.Log, in
// the transaction of the outcome and only when the outcome is applied: an
// attempt that lost its lease writes none. A row is keyed by job and attempt number, so a refunded attempt
// (a snooze, a shutdown) whose number runs again keeps the later run's
// log. The rows go with their job, whatever deletes it (a foreign key
// with ON DELETE CASCADE).
type AttemptLogs interface {
	// ReadAttemptLogs returns the logs of job p.JobID in attempt order,
	// only that of attempt p.Attempt when it is positive; none is an
	// empty slice, not an error.
	ReadAttemptLogs(ctx context.Context, p ReadAttemptLogsParams) ([]sluicetype.AttemptLog, error)
}

// ReadAttemptLogsParams selects the logs of one job, or of one attempt.
type ReadAttemptLogsParams struct {
	JobID   int64
	Attempt int // 0: every attempt
}
