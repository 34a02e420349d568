package sluicetype

import "fmt"

// OnStuck is what becomes of a running job whose attempt reports no
// progress for its progress timeout (a type's on_stuck): the worker that
// holds the attempt's lease stops the handler, waits for it to return,
// and then writes this outcome through the fenced completion.
type OnStuck string

const (
	// OnStuckRetry fails the attempt with the stuck error: the job is
	// retried with its type's backoff, or fails when its attempts are
	// spent.
	OnStuckRetry OnStuck = "retry"
	// OnStuckCancel ends the job cancelled, with the reason
	// "stuck: no progress reported for ..." (StuckReason).
	OnStuckCancel OnStuck = "cancel"
	// DefaultOnStuck is the policy of a type that names none.
	DefaultOnStuck = OnStuckRetry
)

// StuckReasonPrefix begins the reason a job cancelled by OnStuckCancel
// records (its last_error and its attempt's history entry).
const StuckReasonPrefix = "stuck: "

// ParseOnStuck reads a policy: "" is DefaultOnStuck, anything but retry
// or cancel an error.
func ParseOnStuck(s string) (OnStuck, error) {
	switch OnStuck(s) {
	case "":
		return DefaultOnStuck, nil
	case OnStuckRetry, OnStuckCancel:
		return OnStuck(s), nil
	}
	return "", fmt.Errorf("%q: want %s or %s", s, OnStuckRetry, OnStuckCancel)
}
