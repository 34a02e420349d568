package sqlite_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/driver/drivertest"
	"github.com/sluicehq/sluice/driver/sqlite"
)

// TestUpgradeToLatest: the type-settings migration, which rebuilds sluice_jobs,
// keeps its rows, their ids' sequence and their keys.
func TestUpgradeToLatest(t *testing.T) {
	d, err := sqlite.Open(filepath.Join(t.TempDir(), "sluice.db"), sqlite.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { d.Close() })
	drivertest.ExerciseUpgrade(t, d, "sluice_jobs", 9, func(ctx context.Context, v int) error { return sqlite.MigrateTo(ctx, d, v) })
}
