package worker

import (
	"context"
	"errors"
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
		claimCtx, cancel := pr.p.reach.bound(context.WithoutCancel(ctx), callTimeout(pr.q.Lease))
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
			waited := pr.p.reach.retryWait(ctx, &errWait, retryMax)
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
		// The jobs that can start at once take their handler slots now, in
		// claim order; the others wait for one, marked as not started.
		held := pr.takeRunNow(len(jobs))
		marked := pr.markPrefetched(ctx, token, jobs[held:])
		for i, j := range jobs {
			pr.start(j, start, i < held, i >= held && marked)
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
			pctx, cancel := pr.p.reach.bound(ctx, callTimeout(pr.q.Lease))
			runnable, err := pr.probe.Runnable(pctx, driver.RunnableParams{Queue: pr.q.Name, Types: pr.q.Types})
			cancel()
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
		timeout := callTimeout(pr.q.Lease)
		if ctx.Err() != nil {
			// Shutting down: one short try, so that a database that is
			// down does not hold up the exit.
			timeout = releaseAtStop
		}
		rctx, cancel := pr.p.reach.bound(context.WithoutCancel(ctx), timeout)
		n, err := pr.p.cfg.Driver.ReleaseClaim(rctx, driver.ReleaseClaimParams{Token: token})
		cancel()
		if err == nil {
			if n > 0 {
				// The claim had committed, all of it: nothing of it can
				// commit later.
				pr.p.log.Warn("a failed claim had committed; its jobs are back in the queue, uncharged", "queue", pr.q.Name, "jobs", n)
			} else {
				pr.releaseLate(token)
			}
			return true
		}
		if ctx.Err() != nil {
			pr.p.log.Warn("shutting down before a failed claim could be handed back; if it committed, its jobs run once their lease expires",
				"queue", pr.q.Name, "err", err)
			return false
		}
		pr.p.log.Error("handing back a failed claim failed; retrying", "queue", pr.q.Name, "err", err)
		if !pr.p.reach.retryWait(ctx, &wait, retryMax) {
			return false
		}
	}
}

// lateClaimChecks are when a failed claim that release found nothing of
// is handed back again: a claim cut on the client can still commit on the server after
// that hand-back ran. On PostgreSQL the statement runs on until the cancel
// request lands, which pgx sends on a connection of its own after the call
// returned; on MySQL a COMMIT sent before the cut may still be writing.
// Its jobs would then sit in processing under a token nobody holds,
// charged an attempt, until their lease expired, and a job allowed one
// attempt would fail without having run. A CI run on a saturated machine
// was left with one so after a graceful shutdown.
var lateClaimChecks = []time.Duration{time.Second, 10 * time.Second}

