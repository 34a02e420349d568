package bench_test

import (
	"sync"
	"testing"
	"time"

	"github.com/sluicehq/sluice/cmd/sluice/internal/bench"
	"github.com/sluicehq/sluice/internal/testkit/testdb"
)

// TestSustained checks that the sustained mode holds its rate while the
// workers run and reports every interval: 900 jobs at 300/s. The rate is
// an upper bound that holds on any machine: by each interval's end no more
// than 300 jobs a second since the start were enqueued, and the last job
// not before 3 s. A busy machine may send later than due (the enqueuer
// then catches up), so no interval's count has a floor.
func TestSustained(t *testing.T) {
	testdb.ForEach(t, func(t *testing.T, name string) {
		_, url, prefix, ctx := benchDB(t, name)
		const jobs, rate = 900, 300
		res, err := bench.Run(ctx, bench.Config{URL: url, Prefix: prefix, Jobs: jobs, Concurrency: 20,
			Sustained: true, Rate: rate, Interval: 500 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		if res.Mode != "sustained" || res.Succeeded != jobs || res.Rate != rate {
			t.Errorf("sustained run reported %+v", res)
		}
		// The enqueuer keeps to the rate: 900 jobs take 3 s, not less.
		if res.InsertPerS > rate*1.01 || res.InsertPerS <= 0 {
			t.Errorf("enqueued %.0f jobs/s, want at most %d", res.InsertPerS, rate)
		}
		if len(res.Intervals) < 2 {
			t.Fatalf("%d intervals, want several: %+v", len(res.Intervals), res.Intervals)
		}
		var worked, enqueued int64
		for i, iv := range res.Intervals {
			worked += iv.Worked
			enqueued += iv.Enqueued
			if limit := int64(rate*iv.EndS) + 1; enqueued > limit {
				t.Errorf("by interval %d's end (%.3f s) %d jobs enqueued, more than the rate allows (%d)", i, iv.EndS, enqueued, limit)
			}
			if iv.Worked > 0 && (iv.LatencyP50 <= 0 || iv.LatencyP99 < iv.LatencyP50) {
				t.Errorf("interval %d latency p50 %v ms, p99 %v ms", i, iv.LatencyP50, iv.LatencyP99)
			}
			if iv.RSSMB <= 0 || iv.Backlog < 0 {
				t.Errorf("interval %d: %+v", i, iv)
			}
		}
		if last := res.Intervals[len(res.Intervals)-1]; last.EndS < float64(jobs)/rate {
			t.Errorf("the last interval ends at %.3f s: %d jobs at %d/s cannot all be worked before %.1f s", last.EndS, jobs, rate, float64(jobs)/rate)
		}
		if worked != jobs || enqueued != jobs {
			t.Errorf("intervals add up to %d worked and %d enqueued, want %d", worked, enqueued, jobs)
		}
	})
}

// TestWorkOnly checks the split bulk run that the scaling measurement
// uses: one enqueue-only run leaves a backlog, two work-only runs share
// it, each stops once the backlog is gone, and every job runs once.
func TestWorkOnly(t *testing.T) {
	testdb.ForEach(t, func(t *testing.T, name string) {
		d, url, prefix, ctx := benchDB(t, name)
		enq, err := bench.Run(ctx, bench.Config{URL: url, Prefix: prefix, Jobs: 2000, Concurrency: 1, EnqueueOnly: true})
		if err != nil {
			t.Fatal(err)
		}
		if enq.Mode != "enqueue-only" || enq.InsertPerS <= 0 {
			t.Errorf("enqueue-only run reported %+v", enq)
		}
		res := make([]*bench.Result, 2)
		errs := make([]error, 2)
		var wg sync.WaitGroup
		for i := range res {
			wg.Go(func() {
				res[i], errs[i] = bench.Run(ctx, bench.Config{URL: url, Prefix: prefix, Concurrency: 10, WorkOnly: true})
			})
		}
		wg.Wait()
		var worked int
		for i, r := range res {
			if errs[i] != nil {
				t.Fatalf("work-only run %d: %v", i, errs[i])
			}
			if r.Mode != "work-only" || r.WorkEnded <= r.WorkStarted {
				t.Errorf("work-only run %d reported %+v", i, r)
			}
			worked += r.Jobs
		}
		if worked != 2000 {
			t.Errorf("the work-only runs worked %d jobs, want 2000", worked)
		}
		// Every job ran once and succeeded; the tables are still there.
		var n int
		q := "SELECT COUNT(*) FROM " + prefix + "jobs WHERE status = 'success' AND attempts = 1"
		if err := d.DB().QueryRowContext(ctx, q).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n != 2000 {
			t.Errorf("%d jobs succeeded at their first attempt, want 2000", n)
		}
		if _, err := bench.Run(ctx, bench.Config{URL: url, Prefix: prefix, Jobs: 1, Concurrency: 1}); err != nil {
			t.Errorf("a bench run dropping the kept tables: %v", err)
		}
	})
}
