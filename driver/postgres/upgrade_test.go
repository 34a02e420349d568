package postgres_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/driver/drivertest"
	"github.com/sluicehq/sluice/driver/postgres"
	"github.com/sluicehq/sluice/internal/testkit/testdb"
)

// TestUpgradeToLatest: the type-settings migration keeps the rows of the version
// before, those it now refuses at insert too.
func TestUpgradeToLatest(t *testing.T) {
	prefix := testdb.Prefix()
	d, err := postgres.Open(testdb.URL("postgres", ""), postgres.Options{Prefix: prefix})
	require.NoError(t, err)
	t.Cleanup(func() {
		testdb.Drop(d, prefix)
		d.Close()
	})
	drivertest.ExerciseUpgrade(t, d, prefix+"jobs", 11, func(ctx context.Context, v int) error {
		return postgres.MigrateTo(ctx, d, v)
	})
}
