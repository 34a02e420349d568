package cli_test

import (
	"encoding/json"
	"io"
	"net/http"
	"regexp"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/internal/proctest"
	"github.com/sluicehq/sluice/internal/testdb"
)

// One set of jobs, whose outcomes are known, gives the same figures in
// `sluice stats` (table and JSON), GET /v1/stats and the dashboard
// (the overview page and /live.json): Done counts jobs that succeeded,
// Failed jobs that failed for good, Retried attempts that failed and ran
// again, and the failed-attempts share is over attempts. A type whose
// jobs all succeeded shows 0 failed, whatever its retries.
func TestFiguresAgreeAcrossCLIAPIAndDashboard(t *testing.T) {
	testdb.ForEach(t, func(t *testing.T, name string) {
		_, tg := testdb.OpenURL(t, name)
		addr := testdb.FreeAddr(t)
		cfg := proctest.Config(t, tg.URL, `listen: "`+addr+`"
types:
  ok: { command: ["true"] }
  flaky: { command: ["sh", "-c", "[ \"$SLUICE_JOB_ATTEMPT\" != 1 ]"], backoff: { base: 1ms, max: 1ms } }
  bad: { command: ["sh", "-c", "exit 65"] }
`)
		env := []string{"SLUICE_PREFIX=" + tg.Prefix}
		sl := func(args ...string) string {
			t.Helper()
			r := run(t, env, "", append([]string{"--config", cfg}, args...)...)
			require.Equal(t, 0, r.Code, "%v: %s", args, r.Stderr)
			return r.Stdout
		}
		for _, typ := range []string{"ok", "ok", "flaky", "bad"} {
			sl("enqueue", typ)
		}
		want := map[string]sluice.Figures{"": {Done: 3, Failed: 1, Retried: 1},
			"ok": {Done: 2}, "flaky": {Done: 1, Retried: 1}, "bad": {Failed: 1}}
		var snap sluice.StatsSnapshot
		testdb.WaitFor(t, 20*time.Second, "every job finished", func() bool {
			sl("run")
			require.NoError(t, json.Unmarshal([]byte(sl("stats", "--json")), &snap))
			return len(snap.Queues) == 1 && snap.Queues[0].Pending == 0 && sluice.FiguresOf(snap.Queues[0].FinishedHour) == want[""]
		})
		wantShare := map[string]string{"ok": "0.0%", "flaky": "50.0%", "bad": "100.0%"}

		// sluice stats --json: the API's own shape.
		for _, ty := range snap.Types {
			require.Equal(t, want[ty.Type], sluice.FiguresOf(ty.FinishedHour), "type %s", ty.Type)
		}
		// The table: DONE 1H, FAILED 1H, RETRIED 1H after the live columns.
		table := sl("stats")
		require.Contains(t, table, "DONE 1H  FAILED 1H  RETRIED 1H")
		require.Regexp(t, `(?m)^default\s+0\s+0\s+1\s+\S+\s+false\s+3\s+1\s+1\s+3\s+1\s+1\s*$`, table)
		require.Regexp(t, `(?m)^flaky\s+1\s+0\s+1\s`, table)

		srv := startWorker(t, env, "--config", cfg, "serve", "--no-workers")
		base := "http://" + addr
		testdb.WaitFor(t, 15*time.Second, "serve answers /healthz", func() bool { return proctest.Healthy(base) })
		get := func(path string) string {
			t.Helper()
			resp, err := http.Get(base + path)
			require.NoError(t, err)
			defer resp.Body.Close()
			b, err := io.ReadAll(resp.Body)
			require.NoError(t, err)
			require.Equal(t, http.StatusOK, resp.StatusCode, "%s: %s", path, b)
			return string(b)
		}
		var api sluice.StatsSnapshot
		require.NoError(t, json.Unmarshal([]byte(get("/v1/stats")), &api))
		require.Equal(t, want[""], sluice.FiguresOf(api.Queues[0].FinishedHour))
		for _, ty := range api.Types {
			require.Equal(t, want[ty.Type], sluice.FiguresOf(ty.FinishedHour), "API type %s", ty.Type)
		}

		var live struct {
			Queues []struct {
				Hour sluice.Figures `json:"1h"`
			} `json:"queues"`
			Types []struct {
				Type string         `json:"type"`
				Hour sluice.Figures `json:"1h"`
			} `json:"types"`
		}
		require.NoError(t, json.Unmarshal([]byte(get("/live.json")), &live))
		require.Len(t, live.Queues, 1)
		require.Equal(t, want[""], live.Queues[0].Hour)
		require.Len(t, live.Types, 3)
		for _, ty := range live.Types {
			require.Equal(t, want[ty.Type], ty.Hour, "live type %s", ty.Type)
		}

		page := get("/")
		require.Contains(t, page, "<th>Done 1h</th><th>Failed 1h</th><th>Retried 1h</th>")
		q := regexp.MustCompile(`(?s)<tr data-queue="default">.*?</tr>`).FindString(page)
		cells := regexp.MustCompile(`<td>(\d+)</td>`).FindAllStringSubmatch(q, -1)
		require.Len(t, cells, 6, q)
		for i, w := range []string{"3", "1", "1", "3", "1", "1"} {
			require.Equal(t, w, cells[i][1], "queue cell %d: %s", i, q)
		}
		for typ, share := range wantShare {
			row := regexp.MustCompile(`(?s)<tr data-type="` + typ + `">.*?</tr>`).FindString(page)
			require.Contains(t, row, "<td>"+share+"</td>", "type %s: %s", typ, row)
		}
		require.NoError(t, srv.Term(t, 10*time.Second))
	})
}
