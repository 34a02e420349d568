package sqlite_test

import (
	"fmt"
	"path/filepath"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/driver/sqlite"
)

// TestConcurrentOpensOfANewFile: processes started together on a file
// that does not exist yet (three `sluice migrate` from a deploy script)
// each open it; the first connection's pragmas switch it to WAL, which
// SQLite may refuse with SQLITE_BUSY without waiting. Every open must
// succeed.
func TestConcurrentOpensOfANewFile(t *testing.T) {
	const rounds, openers = 20, 8
	for round := range rounds {
		path := filepath.Join(t.TempDir(), fmt.Sprintf("new-%d.db", round))
		var wg sync.WaitGroup
		errs := make([]error, openers)
		for i := range openers {
			wg.Go(func() {
				d, err := sqlite.Open(path, sqlite.Options{})
				if err == nil {
					err = d.Close()
				}
				errs[i] = err
			})
		}
		wg.Wait()
		for i, err := range errs {
			require.NoError(t, err, "round %d, opener %d", round, i)
		}
	}
}
