package sluice_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/cron"
	"github.com/sluicehq/sluice/driver"
	"github.com/sluicehq/sluice/internal/testkit/testdb"
	"github.com/sluicehq/sluice/sluicetype"
)

func every(t *testing.T, expr string) *cron.Expr {
	s, err := cron.Parse(expr, nil)
	require.NoError(t, err)
	return s
}

// A job that outlasts its interval makes overlap: forbid skip slots, and
// two runs of the schedule never overlap.
func TestScheduleOverlapForbid(t *testing.T) {
	d := testdb.Open(t, "sqlite")
	var running, maxRunning, runs atomic.Int32
	c, err := sluice.NewClient(sluice.Config{Driver: d, PollMax: 20 * time.Millisecond,
		Queues: map[string]sluice.QueueConfig{"default": {Concurrency: 4}},
		Types: map[string]sluice.Type{"long": {Handler: sluice.HandlerFunc(func(ctx context.Context, j *sluice.Job) error {
			n := running.Add(1)
			defer running.Add(-1)
			for {
				m := maxRunning.Load()
				if n <= m || maxRunning.CompareAndSwap(m, n) {
					break
				}
			}
			runs.Add(1)
			time.Sleep(2500 * time.Millisecond)
			return nil
		})}},
		Schedules: []sluice.Schedule{{Name: "tick", Spec: every(t, "@every 1s"), Type: "long", Overlap: "forbid"}},
	})
	require.NoError(t, err)
	require.NoError(t, c.Start(context.Background()))
	time.Sleep(6500 * time.Millisecond)
	c.Stop(context.Background())
	st, err := d.ScheduleState(context.Background(), driver.ScheduleStateParams{Name: "tick"})
	require.NoError(t, err)
	require.Equal(t, int32(1), maxRunning.Load(), "two runs of a forbid schedule overlapped")
	require.GreaterOrEqual(t, runs.Load(), int32(2))
	require.Greater(t, st.Skips, int64(0), "slots during a long run are skipped")
	// A slot fired just before Stop may not have started yet.
	require.GreaterOrEqual(t, st.Fires, int64(runs.Load()))
	require.LessOrEqual(t, st.Fires, int64(runs.Load())+1)
}

// A Go schedule that leaves Overlap empty gets the same default as the
// config file: forbid. With no workers the first slot's job stays pending,
// so every later slot is skipped.
func TestScheduleOverlapDefaultsToForbid(t *testing.T) {
	d := testdb.Open(t, "sqlite")
	c, err := sluice.NewClient(sluice.Config{Driver: d,
		Schedules: []sluice.Schedule{{Name: "tick", Spec: every(t, "@every 1s"), Type: "pending"}}})
	require.NoError(t, err)
	require.NoError(t, c.Start(context.Background()))
	t.Cleanup(func() { c.Stop(context.Background()) })
	testdb.WaitFor(t, 10*time.Second, "later slots are skipped while the first job is pending", func() bool {
		st, err := d.ScheduleState(context.Background(), driver.ScheduleStateParams{Name: "tick"})
		require.NoError(t, err)
		return st.Skips >= 2
	})
	st, err := d.ScheduleState(context.Background(), driver.ScheduleStateParams{Name: "tick"})
	require.NoError(t, err)
	require.Equal(t, int64(1), st.Fires)
	jobs, err := d.ListJobs(context.Background(), sluicetype.ListParams{Type: "pending"})
	require.NoError(t, err)
	require.Len(t, jobs, 1)
}

// After downtime, catch_up enqueues at most N missed slots, the most recent.
// A daily schedule at the hour half a day from now keeps every missed slot
// hours away from the few seconds in which a slot counts as late rather
// than missed, whatever the time of day the test runs.
func TestScheduleCatchUp(t *testing.T) {
	d := testdb.Open(t, "sqlite")
	ctx := context.Background()
	now, err := d.Now(ctx)
	require.NoError(t, err)
	hour := (now.UTC().Hour() + 12) % 24
	last := now.UTC().Truncate(24 * time.Hour).Add(time.Duration(hour) * time.Hour)
	if last.After(now) {
		last = last.Add(-24 * time.Hour)
	}
	// The schedule last fired ten days ago: no node ran since.
	require.NoError(t, d.InitSchedule(ctx, driver.InitScheduleParams{Name: "daily", Last: last.Add(-10 * 24 * time.Hour)}))
	c, err := sluice.NewClient(sluice.Config{Driver: d,
		// Allow: with forbid, the first caught-up job, still pending with no
		// workers here, would make the scheduler skip the other slots.
		Schedules: []sluice.Schedule{{Name: "daily", Spec: every(t, fmt.Sprintf("0 %d * * *", hour)), Type: "report", CatchUp: 3,
			Overlap: sluice.OverlapAllow}}})
	require.NoError(t, err)
	require.NoError(t, c.Start(ctx))
	testdb.WaitFor(t, 5*time.Second, "three report jobs", func() bool {
		jobs, err := d.ListJobs(ctx, sluicetype.ListParams{Type: "report"})
		require.NoError(t, err)
		return len(jobs) >= 3
	})
	c.Stop(ctx)
	jobs, err := d.ListJobs(ctx, sluicetype.ListParams{Type: "report"})
	require.NoError(t, err)
	require.Len(t, jobs, 3, "at most catch_up missed slots")
	for i, j := range jobs { // newest first: the last slot, the day before, the one before that
		want := "sched:daily:" + last.Add(-time.Duration(i)*24*time.Hour).Format("2006-01-02T15:04:05")
		require.Equal(t, want, j.Key)
	}
}
