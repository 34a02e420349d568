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
	"github.com/sluicehq/sluice/internal/testkit/proctest"
	"github.com/sluicehq/sluice/internal/testkit/testdb"
	"github.com/sluicehq/sluice/sluicetype"
)

// One set of jobs, whose outcomes are known, gives the same figures in
// `sluice stats` (table and JSON), GET /v1/stats and the dashboard
// (the overview page and /live.json): Done counts jobs that succeeded,
// Failed jobs that failed for good, Retried attempts that failed and ran
// again, and the failed-attempts share is over attempts. A type whose
// jobs all succeeded shows 0 failed, whatever its retries.
func TestFiguresAgreeAcrossCLIAPIAndDashboard(t *testing.T) {
	t.Parallel()
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
		want := map[string]sluicetype.Figures{"": {Done: 3, Failed: 1, Retried: 1},
			"ok": {Done: 2}, "flaky": {Done: 1, Retried: 1}, "bad": {Failed: 1}}
		var snap sluice.StatsSnapshot
		testdb.WaitFor(t, 20*time.Second, "every job finished", func() bool {
			sl("run")
			require.NoError(t, json.Unmarshal([]byte(sl("stats", "--json")), &snap))
			return len(snap.Queues) == 1 && snap.Queues[0].Pending == 0 && sluicetype.FiguresOf(snap.Queues[0].FinishedHour) == want[""]
		})
		wantShare := map[string]string{"ok": "0.0%", "flaky": "50.0%", "bad": "100.0%"}
		// Each type's finished attempts by outcome, as the JSON spells them:
		// the per-type checks compare whole maps, so that a type missing
		// from the output (or an empty list) fails, and they decode the
		// JSON without the code under test's types.
		wantTypes := map[string]map[string]int64{"ok": {"success": 2}, "flaky": {"success": 1, "retry": 1}, "bad": {"failed": 1}}
		byType := func(what, js string) map[string]map[string]int64 {
			t.Helper()
			var doc struct {
				Types []struct {
					Type string           `json:"type"`
					Hour map[string]int64 `json:"finished_1h"`
				} `json:"types"`
			}
			require.NoError(t, json.Unmarshal([]byte(js), &doc), what)
			out := map[string]map[string]int64{}
			for _, ty := range doc.Types {
				for o, n := range ty.Hour {
					if n == 0 {
						delete(ty.Hour, o)
					}
				}
				out[ty.Type] = ty.Hour
			}
			return out
		}

		// sluice stats --json: the API's own shape.
		require.Equal(t, wantTypes, byType("stats --json", sl("stats", "--json")))
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
		apiJSON := get("/v1/stats")
		var api sluice.StatsSnapshot
		require.NoError(t, json.Unmarshal([]byte(apiJSON), &api))
		require.Len(t, api.Queues, 1)
		require.Equal(t, want[""], sluicetype.FiguresOf(api.Queues[0].FinishedHour))
		require.Equal(t, wantTypes, byType("/v1/stats", apiJSON))

		var live struct {
			Queues []struct {
				Hour sluicetype.Figures `json:"1h"`
			} `json:"queues"`
			Types []struct {
				Type string `json:"type"`
				Hour struct {
					Done    int64 `json:"done"`
					Failed  int64 `json:"failed"`
					Retried int64 `json:"retried"`
				} `json:"1h"`
			} `json:"types"`
		}
		require.NoError(t, json.Unmarshal([]byte(get("/live.json")), &live))
		require.Len(t, live.Queues, 1)
		require.Equal(t, want[""], live.Queues[0].Hour)
		liveTypes := map[string]sluicetype.Figures{}
		for _, ty := range live.Types {
			liveTypes[ty.Type] = sluicetype.Figures{Done: ty.Hour.Done, Failed: ty.Hour.Failed, Retried: ty.Hour.Retried}
		}
		require.Equal(t, map[string]sluicetype.Figures{"ok": want["ok"], "flaky": want["flaky"], "bad": want["bad"]}, liveTypes)

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
