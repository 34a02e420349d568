package attacktest

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/internal/testkit/testdb"
)

// The tokens of the scope attacks: an admin's, a partner's that may
// enqueue order_sync only, and a dashboard viewer's that may only read.
const (
	adminToken   = "attack-admin-token-Jd7Vn2Qs9Lx4Pf8R"
	partnerToken = "attack-partner-token-Hq5Zt8Nc2Vb6Xy"
	readToken    = "attack-read-token-Mw4Rf7Gk9Tj3Qa6U"
)

const scopedAuth = `auth:
  tokens:
    - { name: ops, token: ` + adminToken + `, scope: admin }
    - { name: partner-orders, token: ` + partnerToken + `, scope: enqueue, types: [order_sync] }
    - { name: grafana, token: ` + readToken + `, scope: read }
`

// call sends one API request with a Bearer token and extra headers, and
// follows no redirect, so that a 301 to a cleaned path is seen as such.
func call(t *testing.T, method, url, tok, body string, header map[string]string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	if tok != "" {
		req.Header.Set("Authorization", "Bearer "+tok)
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	c := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := c.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, string(b)
}

// jobTypes lists the type of every job, read with the admin token.
func jobTypes(t *testing.T, base string) []string {
	t.Helper()
	code, body := call(t, "GET", base+"/v1/jobs?limit=1000", adminToken, "", nil)
	require.Equal(t, http.StatusOK, code, body)
	var out struct{ Jobs []struct{ Type string } }
	require.NoError(t, json.Unmarshal([]byte(body), &out), body)
	var types []string
	for _, j := range out.Jobs {
		types = append(types, j.Type)
	}
	return types
}

// TestScopesOverHTTP: a partner's enqueue token and a read token try to
// do more than their scope by every spelling a client controls: other
// types, a batch hiding one, duplicate JSON keys, method-override
// headers, path variants, and an admin token smuggled in the query. None
// gets a 2xx; the only jobs written are the partner's order_sync ones.
// On main every token could do everything.
func TestScopesOverHTTP(t *testing.T) {
	base := serve(t, scopedAuth)
	code, body := call(t, "POST", base+"/v1/jobs", partnerToken, `{"type":"order_sync","key":"o1"}`, nil)
	require.Equal(t, http.StatusCreated, code, body)

	for _, a := range []struct {
		tok, method, path, body string
		header                  map[string]string
	}{
		{partnerToken, "POST", "/v1/jobs", `{"type":"other"}`, nil},
		{partnerToken, "POST", "/v1/jobs", `{"type":"cmd"}`, nil},
		{partnerToken, "POST", "/v1/jobs", `{"type":"Order_sync"}`, nil},
		{partnerToken, "POST", "/v1/jobs", `{"type":"order_sync","type":"cmd"}`, nil},
		{partnerToken, "POST", "/v1/jobs", `{"type":"cmd","Type":"order_sync"}`, nil},
		{partnerToken, "POST", "/v1/jobs/many", `[{"type":"order_sync","key":"o2"},{"type":"cmd"}]`, nil},
		{partnerToken, "POST", "/v1/jobs/many", `[{"type":"order_sync","key":"o3"},{"type":"order_sync","type":"cmd"}]`, nil},
		{partnerToken, "GET", "/v1/jobs", "", nil},
		{partnerToken, "GET", "/v1/stats", "", nil},
		{partnerToken, "GET", "/metrics", "", nil},
		{partnerToken, "POST", "/v1/queues/default/pause", "", nil},
		{partnerToken, "POST", "/v1/run", `{"queue":"default"}`, nil},
		{partnerToken, "POST", "/v1/jobs/1/cancel", "", map[string]string{"X-HTTP-Method-Override": "POST"}},
		{readToken, "POST", "/v1/jobs", `{"type":"order_sync"}`, nil},
		{readToken, "POST", "/v1/jobs", `{"type":"order_sync"}`, map[string]string{"X-HTTP-Method-Override": "GET"}},
		{readToken, "POST", "/v1//jobs", `{"type":"order_sync"}`, nil},
		{readToken, "POST", "/v1/./jobs", `{"type":"order_sync"}`, nil},
		{readToken, "POST", "/v1/stats/../jobs", `{"type":"order_sync"}`, nil},
		{readToken, "POST", "/v1/jobs/many", `[{"type":"order_sync"}]`, nil},
		{readToken, "POST", "/v1/jobs/1/cancel", "", nil},
		{readToken, "POST", "/v1/jobs/1/retry", "", nil},
		{readToken, "POST", "/v1/queues/default/pause", "", nil},
		{readToken, "POST", "/v1/circuits/cmd/open", "", nil},
		{readToken, "POST", "/v1/run", `{"queue":"default"}`, nil},
		{readToken, "POST", "/v1/jobs?token=" + adminToken, `{"type":"order_sync"}`, nil},
		{partnerToken, "POST", "/v1/jobs?token=" + adminToken, `{"type":"cmd"}`, nil},
	} {
		code, body := call(t, a.method, base+a.path, a.tok, a.body, a.header)
		require.False(t, code >= 200 && code < 300, "%s %s %s as %.14s…: %d %s", a.method, a.path, a.body, a.tok, code, body)
		require.NotContains(t, body, adminToken)
	}
	require.Equal(t, []string{"order_sync"}, jobTypes(t, base), "only the partner's allowed job was written")
	code, body = call(t, "GET", base+"/v1/stats", readToken, "", nil)
	require.Equal(t, http.StatusOK, code, body)
	code, body = call(t, "GET", base+"/v1/jobs/1", readToken, "", nil)
	require.Equal(t, http.StatusOK, code, body)
	require.Contains(t, body, `"status":"pending"`, "no attack cancelled it")
}

// TestReadScopeInBrowser: a viewer logs into the dashboard in a real
// browser with a read token. The job's page shows no Cancel button; a
// form the viewer's own page builds, with its valid CSRF token, posts
// the cancel anyway and is refused, and the job stays pending. The
// partner's enqueue token is refused at the login form.
func TestReadScopeInBrowser(t *testing.T) {
	base := serve(t, scopedAuth)
	code, body := call(t, "POST", base+"/v1/jobs", adminToken, `{"type":"cmd","run_at":"2099-01-01T00:00:00Z"}`, nil)
	require.Equal(t, http.StatusCreated, code, body)
	ctx := browser(t, "127.0.0.1")

	login := func(tok string) {
		require.NoError(t, chromedp.Do(ctx,
			chromedp.Navigate(base+"/login"),
			chromedp.WaitVisible(chromedp.ID("token")),
			chromedp.SendKeys(chromedp.ID("token"), tok),
			chromedp.Submit(chromedp.ID("token"))))
	}
	login(partnerToken)
	waitJS(t, ctx, `document.readyState == "complete" && document.body.innerText.includes("may only enqueue jobs")`, "the enqueue token's login is refused")

	login(readToken)
	waitJS(t, ctx, `document.readyState == "complete" && location.pathname == "/"`, "the read token logs in")
	require.NoError(t, chromedp.Do(ctx, chromedp.Navigate(base+"/jobs/1")))
	waitJS(t, ctx, `document.readyState == "complete" && document.body.innerText.includes("read-only")`, "the job page marks the session read-only")
	n, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll("#cancel, #retry, form[action$='/cancel']").length`))
	require.NoError(t, err)
	require.Zero(t, n, "no button that changes the job")

	// The viewer's page forges the form the button would have posted.
	_, err = chromedp.Run(ctx, chromedp.Evaluate[bool](`(function () {
  var f = document.createElement("form");
  f.method = "post"; f.action = "/jobs/1/cancel";
  var c = document.createElement("input");
  c.type = "hidden"; c.name = "csrf"; c.value = document.querySelector("input[name=csrf]").value;
  f.appendChild(c); document.body.appendChild(f); f.submit(); return true;
})()`))
	require.NoError(t, err)
	waitJS(t, ctx, `location.pathname == "/jobs/1/cancel" && document.readyState == "complete"`, "the forged form posted")
	text, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.body.innerText`))
	require.NoError(t, err)
	require.Contains(t, text, "needs scope operate")
	code, body = call(t, "GET", base+"/v1/jobs/1", adminToken, "", nil)
	require.Equal(t, http.StatusOK, code, body)
	require.Contains(t, body, `"status":"pending"`, fmt.Sprintf("the forged cancel changed nothing: %s", body))
}

