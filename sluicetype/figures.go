package sluicetype

// Figures counts the attempts that finished in a window by how they
// ended. It is the one definition of the finished-work figures that
// `sluice stats`, GET /v1/stats (whose finished_* maps it reads), the
// dashboard and docs/observability.md show, so that each word means one thing:
//
//   - Done: jobs that succeeded (each one's successful attempt).
//   - Failed: jobs that failed for good (their last attempt), the same
//     jobs the "failed" status holds, not failed attempts.
//   - Retried: attempts that failed and will run again; a job that then
//     succeeds counts once in Done and once here per retry.
//
// Cancellations ran nothing and are not counted.
type Figures struct {
	Done    int64 `json:"done"`
	Failed  int64 `json:"failed"`
	Retried int64 `json:"retried"`
}

// Add counts n attempts that ended with outcome.
func (f *Figures) Add(outcome Outcome, n int64) {
	switch outcome {
	case OutcomeSuccess:
		f.Done += n
	case OutcomeFailed:
		f.Failed += n
	case OutcomeRetry:
		f.Retried += n
	}
}

// FiguresOf reads a finished_* map of QueueStats or TypeStats.
func FiguresOf(byOutcome map[string]int64) Figures {
	var f Figures
	for o, n := range byOutcome {
		f.Add(Outcome(o), n)
	}
	return f
}

// Attempts counts the attempts that ran: done, failed and retried.
func (f Figures) Attempts() int64 { return f.Done + f.Failed + f.Retried }

// FailedAttempts counts the attempts that failed, for good or retried.
func (f Figures) FailedAttempts() int64 { return f.Failed + f.Retried }

// FailedAttemptShare is the share of attempts that failed (for good or
// retried), from 0 to 1; false when none ran. It is not a share of jobs:
// a type whose jobs all succeed after one retry has a share of 0.5.
func (f Figures) FailedAttemptShare() (float64, bool) {
	if f.Attempts() == 0 {
		return 0, false
	}
	return float64(f.FailedAttempts()) / float64(f.Attempts()), true
}
