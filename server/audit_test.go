package server_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/driver"
	"github.com/sluicehq/sluice/internal/testkit/testdb"
	"github.com/sluicehq/sluice/server"
	"github.com/sluicehq/sluice/sluicetype"
)

// auditRows reads the whole audit trail from the database, newest first.
func auditRows(t *testing.T, d driver.Driver) []sluicetype.AuditEntry {
	t.Helper()
	es, err := d.ListAudit(context.Background(), driver.ListAuditParams{Limit: 1000})
	require.NoError(t, err)
	return es
}

// An operate token named oncall retries a job and pauses a queue
// through the API: each is one audit entry naming the token, the API,
// the client's address, the action and its target. What a token's scope
// refuses, and an enqueue, record nothing; no token's value is ever in
// the trail; GET /v1/audit answers operate tokens only.
func TestAuditTrailAPI(t *testing.T) {
	a := scoped(t)
	ctx := context.Background()
	failed, err := a.c.Enqueue(ctx, sluice.EnqueueParams{Type: "other", MaxAttempts: 1})
	require.NoError(t, err)
	failJob(t, a.d, failed.ID, "boom")
	retry := fmt.Sprintf("/v1/jobs/%d/retry", failed.ID)

	require.Equal(t, http.StatusForbidden, a.as(readTok).do("POST", retry, "").code)
	require.Equal(t, http.StatusCreated, a.as(enqTok).do("POST", "/v1/jobs", `{"type":"other"}`).code)
	require.Empty(t, auditRows(t, a.d), "a refused request and an enqueue record nothing")

	op := a.as(operateTok)
	require.Equal(t, http.StatusOK, op.do("POST", retry, "").code)
	require.Equal(t, http.StatusOK, op.do("POST", "/v1/queues/default/pause", "").code)
	es := auditRows(t, a.d)
	require.Len(t, es, 2)
	require.Equal(t, sluicetype.AuditEntry{ID: es[1].ID, At: es[1].At, Actor: "oncall", Source: "api", Address: "127.0.0.1",
		Action: "job.retry", Target: fmt.Sprintf("job %d", failed.ID), Affected: 1}, es[1])
	require.Equal(t, "queue.pause", es[0].Action)
	require.Equal(t, "queue default", es[0].Target)
	require.False(t, es[0].At.IsZero())

	// A second retry of the now pending job is refused by its state:
	// nothing changed, nothing recorded.
	require.Equal(t, http.StatusConflict, op.do("POST", retry, "").code)
	require.Len(t, auditRows(t, a.d), 2)

	r := a.as(readTok).do("GET", "/v1/audit", "")
	require.Equal(t, http.StatusForbidden, r.code)
	require.Contains(t, r.body["error"], "GET /v1/audit needs scope operate")
	r = op.do("GET", "/v1/audit?actor=oncall&action=job.retry", "")
	require.Equal(t, http.StatusOK, r.code, r.raw)
	entries := r.body["entries"].([]any)
	require.Len(t, entries, 1)
	require.Equal(t, "job.retry", entries[0].(map[string]any)["action"])
	require.Nil(t, r.body["next_before_id"])
	r = op.do("GET", "/v1/audit?limit=1&since=1h", "")
	require.Equal(t, http.StatusOK, r.code, r.raw)
	require.Len(t, r.body["entries"].([]any), 1)
	require.NotNil(t, r.body["next_before_id"])
	require.Equal(t, http.StatusBadRequest, op.do("GET", "/v1/audit?since=yesterday", "").code)
	require.Equal(t, http.StatusBadRequest, op.do("GET", "/v1/audit?actr=oncall", "").code, "a misspelled filter")

	all, err := json.Marshal(auditRows(t, a.d))
	require.NoError(t, err)
	for _, v := range []string{token, readTok, enqTok, partnerTok, operateTok, adminTok} {
		require.NotContains(t, string(all), v, "a token's value in the audit trail")
	}
}

