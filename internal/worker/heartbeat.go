package worker

import (
	"context"
	"time"

	"github.com/sluicehq/sluice/driver"
	"github.com/sluicehq/sluice/internal/service"
)

// heartbeatLoop extends every running job's lease once a third of it has
// passed, so a live worker's job is never rescued, and cancels the handlers
// of jobs whose lease turns out to be lost.
func (p *Pool) heartbeatLoop(ctx context.Context) {
	for {
		wait := min(max(p.running.minLease()/6, 50*time.Millisecond), time.Second)
		if !service.Sleep(ctx, wait) {
			return
		}
		p.beat(ctx, p.cfg.Clock.Now())
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
			lost, err := p.cfg.Driver.Heartbeat(ctx, driver.HeartbeatParams{Token: token, IDs: ids, Lease: lease})
			if err != nil {
				// The lease still has two thirds to run; the next tick retries.
				p.log.Warn("heartbeat failed", "jobs", len(ids), "err", err)
				continue
			}
			lostSet := map[int64]bool{}
			for _, id := range lost {
				lostSet[id] = true
			}
			for _, x := range group {
				if lostSet[x.job.ID] {
					p.leaseLost(x, "heartbeat")
					continue
				}
				p.running.beaten(x, now)
			}
		}
	}
}

// leaseLost cancels a job's handler: another worker may own it now, so
// whatever this one does will be fenced out.
func (p *Pool) leaseLost(x *running, where string) {
	x.cancel(ErrLeaseLost)
	if !p.running.remove(x.job.ID) {
		return // already reported
	}
	p.log.Warn("job lease lost; its outcome will be dropped", append(p.jobAttrs(x), "during", where)...)
	if h := p.cfg.Hooks.LeaseLost; h != nil {
		h(x.job, where)
	}
}
