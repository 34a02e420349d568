package worker

import (
	"context"
	"fmt"
	"runtime/debug"
	"time"

	"golang.org/x/time/rate"

	"github.com/sluicehq/sluice/driver"
	"github.com/sluicehq/sluice/internal/service"
	"github.com/sluicehq/sluice/sluicetype"
)

// producer claims jobs for one queue, in batches sized to its free slots.
type producer struct {
	p     *Pool
	q     Queue
	limit *rate.Limiter // nil: no rate limit
	// slots holds a token per job this producer may hold a lease on: its
	// concurrency plus as many prefetched jobs, so that the next batch is
	// claimed while the current one runs. run holds a token per handler
	// that may run at once: the concurrency.
	slots chan struct{}
	run   chan struct{}
	wakeC chan struct{}
	// probe, if set, is asked while idle whether a claim would find work.
	probe driver.Prober
}

func newProducer(p *Pool, q Queue) *producer {
	prefetch := q.Concurrency
	if q.MaxJobs > 0 || q.ClusterRate > 0 || q.Pace > 0 {
		// A bounded pass claims only what it can run now; so does a
		// cluster-rated or paced queue, whose tokens are spent at the
		// claim: a prefetched job would start later, bunched with the
		// next ones.
		prefetch = 0
	}
	pr := &producer{p: p, q: q, slots: make(chan struct{}, q.Concurrency+prefetch),
		run: make(chan struct{}, q.Concurrency), wakeC: make(chan struct{}, 1)}
	if _, pushes := p.cfg.Driver.(driver.Listener); !pushes {
		pr.probe, _ = p.cfg.Driver.(driver.Prober)
	}
	if q.Rate > 0 {
		// A burst of one second's worth lets a rate-limited queue still
		// claim in batches.
		pr.limit = rate.NewLimiter(rate.Limit(q.Rate), max(1, int(q.Rate)))
	}
	for i := 0; i < q.Concurrency+prefetch; i++ {
		pr.slots <- struct{}{}
	}
	for i := 0; i < q.Concurrency; i++ {
		pr.run <- struct{}{}
	}
	return pr
}

func (pr *producer) wake() {
	select {
	case pr.wakeC <- struct{}{}:
	default:
	}
}

