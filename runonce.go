package sluice

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"sync"
	"time"

	"github.com/sluicehq/sluice/driver"
	"github.com/sluicehq/sluice/internal/worker"
)

// RunParams bounds one pass of RunOnce.
type RunParams struct {
	Queue       string        // default "default"
	Type        string        // optional: only jobs of this type
	MaxJobs     int           // default 20
	MaxDuration time.Duration // default 45s
	// Concurrency defaults to the queue's configured concurrency, else 1.
	Concurrency int
}

// RunResult is what a pass did. Skipped is set when another pass for the
// same queue and type held the run lock.
type RunResult struct {
	OK      bool   `json:"ok"`
	Done    int    `json:"done"`
	Failed  int    `json:"failed"`
	Skipped string `json:"skipped,omitempty"`
}

// RunOnce is the cron-triggered runner: it takes the run lock for the
// queue and type (a lease row, so no other service is needed), rescues
// expired leases, then claims and executes up to MaxJobs jobs before the
// deadline. Jobs still running at the deadline are cancelled and returned
// to pending without charging the attempt.
func (c *Client) RunOnce(ctx context.Context, p RunParams) (RunResult, error) {
	if p.Queue == "" {
		p.Queue = "default"
	}
	if p.MaxJobs <= 0 {
		p.MaxJobs = 20
	}
	if p.MaxDuration <= 0 {
		p.MaxDuration = 45 * time.Second
	}
	if p.Concurrency <= 0 {
		p.Concurrency = max(c.cfg.Queues[p.Queue].Concurrency, 1)
	}
	if err := checkName("queue", p.Queue, driver.MaxQueueLen); err != nil {
		return RunResult{}, err
	}
	if p.Type != "" {
		if err := checkName("type", p.Type, driver.MaxTypeLen); err != nil {
			return RunResult{}, err
		}
	}
	deadline := time.Now().Add(p.MaxDuration)
	lockName := "run:" + p.Queue + ":" + p.Type
	holder := c.cfg.NodeID + ":" + randomHex()
	l, err := c.drv.AcquireLease(ctx, driver.LeaseParams{Name: lockName, Holder: holder, TTL: p.MaxDuration + 30*time.Second})
	if err != nil {
		return RunResult{}, err
	}
	if !l.Held {
		c.metrics.LockBusy(lockName)
		return RunResult{OK: true, Skipped: "another run is active"}, nil
	}
	c.metrics.LockAcquired(lockName)
	defer func() {
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		if _, err := c.drv.ReleaseLease(rctx, lockName, holder); err != nil {
			c.log.Warn("releasing run lock", "lock", lockName, "err", err)
		}
	}()
	if _, err := c.Rescue(ctx); err != nil {
		return RunResult{}, err
	}

	var mu sync.Mutex
	res := RunResult{OK: true}
	lease := c.leaseFor(p.Type)
	for _, q := range c.queueList() {
		if q.Name == p.Queue {
			lease = max(lease, q.Lease)
		}
	}
	pool := worker.New(worker.Config{
		Driver:   c.drv,
		Queues:   []worker.Queue{{Name: p.Queue, Type: p.Type, Concurrency: p.Concurrency, Lease: lease, MaxJobs: p.MaxJobs}},
		Run:      c.run,
		LeaseFor: c.leaseFor,
		Logger:   c.log,
		Hooks: worker.Hooks{Completed: func(_ driver.JobRow, o worker.Outcome, _ time.Duration) {
			mu.Lock()
			defer mu.Unlock()
			// A snoozed job or one interrupted at the deadline (Refund) has
			// not failed.
			switch {
			case o.Status == driver.StatusSuccess:
				res.Done++
			case !o.Refund:
				res.Failed++
			}
		}},
	})
	runCtx, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()
	pool.Start(runCtx)
	select {
	case <-pool.Drained():
	case <-runCtx.Done():
	}
	// Past the deadline, Stop cancels what still runs and requeues it.
	pool.Stop(runCtx)
	mu.Lock()
	defer mu.Unlock()
	return res, nil
}

func randomHex() string {
	b := make([]byte, 6)
	rand.Read(b)
	return hex.EncodeToString(b)
}
