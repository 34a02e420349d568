package cli_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/internal/testkit/proctest"
	"github.com/sluicehq/sluice/internal/testkit/testdb"
	"github.com/sluicehq/sluice/sluicetype"
)

// cancelLease is the lease of the test's types: its quarter, the deadline
// of the worker's read of its cancelled jobs, is part of the bound.
const cancelLease = time.Minute

// cancelBound is the documented bound (docs/guarantees.md, "Cancel a
// running job") from a cancel's write to its handler being stopped: the
// poll (1 s), its read's deadline (lease/4) and the handler's own way of
// stopping (a command's kill grace).
func cancelBound(killGrace time.Duration) time.Duration {
	return time.Second + cancelLease/4 + killGrace
}

// Jobs running in one `sluice work` are cancelled with `sluice jobs
// cancel` from other processes, on each database: a webhook's request is
// aborted, a command that exits on SIGTERM is stopped at once, and one
// that ignores SIGTERM (its children too) is SIGKILLed after its type's
// kill_grace. Each job ends cancelled, with who cancelled it in its
// history; what the handlers report afterwards is dropped.
func TestCancelRunningJobsFromTheCLI(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, name string) {
		d, tg := testdb.OpenURL(t, name)
		dir := t.TempDir()

		done := make(chan struct{})
		var mu sync.Mutex
		hookStarted, hookAborted := map[string]bool{}, map[string]time.Time{}
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			// Read to its end: only then does the server watch the
			// connection, and end r's context when the client hangs up.
			io.Copy(io.Discard, r.Body)
			id := r.Header.Get("X-Sluice-Job-Id")
			mu.Lock()
			hookStarted[id] = true
			mu.Unlock()
			select {
			case <-r.Context().Done():
				mu.Lock()
				hookAborted[id] = time.Now()
				mu.Unlock()
			case <-done:
			}
		}))
		t.Cleanup(srv.Close)
		t.Cleanup(func() { close(done) }) // before srv.Close, which waits for the handler

		cfg := filepath.Join(dir, "sluice.yaml")
		require.NoError(t, os.WriteFile(cfg, fmt.Appendf(nil, `db: %s
queues:
  default: { concurrency: 4 }
types:
  hook: { http: { url: %q, timeout: 5m }, lease: %s }
  polite:
    command: ["sh", "-c", "echo $$ > %[4]s/$SLUICE_JOB_ID.pid; exec sleep 300"]
    lease: %[3]s
  stubborn:
    command: ["sh", "-c", "trap '' TERM; echo $$ > %[4]s/$SLUICE_JOB_ID.pid; while :; do sleep 0.1; done"]
    lease: %[3]s
    kill_grace: 1s
`, tg.URL, srv.URL, cancelLease, dir), 0o644))
		env := []string{"SLUICE_PREFIX=" + tg.Prefix}
		w := startWorker(t, env, "work", "--config", cfg)

		c, err := sluice.NewClient(sluice.Config{Driver: d})
		require.NoError(t, err)
		ids := map[string]int64{}
		for _, typ := range []string{"hook", "polite", "stubborn"} {
			r, err := c.Enqueue(context.Background(), sluice.EnqueueParams{Type: typ})
			require.NoError(t, err)
			ids[typ] = r.ID
		}
		pidOf := func(typ string) int {
			b, err := os.ReadFile(filepath.Join(dir, strconv.FormatInt(ids[typ], 10)+".pid"))
			if err != nil {
				return 0
			}
			pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
			return pid
		}
		testdb.WaitFor(t, time.Minute, "the three handlers running", func() bool {
			mu.Lock()
			defer mu.Unlock()
			return hookStarted[strconv.FormatInt(ids["hook"], 10)] && pidOf("polite") > 0 && pidOf("stubborn") > 0
		})

		for _, c := range []struct {
			typ     string
			grace   time.Duration
			stopped func() bool
		}{
			{"hook", 0, func() bool {
				mu.Lock()
				defer mu.Unlock()
				return !hookAborted[strconv.FormatInt(ids["hook"], 10)].IsZero()
			}},
			{"polite", 0, func() bool { return gone(pidOf("polite")) }},
			{"stubborn", time.Second, func() bool { return gone(pidOf("stubborn")) }},
		} {
			id := ids[c.typ]
			r := run(t, env, "", "--config", cfg, "jobs", "cancel", strconv.FormatInt(id, 10))
			require.Equal(t, 0, r.Code, r.Stderr)
			written := time.Now() // the cancel is in the database once the CLI exited
			require.Contains(t, r.Stdout, fmt.Sprintf("job %d cancelled", id))
			testdb.WaitFor(t, 2*time.Minute, c.typ+" handler stopped", c.stopped)
			took := time.Since(written)
			t.Logf("%s %s: stopped %s after the cancel (bound %s)", name, c.typ, took.Round(time.Millisecond), cancelBound(c.grace))
			require.LessOrEqual(t, took, cancelBound(c.grace), "%s: stopped later than the documented bound", c.typ)
			if c.typ == "stubborn" {
				// It ignored SIGTERM: only the SIGKILL after its grace ended it.
				require.GreaterOrEqual(t, took, c.grace, "the stubborn command was killed before its kill grace")
			}
		}

		for typ, id := range ids {
			testdb.WaitFor(t, time.Minute, typ+": the dropped outcome logged", func() bool {
				return strings.Contains(w.Stderr(), fmt.Sprintf("what it reported is dropped\" job_id=%d", id))
			})
			j, err := d.GetJob(context.Background(), id)
			require.NoError(t, err)
			require.Equal(t, sluicetype.StatusCancelled, j.Status, typ)
			require.NotEmpty(t, j.History, typ)
			last := j.History[len(j.History)-1]
			require.Equal(t, sluicetype.OutcomeCancelled, last.Outcome, typ)
			require.True(t, strings.HasPrefix(last.Error, "cancelled by an operator: cli:"), "%s: %q", typ, last.Error)
			require.Len(t, j.History, 1, "%s: the handler's late outcome was written", typ)
		}
		r := run(t, env, "", "--config", cfg, "jobs", "show", strconv.FormatInt(ids["stubborn"], 10))
		require.Equal(t, 0, r.Code, r.Stderr)
		require.Contains(t, r.Stdout, "cancelled by an operator: cli:")
		require.NoError(t, w.Term(t, 2*time.Minute))
	})
}

