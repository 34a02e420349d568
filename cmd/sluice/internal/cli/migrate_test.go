package cli_test

import (
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/dburl"
	"github.com/sluicehq/sluice/internal/testkit/proctest"
	"github.com/sluicehq/sluice/internal/testkit/testdb"
)

// TestMigrateConcurrentRuns: three `sluice migrate` processes started at
// once on a fresh database: exactly one reports the upgrade from 0, and the
// others, which waited for its lock, find the schema current. The version
// each reports having found is read under the migration lock; read before
// it, all three said "upgraded from 0".
func TestMigrateConcurrentRuns(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, name string) {
		url := testdb.URL(name, t.TempDir())
		prefix := testdb.Prefix() // tables that do not exist yet
		t.Cleanup(func() {
			if d, err := dburl.Open(url, dburl.Options{Prefix: prefix}); err == nil {
				testdb.Drop(d, prefix)
				d.Close()
			}
		})
		env := []string{"SLUICE_DB=" + url, "SLUICE_PREFIX=" + prefix}
		const runs = 3
		results := make([]proctest.Result, runs)
		var wg sync.WaitGroup
		for i := range runs {
			cmd := command(t, "", env, "migrate")
			wg.Go(func() {
				r, err := proctest.Output(cmd)
				if err != nil {
					t.Errorf("run sluice migrate: %v", err)
				}
				results[i] = r
			})
		}
		wg.Wait()
		upgraded, current := 0, 0
		for _, r := range results {
			require.Equal(t, 0, r.Code, r.Stderr)
			switch {
			case strings.Contains(r.Stdout, "(upgraded from 0)"):
				upgraded++
			case strings.Contains(r.Stdout, "(already up to date)"):
				current++
			default:
				t.Fatalf("unexpected output: %q", r.Stdout)
			}
		}
		require.Equal(t, 1, upgraded, "runs that upgraded: %+v", results)
		require.Equal(t, runs-1, current, "runs that found the schema current: %+v", results)
	})
}
