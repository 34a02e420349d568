package pgbouncer_test

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/driver"
	"github.com/sluicehq/sluice/driver/drivertest"
	"github.com/sluicehq/sluice/lock"
	"github.com/sluicehq/sluice/lock/locktest"
)

// Every storage call sluice makes passes the driver conformance suite
// through the pooler: migrations, inserts with dedupe, claims, fenced
// completions, leases, schedules, checkpoints. Without pooler=transaction
// the same suite fails at once on pgx's prepared statements ("prepared
// statement ... does not exist"), which is what this guards.
func TestConformanceThroughPooler(t *testing.T) {
	t.Parallel()
	b := startBouncer(t)
	before := b.transactions(t)
	drivertest.Exercise(t, func(t *testing.T) driver.Driver {
		d, _ := b.openMigrated(t, b.pooled)
		return d
	})
	t.Cleanup(func() {
		// Cleanups run after the parallel cases: they went through the pooler.
		if !t.Failed() {
			require.Greater(t, b.transactions(t)-before, int64(1000), "the suite's transactions went through pgbouncer")
		}
	})
}

// The lease lock backend (?lease=1) works through the pooler and passes
// the lock suite; the advisory-lock backend is refused there, naming it.
func TestLocksThroughPooler(t *testing.T) {
	t.Parallel()
	b := startBouncer(t)
	_, err := lock.Open(b.pooled, lock.Options{})
	require.True(t, errors.Is(err, lock.ErrPooler), "advisory locks through a transaction pooler must be refused, got %v", err)
	require.ErrorContains(t, err, "lease=1")

	_, prefix := b.openMigrated(t, b.pooled)
	t.Run("Lease", func(t *testing.T) {
		locktest.Exercise(t, func(t testing.TB, id string) lock.Locker {
			t.Helper()
			l, err := lock.Open(b.pooled+"&lease=1", lock.Options{ID: id, Prefix: prefix})
			require.NoError(t, err)
			t.Cleanup(func() { l.Close() })
			return l
		}, locktest.Caps{TTL: true, Fence: true})
	})
}
