package cli_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/internal/testkit/proctest"
	"github.com/sluicehq/sluice/internal/testkit/testdb"
	"github.com/sluicehq/sluice/sluicetype"
)

// A command that reports progress once on fd 3 and then hangs is stuck
// after its type's progress_timeout: under on_stuck: cancel, `sluice
// serve` stops its process group and the job ends cancelled with the
// reason. A job of a type without a timeout, given its own through
// `sluice enqueue --progress-timeout`, is stuck the same way, and under
// the default policy (retry) fails once its one attempt is spent. Every
// wait is for a state, bounded generously: the machine may be loaded.
func TestStuckCommandFromTheCLI(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, name string) {
		d, tg := testdb.OpenURL(t, name)
		dir := t.TempDir()
		hang := fmt.Sprintf(`echo $$ > %s/$SLUICE_JOB_ID.pid; echo '{"done":1,"total":2,"message":"half way"}' >&3; exec sleep 300`, dir)
		cfg := filepath.Join(dir, "sluice.yaml")
		require.NoError(t, os.WriteFile(cfg, fmt.Appendf(nil, `db: %s
queues:
  default: { concurrency: 4 }
types:
  stuck:
    command: ["sh", "-c", %q]
    progress_timeout: 2s
    on_stuck: cancel
    kill_grace: 1s
  quiet:
    command: ["sh", "-c", %[2]q]
    kill_grace: 1s
`, tg.URL, hang), 0o644))
		env := []string{"SLUICE_PREFIX=" + tg.Prefix}
		addr := testdb.FreeAddr(t)
		s := startWorker(t, env, "--config", cfg, "serve", "--listen", addr)
		base := "http://" + addr
		testdb.WaitFor(t, time.Minute, "serve answers /healthz", func() bool { return proctest.Healthy(base) })

		resp, err := http.Post(base+"/v1/jobs", "application/json", strings.NewReader(`{"type":"stuck"}`))
		require.NoError(t, err)
		var res sluice.EnqueueResult
		require.NoError(t, json.NewDecoder(resp.Body).Decode(&res))
		resp.Body.Close()
		require.Equal(t, http.StatusCreated, resp.StatusCode)
		stuck := res.ID

		r := run(t, env, "", "--config", cfg, "enqueue", "quiet", "--progress-timeout", "2s", "--max-attempts", "1")
		require.Equal(t, 0, r.Code, r.Stderr)
		require.NoError(t, json.Unmarshal([]byte(r.Stdout), &res))
		quiet := res.ID

		pidOf := func(id int64) int {
			b, err := os.ReadFile(filepath.Join(dir, strconv.FormatInt(id, 10)+".pid"))
			if err != nil {
				return 0
			}
			pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
			return pid
		}
		final := func(id int64) *sluicetype.JobRow {
			var j *sluicetype.JobRow
			testdb.WaitFor(t, time.Minute, fmt.Sprintf("job %d finished", id), func() bool {
				got, err := d.GetJob(context.Background(), id)
				require.NoError(t, err)
				j = got
				return sluicetype.IsFinal(got.Status)
			})
			return j
		}

		const reason = "no progress reported for 2s"
		j := final(stuck)
		require.Equal(t, sluicetype.StatusCancelled, j.Status)
		require.Equal(t, "stuck: "+reason, j.LastError)
		require.Len(t, j.History, 1)
		require.Equal(t, sluicetype.OutcomeCancelled, j.History[0].Outcome)
		require.Equal(t, "stuck: "+reason, j.History[0].Error)
		require.NotNil(t, j.Progress, "its one report was kept")
		require.Equal(t, "half way", j.Progress.Message)
		testdb.WaitFor(t, time.Minute, "the stuck command's process gone", func() bool { return gone(pidOf(stuck)) })

		j = final(quiet)
		require.Equal(t, sluicetype.StatusFailed, j.Status, "retry policy with its one attempt spent")
		require.Equal(t, reason, j.LastError)
		require.Equal(t, 2*time.Second, j.ProgressTimeout)
		testdb.WaitFor(t, time.Minute, "the quiet command's process gone", func() bool { return gone(pidOf(quiet)) })

		r = run(t, env, "", "--config", cfg, "jobs", "show", strconv.FormatInt(quiet, 10))
		require.Equal(t, 0, r.Code, r.Stderr)
		require.Contains(t, r.Stdout, `"progress_timeout": "2s"`)
		require.Contains(t, r.Stdout, reason)
		require.Contains(t, s.Stderr(), "job reported no progress within its progress timeout; stopping its handler")
		require.NoError(t, s.Term(t, 2*time.Minute))
	})
}
