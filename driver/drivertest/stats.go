package drivertest

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/driver"
	"github.com/sluicehq/sluice/sluicetype"
)

func exerciseStats(t *testing.T, open Opener) {
	t.Run("CountsLiveJobsPerQueue", func(t *testing.T) {
		t.Parallel()
		b := setup(t, open)
		now := b.now()
		in := func(queue, typ string, age time.Duration) driver.InsertJob {
			p := newJob(typ)
			p.Queue, p.RunAt = queue, now.Add(-age)
			return p
		}
		// Queue "a": 2 pending, 1 processing, 2 failed, and finished rows
		// that must not be counted.
		b.makeJob(sluicetype.StatusProcessing, in("a", "run", time.Minute))
		b.makeJob(sluicetype.StatusFailed, in("a", "fail", time.Minute))
		b.makeJob(sluicetype.StatusFailed, in("a", "fail", time.Minute))
		b.makeJob(sluicetype.StatusSuccess, in("a", "ok", time.Hour))
		b.makeJob(sluicetype.StatusCancelled, in("a", "gone", time.Hour))
		oldest := b.makeJob(sluicetype.StatusPending, in("a", "wait", 10*time.Minute))
		b.makeJob(sluicetype.StatusPending, in("a", "wait", 5*time.Minute))
		// Queue "b": 1 pending only. Queue "c": only finished rows.
		onlyB := b.makeJob(sluicetype.StatusPending, in("b", "wait", time.Second))
		b.makeJob(sluicetype.StatusSuccess, in("c", "ok", time.Second))

		stats, err := b.d.Stats(b.ctx)
		require.NoError(t, err)
		byQueue := map[string]sluicetype.QueueStats{}
		for _, s := range stats {
			_, dup := byQueue[s.Queue]
			require.False(t, dup, "queue %s listed twice", s.Queue)
			byQueue[s.Queue] = s
		}
		require.Len(t, byQueue, 2, "want queues a and b only: %+v", stats)

		a := byQueue["a"]
		require.Equal(t, [3]int64{2, 1, 2}, [3]int64{a.Pending, a.Processing, a.Failed}, "queue a pending/processing/failed")
		require.NotNil(t, a.OldestPending)
		require.True(t, a.OldestPending.Equal(oldest.NextRunAt), "oldest pending = %s, want %s", a.OldestPending, oldest.NextRunAt)

		bq := byQueue["b"]
		require.Equal(t, [3]int64{1, 0, 0}, [3]int64{bq.Pending, bq.Processing, bq.Failed}, "queue b pending/processing/failed")
		require.NotNil(t, bq.OldestPending)
		require.True(t, bq.OldestPending.Equal(onlyB.NextRunAt))
	})

	t.Run("OldestPendingIsRunnable", func(t *testing.T) {
		t.Parallel()
		b := setup(t, open)
		// sluicetype.QueueStats: OldestPending is "next_run_at of the oldest
		// runnable pending job". A job scheduled for later is counted as
		// pending but is not waiting yet, so it must not show up as the
		// oldest (a dashboard would show a negative wait).
		future := newJob("later")
		future.Queue, future.Delay = "scheduled", time.Hour
		b.insertOne(future)
		future.Queue = "mixed"
		b.insertOne(future)
		due := b.makeJob(sluicetype.StatusPending, driver.InsertJob{Queue: "mixed", Type: "now", Dedupe: sluicetype.DedupePermanent, Payload: []byte(`{}`), MaxAttempts: 5})

		stats, err := b.d.Stats(b.ctx)
		require.NoError(t, err)
		byQueue := map[string]sluicetype.QueueStats{}
		for _, s := range stats {
			byQueue[s.Queue] = s
		}
		mixed := byQueue["mixed"]
		require.EqualValues(t, 2, mixed.Pending)
		require.NotNil(t, mixed.OldestPending)
		require.True(t, mixed.OldestPending.Equal(due.NextRunAt))

		scheduled := byQueue["scheduled"]
		require.EqualValues(t, 1, scheduled.Pending)
		require.Nil(t, scheduled.OldestPending, "a job due in an hour reported as the oldest runnable one")
	})

	t.Run("NoQueueWithoutJobs", func(t *testing.T) {
		t.Parallel()
		b := setup(t, open)
		stats, err := b.d.Stats(b.ctx)
		require.NoError(t, err)
		require.Empty(t, stats)

		// A queue with only processing work has no oldest pending job.
		b.makeJob(sluicetype.StatusProcessing, newJob("busy"))
		stats, err = b.d.Stats(b.ctx)
		require.NoError(t, err)
		require.Len(t, stats, 1)
		require.Equal(t, sluicetype.QueueStats{Queue: "default", Processing: 1}, stats[0])
	})
}
