package server_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/driver"
	"github.com/sluicehq/sluice/internal/testkit/testdb"
	"github.com/sluicehq/sluice/sluicetype"
)

const chromiumPath = "/usr/bin/chromium"

// screenshotDir is where CI keeps the dashboard screenshots
// (docs/observability.md "Dashboard": "ci-artifacts/screenshots/"); it is
// git-ignored.
func screenshotDir(t *testing.T) string {
	_, file, _, _ := runtime.Caller(0)
	dir := filepath.Join(filepath.Dir(file), "..", "ci-artifacts", "screenshots")
	require.NoError(t, os.MkdirAll(dir, 0o755))
	return dir
}

// TestDashboardInBrowser drives headless Chromium: log in, watch the
// overview update on its own when a job finishes (no reload), retry a
// failed job from the Failed page, cancel a filtered set of jobs through
// the bulk confirmation, and save screenshots of the overview and a job.
func TestDashboardInBrowser(t *testing.T) {
	if _, err := os.Stat(chromiumPath); err != nil {
		msg := fmt.Sprintf("chromium not found at %s: %v (install Debian's chromium package; .ci/run does)", chromiumPath, err)
		if testdb.RequireAll() {
			t.Fatal(msg)
		}
		fmt.Fprintf(os.Stderr, "\n!!! SKIPPING THE BROWSER TEST: %s\n", msg)
		t.Skip(msg)
	}
	d := testdb.Open(t, "sqlite")
	c, base := dashServer(t, d, "nightly")
	ctx := context.Background()
	var mail []int64
	for i := range 3 {
		r, err := c.Enqueue(ctx, sluice.EnqueueParams{Type: "mail", Queue: "mail", Key: fmt.Sprintf("mail:%d", i), Payload: map[string]string{"to": "a@example.com"}})
		require.NoError(t, err)
		mail = append(mail, r.ID)
	}
	r, err := c.Enqueue(ctx, sluice.EnqueueParams{Type: "report", Key: "weekly", MaxAttempts: 1, Payload: map[string]any{"week": 12, "tags": []string{"x", "y"}}})
	require.NoError(t, err)
	failJob(t, d, r.ID, "report: upstream timed out after 30s")
	// A job held by a worker in queue "live": the page must show it
	// processing, then done, without a reload.
	running, err := c.Enqueue(ctx, sluice.EnqueueParams{Type: "invoice", Queue: "live", Payload: map[string]any{"customer": map[string]any{"id": 42, "name": "Ada"}, "lines": []int{3, 5}}})
	require.NoError(t, err)
	claimed, err := d.Claim(ctx, driver.ClaimParams{Queue: "live", Limit: 1, Lease: time.Minute, Token: "tok"})
	require.NoError(t, err)
	require.Len(t, claimed, 1)
	now := time.Now()
	var rows []sluicetype.StatRow
	for m := range 60 {
		b := now.Add(-time.Duration(m) * time.Minute).Truncate(time.Minute)
		rows = append(rows, sluicetype.StatRow{Queue: "mail", Type: "mail", Outcome: "success", Bucket: b, Count: int64(20 + (m*7)%15)},
			sluicetype.StatRow{Queue: "default", Type: "report", Outcome: "success", Bucket: b, Count: int64(5 + m%4)})
		if m%9 == 2 {
			rows = append(rows, sluicetype.StatRow{Queue: "mail", Type: "mail", Outcome: "retry", Bucket: b, Count: int64(3 + m%5)})
		}
	}
	for h := 1; h < 24; h++ {
		b := now.Add(-time.Duration(h) * time.Hour).Truncate(time.Hour)
		rows = append(rows, sluicetype.StatRow{Queue: "mail", Type: "mail", Outcome: "success", Bucket: b, Count: int64(900 + (h*131)%400)},
			sluicetype.StatRow{Queue: "mail", Type: "mail", Outcome: "failed", Bucket: b, Count: int64((h * 37) % 90)})
	}
	require.NoError(t, d.AddStats(ctx, driver.AddStatsParams{Rows: rows}))

	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(chromiumPath),
		chromedp.Flag("headless", true),
		chromedp.Flag("no-sandbox", true),
		chromedp.Flag("disable-gpu", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("no-first-run", true),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1280, 900),
		// A zone away from UTC, to see times shown in the viewer's zone.
		chromedp.Env("TZ=Asia/Tokyo"),
	}
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	defer cancelAlloc()
	bctx, cancelBrowser := chromedp.NewContext(actx)
	defer cancelBrowser()
	bctx, cancelTimeout := context.WithTimeout(bctx, 90*time.Second)
	defer cancelTimeout()

	dir := screenshotDir(t)
	liveCell := `document.querySelector('#queues tr[data-queue="live"] [data-f="processing"]').textContent`
	require.NoError(t, chromedp.Do(bctx,
		chromedp.Navigate(base+"/"),
		chromedp.WaitVisible(chromedp.ID("token")),
		chromedp.SendKeys(chromedp.ID("token"), token),
		chromedp.Click(chromedp.ID("login")),
		// The script drew the charts: hover targets exist.
		chromedp.WaitReady(chromedp.CSS(`#chart-hour rect.hit`)),
		chromedp.WaitReady(chromedp.CSS(`#rate-day polyline.rate`)),
	))
	title, err := chromedp.Run(bctx, chromedp.Title())
	require.NoError(t, err)
	require.True(t, strings.HasPrefix(title, "Overview"), "title %q", title)
	before, err := chromedp.Run(bctx, chromedp.Evaluate[string](liveCell))
	require.NoError(t, err)
	require.Equal(t, "1", before, "the claimed job shows as processing")
	axis, err := chromedp.Run(bctx, chromedp.Evaluate[[]string](`Array.from(document.querySelectorAll('#chart-hour text.axis-title')).map(e => e.textContent)`))
	require.NoError(t, err)
	require.Len(t, axis, 2)
	require.Equal(t, "time (Asia/Tokyo)", axis[0], "the x axis is in the viewer's time zone")
	require.Equal(t, "attempts per minute", axis[1])

	// Mark the page, finish the job, and wait for the page to change.
	_, err = chromedp.Run(bctx, chromedp.Evaluate[bool](`window.notReloaded = true`))
	require.NoError(t, err)
	res := `{"sent": 2, "ids": [7, 9]}`
	lost, err := d.Complete(ctx, driver.CompleteParams{Completions: []driver.Completion{{ID: running.ID, Token: "tok", Status: sluicetype.StatusSuccess, Result: &res}}})
	require.NoError(t, err)
	require.Empty(t, lost)
	// As a worker would, count the attempt in the roll-ups.
	require.NoError(t, d.AddStats(ctx, driver.AddStatsParams{Rows: []sluicetype.StatRow{{Queue: "live", Type: "invoice", Outcome: "success", Bucket: time.Now().Truncate(time.Minute), Count: 1}}}))
	// The row shows processing 0 and the attempt done within a tick of the
	// roll-ups (the live counts come first, the roll-ups within 10 s).
	doneCell := `document.querySelector('#queues tr[data-queue="live"] td:nth-child(6)')`
	_, err = chromedp.Run(bctx, chromedp.Poll[bool](`(function(){var p=`+strings.Replace(liveCell, ".textContent", "", 1)+`, d=`+doneCell+`;
		return p !== null && p.textContent === "0" && d !== null && d.textContent === "1"})()`, chromedp.WithPollingTimeout(20*time.Second)))
	require.NoError(t, err, "the page did not show the job finishing")
	notReloaded, err := chromedp.Run(bctx, chromedp.Evaluate[bool](`window.notReloaded === true`))
	require.NoError(t, err)
	require.True(t, notReloaded, "the page changed without a reload")
	// Hovering a bar shows its values.
	tipText, err := chromedp.Run(bctx, chromedp.Evaluate[string](`(function(){var h=document.querySelector('#chart-hour rect.hit[data-i="59"]'), r=h.getBoundingClientRect();
			h.dispatchEvent(new MouseEvent('mousemove', {bubbles: true, clientX: r.x + 2, clientY: r.y + 20}));
			return document.getElementById('tip').textContent})()`))
	require.NoError(t, err)
	require.Regexp(t, `^\d\d:\d\d–\d\d:\d\d: \d+ done, \d+ failed$`, tipText)
	overview, err := chromedp.Run(bctx, chromedp.FullScreenshot(90))
	require.NoError(t, err)

	// Retry a failed group.
	require.NoError(t, chromedp.Do(bctx,
		chromedp.Navigate(base+"/failed"),
		chromedp.WaitVisible(chromedp.CSS("button.retry-group")),
		chromedp.Click(chromedp.CSS("button.retry-group")),
		chromedp.WaitVisible(chromedp.CSS(".flash")),
		chromedp.Navigate(base+"/jobs/"+strconv.FormatInt(r.ID, 10)),
		chromedp.WaitVisible(chromedp.ID("status")),
	))
	status, err := chromedp.Run(bctx, chromedp.Text(chromedp.ID("status")))
	require.NoError(t, err)
	retried, err := chromedp.Run(bctx, chromedp.FullScreenshot(90))
	require.NoError(t, err)
	// The retry kept the session: the job's own page, not the login form.
	jobTitle, err := chromedp.Run(bctx, chromedp.Title())
	require.NoError(t, err)
	require.Equal(t, fmt.Sprintf("Job %d · sluice", r.ID), jobTitle)
	require.Equal(t, string(sluicetype.StatusPending), strings.TrimSpace(status), "the page shows the retried job as pending")
	requireStatus(t, c, r.ID, sluicetype.StatusPending)

	// Bulk cancel: filter by key prefix, confirm the count, apply.
	require.NoError(t, chromedp.Do(bctx,
		chromedp.Navigate(base+"/jobs?key=mail%3A"),
		chromedp.WaitVisible(chromedp.CSS("a.bulk-cancel")),
		chromedp.Click(chromedp.CSS("a.bulk-cancel")),
		chromedp.WaitVisible(chromedp.ID("bulk-count")),
	))
	count, err := chromedp.Run(bctx, chromedp.Text(chromedp.ID("bulk-count")))
	require.NoError(t, err)
	require.Contains(t, count, "cancel 3 jobs")
	require.NoError(t, chromedp.Do(bctx,
		chromedp.Click(chromedp.ID("bulk-confirm")),
		chromedp.WaitVisible(chromedp.CSS(".flash")),
	))
	flash, err := chromedp.Run(bctx, chromedp.Text(chromedp.CSS(".flash")))
	require.NoError(t, err)
	require.Equal(t, "3 jobs cancelled.", flash)
	for _, id := range mail {
		requireStatus(t, c, id, sluicetype.StatusCancelled)
	}

	// The finished job's page: payload and result pretty-printed, times local.
	require.NoError(t, chromedp.Do(bctx,
		chromedp.Navigate(base+"/jobs/"+strconv.FormatInt(running.ID, 10)),
		chromedp.WaitVisible(chromedp.ID("result")),
	))
	result, err := chromedp.Run(bctx, chromedp.Text(chromedp.ID("result")))
	require.NoError(t, err)
	require.Contains(t, result, "\"sent\": 2,\n")
	created, err := chromedp.Run(bctx, chromedp.Evaluate[[]string](`(function(){var t=document.querySelector('time'); return [t.getAttribute('datetime'), t.textContent]})()`))
	require.NoError(t, err)
	at, err := time.Parse(time.RFC3339Nano, created[0])
	require.NoError(t, err)
	tokyo := time.FixedZone("JST", 9*3600)
	require.Equal(t, at.In(tokyo).Format("2006-01-02 15:04:05"), created[1], "times are shown in the viewer's zone")
	detail, err := chromedp.Run(bctx, chromedp.FullScreenshot(90))
	require.NoError(t, err)

	// Dark mode follows the browser's preference.
	bg := `getComputedStyle(document.body).backgroundColor`
	light, err := chromedp.Run(bctx, chromedp.Evaluate[string](bg))
	require.NoError(t, err)
	_, err = chromedp.Call(bctx, emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{
		Features: []*emulation.MediaFeature{{Name: "prefers-color-scheme", Value: "dark"}}})
	require.NoError(t, err)
	dark, err := chromedp.Run(bctx, chromedp.Evaluate[string](bg))
	require.NoError(t, err)
	require.Equal(t, "rgb(246, 247, 249)", light)
	require.Equal(t, "rgb(18, 23, 29)", dark)
	darkShot, err := chromedp.Run(bctx, chromedp.FullScreenshot(90))
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "job-detail-dark.jpg"), darkShot, 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "overview.jpg"), overview, 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "job-detail.jpg"), detail, 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "job-attempts.jpg"), retried, 0o644))
}
