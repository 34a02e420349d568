package server_test

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/driver"
	"github.com/sluicehq/sluice/internal/testkit/testdb"
	"github.com/sluicehq/sluice/server"
	"github.com/sluicehq/sluice/sluicetype"
)

// logJob enqueues a job and completes its attempts with the given logs,
// the last one as success, the others as retries. It returns the job's id.
func logJob(t *testing.T, c *sluice.Client, d driver.Driver, texts ...string) int64 {
	t.Helper()
	ctx := context.Background()
	r, err := c.Enqueue(ctx, sluice.EnqueueParams{Type: "logged"})
	require.NoError(t, err)
	for i, text := range texts {
		rows, err := d.Claim(ctx, driver.ClaimParams{Queue: "default", Types: []string{"logged"}, Limit: 1, Lease: time.Minute, Token: "tok"})
		require.NoError(t, err)
		require.Len(t, rows, 1)
		comp := driver.Completion{ID: r.ID, Token: "tok", Status: sluicetype.StatusSuccess,
			Log: &sluicetype.AttemptLog{JobID: r.ID, Attempt: i + 1, Text: text, Bytes: int64(len(text)) + 7, Omitted: 7}}
		if i < len(texts)-1 {
			msg := "try again"
			comp.Status, comp.Error = sluicetype.StatusPending, &msg
			comp.Attempt = &sluicetype.Attempt{Number: i + 1, Outcome: sluicetype.OutcomeRetry, Error: msg}
		} else if i > 0 {
			// As a worker does: a job that failed before gets its success
			// in the history too.
			comp.Attempt = &sluicetype.Attempt{Number: i + 1, Outcome: sluicetype.OutcomeSuccess}
		}
		lost, err := d.Complete(ctx, driver.CompleteParams{Completions: []driver.Completion{comp}})
		require.NoError(t, err)
		require.Empty(t, lost)
	}
	return r.ID
}

// GET /v1/jobs/{id}/logs answers a read token with the job's attempt
// logs, or one attempt's; a job that is gone is a 404.
func TestJobLogsAPI(t *testing.T) {
	testdb.ForEach(t, func(t *testing.T, name string) {
		const readTok = "read-token-7Kq2Wn5Xc8Vb3Mz6"
		a := start(t, testdb.Open(t, name), nil, func(c *server.Config) {
			c.ScopedTokens = []server.Token{{Name: "grafana", Value: readTok, Scope: server.ScopeRead}}
		})
		a.tok = readTok
		id := logJob(t, a.c, a.d, "first run\n", "second run\n")

		r := a.do("GET", fmt.Sprintf("/v1/jobs/%d/logs", id), "")
		require.Equal(t, http.StatusOK, r.code, r.raw)
		logs := r.body["logs"].([]any)
		require.Len(t, logs, 2)
		second := logs[1].(map[string]any)
		require.Equal(t, float64(2), second["attempt"])
		require.Equal(t, "second run\n", second["text"])
		require.Equal(t, float64(len("second run\n")+7), second["bytes"])
		require.Equal(t, float64(7), second["omitted"])

		r = a.do("GET", fmt.Sprintf("/v1/jobs/%d/logs?attempt=1", id), "")
		require.Equal(t, http.StatusOK, r.code, r.raw)
		require.Len(t, r.body["logs"], 1)
		require.Equal(t, "first run\n", r.body["logs"].([]any)[0].(map[string]any)["text"])

		r = a.do("GET", fmt.Sprintf("/v1/jobs/%d/logs?attempt=9", id), "")
		require.Equal(t, http.StatusOK, r.code, r.raw)
		require.Empty(t, r.body["logs"], "an attempt without a log of a job that exists")

		plain, err := a.c.Enqueue(context.Background(), sluice.EnqueueParams{Type: "quiet"})
		require.NoError(t, err)
		r = a.do("GET", fmt.Sprintf("/v1/jobs/%d/logs", plain.ID), "")
		require.Equal(t, http.StatusOK, r.code, r.raw)
		require.Equal(t, `{"logs":[]}`+"\n", r.raw)

		require.Equal(t, http.StatusNotFound, a.do("GET", "/v1/jobs/999999/logs", "").code)
		require.Equal(t, http.StatusBadRequest, a.do("GET", fmt.Sprintf("/v1/jobs/%d/logs?attempt=0", id), "").code)
		require.Equal(t, http.StatusBadRequest, a.do("GET", fmt.Sprintf("/v1/jobs/%d/logs?attmpt=1", id), "").code)
	})
}

// The job page shows each attempt's log in its timeline entry, and the
// log of a job that never failed (no timeline) on its own; hostile text
// comes out escaped.
func TestDashboardJobLogs(t *testing.T) {
	t.Parallel()
	d := testdb.Open(t, "sqlite")
	c, base := dashServer(t, d, "nightly")
	retried := logJob(t, c, d, "first "+hostile, "second run")
	once := logJob(t, c, d, "only run")

	u := newBrowser(t, base)
	require.Equal(t, http.StatusSeeOther, u.login(token))
	code, body, _ := u.get(fmt.Sprintf("/jobs/%d", retried))
	require.Equal(t, http.StatusOK, code, body)
	require.Contains(t, body, `id="attempts"`)
	require.Contains(t, body, `<details class="log" id="log-1"><summary>Output: `+fmt.Sprint(len("first "+hostile)+7)+` bytes, 7 left out</summary>`)
	require.Contains(t, body, "first &lt;script&gt;alert")
	require.NotContains(t, body, "<script>alert")
	require.Contains(t, body, `id="log-2"`, "the success after a retry is in the timeline too")
	require.NotContains(t, body, `id="attempt-logs"`)

	_, body, _ = u.get(fmt.Sprintf("/jobs/%d", once))
	require.NotContains(t, body, `id="attempts"`)
	require.Contains(t, body, `id="attempt-logs"`)
	require.Contains(t, body, `<pre class="log">only run</pre>`)
}
