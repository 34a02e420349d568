package sluice_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/driver"
	"github.com/sluicehq/sluice/internal/testkit/testdb"
	"github.com/sluicehq/sluice/sluicetype"
)

func TestRunOnce(t *testing.T) {
	testdb.ForEachDriver(t, func(t *testing.T, d driver.Driver) {
		ctx := context.Background()
		var runs sync.Map
		var twice atomic.Int32
		release := make(chan struct{})
		hanging := make(chan struct{}, 1)
		c, err := sluice.NewClient(sluice.Config{Driver: d, Types: map[string]sluice.Type{
			"ok": {Handler: sluice.HandlerFunc(func(ctx context.Context, j *sluice.Job) error {
				if _, dup := runs.LoadOrStore(j.ID, true); dup {
					twice.Add(1)
				}
				if j.Key == "hold" {
					<-release
				}
				return nil
			})},
			"bad": {Handler: sluice.HandlerFunc(func(ctx context.Context, j *sluice.Job) error { return errors.New("nope") })},
			"slow": {Timeout: time.Second, Handler: sluice.HandlerFunc(func(ctx context.Context, j *sluice.Job) error {
				<-ctx.Done()
				return ctx.Err()
			})},
			"hang": {Handler: sluice.HandlerFunc(func(ctx context.Context, j *sluice.Job) error {
				hanging <- struct{}{}
				<-ctx.Done()
				return ctx.Err()
			})},
		}})
		require.NoError(t, err)
		ps := []sluice.EnqueueParams{{Type: "ok", Key: "hold"}}
		for i := 0; i < 30; i++ {
			ps = append(ps, sluice.EnqueueParams{Type: "ok"})
		}
		ps = append(ps, sluice.EnqueueParams{Type: "bad"})
		_, err = c.EnqueueMany(ctx, ps)
		require.NoError(t, err)

		// A pass holding the run lock makes a concurrent pass skip.
		first := make(chan sluice.RunResult)
		go func() {
			r, err := c.RunOnce(ctx, sluice.RunParams{Type: "ok", MaxJobs: 10, MaxDuration: 10 * time.Second})
			require.NoError(t, err)
			first <- r
		}()
		require.Eventually(t, func() bool { _, ok := runs.Load(int64(1)); return ok }, time.Minute, 10*time.Millisecond)
		r, err := c.RunOnce(ctx, sluice.RunParams{Type: "ok", MaxJobs: 10})
		require.NoError(t, err)
		require.Equal(t, sluice.RunResult{OK: true, Skipped: "another run is active"}, r)
		close(release)
		require.Equal(t, sluice.RunResult{OK: true, Done: 10}, <-first)

		// Passes respect max_jobs and drain the queue.
		r, err = c.RunOnce(ctx, sluice.RunParams{Type: "ok", MaxJobs: 15, Concurrency: 4})
		require.NoError(t, err)
		require.Equal(t, sluice.RunResult{OK: true, Done: 15}, r)
		r, err = c.RunOnce(ctx, sluice.RunParams{MaxJobs: 50, Concurrency: 3})
		require.NoError(t, err)
		require.Equal(t, sluice.RunResult{OK: true, Done: 6, Retried: 1}, r)
		require.Zero(t, twice.Load())

		// The deadline stops the claims only: a job that runs over is cut
		// by its type's timeout, a failed attempt, and the pass waits for
		// it; the answer flags the type whose timeout exceeds the window.
		// A loaded machine may take the pass's whole 300 ms window to
		// set up, claiming nothing: such a pass answers done 0 and the
		// next one tries again; the pass that claims the job must wait
		// for its timeout (a lower bound, which load cannot break).
		res, err := c.Enqueue(ctx, sluice.EnqueueParams{Type: "slow", MaxAttempts: 2})
		require.NoError(t, err)
		warning := []string{"type slow: timeout 1s is longer than the pass's max_seconds 300ms; a job of it may keep the pass running until it ends"}
		for pass := 1; ; pass++ {
			start := time.Now()
			r, err = c.RunOnce(ctx, sluice.RunParams{Type: "slow", MaxDuration: 300 * time.Millisecond})
			require.NoError(t, err)
			if r.Retried == 0 {
				require.Equal(t, sluice.RunResult{OK: true, Warnings: warning}, r, "pass %d claimed nothing", pass)
				require.Less(t, pass, 100, "no pass claimed the job")
				continue
			}
			require.GreaterOrEqual(t, time.Since(start), time.Second, "the pass waited for the job's own timeout")
			require.Equal(t, sluice.RunResult{OK: true, Retried: 1, Warnings: warning}, r)
			break
		}
		j, err := d.GetJob(ctx, res.ID)
		require.NoError(t, err)
		require.Equal(t, sluicetype.StatusPending, j.Status)
		require.Equal(t, 1, j.Attempts)

		// Only the caller's context interrupts a running job: it goes back
		// uncharged and is counted as requeued. The context ends once the
		// job runs, not after a fixed time: on a loaded machine the pass's
		// rescue and claim may take longer than any such time, and a
		// context that ends before the claim tests nothing of this.
		res, err = c.Enqueue(ctx, sluice.EnqueueParams{Type: "hang"})
		require.NoError(t, err)
		cctx, ccancel := context.WithCancel(ctx)
		go func() {
			<-hanging
			ccancel()
		}()
		r, err = c.RunOnce(cctx, sluice.RunParams{Type: "hang", MaxDuration: time.Minute})
		ccancel()
		require.NoError(t, err)
		require.Equal(t, sluice.RunResult{OK: true, Requeued: 1}, r)
		j, err = d.GetJob(ctx, res.ID)
		require.NoError(t, err)
		require.Equal(t, sluicetype.StatusPending, j.Status)
		require.Equal(t, 0, j.Attempts)
	})
}