func (pr *producer) loop(ctx context.Context) {
	poll := pr.p.cfg.PollMin
	errWait := retryMin
	claimed := 0
	busy := false         // the last claim was full: the queue has a backlog
	var started time.Time // when a claim last got jobs, for Pace
	for {
		if pr.q.MaxJobs > 0 && claimed >= pr.q.MaxJobs {
			return
		}
		free, ok := pr.takeSlots(ctx, busy)
		if !ok {
			return
		}
		if pr.q.MaxJobs > 0 {
			if left := pr.q.MaxJobs - claimed; free > left {
				pr.giveBack(free - left)
				free = left
			}
		}
		if pr.limit != nil {
			n, ok := pr.allowed(ctx, free)
			if !ok {
				pr.giveBack(free)
				return
			}
			pr.giveBack(free - n)
			free = n
		}
		if pr.p.paused.is(pr.q.Name) {
			pr.giveBack(free)
			if pr.q.MaxJobs > 0 {
				return // a bounded pass skips a paused queue
			}
			if !service.Sleep(ctx, pr.p.paused.interval) {
				return
			}
			continue
		}
		tokens := 0
		if pr.q.ClusterRate > 0 {
			n, ok := pr.takeTokens(ctx, free)
			if !ok {
				return
			}
			if n == 0 {
				continue
			}
			pr.giveBack(free - n)
			free, tokens = n, n
		}
		// A claim is not cancelled by shutdown: one cut off after its
		// commit would leave jobs processing under a lease nobody renews.
		// Claimed jobs that cannot start any more go straight back.
		start := pr.p.cfg.Clock.Now()
		// Every claim gets a token of its own, so that a failed claim's
		// token names only jobs this worker never received.
		token := newToken()
		claimCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		jobs, err := pr.p.cfg.Driver.Claim(claimCtx, driver.ClaimParams{
			Queue: pr.q.Name, Types: pr.q.Types, Limit: free, Lease: pr.q.Lease, Token: token,
			Fair: pr.q.Fair, Limits: pr.q.Limits,
		})
		cancel()
		if err != nil {
			// The claim's rate tokens, if any, are not returned: the
			// database is failing, and they only lower the rate until the
			// bucket refills.
			pr.giveBack(free)
			pr.p.log.Error("claim failed; retrying", "queue", pr.q.Name, "err", err)
			// Wait for the database first: the hand-back needs it, and
			// after an outage the claim that follows then goes at once.
			waited := pr.p.reach.retryWait(ctx, &errWait)
			if !pr.release(ctx, token) || !waited {
				return
			}
			continue
		}
		errWait = retryMin
		if unused := tokens - len(jobs); unused > 0 {
			pr.returnTokens(unused)
		}
		if h := pr.p.cfg.Hooks.Claimed; h != nil {
			h(pr.q.Name, len(jobs), pr.p.cfg.Clock.Since(start))
		}
		pr.giveBack(free - len(jobs))
		for _, j := range jobs {
			pr.start(j)
		}
		claimed += len(jobs)
		if pr.q.MaxJobs > 0 && len(jobs) < free {
			// A bounded pass ends when a claim comes back short and none of
			// its jobs is still in flight. Until then it claims again each
			// time an outcome is written: a short claim alone does not prove
			// the queue empty, as SKIP LOCKED passes over rows that a
			// concurrent write holds (seen on MariaDB while the pass's own
			// outcomes commit), and a retry may already be due again.
			if !pr.waitOutcome(ctx) {
				return
			}
			continue
		}
		busy = len(jobs) == free
		if busy {
			// The queue may hold more: claim again as slots free up.
			poll = pr.p.cfg.PollMin
			continue
		}
		if len(jobs) > 0 {
			poll = pr.p.cfg.PollMin
			started = start
		} else {
			poll = min(poll*2, pr.p.cfg.PollMax)
		}
		if pr.q.Pace > 0 && pr.p.cfg.Clock.Since(started) < time.Second {
			// Short of tokens, most likely: claim again within half a
			// token's refill, so that each token is taken before the
			// next one is due (a bucket at its burst loses the refill).
			poll = max(pr.q.Pace/2, pr.p.cfg.PollMin)
		}
		if !pr.idle(ctx, poll) {
			return
		}
	}
}

// idle waits after a claim that found no backlog: for a wake-up, for poll
// to pass, or, with a probe, until the probe sees a runnable job. The
// first probe comes ProbeEvery after the claim, so that a probe that
// disagrees with the claim costs a claim per ProbeEvery, never a spin. It
// reports false once ctx ends.
func (pr *producer) idle(ctx context.Context, poll time.Duration) bool {
	until := time.After(poll)
	var probeC <-chan time.Time
	if pr.probe != nil {
		t := time.NewTicker(pr.p.cfg.ProbeEvery)
		defer t.Stop()
		probeC = t.C
	}
	for {
		select {
		case <-ctx.Done():
			return false
		case <-pr.wakeC:
			return true
		case <-until:
			return true
		case <-probeC:
			runnable, err := pr.probe.Runnable(ctx, driver.RunnableParams{Queue: pr.q.Name, Types: pr.q.Types})
			if ctx.Err() != nil {
				return false
			}
			// A failed probe hands over to the claim, whose error path
			// knows how to wait out an outage.
			if err != nil || runnable {
				return true
			}
		}
	}
}

// waitOutcome waits until the outcome of one of the pool's jobs has been
// written, and reports false when no job is in flight or ctx ends first.
func (pr *producer) waitOutcome(ctx context.Context) bool {
	gone, n := pr.p.running.left()
	if n == 0 {
		return false
	}
	select {
	case <-gone:
		return true
	case <-ctx.Done():
		return false
	}
}

// releaseAtStop bounds the one try at handing back a failed claim once
// shutdown has begun.
const releaseAtStop = 2 * time.Second

