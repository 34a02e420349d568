package worker

import (
	"context"
	"time"

	"github.com/sluicehq/sluice/driver"
)

type pending struct {
	x *running
	o Result
}

// completer writes outcomes in batches: whatever has queued up while the
// previous batch was written goes in the next one, so a busy pool needs
// one round trip per batch and an idle one answers at once.
type completer struct {
	p      *Pool
	linger time.Duration
	in     chan pending
	done   chan struct{}
	closed chan struct{}
}

// newCompleter sizes the queue of unwritten outcomes to the pool's total
// concurrency: a worker slot is freed when its handler returns, so when
// writes fall behind, handlers block here and claims stop, instead of
// leases piling up in the database.
func newCompleter(p *Pool) *completer {
	total := 0
	for _, q := range p.cfg.Queues {
		total += 2 * q.Concurrency // running and prefetched
	}
	return &completer{p: p, in: make(chan pending, max(total, 64)), done: make(chan struct{}), closed: make(chan struct{}),
		linger: time.Millisecond}
}

func (c *completer) add(x *running, o Result) { c.in <- pending{x, o} }

// drain asks the loop to write everything queued, then stop.
func (c *completer) drain() {
	close(c.done)
	<-c.closed
}

func (c *completer) loop(ctx context.Context) {
	defer close(c.closed)
	const maxBatch = 1000
	batch := make([]pending, 0, maxBatch)
	for {
		select {
		case it := <-c.in:
			batch = append(batch, it)
		case <-c.done:
			for {
				select {
				case it := <-c.in:
					batch = append(batch, it)
					if len(batch) == maxBatch {
						c.flush(context.Background(), batch)
						batch = batch[:0]
					}
					continue
				default:
				}
				break
			}
			c.flush(context.Background(), batch)
			return
		}
		// Linger briefly for outcomes still arriving from the same claim
		// batch: every flush is a commit, and commits are what a busy
		// database spends its time on. An idle pool waits at most linger.
		linger := time.NewTimer(c.linger)
	fill:
		for len(batch) < maxBatch {
			select {
			case it := <-c.in:
				batch = append(batch, it)
			case <-linger.C:
				break fill
			}
		}
		linger.Stop()
		c.flush(ctx, batch)
		batch = batch[:0]
	}
}

// flush writes a batch, retrying while the database is unreachable: the
// jobs keep their leases (the heartbeat still runs) until it comes back.
func (c *completer) flush(ctx context.Context, batch []pending) {
	if len(batch) == 0 {
		return
	}
	cs := make([]driver.Completion, len(batch))
	for i, it := range batch {
		cs[i] = c.p.completion(it.x, it.o)
	}
	// The batch's shortest lease bounds each try.
	lease := batch[0].x.lease
	for _, it := range batch {
		lease = min(lease, it.x.lease)
	}
	wait := retryMin
	var lost []int64
	for attempt := 0; ; attempt++ {
		var err error
		wctx, cancel := c.p.reach.bound(context.WithoutCancel(ctx), callTimeout(lease))
		lost, err = c.p.cfg.Driver.Complete(wctx, driver.CompleteParams{Completions: cs})
		cancel()
		if err == nil {
			break
		}
		c.p.log.Error("writing job outcomes failed; retrying", "jobs", len(cs), "err", err)
		if ctx.Err() != nil && attempt >= 3 {
			// Shutting down and the database is gone: the leases will
			// expire and the jobs will be rescued and run again.
			c.p.log.Error("giving up on job outcomes at shutdown; they will be rescued", "jobs", len(cs))
			for _, it := range batch {
				c.p.running.remove(it.x)
			}
			return
		}
		// While the database is down this waits for it to answer again,
		// so the outcomes are written as soon as it is back.
		c.p.reach.retryWait(ctx, &wait, retryCeiling(lease))
	}
	lostSet := make(map[int64]bool, len(lost))
	for _, id := range lost {
		lostSet[id] = true
	}
	var gone []*running
	for _, it := range batch {
		if lostSet[it.x.job.ID] {
			gone = append(gone, it.x)
			continue
		}
		c.p.running.remove(it.x)
	}
	if len(gone) > 0 {
		c.p.lost(ctx, gone, "completion")
	}
}

// completeInTx writes the outcome in the handler's own transaction.
func (p *Pool) completeInTx(x *running, o Result) {
	ctx, cancel := p.reach.bound(context.Background(), callTimeout(x.lease))
	defer cancel()
	c := p.completion(x, o)
	ok, err := p.cfg.Driver.CompleteTx(ctx, driver.CompleteTxParams{Tx: o.Tx, Completion: c})
	if err == nil && ok {
		err = o.Tx.Commit()
	} else {
		o.Tx.Rollback()
	}
	switch {
	case err != nil:
		// Nothing committed: the lease will expire and the job run again.
		p.log.Error("transactional completion failed; the job will be rescued", append(p.jobAttrs(x), "err", err)...)
		p.running.remove(x)
	case !ok:
		p.lost(ctx, []*running{x}, "transactional completion")
	default:
		p.running.remove(x)
	}
}
