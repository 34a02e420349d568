package server_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/driver"
	"github.com/sluicehq/sluice/internal/testkit/testdb"
	"github.com/sluicehq/sluice/sluicetype"
)

// Jobs that waited a known time show it as their type's queue latency in
// /v1/stats: a cron pass (POST /v1/run) runs them through the workers' one
// path, which adds their waits to the roll-ups, and the percentiles read
// back land in the histogram slot of that wait.
func TestStatsQueueLatency(t *testing.T) {
	testdb.ForEachDriver(t, func(t *testing.T, d driver.Driver) {
		ok := sluice.HandlerFunc(func(context.Context, *sluice.Job) error { return nil })
		a := start(t, d, map[string]sluice.Type{"late": {Handler: ok}, "prompt": {Handler: ok}}, nil)
		// "late" jobs became runnable 20 s ago; "prompt" ones now.
		runAt := time.Now().Add(-20 * time.Second).UTC().Format(time.RFC3339Nano)
		body := strings.TrimSuffix(strings.Repeat(fmt.Sprintf(`{"type":"late","run_at":%q},`, runAt), 10)+
			strings.Repeat(`{"type":"prompt"},`, 10), ",")
		r := a.do("POST", "/v1/jobs/many", "["+body+"]")
		require.Equal(t, http.StatusOK, r.code, r.raw)
		r = a.do("POST", "/v1/run?max_jobs=50", "")
		require.Equal(t, http.StatusOK, r.code, r.raw)
		require.Equal(t, float64(20), r.body["done"], r.raw)

		r = a.do("GET", "/v1/stats", "")
		require.Equal(t, http.StatusOK, r.code, r.raw)
		types := map[string]map[string]any{}
		for _, v := range r.body["types"].([]any) {
			m := v.(map[string]any)
			types[m["type"].(string)] = m
		}
		// 20 s and a little more is in the slot [16.384, 32.768) s, and
		// so are its interpolated p50 and p95.
		for _, window := range []string{"queue_latency_1h", "queue_latency_24h"} {
			late := types["late"][window].(map[string]any)
			require.Equal(t, float64(10), late["count"], "%s: %v", window, late)
			for _, p := range []string{"p50_s", "p95_s"} {
				require.GreaterOrEqual(t, late[p].(float64), 16.384, "%s %s: %v", window, p, late)
				require.Less(t, late[p].(float64), 32.768, "%s %s: %v", window, p, late)
			}
			prompt := types["prompt"][window].(map[string]any)
			require.Equal(t, float64(10), prompt["count"], "%s: %v", window, prompt)
			require.Less(t, prompt["p95_s"].(float64), 16.384, "%s: jobs due now did not wait 20 s: %v", window, prompt)
		}
		require.Equal(t, map[string]any{"success": float64(10)}, types["late"]["finished_1h"])
	})
}

// The overview's per-type table shows each type's queue latency p50 / p95
// over the last hour and day, on the page and in /live.json.
func TestOverviewShowsQueueLatency(t *testing.T) {
	testdb.ForEachDriver(t, func(t *testing.T, d driver.Driver) {
		ctx := context.Background()
		_, base := dashServer(t, d, "nightly")
		u := newBrowser(t, base)
		require.Equal(t, http.StatusSeeOther, u.login(token))
		now := time.Now().Truncate(time.Minute)
		// 100 attempts that waited ~3 s: the slot [2.048, 4.096) s, so p50
		// is 3.072 s and p95 3.994 s; 100 more waited ~100 s earlier in the
		// day, which moves the day's but not the hour's.
		require.NoError(t, d.AddStats(ctx, driver.AddStatsParams{
			Rows: []sluicetype.StatRow{{Queue: "default", Type: "mail", Outcome: "success", Bucket: now, Count: 100},
				{Queue: "default", Type: "mail", Outcome: "success", Bucket: now.Add(-5 * time.Hour), Count: 100}},
			Latency: []sluicetype.LatencyRow{{Queue: "default", Type: "mail", Bucket: now, Slot: sluicetype.LatencySlot(3 * time.Second), Count: 100},
				{Queue: "default", Type: "mail", Bucket: now.Add(-5 * time.Hour), Slot: sluicetype.LatencySlot(100 * time.Second), Count: 100}},
		}))
		code, body, _ := u.get("/")
		require.Equal(t, http.StatusOK, code, body)
		require.Contains(t, body, "Wait p50 / p95 1h")
		require.Contains(t, body, "<td>3.1s / 4.0s</td>", "the hour's p50 / p95")
		require.Contains(t, body, "<td>4.1s / 2m5s</td>", "the day's p50 / p95: half waited ~3 s, half ~100 s")

		code, body, _ = u.get("/live.json")
		require.Equal(t, http.StatusOK, code, body)
		require.Contains(t, body, `"latency_1h":{"count":100,"p50_s":3.072,"p95_s":3.9936}`)
	})
}
