package drivertest

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/driver"
	"github.com/sluicehq/sluice/sluicetype"
)

func exerciseGauges(t *testing.T, open Opener) {
	// Processes race for each refresh of the shared gauge counts through
	// their own connections; exactly one may win, or the cluster counts
	// twice (or never).
	t.Run("OneWinnerPerInterval", func(t *testing.T) {
		t.Parallel()
		b := setup(t, open)
		empty, err := b.d.ReadGauges(b.ctx)
		require.NoError(t, err)
		require.Empty(t, empty.Queues, "a fresh snapshot holds no counts")

		race := func(every time.Duration) int64 {
			t.Helper()
			var wins atomic.Int64
			var wg sync.WaitGroup
			for range 8 {
				wg.Go(func() {
					won, err := b.d.ClaimGauges(b.ctx, driver.ClaimGaugesParams{Every: every})
					if err != nil {
						t.Errorf("claim: %v", err)
					}
					if won {
						wins.Add(1)
					}
				})
			}
			wg.Wait()
			return wins.Load()
		}
		before := b.now()
		require.EqualValues(t, 1, race(time.Hour), "the first refresh of a fresh snapshot")
		after := b.now()
		snap, err := b.d.ReadGauges(b.ctx)
		require.NoError(t, err)
		requireBetween(t, snap.TakenAt, before, after, "taken_at")
		require.EqualValues(t, 0, race(time.Hour), "a refresh within the interval")

		// The interval has passed once the snapshot is as old as it, by the
		// database clock. One claim only: racers delayed past so short an
		// interval would rightly win again.
		age := b.now().Sub(snap.TakenAt).Truncate(time.Millisecond)
		won, err := b.d.ClaimGauges(b.ctx, driver.ClaimGaugesParams{Every: age})
		require.NoError(t, err)
		require.True(t, won, "the refresh after the interval")
		require.EqualValues(t, 0, race(time.Hour), "a refresh within the new interval")
	})

	// The counts read back as written, and a refresh replaces them whole: a
	// queue that emptied is gone.
	t.Run("SnapshotReadsBack", func(t *testing.T) {
		t.Parallel()
		b := setup(t, open)
		oldest := time.Date(2026, 12, 7, 9, 0, 0, 123456000, time.UTC)
		put := []sluicetype.QueueStats{
			{Queue: "default", Pending: 3, Processing: 2, Failed: 1, OldestPending: &oldest},
			{Queue: "mail", Processing: 5},
		}
		won, err := b.d.ClaimGauges(b.ctx, driver.ClaimGaugesParams{Every: time.Hour})
		require.NoError(t, err)
		require.True(t, won)
		require.NoError(t, b.d.PutGauges(b.ctx, driver.PutGaugesParams{Queues: put}))
		snap, err := b.d.ReadGauges(b.ctx)
		require.NoError(t, err)
		require.Equal(t, put, snap.Queues)

		require.NoError(t, b.d.PutGauges(b.ctx, driver.PutGaugesParams{Queues: put[1:]}))
		snap, err = b.d.ReadGauges(b.ctx)
		require.NoError(t, err)
		require.Equal(t, put[1:], snap.Queues)
	})

	// A winner that dies between its claim and its counts leaves the old
	// counts and a fresh taken_at; the first claim an interval later, by
	// the database clock, is another's, which writes fresh counts.
	t.Run("DeadWinnerIsReplaced", func(t *testing.T) {
		t.Parallel()
		b := setup(t, open)
		claim := func(every time.Duration) bool {
			t.Helper()
			won, err := b.d.ClaimGauges(b.ctx, driver.ClaimGaugesParams{Every: every})
			require.NoError(t, err)
			return won
		}
		require.True(t, claim(time.Hour))
		old := []sluicetype.QueueStats{{Queue: "default", Pending: 7}}
		require.NoError(t, b.d.PutGauges(b.ctx, driver.PutGaugesParams{Queues: old}))

		// The next winner claims and dies without writing.
		snap, err := b.d.ReadGauges(b.ctx)
		require.NoError(t, err)
		require.True(t, claim(b.now().Sub(snap.TakenAt).Truncate(time.Millisecond)))
		dead, err := b.d.ReadGauges(b.ctx)
		require.NoError(t, err)
		require.Equal(t, old, dead.Queues, "the dead winner wrote nothing")
		require.False(t, claim(time.Hour), "within the interval the dead winner still holds the refresh")

		require.True(t, claim(b.now().Sub(dead.TakenAt).Truncate(time.Millisecond)), "a reader takes over once the interval passed")
		fresh := []sluicetype.QueueStats{{Queue: "default", Pending: 1}}
		require.NoError(t, b.d.PutGauges(b.ctx, driver.PutGaugesParams{Queues: fresh}))
		snap, err = b.d.ReadGauges(b.ctx)
		require.NoError(t, err)
		require.Equal(t, fresh, snap.Queues)
		require.False(t, snap.TakenAt.Before(dead.TakenAt), "the take-over moved taken_at back")
	})
}