// releaseLate hands a failed claim back again at each of lateClaimChecks,
// and once more at shutdown, after the last outcomes are written, if the
// checks have not all run by then. Each hand-back is fenced by the claim's
// token, which names only jobs this process never received, so a late one
// takes nothing from anyone.
func (pr *producer) releaseLate(token string) {
	p := pr.p
	p.bgWG.Add(1)
	go func() {
		defer p.bgWG.Done()
		for _, after := range p.lateChecks {
			stopping := !service.Sleep(p.bgCtx, after)
			timeout := callTimeout(pr.q.Lease)
			if stopping {
				timeout = releaseAtStop
			}
			rctx, cancel := p.reach.bound(context.Background(), timeout)
			n, err := p.cfg.Driver.ReleaseClaim(rctx, driver.ReleaseClaimParams{Token: token})
			cancel()
			switch {
			case err != nil:
				p.log.Warn("handing a failed claim back again failed; if it committed late, its jobs run once their lease expires",
					"queue", pr.q.Name, "err", err)
			case n > 0:
				p.log.Warn("a failed claim committed after it was handed back; its jobs are back in the queue, uncharged",
					"queue", pr.q.Name, "jobs", n)
			}
			if stopping {
				return
			}
		}
	}()
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

// takeRunNow takes up to n free handler slots without waiting. A slot a
// waiting job could take is handed to it directly, never left free, so
// these take no waiting job's turn.
func (pr *producer) takeRunNow(n int) int {
	for i := range n {
		select {
		case <-pr.run:
		default:
			return i
		}
	}
	return n
}

// markPrefetched marks jobs, which will wait for a handler slot, as not
// started (driver.Driver Prefetched), so that if this process dies before
// they start the rescue gives their attempt back. It reports false when
// the mark failed: they are then charged as before.
func (pr *producer) markPrefetched(ctx context.Context, token string, jobs []sluicetype.JobRow) bool {
	if len(jobs) == 0 {
		return false
	}
	ids := make([]int64, len(jobs))
	for i, j := range jobs {
		ids[i] = j.ID
	}
	mctx, cancel := pr.p.reach.bound(context.WithoutCancel(ctx), callTimeout(pr.q.Lease))
	defer cancel()
	if err := pr.p.cfg.Driver.Prefetched(mctx, driver.PrefetchedParams{Token: token, IDs: ids}); err != nil {
		pr.p.log.Warn("marking prefetched jobs failed; a crash before they start charges their attempt", "queue", pr.q.Name, "jobs", len(ids), "err", err)
		return false
	}
	return true
}

// start runs one claimed job in its own goroutine. claimedAt is when the
// claim that leased it began; hasRun, that it holds a handler slot
// already; prefetched, that it is marked as not started (markPrefetched),
// so that its start is recorded first.
func (pr *producer) start(j sluicetype.JobRow, claimedAt time.Time, hasRun, prefetched bool) {
	p := pr.p
	lease := p.cfg.LeaseFor(j.Type)
	ctx, cancel := context.WithCancelCause(context.Background())
	x := &running{job: j, lease: lease, lastBeat: claimedAt, claimed: p.cfg.Clock.Now(), cancel: cancel, done: make(chan struct{}),
		watch: p.watchdogOf(j)}
	// An attempt of the same job still alive here lost its lease (this
	// claim could not have taken the job otherwise): it is told to stop,
	// and this one waits for it, so that the job never runs twice at once
	// in this process.
	stale := p.running.add(x)
	for _, s := range stale {
		p.leaseLost(s, "re-claimed while its handler still ran")
	}
	p.jobWG.Add(1)
	go func() {
		defer p.jobWG.Done()
		defer p.running.ended(x)
		defer func() { pr.slots <- struct{}{} }()
		if !p.waitStale(ctx, x, stale) {
			if hasRun {
				pr.run <- struct{}{}
			}
			cancel(nil)
			p.finishObserved(x, Result{Status: sluicetype.StatusPending, Refund: true, Delay: x.lease}, 0)
			return
		}
		if !pr.acquireRun(p.stopping, hasRun) {
			// A prefetched job that never started goes straight back,
			// observed (a pass counts it as requeued).
			cancel(nil)
			p.finishObserved(x, Result{Status: sluicetype.StatusPending, Refund: true}, 0)
			return
		}
		var startErr error
		if prefetched {
			startErr = p.started(ctx, x) // a lost lease cancels ctx with ErrLeaseLost
		}
		if errors.Is(context.Cause(ctx), ErrCancelled) {
			// Cancelled before it started: nothing ran, and the cancel
			// has written its outcome.
			pr.run <- struct{}{}
			return
		}
		if errors.Is(context.Cause(ctx), ErrLeaseLost) || p.running.unrenewed(x, p.cfg.Clock.Now()) {
			// Lost while it waited to start, or about to be: it must not
			// start now. A prefetched job whose start was not recorded
			// goes back uncharged when its lease passes.
			p.leaseLost(x, "not renewed before its start")
			pr.run <- struct{}{}
			return
		}
		if startErr != nil {
			// It runs: only a crash during this run would go uncharged.
			p.log.Warn("recording a prefetched job's start failed; running it", append(p.jobAttrs(x), "err", startErr)...)
		}
		var pol driver.CircuitPolicy
		if p.cfg.Circuit != nil {
			pol = p.cfg.Circuit(j.Type)
		}
		var g admission
		if pol.Threshold > 0 {
			// Checked at the start, not at the claim: a prefetched job
			// whose circuit opened meanwhile goes back uncharged too.
			actx, acancel := p.reach.bound(ctx, callTimeout(lease))
			g = p.admit(actx, j, pol)
			acancel()
			if !g.run {
				pr.run <- struct{}{}
				cancel(nil)
				p.finish(x, Result{Status: sluicetype.StatusPending, Refund: true, Delay: g.wait})
				return
			}
		}
		began := p.cfg.Clock.Now()
		prog := newProgress(ctx, p, x)
		p.running.arm(x, began)
		o := safeRun(prog.with(ctx), p.cfg.Run, j)
		cause := context.Cause(ctx)
		cancel(nil)
		// The last report is written unless the attempt lost its lease or
		// was cancelled (its entry, if any, is then the rescue's or the
		// cancel's), or the handler holds its completing transaction open:
		// on SQLite that holds the one writer lock, which the write would
		// wait on until its deadline.
		progress := prog.finish(!errors.Is(cause, ErrLeaseLost) && !errors.Is(cause, ErrCancelled) && o.Tx == nil)
		var stuck *StuckError
		switch {
		case errors.Is(cause, ErrLeaseLost):
			if o.Tx != nil {
				o.Tx.Rollback() // its completion would be fenced out
			}
			pr.run <- struct{}{}
			return // already counted and logged; any write would be fenced out
		case errors.Is(cause, ErrCancelled):
			if o.Tx != nil {
				o.Tx.Rollback()
			}
			pr.run <- struct{}{}
			p.cancelReturned(x, o)
			return // the job is cancelled already; any write would be fenced out
		case errors.As(cause, &stuck):
			// The handler has returned: only now is the attempt's outcome
			// written, so a retry never overlaps it.
			if o.Tx != nil {
				o.Tx.Rollback()
			}
			o = p.stuckOutcome(x, stuck, o)
		case cause == ErrShutdown && o.Status != sluicetype.StatusSuccess:
			if o.Tx != nil {
				o.Tx.Rollback()
			}
			rctx, rcancel := p.reach.bound(context.Background(), callTimeout(lease))
			o = p.interrupted(rctx, x, Interrupted)
			rcancel()
		}
		o.Progress = progress
		if progress == nil && o.ProgressElsewhere && o.Tx == nil {
			o.Progress = p.rowProgress(x)
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

// rowProgress reads the progress on x's row: what its receiver reported
// through the API (POST /v1/jobs/{id}/progress), fenced by x's lease token
// and cleared by x's claim, so x's own. nil when there is none, or when
// the read fails: the attempt's history entry then goes without, and the
// outcome is written all the same.
func (p *Pool) rowProgress(x *running) *sluicetype.Progress {
	ctx, cancel := p.reach.bound(context.Background(), callTimeout(x.lease))
	defer cancel()
	j, err := p.cfg.Driver.GetJob(ctx, x.job.ID)
	if err != nil {
		p.log.Debug("reading a job's progress for its history failed", append(p.jobAttrs(x), "err", err)...)
		return nil
	}
	return j.Progress
}

// started records that prefetched x begins its run, so that a rescue
// charges it from now on; a lease found lost is reported, which cancels
// x. It returns the write's error, if it failed.
func (p *Pool) started(ctx context.Context, x *running) error {
	sctx, cancel := p.reach.bound(ctx, callTimeout(x.lease))
	held, err := p.cfg.Driver.Started(sctx, driver.StartedParams{Token: x.job.LockedBy, ID: x.job.ID})
	cancel()
	if err == nil && !held {
		// Cancelled (by an operator, or by its deadline's sweep) or
		// rescued: either way it must not start.
		p.lost(ctx, []*running{x}, "start")
	}
	return err
}

// waitStale waits for the stale attempts of x's job to return, and
// reports false, to hand x back uncharged, when one is still running after
// the pool's Grace (a handler that ignores its context), when the pool
// stops meanwhile, or when x's own lease is lost.
func (p *Pool) waitStale(ctx context.Context, x *running, stale []*running) bool {
	if len(stale) == 0 {
		return true
	}
	bound := time.NewTimer(p.cfg.Grace)
	defer bound.Stop()
	for _, s := range stale {
		select {
		case <-s.done:
		case <-bound.C:
			p.log.Error("a stale attempt of a re-claimed job did not return after its cancellation; handing the job back",
				append(p.jobAttrs(x), "wait", p.cfg.Grace)...)
			return false
		case <-p.stopping:
			return false
		case <-ctx.Done():
			return false
		}
	}
	return true
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
	if p.running.settle(x, AttemptOutcome(o)) {
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

// acquireRun waits for a handler slot, unless held says it has one, and
// reports false once the pool is stopping: shutdown wins even when a slot
// is free at the same moment (a held slot is then given back).
func (pr *producer) acquireRun(stopping <-chan struct{}, held bool) bool {
	select {
	case <-stopping:
		if held {
			pr.run <- struct{}{}
		}
		return false
	default:
	}
	if held {
		return true
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
	tctx, cancel := pr.p.reach.bound(ctx, callTimeout(pr.q.Lease))
	n, err := pr.p.cfg.Driver.TakeTokens(tctx, driver.TakeTokensParams{Name: pr.bucketName(),
		Rate: pr.q.ClusterRate, Burst: pr.q.ClusterBurst, Want: free})
	cancel()
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
	ctx, cancel := pr.p.reach.bound(context.Background(), callTimeout(pr.q.Lease))
	defer cancel()
	if err := pr.p.cfg.Driver.ReturnTokens(ctx, driver.ReturnTokensParams{Name: pr.bucketName(), N: n,
		Rate: pr.q.ClusterRate, Burst: pr.q.ClusterBurst}); err != nil {
		pr.p.log.Warn("returning unused rate-limit tokens failed", "queue", pr.q.Name, "tokens", n, "err", err)
	}
}
