package sluice_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/driver"
	"github.com/sluicehq/sluice/internal/testdb"
	"github.com/sluicehq/sluice/schedule"
)

func every(t *testing.T, expr string) *schedule.Schedule {
	s, err := schedule.Parse(expr, nil)
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
	st, err := d.ScheduleState(context.Background(), "tick")
	require.NoError(t, err)
	require.Equal(t, int32(1), maxRunning.Load(), "two runs of a forbid schedule overlapped")
	require.GreaterOrEqual(t, runs.Load(), int32(2))
	require.Greater(t, st.Skips, int64(0), "slots during a long run are skipped")
	require.Equal(t, int64(runs.Load()), st.Fires)
}

// After downtime, catch_up enqueues at most N missed slots, the most recent.
func TestScheduleCatchUp(t *testing.T) {
	d := testdb.Open(t, "sqlite")
	ctx := context.Background()
	now, err := d.Now(ctx)
	require.NoError(t, err)
	// The schedule last fired ten minutes ago: the node was down since.
	require.NoError(t, d.InitSchedule(ctx, "minutely", now.Add(-10*time.Minute).Truncate(time.Minute)))
	c, err := sluice.NewClient(sluice.Config{Driver: d,
		Schedules: []sluice.Schedule{{Name: "minutely", Spec: every(t, "* * * * *"), Type: "report", CatchUp: 3}}})
	require.NoError(t, err)
	require.NoError(t, c.Start(ctx))
	require.Eventually(t, func() bool {
		jobs, err := d.ListJobs(ctx, driver.ListParams{Type: "report"})
		require.NoError(t, err)
		return len(jobs) >= 3
	}, 5*time.Second, 20*time.Millisecond)
	c.Stop(ctx)
	jobs, err := d.ListJobs(ctx, driver.ListParams{Type: "report"})
	require.NoError(t, err)
	require.Len(t, jobs, 3, "at most catch_up missed slots")
	// Newest first: the latest slot (this minute's, or the next one's if
	// the minute turned during the test) and the two before it.
	last := now.Truncate(time.Minute)
	if jobs[0].Key != "sched:minutely:"+last.Format("2006-01-02T15:04:05") {
		last = last.Add(time.Minute)
	}
	for i, j := range jobs {
		want := "sched:minutely:" + last.Add(-time.Duration(i)*time.Minute).Format("2006-01-02T15:04:05")
		require.Equal(t, want, j.Key)
	}
}
