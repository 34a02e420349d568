package bench

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/sluicetype"
)

// idleCheck is how long a work-only process's handlers must have been
// idle before it asks the database whether the backlog is empty. While
// jobs flow it asks nothing, so the check costs the measured work nothing.
const idleCheck = 20 * time.Millisecond

// idleCheckMax bounds the gap between checks of a process that stays idle
// while others still hold jobs: the gap doubles from idleCheck up to it,
// and starts again at idleCheck once a handler here returns. Asking every
// idleCheck, the processes of a four-process run sent 13 times the list
// queries of a one-process run (868 against 65 for 20,000 jobs on
// PostgreSQL). The process that works the last jobs was busy, so it still
// finds the backlog empty within idleCheck of its end; the others end at
// most this much after it.
const idleCheckMax = 8 * idleCheck

// workOnly works the jobs that an enqueue-only run left under the prefix,
// beside any number of other work-only processes, until no job is pending
// or running in any of them. It neither migrates nor drops the tables:
// they belong to the enqueue-only run. Jobs is what this process worked.
func (r *runner) workOnly(ctx context.Context, scheme string) (*Result, error) {
	var done atomic.Int64
	var last atomic.Int64 // UnixNano of the latest handler return
	c, err := r.client(func(context.Context, *sluice.Job) error {
		done.Add(1)
		last.Store(time.Now().UnixNano())
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("bench client: %w", err)
	}
	ctx, cancel := context.WithTimeout(ctx, r.cfg.Timeout)
	defer cancel()
	t0 := time.Now()
	last.Store(t0.UnixNano())
	if err := c.Start(ctx); err != nil {
		return nil, fmt.Errorf("start workers: %w", err)
	}
	defer func() {
		sctx, scancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		defer scancel()
		c.Stop(sctx)
	}()
	tick := time.NewTicker(idleCheck)
	defer tick.Stop()
	gap, checked := idleCheck, time.Time{}
	for {
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("work-only: %d jobs done: %w", done.Load(), ctx.Err())
		case <-tick.C:
		}
		now, returned := time.Now(), time.Unix(0, last.Load())
		if returned.After(checked) {
			gap = idleCheck // worked since the last check: idle afresh
		}
		if now.Sub(returned) < idleCheck || now.Sub(checked) < gap {
			continue
		}
		checked = now
		gap = min(2*gap, idleCheckMax)
		live, failed, err := liveJobs(ctx, c)
		if err != nil {
			return nil, fmt.Errorf("work-only: stats: %w", err)
		}
		if failed {
			return nil, errors.New("work-only: jobs failed")
		}
		if !live {
			break
		}
	}
	end := time.Now()
	n := done.Load()
	return &Result{DB: scheme, Mode: "work-only", Jobs: int(n), Concurrency: r.cfg.Concurrency,
		WorkPerS: float64(n) / end.Sub(t0).Seconds(), Succeeded: n, PeakRSSMB: peakRSSMB(),
		WorkStarted: unixSeconds(t0), WorkEnded: unixSeconds(end)}, nil
}

// liveJobs reports whether any job is pending or running, and whether any
// has failed, in every queue: three index seeks (one row of each status
// at most), not a count. The check runs whenever a process's handlers
// idle for idleCheck, which with several processes on one backlog is
// often; counting the backlog each time made the check, not the workers,
// what a scaling run measured.
func liveJobs(ctx context.Context, c *sluice.Client) (live, failed bool, err error) {
	exists := func(st sluicetype.Status) (bool, error) {
		jobs, err := c.Jobs(ctx, sluicetype.ListParams{Status: st, Limit: 1})
		return len(jobs) > 0, err
	}
	for _, st := range []sluicetype.Status{sluicetype.StatusPending, sluicetype.StatusProcessing} {
		if live, err = exists(st); err != nil || live {
			break
		}
	}
	if err != nil {
		return false, false, err
	}
	failed, err = exists(sluicetype.StatusFailed)
	return live, failed, err
}

func unixSeconds(t time.Time) float64 { return float64(t.UnixNano()) / 1e9 }
