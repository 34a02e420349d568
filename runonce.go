package sluice

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/sluicehq/sluice/driver"
	"github.com/sluicehq/sluice/internal/service"
	"github.com/sluicehq/sluice/internal/worker"
	"github.com/sluicehq/sluice/sluicetype"
)

// RunParams bounds one pass of RunOnce.
type RunParams struct {
	// Queue is the queue to run; "" runs every queue that the config's
	// types with a handler (or Type) are configured for.
	Queue       string
	Type        string        // optional: only jobs of this type
	MaxJobs     int           // per queue; default 20
	MaxDuration time.Duration // default 45s
	// Concurrency defaults to each queue's configured concurrency, else 1.
	Concurrency int
}

// RunResult is what a pass did with the jobs it claimed. Each attempt that
// ended is in exactly one count, under the outcome that metrics, roll-ups
// and logs give it (an attempt whose lease was lost ends nowhere: its
// outcome is dropped, as under sluice work). Skipped is set when another
// pass for the same queues and type held every run lock; the answer is
// then only {"ok":true,"skipped":...}.
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
	// attempt: snoozed by their handler, or interrupted because the pass
	// itself was stopped (a signal to sluice run). The pass's deadline
	// never interrupts a job.
	Requeued int    `json:"requeued"`
	Skipped  string `json:"skipped,omitempty"`
	// Warnings name what the pass did not run that a reader may expect
	// it to: the config's types configured for a queue the pass did not
	// run, a queue whose run lock another pass held; and the pass's job
	// types whose timeout is longer than the pass's window: a job of
	// theirs may hold the pass (and its run lock) past max_seconds.
	Warnings []string `json:"warnings,omitempty"`
}

// MarshalJSON gives a skipped pass its short answer.
func (r RunResult) MarshalJSON() ([]byte, error) {
	if r.Skipped != "" {
		return json.Marshal(struct {
			OK      bool   `json:"ok"`
			Skipped string `json:"skipped"`
		}{r.OK, r.Skipped})
	}
	type plain RunResult
	return json.Marshal(plain(r))
}

// count adds one attempt by its outcome (see outcomeOf).
func (r *RunResult) count(outcome sluicetype.Outcome) {
	switch outcome {
	case sluicetype.OutcomeSuccess:
		r.Done++
	case sluicetype.OutcomeRetry:
		r.Retried++
	case sluicetype.OutcomeFailed:
		r.Failed++
	case uncharged:
		r.Requeued++
	}
}

// runLock is one queue's run lock, held by a pass.
type runLock struct {
	queue string
	lp    driver.LeaseParams
}

