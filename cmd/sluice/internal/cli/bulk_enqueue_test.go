package cli_test

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/internal/testkit/proctest"
	"github.com/sluicehq/sluice/internal/testkit/testdb"
	"github.com/sluicehq/sluice/sluicetype"
)

// TestBulkEnqueueOverlappingKeys runs several `sluice enqueue --ndjson`
// processes at once over the same business keys, each in its own shuffled
// order. On PostgreSQL two such batches used to lock keys in opposite
// orders and one died with "deadlock detected"; a bulk enqueue must never
// fail because another writer holds some of its keys, and every key must be
// inserted exactly once across all processes.
func TestBulkEnqueueOverlappingKeys(t *testing.T) {
	t.Parallel()
	const procs, keys = 8, 1000
	testdb.ForEach(t, func(t *testing.T, name string) {
		d, tg := testdb.OpenURL(t, name)
		dir := t.TempDir()
		// The database comes from the config file, as users give it.
		cfg := proctest.Config(t, tg.URL, "")

		files := make([]string, procs)
		for p := range files {
			var b strings.Builder
			for _, k := range rand.Perm(keys) {
				fmt.Fprintf(&b, `{"type":"bulk","key":"bulk:%d","payload":{"from":%d}}`+"\n", k, p)
			}
			files[p] = filepath.Join(dir, fmt.Sprintf("jobs%d.ndjson", p))
			require.NoError(t, os.WriteFile(files[p], []byte(b.String()), 0o600))
		}

		outs := make([]proctest.Result, procs)
		errs := make([]error, procs)
		var wg sync.WaitGroup
		for p := range procs {
			cmd := proctest.Command(t, bin, []string{"SLUICE_PREFIX=" + tg.Prefix}, "--config", cfg, "enqueue", "--ndjson", files[p])
			wg.Go(func() { outs[p], errs[p] = proctest.Output(cmd) })
		}
		wg.Wait()

		inserted, dups := 0, 0
		for p, o := range outs {
			require.NoError(t, errs[p], "process %d", p)
			require.Equal(t, 0, o.Code, "process %d: %s", p, o.Stderr)
			var r struct{ Inserted, Duplicates int }
			require.NoError(t, json.Unmarshal([]byte(o.Stdout), &r), "process %d stdout %q", p, o.Stdout)
			require.Equal(t, keys, r.Inserted+r.Duplicates, "process %d", p)
			inserted += r.Inserted
			dups += r.Duplicates
		}
		require.Equal(t, keys, inserted, "each key is inserted by exactly one process")
		require.Equal(t, (procs-1)*keys, dups)

		seen := map[string]bool{}
		for _, j := range testdb.AllJobs(t, d, sluicetype.ListParams{}) {
			require.False(t, seen[j.Key], "key %q twice", j.Key)
			seen[j.Key] = true
		}
		require.Len(t, seen, keys)
	})
}
