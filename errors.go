package sluice

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/sluicehq/sluice/internal/worker"
)

// permanentError marks an error that must not be retried.
type permanentError struct{ err error }

func (e *permanentError) Error() string { return e.err.Error() }
func (e *permanentError) Unwrap() error { return e.err }

// Permanent wraps err so that the job fails at once, whatever attempts remain.
func Permanent(err error) error {
	if err == nil {
		err = errors.New("permanent failure")
	}
	return &permanentError{err}
}

// IsPermanent reports whether err was marked with Permanent.
func IsPermanent(err error) bool {
	var p *permanentError
	return errors.As(err, &p)
}

// snoozeError returns the job to pending without using an attempt.
type snoozeError struct{ d time.Duration }

func (e *snoozeError) Error() string { return fmt.Sprintf("snoozed for %s", e.d) }

// Snooze returns the job to pending to run again after d, and gives back
// the attempt it was using. Use it to wait for something without failing.
func Snooze(d time.Duration) error {
	return &snoozeError{max(d, 0)}
}

// retryAfterError is a transient error with a server-given delay.
type retryAfterError struct {
	err error
	d   time.Duration
}

func (e *retryAfterError) Error() string { return e.err.Error() }
func (e *retryAfterError) Unwrap() error { return e.err }

// RetryAfter wraps a transient err with the delay the remote side asked for
// (an HTTP Retry-After, say). It replaces the backoff, capped at the type's
// maximum backoff.
func RetryAfter(err error, d time.Duration) error {
	return &retryAfterError{err, max(d, 0)}
}

// RetryAfterDelay returns the delay that RetryAfter attached to err.
func RetryAfterDelay(err error) (time.Duration, bool) {
	var ra *retryAfterError
	if errors.As(err, &ra) {
		return ra.d, true
	}
	return 0, false
}

func (e *InputError) Error() string {
	if e.Field == "" {
		return e.Msg
	}
	return e.Field + ": " + e.Msg
}

// ErrLeaseLost is the cause (context.Cause) of a handler's context ended
// because its job's lease was lost: its renewals failed until the lease
// could pass, or the database says another attempt holds it. Whatever the
// handler does next is fenced out; StopBy says by when it must be gone.
var ErrLeaseLost = worker.ErrLeaseLost

// ErrCancelled is the cause (context.Cause) of a handler's context ended
// because an operator cancelled its job while it ran (Client.Cancel, the
// API, the CLI, the dashboard): the job is cancelled already, and whatever
// the handler returns is dropped. It is neither a shutdown nor a timeout:
// the job will not run again unless someone retries it.
var ErrCancelled = worker.ErrCancelled

// ErrStuck is what the cause (context.Cause) of a handler's context ended
// by the progress watchdog reports errors.Is for: the job reported no
// progress for its progress timeout (Type.ProgressTimeout,
// EnqueueParams.ProgressTimeout). The cause is a *StuckError, whose text
// is the reason: "no progress reported for 5m0s". Once the handler has
// returned, its type's OnStuck decides the attempt's outcome, and what the
// handler returned is dropped.
var ErrStuck = worker.ErrStuck

// StuckError is the cause of a handler's context ended by the progress
// watchdog; Timeout is the progress timeout that passed.
type StuckError = worker.StuckError

// StopBy reports when a handler whose context has ended must have
// returned, if there is such a bound: after a lost lease, the earliest
// moment another worker may start the job (now, when the database said
// the lease was gone already). ok is false while the context is live and
// when it ended otherwise (a timeout, a shutdown), where the worker keeps
// the lease and waits for the handler. A command handler's kill grace
// ends there, whatever its length.
func StopBy(ctx context.Context) (by time.Time, ok bool) {
	var ll *worker.LeaseLostError
	if errors.As(context.Cause(ctx), &ll) {
		return ll.StopBy, true
	}
	return time.Time{}, false
}
