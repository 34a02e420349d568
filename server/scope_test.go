package server_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/internal/testkit/testdb"
	"github.com/sluicehq/sluice/server"
	"github.com/sluicehq/sluice/sluicetype"
)

// The scoped tokens of these tests, each as strong as a real one must be.
const (
	readTok    = "read-token-Jd7Vn2Qs9Lx4Pf8Rk3"
	enqTok     = "enq-token-Hq5Zt8Nc2Vb6Xy1Lp0"
	partnerTok = "partner-token-Mw4Rf7Gk9Tj3Qa6U"
	operateTok = "operate-token-Bn3Yc8Wd5Se1Kz7"
	adminTok   = "admin-token-Gt6Xp2Lm9Cv4Rq8Z"
)

// scoped serves the tokens of every scope beside the plain token of
// start, which is admin.
func scoped(t *testing.T) *api {
	d := testdb.Open(t, "sqlite")
	types := map[string]sluice.Type{"order_sync": {Queue: "orders"}, "other": {Circuit: sluice.Circuit{Threshold: 3}}}
	return start(t, d, types, func(c *server.Config) {
		c.Tokens = []string{token}
		c.ScopedTokens = []server.Token{
			{Name: "grafana", Value: readTok, Scope: server.ScopeRead},
			{Name: "producer", Value: enqTok, Scope: server.ScopeEnqueue},
			{Name: "partner-orders", Value: partnerTok, Scope: server.ScopeEnqueue, Types: []string{"order_sync"}},
			{Name: "oncall", Value: operateTok, Scope: server.ScopeOperate},
			{Name: "root", Value: adminTok, Scope: server.ScopeAdmin},
		}
	})
}

func (a *api) as(tok string) *api {
	b := *a
	b.tok = tok
	return &b
}

// metrics is the status of GET /metrics with the token, which answers
// Prometheus's text when it may and a JSON error when not.
func (a *api) metrics() (int, string) {
	a.t.Helper()
	req, err := http.NewRequest("GET", a.srv.URL+"/metrics", nil)
	require.NoError(a.t, err)
	req.Header.Set("Authorization", "Bearer "+a.tok)
	res, err := a.srv.Client().Do(req)
	require.NoError(a.t, err)
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	require.NoError(a.t, err)
	return res.StatusCode, string(b)
}

