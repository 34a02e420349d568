package drivertest

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/driver"
	"github.com/sluicehq/sluice/sluicetype"
)

func exercisePurge(t *testing.T, open Opener) {
	t.Run("OlderThanKeepsYoungerAndLive", func(t *testing.T) {
		t.Parallel()
		b := setup(t, open)
		// A failed job as old as the old ones: a purge of success leaves it.
		failed := b.makeJob(sluicetype.StatusFailed, newJob("failed"))
		var old []*sluicetype.JobRow
		for range 3 {
			old = append(old, b.makeJob(sluicetype.StatusSuccess, newJob("old")))
		}
		// The gap separates old from young in database time. The cutoff is
		// put in its middle, computed from the stored finished_at values,
		// so only one round trip (not the whole set-up) must fit in half of it.
		const gap = 600 * time.Millisecond
		for start := b.now(); b.now().Sub(start) < gap; {
			time.Sleep(20 * time.Millisecond)
		}
		var young []*sluicetype.JobRow
		for range 2 {
			young = append(young, b.makeJob(sluicetype.StatusSuccess, newJob("young")))
		}
		live := []*sluicetype.JobRow{
			b.makeJob(sluicetype.StatusPending, newJob("pending")),
			b.makeJob(sluicetype.StatusProcessing, newJob("processing")),
		}

		lastOld, firstYoung := *old[2].FinishedAt, *young[0].FinishedAt
		require.GreaterOrEqual(t, firstYoung.Sub(lastOld), gap)
		cutoff := lastOld.Add(firstYoung.Sub(lastOld) / 2)
		n, err := b.d.Purge(b.ctx, driver.PurgeParams{Status: sluicetype.StatusSuccess, OlderThan: b.now().Sub(cutoff), Limit: 100})
		require.NoError(t, err)
		require.EqualValues(t, 3, n)

		for _, j := range old {
			_, err := b.d.GetJob(b.ctx, j.ID)
			requireNotFound(t, err)
		}
		for _, j := range append(append(young, live...), failed) {
			require.Equal(t, j.Status, b.get(j.ID).Status)
		}
	})

	t.Run("OlderThanZeroTakesAllFinished", func(t *testing.T) {
		t.Parallel()
		b := setup(t, open)
		var done []int64
		for range 3 {
			done = append(done, b.makeJob(sluicetype.StatusSuccess, newJob("s")).ID)
		}
		failed := b.makeJob(sluicetype.StatusFailed, newJob("f"))
		cancelled := b.makeJob(sluicetype.StatusCancelled, newJob("c"))
		pending := b.makeJob(sluicetype.StatusPending, newJob("p"))
		// finished_at < now is strict; let the clock move past the last finish.
		for start := b.now(); !b.now().After(start.Add(2 * time.Millisecond)); {
			time.Sleep(5 * time.Millisecond)
		}

		n, err := b.d.Purge(b.ctx, driver.PurgeParams{Status: sluicetype.StatusSuccess, Limit: 100})
		require.NoError(t, err)
		require.EqualValues(t, 3, n)
		for _, id := range done {
			_, err := b.d.GetJob(b.ctx, id)
			requireNotFound(t, err)
		}
		require.Equal(t, sluicetype.StatusFailed, b.get(failed.ID).Status)
		require.Equal(t, sluicetype.StatusCancelled, b.get(cancelled.ID).Status)

		n, err = b.d.Purge(b.ctx, driver.PurgeParams{Status: sluicetype.StatusFailed, Limit: 100})
		require.NoError(t, err)
		require.EqualValues(t, 1, n)
		n, err = b.d.Purge(b.ctx, driver.PurgeParams{Status: sluicetype.StatusCancelled, Limit: 100})
		require.NoError(t, err)
		require.EqualValues(t, 1, n)
		require.Equal(t, []int64{pending.ID}, ids(b.listAll(sluicetype.ListParams{})))
	})

	t.Run("LimitHonoured", func(t *testing.T) {
		t.Parallel()
		b := setup(t, open)
		for range 5 {
			b.makeJob(sluicetype.StatusCancelled, newJob("c"))
		}
		for start := b.now(); !b.now().After(start.Add(2 * time.Millisecond)); {
			time.Sleep(5 * time.Millisecond)
		}
		for _, want := range []int64{2, 2, 1, 0} {
			n, err := b.d.Purge(b.ctx, driver.PurgeParams{Status: sluicetype.StatusCancelled, Limit: 2})
			require.NoError(t, err)
			require.Equal(t, want, n)
		}
		require.Empty(t, b.listAll(sluicetype.ListParams{}))
	})

	t.Run("RefusesLiveStatus", func(t *testing.T) {
		t.Parallel()
		b := setup(t, open)
		pending := b.makeJob(sluicetype.StatusPending, newJob("p"))
		processing := b.makeJob(sluicetype.StatusProcessing, newJob("q"))
		for _, status := range []sluicetype.Status{sluicetype.StatusPending, sluicetype.StatusProcessing, "", "bogus"} {
			n, err := b.d.Purge(b.ctx, driver.PurgeParams{Status: status, OlderThan: -time.Hour, Limit: 100})
			require.Error(t, err, "purge of status %q", status)
			require.Zero(t, n)
		}
		require.Equal(t, pending, b.get(pending.ID))
		require.Equal(t, processing, b.get(processing.ID))
	})

	t.Run("FreesPermanentKey", func(t *testing.T) {
		t.Parallel()
		b := setup(t, open)
		p := keyed("once", "invoice-5", sluicetype.DedupePermanent)
		done := b.makeJob(sluicetype.StatusSuccess, p)
		for start := b.now(); !b.now().After(start.Add(2 * time.Millisecond)); {
			time.Sleep(5 * time.Millisecond)
		}
		n, err := b.d.Purge(b.ctx, driver.PurgeParams{Status: sluicetype.StatusSuccess, Limit: 10})
		require.NoError(t, err)
		require.EqualValues(t, 1, n)
		// "The key blocks new jobs until the row is purged."
		id := b.insertOne(p)
		require.NotEqual(t, done.ID, id)
	})
}