// An operate session cancels a job on the dashboard: the entry names the
// session's token and the dashboard. The audit page lists it for
// operate sessions, and a read-only session neither sees the page nor
// its link.
func TestAuditTrailDashboard(t *testing.T) {
	a := scoped(t)
	ctx := context.Background()
	pending, err := a.c.Enqueue(ctx, sluice.EnqueueParams{Type: "other"})
	require.NoError(t, err)

	op := newBrowser(t, a.srv.URL)
	require.Equal(t, http.StatusSeeOther, op.login(operateTok))
	code, _, _ := op.post(fmt.Sprintf("/jobs/%d/cancel", pending.ID), url.Values{"csrf": {op.csrf("/")}})
	require.Equal(t, http.StatusSeeOther, code)
	requireStatus(t, a.c, pending.ID, sluicetype.StatusCancelled)
	es := auditRows(t, a.d)
	require.Len(t, es, 1)
	require.Equal(t, "oncall", es[0].Actor)
	require.Equal(t, "dashboard", es[0].Source)
	require.Equal(t, "127.0.0.1", es[0].Address)
	require.Equal(t, "job.cancel", es[0].Action)
	require.Equal(t, fmt.Sprintf("job %d", pending.ID), es[0].Target)

	code, body, _ := op.get("/audit")
	require.Equal(t, http.StatusOK, code)
	require.Contains(t, body, "job.cancel")
	require.Contains(t, body, `href="/audit"`)

	ro := newBrowser(t, a.srv.URL)
	require.Equal(t, http.StatusSeeOther, ro.login(readTok))
	code, _, _ = ro.get("/audit")
	require.Equal(t, http.StatusForbidden, code)
	_, body, _ = ro.get("/")
	require.NotContains(t, body, `href="/audit"`)
}

// Without tokens (loopback only), what the API and the dashboard change
// is recorded as anonymous.
func TestAuditTrailAnonymous(t *testing.T) {
	d := testdb.Open(t, "sqlite")
	a := start(t, d, map[string]sluice.Type{"other": {}}, func(c *server.Config) { c.Tokens = nil })
	a.tok = ""
	require.Equal(t, http.StatusOK, a.do("POST", "/v1/queues/default/pause", "").code)
	b := newBrowser(t, a.srv.URL)
	code, _, _ := b.post("/queues/default/resume", url.Values{"csrf": {b.csrf("/queues")}})
	require.Equal(t, http.StatusSeeOther, code)
	es := auditRows(t, d)
	require.Len(t, es, 2)
	require.Equal(t, []string{"anonymous", "anonymous"}, []string{es[0].Actor, es[1].Actor})
	require.Equal(t, []string{"dashboard", "api"}, []string{es[0].Source, es[1].Source})
	require.Equal(t, "queue.resume", es[0].Action)
}

// A token name that is markup is text on the audit page, under the CSP.
func TestAuditPageEscapes(t *testing.T) {
	d := testdb.Open(t, "sqlite")
	const evil = `<script>alert(1)</script><img src=x onerror=alert(2)>`
	a := start(t, d, map[string]sluice.Type{"other": {}}, func(c *server.Config) {
		c.ScopedTokens = []server.Token{{Name: evil, Value: operateTok, Scope: server.ScopeOperate}}
	})
	require.Equal(t, http.StatusOK, a.as(operateTok).do("POST", "/v1/queues/default/pause", "").code)
	require.Equal(t, evil, auditRows(t, d)[0].Actor)
	b := newBrowser(t, a.srv.URL)
	require.Equal(t, http.StatusSeeOther, b.login(operateTok))
	code, body, h := b.get("/audit")
	require.Equal(t, http.StatusOK, code)
	require.NotContains(t, body, "<script>alert")
	require.NotContains(t, body, "<img src=x")
	require.Contains(t, body, "&lt;script&gt;alert(1)&lt;/script&gt;")
	require.True(t, strings.Contains(h.Get("Content-Security-Policy"), "script-src 'self'"))
}
