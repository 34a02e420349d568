package worker

import (
	"context"
	"time"

	"github.com/sluicehq/sluice/internal/service"
	"github.com/sluicehq/sluice/sluicetype"
)

// DefaultCancelPoll is how often a pool that runs jobs asks the database
// which of them an operator cancelled. With the handler's own way of
// stopping (a command's kill grace), it bounds how long a cancelled job's
// handler keeps running (docs/guarantees.md). Every database learns it
// this way: one indexed read per poll, only while jobs run.
const DefaultCancelPoll = time.Second

// cancelChunk bounds the ids of one read, as the bulk actions do.
const cancelChunk = 500

// cancelLoop stops the handlers of running jobs that an operator
// cancelled, and runs the progress watchdog (stuck.go), whose bound is
// this poll's.
func (p *Pool) cancelLoop(ctx context.Context) {
	for {
		if !service.Sleep(ctx, p.cfg.CancelPoll) {
			return
		}
		xs := p.running.snapshot()
		if len(xs) == 0 {
			continue
		}
		if _, err := p.stopCancelled(ctx, xs, "running"); err != nil {
			// The next poll tries again; the heartbeat would find the
			// lease gone and check again too.
			p.log.Warn("reading cancelled jobs failed", "jobs", len(xs), "err", err)
		}
		// After the cancels: a job an operator cancelled stops as
		// cancelled, not as stuck.
		p.watchStuck(ctx)
	}
}

// stopCancelled stops the handlers among xs whose job an operator
// cancelled, and returns the others. where says when the cancel was
// found: while the handler ran, or when a write of the attempt's found
// its lease token gone.
func (p *Pool) stopCancelled(ctx context.Context, xs []*running, where string) (rest []*running, err error) {
	cancelled := map[int64]bool{}
	err = p.readRunning(ctx, xs, func(ctx context.Context, ids []int64) error {
		got, err := p.cfg.Driver.Cancelled(ctx, ids)
		for _, id := range got {
			cancelled[id] = true
		}
		return err
	})
	if err != nil {
		return xs, err
	}
	for _, x := range xs {
		if cancelled[x.job.ID] {
			p.operatorCancelled(x, where)
		} else {
			rest = append(rest, x)
		}
	}
	return rest, nil
}

// readRunning calls read with the ids of xs, at most cancelChunk at a
// time, each call bounded as a call of the shortest lease among them is.
func (p *Pool) readRunning(ctx context.Context, xs []*running, read func(ctx context.Context, ids []int64) error) error {
	lease := xs[0].lease
	for _, x := range xs {
		lease = min(lease, x.lease)
	}
	for start := 0; start < len(xs); start += cancelChunk {
		part := xs[start:min(start+cancelChunk, len(xs))]
		ids := make([]int64, len(part))
		for i, x := range part {
			ids[i] = x.job.ID
		}
		cctx, cancel := p.reach.bound(ctx, callTimeout(lease))
		err := read(cctx, ids)
		cancel()
		if err != nil {
			return err
		}
	}
	return nil
}

// written is where an attempt's outcome was written and fenced out: its
// handler had returned, and what it reported is dropped.
func written(where string) bool { return where == "completion" || where == "transactional completion" }

// lost reports attempts whose lease token no longer holds their job:
// cancelled by an operator, or lost to a rescue. A failed read of which
// takes them all as lost; either way their handlers stop and their
// outcomes are dropped.
func (p *Pool) lost(ctx context.Context, xs []*running, where string) {
	rest, err := p.stopCancelled(context.WithoutCancel(ctx), xs, where)
	if err != nil {
		p.log.Warn("reading whether lost jobs were cancelled failed", "jobs", len(xs), "err", err)
	}
	for _, x := range rest {
		p.leaseLost(x, where)
	}
}

// operatorCancelled stops x's handler with ErrCancelled: the database
// holds the job as cancelled already, and no other attempt will start it,
// so the handler gets its full way of stopping (a command's kill grace).
//
// An outcome is dropped, and counted, in one of two places: here, when
// the attempt's write found the cancel first; or in cancelReturned, when
// the handler returned after the cancel reached it, and nothing is written.
func (p *Pool) operatorCancelled(x *running, where string) {
	x.cancel(ErrCancelled)
	removed := p.running.remove(x)
	if written(where) {
		p.dropped(x, p.running.reportedOf(x))
		return
	}
	if removed {
		// An operator's cancel, or the deadline sweep's of a prefetched
		// job (the job's history says which).
		p.log.Info("job cancelled; stopping its handler", append(p.jobAttrs(x), "during", where)...)
	}
}

// cancelReturned records the return of a handler stopped by a cancel.
func (p *Pool) cancelReturned(x *running, o Result) { p.dropped(x, AttemptOutcome(o)) }

// dropped logs and counts the outcome of a cancelled job's attempt that
// the job will never get: it stays cancelled.
func (p *Pool) dropped(x *running, reported sluicetype.Outcome) {
	p.log.Info("a cancelled job's handler returned; what it reported is dropped",
		append(p.jobAttrs(x), "reported", reported)...)
	if h := p.cfg.Hooks.CancelDropped; h != nil {
		h(x.job, reported)
	}
}