// gone reports whether no process has pid any more.
func gone(pid int) bool {
	return pid > 0 && errors.Is(syscall.Kill(pid, 0), syscall.ESRCH)
}

// A cron pass (`sluice run`) runs a long command; an operator cancels the
// job with `sluice jobs cancel` from another process while the pass waits
// for it. The pass stops the command (it would otherwise hold the pass and
// its run lock for 5 minutes), never lets it reach its end, and exits
// reporting the truth: the job counted neither done, retried, failed nor
// requeued (docs/guarantees.md: a pass counts a cancelled job in none of
// its counts), its log naming the cancel and the dropped outcome. The job
// ends cancelled, with the operator in its history.
func TestCancelDuringARunPass(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, name string) {
		d, tg := testdb.OpenURL(t, name)
		dir := t.TempDir()
		pidFile, finished := filepath.Join(dir, "pid"), filepath.Join(dir, "finished")
		cfg := filepath.Join(dir, "sluice.yaml")
		require.NoError(t, os.WriteFile(cfg, fmt.Appendf(nil, `db: %s
types:
  long:
    # Not exec'd: the shell outlives the sleep only if the cancel misses
    # the process group, and then marks the end the job must not reach.
    command: ["sh", "-c", "echo $$ > %s; sleep 300; touch %s"]
    lease: %s
    timeout: 10m
`, tg.URL, pidFile, finished, cancelLease), 0o644))
		env := []string{"SLUICE_PREFIX=" + tg.Prefix}
		r := run(t, env, "", "--config", cfg, "enqueue", "long")
		require.Equal(t, 0, r.Code, r.Stderr)
		id := onlyJob(t, d, "long").ID

		// The pass's window is longer than the test waits: only the
		// cancel can end it in time.
		cmd := command(t, "", env, "--config", cfg, "run", "--max-seconds", "600")
		var stdout testdb.SyncBuffer
		cmd.Stdout = &stdout
		pass := proctest.StartCmd(t, "sluice run", cmd)
		pid := 0
		testdb.WaitFor(t, time.Minute, "the pass running the command", func() bool {
			b, err := os.ReadFile(pidFile)
			pid, _ = strconv.Atoi(strings.TrimSpace(string(b)))
			return err == nil && pid > 0
		})

		r = run(t, env, "", "--config", cfg, "jobs", "cancel", strconv.FormatInt(id, 10))
		require.Equal(t, 0, r.Code, r.Stderr)
		require.Contains(t, r.Stdout, fmt.Sprintf("job %d cancelled", id))

		testdb.WaitFor(t, time.Minute, "the command stopped", func() bool { return gone(pid) })
		select {
		case <-pass.Done():
		case <-time.After(time.Minute):
			t.Fatalf("the pass still runs a minute after its only job was cancelled:\n%s", proctest.Tail(pass.Stderr(), 3000))
		}
		require.NoError(t, pass.Err(), pass.Stderr())
		_, err := os.Stat(finished)
		require.True(t, os.IsNotExist(err), "the cancelled command reached its end")

		var res map[string]any
		require.NoError(t, json.Unmarshal([]byte(stdout.String()), &res), stdout.String())
		require.Equal(t, true, res["ok"], stdout.String())
		for _, count := range []string{"done", "retried", "failed", "requeued"} {
			require.EqualValues(t, 0, res[count], "%s: the cancelled job counted as %s", stdout.String(), count)
		}
		require.Contains(t, pass.Stderr(), fmt.Sprintf("job cancelled; stopping its handler\" job_id=%d", id))
		require.Contains(t, pass.Stderr(), fmt.Sprintf("what it reported is dropped\" job_id=%d", id))

		j, err := d.GetJob(context.Background(), id)
		require.NoError(t, err)
		require.Equal(t, sluicetype.StatusCancelled, j.Status)
		require.Len(t, j.History, 1, "the handler's own outcome was written after the cancel")
		require.Equal(t, sluicetype.OutcomeCancelled, j.History[0].Outcome)
		require.True(t, strings.HasPrefix(j.History[0].Error, "cancelled by an operator: cli:"), j.History[0].Error)
		r = run(t, env, "", "--config", cfg, "jobs", "show", strconv.FormatInt(id, 10))
		require.Equal(t, 0, r.Code, r.Stderr)
		require.Contains(t, r.Stdout, "cancelled by an operator: cli:")
	})
}
