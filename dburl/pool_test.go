package dburl_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/dburl"
	"github.com/sluicehq/sluice/internal/testkit/testdb"
)

// pool_max_conns caps a process's pool on the server databases, never
// reaches the server (which would refuse an unknown session variable or
// runtime parameter), and a value out of range is refused naming it. On
// SQLite, which would ignore it, it is refused.
func TestPoolMaxConns(t *testing.T) {
	testdb.ForEach(t, func(t *testing.T, name string) {
		if name == "sqlite" {
			_, err := dburl.Open("sqlite:"+t.TempDir()+"/q.db?pool_max_conns=5", dburl.Options{})
			require.ErrorContains(t, err, "sqlite URL parameter pool_max_conns: SQLite has one writer connection")
			return
		}
		base := testdb.URL(name, "")
		with := func(q string) string {
			if strings.Contains(base, "?") {
				return base + "&" + q
			}
			return base + "?" + q
		}
		def := map[string]int{"mysql": 32, "postgres": 16}[name]
		d, err := dburl.Open(base, dburl.Options{})
		require.NoError(t, err)
		require.Equal(t, def, d.DB().Stats().MaxOpenConnections, "the default")
		require.NoError(t, d.Close())

		d, err = dburl.Open(with("pool_max_conns=5"), dburl.Options{})
		require.NoError(t, err)
		require.Equal(t, 5, d.DB().Stats().MaxOpenConnections)
		// A statement runs: the parameter did not reach the server.
		var one int
		require.NoError(t, d.DB().QueryRow("SELECT 1").Scan(&one))
		require.NoError(t, d.Close())

		for _, bad := range []string{"pool_max_conns=3", "pool_max_conns=0", "pool_max_conns=1001", "pool_max_conns=abc",
			"pool_max_conns=", "pool_max_conns=5&pool_max_conns=6"} {
			_, err := dburl.Open(with(bad), dburl.Options{})
			require.Error(t, err, bad)
			require.ErrorContains(t, err, "URL parameter pool_max_conns=", bad)
			require.ErrorContains(t, err, "want one whole number from 4 to 1000", bad)
		}
	})
}
