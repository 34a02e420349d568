package worker

import (
	"context"
	"sync"
	"time"

	"github.com/sluicehq/sluice/driver"
	"github.com/sluicehq/sluice/sluicetype"
)

// ProgressEvery is the coalescing bound of progress reports: the pool
// writes at most one per job per ProgressEvery while its handler runs
// (the latest report wins), and one more when the handler returns with a
// report not yet written. A handler that reports on every item cannot
// flood the database.
const ProgressEvery = time.Second

// progress coalesces one attempt's reports. Report only records the
// latest and wakes the writer, so a handler never waits on the database;
// the writer, started by the first report, runs until the handler
// returns.
type progress struct {
	p    *Pool
	x    *running
	ctx  context.Context // the handler's: the writer stops when it ends
	wake chan struct{}   // capacity 1: one pending wake-up is enough
	done chan struct{}   // closed when the writer returns

	mu      sync.Mutex
	latest  *sluicetype.Progress
	pending bool // latest is not written yet
	started bool
	lost    bool // a write found the lease gone: nothing more is written
}

type progressKey struct{}

func newProgress(ctx context.Context, p *Pool, x *running) *progress {
	return &progress{p: p, x: x, ctx: ctx, wake: make(chan struct{}, 1), done: make(chan struct{})}
}

// with returns ctx carrying r, which Report finds.
func (r *progress) with(ctx context.Context) context.Context {
	return context.WithValue(ctx, progressKey{}, r)
}

// Report returns the progress reporter of the attempt ctx runs, or nil
// outside a pool's handler (a test calling a handler directly).
func Report(ctx context.Context) func(done, total int64, message string) {
	r, _ := ctx.Value(progressKey{}).(*progress)
	if r == nil {
		return nil
	}
	return r.report
}

func (r *progress) report(done, total int64, message string) {
	// A report made here resets the watchdog at once, before any write.
	r.p.running.reported(r.x, r.p.cfg.Clock.Now())
	r.mu.Lock()
	r.latest = &sluicetype.Progress{Done: done, Total: total, Message: message}
	r.pending = true
	start := !r.started
	r.started = true
	r.mu.Unlock()
	if start {
		go r.loop(r.ctx)
	}
	select {
	case r.wake <- struct{}{}:
	default:
	}
}

// loop writes the latest report at most once per ProgressEvery until ctx
// (the handler's) ends or a write finds the lease gone.
func (r *progress) loop(ctx context.Context) {
	defer close(r.done)
	var last time.Time // of the last write; zero before the first
	for {
		r.mu.Lock()
		pending := r.pending
		r.mu.Unlock()
		var timer <-chan time.Time
		if pending {
			wait := ProgressEvery - r.p.cfg.Clock.Since(last)
			if last.IsZero() || wait <= 0 {
				last = r.p.cfg.Clock.Now()
				// Not cancelled when the handler returns: a write cut off
				// by its context may still run on the server, after the
				// final report that finish writes next, and leave an older
				// report on the row (a CI run saw 95/100 where the handler
				// had last said 7/7). Awaited, it lands first; callTimeout
				// and the reach cut still bound it.
				if !r.write(context.WithoutCancel(ctx)) {
					return
				}
				continue
			}
			timer = time.After(wait)
		}
		select {
		case <-ctx.Done():
			return
		case <-r.wake:
		case <-timer:
		}
	}
}

// write writes the latest report, and reports false once the lease is
// gone: the heartbeat and cancel paths handle that lease, so the writer
// just stops. A failed write leaves the report pending for the next try.
func (r *progress) write(ctx context.Context) bool {
	r.mu.Lock()
	if r.lost {
		r.mu.Unlock()
		return false
	}
	cur := *r.latest
	r.pending = false
	r.mu.Unlock()
	wctx, cancel := r.p.reach.bound(ctx, callTimeout(r.x.lease))
	held, err := r.p.cfg.Driver.Progress(wctx, driver.ProgressParams{ID: r.x.job.ID, Token: r.x.job.LockedBy,
		Done: cur.Done, Total: cur.Total, Message: cur.Message})
	cancel()
	r.mu.Lock()
	defer r.mu.Unlock()
	if err != nil {
		r.p.log.Debug("progress write failed; the next report retries", append(r.p.jobAttrs(r.x), "err", err)...)
		r.pending = true
		return true
	}
	if !held {
		r.lost = true
	} else {
		r.p.running.wroteProgress(r.x)
	}
	return held
}

// finish ends the writer once the handler has returned, writes a report
// still pending when flush is true (the caller's rule), and returns the
// last report for the attempt's history entry, or nil.
func (r *progress) finish(flush bool) *sluicetype.Progress {
	r.mu.Lock()
	started, latest := r.started, r.latest
	r.mu.Unlock()
	if !started {
		return nil
	}
	<-r.done
	r.mu.Lock()
	pending := r.pending
	r.mu.Unlock()
	if flush && pending {
		r.write(context.Background())
	}
	return latest
}
