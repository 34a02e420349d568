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
	"github.com/sluicehq/sluice/server"
	"github.com/sluicehq/sluice/sluicetype"
)

// A running job's page shows its progress, escaped, and reloads itself
// while the job runs; an attempt's history entry shows its last report.
func TestDashboardJobProgress(t *testing.T) {
	t.Parallel()
	d := testdb.Open(t, "sqlite")
	c, base := dashServer(t, d, "nightly")
	ctx := context.Background()
	r, err := c.Enqueue(ctx, sluice.EnqueueParams{Type: "logged"})
	require.NoError(t, err)
	rows, err := d.Claim(ctx, driver.ClaimParams{Queue: "default", Types: []string{"logged"}, Limit: 1, Lease: time.Minute, Token: "tok"})
	require.NoError(t, err)
	require.Len(t, rows, 1)
	held, err := d.Progress(ctx, driver.ProgressParams{ID: r.ID, Token: "tok", Done: 3, Total: 10, Message: "rows " + hostile})
	require.NoError(t, err)
	require.True(t, held)

	u := newBrowser(t, base)
	require.Equal(t, http.StatusSeeOther, u.login(token))
	code, body, _ := u.get(fmt.Sprintf("/jobs/%d", r.ID))
	require.Equal(t, http.StatusOK, code, body)
	require.Contains(t, body, `<dd id="progress" data-refresh><progress value="3" max="10"></progress> 3 of 10 · rows &lt;script&gt;`)
	require.NotContains(t, body, "<script>alert")

	msg := "try again"
	lost, err := d.Complete(ctx, driver.CompleteParams{Completions: []driver.Completion{{ID: r.ID, Token: "tok",
		Status: sluicetype.StatusPending, Delay: time.Hour, Error: &msg,
		Attempt: &sluicetype.Attempt{Number: 1, Outcome: sluicetype.OutcomeRetry, Error: msg,
			Progress: &sluicetype.Progress{Done: 3, Total: 10, Message: "rows"}}}}})
	require.NoError(t, err)
	require.Empty(t, lost)
	_, body, _ = u.get(fmt.Sprintf("/jobs/%d", r.ID))
	require.Contains(t, body, `<dd id="progress">`, "a job no longer running does not reload")
	require.Contains(t, body, `<div class="attempt-progress"><progress value="3" max="10"></progress> 3 of 10 · rows</div>`)
}

// The API's job JSON carries the progress.
func TestJobProgressAPI(t *testing.T) {
	a := start(t, testdb.Open(t, "sqlite"), nil, nil)
	ctx := context.Background()
	r, err := a.c.Enqueue(ctx, sluice.EnqueueParams{Type: "quiet"})
	require.NoError(t, err)
	_, err = a.d.Claim(ctx, driver.ClaimParams{Queue: "default", Types: []string{"quiet"}, Limit: 1, Lease: time.Minute, Token: "tok"})
	require.NoError(t, err)
	_, err = a.d.Progress(ctx, driver.ProgressParams{ID: r.ID, Token: "tok", Done: 5, Total: 0, Message: "scanning"})
	require.NoError(t, err)
	res := a.do("GET", fmt.Sprintf("/v1/jobs/%d", r.ID), "")
	require.Equal(t, http.StatusOK, res.code, res.raw)
	p := res.body["progress"].(map[string]any)
	require.Equal(t, float64(5), p["done"])
	require.Equal(t, float64(0), p["total"])
	require.Equal(t, "scanning", p["message"])
	require.NotEmpty(t, p["at"])
}

// postProgress posts a receiver's report with its progress token and no
// operator token.
func postProgress(a *api, id int64, tok, body string) response {
	a.t.Helper()
	req, err := http.NewRequest("POST", fmt.Sprintf("%s/v1/jobs/%d/progress", a.srv.URL, id), strings.NewReader(body))
	require.NoError(a.t, err)
	req.Header.Set("Content-Type", "application/json")
	if tok != "" {
		req.Header.Set("X-Sluice-Progress-Token", tok)
	}
	return a.send(req)
}

