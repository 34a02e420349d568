package sqldriver

import (
	"context"
	"database/sql"
	"math/rand/v2"
	"time"
)

// RetryTransient runs fn until it succeeds, fails with an error that
// isTransient rejects, or ctx ends. Claims and completions use it so that a
// deadlock or serialization failure, which the database resolves by picking
// a victim, never reaches the caller.
func RetryTransient(ctx context.Context, isTransient func(error) bool, fn func() error) error {
	const attempts = 20
	wait := time.Millisecond
	for i := 0; ; i++ {
		err := fn()
		if err == nil || !isTransient(err) || i == attempts-1 {
			return err
		}
		// Jitter keeps two victims of the same deadlock from colliding again.
		d := wait/2 + rand.N(wait/2+1)
		select {
		case <-ctx.Done():
			return err
		case <-time.After(d):
		}
		wait = min(wait*2, 100*time.Millisecond)
	}
}

// Micros converts a duration for SQL that adds microseconds to the database clock.
func Micros(d time.Duration) int64 { return d.Microseconds() }

// NullMicros is d in microseconds, or NULL when d is not positive: a
// duration column whose NULL means "not set" (progress_timeout_us).
func NullMicros(d time.Duration) sql.NullInt64 {
	if d <= 0 {
		return sql.NullInt64{}
	}
	return sql.NullInt64{Int64: d.Microseconds(), Valid: true}
}
