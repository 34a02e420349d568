package cli_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/driver"
	"github.com/sluicehq/sluice/internal/testdb"
)

// TestBulkEnqueueOverlappingKeys runs several `sluice enqueue --ndjson`
// processes at once over the same business keys, each in its own shuffled
// order. On PostgreSQL two such batches used to lock keys in opposite
// orders and one died with "deadlock detected"; a bulk enqueue must never
// fail because another writer holds some of its keys, and every key must be
// inserted exactly once across all processes.
func TestBulkEnqueueOverlappingKeys(t *testing.T) {
	const procs, keys = 8, 1000
	for _, name := range testdb.Names {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			d, tg := testdb.OpenURL(t, name)
			dir := t.TempDir()
			// The database comes from the config file, as users give it.
			cfg := filepath.Join(dir, "sluice.yaml")
			require.NoError(t, os.WriteFile(cfg, []byte(fmt.Sprintf("db: %q\n", tg.URL)), 0o600))

			files := make([]string, procs)
			for p := range files {
				var b strings.Builder
				for _, k := range rand.Perm(keys) {
					fmt.Fprintf(&b, `{"type":"bulk","key":"bulk:%d","payload":{"from":%d}}`+"\n", k, p)
				}
				files[p] = filepath.Join(dir, fmt.Sprintf("jobs%d.ndjson", p))
				require.NoError(t, os.WriteFile(files[p], []byte(b.String()), 0o600))
			}

			type outcome struct {
				code           int
				stdout, stderr string
			}
			outs := make([]outcome, procs)
			var wg sync.WaitGroup
			for p := range procs {
				wg.Go(func() {
					cmd := exec.Command(bin, "--config", cfg, "enqueue", "--ndjson", files[p])
					cmd.Env = append(os.Environ(), "SLUICE_DB=", "SLUICE_CONFIG=", "SLUICE_PREFIX="+tg.Prefix)
					var so, se bytes.Buffer
					cmd.Stdout, cmd.Stderr = &so, &se
					err := cmd.Run()
					code := 0
					if ee, ok := err.(*exec.ExitError); ok {
						code = ee.ExitCode()
					} else if err != nil {
						code = -1
						se.WriteString(err.Error())
					}
					outs[p] = outcome{code, so.String(), se.String()}
				})
			}
			wg.Wait()

			inserted, dups := 0, 0
			for p, o := range outs {
				require.Equal(t, 0, o.code, "process %d: %s", p, o.stderr)
				var r struct{ Inserted, Duplicates int }
				require.NoError(t, json.Unmarshal([]byte(o.stdout), &r), "process %d stdout %q", p, o.stdout)
				require.Equal(t, keys, r.Inserted+r.Duplicates, "process %d", p)
				inserted += r.Inserted
				dups += r.Duplicates
			}
			require.Equal(t, keys, inserted, "each key is inserted by exactly one process")
			require.Equal(t, (procs-1)*keys, dups)

			seen := map[string]bool{}
			for after := int64(0); ; {
				jobs, err := d.ListJobs(t.Context(), driver.ListParams{AfterID: after, Limit: 1000})
				require.NoError(t, err)
				if len(jobs) == 0 {
					break
				}
				for _, j := range jobs {
					require.False(t, seen[j.Key], "key %q twice", j.Key)
					seen[j.Key] = true
				}
				after = jobs[len(jobs)-1].ID
			}
			require.Len(t, seen, keys)
		})
	}
}
