package drivertest

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/driver"
	"github.com/sluicehq/sluice/sluicetype"
)

func exerciseLease(t *testing.T, open Opener) {
	t.Run("AcquireBusyRenewRelease", func(t *testing.T) {
		t.Parallel()
		b := setup(t, open)
		acquire := func(holder string, ttl time.Duration) sluicetype.LeaseState {
			t.Helper()
			l, err := b.d.AcquireLease(b.ctx, driver.LeaseParams{Name: "maintenance", Holder: holder, TTL: ttl})
			require.NoError(t, err)
			return l
		}
		release := func(holder string) bool {
			t.Helper()
			ok, err := b.d.ReleaseLease(b.ctx, driver.ReleaseLeaseParams{Name: "maintenance", Holder: holder})
			require.NoError(t, err)
			return ok
		}

		before := b.now()
		a := acquire("A", time.Minute)
		after := b.now()
		require.True(t, a.Held)
		require.Equal(t, "A", a.Holder)
		require.Positive(t, a.Fence)
		requireBetween(t, a.Since, before, after, "since")
		requireBetween(t, a.Until, before.Add(time.Minute), after.Add(time.Minute), "until")

		busy := acquire("B", time.Minute)
		require.False(t, busy.Held)
		require.Equal(t, "A", busy.Holder, "a busy lease must name its holder")
		require.Equal(t, a.Fence, busy.Fence)
		require.True(t, busy.Until.Equal(a.Until), "a refused acquire moved the holder's expiry")

		// Renewal keeps the fence (same holder, same term) and moves Until.
		before = b.now()
		renewed := acquire("A", 2*time.Minute)
		after = b.now()
		require.True(t, renewed.Held)
		require.Equal(t, a.Fence, renewed.Fence, "renewal changed the fence")
		require.True(t, renewed.Since.Equal(a.Since), "renewal moved since from %s to %s", a.Since, renewed.Since)
		requireBetween(t, renewed.Until, before.Add(2*time.Minute), after.Add(2*time.Minute), "renewed until")

		require.False(t, release("B"), "B released a lease A holds")
		require.False(t, acquire("B", time.Minute).Held, "B's refused release freed the lease")

		require.True(t, release("A"))
		require.False(t, release("A"), "a lease was released twice")

		b2 := acquire("B", time.Minute)
		require.True(t, b2.Held)
		require.Equal(t, "B", b2.Holder)
		require.Greater(t, b2.Fence, a.Fence, "a new holder must get a larger fence")

		// A, once released, cannot take it back while B holds it.
		again := acquire("A", time.Minute)
		require.False(t, again.Held)
		require.Equal(t, "B", again.Holder)
		require.Equal(t, b2.Fence, again.Fence)
	})

	t.Run("ExpiryHandsOver", func(t *testing.T) {
		t.Parallel()
		b := setup(t, open)
		a, err := b.d.AcquireLease(b.ctx, driver.LeaseParams{Name: "leader", Holder: "A", TTL: 300 * time.Millisecond})
		require.NoError(t, err)
		require.True(t, a.Held)

		// Poll as a contender would; no fixed sleep has to guess the timing.
		deadline := time.Now().Add(20 * time.Second)
		var l sluicetype.LeaseState
		for {
			l, err = b.d.AcquireLease(b.ctx, driver.LeaseParams{Name: "leader", Holder: "B", TTL: time.Minute})
			require.NoError(t, err)
			if l.Held {
				break
			}
			require.Equal(t, "A", l.Holder)
			require.True(t, time.Now().Before(deadline), "B never took over the expired lease")
			time.Sleep(25 * time.Millisecond)
		}
		require.Equal(t, "B", l.Holder)
		require.Greater(t, l.Fence, a.Fence)
		// Taken over only after it expired, by the database clock.
		require.False(t, l.Since.Before(a.Until), "B took the lease at %s, before A's expiry at %s", l.Since, a.Until)

		// The expired holder cannot renew its way back in.
		back, err := b.d.AcquireLease(b.ctx, driver.LeaseParams{Name: "leader", Holder: "A", TTL: time.Minute})
		require.NoError(t, err)
		require.False(t, back.Held)
		require.Equal(t, "B", back.Holder)
		ok, err := b.d.ReleaseLease(b.ctx, driver.ReleaseLeaseParams{Name: "leader", Holder: "A"})
		require.NoError(t, err)
		require.False(t, ok, "the expired holder released the new holder's lease")
	})

	t.Run("NamesAreIndependent", func(t *testing.T) {
		t.Parallel()
		b := setup(t, open)
		x, err := b.d.AcquireLease(b.ctx, driver.LeaseParams{Name: "run:x", Holder: "A", TTL: time.Minute})
		require.NoError(t, err)
		y, err := b.d.AcquireLease(b.ctx, driver.LeaseParams{Name: "run:y", Holder: "B", TTL: time.Minute})
		require.NoError(t, err)
		require.True(t, x.Held)
		require.True(t, y.Held)

		ok, err := b.d.ReleaseLease(b.ctx, driver.ReleaseLeaseParams{Name: "never-taken", Holder: "A"})
		require.NoError(t, err)
		require.False(t, ok)
	})
}
