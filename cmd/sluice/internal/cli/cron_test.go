package cli_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
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

// cronScript plays a job by its key: ok:* succeeds, flaky:* fails its
// first attempt and succeeds on the second, perm:* fails with the
// permanent exit code, doomed:* always fails transiently (max_attempts 2,
// so its second attempt fails it for good).
const cronScript = `case "$SLUICE_JOB_KEY" in
  ok:*) exit 0 ;;
  flaky:*) [ "$SLUICE_JOB_ATTEMPT" -ge 2 ] && exit 0; echo "try later" >&2; exit 3 ;;
  perm:*) echo "bad input" >&2; exit 65 ;;
  doomed:*) echo "always down" >&2; exit 3 ;;
esac`

// cronBackoff is the retry delay of the "sync" type: long enough that a
// pass never reaches a job it retried itself (the delay is drawn from
// [base/2, base]), short enough for a test to wait for.
const cronBackoff = 2 * time.Second

// writeCronConfig writes a config that names its database with db:, as a
// crontab user's config does; tests pass no --db.
func writeCronConfig(t *testing.T, dbURL string) string {
	t.Helper()
	script, err := json.Marshal(cronScript)
	require.NoError(t, err)
	cfg := fmt.Sprintf(`db: %q
queues:
  default: { concurrency: 4 }
types:
  sync:
    command: ["sh", "-c", %s]
    max_attempts: 2
    backoff: { base: %s, max: %s }
`, dbURL, script, cronBackoff, cronBackoff)
	path := filepath.Join(t.TempDir(), "sluice.yaml")
	require.NoError(t, os.WriteFile(path, []byte(cfg), 0o644))
	return path
}

// The cron workload: 8 ok, 3 flaky, 2 perm, 2 doomed.
var cronJobs = map[string]int{"ok": 8, "flaky": 3, "perm": 2, "doomed": 2}

// What two passes over the workload must report: the first runs every job
// once, the second (after the backoff) the five it retried.
var (
	firstPass  = map[string]int{"done": 8, "retried": 5, "failed": 2, "requeued": 0}
	secondPass = map[string]int{"done": 3, "retried": 0, "failed": 2, "requeued": 0}
	// Finished attempts by outcome over both passes, for metrics and roll-ups.
	cronOutcomes = map[string]int64{"success": 11, "retry": 5, "failed": 4}
	// Attempts over both passes, and those that failed.
	cronAttempts, cronFailures = 20, 9
)

func cronParams() []sluice.EnqueueParams {
	var ps []sluice.EnqueueParams
	for kind, n := range cronJobs {
		for i := range n {
			// MaxAttempts as the config's: a client without the config's
			// types enqueues with the default.
			ps = append(ps, sluice.EnqueueParams{Type: "sync", Key: fmt.Sprintf("%s:%d", kind, i), MaxAttempts: 2})
		}
	}
	return ps
}

// passCounts reads the counts of a pass's answer, requiring every one.
func passCounts(t *testing.T, answer string) map[string]int {
	t.Helper()
	var m map[string]any
	require.NoError(t, json.Unmarshal([]byte(answer), &m), answer)
	require.Equal(t, true, m["ok"], answer)
	require.NotContains(t, m, "skipped", answer)
	out := map[string]int{}
	for _, k := range []string{"done", "retried", "failed", "requeued"} {
		v, ok := m[k].(float64)
		require.True(t, ok, "%s missing from %s", k, answer)
		out[k] = int(v)
	}
	return out
}

// waitRetriesDue waits until every pending job may run.
func waitRetriesDue(t *testing.T, d driver.Driver) {
	t.Helper()
	testdb.WaitFor(t, 2*cronBackoff+5*time.Second, "every pending job due", func() bool {
		jobs, err := d.ListJobs(context.Background(), sluicetype.ListParams{Status: sluicetype.StatusPending, Limit: 100})
		require.NoError(t, err)
		now, err := d.Now(context.Background())
		require.NoError(t, err)
		for _, j := range jobs {
			if j.NextRunAt.After(now) {
				return false
			}
		}
		return true
	})
}

// rollups sums the sluice_stats roll-ups of the last hour by outcome.
func rollups(t *testing.T, d driver.Driver, typ string) map[string]int64 {
	t.Helper()
	rows, err := d.ReadStats(context.Background(), driver.ReadStatsParams{Since: time.Now().Add(-time.Hour)})
	require.NoError(t, err)
	got := map[string]int64{}
	for _, r := range rows {
		if r.Type == typ {
			got[string(r.Outcome)] += r.Count
		}
	}
	return got
}

