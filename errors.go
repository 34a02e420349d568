package sluice

import (
	"errors"
	"fmt"
	"time"
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

// InputError is bad input from a caller: it names the field and nothing was
// written. The CLI exits 2 and the HTTP API answers 400 on it.
type InputError struct {
	Field string
	Msg   string
}

func (e *InputError) Error() string {
	if e.Field == "" {
		return e.Msg
	}
	return e.Field + ": " + e.Msg
}

func inputErr(field, format string, args ...any) error {
	return &InputError{Field: field, Msg: fmt.Sprintf(format, args...)}
}
