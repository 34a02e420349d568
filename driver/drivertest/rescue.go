package drivertest

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/driver"
	"github.com/sluicehq/sluice/sluicetype"
)

func exerciseRescue(t *testing.T, open Opener) {
	t.Run("ExpiredLeaseToPending", func(t *testing.T) {
		t.Parallel()
		b := setup(t, open)
		p := newJob("killed")
		id := b.insertOne(p)
		b.claimOne(p, id, -time.Second)

		before := b.now()
		res := b.rescue(10)
		after := b.now()
		require.Equal(t, sluicetype.RescueResult{Pending: 1}, res)

		j := b.get(id)
		require.Equal(t, sluicetype.StatusPending, j.Status)
		require.Equal(t, 1, j.Attempts, "the lost attempt still counts")
		require.Contains(t, strings.ToLower(j.LastError), "lease")
		require.Empty(t, j.LockedBy)
		require.Nil(t, j.LockedUntil)
		require.Nil(t, j.FinishedAt)
		requireBetween(t, j.NextRunAt, before.Add(-time.Minute), after, "next_run_at")

		// Rescued means runnable again.
		b.claimOne(p, id, time.Minute)
	})

	t.Run("ExpiredLeaseWithAttemptsSpentFails", func(t *testing.T) {
		t.Parallel()
		b := setup(t, open)
		p := newJob("killed-last")
		p.MaxAttempts = 1
		id := b.insertOne(p)
		b.claimOne(p, id, -time.Second)

		before := b.now()
		res := b.rescue(10)
		after := b.now()
		require.Equal(t, sluicetype.RescueResult{Failed: 1, FailedBy: map[sluicetype.QueueType]int{{Queue: "default", Type: "killed-last"}: 1}}, res)

		j := b.get(id)
		require.Equal(t, sluicetype.StatusFailed, j.Status)
		require.Equal(t, 1, j.Attempts)
		require.Contains(t, strings.ToLower(j.LastError), "lease")
		require.NotNil(t, j.FinishedAt)
		requireBetween(t, *j.FinishedAt, before, after, "finished_at")
		require.Empty(t, j.LockedBy)
		require.Nil(t, j.LockedUntil)
	})

	t.Run("LiveLeaseUntouched", func(t *testing.T) {
		t.Parallel()
		b := setup(t, open)
		p := newJob("alive")
		id := b.insertOne(p)
		b.claimOne(p, id, time.Minute)
		held := b.get(id)
		pendingID := b.insertOne(newJob("waiting"))
		done := b.makeJob(sluicetype.StatusSuccess, newJob("done"))

		res := b.rescue(10)
		require.Equal(t, sluicetype.RescueResult{}, res)
		require.Equal(t, held, b.get(id))
		require.Equal(t, sluicetype.StatusPending, b.get(pendingID).Status)
		require.Equal(t, done, b.get(done.ID))
	})

	t.Run("LimitHonoured", func(t *testing.T) {
		t.Parallel()
		b := setup(t, open)
		for range 3 {
			b.insertOne(newJob("many"))
		}
		require.Len(t, b.claim(driver.ClaimParams{Queue: "default", Limit: 3, Lease: -time.Second, Token: newToken()}), 3)
		for _, want := range []int{2, 1, 0} {
			res := b.rescue(2)
			require.Equal(t, sluicetype.RescueResult{Pending: want}, res)
		}
		require.Len(t, b.listAll(sluicetype.ListParams{Status: sluicetype.StatusPending}), 3)
	})

	t.Run("LimitCoversBothOutcomes", func(t *testing.T) {
		t.Parallel()
		b := setup(t, open)
		// Two jobs on their last attempt and three with attempts left: the
		// limit bounds the pass as a whole, whichever state each job goes to.
		for i := range 5 {
			p := newJob("mixed")
			if i < 2 {
				p.MaxAttempts = 1
			}
			b.insertOne(p)
		}
		require.Len(t, b.claim(driver.ClaimParams{Queue: "default", Limit: 5, Lease: -time.Second, Token: newToken()}), 5)
		var total sluicetype.RescueResult
		for _, want := range []int{3, 2, 0} {
			res := b.rescue(3)
			require.Equal(t, want, res.Pending+res.Failed, "rescued %+v with limit 3", res)
			total.Add(res)
		}
		require.Equal(t, sluicetype.RescueResult{Pending: 3, Failed: 2, FailedBy: map[sluicetype.QueueType]int{{Queue: "default", Type: "mixed"}: 2}}, total)
		require.Len(t, b.listAll(sluicetype.ListParams{Status: sluicetype.StatusFailed}), 2)
		require.Len(t, b.listAll(sluicetype.ListParams{Status: sluicetype.StatusPending}), 3)
	})
}
