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

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/driver"
	"github.com/sluicehq/sluice/internal/testdb"
)

const chromiumPath = "/usr/bin/chromium"

// screenshotDir is where CI keeps the dashboard screenshots (README:
// "ci-artifacts/screenshots/"); it is git-ignored.
func screenshotDir(t *testing.T) string {
	_, file, _, _ := runtime.Caller(0)
	dir := filepath.Join(filepath.Dir(file), "..", "ci-artifacts", "screenshots")
	require.NoError(t, os.MkdirAll(dir, 0o755))
	return dir
}

// TestDashboardInBrowser drives headless Chromium: log in, open the
// overview, retry a failed job from the Failed page and check that it is
// pending again, saving screenshots of the overview and the job detail.
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
	for range 3 {
		_, err := c.Enqueue(ctx, sluice.EnqueueParams{Type: "mail", Payload: map[string]string{"to": "a@example.com"}})
		require.NoError(t, err)
	}
	r, err := c.Enqueue(ctx, sluice.EnqueueParams{Type: "report", Key: "weekly", MaxAttempts: 1, Payload: map[string]any{"week": 12, "tags": []string{"x", "y"}}})
	require.NoError(t, err)
	failJob(t, d, r.ID, "report: upstream timed out after 30s")
	require.NoError(t, d.AddStats(ctx, driver.AddStatsParams{Rows: []driver.StatRow{
		{Queue: "default", Type: "mail", Outcome: "success", Bucket: time.Now().Add(-3 * time.Minute).Truncate(time.Minute), Count: 40},
		{Queue: "default", Type: "mail", Outcome: "failed", Bucket: time.Now().Add(-3 * time.Minute).Truncate(time.Minute), Count: 4},
		{Queue: "default", Type: "mail", Outcome: "success", Bucket: time.Now().Add(-2 * time.Hour).Truncate(time.Hour), Count: 400},
	}}))

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
	}
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	defer cancelAlloc()
	bctx, cancelBrowser := chromedp.NewContext(actx)
	defer cancelBrowser()
	bctx, cancelTimeout := context.WithTimeout(bctx, 60*time.Second)
	defer cancelTimeout()

	dir := screenshotDir(t)
	require.NoError(t, chromedp.Do(bctx,
		chromedp.Navigate(base+"/"),
		chromedp.WaitVisible(chromedp.ID("token")),
		chromedp.SendKeys(chromedp.ID("token"), token),
		chromedp.Click(chromedp.ID("login")),
		chromedp.WaitVisible(chromedp.CSS("svg")),
	))
	title, err := chromedp.Run(bctx, chromedp.Title())
	require.NoError(t, err)
	overview, err := chromedp.Run(bctx, chromedp.FullScreenshot(90))
	require.NoError(t, err)
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
	detail, err := chromedp.Run(bctx, chromedp.FullScreenshot(90))
	require.NoError(t, err)
	require.True(t, strings.HasPrefix(title, "Overview"), "title %q", title)
	require.Equal(t, string(driver.StatusPending), strings.TrimSpace(status), "the page shows the retried job as pending")
	requireStatus(t, c, r.ID, driver.StatusPending)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "overview.jpg"), overview, 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "job-detail.jpg"), detail, 0o644))
}