// Each scope against each class of route: what it may do answers as
// before, what it may not is 403 naming the scope it lacks, and writes
// nothing.
func TestScopesPerRoute(t *testing.T) {
	a := scoped(t)
	failed, err := a.c.Enqueue(context.Background(), sluice.EnqueueParams{Type: "other", MaxAttempts: 1})
	require.NoError(t, err)
	failJob(t, a.d, failed.ID, "boom")

	reads := []struct{ method, path string }{
		{"GET", "/v1/stats"}, {"GET", "/v1/jobs"}, {"GET", fmt.Sprintf("/v1/jobs/%d", failed.ID)}, {"GET", "/readyz"},
	}
	enqueues := []struct{ path, body string }{
		{"/v1/jobs", `{"type":"other"}`}, {"/v1/jobs/many", `[{"type":"other"}]`},
	}
	operates := []string{
		"/v1/queues/default/pause", "/v1/queues/default/resume", "/v1/circuits/other/open", "/v1/circuits/other/close", "/v1/run",
	}

	for _, tc := range []struct {
		tok                    string
		name                   string
		read, enqueue, operate bool
	}{
		{readTok, "grafana", true, false, false},
		{enqTok, "producer", false, true, false},
		{operateTok, "oncall", true, false, true},
		{adminTok, "root", true, true, true},
		{token, "tokens[0]", true, true, true}, // a plain token is admin
	} {
		c := a.as(tc.tok)
		for _, rt := range reads {
			r := c.do(rt.method, rt.path, "")
			if tc.read {
				require.Equal(t, http.StatusOK, r.code, "%s %s %s: %s", tc.name, rt.method, rt.path, r.raw)
				continue
			}
			require.Equal(t, http.StatusForbidden, r.code, "%s %s %s", tc.name, rt.method, rt.path)
			require.Contains(t, r.body["error"], fmt.Sprintf(`scope: token %q has scope enqueue; %s `, tc.name, rt.method))
			require.Contains(t, r.body["error"], " needs scope read")
		}
		code, body := c.metrics()
		if tc.read {
			require.Equal(t, http.StatusOK, code, "%s /metrics", tc.name)
		} else {
			require.Equal(t, http.StatusForbidden, code, "%s /metrics", tc.name)
			require.Contains(t, body, "GET /metrics needs scope read")
		}
		for _, rt := range enqueues {
			before := a.rows()
			r := c.do("POST", rt.path, rt.body)
			if tc.enqueue {
				require.Contains(t, []int{http.StatusCreated, http.StatusOK}, r.code, "%s %s: %s", tc.name, rt.path, r.raw)
				require.Equal(t, before+1, a.rows())
				continue
			}
			require.Equal(t, http.StatusForbidden, r.code, "%s POST %s: %s", tc.name, rt.path, r.raw)
			require.Contains(t, r.body["error"], "needs scope enqueue")
			require.Equal(t, before, a.rows(), "%s: a refused enqueue writes nothing", tc.name)
		}
		for _, p := range operates {
			body := ""
			if p == "/v1/run" {
				body = `{"queue":"default","max_jobs":1,"max_time":"1s"}`
			}
			r := c.do("POST", p, body)
			if tc.operate {
				require.Equal(t, http.StatusOK, r.code, "%s POST %s: %s", tc.name, p, r.raw)
				continue
			}
			require.Equal(t, http.StatusForbidden, r.code, "%s POST %s", tc.name, p)
			require.Contains(t, r.body["error"], "needs scope operate")
		}
	}
	paused, err := a.d.PausedQueues(context.Background())
	require.NoError(t, err)
	require.False(t, paused["default"])

	// Retry and cancel: refused to read and enqueue tokens, done for operate.
	for _, tok := range []string{readTok, enqTok} {
		r := a.as(tok).do("POST", fmt.Sprintf("/v1/jobs/%d/retry", failed.ID), "")
		require.Equal(t, http.StatusForbidden, r.code, r.raw)
		require.Contains(t, r.body["error"], "POST /v1/jobs/{id}/retry needs scope operate")
	}
	requireStatus(t, a.c, failed.ID, sluicetype.StatusFailed)
	op := a.as(operateTok)
	require.Equal(t, http.StatusOK, op.do("POST", fmt.Sprintf("/v1/jobs/%d/retry", failed.ID), "").code)
	requireStatus(t, a.c, failed.ID, sluicetype.StatusPending)
	require.Equal(t, http.StatusForbidden, a.as(readTok).do("POST", fmt.Sprintf("/v1/jobs/%d/cancel", failed.ID), "").code)
	requireStatus(t, a.c, failed.ID, sluicetype.StatusPending)
	require.Equal(t, http.StatusOK, op.do("POST", fmt.Sprintf("/v1/jobs/%d/cancel", failed.ID), "").code)
	requireStatus(t, a.c, failed.ID, sluicetype.StatusCancelled)

	// /healthz takes no token; a wrong token is still refused as before.
	require.Equal(t, http.StatusOK, a.as("").do("GET", "/healthz", "").code)
	require.Equal(t, http.StatusForbidden, a.as("wrong-token-Gt6Xp2Lm9Cv4Rq8Z").do("GET", "/v1/stats", "").code)
}

// A partner's token limited to order_sync enqueues that and nothing else:
// another type is refused with 403 naming the field, and in a batch one
// such job refuses the whole batch. Nothing is written.
func TestEnqueueLimitedToTypes(t *testing.T) {
	a := scoped(t)
	p := a.as(partnerTok)

	r := p.do("POST", "/v1/jobs", `{"type":"order_sync","key":"o1"}`)
	require.Equal(t, http.StatusCreated, r.code, r.raw)
	require.Equal(t, 1, a.rows())

	r = p.do("POST", "/v1/jobs", `{"type":"other","key":"x1"}`)
	require.Equal(t, http.StatusForbidden, r.code, r.raw)
	require.Equal(t, `type: token "partner-orders" may not enqueue type "other"; it may enqueue order_sync`, r.body["error"])

	r = p.do("POST", "/v1/jobs/many", `[{"type":"order_sync","key":"o2"},{"type":"other","key":"x2"},{"type":"order_sync","key":"o3"}]`)
	require.Equal(t, http.StatusForbidden, r.code, r.raw)
	require.Equal(t, `[1].type: token "partner-orders" may not enqueue type "other"; it may enqueue order_sync`, r.body["error"])
	require.Equal(t, 1, a.rows(), "all or nothing: no job of the refused batch is written")

	// It reads nothing, not even its own jobs.
	r = p.do("GET", "/v1/jobs", "")
	require.Equal(t, http.StatusForbidden, r.code)
}

