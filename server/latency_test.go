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
)

// Jobs that waited a known time show it as their type's queue latency in
// /v1/stats: a cron pass (POST /v1/run) runs them through the workers' one
// path, which adds their waits to the roll-ups, and the percentiles read
// back land in the histogram slot of that wait.
func TestStatsQueueLatency(t *testing.T) {
	forEachDriver(t, func(t *testing.T, d driver.Driver) {
		ok := sluice.HandlerFunc(func(context.Context, *sluice.Job) error { return nil })
		a := start(t, d, map[string]sluice.Type{"late": {Handler: ok}, "prompt": {Handler: ok}}, nil)
		// "late" jobs became runnable 20 s ago; "prompt" ones now.
		runAt := time.Now().Add(-20 * time.Second).UTC().Format(time.RFC3339Nano)
		body := strings.TrimSuffix(strings.Repeat(fmt.Sprintf(`{"type":"late","run_at":%q},`, runAt), 10)+
			strings.Repeat(`{"type":"prompt"},`, 10), ",")
		r := a.do("POST", "/v1/jobs/batch", "["+body+"]")
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
