package drivertest

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/driver"
	"github.com/sluicehq/sluice/sluicetype"
)

// exerciseRelease covers ReleaseClaim: the hand-back of a claim whose reply
// the worker never received.
func exerciseRelease(t *testing.T, open Opener) {
	t.Run("ReturnsTheClaimUncharged", func(t *testing.T) {
		t.Parallel()
		b := setup(t, open)
		p := newJob("lost-reply")
		p.MaxAttempts = 2
		var want []int64
		for range 3 {
			want = append(want, b.insertOne(p))
		}
		before := map[int64]*sluicetype.JobRow{}
		for _, id := range want {
			before[id] = b.get(id)
		}
		lost := newToken()
		jobs := b.claim(driver.ClaimParams{Queue: p.Queue, Types: []string{p.Type}, Limit: 10, Lease: time.Hour, Token: lost})
		require.ElementsMatch(t, want, ids(jobs))

		n, err := b.d.ReleaseClaim(b.ctx, driver.ReleaseClaimParams{Token: lost})
		require.NoError(t, err)
		require.EqualValues(t, 3, n)
		for _, id := range want {
			j := b.get(id)
			require.Equal(t, sluicetype.StatusPending, j.Status, "job %d", id)
			require.Equal(t, 0, j.Attempts, "job %d: the attempt of a claim that never ran is given back", id)
			require.Empty(t, j.LockedBy, "job %d", id)
			require.Nil(t, j.LockedUntil, "job %d", id)
			require.Nil(t, j.FinishedAt, "job %d", id)
			require.True(t, j.NextRunAt.Equal(before[id].NextRunAt), "job %d: next_run_at moved from %s to %s", id, before[id].NextRunAt, j.NextRunAt)
		}
		// Runnable at once, and the next claim is the first attempt again.
		again := b.claim(driver.ClaimParams{Queue: p.Queue, Types: []string{p.Type}, Limit: 10, Lease: time.Hour, Token: newToken()})
		require.ElementsMatch(t, want, ids(again))
		for _, j := range again {
			require.Equal(t, 1, j.Attempts)
		}

		n, err = b.d.ReleaseClaim(b.ctx, driver.ReleaseClaimParams{Token: lost})
		require.NoError(t, err)
		require.Zero(t, n, "a second release of the same token changed jobs")
	})

	t.Run("TouchesOnlyItsTokensProcessingJobs", func(t *testing.T) {
		t.Parallel()
		b := setup(t, open)
		tok := newToken()
		claimAs := func(p driver.InsertJob, lease time.Duration) int64 {
			t.Helper()
			id := b.insertOne(p)
			jobs := b.claim(driver.ClaimParams{Queue: p.Queue, Types: []string{p.Type}, Limit: 1, Lease: lease, Token: tok})
			require.Equal(t, []int64{id}, ids(jobs))
			return id
		}
		// Finished under the token before the release: stays finished.
		done := claimAs(newJob("rel-done"), time.Hour)
		require.Empty(t, b.complete(driver.Completion{ID: done, Token: tok, Status: sluicetype.StatusSuccess}))
		// Its lease expired, it was rescued and another worker holds it
		// now: the release must not take it from the new holder.
		moved := newJob("rel-moved")
		movedID := claimAs(moved, -time.Second)
		res := b.rescue(10)
		require.Equal(t, 1, res.Pending)
		_, other := b.claimOne(moved, movedID, time.Hour)
		// Held by a different claim all along.
		bystander := newJob("rel-bystander")
		bystanderID := b.insertOne(bystander)
		_, byTok := b.claimOne(bystander, bystanderID, time.Hour)

		n, err := b.d.ReleaseClaim(b.ctx, driver.ReleaseClaimParams{Token: tok})
		require.NoError(t, err)
		require.Zero(t, n)
		require.Equal(t, sluicetype.StatusSuccess, b.get(done).Status)
		require.Equal(t, 1, b.get(done).Attempts)
		j := b.get(movedID)
		require.Equal(t, sluicetype.StatusProcessing, j.Status)
		require.Equal(t, other, j.LockedBy)
		require.Equal(t, 2, j.Attempts)
		j = b.get(bystanderID)
		require.Equal(t, sluicetype.StatusProcessing, j.Status)
		require.Equal(t, byTok, j.LockedBy)
		require.Equal(t, 1, j.Attempts)
	})

	t.Run("EmptyTokenIsRefused", func(t *testing.T) {
		t.Parallel()
		b := setup(t, open)
		_, err := b.d.ReleaseClaim(b.ctx, driver.ReleaseClaimParams{})
		require.ErrorContains(t, err, "token")
	})

}