// RunOnce is the cron-triggered runner: it takes the run lock of each of
// its queues and the type (a lease row, so no other service is needed),
// rescues expired leases, then claims and executes up to MaxJobs jobs per
// queue before the deadline. Without a Queue it runs the queues its types
// are configured for, so that a crontab line with no queue runs the
// config's jobs wherever they are configured to wait. The deadline stops
// claiming; jobs already running finish (or are cut by their type's
// Timeout, a failed attempt like any other), so a job longer than the
// pass's window still reaches a final state, and the pass keeps its run
// locks until they return. Only ctx ending stops them early: they are
// then interrupted as at a worker shutdown (given back uncharged up to
// worker.FreeInterruptions times in a row). Its attempts are logged and
// counted in the metrics and roll-ups exactly as the workers' are, and the
// roll-ups are in sluice_stats when it returns. A pass stamps as served
// (see HandlerWindow) only the queues it claimed from and the types
// configured for them.
func (c *Client) RunOnce(ctx context.Context, p RunParams) (RunResult, error) {
	if p.MaxJobs <= 0 {
		p.MaxJobs = 20
	}
	if p.MaxDuration <= 0 {
		p.MaxDuration = 45 * time.Second
	}
	if p.Queue != "" {
		if err := checkName("queue", p.Queue, sluicetype.MaxQueueLen); err != nil {
			return RunResult{}, err
		}
	}
	// The pass claims only the types it has handlers for, so that a job
	// of another type is never charged for a handler this process lacks.
	types := c.handledTypes()
	if p.Type != "" {
		if err := checkName("type", p.Type, sluicetype.MaxTypeLen); err != nil {
			return RunResult{}, err
		}
		if t, ok := c.cfg.Types[p.Type]; !ok || t.Handler == nil {
			return RunResult{}, inputErr("type", "no handler for type %q in this process's config", p.Type)
		}
		types = []string{p.Type}
	}
	if len(types) == 0 {
		msg := "no job type has a handler in this config: the pass claims nothing"
		c.log.Warn("run pass: "+msg, "queue", p.Queue)
		return RunResult{OK: true, Warnings: []string{msg}}, nil
	}
	queues, warnings := c.passQueues(p.Queue, types)
	if p.Queue != "" {
		if err := c.checkQueueKnown(ctx, p.Queue); err != nil {
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
	holder := c.cfg.NodeID + ":" + randomHex()
	lockTTL := p.MaxDuration + 30*time.Second
	var held []runLock
	// Released when the pass ends, whatever it ran.
	defer func() {
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		for _, l := range held {
			if _, err := c.drv.ReleaseLease(rctx, driver.ReleaseLeaseParams{Name: l.lp.Name, Holder: holder}); err != nil {
				c.log.Warn("releasing run lock", "lock", l.lp.Name, "err", err)
			}
		}
	}()
	for _, q := range queues {
		lp := driver.LeaseParams{Name: "run:" + q + ":" + p.Type, Holder: holder, TTL: lockTTL}
		l, err := c.drv.AcquireLease(ctx, lp)
		if err != nil {
			return RunResult{}, err
		}
		if !l.Held {
			c.metrics.LockBusy(lp.Name)
			if len(queues) > 1 {
				warnings = append(warnings, fmt.Sprintf("queue %s: another run is active; this pass skipped it", q))
			}
			continue
		}
		c.metrics.LockAcquired(lp.Name)
		held = append(held, runLock{queue: q, lp: lp})
	}
	if len(held) == 0 {
		return RunResult{OK: true, Skipped: "another run is active"}, nil
	}
	// Jobs may run past the deadline: the locks are renewed until the
	// pass ends, so that the next pass is skipped rather than doubled.
	for _, l := range held {
		renewed := c.renewRunLock(ctx, l.lp)
		defer renewed()
	}
	if _, err := c.Rescue(ctx); err != nil {
		return RunResult{}, err
	}
	if _, err := c.SweepDeadlines(ctx); err != nil {
		return RunResult{}, err
	}
	ran := make([]string, len(held))
	for i, l := range held {
		ran[i] = l.queue
	}
	// The pass serves its queues and their types as a worker does, so
	// that a cron-only setup does not show its jobs as waiting for a
	// handler, nor its queues as unserved.
	if err := c.serve(ctx, ran); err != nil {
		c.log.Warn("run pass: stamping the served queues and job types failed", "err", err)
	}

	var mu sync.Mutex
	res := RunResult{OK: true, Warnings: append(warnings, c.passWarnings(p, ran)...)}
	for _, w := range res.Warnings {
		c.log.Warn("run pass: "+w, "queues", ran, "max_seconds", p.MaxDuration.Seconds())
	}
	// The pass's jobs are observed like any other worker's (logs, metrics,
	// roll-ups); the pass only adds its own tally.
	hooks := c.workerHooks()
	observe := hooks.Completed
	hooks.Completed = func(job sluicetype.JobRow, o worker.Result, ran time.Duration) {
		observe(job, o, ran)
		mu.Lock()
		defer mu.Unlock()
		res.count(outcomeOf(o))
	}
	passes := make([]worker.Queue, len(ran))
	for i, name := range ran {
		passes[i] = c.passQueue(name, types, p)
	}
	pool := worker.New(worker.Config{
		Driver:   c.drv,
		Queues:   passes,
		Run:      c.run,
		LeaseFor: c.leaseFor,
		Watchdog: c.watchdogFor,
		Fail:     c.stuckFailure,
		Circuit:  c.circuitFor,
		Logger:   c.log,
		Hooks:    hooks,
		Clock:    c.cfg.Clock,
	})
	// The deadline ends the claims only: the jobs' contexts do not derive
	// from runCtx.
	pool.Start(runCtx)
	drained := pool.Drained()
	select {
	case <-drained:
	case <-runCtx.Done():
		if n := pool.Running(); n > 0 && ctx.Err() == nil {
			c.log.Info("run pass deadline reached; claiming stopped, waiting for running jobs to finish",
				"queues", ran, "running", n, "max_seconds", p.MaxDuration.Seconds())
		}
		// Every claimed job starts and runs to its end, unless ctx ends
		// first (a signal, or the caller giving up).
		select {
		case <-drained:
		case <-ctx.Done():
		}
	}
	// With ctx ended, Stop interrupts what still runs as a worker
	// shutdown does; otherwise nothing is left to stop.
	pool.Stop(ctx)
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

// renewRunLock renews the pass's run lock every third of its TTL until the
// returned func is called.
func (c *Client) renewRunLock(ctx context.Context, lp driver.LeaseParams) (stop func()) {
	rctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	done := make(chan struct{})
	go func() {
		defer close(done)
		service.Every(rctx, lp.TTL/3, func(rctx context.Context) {
			if l, err := c.drv.AcquireLease(rctx, lp); err != nil && rctx.Err() == nil {
				c.log.Warn("renewing the run lock failed", "lock", lp.Name, "err", err)
			} else if err == nil && !l.Held {
				c.log.Warn("the run lock was taken over while the pass ran", "lock", lp.Name, "holder", l.Holder)
			}
		})
	}()
	return func() { cancel(); <-done }
}

// passQueue is the bounded claim of one queue of a pass: in turns when
// the queue is fair, within its running caps (the types' caps hold in any
// queue) and its cluster-wide rate, with the longest lease of its types.
func (c *Client) passQueue(name string, types []string, p RunParams) worker.Queue {
	qc := c.cfg.Queues[name]
	concurrency := p.Concurrency
	if concurrency <= 0 {
		concurrency = max(qc.Concurrency, 1)
	}
	pass := worker.Queue{Name: name, Types: types, Concurrency: concurrency, MaxJobs: p.MaxJobs,
		Fair: qc.Fair, Limits: c.limitsOf(qc), Pace: c.paceOf(qc)}
	lease := c.leaseFor(p.Type)
	for _, q := range c.queueList() {
		if q.Name == name {
			lease = max(lease, q.Lease)
			pass.ClusterRate, pass.ClusterBurst = q.ClusterRate, q.ClusterBurst
		}
	}
	pass.Lease = lease
	return pass
}

// passQueues are the queues a pass runs, in name order, and a warning
// when they hold none of the config's jobs: the queue asked for, or else
// every queue that types are configured for. A pass asked for a queue no
// type is configured for says so, so that a crontab line with the wrong
// queue does not answer done:0 forever in silence.
func (c *Client) passQueues(queue string, types []string) ([]string, []string) {
	configured := map[string]bool{}
	for _, name := range types {
		configured[c.cfg.Types[name].Queue] = true
	}
	all := make([]string, 0, len(configured))
	for q := range configured {
		all = append(all, q)
	}
	sort.Strings(all)
	if queue == "" {
		return all, nil
	}
	if configured[queue] {
		return []string{queue}, nil
	}
	return []string{queue}, []string{fmt.Sprintf("no job type of this config is configured for queue %s (they are for %s): the pass ran none of their queues and claims only jobs of theirs sent to %s explicitly; leave the queue out to run the configured ones",
		queue, strings.Join(all, ", "), queue)}
}

// passWarnings names the types a pass may run whose timeout is longer than
// its window: known here, and not at config load, because the window is
// the caller's (a crontab line).
func (c *Client) passWarnings(p RunParams, queues []string) []string {
	var out []string
	for name, t := range c.cfg.Types {
		if !slices.Contains(queues, t.Queue) || (p.Type != "" && name != p.Type) || t.Timeout <= p.MaxDuration {
			continue
		}
		out = append(out, fmt.Sprintf("type %s: timeout %s is longer than the pass's max_seconds %s; a job of it may keep the pass running until it ends",
			name, t.Timeout, p.MaxDuration))
	}
	sort.Strings(out)
	return out
}

func randomHex() string {
	b := make([]byte, 6)
	rand.Read(b)
	return hex.EncodeToString(b)
}
