package drivertest

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/driver"
)

func exercisePurge(t *testing.T, open Opener) {
	t.Run("OlderThanKeepsYoungerAndLive", func(t *testing.T) {
		t.Parallel()
		b := setup(t, open)
		// A failed job as old as the old ones: a purge of success leaves it.
		failed := b.makeJob(driver.StatusFailed, newJob("failed"))
		var old []*driver.JobRow
		for range 3 {
			old = append(old, b.makeJob(driver.StatusSuccess, newJob("old")))
		}
		// The gap separates old from young in database time. The cutoff is
		// put in its middle, computed from the stored finished_at values,
		// so only one round trip (not the whole set-up) must fit in half of it.
		const gap = 600 * time.Millisecond
		for start := b.now(); b.now().Sub(start) < gap; {
			time.Sleep(20 * time.Millisecond)
		}
		var young []*driver.JobRow
		for range 2 {
			young = append(young, b.makeJob(driver.StatusSuccess, newJob("young")))
		}
		live := []*driver.JobRow{
			b.makeJob(driver.StatusPending, newJob("pending")),
			b.makeJob(driver.StatusProcessing, newJob("processing")),
		}

		lastOld, firstYoung := *old[2].FinishedAt, *young[0].FinishedAt
		require.GreaterOrEqual(t, firstYoung.Sub(lastOld), gap)
		cutoff := lastOld.Add(firstYoung.Sub(lastOld) / 2)
		n, err := b.d.Purge(b.ctx, driver.PurgeParams{Status: driver.StatusSuccess, OlderThan: b.now().Sub(cutoff), Limit: 100})
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
			done = append(done, b.makeJob(driver.StatusSuccess, newJob("s")).ID)
		}
		failed := b.makeJob(driver.StatusFailed, newJob("f"))
		cancelled := b.makeJob(driver.StatusCancelled, newJob("c"))
		pending := b.makeJob(driver.StatusPending, newJob("p"))
		// finished_at < now is strict; let the clock move past the last finish.
		for start := b.now(); !b.now().After(start.Add(2 * time.Millisecond)); {
			time.Sleep(5 * time.Millisecond)
		}

		n, err := b.d.Purge(b.ctx, driver.PurgeParams{Status: driver.StatusSuccess, Limit: 100})
		require.NoError(t, err)
		require.EqualValues(t, 3, n)
		for _, id := range done {
			_, err := b.d.GetJob(b.ctx, id)
			requireNotFound(t, err)
		}
		require.Equal(t, driver.StatusFailed, b.get(failed.ID).Status)
		require.Equal(t, driver.StatusCancelled, b.get(cancelled.ID).Status)

		n, err = b.d.Purge(b.ctx, driver.PurgeParams{Status: driver.StatusFailed, Limit: 100})
		require.NoError(t, err)
		require.EqualValues(t, 1, n)
		n, err = b.d.Purge(b.ctx, driver.PurgeParams{Status: driver.StatusCancelled, Limit: 100})
		require.NoError(t, err)
		require.EqualValues(t, 1, n)
		require.Equal(t, []int64{pending.ID}, ids(b.listAll(driver.ListParams{})))
	})

	t.Run("LimitHonoured", func(t *testing.T) {
		t.Parallel()
		b := setup(t, open)
		for range 5 {
			b.makeJob(driver.StatusCancelled, newJob("c"))
		}
		for start := b.now(); !b.now().After(start.Add(2 * time.Millisecond)); {
			time.Sleep(5 * time.Millisecond)
		}
		for _, want := range []int64{2, 2, 1, 0} {
			n, err := b.d.Purge(b.ctx, driver.PurgeParams{Status: driver.StatusCancelled, Limit: 2})
			require.NoError(t, err)
			require.Equal(t, want, n)
		}
		require.Empty(t, b.listAll(driver.ListParams{}))
	})

	t.Run("RefusesLiveStatus", func(t *testing.T) {
		t.Parallel()
		b := setup(t, open)
		pending := b.makeJob(driver.StatusPending, newJob("p"))
		processing := b.makeJob(driver.StatusProcessing, newJob("q"))
		for _, status := range []driver.Status{driver.StatusPending, driver.StatusProcessing, "", "bogus"} {
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
		p := keyed("once", "invoice-5", driver.DedupePermanent)
		done := b.makeJob(driver.StatusSuccess, p)
		for start := b.now(); !b.now().After(start.Add(2 * time.Millisecond)); {
			time.Sleep(5 * time.Millisecond)
		}
		n, err := b.d.Purge(b.ctx, driver.PurgeParams{Status: driver.StatusSuccess, Limit: 10})
		require.NoError(t, err)
		require.EqualValues(t, 1, n)
		// "The key blocks new jobs until the row is purged."
		id := b.insertOne(p)
		require.NotEqual(t, done.ID, id)
	})
}
