package drivertest

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/driver"
	"github.com/sluicehq/sluice/sluicetype"
)

// exercisePrefetch covers Prefetched and Started (issue 35, item 7): a
// rescue charges an attempt only for a run that started. A job a worker
// claimed ahead of a free handler and never started gets its attempt back
// when the worker dies, even on its last attempt.
func exercisePrefetch(t *testing.T, open Opener) {
	// claimTwo inserts two jobs with one attempt each and claims both
	// under one token with a lease already expired.
	claimTwo := func(b *bundle, typ string) (started, prefetched int64, tok string) {
		b.t.Helper()
		p := newJob(typ)
		p.MaxAttempts = 1
		started, prefetched = b.insertOne(p), b.insertOne(p)
		tok = newToken()
		jobs := b.claim(driver.ClaimParams{Queue: p.Queue, Types: []string{typ}, Limit: 2, Lease: -time.Second, Token: tok})
		require.Len(b.t, jobs, 2)
		return started, prefetched, tok
	}

	t.Run("UnstartedJobIsNotCharged", func(t *testing.T) {
		t.Parallel()
		b := setup(t, open)
		ran, waiting, tok := claimTwo(b, "prefetch-unstarted")
		require.NoError(t, b.d.Prefetched(b.ctx, driver.PrefetchedParams{Token: tok, IDs: []int64{waiting}}))

		res := b.rescue(10)
		require.Equal(t, 1, res.Pending, "the job that never started goes back to pending")
		require.Equal(t, 1, res.Failed, "the job that ran used its one attempt")
		j := b.get(waiting)
		require.Equal(t, sluicetype.StatusPending, j.Status)
		require.Zero(t, j.Attempts, "an attempt was charged for a run that never started")
		require.Empty(t, j.LockedBy)
		require.NotEmpty(t, j.History)
		require.Equal(t, sluicetype.AttemptReleased, j.History[len(j.History)-1].Outcome)
		r := b.get(ran)
		require.Equal(t, sluicetype.StatusFailed, r.Status)
		require.Equal(t, 1, r.Attempts)
		require.Equal(t, sluicetype.AttemptLeaseExpired, r.History[len(r.History)-1].Outcome)

		// Given back means runnable, and charged again by the next claim.
		jobs := b.claim(driver.ClaimParams{Queue: "default", Types: []string{"prefetch-unstarted"}, Limit: 2, Lease: time.Minute, Token: newToken()})
		require.Len(t, jobs, 1)
		require.Equal(t, waiting, jobs[0].ID)
		require.Equal(t, 1, jobs[0].Attempts)
	})

	t.Run("StartedJobIsCharged", func(t *testing.T) {
		t.Parallel()
		b := setup(t, open)
		_, waiting, tok := claimTwo(b, "prefetch-started")
		require.NoError(t, b.d.Prefetched(b.ctx, driver.PrefetchedParams{Token: tok, IDs: []int64{waiting}}))
		held, err := b.d.Started(b.ctx, driver.StartedParams{Token: tok, ID: waiting})
		require.NoError(t, err)
		require.True(t, held)

		res := b.rescue(10)
		require.Equal(t, 2, res.Failed, "a run that started is charged")
		j := b.get(waiting)
		require.Equal(t, sluicetype.StatusFailed, j.Status)
		require.Equal(t, 1, j.Attempts)
	})

	t.Run("MarksAreFencedByToken", func(t *testing.T) {
		t.Parallel()
		b := setup(t, open)
		_, waiting, tok := claimTwo(b, "prefetch-fenced")
		require.NoError(t, b.d.Prefetched(b.ctx, driver.PrefetchedParams{Token: newToken(), IDs: []int64{waiting}}))
		held, err := b.d.Started(b.ctx, driver.StartedParams{Token: newToken(), ID: waiting})
		require.NoError(t, err)
		require.False(t, held, "Started under another token reported the lease held")
		_, err = b.d.Started(b.ctx, driver.StartedParams{Token: tok, ID: waiting})
		require.NoError(t, err)

		require.Equal(t, 2, b.rescue(10).Failed, "another token's mark was taken")
	})

	t.Run("MarkOfAnEarlierClaimIsIgnored", func(t *testing.T) {
		t.Parallel()
		b := setup(t, open)
		p := newJob("prefetch-earlier")
		p.MaxAttempts = 1
		id := b.insertOne(p)
		_, first := b.claimOne(p, id, time.Minute)
		require.NoError(t, b.d.Prefetched(b.ctx, driver.PrefetchedParams{Token: first, IDs: []int64{id}}))
		n, err := b.d.ReleaseClaim(b.ctx, driver.ReleaseClaimParams{Token: first})
		require.NoError(t, err)
		require.EqualValues(t, 1, n)

		// The next claim runs it and dies: its attempt is charged.
		b.claimOne(p, id, -time.Second)
		require.Equal(t, 1, b.rescue(10).Failed)
		require.Equal(t, sluicetype.StatusFailed, b.get(id).Status)
	})

	t.Run("RejectsEmptyToken", func(t *testing.T) {
		t.Parallel()
		b := setup(t, open)
		require.ErrorContains(t, b.d.Prefetched(b.ctx, driver.PrefetchedParams{IDs: []int64{1}}), "token")
		_, err := b.d.Started(b.ctx, driver.StartedParams{ID: 1})
		require.ErrorContains(t, err, "token")
	})
}
