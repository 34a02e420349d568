package worker

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/sluicehq/sluice/sluicetype"
)

// The progress watchdog (docs/guarantees.md "Stuck jobs"): a running
// attempt with a progress timeout that reports no progress for that long
// is stuck. Only the worker holding the attempt's lease enforces it: it
// alone can stop the handler and write the attempt's outcome after the
// handler has returned, so that a retry never overlaps the stuck attempt.
//
// The clock is this process's (Config.Clock) throughout. It starts when
// the handler starts; a report made here (a Go handler's job.Progress, a
// command's fd-3 line) resets it at once, and a report that reached the
// database another way (a webhook's, through any server) resets it when
// the cancel poll sees the job's progress_at change. The database's time
// is only ever compared with its own earlier value.

// ErrStuck is what a *StuckError, the cause of a handler context cancelled
// by the watchdog, reports errors.Is for.
var ErrStuck = errors.New("no progress reported")

// StuckError is the cause of a handler context cancelled because its
// attempt reported no progress for Timeout. Its text is the reason the
// job records: "no progress reported for 5m0s".
type StuckError struct{ Timeout time.Duration }

func (e *StuckError) Error() string        { return fmt.Sprintf("%s for %s", ErrStuck, e.Timeout) }
func (e *StuckError) Is(target error) bool { return target == ErrStuck }

// watch is one attempt's watchdog state, guarded by the registry's lock.
type watch struct {
	timeout time.Duration // 0: no watchdog
	policy  sluicetype.OnStuck
	armed   bool      // the handler started
	last    time.Time // the handler's start or its latest report, on the pool's clock
	seen    time.Time // the job's progress_at as last read, zero before any
	// wrote: this process wrote a report since that read. The change it
	// makes to progress_at is then its own, whose report reset the clock
	// already: counting it again would push the timeout back by up to a
	// write's coalescing plus a poll. A job's reports come from its
	// process (Go, command) or through the API (webhook), not both.
	wrote bool
	fired bool
}

// arm starts x's watchdog at the handler's start.
func (r *registry) arm(x *running, now time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	x.watch.armed, x.watch.last = true, now
}

// reported resets x's watchdog: the handler reported progress now.
func (r *registry) reported(x *running, now time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	x.watch.last = now
}

// watched returns the attempts whose watchdog runs: armed, not fired,
// and whose handler has not returned.
func (r *registry) watched() []*running {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []*running
	for _, x := range r.jobs {
		if x.watch.timeout > 0 && x.watch.armed && !x.watch.fired && !x.settled {
			out = append(out, x)
		}
	}
	return out
}

// wroteProgress records that this process wrote a report of x's.
func (r *registry) wroteProgress(x *running) {
	r.mu.Lock()
	defer r.mu.Unlock()
	x.watch.wrote = true
}

// seenAt records the job's progress_at as read from the database, and
// resets x's watchdog when it changed since the last read by a report
// made elsewhere.
func (r *registry) seenAt(x *running, at, now time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if at.Equal(x.watch.seen) {
		return
	}
	x.watch.seen = at
	if x.watch.wrote {
		x.watch.wrote = false
		return
	}
	x.watch.last = now
}

// fire marks x stuck and reports true when its timeout passed with no
// report by now; it fires once.
func (r *registry) fire(x *running, now time.Time) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if x.watch.fired || x.settled || now.Sub(x.watch.last) < x.watch.timeout {
		return false
	}
	x.watch.fired = true
	return true
}

// watchStuck is the watchdog's round, run by the cancel poll after its
// own read: it learns of reports made elsewhere, then stops the handlers
// whose timeout passed.
func (p *Pool) watchStuck(ctx context.Context) {
	xs := p.running.watched()
	if len(xs) == 0 {
		return
	}
	if err := p.readProgressSeen(ctx, xs); err != nil {
		// Without the read a webhook's report may be missed: fire nothing
		// this round rather than stop a job that did report.
		p.log.Warn("reading running jobs' progress failed; the watchdog waits for the next poll", "jobs", len(xs), "err", err)
		return
	}
	now := p.cfg.Clock.Now()
	for _, x := range xs {
		if p.running.fire(x, now) {
			p.log.Info("job reported no progress within its progress timeout; stopping its handler",
				append(p.jobAttrs(x), "progress_timeout", x.watch.timeout, "on_stuck", x.watch.policy)...)
			x.cancel(&StuckError{Timeout: x.watch.timeout})
		}
	}
}

// readProgressSeen reads when each of xs last reported progress at the
// database, and resets the watchdog of those whose value changed.
func (p *Pool) readProgressSeen(ctx context.Context, xs []*running) error {
	at := map[int64]time.Time{}
	err := p.readRunning(ctx, xs, func(ctx context.Context, ids []int64) error {
		got, err := p.cfg.Driver.ProgressSeen(ctx, ids)
		for _, m := range got {
			at[m.ID] = m.At
		}
		return err
	})
	if err != nil {
		return err
	}
	now := p.cfg.Clock.Now()
	for _, x := range xs {
		if t, ok := at[x.job.ID]; ok {
			p.running.seenAt(x, t, now)
		}
	}
	return nil
}

// stuckOutcome is the outcome of x's attempt stopped by its watchdog,
// written once its handler has returned. The outcome the handler reported
// (its status, error, result) is dropped and logged; what it observed of
// the attempt (a command's output and exit code, a webhook's status, the
// trace) is kept for the attempt's history. Either way the attempt is a
// failure that may pass, which a circuit breaker counts.
func (p *Pool) stuckOutcome(x *running, e *StuckError, reported Result) Result {
	p.log.Info("a stuck job's handler returned; what it reported is dropped",
		append(p.jobAttrs(x), "reported", AttemptOutcome(reported), "on_stuck", x.watch.policy)...)
	var o Result
	switch msg := e.Error(); {
	case x.watch.policy == sluicetype.OnStuckCancel:
		msg = sluicetype.StuckReasonPrefix + msg
		o = Result{Status: sluicetype.StatusCancelled, Error: &msg}
	case p.cfg.Fail != nil:
		o = p.cfg.Fail(x.job, e)
	case x.job.Attempts >= x.job.MaxAttempts:
		o = Result{Status: sluicetype.StatusFailed, Error: &msg}
	default:
		o = Result{Status: sluicetype.StatusPending, Error: &msg}
	}
	o.Transient = true
	o.HTTPStatus, o.ExitCode, o.Log, o.TraceID, o.ProgressElsewhere = reported.HTTPStatus, reported.ExitCode, reported.Log, reported.TraceID, reported.ProgressElsewhere
	return o
}

// watchdogOf is x's progress timeout and policy, by Config.Watchdog.
func (p *Pool) watchdogOf(j sluicetype.JobRow) watch {
	if p.cfg.Watchdog == nil {
		return watch{}
	}
	d, policy := p.cfg.Watchdog(j)
	if d <= 0 {
		return watch{}
	}
	if policy == "" {
		policy = sluicetype.DefaultOnStuck
	}
	return watch{timeout: d, policy: policy}
}