// attemptLines returns the JSON log lines that describe one attempt:
// those with every job field.
func attemptLines(t *testing.T, log string) []map[string]any {
	t.Helper()
	var out []map[string]any
	sc := bufio.NewScanner(strings.NewReader(log))
	for sc.Scan() {
		var m map[string]any
		if json.Unmarshal(sc.Bytes(), &m) != nil {
			continue // the "listening on" line
		}
		has := true
		for _, k := range []string{"job_id", "type", "queue", "attempt", "duration"} {
			_, ok := m[k]
			has = has && ok
		}
		if has {
			out = append(out, m)
		}
	}
	return out
}

// checkAttemptLog checks the log of the two passes: one line per attempt
// with the job fields, and a warning for each failed attempt.
func checkAttemptLog(t *testing.T, log string, attempts, failures int) {
	t.Helper()
	lines := attemptLines(t, log)
	require.Len(t, lines, attempts, log)
	byOutcome := map[string]int64{}
	warns := 0
	for _, l := range lines {
		if o, ok := l["outcome"].(string); ok {
			byOutcome[o]++
		}
		if l["level"] == "WARN" {
			warns++
			require.Equal(t, "job attempt failed", l["msg"])
			require.Contains(t, l["error"], "exit code", "a failure says how the command ended")
		}
	}
	require.Equal(t, failures, warns, log)
	require.Equal(t, cronOutcomes, byOutcome, log)
}

// A cron-triggered pass over HTTP (`sluice serve` with the API only, and
// curl in a crontab) is observed like `sluice work`: exact counts in the
// answer, in /metrics and in the /v1/stats roll-ups, and a log line per
// attempt.
func TestCronPassOverHTTP(t *testing.T) {
	t.Parallel()
	for _, name := range testdb.Names {
		t.Run(name, func(t *testing.T) {
			d, tg := testdb.OpenURL(t, name)
			cfg := writeCronConfig(t, tg.URL)
			addr := testdb.FreeAddr(t)
			srv := startWorker(t, []string{"SLUICE_PREFIX=" + tg.Prefix},
				"--config", cfg, "--log-level", "debug", "--log-format", "json", "serve", "--no-workers", "--listen", addr)
			base := "http://" + addr

			var body []string
			for _, p := range cronParams() {
				body = append(body, fmt.Sprintf(`{"type":%q,"key":%q}`, p.Type, p.Key))
			}
			var resp *http.Response
			var err error
			require.Eventually(t, func() bool {
				resp, err = http.Post(base+"/v1/jobs/many", "application/json", strings.NewReader("["+strings.Join(body, ",")+"]"))
				return err == nil
			}, time.Minute, 50*time.Millisecond)
			require.Equal(t, http.StatusOK, resp.StatusCode)
			resp.Body.Close()

			pass := func(query string) map[string]int {
				t.Helper()
				resp, err := http.Post(base+"/v1/run?"+query, "", nil)
				require.NoError(t, err)
				defer resp.Body.Close()
				b, err := io.ReadAll(resp.Body)
				require.NoError(t, err)
				require.Equal(t, http.StatusOK, resp.StatusCode, string(b))
				return passCounts(t, string(b))
			}
			require.Equal(t, firstPass, pass("type=sync&max_jobs=100&max_seconds=60"))
			waitRetriesDue(t, d)
			require.Equal(t, secondPass, pass("type=sync&max_jobs=100&max_seconds=60"))
			// The roll-ups are written when the pass answers, with no
			// heartbeat running (--no-workers).
			var stats struct {
				Queues []sluicetype.QueueStats `json:"queues"`
			}
			resp, err = http.Get(base + "/v1/stats")
			require.NoError(t, err)
			require.NoError(t, json.NewDecoder(resp.Body).Decode(&stats))
			resp.Body.Close()
			require.Len(t, stats.Queues, 1)
			require.Equal(t, cronOutcomes, stats.Queues[0].FinishedHour)

			resp, err = http.Get(base + "/metrics")
			require.NoError(t, err)
			b, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			require.NoError(t, err)
			metrics := map[string]string{}
			for _, l := range strings.Split(string(b), "\n") {
				if k, v, ok := strings.Cut(l, " "); ok && !strings.HasPrefix(l, "#") {
					metrics[k] = v
				}
			}
			for outcome, n := range cronOutcomes {
				k := fmt.Sprintf(`sluice_jobs_completed_total{outcome=%q,queue="default",type="sync"}`, outcome)
				require.Equal(t, fmt.Sprint(n), metrics[k], "%s in:\n%s", k, b)
			}
			require.Equal(t, fmt.Sprint(cronAttempts), metrics[`sluice_job_run_duration_seconds_count{queue="default",type="sync"}`])
			require.Equal(t, cronOutcomes, rollups(t, d, "sync"))

			require.NoError(t, srv.Term(t, 2*time.Minute))
			checkAttemptLog(t, srv.Stderr(), cronAttempts, cronFailures)
		})
	}
}

