package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/internal/service"
)

// Interval is the sustained mode's figures for one interval of the run.
type Interval struct {
	// EndS is the interval's end in seconds from the workers' start; the
	// last interval may be shorter than the others.
	EndS     float64 `json:"end_s"`
	Enqueued int64   `json:"enqueued"`
	Worked   int64   `json:"worked"`
	// Backlog is every job enqueued so far less every job worked.
	Backlog  int64   `json:"backlog"`
	WorkPerS float64 `json:"work_per_s"`
	// Latency of the jobs whose handler started in the interval, from the
	// start of the EnqueueMany call that carried them.
	LatencyP50 float64 `json:"latency_p50_ms"`
	LatencyP99 float64 `json:"latency_p99_ms"`
	RSSMB      float64 `json:"rss_mb"`
}

// feedTick is how often the sustained mode's enqueuer sends what has come
// due: each tick one EnqueueMany of rate × elapsed less what is sent.
const feedTick = 10 * time.Millisecond

// sustainedRun starts the workers, then enqueues Jobs at Rate per second
// from a goroutine beside them, in one batch per feedTick so that the
// rate can exceed one client's round trips, and reports each Interval.
// Maintenance (purge, retention) runs at the client's defaults.
func (r *runner) sustainedRun(ctx context.Context, res *Result) error {
	total := newHistogram()
	var cur atomic.Pointer[histogram]
	cur.Store(newHistogram())
	c, err := r.client(func(_ context.Context, job *sluice.Job) error {
		us, err := sinceEnqueue(job)
		if err != nil {
			return sluice.Permanent(err)
		}
		// A handler that loaded the interval's histogram just before the
		// swap adds to the old one; one job in thousands, left out.
		cur.Load().add(us)
		total.add(us)
		r.finished()
		return nil
	})
	if err != nil {
		return fmt.Errorf("bench client: %w", err)
	}
	var enqueued atomic.Int64
	t0 := time.Now()
	// The snapshots run until the run ends, however it ends: Stop, not
	// the run's context, ends them.
	var snaps service.Runner
	snaps.Start(context.Background(), func(ctx context.Context) {
		t := time.NewTicker(r.cfg.Interval)
		defer t.Stop()
		var lastEnq, lastDone int64
		lastT := t0
		snap := func() {
			h := cur.Swap(newHistogram())
			enq, done := enqueued.Load(), r.done.Load()
			// Read after the counts: an interval's end is never earlier
			// than what it counted, however late this goroutine runs.
			now := time.Now()
			res.Intervals = append(res.Intervals, Interval{EndS: now.Sub(t0).Seconds(), Enqueued: enq - lastEnq,
				Worked: done - lastDone, Backlog: enq - done, WorkPerS: float64(done-lastDone) / now.Sub(lastT).Seconds(),
				LatencyP50: h.quantileMS(0.50), LatencyP99: h.quantileMS(0.99), RSSMB: rssMB("VmRSS:")})
			lastEnq, lastDone, lastT = enq, done, now
		}
		for {
			select {
			case <-t.C:
				snap()
			case <-ctx.Done():
				if r.done.Load() > lastDone {
					snap()
				}
				return
			}
		}
	})
	feedErr := make(chan error, 1)
	var enqSecs float64 // written before feedErr receives, read after
	workSecs, err := r.workWith(ctx, c, func(ctx context.Context) {
		var ferr error
		enqSecs, ferr = r.feed(ctx, c, t0, &enqueued)
		feedErr <- ferr
	}, feedErr)
	snaps.Stop()
	if err != nil {
		return err
	}
	res.InsertPerS = float64(r.cfg.Jobs) / enqSecs
	res.WorkPerS = float64(r.cfg.Jobs) / workSecs
	res.LatencyP50, res.LatencyP99 = total.quantileMS(0.50), total.quantileMS(0.99)
	return nil
}

// feed enqueues Jobs at Rate per second from t0 and returns the seconds it
// took. Jobs come due continuously; each tick sends those due in batches
// of at most batchSize. When the database falls behind, the next tick
// sends more: the offered rate stays the configured one.
func (r *runner) feed(ctx context.Context, c *sluice.Client, t0 time.Time, enqueued *atomic.Int64) (float64, error) {
	t := time.NewTicker(feedTick)
	defer t.Stop()
	ps := make([]sluice.EnqueueParams, 0, batchSize)
	for sent := 0; sent < r.cfg.Jobs; {
		due := min(r.cfg.Jobs, int(time.Since(t0).Seconds()*r.cfg.Rate))
		for sent < due {
			start := time.Now()
			p := json.RawMessage(`{"t":"` + strconv.FormatInt(start.UnixNano(), 10) + `"}`)
			ps = ps[:0]
			for range min(batchSize, due-sent) {
				ps = append(ps, sluice.EnqueueParams{Type: jobType, Payload: p})
			}
			// Counted when sent: a worker can run a job before the call
			// that inserted it returns, and the backlog is never negative.
			enqueued.Add(int64(len(ps)))
			if _, err := c.EnqueueMany(ctx, ps); err != nil {
				return 0, fmt.Errorf("enqueue batch at job %d: %w", sent, err)
			}
			sent += len(ps)
		}
		if sent == r.cfg.Jobs {
			break
		}
		select {
		case <-ctx.Done():
			return 0, ctx.Err()
		case <-t.C:
		}
	}
	return time.Since(t0).Seconds(), nil
}

// sinceEnqueue returns the microseconds since the enqueue time that a
// latency or sustained job carries in its payload.
func sinceEnqueue(job *sluice.Job) (int64, error) {
	now := time.Now()
	var p struct {
		T string `json:"t"`
	}
	if err := job.Decode(&p); err != nil {
		return 0, err
	}
	ns, err := strconv.ParseInt(p.T, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("enqueue time %q: %w", p.T, err)
	}
	return now.Sub(time.Unix(0, ns)).Microseconds(), nil
}
