package cli_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/driver"
	"github.com/sluicehq/sluice/internal/testkit/proctest"
	"github.com/sluicehq/sluice/internal/testkit/testdb"
	"github.com/sluicehq/sluice/sluicetype"
)

// writeConfig writes a config whose "append" type runs a shell one-liner
// that appends the job id to logPath.
func writeConfig(t *testing.T, extra string) (cfgPath, logPath string) {
	t.Helper()
	dir := t.TempDir()
	logPath = filepath.Join(dir, "exec.log")
	cfgPath = filepath.Join(dir, "sluice.yaml")
	cfg := fmt.Sprintf(`queues:
  default: { concurrency: 8 }
types:
  append:
    command: ["sh", "-c", "echo $SLUICE_JOB_ID >> %s"]
    timeout: 30s
  sleep:
    command: ["sleep", "30"]
    lease: 10s
%s`, logPath, extra)
	require.NoError(t, os.WriteFile(cfgPath, []byte(cfg), 0o644))
	return cfgPath, logPath
}

// dbConfig is writeConfig's extra text that names the test's database.
// SLUICE_PREFIX still picks the tables: it is a test hook with no config key.
func dbConfig(tg testdb.Target, extra string) string {
	return "db: " + tg.URL + "\n" + extra
}

// startWorker starts `sluice <args>` in the background and returns it.
func startWorker(t *testing.T, env []string, args ...string) *proctest.Proc {
	t.Helper()
	return startIn(t, "", env, args...)
}

// startIn is startWorker in the working directory dir ("" for a fresh empty one).
func startIn(t *testing.T, dir string, env []string, args ...string) *proctest.Proc {
	t.Helper()
	return proctest.StartCmd(t, "sluice "+strings.Join(args, " "), command(t, dir, env, args...))
}

func enqueueN(t *testing.T, d driver.Driver, typ string, n int) {
	t.Helper()
	c, err := sluice.NewClient(sluice.Config{Driver: d})
	require.NoError(t, err)
	ps := make([]sluice.EnqueueParams, n)
	for i := range ps {
		ps[i] = sluice.EnqueueParams{Type: typ}
	}
	_, err = c.EnqueueMany(context.Background(), ps)
	require.NoError(t, err)
}

func waitDone(t *testing.T, d driver.Driver, limit time.Duration) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for {
		st, err := d.Stats(context.Background())
		require.NoError(t, err)
		busy := int64(0)
		for _, s := range st {
			busy += s.Pending + s.Processing
		}
		if busy == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d jobs still pending or processing after %s", busy, limit)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// Four `sluice work` processes share one database: every job runs exactly once.
func TestWorkProcessesShareTheQueue(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"mysql", "postgres"} {
		t.Run(name, func(t *testing.T) {
			d, tg := testdb.OpenURL(t, name)
			cfg, logPath := writeConfig(t, dbConfig(tg, ""))
			const jobs = 2000
			enqueueN(t, d, "append", jobs)
			env := []string{"SLUICE_PREFIX=" + tg.Prefix}
			var procs []*proctest.Proc
			for i := 0; i < 4; i++ {
				procs = append(procs, startWorker(t, env, "work", "--config", cfg))
			}
			waitDone(t, d, 3*time.Minute)
			for _, p := range procs {
				require.NoError(t, p.Term(t, 2*time.Minute), "work exits 0 on SIGTERM")
			}
			b, err := os.ReadFile(logPath)
			require.NoError(t, err)
			seen := map[string]int{}
			for _, l := range strings.Fields(string(b)) {
				seen[l]++
			}
			require.Len(t, seen, jobs, "every job ran")
			for id, n := range seen {
				require.Equal(t, 1, n, "job %s ran %d times", id, n)
			}
			done, err := d.ListJobs(context.Background(), sluicetype.ListParams{Status: sluicetype.StatusSuccess, Limit: 1})
			require.NoError(t, err)
			require.NotEmpty(t, done)
			st, err := d.Stats(context.Background())
			require.NoError(t, err)
			for _, s := range st {
				require.Zero(t, s.Failed)
			}
		})
	}
}

