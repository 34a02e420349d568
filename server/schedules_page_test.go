package server_test

import (
	"context"
	"fmt"
	"net/http"
	"regexp"
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

// utc is how the dashboard writes an instant.
func utc(t time.Time) string { return t.UTC().Format("2006-01-02 15:04:05 UTC") }

// The Schedules page names each schedule's time zone, shows its next run
// as an instant as well as how far away, continues an @every series from
// its last slot, and shows no last slot for a schedule that never fired
// (its row holds only the time it started from).
func TestDashboardSchedulesPage(t *testing.T) {
	testdb.ForEach(t, func(t *testing.T, name string) {
		d := testdb.Open(t, name)
		ctx := context.Background()
		paris, err := time.LoadLocation("Europe/Paris")
		require.NoError(t, err)
		every, err := cron.Parse("@every 1h", paris)
		require.NoError(t, err)
		nightly, err := cron.Parse("0 3 * * *", paris)
		require.NoError(t, err)
		c, err := sluice.NewClient(sluice.Config{Driver: d, Schedules: []sluice.Schedule{
			{Name: "hourly", Spec: every, Type: "report"}, {Name: "nightly", Spec: nightly, Type: "report"}}})
		require.NoError(t, err)
		h, err := server.New(server.Config{Client: c, Tokens: []string{token}})
		require.NoError(t, err)
		u := newBrowser(t, newTestServer(t, h))
		require.Equal(t, http.StatusSeeOther, u.login(token))

		// As the scheduler starts them: from a time, with no slot yet.
		now, err := d.Now(ctx)
		require.NoError(t, err)
		started := now.Add(-20 * time.Minute).Truncate(time.Second)
		for _, s := range []string{"hourly", "nightly"} {
			require.NoError(t, d.InitSchedule(ctx, driver.InitScheduleParams{Name: s, Last: started}))
		}
		code, body, _ := u.get("/schedules")
		require.Equal(t, http.StatusOK, code, body)
		row := func(name string) string {
			m := regexp.MustCompile(`(?s)<tr><td>` + name + `.*?</tr>`).FindString(body)
			require.NotEmpty(t, m, "no row for %s in %s", name, body)
			return m
		}
		hourly, night := row("hourly"), row("nightly")
		require.Contains(t, hourly, "<td>Europe/Paris</td>", "the time zone is shown")
		require.Contains(t, hourly, utc(started.Add(time.Hour)), "the @every series goes on from where it started, shown as an instant")
		require.Regexp(t, `\(in (39m5\ds|40m0s)\)`, hourly, "and how far away")
		require.NotContains(t, hourly, utc(started), "no last slot: the start time is no slot")
		require.Contains(t, night, utc(nightly.Next(now).At))

		// A fired slot is the last slot.
		st, err := d.ScheduleState(ctx, driver.ScheduleStateParams{Name: "hourly"})
		require.NoError(t, err)
		slot := started.Add(time.Hour)
		ok, err := d.AdvanceSchedule(ctx, driver.AdvanceScheduleParams{Name: "hourly", Version: st.Version, LastSlot: slot, LastJobID: 7, Fired: 1})
		require.NoError(t, err)
		require.True(t, ok)
		_, body, _ = u.get("/schedules")
		hourly = row("hourly")
		require.Contains(t, hourly, fmt.Sprintf(`<time datetime="%s">%s</time>`, slot.UTC().Format(time.RFC3339Nano), utc(slot)))
		require.Contains(t, hourly, utc(slot.Add(time.Hour)), "next run")
	})
}

// The jobs list and a job's page show no next run for a finished job (the
// list shows when it finished), and the error an attempt before a success
// left is not shown as the job's error.
func TestDashboardFinishedJobs(t *testing.T) {
	testdb.ForEach(t, func(t *testing.T, name string) {
		d := testdb.Open(t, name)
		ctx := context.Background()
		c, base := dashServer(t, d, "nightly")
		u := newBrowser(t, base)
		require.Equal(t, http.StatusSeeOther, u.login(token))
		j, err := c.Enqueue(ctx, sluice.EnqueueParams{Type: "mail", Key: "order-1"})
		require.NoError(t, err)
		// A first attempt fails and is retried; the second succeeds.
		const first = "smtp: 421 try again later"
		for i, st := range []sluicetype.Status{sluicetype.StatusPending, sluicetype.StatusSuccess} {
			rows := testdb.Claim(t, ctx, d, driver.ClaimParams{Queue: "default", Limit: 1, Lease: time.Minute, Token: "tok"})
			require.Len(t, rows, 1, "attempt %d", i+1)
			comp := driver.Completion{ID: j.ID, Token: "tok", Status: st}
			if st == sluicetype.StatusPending {
				msg := first
				comp.Error = &msg
			}
			lost, err := d.Complete(ctx, driver.CompleteParams{Completions: []driver.Completion{comp}})
			require.NoError(t, err)
			require.Empty(t, lost)
			// So that the finish is apart from the retry's next run, at
			// SQLite's millisecond precision too.
			time.Sleep(20 * time.Millisecond)
		}
		row, err := d.GetJob(ctx, j.ID)
		require.NoError(t, err)
		require.Equal(t, sluicetype.StatusSuccess, row.Status)
		require.Equal(t, first, row.LastError, "the database keeps the earlier attempt's error")
		require.NotNil(t, row.FinishedAt)

		_, body, _ := u.get("/jobs")
		tr := regexp.MustCompile(`(?s)<tr><td><a href="/jobs/` + fmt.Sprint(j.ID) + `">.*?</tr>`).FindString(body)
		require.NotEmpty(t, tr, body)
		require.NotContains(t, tr, `class="err"`, "no red error on a job that succeeded")
		require.Contains(t, tr, "earlier attempt: "+first)
		require.False(t, row.FinishedAt.Equal(row.NextRunAt))
		require.Contains(t, tr, `<time datetime="`+row.FinishedAt.UTC().Format(time.RFC3339Nano)+`"`, "a finished job shows when it finished")
		require.NotContains(t, tr, `<time datetime="`+row.NextRunAt.UTC().Format(time.RFC3339Nano)+`"`, "and no next run")
		require.Contains(t, body, "<th>Next run / finished</th>")

		_, body, _ = u.get(fmt.Sprintf("/jobs/%d", j.ID))
		require.NotContains(t, body, "<dt>Next run</dt>")
		require.NotContains(t, body, `<h2>Last error</h2>`)
		require.Contains(t, body, "<h2>Error of an earlier attempt</h2>")

		// A live job keeps its next run.
		p, err := c.Enqueue(ctx, sluice.EnqueueParams{Type: "mail", Key: "order-2"})
		require.NoError(t, err)
		_, body, _ = u.get(fmt.Sprintf("/jobs/%d", p.ID))
		require.Contains(t, body, "<dt>Next run</dt>")
	})
}
