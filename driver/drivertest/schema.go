package drivertest

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/driver"
	"github.com/sluicehq/sluice/sluicetype"
)

func exerciseSchema(t *testing.T, open Opener) {
	t.Run("MigrateTwiceIsIdempotent", func(t *testing.T) {
		t.Parallel()
		b := setup(t, open)
		// open already migrated once; running it again must be a no-op that
		// reports the same version, or every `sluice migrate` would break.
		m1, err := b.d.Migrate(b.ctx)
		require.NoError(t, err)
		m2, err := b.d.Migrate(b.ctx)
		require.NoError(t, err)
		require.Equal(t, m1, m2)
		require.Equal(t, m1.From, m1.To, "open migrated already: nothing to upgrade")
		require.Positive(t, m1.To)

		// The schema still works after the repeated migration.
		id := b.insertOne(newJob("after-migrate"))
		require.Equal(t, sluicetype.StatusPending, b.get(id).Status)
	})

	t.Run("SchemaVersionIsLatest", func(t *testing.T) {
		t.Parallel()
		b := setup(t, open)
		cur, latest, err := b.d.SchemaVersion(b.ctx)
		require.NoError(t, err)
		require.Positive(t, latest)
		require.Equal(t, latest, cur)
		m, err := b.d.Migrate(b.ctx)
		require.NoError(t, err)
		require.Equal(t, driver.MigrateResult{From: latest, To: latest}, m, "Migrate and SchemaVersion disagree on the version")
	})

	t.Run("NowIsTheDatabaseClockInUTC", func(t *testing.T) {
		t.Parallel()
		b := setup(t, open)
		before := time.Now()
		now := b.now()
		after := time.Now()
		// The database runs on this machine in tests, so its clock agrees with
		// ours to within a few seconds; a time zone mix-up is off by hours.
		require.WithinRange(t, now, before.Add(-5*time.Second), after.Add(5*time.Second))
		require.Equal(t, time.UTC, now.Location())

		// The clock moves forward between calls.
		time.Sleep(20 * time.Millisecond)
		require.True(t, b.now().After(now), "database clock did not advance")
	})
}
