package drivertest

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/driver"
	"github.com/sluicehq/sluice/sluicetype"
)

// exerciseStuck: a job's own progress timeout is stored and read back,
// and ProgressSeen, what a worker's watchdog polls, returns when each
// running job last reported progress, changing with each report, so
// that a report made through another process (a webhook's) reaches the
// worker that holds the lease.
func exerciseStuck(t *testing.T, open Opener) {
	t.Run("TimeoutStored", func(t *testing.T) {
		t.Parallel()
		b := setup(t, open)
		p := newJob("stuck-stored")
		p.ProgressTimeout = 90 * time.Second
		id := b.insertOne(p)
		require.Equal(t, 90*time.Second, b.get(id).ProgressTimeout)
		// A batch keeps each row's own value, none included.
		rs := b.insert(p, newJob("stuck-stored"))
		require.Equal(t, 90*time.Second, b.get(rs[0].ID).ProgressTimeout)
		require.Zero(t, b.get(rs[1].ID).ProgressTimeout, "no timeout by default")

		// The claim returns it: the worker reads it with its row.
		got := b.claim(driver.ClaimParams{Queue: "default", Types: []string{"stuck-stored"}, Limit: 10, Lease: time.Minute, Token: "stuck-stored"})
		by := map[int64]time.Duration{}
		for _, j := range got {
			by[j.ID] = j.ProgressTimeout
		}
		require.Equal(t, map[int64]time.Duration{id: 90 * time.Second, rs[0].ID: 90 * time.Second, rs[1].ID: 0}, by)
	})

	t.Run("ProgressSeen", func(t *testing.T) {
		t.Parallel()
		b := setup(t, open)
		quiet, _ := b.claimNew(newJob("stuck-seen"))
		chatty, tok := b.claimNew(newJob("stuck-seen"))
		ids := []int64{quiet, chatty, chatty + 1000000}

		seen, err := b.d.ProgressSeen(b.ctx, ids)
		require.NoError(t, err)
		require.Empty(t, seen, "no job reported yet")

		require.True(t, b.progress(chatty, tok, 1, 10, "one"))
		first := b.seen(ids)
		require.Len(t, first, 1)
		require.Equal(t, chatty, first[0].ID)
		require.Equal(t, b.get(chatty).Progress.At, first[0].At, "the time the row shows")

		// The next report moves it: the worker compares a value only
		// with the one it read before. Wait out the clock's resolution
		// (SQLite's text keeps milliseconds) rather than trust two
		// writes to differ.
		require.Eventually(t, func() bool {
			require.True(t, b.progress(chatty, tok, 2, 10, "two"))
			next := b.seen(ids)
			return len(next) == 1 && next[0].At.After(first[0].At)
		}, time.Minute, 5*time.Millisecond, "a later report changes progress_at")

		require.Empty(t, b.seen(nil), "no ids, no read")
	})

	t.Run("ClaimClearsIt", func(t *testing.T) {
		t.Parallel()
		b := setup(t, open)
		p := newJob("stuck-reclaim")
		id := b.insertOne(p)
		// A lease already expired: its attempt reports, is rescued, and
		// the job is claimed again.
		_, tok := b.claimOne(p, id, -time.Second)
		require.True(t, b.progress(id, tok, 1, 2, "old attempt"))
		require.Len(t, b.seen([]int64{id}), 1)
		require.Equal(t, sluicetype.RescueResult{Pending: 1}, b.rescue(100))
		b.claimOne(p, id, time.Minute)
		require.Empty(t, b.seen([]int64{id}), "a new attempt starts with no report: its watchdog starts from its own start")
	})
}

// seen is ProgressSeen of ids.
func (b *bundle) seen(ids []int64) []driver.ProgressMark {
	b.t.Helper()
	got, err := b.d.ProgressSeen(b.ctx, ids)
	require.NoError(b.t, err)
	return got
}