// A token limited to queues is checked against the queue a job goes to:
// the one it names, else its type's.
func TestEnqueueLimitedToQueues(t *testing.T) {
	d := testdb.Open(t, "sqlite")
	types := map[string]sluice.Type{"order_sync": {Queue: "orders"}, "mail": {}}
	a := start(t, d, types, func(c *server.Config) {
		c.Tokens = nil
		c.ScopedTokens = []server.Token{{Name: "orders-only", Value: partnerTok, Scope: server.ScopeEnqueue, Queues: []string{"orders"}}}
	})
	p := a.as(partnerTok)
	require.Equal(t, http.StatusCreated, p.do("POST", "/v1/jobs", `{"type":"order_sync"}`).code, "its type's queue")
	require.Equal(t, http.StatusCreated, p.do("POST", "/v1/jobs", `{"type":"mail","queue":"orders"}`).code, "named")
	r := p.do("POST", "/v1/jobs", `{"type":"mail"}`)
	require.Equal(t, http.StatusForbidden, r.code, r.raw)
	require.Equal(t, `queue: token "orders-only" may not enqueue to queue "default"; it may enqueue to orders`, r.body["error"])
	r = p.do("POST", "/v1/jobs/many", `[{"type":"order_sync"},{"type":"order_sync","queue":"mail"}]`)
	require.Equal(t, http.StatusForbidden, r.code, r.raw)
	require.Contains(t, r.body["error"], `[1].queue: token "orders-only" may not enqueue to queue "mail"`)
	require.Equal(t, 2, a.rows())
}

// New refuses tokens it could not tell apart in logs, and limits that
// mean nothing on a scope other than enqueue.
func TestScopedTokensChecked(t *testing.T) {
	c, err := sluice.NewClient(sluice.Config{Driver: testdb.Open(t, "sqlite")})
	require.NoError(t, err)
	for _, tc := range []struct {
		toks []server.Token
		msg  string
	}{
		{[]server.Token{{Name: "a", Value: readTok, Scope: "opperate"}}, `scope "opperate" is not one of read, enqueue, operate, admin`},
		{[]server.Token{{Name: "a", Value: readTok, Scope: server.ScopeRead, Types: []string{"x"}}}, "only a token of scope enqueue can be limited"},
		{[]server.Token{{Name: "a", Value: readTok, Scope: server.ScopeRead}, {Name: "a", Value: adminTok, Scope: server.ScopeAdmin}}, `token name "a" is empty or used twice`},
		{[]server.Token{{Value: readTok, Scope: server.ScopeRead}}, `token name "" is empty`},
		{[]server.Token{{Name: "weak", Value: "t0k", Scope: server.ScopeRead}}, "token weak: token too weak"},
		{[]server.Token{{Name: "r", Value: readTok, Scope: server.ScopeRead}, {Name: "w", Value: readTok, Scope: server.ScopeAdmin}}, "tokens r and w have the same value"},
	} {
		_, err := server.New(server.Config{Client: c, ScopedTokens: tc.toks})
		require.ErrorContains(t, err, tc.msg)
		for _, tok := range tc.toks {
			require.NotContains(t, err.Error(), tok.Value)
		}
	}
}

