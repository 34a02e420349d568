package cli_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/driver"
	"github.com/sluicehq/sluice/internal/testkit/proctest"
	"github.com/sluicehq/sluice/internal/testkit/testdb"
	"github.com/sluicehq/sluice/sluicetype"
)

// Three `sluice work` nodes run the same @every 1s schedule with no leader:
// every slot ran exactly once by the execution log, with no gap after the
// first.
func TestScheduleAcrossThreeNodes(t *testing.T) {
	t.Parallel()
	d, tg := testdb.OpenURL(t, "mysql")
	cfg, logPath := writeConfig(t, dbConfig(tg, `schedules:
  tick: { cron: "@every 1s", type: append, overlap: allow }
`))
	env := []string{"SLUICE_PREFIX=" + tg.Prefix}
	var nodes []*proctest.Proc
	for i := 0; i < 3; i++ {
		nodes = append(nodes, startWorker(t, env, "work", "--config", cfg))
	}
	time.Sleep(10 * time.Second)
	for _, n := range nodes {
		require.NoError(t, n.Term(t, 2*time.Minute))
	}

	jobs, err := d.ListJobs(context.Background(), sluicetype.ListParams{Type: "append", Limit: 1000})
	require.NoError(t, err)
	b, err := os.ReadFile(logPath)
	require.NoError(t, err)
	runs := map[string]int{} // job ID -> runs
	for _, id := range strings.Fields(string(b)) {
		runs[id]++
	}
	var slots []time.Time
	for _, j := range jobs {
		want := 1
		if j.Status == sluicetype.StatusPending {
			want = 0 // a slot enqueued as the nodes stopped
		}
		n := runs[strconv.FormatInt(j.ID, 10)]
		require.Equal(t, want, n, "slot %s (job %d, %s) ran %d times", j.Key, j.ID, j.Status, n)
		ts, ok := strings.CutPrefix(j.Key, "sched:tick:")
		require.True(t, ok, j.Key)
		at, err := time.Parse("2006-01-02T15:04:05Z", ts)
		require.NoError(t, err)
		slots = append(slots, at)
	}
	sort.Slice(slots, func(i, k int) bool { return slots[i].Before(slots[k]) })
	require.GreaterOrEqual(t, len(slots), 7, "about one slot a second for 10 s")
	for i := 1; i < len(slots); i++ {
		require.Equal(t, time.Second, slots[i].Sub(slots[i-1]), "gap or duplicate between %s and %s", slots[i-1], slots[i])
	}
	st, err := d.ScheduleState(context.Background(), driver.ScheduleStateParams{Name: "tick"})
	require.NoError(t, err)
	if st.Fires != int64(len(slots)) {
		// Which node counted which slot: each logs the slots whose job
		// its own insert created.
		var fired []string
		for i, n := range nodes {
			for _, l := range strings.Split(n.Stderr(), "\n") {
				if strings.Contains(l, "schedule fired") || strings.Contains(l, "advance schedule") {
					fired = append(fired, fmt.Sprintf("node %d: %s", i, l))
				}
			}
		}
		t.Fatalf("fires counted %d for %d slot jobs; the nodes' lines:\n%s", st.Fires, len(slots), strings.Join(fired, "\n"))
	}
}

func TestSchedulesList(t *testing.T) {
	t.Parallel()
	_, tg := testdb.OpenURL(t, "sqlite")
	cfg, _ := writeConfig(t, dbConfig(tg, `schedules:
  nightly: { cron: "30 2 * * *", timezone: "Asia/Shanghai", type: append }
  tick: { cron: "@every 1m", type: append, overlap: allow }
`))
	env := []string{"SLUICE_PREFIX=" + tg.Prefix}
	r := run(t, env, "", "schedules", "list", "--config", cfg, "--json", "--next", "2")
	require.Equal(t, 0, r.Code, r.Stderr)
	lines := strings.Split(strings.TrimSpace(r.Stdout), "\n")
	require.Len(t, lines, 2)
	var nightly struct {
		Name     string      `json:"name"`
		Timezone string      `json:"timezone"`
		Overlap  string      `json:"overlap"`
		Next     []time.Time `json:"next"`
	}
	require.NoError(t, json.Unmarshal([]byte(lines[0]), &nightly))
	require.Equal(t, "nightly", nightly.Name)
	require.Equal(t, "Asia/Shanghai", nightly.Timezone)
	require.Equal(t, "forbid", nightly.Overlap, "the config's default")
	require.Len(t, nightly.Next, 2)
	for _, n := range nightly.Next {
		require.Equal(t, 18, n.UTC().Hour(), "02:30 in Shanghai is 18:30 UTC")
		require.Equal(t, 30, n.Minute())
	}
	require.Equal(t, 24*time.Hour, nightly.Next[1].Sub(nightly.Next[0]))
	r = run(t, env, "", "schedules", "list", "--config", cfg)
	require.Equal(t, 0, r.Code, r.Stderr)
	require.Contains(t, r.Stdout, "NEXT RUNS (UTC)")
}