// release hands back the jobs of a failed claim before the next one. The
// error cannot tell whether the claim committed: a connection cut after
// the commit looks like one cut before it, and then the claimed jobs would
// sit in processing, charged an attempt, until their lease expired. The
// worker never received them, so they go back to pending uncharged. It
// retries until the database answers, and reports false if ctx ended
// first; the jobs then wait for their lease to expire, as no one runs them.
func (pr *producer) release(ctx context.Context, token string) bool {
	wait := retryMin
	for {
		timeout := 30 * time.Second
		if ctx.Err() != nil {
			// Shutting down: one short try, so that a database that is
			// down does not hold up the exit.
			timeout = releaseAtStop
		}
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), timeout)
		n, err := pr.p.cfg.Driver.ReleaseClaim(rctx, driver.ReleaseClaimParams{Token: token})
		cancel()
		if err == nil {
			if n > 0 {
				pr.p.log.Warn("a failed claim had committed; its jobs are back in the queue, uncharged", "queue", pr.q.Name, "jobs", n)
			}
			return true
		}
		if ctx.Err() != nil {
			pr.p.log.Warn("shutting down before a failed claim could be handed back; if it committed, its jobs run once their lease expires",
				"queue", pr.q.Name, "err", err)
			return false
		}
		pr.p.log.Error("handing back a failed claim failed; retrying", "queue", pr.q.Name, "err", err)
		if !pr.p.reach.retryWait(ctx, &wait) {
			return false
		}
	}
}

// takeSlots waits for a free slot and takes every free one. When busy, it
// waits up to FetchWait for an eighth of the slots, so that a backlog is
// claimed in large batches while the prefetched jobs keep workers going.
func (pr *producer) takeSlots(ctx context.Context, busy bool) (int, bool) {
	select {
	case <-ctx.Done():
		return 0, false
	case <-pr.slots:
	}
	free := 1
	want := 1
	if busy {
		want = max(1, cap(pr.slots)/8)
	}
	var deadline <-chan time.Time
	for free < pr.p.cfg.MaxClaim {
		select {
		case <-pr.slots:
			free++
			continue
		default:
		}
		if free >= want {
			break
		}
		if deadline == nil {
			deadline = time.After(pr.p.cfg.FetchWait)
		}
		select {
		case <-pr.slots:
			free++
			continue
		case <-deadline:
		case <-ctx.Done():
			pr.giveBack(free)
			return 0, false
		}
		break
	}
	return free, true
}

// allowed waits for the rate limiter to allow one job start, then takes as
// many more as it allows at once, up to free.
func (pr *producer) allowed(ctx context.Context, free int) (int, bool) {
	if err := pr.limit.Wait(ctx); err != nil {
		return 0, false
	}
	n := 1
	for n < free && pr.limit.Allow() {
		n++
	}
	return n, true
}

func (pr *producer) giveBack(n int) {
	for i := 0; i < n; i++ {
		pr.slots <- struct{}{}
	}
}

// start runs one claimed job in its own goroutine.
func (pr *producer) start(j sluicetype.JobRow) {
	p := pr.p
	lease := p.cfg.LeaseFor(j.Type)
	ctx, cancel := context.WithCancelCause(context.Background())
	now := p.cfg.Clock.Now()
	x := &running{job: j, lease: lease, lastBeat: now, claimed: now, cancel: cancel}
	p.running.add(x)
	p.jobWG.Add(1)
	go func() {
		defer p.jobWG.Done()
		defer func() { pr.slots <- struct{}{} }()
		if !pr.acquireRun(p.stopping) {
			// A prefetched job that never started goes straight back,
			// observed (a pass counts it as requeued).
			cancel(nil)
			p.finishObserved(x, Result{Status: sluicetype.StatusPending, Refund: true}, 0)
			return
		}
		var pol driver.CircuitPolicy
		if p.cfg.Circuit != nil {
			pol = p.cfg.Circuit(j.Type)
		}
		var g admission
		if pol.Threshold > 0 {
			// Checked at the start, not at the claim: a prefetched job
			// whose circuit opened meanwhile goes back uncharged too.
			if g = p.admit(ctx, j, pol); !g.run {
				pr.run <- struct{}{}
				cancel(nil)
				p.finish(x, Result{Status: sluicetype.StatusPending, Refund: true, Delay: g.wait})
				return
			}
		}
		began := p.cfg.Clock.Now()
		o := safeRun(ctx, p.cfg.Run, j)
		cause := context.Cause(ctx)
		cancel(nil)
		switch {
		case cause == ErrLeaseLost:
			pr.run <- struct{}{}
			return // already counted and logged; any write would be fenced out
		case cause == ErrShutdown && o.Status != sluicetype.StatusSuccess:
			if o.Tx != nil {
				o.Tx.Rollback()
			}
			rctx, rcancel := context.WithTimeout(context.Background(), 5*time.Second)
			o = p.interrupted(rctx, x, Interrupted)
			rcancel()
		}
		if pol.Threshold > 0 {
			// Before the handler slot is given back: the next job's check
			// must see this failure, or a failing service would get one
			// more call per slot than the breaker promises.
			p.recordCircuit(j, pol, g, o)
		}
		pr.run <- struct{}{}
		p.finishObserved(x, o, p.cfg.Clock.Since(began))
	}()
}

