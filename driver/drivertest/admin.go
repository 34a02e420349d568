package drivertest

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/driver"
	"github.com/sluicehq/sluice/sluicetype"
)

const unknownID = 987654321

func exerciseAdmin(t *testing.T, open Opener) {
	t.Run("RetryFailedGrantsAttempts", func(t *testing.T) {
		t.Parallel()
		b := setup(t, open)
		p := newJob("dead")
		p.MaxAttempts = 1
		failed := b.makeJob(sluicetype.StatusFailed, p)
		require.Equal(t, failed.MaxAttempts, failed.Attempts, "set-up: attempts spent")

		before := b.now()
		n, err := b.d.Retry(b.ctx, driver.RetryParams{ID: failed.ID})
		after := b.now()
		require.NoError(t, err)
		require.EqualValues(t, 1, n)

		j := b.get(failed.ID)
		require.Equal(t, sluicetype.StatusPending, j.Status)
		require.Equal(t, 1, j.Attempts, "retry keeps the attempt history")
		require.Greater(t, j.MaxAttempts, j.Attempts, "retry of a job out of attempts must grant more")
		require.Nil(t, j.FinishedAt)
		require.Empty(t, j.LockedBy)
		requireBetween(t, j.NextRunAt, before.Add(-time.Hour), after, "next_run_at")

		// It runs again at once.
		claimed, _ := b.claimOne(p, failed.ID, time.Minute)
		require.Equal(t, 2, claimed.Attempts)
	})

	t.Run("RetryCancelled", func(t *testing.T) {
		t.Parallel()
		b := setup(t, open)
		p := newJob("revived")
		cancelled := b.makeJob(sluicetype.StatusCancelled, p)
		n, err := b.d.Retry(b.ctx, driver.RetryParams{ID: cancelled.ID})
		require.NoError(t, err)
		require.EqualValues(t, 1, n)
		j := b.get(cancelled.ID)
		require.Equal(t, sluicetype.StatusPending, j.Status)
		require.Greater(t, j.MaxAttempts, j.Attempts)
		require.Nil(t, j.FinishedAt)
		b.claimOne(p, cancelled.ID, time.Minute)

		// A job cancelled after it failed with its attempts spent gets more too.
		p = newJob("revived-dead")
		p.MaxAttempts = 1
		dead := b.makeJob(sluicetype.StatusFailed, p)
		require.NoError(t, b.cancel(dead.ID))
		_, err = b.d.Retry(b.ctx, driver.RetryParams{ID: dead.ID})
		require.NoError(t, err)
		j = b.get(dead.ID)
		require.Equal(t, sluicetype.StatusPending, j.Status)
		require.Greater(t, j.MaxAttempts, j.Attempts)
	})

	t.Run("RetryWrongState", func(t *testing.T) {
		t.Parallel()
		b := setup(t, open)
		for _, status := range []sluicetype.Status{sluicetype.StatusPending, sluicetype.StatusProcessing, sluicetype.StatusSuccess} {
			j := b.makeJob(status, newJob("not-retryable-"+string(status)))
			n, err := b.d.Retry(b.ctx, driver.RetryParams{ID: j.ID})
			requireWrongState(t, err)
			require.Zero(t, n)
			require.Equal(t, j, b.get(j.ID), "a refused retry changed the %s job", status)
		}
		_, err := b.d.Retry(b.ctx, driver.RetryParams{ID: unknownID})
		requireNotFound(t, err)
	})

	t.Run("RetryAllFailedByType", func(t *testing.T) {
		t.Parallel()
		b := setup(t, open)
		var a, c []int64
		for range 3 {
			a = append(a, b.makeJob(sluicetype.StatusFailed, newJob("a")).ID)
		}
		for range 2 {
			c = append(c, b.makeJob(sluicetype.StatusFailed, newJob("c")).ID)
		}
		cancelled := b.makeJob(sluicetype.StatusCancelled, newJob("a"))
		pending := b.makeJob(sluicetype.StatusPending, newJob("a"))

		n, err := b.d.Retry(b.ctx, driver.RetryParams{AllFailed: true, Type: "a"})
		require.NoError(t, err)
		require.EqualValues(t, 3, n)
		for _, id := range a {
			require.Equal(t, sluicetype.StatusPending, b.get(id).Status)
		}
		for _, id := range c {
			require.Equal(t, sluicetype.StatusFailed, b.get(id).Status)
		}
		// "All failed" means failed: cancelled jobs stay cancelled.
		require.Equal(t, cancelled, b.get(cancelled.ID))
		require.Equal(t, pending, b.get(pending.ID))

		n, err = b.d.Retry(b.ctx, driver.RetryParams{AllFailed: true})
		require.NoError(t, err)
		require.EqualValues(t, 2, n)
		require.Empty(t, b.listAll(sluicetype.ListParams{Status: sluicetype.StatusFailed}))

		n, err = b.d.Retry(b.ctx, driver.RetryParams{AllFailed: true})
		require.NoError(t, err)
		require.Zero(t, n)
	})

	t.Run("RetryAllFailedInChunks", func(t *testing.T) {
		t.Parallel()
		b := setup(t, open)
		// More failed jobs than one chunk of the retry loop.
		const n = 1100
		b.insert(newJobs("mass-fail", n)...)
		for {
			tok := newToken()
			got := b.claim(driver.ClaimParams{Queue: "default", Limit: 500, Lease: time.Minute, Token: tok})
			if len(got) == 0 {
				break
			}
			cs := make([]driver.Completion, len(got))
			for i, j := range got {
				cs[i] = driver.Completion{ID: j.ID, Token: tok, Status: sluicetype.StatusFailed, Error: strPtr("outage")}
			}
			require.Empty(t, b.complete(cs...))
		}
		n2, err := b.d.Retry(b.ctx, driver.RetryParams{AllFailed: true, Type: "mass-fail"})
		require.NoError(t, err)
		require.EqualValues(t, n, n2)
		require.Empty(t, b.listAll(sluicetype.ListParams{Status: sluicetype.StatusFailed}))
		require.Len(t, b.listAll(sluicetype.ListParams{Status: sluicetype.StatusPending}), n)
	})

	t.Run("CancelPendingAndFailed", func(t *testing.T) {
		t.Parallel()
		b := setup(t, open)
		for _, status := range []sluicetype.Status{sluicetype.StatusPending, sluicetype.StatusFailed} {
			j := b.makeJob(status, newJob("cancel-"+string(status)))
			before := b.now()
			require.NoError(t, b.cancel(j.ID))
			after := b.now()
			got := b.get(j.ID)
			require.Equal(t, sluicetype.StatusCancelled, got.Status)
			require.NotNil(t, got.FinishedAt)
			requireBetween(t, *got.FinishedAt, before, after, "finished_at")
			require.Equal(t, j.Attempts, got.Attempts)
			require.Equal(t, j.LastError, got.LastError)
		}
		// A cancelled job is not claimable.
		require.Empty(t, b.claim(driver.ClaimParams{Queue: "default", Limit: 10, Lease: time.Minute, Token: newToken()}))
	})

	t.Run("CancelWrongState", func(t *testing.T) {
		t.Parallel()
		b := setup(t, open)
		for _, status := range []sluicetype.Status{sluicetype.StatusSuccess, sluicetype.StatusCancelled} {
			j := b.makeJob(status, newJob("not-cancellable-"+string(status)))
			requireWrongState(t, b.cancel(j.ID))
			require.Equal(t, j, b.get(j.ID), "a refused cancel changed the %s job", status)
		}
		requireNotFound(t, b.cancel(unknownID))
	})

	t.Run("GetJobNotFound", func(t *testing.T) {
		t.Parallel()
		b := setup(t, open)
		j, err := b.d.GetJob(b.ctx, unknownID)
		requireNotFound(t, err)
		require.Nil(t, j)
	})

	t.Run("PausedQueuesRoundTrip", func(t *testing.T) {
		t.Parallel()
		b := setup(t, open)
		paused := func() map[string]bool {
			m, err := b.d.PausedQueues(b.ctx)
			require.NoError(t, err)
			return m
		}
		require.Empty(t, paused())
		require.NoError(t, b.d.SetQueuePaused(b.ctx, driver.SetQueuePausedParams{Queue: "mail", Paused: true}))
		require.NoError(t, b.d.SetQueuePaused(b.ctx, driver.SetQueuePausedParams{Queue: "sms", Paused: true}))
		require.NoError(t, b.d.SetQueuePaused(b.ctx, driver.SetQueuePausedParams{Queue: "sms", Paused: true})) // idempotent
		require.Equal(t, map[string]bool{"mail": true, "sms": true}, paused())
		require.NoError(t, b.d.SetQueuePaused(b.ctx, driver.SetQueuePausedParams{Queue: "mail", Paused: false}))
		require.Equal(t, map[string]bool{"sms": true}, paused())
		require.NoError(t, b.d.SetQueuePaused(b.ctx, driver.SetQueuePausedParams{Queue: "never-paused", Paused: false}))
		require.Equal(t, map[string]bool{"sms": true}, paused())
		require.NoError(t, b.d.SetQueuePaused(b.ctx, driver.SetQueuePausedParams{Queue: "sms", Paused: false}))
		require.Empty(t, paused())
	})
}
