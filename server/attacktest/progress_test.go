package attacktest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/internal/testkit/testdb"
)

// TestLiveProgressInBrowser: an operator opens a running job's page in a
// real browser while its command reports progress on fd 3, and watches
// it: the bar and its text follow each report with no navigation by the
// test (the page reloads itself every 2 s while the job runs, as
// app.js's data-refresh promises), and once the job ends the page shows
// its final state, success with the last report, and
// stops reloading. (A job that never failed keeps no attempt history, so
// the page's Progress row is where the last report stays.) The test steps the command through files, so that it
// judges what the page shows, never how fast.
func TestLiveProgressInBrowser(t *testing.T) {
	dir := t.TempDir()
	step := func(name string) { require.NoError(t, os.WriteFile(filepath.Join(dir, name), nil, 0o644)) }
	// Each report waits for the test's file; the command ends after the
	// third. 2>/dev/null: a poll's sleep is not the job's output.
	script := fmt.Sprintf(`cd %q; for i in 1 2 3; do while [ ! -e step$i ]; do sleep 0.1; done; echo "{\"done\":$i,\"total\":3,\"message\":\"batch $i\"}" >&"$SLUICE_PROGRESS_FD"; done; while [ ! -e end ]; do sleep 0.1; done`, dir)
	base := serveTypes(t, scopedAuth, fmt.Sprintf("  report:\n    command: [\"sh\", \"-c\", %s]\n", jsString(script)))
	code, body := call(t, "POST", base+"/v1/jobs", adminToken, `{"type":"report"}`, nil)
	require.Equal(t, http.StatusCreated, code, body)

	// progressOf reads the job's status and progress from the API.
	progressOf := func() (string, int64) {
		code, body := call(t, "GET", base+"/v1/jobs/1", adminToken, "", nil)
		require.Equal(t, http.StatusOK, code, body)
		var j struct {
			Status   string
			Progress *struct{ Done int64 }
		}
		require.NoError(t, json.Unmarshal([]byte(body), &j), body)
		if j.Progress == nil {
			return j.Status, 0
		}
		return j.Status, j.Progress.Done
	}
	step("step1")
	testdb.WaitFor(t, time.Minute, "the first report written", func() bool {
		st, done := progressOf()
		return st == "processing" && done == 1
	})

	ctx := browser(t, "127.0.0.1")
	require.NoError(t, chromedp.Do(ctx,
		chromedp.Navigate(base+"/login"),
		chromedp.WaitVisible(chromedp.ID("token")),
		chromedp.SendKeys(chromedp.ID("token"), adminToken),
		chromedp.Submit(chromedp.ID("token"))))
	waitJS(t, ctx, `document.readyState == "complete" && location.pathname == "/"`, "the operator logs in")
	require.NoError(t, chromedp.Do(ctx, chromedp.Navigate(base+"/jobs/1")))
	// bar is true when the page shows the running job's report n of 3.
	bar := func(n int) string {
		return fmt.Sprintf(`(function () {
  var p = document.querySelector("#progress"), b = p && p.querySelector("progress");
  return document.readyState == "complete" && document.querySelector("#status").innerText == "processing" &&
    p.hasAttribute("data-refresh") && b != null && b.value == %d && b.max == 3 &&
    p.innerText.includes("%d of 3") && p.innerText.includes("batch %d");
})()`, n, n, n)
	}
	waitJS(t, ctx, bar(1), "the job's page shows the first report")

	// The test never navigates again: each later page is the page's own
	// reload (the navigation entry says so).
	const reloaded = `performance.getEntriesByType("navigation")[0].type == "reload"`
	step("step2")
	waitJS(t, ctx, bar(2)+" && "+reloaded, "the open page shows the second report by itself")
	step("step3")
	waitJS(t, ctx, bar(3)+" && "+reloaded, "the open page shows the third report by itself")

	step("end")
	waitJS(t, ctx, `(function () {
  var p = document.querySelector("#progress"), b = p && p.querySelector("progress");
  return document.readyState == "complete" && document.querySelector("#status").innerText == "success" &&
    p != null && !p.hasAttribute("data-refresh") && b != null && b.value == 3 && p.innerText.includes("3 of 3 · batch 3");
})() && `+reloaded, "the open page shows the job's end and its last report, by itself")
	st, done := progressOf()
	require.Equal(t, "success", st)
	require.EqualValues(t, 3, done)

	// Ended, the page no longer reloads: a mark set on it now survives
	// longer than the 2 s reload would allow.
	_, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`window.stillHere = true`))
	require.NoError(t, err)
	time.Sleep(5 * time.Second)
	still, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`window.stillHere === true`))
	require.NoError(t, err)
	require.True(t, still, "the finished job's page went on reloading")
}
