package server_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/driver"
	"github.com/sluicehq/sluice/internal/testkit/testdb"
	"github.com/sluicehq/sluice/server"
	"github.com/sluicehq/sluice/sluicetype"
)

// TestMetricsExactCounts runs a known workload and scrapes /metrics
// through the server: every outcome's counter must be exact.
func TestMetricsExactCounts(t *testing.T) {
	testdb.ForEachDriver(t, func(t *testing.T, d driver.Driver) {
		ctx := context.Background()
		types := map[string]sluice.Type{
			"ok": {Handler: sluice.HandlerFunc(func(context.Context, *sluice.Job) error { return nil })},
			// Fails its first attempt, then succeeds: one retry, one success.
			"flaky": {Handler: sluice.HandlerFunc(func(_ context.Context, j *sluice.Job) error {
				if j.Attempt == 1 {
					return sluice.RetryAfter(errors.New("first attempt fails"), time.Millisecond)
				}
				return nil
			}), Backoff: sluice.Backoff{Base: time.Millisecond, Max: time.Millisecond}},
			// A permanent failure is an answer: it leaves the breaker closed.
			"bad": {Circuit: sluice.Circuit{Threshold: 1}, Handler: sluice.HandlerFunc(func(context.Context, *sluice.Job) error {
				return sluice.Permanent(errors.New("never works"))
			})},
			"later": {Queue: "slow"},
		}
		c, err := sluice.NewClient(sluice.Config{Driver: d, Types: types, Queues: map[string]sluice.QueueConfig{"default": {Concurrency: 4}},
			PollMax: 20 * time.Millisecond})
		require.NoError(t, err)
		for range 3 {
			_, err = c.Enqueue(ctx, sluice.EnqueueParams{Type: "ok"})
			require.NoError(t, err)
		}
		_, err = c.Enqueue(ctx, sluice.EnqueueParams{Type: "flaky", Key: "f1"})
		require.NoError(t, err)
		r, err := c.Enqueue(ctx, sluice.EnqueueParams{Type: "flaky", Key: "f1"})
		require.NoError(t, err)
		require.True(t, r.Duplicate)
		for range 2 {
			_, err = c.Enqueue(ctx, sluice.EnqueueParams{Type: "bad"})
			require.NoError(t, err)
		}
		later, err := c.Enqueue(ctx, sluice.EnqueueParams{Type: "later"})
		require.NoError(t, err)
		require.NoError(t, c.Cancel(ctx, later.ID))

		// A type this client does not run, opened by hand for the nodes that do.
		_, err = c.OpenCircuit(ctx, "elsewhere")
		require.NoError(t, err)

		require.NoError(t, c.Start(ctx))
		testdb.WaitFor(t, time.Minute, "the default queue drained", func() bool {
			st, err := c.Stats(ctx)
			require.NoError(t, err)
			for _, s := range st {
				if s.Queue == "default" && (s.Pending > 0 || s.Processing > 0) {
					return false
				}
			}
			return true
		})
		stopCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		c.Stop(stopCtx) // flushes roll-ups; gauges keep their last values

		h, err := server.New(server.Config{Client: c, Tokens: []string{token}})
		require.NoError(t, err)
		srv := newTestServer(t, h)
		resp := get(t, srv+"/metrics", "")
		require.Equal(t, http.StatusUnauthorized, resp.StatusCode, "metrics need the token")
		resp = get(t, srv+"/metrics", token)
		require.Equal(t, http.StatusOK, resp.StatusCode)
		b, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		body := string(b)

		want := map[string]string{
			`sluice_jobs_enqueued_total{queue="default",type="ok"}`:                       "3",
			`sluice_jobs_enqueued_total{queue="default",type="flaky"}`:                    "1",
			`sluice_jobs_enqueued_total{queue="default",type="bad"}`:                      "2",
			`sluice_jobs_enqueued_total{queue="slow",type="later"}`:                       "1",
			`sluice_jobs_deduplicated_total{queue="default",type="flaky"}`:                "1",
			`sluice_jobs_completed_total{outcome="success",queue="default",type="ok"}`:    "3",
			`sluice_jobs_completed_total{outcome="retry",queue="default",type="flaky"}`:   "1",
			`sluice_jobs_completed_total{outcome="success",queue="default",type="flaky"}`: "1",
			`sluice_jobs_completed_total{outcome="failed",queue="default",type="bad"}`:    "2",
			`sluice_jobs_completed_total{outcome="cancelled",queue="slow",type="later"}`:  "1",
			`sluice_job_run_duration_seconds_count{queue="default",type="ok"}`:            "3",
			`sluice_job_run_duration_seconds_count{queue="default",type="flaky"}`:         "2",
			`sluice_job_queue_latency_seconds_count{queue="default",type="bad"}`:          "2",
		}
		lines := map[string]string{}
		for _, l := range strings.Split(body, "\n") {
			if k, v, ok := strings.Cut(l, " "); ok && !strings.HasPrefix(l, "#") {
				lines[k] = v
			}
		}
		for k, v := range want {
			require.Equal(t, v, lines[k], "%s in:\n%s", k, body)
		}
		// No lease was lost, so the counter has no series yet.
		require.NotContains(t, body, "sluice_leases_lost_total{")
		require.NotContains(t, body, "job_id")
		require.Contains(t, body, "sluice_go_sql_open_connections{db_name=\"sluice\"} ")
		// Gauges come from the interval refresh, which ran at Start.
		require.Contains(t, body, `sluice_queue_pending{queue="default"} `)
		require.Contains(t, body, `sluice_circuit_open{type="bad"} 0`+"\n")
		require.Contains(t, body, `sluice_circuit_open{type="elsewhere"} 1`+"\n")
		require.Contains(t, body, "sluice_claim_duration_seconds_count{queue=\"default\"}")

		// The roll-ups hold the same counts.
		rows, err := d.ReadStats(ctx, driver.ReadStatsParams{Since: time.Now().Add(-time.Hour)})
		require.NoError(t, err)
		got := map[string]int64{}
		for _, r := range rows {
			got[r.Type+"/"+string(r.Outcome)] += r.Count
		}
		require.Equal(t, map[string]int64{"ok/success": 3, "flaky/retry": 1, "flaky/success": 1, "bad/failed": 2, "later/cancelled": 1}, got)
		nodes, err := d.ListNodes(ctx)
		require.NoError(t, err)
		require.Empty(t, nodes, "Stop deletes the node row")
	})
}

