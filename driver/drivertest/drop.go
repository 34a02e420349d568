package drivertest

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/driver"
)

func exerciseDrop(t *testing.T, open Opener) {
	// DropTables matches the prefix exactly: '_' is no wildcard, so the
	// tables of a prefix that differs only there stay.
	t.Run("ExactPrefix", func(t *testing.T) {
		t.Parallel()
		b := setup(t, open)
		prefix := randomName("dt") + "_"
		twin := strings.TrimSuffix(prefix, "_") + "x_" // what LIKE 'prefix%' also matches
		t.Cleanup(func() { b.d.DropTables(b.ctx, driver.DropTablesParams{Prefix: twin}) })
		for _, name := range []string{prefix + "a", prefix + "b", twin + "a"} {
			_, err := b.d.DB().ExecContext(b.ctx, "CREATE TABLE "+name+" (id INTEGER)")
			require.NoError(t, err)
		}
		exists := func(name string) bool {
			_, err := b.d.DB().ExecContext(b.ctx, "SELECT COUNT(*) FROM "+name)
			return err == nil
		}
		require.NoError(t, b.d.DropTables(b.ctx, driver.DropTablesParams{Prefix: prefix}))
		require.False(t, exists(prefix+"a"))
		require.False(t, exists(prefix+"b"))
		require.True(t, exists(twin+"a"), "a table of another prefix was dropped")
		require.NoError(t, b.d.DropTables(b.ctx, driver.DropTablesParams{Prefix: twin}))
		require.False(t, exists(twin+"a"))

		require.Error(t, b.d.DropTables(b.ctx, driver.DropTablesParams{Prefix: "bad%"}), "a prefix is validated")
	})
}