// A cron pass rescues expired leases before it claims. A job whose lease
// expired on its last attempt fails there, and is counted like any failed
// completion: in the metrics and, once the pass answers, in the roll-ups.
func TestRunOnceCountsRescuedFailures(t *testing.T) {
	testdb.ForEachDriver(t, func(t *testing.T, d driver.Driver) {
		ctx := context.Background()
		c, err := sluice.NewClient(sluice.Config{Driver: d, Types: map[string]sluice.Type{
			"crashy": {Handler: sluice.HandlerFunc(func(context.Context, *sluice.Job) error { return nil }), MaxAttempts: 1},
		}})
		require.NoError(t, err)
		_, err = c.Enqueue(ctx, sluice.EnqueueParams{Type: "crashy", Key: "dead", MaxAttempts: 1})
		require.NoError(t, err)
		// A worker that died holding it: claimed under a lease that has
		// already run out.
		got, err := d.Claim(ctx, driver.ClaimParams{Queue: "default", Types: []string{"crashy"}, Limit: 1, Lease: -time.Second, Token: "dead-worker"})
		require.NoError(t, err)
		require.Len(t, got, 1)

		r, err := c.RunOnce(ctx, sluice.RunParams{Type: "crashy", MaxDuration: 5 * time.Second})
		require.NoError(t, err)
		require.Equal(t, sluice.RunResult{OK: true}, r, "the pass found nothing left to run")
		require.Equal(t, sluicetype.StatusFailed, waitStatus(t, d, got[0].ID, sluicetype.StatusFailed).Status)

		m := c.Metrics()
		require.Equal(t, 1.0, m.Value("sluice_leases_rescued_total"))
		require.Equal(t, 1.0, m.Value("sluice_jobs_completed_total", "default", "crashy", "failed"))
		rows, err := d.ReadStats(ctx, driver.ReadStatsParams{Since: time.Now().Add(-time.Hour)})
		require.NoError(t, err)
		var failed int64
		for _, s := range rows {
			if s.Type == "crashy" && s.Outcome == "failed" {
				failed += s.Count
			}
		}
		require.Equal(t, int64(1), failed, "the roll-ups hold the rescued failure when the pass answers")
	})
}
