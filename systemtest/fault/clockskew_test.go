package fault

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/internal/testkit/testdb"
	"github.com/sluicehq/sluice/sluicetype"
)

// Clock skew: two `sluice work` processes whose own clocks run 5 minutes
// ahead and 5 minutes behind (SLUICE_CLOCK_OFFSET) share the queue and a
// schedule. The offset reaches every time read of their engines (the
// clock package's test keeps any other read out), and every lease,
// run-at, rescue and schedule decision uses the database clock, so no job
// runs early, twice or late, and each schedule slot fires once.
// A skew error makes a job early (caught to 50 ms) or as late as the
// offset, 5 minutes: the lateness bound, skewLate, is a minute, far from
// both the offset and what load alone does (a CI run at load 50 saw 10.5 s
// with a bound of 10). skewJobs is small enough to drain well within it.
const (
	skewJobs = 60
	skewLate = 60.0 // seconds
)

func TestClockSkew(t *testing.T) {
	for _, name := range []string{"mysql", "postgres"} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			d, tg := testdb.OpenURL(t, name)
			logPath := filepath.Join(t.TempDir(), "runs.log")
			// The job logs the host's time when it starts, which is the
			// database server's clock too: both run on this machine.
			cfg := dbConfig(t, tg.URL, fmt.Sprintf(`queues:
  default: { concurrency: 8 }
types:
  stamp: { command: ["sh", "-c", "echo \"$SLUICE_JOB_ID $(date +%%s.%%N)\" >> %s"] }
  tick: { command: ["true"] }
schedules:
  tick: { cron: "@every 1s", type: tick, overlap: allow }
`, logPath))
			c, err := sluice.NewClient(sluice.Config{Driver: d})
			require.NoError(t, err)
			ps := make([]sluice.EnqueueParams, skewJobs)
			for i := range ps {
				ps[i] = sluice.EnqueueParams{Type: "stamp"}
				if i%2 == 1 {
					ps[i].Delay = 3 * time.Second // due by the database clock
				}
			}
			_, err = c.EnqueueMany(context.Background(), ps)
			require.NoError(t, err)

			env := []string{"SLUICE_PREFIX=" + tg.Prefix}
			launched, err := d.Now(context.Background())
			require.NoError(t, err)
			ahead := startWork(t, append(env, "SLUICE_CLOCK_OFFSET=5m"), "--config", cfg)
			behind := startWork(t, append(env, "SLUICE_CLOCK_OFFSET=-5m"), "--config", cfg)
			testdb.WaitFor(t, 90*time.Second, "every stamp job done", func() bool {
				jobs, err := d.ListJobs(context.Background(), sluicetype.ListParams{Type: "stamp", Status: sluicetype.StatusPending, Limit: 1})
				return err == nil && len(jobs) == 0 && allDone(d)
			})
			time.Sleep(2 * time.Second) // a few more schedule slots
			// The skew did reach the engines: each node row's start time
			// was read from its process's clock.
			nodes, err := d.ListNodes(context.Background())
			require.NoError(t, err)
			var skews []time.Duration
			for _, n := range nodes {
				skews = append(skews, n.StartedAt.Sub(launched).Round(time.Minute))
			}
			sort.Slice(skews, func(i, j int) bool { return skews[i] < skews[j] })
			require.Equal(t, []time.Duration{-5 * time.Minute, 5 * time.Minute}, skews)
			for _, p := range []*proc{ahead, behind} {
				_, err := p.term(t, 15*time.Second)
				require.NoError(t, err)
			}

			started := map[int64]float64{}
			f, err := os.Open(logPath)
			require.NoError(t, err)
			sc := bufio.NewScanner(f)
			for sc.Scan() {
				id, ts, ok := strings.Cut(sc.Text(), " ")
				require.True(t, ok, sc.Text())
				n, err := strconv.ParseInt(id, 10, 64)
				require.NoError(t, err)
				at, err := strconv.ParseFloat(ts, 64)
				require.NoError(t, err)
				_, twice := started[n]
				require.False(t, twice, "job %d ran twice", n)
				started[n] = at
			}
			f.Close()
			by := testdb.JobsByStatus(t, d, sluicetype.ListParams{})
			stamps := 0
			for _, j := range by[sluicetype.StatusSuccess] {
				if j.Type != "stamp" {
					continue
				}
				stamps++
				at, ok := started[j.ID]
				require.True(t, ok, "job %d succeeded without running", j.ID)
				due := float64(j.NextRunAt.UnixNano()) / 1e9
				require.GreaterOrEqual(t, at, due-0.05, "job %d ran %.3f s before it was due", j.ID, due-at)
				require.Less(t, at-due, skewLate, "job %d ran %.1f s late", j.ID, at-due)
			}
			require.Equal(t, skewJobs, stamps)

			var slots []string
			for _, j := range by[sluicetype.StatusSuccess] {
				if j.Type == "tick" {
					slots = append(slots, j.Key)
				}
			}
			sort.Strings(slots)
			require.GreaterOrEqual(t, len(slots), 3)
			for i := 1; i < len(slots); i++ {
				a, err := time.Parse("2006-01-02T15:04:05Z", strings.TrimPrefix(slots[i-1], "sched:tick:"))
				require.NoError(t, err)
				b, err := time.Parse("2006-01-02T15:04:05Z", strings.TrimPrefix(slots[i], "sched:tick:"))
				require.NoError(t, err)
				require.Equal(t, time.Second, b.Sub(a), "slots %s and %s", slots[i-1], slots[i])
			}
		})
	}
}
