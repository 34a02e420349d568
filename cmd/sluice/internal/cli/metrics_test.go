package cli_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
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

// documentedMetrics reads the metric names of the table of
// docs/observability.md "Metrics" ("sluice_go_sql_*" stays a pattern), so
// that a metric documented there without a driver in
// TestDocumentedMetrics fails it.
func documentedMetrics(t *testing.T) []string {
	t.Helper()
	f, err := os.Open(filepath.Join("..", "..", "..", "..", "docs/observability.md"))
	require.NoError(t, err)
	defer f.Close()
	name := regexp.MustCompile("`(sluice_[a-z_*]+)")
	var out []string
	in := false
	for sc := bufio.NewScanner(f); sc.Scan(); {
		l := sc.Text()
		switch {
		case l == "## Metrics":
			in = true
		case in && strings.HasPrefix(l, "#"):
			in = false
		case in && strings.HasPrefix(l, "| `"):
			first, _, _ := strings.Cut(strings.TrimPrefix(l, "|"), "|")
			for _, m := range name.FindAllStringSubmatch(first, -1) {
				out = append(out, m[1])
			}
		}
	}
	require.NotEmpty(t, out, "no metrics table found in docs/observability.md")
	return out
}

// scrape is one read of /metrics: every series line by its name and labels.
type scrape map[string]float64

func scrapeMetrics(t *testing.T, base, token string) scrape {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, base+"/metrics", nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	s := scrape{}
	for _, l := range strings.Split(string(body), "\n") {
		if k, v, ok := strings.Cut(l, " "); ok && !strings.HasPrefix(l, "#") {
			f, err := strconv.ParseFloat(v, 64)
			require.NoError(t, err, l)
			s[k] = f
		}
	}
	return s
}

// family is the metric name of a series line.
func family(series string) string {
	name, _, _ := strings.Cut(series, "{")
	for _, suffix := range []string{"_bucket", "_sum", "_count"} {
		name = strings.TrimSuffix(name, suffix)
	}
	return name
}

// metricCheck drives one documented metric family: fn returns what does
// not match yet between the scrape before the workload and a later one.
type metricCheck struct {
	family string
	fn     func(before, after scrape) []string
}

// exactly expects series to have grown by delta.
func exactly(series string, delta float64) metricCheck {
	return metricCheck{family(series), func(before, after scrape) []string {
		if got := after[series] - before[series]; got != delta {
			return []string{fmt.Sprintf("%s grew by %v, want %v", series, got, delta)}
		}
		return nil
	}}
}

// TestDocumentedMetrics runs a real `sluice serve` with a config file and
// drives every metric that docs/observability.md documents, checking on /metrics that
// each moved by exactly what the workload implies.
func TestDocumentedMetrics(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, testDocumentedMetrics)
}