// TestCancelRunningJobInBrowser: an operator opens a running job's page in
// a real browser, clicks Cancel and confirms. The command's process is
// stopped, the job ends cancelled with the session's token named in its
// history, and the page says so.
func TestCancelRunningJobInBrowser(t *testing.T) {
	pidFile := filepath.Join(t.TempDir(), "pid")
	base := serveTypes(t, scopedAuth, fmt.Sprintf("  long:\n    command: [\"sh\", \"-c\", \"echo $$ > %s; exec sleep 300\"]\n", pidFile))
	code, body := call(t, "POST", base+"/v1/jobs", adminToken, `{"type":"long"}`, nil)
	require.Equal(t, http.StatusCreated, code, body)
	var pid int
	testdb.WaitFor(t, time.Minute, "the command running", func() bool {
		b, err := os.ReadFile(pidFile)
		pid, _ = strconv.Atoi(strings.TrimSpace(string(b)))
		return err == nil && pid > 0
	})

	ctx := browser(t, "127.0.0.1")
	// The confirmation the button asks for, accepted when it names what
	// a running job's cancel does.
	dialogs := chromedp.Events(ctx, page.JavascriptDialogOpening)
	go func() {
		for ev, err := range dialogs {
			if err != nil {
				return
			}
			accept := strings.Contains(ev.Message, "Its handler is stopped")
			chromedp.Call(ctx, page.HandleJavaScriptDialog, page.HandleJavaScriptDialogParams{Accept: accept})
		}
	}()
	require.NoError(t, chromedp.Do(ctx,
		chromedp.Navigate(base+"/login"),
		chromedp.WaitVisible(chromedp.ID("token")),
		chromedp.SendKeys(chromedp.ID("token"), adminToken),
		chromedp.Submit(chromedp.ID("token"))))
	waitJS(t, ctx, `document.readyState == "complete" && location.pathname == "/"`, "the operator logs in")
	require.NoError(t, chromedp.Do(ctx, chromedp.Navigate(base+"/jobs/1")))
	waitJS(t, ctx, `document.readyState == "complete" && document.querySelector("#cancel") != null`, "the running job's page has a Cancel button")
	require.NoError(t, chromedp.Do(ctx, chromedp.Click(chromedp.ID("cancel"))))
	waitJS(t, ctx, `document.readyState == "complete" && document.body.innerText.includes("Job cancelled.")`, "the page says the job is cancelled")

	testdb.WaitFor(t, time.Minute, "the command stopped", func() bool { return errors.Is(syscall.Kill(pid, 0), syscall.ESRCH) })
	code, body = call(t, "GET", base+"/v1/jobs/1", adminToken, "", nil)
	require.Equal(t, http.StatusOK, code, body)
	require.Contains(t, body, `"status":"cancelled"`)
	require.Contains(t, body, "cancelled by an operator: ops via dashboard")
}
