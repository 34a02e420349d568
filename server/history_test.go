package server_test

import (
	"context"
	"fmt"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/internal/testdb"
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