func testDocumentedMetrics(t *testing.T, dbName string) {
	ctx := context.Background()
	d, tg := testdb.OpenURL(t, dbName)
	jobs := tg.Prefix + "jobs"
	items := batchTable(t, d, tg.Prefix, 250) // three chunks of at most 100

	addr := testdb.FreeAddr(t)
	const token = testToken
	// The stoppable job's command marks its start: a job cancelled after
	// its claim but before its handler started reports nothing to drop.
	started := filepath.Join(t.TempDir(), "stoppable-started")
	cfg := writeBatchConfig(t, fmt.Sprintf(`db: %q
listen: %s
auth: { tokens: [%q] }
queues:
  default: { concurrency: 4 }
  gauged:  { concurrency: 1, paused: true }
  orphans: { concurrency: 1, paused: true }
  parked:  { concurrency: 1, paused: true }
  runq:    { concurrency: 1 } # empty: for the /v1/run lock
types:
  ok:    { command: ["true"], circuit: { threshold: 3 } }
  flaky: { command: ["sh", "-c", "[ \"$SLUICE_JOB_ATTEMPT\" -gt 1 ]"], backoff: { base: 10ms, max: 10ms } }
  bad:   { command: ["sh", "-c", "exit 65"] }
  slow:  { command: ["sleep", "3"] }
  stoppable: { command: ["sh", "-c", "touch \"$0\"; exec sleep 300", %q] }
  held:   { queue: gauged, command: ["true"] }
  orphan: { queue: orphans, command: ["true"] }
  tick:   { queue: parked, command: ["true"] }
schedules:
  tick: { cron: "@every 2s", type: tick, overlap: forbid }
batches:
  sweep:
    source: "SELECT id, created_at FROM %s"
    key: [created_at, id]
    sink: { sql: "UPDATE %s SET hits = hits + 1 WHERE id IN ({id})" }
    chunk: { size: 100 }
`, tg.URL, addr, token, started, items, items))

	// The paused queue "gauged" gets its state before serve starts, so
	// that the first gauge refresh (at start) reads it and every later one
	// reads the same: 2 pending, 1 processing under a live lease, 1 failed.
	pre, err := sluice.NewClient(sluice.Config{Driver: d})
	require.NoError(t, err)
	_, err = pre.EnqueueMany(ctx, slices.Repeat([]sluice.EnqueueParams{{Type: "held", Queue: "gauged"}}, 4))
	require.NoError(t, err)
	claimed, err := d.Claim(ctx, driver.ClaimParams{Queue: "gauged", Limit: 2, Lease: time.Hour, Token: "test-holder"})
	require.NoError(t, err)
	require.Len(t, claimed, 2)
	msg := "failed by the test"
	lost, err := d.Complete(ctx, driver.CompleteParams{Completions: []driver.Completion{{ID: claimed[0].ID, Token: "test-holder", Status: sluicetype.StatusFailed, Error: &msg}}})
	require.NoError(t, err)
	require.Empty(t, lost)

	// A shard of a batch that no process runs, left running: its
	// checkpoint stands still, which the stalled-shard gauge reports.
	err = d.CreateCheckpoint(ctx, driver.CreateCheckpointParams{Batch: "stuck", Shard: "all", Status: sluicetype.CheckpointRunning, ChunkSize: 100})
	require.NoError(t, err)

	env := []string{"SLUICE_PREFIX=" + tg.Prefix}
	srv := startWorker(t, env, "serve", "--config", cfg)
	base := "http://" + addr
	testdb.WaitFor(t, time.Minute, "serve answers /healthz", func() bool { return proctest.Healthy(base) })
	api := func(method, path, body string) (int, string) {
		t.Helper()
		req, err := http.NewRequest(method, base+path, strings.NewReader(body))
		require.NoError(t, err)
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		return resp.StatusCode, string(b)
	}
	enqueue := func(body string, want int) int64 {
		t.Helper()
		code, out := api(http.MethodPost, "/v1/jobs", body)
		require.Equal(t, want, code, out)
		var id int64
		_, err := fmt.Sscanf(out, `{"id":%d`, &id)
		require.NoError(t, err, out)
		return id
	}

	before := scrapeMetrics(t, base, token)

	// Jobs through the API, worked by serve's workers.
	for range 3 {
		enqueue(`{"type":"ok"}`, http.StatusCreated)
	}
	enqueue(`{"type":"flaky","key":"f1"}`, http.StatusCreated)
	// A type the config does not declare: never claimed, it waits.
	enqueue(`{"type":"unserved"}`, http.StatusCreated)
	// A queue no config lists, as a framework's onQueue() names: nothing
	// claims from it, and it is counted.
	enqueue(`{"type":"mailer","queue":"emails"}`, http.StatusCreated)
	enqueue(`{"type":"flaky","key":"f1"}`, http.StatusOK) // the duplicate
	for range 2 {
		enqueue(`{"type":"bad"}`, http.StatusCreated)
	}
	later := enqueue(`{"type":"ok","delay":"1h"}`, http.StatusCreated)
	code, out := api(http.MethodPost, fmt.Sprintf("/v1/jobs/%d/cancel", later), "")
	require.Equal(t, http.StatusOK, code, out)
	enqueue(`{"type":"batch:sweep","key":"batch:sweep:all","payload":{"shard":"all"}}`, http.StatusCreated)

	// A lease lost: the test takes a running job's lease, as a rescuing
	// node would, so the worker's fenced completion changes no row.
	slow := enqueue(`{"type":"slow"}`, http.StatusCreated)
	testdb.WaitFor(t, time.Minute, "the slow job processing", func() bool {
		j, err := d.GetJob(ctx, slow)
		require.NoError(t, err)
		return j.Status == sluicetype.StatusProcessing
	})
	res, err := d.DB().ExecContext(ctx, fmt.Sprintf("UPDATE %s SET locked_by = 'thief' WHERE id = %d AND status = 'processing'", jobs, slow))
	require.NoError(t, err)
	n, err := res.RowsAffected()
	require.NoError(t, err)
	require.EqualValues(t, 1, n)

	// A running job cancelled: its command is stopped, and what it
	// reports then (a retry: sleep dies of the SIGTERM) is dropped.
	stoppable := enqueue(`{"type":"stoppable"}`, http.StatusCreated)
	testdb.WaitFor(t, time.Minute, "the stoppable job's command started", func() bool {
		_, err := os.Stat(started)
		return err == nil
	})
	code, out = api(http.MethodPost, fmt.Sprintf("/v1/jobs/%d/cancel", stoppable), "")
	require.Equal(t, http.StatusOK, code, out)

	// Two leases that expire with no worker alive: the maintenance leader
	// rescues both, the one on its last attempt to failed.
	enqueue(`{"type":"orphan"}`, http.StatusCreated)
	enqueue(`{"type":"orphan","max_attempts":1}`, http.StatusCreated)
	orphans, err := d.Claim(ctx, driver.ClaimParams{Queue: "orphans", Limit: 2, Lease: 500 * time.Millisecond, Token: "dead-worker"})
	require.NoError(t, err)
	require.Len(t, orphans, 2)

	// The /v1/run run lock: one pass takes it; one finds it held and skips.
	code, out = api(http.MethodPost, "/v1/run?queue=runq&max_seconds=5", "")
	require.Equal(t, http.StatusOK, code, out)
	require.NotContains(t, out, "skipped")
	l, err := d.AcquireLease(ctx, driver.LeaseParams{Name: "run:runq:", Holder: "test", TTL: time.Minute})
	require.NoError(t, err)
	require.True(t, l.Held)
	code, out = api(http.MethodPost, "/v1/run?queue=runq&max_seconds=5", "")
	require.Equal(t, http.StatusOK, code, out)
	require.Contains(t, out, `"skipped":"another run is active"`)
	_, err = d.ReleaseLease(ctx, driver.ReleaseLeaseParams{Name: "run:runq:", Holder: "test"})
	require.NoError(t, err)

	// Five wrong dashboard logins from one address: three are checked,
	// then the brake refuses the rest unchecked for a second. They come
	// from an address of their own, which the brake keeps apart from the
	// 127.0.0.1 of the scrapes that follow.
	d2 := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP("127.0.0.5")}}
	guesser := &http.Client{Transport: &http.Transport{DialContext: d2.DialContext}}
	for range 5 {
		resp, err := guesser.PostForm(base+"/login", url.Values{"token": {"wrong"}})
		require.NoError(t, err)
		resp.Body.Close()
	}

	const (
		ok    = `queue="default",type="ok"`
		flaky = `queue="default",type="flaky"`
		bad   = `queue="default",type="bad"`
		sweep = `queue="default",type="batch:sweep"`
	)
	checks := []metricCheck{
		exactly(`sluice_jobs_enqueued_total{`+ok+`}`, 4),
		exactly(`sluice_jobs_enqueued_total{`+flaky+`}`, 1),
		exactly(`sluice_jobs_enqueued_total{`+bad+`}`, 2),
		exactly(`sluice_jobs_enqueued_total{`+sweep+`}`, 1),
		exactly(`sluice_jobs_enqueued_total{queue="default",type="slow"}`, 1),
		exactly(`sluice_jobs_enqueued_total{queue="orphans",type="orphan"}`, 2),
		exactly(`sluice_jobs_deduplicated_total{`+flaky+`}`, 1),
		exactly(`sluice_login_failures_total{outcome="wrong_token"}`, 3),
		exactly(`sluice_login_failures_total{outcome="throttled"}`, 2),
		exactly(`sluice_jobs_completed_total{outcome="success",`+ok+`}`, 3),
		exactly(`sluice_jobs_completed_total{outcome="cancelled",`+ok+`}`, 1),
		exactly(`sluice_jobs_completed_total{outcome="retry",`+flaky+`}`, 1),
		exactly(`sluice_jobs_completed_total{outcome="success",`+flaky+`}`, 1),
		exactly(`sluice_jobs_completed_total{outcome="failed",`+bad+`}`, 2),
		exactly(`sluice_jobs_completed_total{outcome="success",`+sweep+`}`, 1),
		exactly(`sluice_leases_rescued_total`, 2),
		// The orphan on its last attempt failed for good in the rescue.
		exactly(`sluice_jobs_completed_total{outcome="failed",queue="orphans",type="orphan"}`, 1),
		exactly(`sluice_leases_lost_total{queue="default",type="slow"}`, 1),
		exactly(`sluice_jobs_completed_total{outcome="cancelled",queue="default",type="stoppable"}`, 1),
		exactly(`sluice_cancelled_outcomes_dropped_total{queue="default",reported="retry",type="stoppable"}`, 1),
		exactly(`sluice_lock_acquisitions_total{name="run:runq:"}`, 1),
		exactly(`sluice_lock_busy_total{name="run:runq:"}`, 1),
		exactly(`sluice_batch_rows_total{type="sweep"}`, 250),
		exactly(`sluice_batch_chunks_total{type="sweep"}`, 3),
		exactly(`sluice_batch_chunk_duration_seconds_count{type="sweep"}`, 3),
		// Every attempt that ran: the cancelled job never did, and the
		// slow job's outcome was dropped.
		exactly(`sluice_job_run_duration_seconds_count{`+ok+`}`, 3),
		exactly(`sluice_job_run_duration_seconds_count{`+flaky+`}`, 2),
		exactly(`sluice_job_run_duration_seconds_count{`+bad+`}`, 2),
		exactly(`sluice_job_run_duration_seconds_count{`+sweep+`}`, 1),
		exactly(`sluice_job_queue_latency_seconds_count{`+ok+`}`, 3),
		exactly(`sluice_job_queue_latency_seconds_count{`+flaky+`}`, 2),
		exactly(`sluice_job_queue_latency_seconds_count{`+bad+`}`, 2),
		exactly(`sluice_job_queue_latency_seconds_count{`+sweep+`}`, 1),
		// Idle polls claim too, so the default queue's count has no exact
		// value: at least two, since the flaky job's second attempt is
		// claimed after its first ended. A paused queue is never claimed from.
		{"sluice_claim_duration_seconds", func(before, after scrape) []string {
			var bad []string
			const def = `sluice_claim_duration_seconds_count{queue="default"}`
			if after[def]-before[def] < 2 {
				bad = append(bad, fmt.Sprintf("%s grew by %v, want at least 2", def, after[def]-before[def]))
			}
			if v := after[`sluice_claim_duration_seconds_count{queue="gauged"}`]; v != 0 {
				bad = append(bad, fmt.Sprintf("the paused queue gauged was claimed from %v times", v))
			}
			return bad
		}},
		// No worker serves it, so no worker claims it: it waits, counted.
		gauge(`sluice_jobs_waiting_for_handler{type="unserved"}`, 1),
		gauge(`sluice_jobs_in_unserved_queue{queue="emails"}`, 1),
		gauge(`sluice_queue_pending{queue="gauged"}`, 2),
		gauge(`sluice_queue_processing{queue="gauged"}`, 1),
		gauge(`sluice_queue_failed{queue="gauged"}`, 1),
		{"sluice_queue_oldest_pending_age_seconds", func(_, after scrape) []string {
			if v := after[`sluice_queue_oldest_pending_age_seconds{queue="gauged"}`]; v <= 0 {
				return []string{fmt.Sprintf("oldest pending age of gauged is %v, want > 0", v)}
			}
			return nil
		}},
		present(buildInfoSeries(t), 1, 1),
		present(`sluice_queue_paused{queue="parked"}`, 1, 1),
		present(`sluice_worker_heartbeat_age_seconds`, 0, 30),
		present(`sluice_batch_shard_stalled_seconds{type="stuck"}`, 0.001, 3600),
		present(`sluice_circuit_open{type="ok"}`, 0, 0),
		{"sluice_go_sql_*", func(_, after scrape) []string {
			var bad []string
			for _, m := range []string{"max_open_connections", "open_connections", "in_use_connections", "idle_connections",
				"wait_count_total", "wait_duration_seconds_total", "max_idle_closed_total", "max_idle_time_closed_total", "max_lifetime_closed_total"} {
				if _, ok := after[`sluice_go_sql_`+m+`{db_name="sluice"}`]; !ok {
					bad = append(bad, "no sluice_go_sql_"+m)
				}
			}
			open := after[`sluice_go_sql_open_connections{db_name="sluice"}`]
			inUse, idle := after[`sluice_go_sql_in_use_connections{db_name="sluice"}`], after[`sluice_go_sql_idle_connections{db_name="sluice"}`]
			if open < 1 || open != inUse+idle {
				bad = append(bad, fmt.Sprintf("pool: %v open, %v in use, %v idle; want open >= 1 and open = in use + idle", open, inUse, idle))
			}
			return bad
		}},
	}
	// The schedule's slots pass on their own clock, so their counters
	// must equal the fires and skips the scheduler recorded in the
	// database (this node is the only one), read between two equal scrapes.
	for _, fam := range []string{"sluice_schedule_fires_total", "sluice_schedule_skips_total"} {
		checks = append(checks, metricCheck{fam, func(_, after scrape) []string {
			st, err := d.ScheduleState(ctx, driver.ScheduleStateParams{Name: "tick"})
			require.NoError(t, err)
			again := scrapeMetrics(t, base, token)
			series := fam + `{queue="parked",type="tick"}`
			db := map[string]int64{"sluice_schedule_fires_total": st.Fires, "sluice_schedule_skips_total": st.Skips}[fam]
			switch {
			case after[series] != again[series]:
				return []string{series + " moved during the check"}
			case fam == "sluice_schedule_fires_total" && after[series] != 1:
				return []string{fmt.Sprintf("%s is %v, want 1: the first job stays pending in a paused queue", series, after[series])}
			case after[series] < 1 || after[series] != float64(db):
				return []string{fmt.Sprintf("%s is %v, the database recorded %d", series, after[series], db)}
			}
			return nil
		}})
	}

	documented := documentedMetrics(t)
	for _, name := range documented {
		if !slices.ContainsFunc(checks, func(c metricCheck) bool { return c.family == name }) {
			t.Errorf("docs/observability.md documents %s, but this test does not drive it", name)
		}
	}

	var missing []string
	var after scrape
	deadline := time.Now().Add(40 * time.Second)
	for {
		after = scrapeMetrics(t, base, token)
		missing = missing[:0]
		for _, c := range checks {
			missing = append(missing, c.fn(before, after)...)
		}
		if len(missing) == 0 {
			// Every sluice metric served is documented.
			for series := range after {
				f := family(series)
				if strings.HasPrefix(f, "sluice_") && !slices.Contains(documented, f) &&
					!(strings.HasPrefix(f, "sluice_go_sql_") && slices.Contains(documented, "sluice_go_sql_*")) {
					t.Errorf("/metrics serves %s, which docs/observability.md does not document", f)
				}
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("metrics did not reach their expected values:\n%s", strings.Join(missing, "\n"))
		}
		time.Sleep(200 * time.Millisecond)
	}
	require.Equal(t, int64(0), countWhere(t, d, items, "hits <> 1"), "the batch processed every row once")
	require.NoError(t, srv.Term(t, 2*time.Minute))

	// The roll-ups, flushed at shutdown, hold every completion that
	// /metrics counted: this process made them all.
	want := map[string]float64{}
	for series, v := range after {
		if family(series) == "sluice_jobs_completed_total" {
			want[series] = v
		}
	}
	rows, err := d.ReadStats(ctx, driver.ReadStatsParams{Since: time.Now().Add(-time.Hour)})
	require.NoError(t, err)
	got := map[string]float64{}
	for _, r := range rows {
		got[fmt.Sprintf(`sluice_jobs_completed_total{outcome=%q,queue=%q,type=%q}`, r.Outcome, r.Queue, r.Type)] += float64(r.Count)
	}
	require.Equal(t, want, got, "roll-ups against /metrics")
}

