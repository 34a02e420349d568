// Package service is the start/stop shape that sluice's background loops
// share (maintenance, the scheduler, the node heartbeat) and the
// context-aware waits their loops are built of.
package service

import (
	"context"
	"sync"
	"time"
)

// Runner runs one loop in a goroutine from Start until Stop. The zero
// value is ready. Start and Stop are not called concurrently.
type Runner struct {
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// Start runs loop in a goroutine with a context derived from ctx that
// Stop cancels. It returns at once.
func (r *Runner) Start(ctx context.Context, loop func(ctx context.Context)) {
	ctx, r.cancel = context.WithCancel(ctx)
	r.wg.Add(1)
	go func() { defer r.wg.Done(); loop(ctx) }()
}

// Stop cancels the loop and waits for it to return. It reports whether
// it stopped one: a Stop before Start, or a second Stop, does nothing, so
// that the caller skips its own stopping work too.
func (r *Runner) Stop() bool {
	if r.cancel == nil {
		return false
	}
	r.cancel()
	r.wg.Wait()
	r.cancel = nil
	return true
}

// Sleep waits d, or until ctx ends, and reports whether all of d passed.
func Sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// Every calls fn every d until ctx ends, the first time d after the call.
// The interval runs on a ticker, so fn's own time counts toward it.
func Every(ctx context.Context, d time.Duration, fn func(ctx context.Context)) {
	t := time.NewTicker(d)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		fn(ctx)
	}
}