// finishObserved is finish for an attempt that ended here: it is observed
// (logged, counted) before its write. A job that shutdown has already
// requeued was observed there instead.
func (p *Pool) finishObserved(x *running, o Result, took time.Duration) {
	if !p.settle(x, o) {
		return
	}
	if h := p.cfg.Hooks.Completed; h != nil {
		h(x.job, o, took)
	}
	p.write(x, o)
}

// finish writes the outcome of a handler that returned, unless shutdown
// has already requeued its job: that write would be fenced out anyway.
func (p *Pool) finish(x *running, o Result) {
	if p.settle(x, o) {
		p.write(x, o)
	}
}

// settle marks x's handler as returned, and reports false (rolling back
// its transaction) when shutdown has already requeued the job.
func (p *Pool) settle(x *running, o Result) bool {
	if p.running.settle(x) {
		return true
	}
	if o.Tx != nil {
		o.Tx.Rollback()
	}
	return false
}

// write queues the fenced write of a settled outcome.
func (p *Pool) write(x *running, o Result) {
	if o.Tx != nil {
		p.completeInTx(x, o)
		return
	}
	p.completer.add(x, o)
}

// acquireRun waits for a handler slot, and reports false once the pool is
// stopping: shutdown wins even when a slot is free at the same moment.
func (pr *producer) acquireRun(stopping <-chan struct{}) bool {
	select {
	case <-stopping:
		return false
	default:
	}
	select {
	case <-pr.run:
		return true
	case <-stopping:
		return false
	}
}

// safeRun turns a panic that escaped the RunFunc into a transient failure.
func safeRun(ctx context.Context, run RunFunc, j sluicetype.JobRow) (o Result) {
	defer func() {
		if r := recover(); r != nil {
			msg := fmt.Sprintf("panic: %v\n%s", r, debug.Stack())
			o = Result{Status: sluicetype.StatusPending, Error: &msg, Transient: true}
		}
	}()
	return run(ctx, j)
}

// bucketName is the queue's token bucket in the database.
func (pr *producer) bucketName() string { return "queue:" + pr.q.Name }

// takeTokens takes up to free tokens from the queue's cluster-wide bucket.
// With none to take it gives the slots back, waits about one token's
// refill and reports 0, so that the loop takes its slots again; it reports
// false, with the slots given back, once ctx ends.
func (pr *producer) takeTokens(ctx context.Context, free int) (int, bool) {
	n, err := pr.p.cfg.Driver.TakeTokens(ctx, driver.TakeTokensParams{Name: pr.bucketName(),
		Rate: pr.q.ClusterRate, Burst: pr.q.ClusterBurst, Want: free})
	if err == nil && n > 0 {
		return n, true
	}
	pr.giveBack(free)
	if err != nil {
		if ctx.Err() != nil {
			return 0, false
		}
		pr.p.log.Error("taking rate-limit tokens failed; retrying", "queue", pr.q.Name, "err", err)
	}
	wait := time.Duration(float64(time.Second) / pr.q.ClusterRate)
	if err != nil {
		wait = max(wait, retryMin)
	}
	return 0, service.Sleep(ctx, min(max(wait, pr.p.cfg.PollMin), pr.p.cfg.PollMax))
}

// returnTokens puts back the tokens of a claim that found fewer jobs, so
// that an idle queue does not spend its cluster's rate. A failure only
// costs those tokens until the bucket refills.
func (pr *producer) returnTokens(n int) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := pr.p.cfg.Driver.ReturnTokens(ctx, driver.ReturnTokensParams{Name: pr.bucketName(), N: n,
		Rate: pr.q.ClusterRate, Burst: pr.q.ClusterBurst}); err != nil {
		pr.p.log.Warn("returning unused rate-limit tokens failed", "queue", pr.q.Name, "tokens", n, "err", err)
	}
}