// buildInfoSeries is the sluice_build_info series the binary under test
// must serve: its labels are what `sluice version --json` says of it.
func buildInfoSeries(t *testing.T) string {
	out, err := exec.Command(bin, "version", "--json").Output()
	require.NoError(t, err, "sluice version --json")
	var v struct {
		Version   string `json:"version"`
		Commit    string `json:"commit"`
		GoVersion string `json:"go_version"`
	}
	require.NoError(t, json.Unmarshal(out, &v), string(out))
	return fmt.Sprintf(`sluice_build_info{commit=%q,go_version=%q,version=%q}`, v.Commit, v.GoVersion, v.Version)
}

// gauge expects a gauge's absolute value.
// present checks that series is served with a value in [lo, hi].
func present(series string, lo, hi float64) metricCheck {
	return metricCheck{family(series), func(_, after scrape) []string {
		got, ok := after[series]
		if !ok || got < lo || got > hi {
			return []string{fmt.Sprintf("%s is %v (served: %v), want it served within [%v, %v]", series, got, ok, lo, hi)}
		}
		return nil
	}}
}

func gauge(series string, want float64) metricCheck {
	return metricCheck{family(series), func(_, after scrape) []string {
		if got := after[series]; got != want {
			return []string{fmt.Sprintf("%s is %v, want %v", series, got, want)}
		}
		return nil
	}}
}