// `sluice run` from a crontab is a short-lived process: its attempts are
// logged, its counts printed exactly, and its roll-ups are in
// sluice_stats once it has exited.
func TestCronPassCommand(t *testing.T) {
	t.Parallel()
	for _, name := range testdb.Names {
		t.Run(name, func(t *testing.T) {
			d, tg := testdb.OpenURL(t, name)
			cfg := writeCronConfig(t, tg.URL)
			c, err := sluice.NewClient(sluice.Config{Driver: d})
			require.NoError(t, err)
			_, err = c.EnqueueMany(context.Background(), cronParams())
			require.NoError(t, err)

			env := []string{"SLUICE_PREFIX=" + tg.Prefix}
			var log strings.Builder
			for i, want := range []map[string]int{firstPass, secondPass} {
				if i > 0 {
					waitRetriesDue(t, d)
				}
				r := run(t, env, "", "--config", cfg, "--log-level", "debug", "--log-format", "json", "run", "--type", "sync", "--max-jobs", "100")
				require.Equal(t, 0, r.Code, r.Stderr)
				require.Equal(t, want, passCounts(t, r.Stdout))
				log.WriteString(r.Stderr)
				if i == 0 {
					require.Equal(t, map[string]int64{"success": 8, "retry": 5, "failed": 2}, rollups(t, d, "sync"))
				}
			}
			require.Equal(t, cronOutcomes, rollups(t, d, "sync"))
			checkAttemptLog(t, log.String(), cronAttempts, cronFailures)
		})
	}
}

// Logs above debug level never carry a job's payload, even when the
// handler repeats it in its stderr or its response body: those stay in
// last_error and in debug logs.
func TestHandlerOutputStaysOutOfLogs(t *testing.T) {
	t.Parallel()
	const marker = "SECRET-PAYLOAD-7f3a"
	echo := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		w.WriteHeader(http.StatusInternalServerError)
		w.Write(b)
	}))
	defer echo.Close()
	d, tg := testdb.OpenURL(t, "sqlite")
	cfg := proctest.Config(t, tg.URL, fmt.Sprintf(`queues:
  default: { concurrency: 2 }
types:
  echo:
    command: ["sh", "-c", "cat >&2; exit 1"]
    max_attempts: 1
  hook:
    http: { url: %q }
    max_attempts: 1
`, echo.URL))
	c, err := sluice.NewClient(sluice.Config{Driver: d})
	require.NoError(t, err)
	enqueue := func() {
		t.Helper()
		for _, typ := range []string{"echo", "hook"} {
			_, err := c.Enqueue(context.Background(), sluice.EnqueueParams{Type: typ, Payload: map[string]string{"card": marker}, MaxAttempts: 1})
			require.NoError(t, err)
		}
	}
	env := []string{"SLUICE_PREFIX=" + tg.Prefix}

	enqueue()
	w := startWorker(t, env, "--config", cfg, "work")
	waitDone(t, d, 20*time.Second)
	require.NoError(t, w.Term(t, 2*time.Minute))
	log := w.Stderr()
	require.Contains(t, log, `error="command sh: exit code 1"`)
	require.Contains(t, log, `error="HTTP 500"`)
	require.NotContains(t, log, marker, "info level: no payload in the log")
	jobs, err := d.ListJobs(context.Background(), sluicetype.ListParams{Status: sluicetype.StatusFailed})
	require.NoError(t, err)
	require.Len(t, jobs, 2)
	for _, j := range jobs {
		require.Contains(t, j.LastError, marker, "last_error keeps the handler's output")
	}

	enqueue()
	r := run(t, env, "", "--config", cfg, "--log-level", "debug", "run")
	require.Equal(t, 0, r.Code, r.Stderr)
	require.Equal(t, 2, strings.Count(r.Stderr, marker), "debug level shows the output of each attempt:\n%s", r.Stderr)
}
