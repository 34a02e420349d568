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
)

// TestDashboardJobTimeline: the job page shows the attempt history as a
// timeline and the trace the job was enqueued in.
func TestDashboardJobTimeline(t *testing.T) {
	t.Parallel()
	d := testdb.Open(t, "sqlite")
	c, base := dashServer(t, d, "nightly")
	const traceID = "4bf92f3577b34da6a3ce929d0e0e4736"
	ctx := sluice.WithTraceParent(context.Background(), "00-"+traceID+"-00f067aa0ba902b7-01")
	r, err := c.Enqueue(ctx, sluice.EnqueueParams{Type: "mail"})
	require.NoError(t, err)
	plain, err := c.Enqueue(context.Background(), sluice.EnqueueParams{Type: "mail"})
	require.NoError(t, err)
	failJob(t, d, r.ID, "smtp: 550 mailbox unavailable")

	u := newBrowser(t, base)
	require.Equal(t, http.StatusSeeOther, u.login(token))
	code, body, _ := u.get(fmt.Sprintf("/jobs/%d", r.ID))
	require.Equal(t, http.StatusOK, code, body)
	require.Contains(t, body, `<code>`+traceID+`</code>`)
	require.Contains(t, body, `id="attempts"`)
	require.Contains(t, body, `class="attempt out-failed"`)
	require.Contains(t, body, "<strong>#1</strong>")
	require.Contains(t, body, "HTTP 500")
	require.Contains(t, body, "smtp: 550 mailbox unavailable")
	require.Regexp(t, `<span class="dur">\d+(\.\d+)?(ms|s)</span>`, body, "the attempt's duration")

	_, body, _ = u.get(fmt.Sprintf("/jobs/%d", plain.ID))
	require.NotContains(t, body, `id="attempts"`, "a job that never failed has no timeline")
	require.Contains(t, body, `<dd id="trace-id">—</dd>`)
}

// TestDashboardJobDeadline: the job page shows a job's deadline, and for a
// job the sweep cancelled, the reason and its cancelled entry.
func TestDashboardJobDeadline(t *testing.T) {
	t.Parallel()
	d := testdb.Open(t, "sqlite")
	c, base := dashServer(t, d, "nightly")
	ctx := context.Background()
	now, err := d.Now(ctx)
	require.NoError(t, err)
	// Past its deadline, as a plain INSERT may write it: the rules
	// refuse such a job on sluice's own paths.
	res, err := d.Insert(ctx, driver.InsertParams{Jobs: []driver.InsertJob{{Queue: "default", Type: "mail", Dedupe: "permanent",
		Payload: []byte(`{}`), MaxAttempts: 5, RunAt: now.Add(-time.Hour), Deadline: now.Add(-time.Minute)}}})
	require.NoError(t, err)
	_, err = c.SweepDeadlines(ctx)
	require.NoError(t, err)

	u := newBrowser(t, base)
	require.Equal(t, http.StatusSeeOther, u.login(token))
	code, body, _ := u.get(fmt.Sprintf("/jobs/%d", res[0].ID))
	require.Equal(t, http.StatusOK, code, body)
	require.Contains(t, body, `<dd id="deadline">start by `)
	require.Contains(t, body, "passed before the job started")
	require.Contains(t, body, `class="attempt out-cancelled"`)
}