// A read session of the dashboard sees no button that changes anything,
// and its forged POSTs to them are refused; an enqueue token cannot log
// in at all, and its refusal is not counted as a wrong guess.
func TestDashboardReadSession(t *testing.T) {
	a := scoped(t)
	ctx := context.Background()
	failed, err := a.c.Enqueue(ctx, sluice.EnqueueParams{Type: "other", MaxAttempts: 1})
	require.NoError(t, err)
	failJob(t, a.d, failed.ID, "boom")
	pending, err := a.c.Enqueue(ctx, sluice.EnqueueParams{Type: "other"})
	require.NoError(t, err)
	base := a.srv.URL

	ro := newBrowser(t, base)
	require.Equal(t, http.StatusSeeOther, ro.login(readTok))
	pages := map[string][]string{
		fmt.Sprintf("/jobs/%d", failed.ID):  {`id="retry"`, `/retry"`},
		fmt.Sprintf("/jobs/%d", pending.ID): {`id="cancel"`, `/cancel"`},
		"/failed":                           {`/failed/retry`, "retry-group"},
		"/queues":                           {`/pause"`, `/circuits/open`},
		"/jobs":                             {"bulk-", "/jobs/bulk"},
	}
	for p, gone := range pages {
		code, body, _ := ro.get(p)
		require.Equal(t, http.StatusOK, code, p)
		require.Contains(t, body, "read-only", p)
		for _, g := range gone {
			require.NotContains(t, body, g, "a read session's %s shows no %s", p, g)
		}
	}
	// The same pages of an operate session have them.
	op := newBrowser(t, base)
	require.Equal(t, http.StatusSeeOther, op.login(operateTok))
	for p, have := range pages {
		_, body, _ := op.get(p)
		require.NotContains(t, body, "read-only", p)
		require.Contains(t, body, have[0], p)
	}

	// Forged POSTs, with the read session's own valid CSRF token.
	tok := ro.csrf("/")
	for _, f := range []struct {
		path string
		form url.Values
	}{
		{fmt.Sprintf("/jobs/%d/retry", failed.ID), nil},
		{fmt.Sprintf("/jobs/%d/cancel", pending.ID), nil},
		{"/failed/retry", url.Values{"type": {"other"}, "prefix": {"boom"}}},
		{"/queues/default/pause", nil},
		{"/circuits/open", url.Values{"type": {"other"}}},
		{"/jobs/bulk", url.Values{"action": {"cancel"}, "status": {"pending"}}},
	} {
		form := url.Values{"csrf": {tok}}
		for k, v := range f.form {
			form[k] = v
		}
		code, body, _ := ro.post(f.path, form)
		require.Equal(t, http.StatusForbidden, code, f.path)
		require.Contains(t, body, "needs scope operate", f.path)
	}
	code, _, _ := ro.get("/jobs/bulk?action=cancel&status=pending")
	require.Equal(t, http.StatusForbidden, code, "nor the bulk confirmation page")
	requireStatus(t, a.c, failed.ID, sluicetype.StatusFailed)
	requireStatus(t, a.c, pending.ID, sluicetype.StatusPending)
	paused, err := a.d.PausedQueues(ctx)
	require.NoError(t, err)
	require.False(t, paused["default"])

	// An enqueue token is not a dashboard login.
	enq := newBrowser(t, base)
	code, body, _ := enq.post("/login", url.Values{"token": {enqTok}, "next": {"/"}})
	require.Equal(t, http.StatusForbidden, code)
	require.Contains(t, body, "may only enqueue jobs")
	code, _, _ = enq.get("/")
	require.Equal(t, http.StatusSeeOther, code, "no session was set")
	for range 5 {
		enq.post("/login", url.Values{"token": {enqTok}, "next": {"/"}})
	}
	require.Equal(t, http.StatusSeeOther, enq.login(adminTok), "the enqueue token's tries were not braked as wrong guesses")
	require.False(t, strings.Contains(body, enqTok))
}

// The request log says which token asked, by its name, never its value,
// and scrubs a scoped token's value from a path as it does a plain one's.
func TestRequestLogNamesToken(t *testing.T) {
	var buf bytes.Buffer
	var mu sync.Mutex
	log := slog.New(slog.NewTextHandler(writerFunc(func(p []byte) (int, error) {
		mu.Lock()
		defer mu.Unlock()
		return buf.Write(p)
	}), nil))
	a := start(t, testdb.Open(t, "sqlite"), nil, func(c *server.Config) {
		c.Tokens = []string{token}
		c.ScopedTokens = []server.Token{{Name: "grafana", Value: readTok, Scope: server.ScopeRead}}
		c.Logger = log
	})
	require.Equal(t, http.StatusOK, a.as(readTok).do("GET", "/v1/stats", "").code)
	require.Equal(t, http.StatusForbidden, a.as(readTok).do("POST", "/v1/jobs", `{"type":"x"}`).code)
	require.Equal(t, http.StatusCreated, a.do("POST", "/v1/jobs", `{"type":"x"}`).code)
	// A scoped token's value in the path is scrubbed like a plain one's.
	require.Equal(t, http.StatusBadRequest, a.as(readTok).do("GET", "/v1/jobs/"+readTok, "").code)
	mu.Lock()
	out := buf.String()
	mu.Unlock()
	require.Equal(t, 3, strings.Count(out, "token=grafana"), out)
	require.Contains(t, out, "token=tokens[0]")
	require.NotContains(t, out, readTok)
	require.NotContains(t, out, token)
}