// `sluice run` is bounded by --max-jobs (longjob_test.go has
// --max-seconds).
func TestRunCommandBounds(t *testing.T) {
	t.Parallel()
	d, tg := testdb.OpenURL(t, "sqlite")
	cfg, logPath := writeConfig(t, dbConfig(tg, ""))
	enqueueN(t, d, "append", 7)
	env := []string{"SLUICE_PREFIX=" + tg.Prefix}
	r := run(t, env, "", "run", "--config", cfg, "--max-jobs", "5")
	require.Equal(t, 0, r.Code, r.Stderr)
	require.JSONEq(t, `{"ok":true,"done":5,"retried":0,"failed":0,"requeued":0}`, r.Stdout)
	r = run(t, env, "", "run", "--config", cfg, "--max-jobs", "20")
	require.Equal(t, 0, r.Code, r.Stderr)
	require.JSONEq(t, `{"ok":true,"done":2,"retried":0,"failed":0,"requeued":0}`, r.Stdout)
	b, err := os.ReadFile(logPath)
	require.NoError(t, err)
	require.Len(t, strings.Fields(string(b)), 7)

	r = run(t, env, "", "run", "--config", cfg, "--max-jobs", "0")
	require.Equal(t, 2, r.Code)
}

// SIGTERM lets running jobs finish within the deadline, then returns the
// rest to pending uncharged; a pause made from the CLI reaches a running
// worker without a restart.
func TestWorkShutdownAndPause(t *testing.T) {
	t.Parallel()
	d, tg := testdb.OpenURL(t, "sqlite")
	cfg, logPath := writeConfig(t, dbConfig(tg, ""))
	env := []string{"SLUICE_PREFIX=" + tg.Prefix}
	w := startWorker(t, env, "work", "--config", cfg, "--shutdown-timeout", "1s")

	r := run(t, env, "", "--config", cfg, "queues", "pause", "default")
	require.Equal(t, 0, r.Code, r.Stderr)
	testdb.WaitFor(t, 10*time.Second, "the worker saw the pause", func() bool {
		return strings.Contains(w.Stderr(), `msg="queue paused: no new claims" queue=default`)
	})
	enqueueN(t, d, "append", 3)
	// Unpaused, the idle worker would claim them at its next poll, within
	// PollMax (1 s); twice that, and none ran.
	require.Never(t, func() bool {
		_, err := os.Stat(logPath)
		return err == nil
	}, 2*time.Second, 50*time.Millisecond, "a paused queue ran jobs")
	r = run(t, env, "", "--config", cfg, "queues", "resume", "default")
	require.Equal(t, 0, r.Code, r.Stderr)
	waitDone(t, d, 20*time.Second)
	require.Contains(t, w.Stderr(), `msg="queue resumed" queue=default`)

	enqueueN(t, d, "sleep", 2)
	testdb.WaitFor(t, 10*time.Second, "two jobs processing", func() bool {
		st, err := d.Stats(context.Background())
		require.NoError(t, err)
		return len(st) > 0 && st[0].Processing == 2
	})
	start := time.Now()
	require.NoError(t, w.Term(t, 2*time.Minute))
	require.Less(t, time.Since(start), shutdownBound(time.Second), "exit within the deadline, the handlers' grace and the requeue")
	jobs, err := d.ListJobs(context.Background(), sluicetype.ListParams{Type: "sleep"})
	require.NoError(t, err)
	for _, j := range jobs {
		require.Equal(t, sluicetype.StatusPending, j.Status)
		require.Equal(t, 0, j.Attempts)
		require.Empty(t, j.LockedBy, "no job left processing with a live lease")
	}
}

// shutdownBound is how long a SIGTERMed `sluice work` or `serve` with
// running jobs may take to exit: the --shutdown-timeout deadline, then
// the handlers' grace (worker.Config.Grace, 1 s: `sleep` returns at once
// on the group's SIGTERM), then about a second to requeue the jobs and
// exit on a loaded machine.
func shutdownBound(deadline time.Duration) time.Duration {
	return deadline + time.Second + time.Second
}

// serve refuses a non-loopback address without tokens, and serves the API.
func TestServe(t *testing.T) {
	t.Parallel()
	_, tg := testdb.OpenURL(t, "sqlite")
	cfg, _ := writeConfig(t, dbConfig(tg, ""))
	env := []string{"SLUICE_PREFIX=" + tg.Prefix}
	r := run(t, env, "", "serve", "--config", cfg, "--listen", "0.0.0.0:0")
	require.Equal(t, 2, r.Code)
	require.Contains(t, r.Stderr, "token")

	addr := testdb.FreeAddr(t)
	s := startWorker(t, env, "serve", "--config", cfg, "--listen", addr)
	var resp *http.Response
	var err error
	require.Eventually(t, func() bool {
		resp, err = http.Post("http://"+addr+"/v1/jobs", "application/json", strings.NewReader(`{"type":"append","key":"k1"}`))
		return err == nil
	}, time.Minute, 50*time.Millisecond)
	require.Equal(t, http.StatusCreated, resp.StatusCode)
	var res sluice.EnqueueResult
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&res))
	resp.Body.Close()
	require.False(t, res.Duplicate)
	require.NoError(t, s.Term(t, 2*time.Minute))
}