func newTestServer(t testing.TB, h http.Handler) string {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv.URL
}

// get fetches url with a Bearer token when tok is set.
func get(t *testing.T, url, tok string) *http.Response {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	require.NoError(t, err)
	if tok != "" {
		req.Header.Set("Authorization", "Bearer "+tok)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

// TestMetricsAlertGauges checks the gauges the alert rules need, from the
// interval refresh: a paused queue, the newest worker heartbeat's age
// (absent with no worker), and a running batch shard whose checkpoint has
// not moved.
func TestMetricsAlertGauges(t *testing.T) {
	d, tg := testdb.OpenURL(t, "sqlite")
	ctx := context.Background()
	// scrape starts a client (whose first refresh runs at once) and reads
	// its /metrics once the refresh has run.
	scrape := func() map[string]string {
		c, err := sluice.NewClient(sluice.Config{Driver: d})
		require.NoError(t, err)
		h, err := server.New(server.Config{Client: c, Tokens: []string{token}})
		require.NoError(t, err)
		srv := newTestServer(t, h)
		gctx, stop := context.WithCancel(ctx)
		t.Cleanup(stop)
		c.StartGauges(gctx)
		lines := map[string]string{}
		testdb.WaitFor(t, time.Minute, "the stalled batch shard on /metrics", func() bool {
			resp := get(t, srv+"/metrics", token)
			b, err := io.ReadAll(resp.Body)
			require.NoError(t, err)
			for _, l := range strings.Split(string(b), "\n") {
				if k, v, ok := strings.Cut(l, " "); ok && !strings.HasPrefix(l, "#") {
					lines[k] = v
				}
			}
			return lines[`sluice_batch_shard_stalled_seconds{type="backfill"}`] != ""
		})
		return lines
	}
	require.NoError(t, d.SetQueuePaused(ctx, driver.SetQueuePausedParams{Queue: "mail", Paused: true}))
	require.NoError(t, d.CreateCheckpoint(ctx, driver.CreateCheckpointParams{Batch: "backfill", Shard: "0", Status: sluicetype.CheckpointRunning, ChunkSize: 10}))
	require.NoError(t, d.CreateCheckpoint(ctx, driver.CreateCheckpointParams{Batch: "done", Shard: "0", Status: "done", ChunkSize: 10}))
	_, err := d.DB().ExecContext(ctx, "UPDATE "+tg.Prefix+"checkpoints SET updated_at = strftime('%Y-%m-%d %H:%M:%f', 'now', '-600 seconds')")
	require.NoError(t, err)
	m := scrape()
	require.Equal(t, "1", m[`sluice_queue_paused{queue="mail"}`])
	_, ok := m["sluice_worker_heartbeat_age_seconds"]
	require.False(t, ok, "no worker row: the heartbeat age is absent")
	stalled, err := strconv.ParseFloat(m[`sluice_batch_shard_stalled_seconds{type="backfill"}`], 64)
	require.NoError(t, err)
	require.InDelta(t, 600, stalled, 30)
	require.NotContains(t, m, `sluice_batch_shard_stalled_seconds{type="done"}`, "finished shards are not stalled")

	// A worker's heartbeat 42 s old, and the queue resumed (only paused
	// queues have a series).
	require.NoError(t, d.UpsertNode(ctx, sluicetype.Node{ID: "host:1", Version: "test", StartedAt: time.Now(), Concurrency: 1}))
	_, err = d.DB().ExecContext(ctx, "UPDATE "+tg.Prefix+"nodes SET last_seen = strftime('%Y-%m-%d %H:%M:%f', 'now', '-42 seconds')")
	require.NoError(t, err)
	require.NoError(t, d.SetQueuePaused(ctx, driver.SetQueuePausedParams{Queue: "mail", Paused: false}))
	m = scrape()
	require.NotContains(t, m, `sluice_queue_paused{queue="mail"}`)
	age, err := strconv.ParseFloat(m["sluice_worker_heartbeat_age_seconds"], 64)
	require.NoError(t, err)
	require.InDelta(t, 42, age, 5)
}
