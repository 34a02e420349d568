package worker

import (
	"context"
	"time"

	"github.com/sluicehq/sluice/driver"
	"github.com/sluicehq/sluice/internal/service"
)

// leaseMargin is how long before its lease could run out at the database
// an attempt whose lease was not renewed is stopped: its handler is
// cancelled with ErrLeaseLost once lease - margin has passed on this
// process's monotonic clock since the last successful renewal began. The
// database set that renewal's lease later than it began, and the rescue
// waits for the lease to pass at the database, so a handler is told to
// stop at least the margin before another holder can start.
func leaseMargin(lease time.Duration) time.Duration { return lease / 4 }

// callTimeout bounds one database call made for jobs of this lease, so
// that a connection that went silent (packets dropped, no reset) fails the
// call instead of holding the loop: a quarter of the lease, so that a hung
// heartbeat still leaves time for a retry before the lease's margin, at
// least a second (a loaded database must still answer) and at most 30 s.
func callTimeout(lease time.Duration) time.Duration {
	return min(max(lease/4, time.Second), 30*time.Second)
}

// retryCeiling is the longest pause between two tries of a write that
// jobs of this lease wait on (their outcome): a twelfth of the lease, so
// that several tries fit before the lease's margin when every try meets a
// connection the server just closed, and at most retryMax. A backoff that
// grew to retryMax on a 6 s lease let the leases of 16 finished jobs pass
// in a run where the server killed every connection every 200 ms.
func retryCeiling(lease time.Duration) time.Duration {
	return min(max(lease/12, retryMin), retryMax)
}

// renewTries is how many times one heartbeat statement is tried before the
// beat gives up until the next tick; renewPause is the pause after the
// first failed try, doubled after each.
const (
	renewTries = 3
	renewPause = 50 * time.Millisecond
)

// tick is how often the heartbeat and expiry loops look at the running
// jobs: often enough for the shortest lease, at most every second.
func (p *Pool) tick(div time.Duration) time.Duration {
	return min(max(p.running.minLease()/div, 10*time.Millisecond), time.Second)
}

// heartbeatLoop extends every running job's lease once a third of it has
// passed, so a live worker's job is never rescued, and cancels the handlers
// of jobs whose lease turns out to be lost.
func (p *Pool) heartbeatLoop(ctx context.Context) {
	for {
		if !service.Sleep(ctx, max(p.tick(6), 50*time.Millisecond)) {
			return
		}
		p.beat(ctx, p.cfg.Clock.Now())
	}
}

// expiryLoop stops the attempts whose lease was not renewed in time. It
// runs apart from the heartbeat, which may be waiting on a database that
// stopped answering: that is when it matters.
func (p *Pool) expiryLoop(ctx context.Context) {
	for {
		// A twelfth of the lease: an attempt is stopped at most that long
		// after lease - margin, still well before the lease passes.
		if !service.Sleep(ctx, p.tick(12)) {
			return
		}
		for _, e := range p.running.expired(p.cfg.Clock.Now()) {
			p.leaseLapsing(e.x, "lease not renewed in time", e.left)
		}
	}
}

func (p *Pool) beat(ctx context.Context, now time.Time) {
	for token, jobs := range p.running.due(now) {
		// One statement per lease token and lease length.
		byLease := map[time.Duration][]*running{}
		for _, x := range jobs {
			byLease[x.lease] = append(byLease[x.lease], x)
		}
		for lease, group := range byLease {
			ids := make([]int64, len(group))
			for i, x := range group {
				ids[i] = x.job.ID
			}
			lost, err := p.renew(ctx, driver.HeartbeatParams{Token: token, IDs: ids, Lease: lease})
			if err != nil {
				// The next tick retries; the expiry loop stops the
				// handlers if no renewal gets through in time.
				p.log.Warn("heartbeat failed", "jobs", len(ids), "err", err)
				continue
			}
			lostSet := map[int64]bool{}
			for _, id := range lost {
				lostSet[id] = true
			}
			var gone []*running
			for _, x := range group {
				if lostSet[x.job.ID] {
					gone = append(gone, x)
					continue
				}
				p.running.beaten(x, now)
			}
			if len(gone) > 0 {
				p.lost(ctx, gone, "heartbeat")
			}
		}
	}
}

// renew runs one heartbeat statement, tried up to renewTries times within
// one callTimeout. A try that fails fast most often met a connection the
// server had closed (a restart, a kill, a pooler's reset): the pool drops
// it, and the next try, on another connection, gets through. Waiting for
// the next tick instead would spend a sixth of the lease per dead
// connection. A try cut by the deadline, or by a watch ping that found
// the database unreachable, is not repeated.
func (p *Pool) renew(ctx context.Context, params driver.HeartbeatParams) ([]int64, error) {
	hctx, cancel := p.reach.bound(ctx, callTimeout(params.Lease))
	defer cancel()
	pause := renewPause
	for try := 1; ; try++ {
		lost, err := p.cfg.Driver.Heartbeat(hctx, params)
		if err == nil || try == renewTries || hctx.Err() != nil {
			return lost, err
		}
		p.log.Debug("heartbeat failed; trying again", "jobs", len(params.IDs), "try", try, "err", err)
		if !service.Sleep(hctx, pause) {
			return nil, err
		}
		pause *= 2
	}
}

// leaseLost cancels an attempt's handler: another worker may own the job
// now, so whatever this one does will be fenced out, and the handler must
// stop at once.
func (p *Pool) leaseLost(x *running, where string) { p.leaseLapsing(x, where, 0) }

// leaseLapsing cancels an attempt's handler whose lease can pass at the
// database in left, which is as long as the handler has to stop.
func (p *Pool) leaseLapsing(x *running, where string, left time.Duration) {
	x.cancel(&LeaseLostError{StopBy: p.cfg.Clock.Now().Add(max(left, 0))})
	if !p.running.remove(x) {
		return // already reported
	}
	p.log.Warn("job lease lost; its outcome will be dropped", append(p.jobAttrs(x), "during", where)...)
	if h := p.cfg.Hooks.LeaseLost; h != nil {
		h(x.job, where)
	}
}
