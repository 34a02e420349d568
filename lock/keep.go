package lock

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/sluicehq/sluice/internal/service"
)

// Keep renews l every ttl/3 until ctx ends. The returned channel receives
// one error, wrapping ErrLost, if the lease is lost: Renew reported it
// gone, or renewals kept failing until less than margin was left before
// the lease could lapse (ttl after the last good renewal began). The
// margin, at most ttl/2, is the caller's time to stop its work before
// another holder may start. Nothing is sent when ctx ends.
//
// A failed renewal is retried every ttl/10 rather than given up at once,
// so that a database restart shorter than the ttl does not end the hold.
func Keep(ctx context.Context, l Lease, ttl, margin time.Duration) <-chan error {
	lost := make(chan error, 1)
	every := max(ttl/3, time.Millisecond)
	retry := max(ttl/10, time.Millisecond)
	// A margin past ttl/2 would leave the first renewal, due at ttl/3, too
	// little time.
	margin = min(max(margin, 0), ttl/2)
	go func() {
		good := time.Now()
		for wait := every; service.Sleep(ctx, wait); {
			start := time.Now()
			// A renewal still unanswered when the margin begins is as good
			// as failed, so it is cut off there.
			deadline := good.Add(ttl - margin)
			rctx, cancel := context.WithDeadline(ctx, deadline)
			err := l.Renew(rctx)
			cancel()
			switch {
			case err == nil:
				good = start
				wait = every
			case ctx.Err() != nil:
				return
			case errors.Is(err, ErrLost):
				lost <- err
				return
			case time.Now().Add(retry).After(deadline):
				lost <- fmt.Errorf("%w: renewals failed for %s of its %s ttl: %w", ErrLost, time.Since(good).Round(time.Millisecond), ttl, err)
				return
			default:
				wait = retry
			}
		}
	}()
	return lost
}
