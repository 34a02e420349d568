package fault

import (
	"context"
	"fmt"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/internal/testkit/proctest"
	"github.com/sluicehq/sluice/internal/testkit/testdb"
	"github.com/sluicehq/sluice/sluicetype"
)

// TestClaimReplyLost puts a proxy between `sluice work` and the database
// that lets two claims commit and then cuts their connection before the
// reply arrives. The worker cannot know whether those claims took jobs; it
// must hand back whatever they took as soon as the database answers, so
// the jobs run within seconds instead of after their 5-minute lease, and
// uncharged: each job allows a single attempt, which a charged hand-back
// would spend without the job having run.
func TestClaimReplyLost(t *testing.T) {
	// The claim's update is recognised by its SQL; the reply to lose is the
	// one that says it committed: PostgreSQL's single autocommitted UPDATE
	// answers with the "UPDATE n" tag, MySQL's claim transaction with the
	// OK of its COMMIT.
	rules := map[string]cutRule{
		"postgres": {arm: []byte("attempts = attempts + 1"), fireServer: []byte("UPDATE ")},
		"mysql":    {arm: []byte("attempts = attempts + 1"), fireClient: []byte("COMMIT")},
	}
	for _, name := range []string{"postgres", "mysql"} {
		t.Run(name, func(t *testing.T) {
			const jobs, cuts = 40, 2
			d, tg := testdb.OpenURL(t, name)
			u, err := url.Parse(tg.URL)
			require.NoError(t, err)
			proxy := startReplyCutter(t, u.Host, rules[name], cuts)
			u.Host = proxy.addr()
			if name == "postgres" {
				// The proxy reads the protocol, so it must be in clear.
				q := u.Query()
				q.Set("sslmode", "disable")
				u.RawQuery = q.Encode()
			}
			env := []string{"SLUICE_PREFIX=" + tg.Prefix}

			c, err := sluice.NewClient(sluice.Config{Driver: d})
			require.NoError(t, err)
			ps := make([]sluice.EnqueueParams, jobs)
			for i := range ps {
				ps[i] = sluice.EnqueueParams{Type: "work", Key: fmt.Sprintf("work-%d", i), MaxAttempts: 1}
			}
			_, err = c.EnqueueMany(context.Background(), ps)
			require.NoError(t, err)

			// The default lease (5m): a claim left to expire would hold its
			// jobs far beyond this test's patience.
			cfg, logPath := writeConfig(t, u.String(), 4, "0.01", "", "")
			start := time.Now()
			w := startWork(t, env, "--config", cfg, "--shutdown-timeout", "5s")
			testdb.WaitFor(t, 30*time.Second, "every job finished", func() bool { return allDone(d) })
			took := time.Since(start)
			_, err = w.term(t, 15*time.Second)
			require.NoError(t, err)

			require.EqualValues(t, cuts, proxy.cuts.Load(), "the proxy cut claim replies")
			require.Contains(t, w.Stderr(), "a failed claim had committed", "a cut claim had taken jobs and the worker handed them back")
			dups := proctest.CheckAllSucceeded(t, d, proctest.ReadExecLog[int64](t, logPath, true), jobs)
			require.Empty(t, dups, "a job whose claim reply was lost never reached a handler, so nothing runs twice")
			for _, j := range testdb.JobsByStatus(t, d, sluicetype.ListParams{})[sluicetype.StatusSuccess] {
				require.Equal(t, 1, j.Attempts, "job %d: attempts charged for claims it never ran under", j.ID)
			}
			t.Logf("%d jobs done %s after start, through %d lost claim replies; worker log:\n%s", jobs, took.Round(time.Millisecond),
				cuts, grepLines(w.Stderr(), "claim"))
		})
	}
}

// grepLines returns the lines of s that contain sub.
func grepLines(s, sub string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
