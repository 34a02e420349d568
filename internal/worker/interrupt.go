package worker

import (
	"context"
	"fmt"
	"strings"

	"github.com/sluicehq/sluice/driver"
	"github.com/sluicehq/sluice/sluicetype"
)

// FreeInterruptions is how many times in a row a job may be interrupted by
// a shutdown (its handler cancelled before it returned) and given back
// without being charged. The next interruption uses an attempt, so that a
// job longer than every shutdown window it meets still reaches a final
// state: retried until max_attempts, then failed, rather than released
// forever.
const FreeInterruptions = 3

// interrupted is the outcome of x's attempt cut short by shutdown: given
// back uncharged, unless its history shows FreeInterruptions such
// releases in a row (or as many as the history keeps), in which case the
// attempt is charged like any failure.
func (p *Pool) interrupted(ctx context.Context, x *running, msg string) Result {
	n, err := p.interruptionsInARow(ctx, x.job.ID)
	if err != nil {
		// Uncharged, as before the bound: a read that fails at shutdown
		// must not cost the job an attempt.
		p.log.Warn("reading a job's history at shutdown failed; releasing it uncharged", "job_id", x.job.ID, "err", err)
	}
	keep := p.cfg.KeepAttempts
	if keep <= 0 {
		keep = driver.DefaultKeepAttempts
	}
	if err != nil || n < min(FreeInterruptions, keep) {
		return Result{Status: sluicetype.StatusPending, Refund: true, Error: &msg}
	}
	msg = fmt.Sprintf("%s; charged: interrupted %d times in a row before", msg, n)
	if x.job.Attempts >= x.job.MaxAttempts {
		return Result{Status: sluicetype.StatusFailed, Error: &msg}
	}
	return Result{Status: sluicetype.StatusPending, Error: &msg}
}

// Interrupted begins the error of every attempt that shutdown cut short.
const Interrupted = "interrupted by shutdown"

// interruptionsInARow counts the job's latest attempts that shutdown cut
// short and gave back uncharged.
func (p *Pool) interruptionsInARow(ctx context.Context, id int64) (int, error) {
	j, err := p.cfg.Driver.GetJob(ctx, id)
	if err != nil {
		return 0, err
	}
	n := 0
	for i := len(j.History) - 1; i >= 0; i-- {
		a := j.History[i]
		if a.Outcome != sluicetype.AttemptReleased || !strings.HasPrefix(a.Error, Interrupted) {
			break
		}
		n++
	}
	return n, nil
}
