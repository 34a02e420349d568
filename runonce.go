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
	Queue       string        // default DefaultQueue
	Type        string        // optional: only jobs of this type
	MaxJobs     int           // default 20
	MaxDuration time.Duration // default 45s
	// Concurrency defaults to the queue's configured concurrency, else 1.
	Concurrency int
}

// RunResult is what a pass did with the jobs it claimed. Each attempt that
// ended is in exactly one count, under the outcome that metrics, roll-ups
// and logs give it (an attempt whose lease was lost ends nowhere: its
// outcome is dropped, as under sluice work). Skipped is set when another
// pass for the same queue and type held the run lock.
type RunResult struct {
	OK bool `json:"ok"`
	// Done counts jobs that succeeded.
	Done int `json:"done"`
	// Retried counts attempts that failed and used an attempt; the job
	// runs again after its backoff.
	Retried int `json:"retried"`
	// Failed counts jobs that failed for good: a permanent error, or the
	// last attempt.
	Failed int `json:"failed"`
	// Requeued counts jobs given back to pending without using an
	// attempt: cut short at the deadline (or when the pass was
	// cancelled), or snoozed by their handler.
	Requeued int    `json:"requeued"`
	Skipped  string `json:"skipped,omitempty"`
}

// count adds one attempt by its outcome (see outcomeOf).
func (r *RunResult) count(outcome driver.Outcome) {
	switch outcome {
	case driver.OutcomeSuccess:
		r.Done++
	case driver.OutcomeRetry:
		r.Retried++
	case driver.OutcomeFailed:
		r.Failed++
	case uncharged:
		r.Requeued++
	}
}

// RunOnce is the cron-triggered runner: it takes the run lock for the
// queue and type (a lease row, so no other service is needed), rescues
// expired leases, then claims and executes up to MaxJobs jobs before the
// deadline. Jobs still running at the deadline are cancelled and returned
// to pending without charging the attempt. Its attempts are logged and
// counted in the metrics and roll-ups exactly as the workers' are, and the
// roll-ups are in sluice_stats when it returns.
func (c *Client) RunOnce(ctx context.Context, p RunParams) (RunResult, error) {
	if p.Queue == "" {
		p.Queue = DefaultQueue
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
	if err := c.syncTypesOnce(ctx); err != nil {
		return RunResult{}, err
	}
	// A timeout, not a deadline read from the clock: the runtime measures
	// it on its own monotonic clock, which a skewed Config.Clock cannot move.
	runCtx, cancel := context.WithTimeout(ctx, p.MaxDuration)
	defer cancel()
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
		if _, err := c.drv.ReleaseLease(rctx, driver.ReleaseLeaseParams{Name: lockName, Holder: holder}); err != nil {
			c.log.Warn("releasing run lock", "lock", lockName, "err", err)
		}
	}()
	if _, err := c.Rescue(ctx); err != nil {
		return RunResult{}, err
	}

	var mu sync.Mutex
	res := RunResult{OK: true}
	// The pass's jobs are observed like any other worker's (logs, metrics,
	// roll-ups); the pass only adds its own tally.
	hooks := c.workerHooks()
	observe := hooks.Completed
	hooks.Completed = func(job driver.JobRow, o worker.Outcome, ran time.Duration) {
		observe(job, o, ran)
		mu.Lock()
		defer mu.Unlock()
		res.count(outcomeOf(o))
	}
	lease := c.leaseFor(p.Type)
	// A bounded pass claims as the queue's workers do: in turns when it is
	// fair, within its running caps (the types' caps hold in any queue).
	qc := c.cfg.Queues[p.Queue]
	pass := worker.Queue{Name: p.Queue, Type: p.Type, Concurrency: p.Concurrency, MaxJobs: p.MaxJobs,
		Fair: qc.Fair, Limits: c.limitsOf(qc), Pace: c.paceOf(qc)}
	for _, q := range c.queueList() {
		if q.Name == p.Queue {
			lease = max(lease, q.Lease)
			// The queue's cluster-wide rate binds a pass too.
			pass.ClusterRate, pass.ClusterBurst = q.ClusterRate, q.ClusterBurst
		}
	}
	pass.Lease = lease
	pool := worker.New(worker.Config{
		Driver:   c.drv,
		Queues:   []worker.Queue{pass},
		Run:      c.run,
		LeaseFor: c.leaseFor,
		Circuit:  c.circuitFor,
		Logger:   c.log,
		Hooks:    hooks,
		Clock:    c.cfg.Clock,
	})
	pool.Start(runCtx)
	select {
	case <-pool.Drained():
	case <-runCtx.Done():
	}
	// Past the deadline, Stop cancels what still runs and requeues it.
	pool.Stop(runCtx)
	// A `sluice run` process ends with the pass and never starts the
	// heartbeat that flushes roll-ups elsewhere, so the pass flushes its
	// own counts before it answers. In `sluice serve` the heartbeat may be
	// flushing at the same moment; Flush waits for it and writes each
	// count once.
	fctx, fcancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer fcancel()
	if err := c.rollup.Flush(fctx, c.drv); err != nil {
		c.log.Warn("flushing the roll-ups of a run pass failed", "err", err)
	}
	mu.Lock()
	defer mu.Unlock()
	return res, nil
}

func randomHex() string {
	b := make([]byte, 6)
	rand.Read(b)
	return hex.EncodeToString(b)
}
