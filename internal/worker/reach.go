package worker

import (
	"context"
	"errors"
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
	// watchEvery paces the pings that look for a silent cut while the
	// pool depends on the database: while it holds leases, or while a
	// call has been waiting this long. A ping that does not answer within
	// probeTimeout cancels every call in flight, so that a cut shows
	// within watchEvery + probeTimeout of a lease being held (2 s), or
	// 2*watchEvery + probeTimeout of a call going silent (3 s), rather
	// than at each call's own deadline.
	watchEvery = time.Second
)

// errUnreachable is the cause of a call cancelled because a ping found
// the database unreachable meanwhile.
var errUnreachable = errors.New("database unreachable: a liveness ping got no answer")

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
	// cut cancels every call made through bound since the database last
	// answered; a failed watch ping calls it.
	cutCtx context.Context
	cut    context.CancelCauseFunc
	// calls holds, for each call in flight through bound, the watch's
	// tick at its start; tick counts the watch's wake-ups. A call that
	// began two ticks ago has waited at least watchEvery. Ticks, not
	// readings of the pool's clock: what the watch judges passes in real
	// time (the pings' and calls' context timeouts), and an injected clock
	// moved by a test made calls look old and pings time out at once, so
	// that the guard cut every call in flight on a database that answered.
	calls map[*int]uint64
	tick  uint64
}

func newReach(d driver.Driver, log *slog.Logger, clk clock.Clock) *reach {
	r := &reach{d: d, log: log, clock: clk, calls: map[*int]uint64{}}
	r.cutCtx, r.cut = context.WithCancelCause(context.Background())
	return r
}

// bound derives the context of one database call: it ends after timeout,
// with ctx, or as soon as a watch ping finds the database unreachable.
func (r *reach) bound(ctx context.Context, timeout time.Duration) (context.Context, context.CancelFunc) {
	cctx, cancelCause := context.WithCancelCause(ctx)
	tctx, cancelT := context.WithTimeout(cctx, timeout)
	key := new(int)
	r.mu.Lock()
	cut := r.cutCtx
	r.calls[key] = r.tick
	r.mu.Unlock()
	stop := context.AfterFunc(cut, func() { cancelCause(context.Cause(cut)) })
	return tctx, func() {
		stop()
		cancelT()
		cancelCause(nil)
		r.mu.Lock()
		delete(r.calls, key)
		r.mu.Unlock()
	}
}

// nextTick starts the watch's next interval and reports whether a call in
// flight has waited a whole interval (watchEvery) at least: it began
// before the previous tick.
func (r *reach) nextTick() (waited bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.tick++
	for _, at := range r.calls {
		if at+2 <= r.tick {
			return true
		}
	}
	return false
}

// watch pings the database every watchEvery while busy reports true or a
// call has been in flight that long, and on a ping that gets no answer
// cancels the calls in flight and starts the probe that tells the loops
// when the database is back.
func (r *reach) watch(ctx context.Context, busy func() bool) {
	for service.Sleep(ctx, watchEvery) {
		if waited := r.nextTick(); !busy() && !waited {
			continue
		}
		r.mu.Lock()
		probing := r.cur != nil
		r.mu.Unlock()
		if probing {
			continue // the probe is pinging already
		}
		err := r.ping(ctx)
		if err == nil || ctx.Err() != nil {
			continue
		}
		r.log.Warn("database unreachable: a liveness ping got no answer; cancelling the calls in flight", "err", err)
		r.mu.Lock()
		r.cut(errUnreachable)
		r.mu.Unlock()
		// Probe until the database answers: the loops whose calls were
		// cancelled join this probe and resume when it gets through.
		r.wait(ctx)
	}
}

// connWait bounds the watch's wait for a connection when every one the
// pool may open is busy (SQLite has one): that wait is load, not a cut,
// and must not cancel the calls in flight. A cut with every connection
// stuck in a call shows at those calls' own deadlines instead.
const connWait = 30 * time.Second

// ping pings the database on a connection of the pool. Taking an idle
// connection or dialing a new one counts toward probeTimeout, as a dial
// over a cut link hangs; waiting for a busy pool to free one does not.
func (r *reach) ping(ctx context.Context) error {
	db := r.d.DB()
	wait := probeTimeout
	if st := db.Stats(); st.MaxOpenConnections > 0 && st.InUse >= st.MaxOpenConnections {
		wait = connWait
	}
	cctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	conn, err := db.Conn(cctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	if wait == probeTimeout {
		// The dial and the ping share probeTimeout.
		return conn.PingContext(cctx)
	}
	// All of it after a wait for a busy pool.
	pctx, pcancel := context.WithTimeout(ctx, probeTimeout)
	defer pcancel()
	return conn.PingContext(pctx)
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
			r.mu.Lock()
			if r.cutCtx.Err() != nil {
				// Calls from now on run under a new cut.
				r.cutCtx, r.cut = context.WithCancelCause(context.Background())
			}
			r.mu.Unlock()
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
// otherwise the backoff *wait, doubled for the next failure up to ceiling.
// It reports false if ctx ended.
func (r *reach) retryWait(ctx context.Context, wait *time.Duration, ceiling time.Duration) bool {
	if r.wait(ctx) {
		*wait = retryMin
		return true
	}
	d := min(*wait, ceiling)
	*wait = min(*wait*2, ceiling)
	return service.Sleep(ctx, d)
}
