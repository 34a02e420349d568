package worker

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/sluicehq/sluice/driver"
	"github.com/sluicehq/sluice/internal/clock"
	"github.com/sluicehq/sluice/internal/service"
)

// Retry pacing after a failed database call.
const (
	// probeEvery paces the pings that look for a database that stopped
	// answering. Work resumes at most this long after the server accepts
	// connections again, whatever the outage's length. One ping per
	// process at this rate costs a down server a refused connection, a
	// starting one a rejected login: nothing it notices.
	probeEvery = 250 * time.Millisecond
	// probeTimeout bounds one ping, so that a host that drops packets
	// delays the next probe by at most this much.
	probeTimeout = time.Second
	// retryMin and retryMax bound the backoff of a call that failed while
	// the database answered pings (a statement it refused, a connection
	// that broke under it): a retry at once would likely fail the same way.
	retryMin = 100 * time.Millisecond
	retryMax = 5 * time.Second
)

// reach tells the pool's loops when the database answers again. The first
// loop whose call fails starts a probe; the others that fail meanwhile
// share it, so a process pings a down database once per probeEvery however
// many queues and writers it runs, and they all resume as soon as one ping
// gets through.
type reach struct {
	d     driver.Driver
	log   *slog.Logger
	clock clock.Clock

	mu  sync.Mutex
	cur *probe // nil while no probe runs
}

// probe is one search for the database. down and ok are set before done
// is closed.
type probe struct {
	done chan struct{}
	down bool // at least one ping failed: the database was unreachable
	ok   bool // a ping got through (false: the probe's context ended first)
}

// wait blocks after a failed database call until the database answers a
// ping, and reports whether it had stopped answering. False means either
// that it answered at once (the failure was not an outage: the caller
// backs off) or that ctx ended.
func (r *reach) wait(ctx context.Context) bool {
	r.mu.Lock()
	p := r.cur
	if p == nil {
		p = &probe{done: make(chan struct{})}
		r.cur = p
		go r.run(ctx, p)
	}
	r.mu.Unlock()
	select {
	case <-p.done:
		return p.down && p.ok
	case <-ctx.Done():
		return false
	}
}

// run pings until the database answers or ctx ends. A probe started by a
// loop that is shutting down ends with it; a loop still waiting then starts
// the next one.
func (r *reach) run(ctx context.Context, p *probe) {
	start := r.clock.Now()
	for {
		pctx, cancel := context.WithTimeout(ctx, probeTimeout)
		err := r.d.DB().PingContext(pctx)
		cancel()
		if err == nil {
			p.ok = true
			break
		}
		if !p.down {
			r.log.Warn("database unreachable; probing until it answers", "every", probeEvery, "err", err)
			p.down = true
		}
		if !service.Sleep(ctx, probeEvery) {
			break
		}
	}
	if p.down && p.ok {
		r.log.Info("database answers again", "unreachable_for", r.clock.Since(start).Round(time.Millisecond))
	}
	r.mu.Lock()
	r.cur = nil
	r.mu.Unlock()
	close(p.done)
}

// retryWait is a loop's pause after a failed database call: none when the
// database was down and answers again, so that work resumes at once;
// otherwise the backoff *wait, doubled for the next failure. It reports
// false if ctx ended.
func (r *reach) retryWait(ctx context.Context, wait *time.Duration) bool {
	if r.wait(ctx) {
		*wait = retryMin
		return true
	}
	d := *wait
	*wait = min(*wait*2, retryMax)
	return service.Sleep(ctx, d)
}