// A webhook receiver reports progress with its attempt's token, which no
// operator token replaces; a stale attempt's token is refused with 409,
// bad input with a 400 naming the field, and reports within a second of
// the last write are coalesced, the latest landing.
func TestReceiverProgressAPI(t *testing.T) {
	testdb.ForEachDriver(t, func(t *testing.T, d driver.Driver) {
		const readTok = "read-token-7Kq2Wn5Xc8Vb3Mz6"
		a := start(t, d, nil, func(c *server.Config) {
			c.ScopedTokens = []server.Token{{Name: "grafana", Value: readTok, Scope: server.ScopeRead}}
		})
		a.tok = readTok
		ctx := context.Background()
		r, err := a.c.Enqueue(ctx, sluice.EnqueueParams{Type: "hook"})
		require.NoError(t, err)
		_, err = d.Claim(ctx, driver.ClaimParams{Queue: "default", Types: []string{"hook"}, Limit: 1, Lease: time.Minute, Token: "old"})
		require.NoError(t, err)
		stale := sluicetype.ProgressToken("old", r.ID)
		// The first attempt's lease passes and a second attempt claims
		// the job: the first's token is stale.
		_, err = d.Complete(ctx, driver.CompleteParams{Completions: []driver.Completion{{ID: r.ID, Token: "old",
			Status: sluicetype.StatusPending, Refund: true}}})
		require.NoError(t, err)
		_, err = d.Claim(ctx, driver.ClaimParams{Queue: "default", Types: []string{"hook"}, Limit: 1, Lease: time.Minute, Token: "new"})
		require.NoError(t, err)
		live := sluicetype.ProgressToken("new", r.ID)

		res := postProgress(a, r.ID, stale, `{"done":1,"total":4}`)
		require.Equal(t, http.StatusConflict, res.code, res.raw)
		require.Equal(t, http.StatusUnauthorized, postProgress(a, r.ID, "", `{"done":1}`).code)
		res = postProgress(a, r.ID, live, `{"total":4}`)
		require.Equal(t, http.StatusBadRequest, res.code, res.raw)
		require.Contains(t, res.raw, "done")
		res = postProgress(a, r.ID, live, `{"done":"x"}`)
		require.Equal(t, http.StatusBadRequest, res.code, res.raw)
		require.Contains(t, res.raw, "done")
		res = postProgress(a, r.ID, live, `{"done":-1}`)
		require.Equal(t, http.StatusBadRequest, res.code, res.raw)
		require.Contains(t, res.raw, "done")
		require.Nil(t, job(t, d, r.ID).Progress, "a refused report wrote nothing")

		res = postProgress(a, r.ID, live, `{"done":1,"total":4,"message":"one"}`)
		require.Equal(t, http.StatusOK, res.code, res.raw)
		require.Equal(t, int64(1), job(t, d, r.ID).Progress.Done)
		// An operator token is no progress token.
		res = postProgress(a, r.ID, readTok, `{"done":2,"total":4}`)
		require.Equal(t, http.StatusConflict, res.code, res.raw)
		// Within the second after a write, a report is held (202); a
		// loaded machine may take longer between two posts, and then it is
		// written at once (200). Either way it is taken.
		for i := 2; i <= 3; i++ {
			res = postProgress(a, r.ID, live, fmt.Sprintf(`{"done":%d,"total":4,"message":"item %d"}`, i, i))
			require.Contains(t, []int{http.StatusOK, http.StatusAccepted}, res.code, res.raw)
		}
		// A wait for a state: the coalesced write comes a second after
		// the first.
		deadline := time.Now().Add(30 * time.Second)
		for job(t, d, r.ID).Progress.Done != 3 {
			require.True(t, time.Now().Before(deadline), "the coalesced report never landed")
			time.Sleep(20 * time.Millisecond)
		}
		require.Equal(t, "item 3", job(t, d, r.ID).Progress.Message)
		// The report that completes the total is written at once, even
		// within the second after a write: a receiver sends it just
		// before its answer ends the attempt, after which a held report
		// could no longer be written.
		res = postProgress(a, r.ID, live, `{"done":4,"total":4,"message":"all"}`)
		require.Equal(t, http.StatusOK, res.code, res.raw)
		require.Equal(t, &sluicetype.Progress{Done: 4, Total: 4, Message: "all"}, progressOf(job(t, d, r.ID)))
	})
}

func job(t *testing.T, d driver.Driver, id int64) *sluicetype.JobRow {
	t.Helper()
	j, err := d.GetJob(context.Background(), id)
	require.NoError(t, err)
	return j
}

// progressOf is a job's progress without its time.
func progressOf(j *sluicetype.JobRow) *sluicetype.Progress {
	if j.Progress == nil {
		return nil
	}
	p := *j.Progress
	p.At = time.Time{}
	return &p
}
