package server_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/cron"
	"github.com/sluicehq/sluice/driver"
	"github.com/sluicehq/sluice/internal/testkit/testdb"
	"github.com/sluicehq/sluice/server"
	"github.com/sluicehq/sluice/sluicetype"
)

// hostile is data that must be shown as text, never run as markup.
const hostile = `<script>alert("x")</script>'"&`

var dashPages = []string{"/", "/jobs", "/jobs?status=failed", "/jobs?status=pending&type=" + url.QueryEscape(hostile),
	"/failed", "/queues", "/schedules", "/batches", "/leases", "/workers", "/audit", "/audit?actor=" + url.QueryEscape(hostile)}

// browser is a cookie-keeping HTTP client that does not follow redirects,
// so tests see them.
type browser struct {
	t    testing.TB
	base string
	hc   *http.Client
}

func newBrowser(t testing.TB, base string) *browser {
	jar, err := cookiejar.New(nil)
	require.NoError(t, err)
	return &browser{t: t, base: base, hc: &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error {
		return http.ErrUseLastResponse
	}}}
}

func (b *browser) get(path string) (int, string, http.Header) {
	b.t.Helper()
	resp, err := b.hc.Get(b.base + path)
	require.NoError(b.t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(b.t, err)
	return resp.StatusCode, string(body), resp.Header
}

func (b *browser) post(path string, form url.Values) (int, string, http.Header) {
	b.t.Helper()
	resp, err := b.hc.PostForm(b.base+path, form)
	require.NoError(b.t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(b.t, err)
	return resp.StatusCode, string(body), resp.Header
}

func (b *browser) login(tok string) int {
	b.t.Helper()
	code, _, h := b.post("/login", url.Values{"token": {tok}, "next": {"/"}})
	if code == http.StatusSeeOther {
		require.Equal(b.t, "/", h.Get("Location"))
	}
	return code
}

var csrfRe = regexp.MustCompile(`name="csrf" value="([^"]+)"`)

func (b *browser) csrf(page string) string {
	b.t.Helper()
	_, body, _ := b.get(page)
	m := csrfRe.FindStringSubmatch(body)
	require.NotNil(b.t, m, "no CSRF token on %s", page)
	return m[1]
}

// dashServer serves a client with a schedule on d behind the token.
func dashServer(t testing.TB, d driver.Driver, schedName string) (*sluice.Client, string) {
	spec, err := cron.Parse("*/5 * * * *", time.UTC)
	require.NoError(t, err)
	c, err := sluice.NewClient(sluice.Config{Driver: d, Schedules: []sluice.Schedule{{Name: schedName, Spec: spec, Type: "report"}}})
	require.NoError(t, err)
	h, err := server.New(server.Config{Client: c, Tokens: []string{token}})
	require.NoError(t, err)
	return c, newTestServer(t, h)
}

func TestDashboardAuth(t *testing.T) {
	d := testdb.Open(t, "sqlite")
	c, base := dashServer(t, d, "nightly")
	ctx := context.Background()

	anon := newBrowser(t, base)
	for _, p := range dashPages {
		code, _, h := anon.get(p)
		require.Equal(t, http.StatusSeeOther, code, p)
		require.True(t, strings.HasPrefix(h.Get("Location"), "/login?next="), "%s redirects to %s", p, h.Get("Location"))
	}
	code, body, _ := anon.get("/login")
	require.Equal(t, http.StatusOK, code)
	require.Contains(t, body, `name="token"`)
	require.Equal(t, http.StatusForbidden, anon.login("wrong-token"))
	code, _, _ = anon.get("/")
	require.Equal(t, http.StatusSeeOther, code, "a refused token sets no session")
	// The API's Bearer token is not a dashboard session.
	req, _ := http.NewRequest("GET", base+"/", nil)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := anon.hc.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)

	u := newBrowser(t, base)
	require.Equal(t, http.StatusSeeOther, u.login(token))
	ck := u.hc.Jar.Cookies(mustURL(t, base))
	require.Len(t, ck, 2, "the session and the device cookie")
	for _, c := range ck {
		require.NotContains(t, c.Value, token, "a cookie never holds the token")
	}
	_, _, h := newBrowser(t, base).post("/login", url.Values{"token": {token}})
	require.Len(t, h.Values("Set-Cookie"), 2)
	for _, setCookie := range h.Values("Set-Cookie") {
		require.Contains(t, setCookie, "HttpOnly")
		require.Contains(t, setCookie, "SameSite=Strict")
	}

	failed, err := c.Enqueue(ctx, sluice.EnqueueParams{Type: "t", MaxAttempts: 1})
	require.NoError(t, err)
	failJob(t, d, failed.ID, "boom")
	pending, err := c.Enqueue(ctx, sluice.EnqueueParams{Type: "t"})
	require.NoError(t, err)

	// POST without (or with a wrong) CSRF token is refused and changes nothing.
	code, _, _ = u.post(fmt.Sprintf("/jobs/%d/retry", failed.ID), nil)
	require.Equal(t, http.StatusForbidden, code)
	code, _, _ = u.post(fmt.Sprintf("/jobs/%d/cancel", pending.ID), url.Values{"csrf": {"forged"}})
	require.Equal(t, http.StatusForbidden, code)
	code, _, _ = anon.post(fmt.Sprintf("/jobs/%d/cancel", pending.ID), nil)
	require.Equal(t, http.StatusUnauthorized, code)
	requireStatus(t, c, failed.ID, sluicetype.StatusFailed)
	requireStatus(t, c, pending.ID, sluicetype.StatusPending)

	// The buttons work with the page's token.
	tok := u.csrf(fmt.Sprintf("/jobs/%d", failed.ID))
	code, _, h = u.post(fmt.Sprintf("/jobs/%d/retry", failed.ID), url.Values{"csrf": {tok}})
	require.Equal(t, http.StatusSeeOther, code)
	require.True(t, strings.HasPrefix(h.Get("Location"), fmt.Sprintf("/jobs/%d?", failed.ID)))
	requireStatus(t, c, failed.ID, sluicetype.StatusPending)
	code, _, _ = u.post(fmt.Sprintf("/jobs/%d/cancel", pending.ID), url.Values{"csrf": {tok}})
	require.Equal(t, http.StatusSeeOther, code)
	requireStatus(t, c, pending.ID, sluicetype.StatusCancelled)

	// A running job has the button too; its cancel ends the attempt, in
	// the history as the dashboard session's.
	running, err := c.Enqueue(ctx, sluice.EnqueueParams{Type: "t", Queue: "running"})
	require.NoError(t, err)
	claimed, err := d.Claim(ctx, driver.ClaimParams{Queue: "running", Limit: 1, Lease: time.Minute, Token: "running-tok"})
	require.NoError(t, err)
	require.Len(t, claimed, 1)
	require.Equal(t, running.ID, claimed[0].ID)
	code, body, _ = u.get(fmt.Sprintf("/jobs/%d", running.ID))
	require.Equal(t, http.StatusOK, code)
	require.Contains(t, body, `id="cancel"`)
	require.Contains(t, body, "Cancel this running job?")
	code, _, _ = u.post(fmt.Sprintf("/jobs/%d/cancel", running.ID), url.Values{"csrf": {tok}})
	require.Equal(t, http.StatusSeeOther, code)
	requireStatus(t, c, running.ID, sluicetype.StatusCancelled)
	rj, err := c.Job(ctx, running.ID)
	require.NoError(t, err)
	require.Len(t, rj.History, 1)
	require.Contains(t, rj.History[0].Error, "cancelled by an operator: ")
	require.Contains(t, rj.History[0].Error, " via dashboard")
	lost, err := d.Complete(ctx, driver.CompleteParams{Completions: []driver.Completion{{ID: running.ID, Token: "running-tok", Status: sluicetype.StatusSuccess}}})
	require.NoError(t, err)
	require.Equal(t, []int64{running.ID}, lost, "the running attempt's success after the cancel")

	// Bulk retry of a failed group, and pause/resume.
	for range 3 {
		r, err := c.Enqueue(ctx, sluice.EnqueueParams{Type: "grp", MaxAttempts: 1})
		require.NoError(t, err)
		failJob(t, d, r.ID, "same error\nwith detail")
	}
	code, body, _ = u.get("/failed")
	require.Equal(t, http.StatusOK, code)
	require.Contains(t, body, "Retry 3")
	code, _, _ = u.post("/failed/retry", url.Values{"csrf": {tok}, "type": {"grp"}, "prefix": {"same error"}})
	require.Equal(t, http.StatusSeeOther, code)
	st, err := c.Jobs(ctx, sluicetype.ListParams{Status: sluicetype.StatusFailed})
	require.NoError(t, err)
	require.Empty(t, st)
	code, _, _ = u.post("/queues/default/pause", url.Values{"csrf": {tok}})
	require.Equal(t, http.StatusSeeOther, code)
	paused, err := d.PausedQueues(ctx)
	require.NoError(t, err)
	require.True(t, paused["default"])

	// A circuit is opened and closed by hand from the queues page.
	code, _, _ = u.post("/circuits/open", url.Values{"csrf": {tok}, "type": {"flaky"}})
	require.Equal(t, http.StatusSeeOther, code)
	cs, err := d.Circuit(ctx, driver.CircuitParams{Type: "flaky"})
	require.NoError(t, err)
	require.Equal(t, sluicetype.CircuitOpen, cs.State)
	code, body, _ = u.get("/queues")
	require.Equal(t, http.StatusOK, code)
	require.Contains(t, body, "open (by hand)")
	_, err = d.TakeTokens(ctx, driver.TakeTokensParams{Name: "queue:mail", Rate: 1, Burst: 3, Want: 1})
	require.NoError(t, err)
	_, body, _ = u.get("/queues")
	require.Contains(t, body, "queue:mail", "the queues page shows the cluster rate buckets")
	code, _, _ = u.post("/circuits/close", url.Values{"csrf": {tok}, "type": {"flaky"}})
	require.Equal(t, http.StatusSeeOther, code)
	cs, err = d.Circuit(ctx, driver.CircuitParams{Type: "flaky"})
	require.NoError(t, err)
	require.Equal(t, sluicetype.CircuitClosed, cs.State)

	// Logging out ends the session.
	code, _, _ = u.post("/logout", url.Values{"csrf": {tok}})
	require.Equal(t, http.StatusSeeOther, code)
	code, _, _ = u.get("/")
	require.Equal(t, http.StatusSeeOther, code)
}

func mustURL(t *testing.T, s string) *url.URL {
	u, err := url.Parse(s)
	require.NoError(t, err)
	return u
}

func requireStatus(t *testing.T, c *sluice.Client, id int64, want sluicetype.Status) {
	t.Helper()
	j, err := c.Job(context.Background(), id)
	require.NoError(t, err)
	require.Equal(t, want, j.Status)
}

// failJob claims a job and fails it for good with msg.
func failJob(t *testing.T, d driver.Driver, id int64, msg string) {
	t.Helper()
	ctx := context.Background()
	j, err := d.GetJob(ctx, id)
	require.NoError(t, err)
	rows, err := d.Claim(ctx, driver.ClaimParams{Queue: j.Queue, Limit: 1000, Lease: time.Minute, Token: "tok"})
	require.NoError(t, err)
	var cs []driver.Completion
	for _, r := range rows {
		if r.ID == id {
			// With an attempt in the history, whose text the job page shows
			// too. It started well before the claim, so that it has a
			// duration to show: the completion can follow the claim within
			// the same millisecond of SQLite's clock.
			cs = append(cs, driver.Completion{ID: id, Token: "tok", Status: sluicetype.StatusFailed, Error: &msg,
				Attempt: &sluicetype.Attempt{Number: r.Attempts, Node: hostile, Start: r.UpdatedAt.Add(-1500 * time.Millisecond), Outcome: sluicetype.OutcomeFailed,
					Error: msg, HTTPStatus: http.StatusInternalServerError}})
		} else {
			cs = append(cs, driver.Completion{ID: r.ID, Token: "tok", Status: sluicetype.StatusPending, Refund: true})
		}
	}
	lost, err := d.Complete(ctx, driver.CompleteParams{Completions: cs})
	require.NoError(t, err)
	require.Empty(t, lost)
}

// TestDashboardPages renders every page through the real server on each
// database: empty, with ordinary data, and with hostile data, which must
// come out escaped.
func TestDashboardPages(t *testing.T) {
	testdb.ForEach(t, func(t *testing.T, name string) {
		d, tg := testdb.OpenURL(t, name)
		ctx := context.Background()
		c, base := dashServer(t, d, hostile)
		u := newBrowser(t, base)
		require.Equal(t, http.StatusSeeOther, u.login(token))
		check := func(stage string, extra ...string) {
			for _, p := range append(dashPages, extra...) {
				code, body, h := u.get(p)
				require.Equal(t, http.StatusOK, code, "%s %s: %s", stage, p, body)
				require.Equal(t, "text/html; charset=utf-8", h.Get("Content-Type"))
				require.Contains(t, h.Get("Content-Security-Policy"), "script-src 'self'")
				require.NotContains(t, body, `<script>alert`, "%s %s: hostile markup came through", stage, p)
				require.Equal(t, 1, strings.Count(body, "<script"), "%s %s: only our own script tag", stage, p)
			}
		}
		check("empty")

		// Ordinary data: finished and live jobs, roll-ups, a node, a lease.
		ok, err := c.Enqueue(ctx, sluice.EnqueueParams{Type: "mail", Key: "order-1", Payload: map[string]int{"n": 1}})
		require.NoError(t, err)
		failJob(t, d, ok.ID, "smtp: 550 mailbox unavailable")
		require.NoError(t, d.AddStats(ctx, driver.AddStatsParams{Rows: []sluicetype.StatRow{{Queue: "default", Type: "mail", Outcome: "success", Bucket: time.Now().Truncate(time.Minute), Count: 5}}}))
		require.NoError(t, d.UpsertNode(ctx, sluicetype.Node{ID: "host:1", Version: "v1", StartedAt: time.Now(), Concurrency: 4}))
		_, err = d.AcquireLease(ctx, driver.LeaseParams{Name: "maintenance", Holder: "host:1", TTL: time.Minute})
		require.NoError(t, err)
		check("data", fmt.Sprintf("/jobs/%d", ok.ID))
		_, body, _ := u.get("/")
		require.Contains(t, body, "<svg")

		// Hostile data everywhere a string reaches a page.
		bad, err := c.Enqueue(ctx, sluice.EnqueueParams{Type: `<script>alert(1)</script>"'`, Key: hostile, Queue: `q"><script>alert(1)</script>`,
			Payload: map[string]string{"html": "</pre>" + hostile}})
		require.NoError(t, err)
		failJob(t, d, bad.ID, hostile+"\n"+hostile)
		require.NoError(t, d.UpsertNode(ctx, sluicetype.Node{ID: hostile, Version: hostile, StartedAt: time.Now()}))
		_, err = d.AcquireLease(ctx, driver.LeaseParams{Name: hostile, Holder: hostile, TTL: time.Minute})
		require.NoError(t, err)
		cp := "INSERT INTO " + tg.Prefix + "checkpoints (batch, shard, last_error, owner) VALUES (?, ?, ?, ?)"
		if name == "postgres" {
			cp = "INSERT INTO " + tg.Prefix + "checkpoints (batch, shard, last_error, owner) VALUES ($1, $2, $3, $4)"
		}
		_, err = d.DB().ExecContext(ctx, cp, hostile, hostile, hostile, hostile)
		require.NoError(t, err)
		require.NoError(t, d.AddStats(ctx, driver.AddStatsParams{Rows: []sluicetype.StatRow{{Queue: hostile, Type: hostile, Outcome: "failed", Bucket: time.Now().Truncate(time.Minute), Count: 2}}}))
		require.NoError(t, d.InsertAudit(ctx, driver.InsertAuditParams{Entry: sluicetype.AuditEntry{
			Actor: hostile, Source: hostile, Address: hostile, Action: hostile, Target: hostile, Affected: 1}}))
		if name == "sqlite" {
			// Only SQLite stores invalid UTF-8 in a text column.
			_, err = d.DB().ExecContext(ctx, "UPDATE "+tg.Prefix+"jobs SET last_error = CAST(X'3C7363726970743EC328FF' AS TEXT) WHERE id = ?", bad.ID)
			require.NoError(t, err)
		}
		check("hostile", fmt.Sprintf("/jobs/%d", bad.ID))
		_, body, _ = u.get(fmt.Sprintf("/jobs/%d", bad.ID))
		require.Contains(t, body, "&lt;script&gt;alert")
		require.Contains(t, body, "&#34;")
	})
}

// TestDashboardSearchAndBulk searches by payload field through the Jobs
// page and deletes the matching set through the confirmation form, on
// every database; bad input is refused with the field named.
func TestDashboardSearchAndBulk(t *testing.T) {
	testdb.ForEachDriver(t, func(t *testing.T, d driver.Driver) {
		ctx := context.Background()
		c, base := dashServer(t, d, "nightly")
		u := newBrowser(t, base)
		require.Equal(t, http.StatusSeeOther, u.login(token))
		var gold []int64
		for i := range 5 {
			tier := "silver"
			if i%2 == 0 {
				tier = "gold"
			}
			r, err := c.Enqueue(ctx, sluice.EnqueueParams{Type: "order", Payload: map[string]any{"customer": map[string]any{"tier": tier, "n": i}}})
			require.NoError(t, err)
			if tier == "gold" {
				gold = append(gold, r.ID)
			}
		}
		code, body, _ := u.get("/jobs?field=customer.tier&value=gold")
		require.Equal(t, http.StatusOK, code)
		for _, id := range gold {
			require.Contains(t, body, fmt.Sprintf(`href="/jobs/%d"`, id))
		}
		require.Equal(t, 3, strings.Count(body, `href="/jobs/`)-strings.Count(body, `href="/jobs/bulk`))
		require.Contains(t, body, "newest 1000 jobs")
		// The JSON API takes the same filter.
		resp := get(t, base+"/v1/jobs?payload_field=customer.tier&payload_value=silver", token)
		require.Equal(t, http.StatusOK, resp.StatusCode)
		var list struct{ Jobs []sluicetype.JobRow }
		require.NoError(t, json.NewDecoder(resp.Body).Decode(&list))
		require.Len(t, list.Jobs, 2)
		require.Equal(t, http.StatusBadRequest, get(t, base+"/v1/jobs?payload_field=a..b", token).StatusCode)

		code, body, _ = u.get("/jobs/bulk?action=delete&field=customer.tier&value=gold")
		require.Equal(t, http.StatusOK, code)
		require.Contains(t, body, "This will delete <strong>3</strong> jobs")
		upto := regexp.MustCompile(`name="upto" value="(\d+)"`).FindStringSubmatch(body)
		require.NotNil(t, upto)
		require.Equal(t, strconv.FormatInt(gold[len(gold)-1], 10), upto[1])
		// A gold job enqueued after the count is not deleted.
		late, err := c.Enqueue(ctx, sluice.EnqueueParams{Type: "order", Payload: map[string]any{"customer": map[string]any{"tier": "gold"}}})
		require.NoError(t, err)

		tok := u.csrf("/jobs")
		form := url.Values{"action": {"delete"}, "field": {"customer.tier"}, "value": {"gold"}, "upto": {upto[1]}}
		code, _, _ = u.post("/jobs/bulk", form)
		require.Equal(t, http.StatusForbidden, code, "no CSRF token")
		form.Set("csrf", tok)
		code, _, h := u.post("/jobs/bulk", form)
		require.Equal(t, http.StatusSeeOther, code)
		require.Contains(t, h.Get("Location"), "flash=3+jobs+deleted.")
		// The page it leads to shows the notice; a link with a ?flash=
		// that sluice did not sign shows nothing, not even with the
		// signature of another notice.
		loc, err := url.Parse(h.Get("Location"))
		require.NoError(t, err)
		_, body, _ = u.get(loc.RequestURI())
		require.Contains(t, body, `<p class="flash" role="status">3 jobs deleted.</p>`)
		forged := loc.Query()
		forged.Set("flash", "Session expired: log in again at evil.example")
		_, body, _ = u.get(loc.Path + "?" + forged.Encode())
		require.NotContains(t, body, "evil.example")
		require.NotContains(t, body, `class="flash"`)
		_, body, _ = u.get("/?flash=Session+expired")
		require.NotContains(t, body, "Session expired")
		for _, id := range gold {
			_, err := c.Job(ctx, id)
			require.ErrorIs(t, err, sluicetype.ErrNotFound)
		}
		requireStatus(t, c, late.ID, sluicetype.StatusPending)

		// Bad input names its field and changes nothing.
		code, body, _ = u.get("/jobs?field=customer'tier&value=x")
		require.Equal(t, http.StatusBadRequest, code)
		require.Contains(t, body, "payload_field")
		code, body, _ = u.get("/jobs/bulk?action=explode")
		require.Equal(t, http.StatusBadRequest, code)
		require.Contains(t, body, "action")
		code, body, _ = u.post("/jobs/bulk", url.Values{"csrf": {tok}, "action": {"delete"}})
		require.Equal(t, http.StatusBadRequest, code)
		require.Contains(t, body, "upto")
		requireStatus(t, c, late.ID, sluicetype.StatusPending)
	})
}

// Issue 24 item 9: the overview lists the types whose pending jobs no
// process with a handler has served lately, with their counts, and drops
// a type once a worker serves it.
func TestDashboardWaitingForHandler(t *testing.T) {
	testdb.ForEach(t, func(t *testing.T, name string) {
		d := testdb.Open(t, name)
		ctx := context.Background()
		c, base := dashServer(t, d, "nightly")
		u := newBrowser(t, base)
		require.Equal(t, http.StatusSeeOther, u.login(token))
		_, body, _ := u.get("/")
		require.NotContains(t, body, `id="waiting"`, "nothing waits")

		for range 2 {
			_, err := c.Enqueue(ctx, sluice.EnqueueParams{Type: "unserved"})
			require.NoError(t, err)
		}
		_, body, _ = u.get("/")
		require.Contains(t, body, `id="waiting"`)
		require.Regexp(t, `<td><a href="/jobs\?type=unserved&amp;status=pending">unserved</a></td><td>2</td>`, body)

		// A worker with the handler starts: it records the type's
		// settings and stamps it served.
		worker, err := sluice.NewClient(sluice.Config{Driver: d, DisableMaintenance: true,
			Types:  map[string]sluice.Type{"unserved": {Handler: sluice.HandlerFunc(func(context.Context, *sluice.Job) error { return nil })}},
			Queues: map[string]sluice.QueueConfig{"default": {Concurrency: 1}}})
		require.NoError(t, err)
		require.NoError(t, worker.Start(ctx))
		t.Cleanup(func() { worker.Stop(ctx) })
		testdb.WaitFor(t, time.Minute, "the served type no longer waits", func() bool {
			_, body, _ = u.get("/")
			return !strings.Contains(body, `id="waiting"`)
		})
	})
}

// Issue 33: the overview lists the queues whose pending jobs no worker or
// pass has claimed from lately (a queue no config lists), with their
// counts, and drops a queue once a process claims from it.
func TestDashboardUnservedQueues(t *testing.T) {
	testdb.ForEach(t, func(t *testing.T, name string) {
		d := testdb.Open(t, name)
		ctx := context.Background()
		c, base := dashServer(t, d, "nightly")
		u := newBrowser(t, base)
		require.Equal(t, http.StatusSeeOther, u.login(token))
		_, body, _ := u.get("/")
		require.NotContains(t, body, `id="unserved-queues"`, "nothing waits")

		for range 2 {
			_, err := c.Enqueue(ctx, sluice.EnqueueParams{Type: "mail", Queue: "emails"})
			require.NoError(t, err)
		}
		_, body, _ = u.get("/")
		require.Contains(t, body, `id="unserved-queues"`)
		require.Regexp(t, `<td><a href="/jobs\?queue=emails&amp;status=pending">emails</a></td><td>2</td>`, body)

		// A pass of another process, whose config lists the queue, runs
		// it and stamps it served.
		other, err := sluice.NewClient(sluice.Config{Driver: d, DisableMaintenance: true,
			Types: map[string]sluice.Type{"mail": {Queue: "emails", Handler: sluice.HandlerFunc(func(context.Context, *sluice.Job) error { return nil })}}})
		require.NoError(t, err)
		res, err := other.RunOnce(ctx, sluice.RunParams{MaxDuration: 10 * time.Second})
		require.NoError(t, err)
		require.Equal(t, 2, res.Done)
		_, err = c.Enqueue(ctx, sluice.EnqueueParams{Type: "mail", Queue: "emails"})
		require.NoError(t, err)
		_, body, _ = u.get("/")
		require.NotContains(t, body, `id="unserved-queues"`, "a job of the served queue does not wait")
	})
}
