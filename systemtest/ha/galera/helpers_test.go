package galera

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/dburl"
	"github.com/sluicehq/sluice/driver"
	"github.com/sluicehq/sluice/internal/testkit/proctest"
	"github.com/sluicehq/sluice/internal/testkit/testdb"
	"github.com/sluicehq/sluice/sluicetype"
)

// target is one test's tables on the cluster: a fresh prefix, migrated
// once through node 1, and a driver on each node.
type target struct {
	prefix string
	env    []string        // gives a sluice process the prefix
	drv    []driver.Driver // drv[i] talks to node i+1
}

func newTarget(t *testing.T, c *cluster) *target {
	t.Helper()
	tg := &target{prefix: testdb.Prefix()}
	tg.env = []string{"SLUICE_PREFIX=" + tg.prefix}
	// Every node a full member first: a loaded machine can leave one
	// outside the primary component for a while after the group formed
	// or a node rejoined ("WSREP has not yet prepared node").
	for _, nd := range c.nodes {
		require.NoError(t, c.waitSynced(nd, 2*time.Minute))
	}
	r := proctest.Run(t, bin, tg.env, "migrate", "--config", proctest.Config(t, c.nodes[0].URL(), ""))
	require.Equal(t, 0, r.Code, r.Stderr)
	for _, nd := range c.nodes {
		d, err := dburl.Open(nd.URL(), dburl.Options{Prefix: tg.prefix})
		require.NoError(t, err)
		tg.drv = append(tg.drv, d)
	}
	// A node applies replicated writes after the commit on node 1 returns:
	// a process started on another node at once can find the schema a
	// version behind.
	for i, d := range tg.drv {
		testdb.WaitFor(t, 10*time.Second, fmt.Sprintf("node %d applied the migrations", i+1), func() bool {
			cur, latest, err := d.SchemaVersion(context.Background())
			return err == nil && cur == latest
		})
	}
	t.Cleanup(func() {
		testdb.Drop(tg.drv[0], tg.prefix)
		for _, d := range tg.drv {
			d.Close()
		}
	})
	return tg
}

func startWork(t *testing.T, env []string, args ...string) *proctest.Proc {
	t.Helper()
	return proctest.Start(t, bin, "sluice work", env, append([]string{"work"}, args...)...)
}

// workConfig writes a config on the database at url with a "work" command
// type built by proctest.LogScript, logging to logPath.
func workConfig(t *testing.T, url, logPath string, concurrency int, lease time.Duration, extra string) string {
	t.Helper()
	return proctest.WorkConfig(t, url, concurrency, proctest.LogScript(logPath, "SLUICE_JOB_ID", "0.01"), fmt.Sprintf("    lease: %s", lease), extra)
}

// hasPending reports whether the node answers and holds a pending job of
// type typ.
func hasPending(d driver.Driver, typ string) bool {
	ctx, cancel := ctxT(5 * time.Second)
	defer cancel()
	rows, err := d.ListJobs(ctx, sluicetype.ListParams{Status: sluicetype.StatusPending, Type: typ, Limit: 1})
	return err == nil && len(rows) == 1
}

// allDone reports whether no job of type typ is pending or processing.
// Errors count as not done: the node may be down at that moment.
func allDone(d driver.Driver, typ string) bool {
	ctx, cancel := ctxT(5 * time.Second)
	defer cancel()
	for _, st := range []sluicetype.Status{sluicetype.StatusPending, sluicetype.StatusProcessing} {
		rows, err := d.ListJobs(ctx, sluicetype.ListParams{Status: st, Type: typ, Limit: 1})
		if err != nil || len(rows) > 0 {
			return false
		}
	}
	return true
}

// figures is one scenario's row of the report's table.
type figures struct {
	topology, fault   string
	jobs, dups, bound int
	lost, ackLost     int
	recovery          time.Duration
}

// report logs a scenario's figures in the shape of the table of
// docs/scale.md "MariaDB Galera (3 nodes, multi-primary)".
func report(t *testing.T, f figures) {
	rec := "-"
	if f.recovery > 0 {
		rec = f.recovery.Round(time.Millisecond).String()
	}
	t.Logf("| %s | %s | %d | %d (bound %d) | %d | %d | %s |", f.topology, f.fault, f.jobs, f.dups, f.bound, f.lost, f.ackLost, rec)
}

// logUnfinished logs, as each node sees them, the jobs of type work not
// yet finished (or why the node could not say).
func logUnfinished(t *testing.T, c *cluster, tg *target) {
	t.Helper()
	for i, d := range tg.drv {
		ctx, cancel := ctxT(10 * time.Second)
		for _, st := range []sluicetype.Status{sluicetype.StatusPending, sluicetype.StatusProcessing} {
			rows, err := d.ListJobs(ctx, sluicetype.ListParams{Status: st, Type: "work", Limit: 20})
			if err != nil {
				t.Logf("node %d: listing %s jobs: %v", i+1, st, err)
				if st == sluicetype.StatusPending {
					// A node that does not answer may have died: why, in its log.
					t.Logf("node %d's error log (tail):\n%s", i+1, c.errLog(c.nodes[i]))
				}
				continue
			}
			for _, r := range rows {
				t.Logf("node %d: job %d %s attempts %d locked_by %q locked_until %v next_run_at %v last_error %q",
					i+1, r.ID, r.Status, r.Attempts, r.LockedBy, r.LockedUntil, r.NextRunAt, r.LastError)
			}
		}
		cancel()
	}
}

// warnings keeps the lines of a sluice log at warning level or above.
func warnings(log string) string {
	var out []string
	for _, l := range strings.Split(log, "\n") {
		if strings.Contains(l, "level=WARN") || strings.Contains(l, "level=ERROR") {
			out = append(out, l)
		}
	}
	if len(out) > 40 {
		out = append(out[:20], append([]string{"..."}, out[len(out)-20:]...)...)
	}
	return strings.Join(out, "\n")
}

// explainDuplicates logs, for the first few jobs that ran twice, each run
// the execution log saw (worker pid, attempt, whether it ended), the job's
// row, and every line of the workers' logs that names the job, and then the
// workers' warnings: what tells a lease lost to a stall from a claim that
// two nodes both granted.
func explainDuplicates(t *testing.T, d driver.Driver, l *proctest.ExecLog[int64], dups []int64, procs []*proctest.Proc) {
	t.Helper()
	for _, id := range dups[:min(len(dups), 5)] {
		var b strings.Builder
		fmt.Fprintf(&b, "job %d ran %d times: %v", id, len(l.Runs[id]), l.Runs[id])
		ctx, cancel := ctxT(5 * time.Second)
		if j, err := d.GetJob(ctx, id); err == nil {
			fmt.Fprintf(&b, "\n  row: status %s, attempts %d, last error %q", j.Status, j.Attempts, j.LastError)
		}
		cancel()
		for _, p := range procs {
			for _, line := range strings.Split(p.Stderr(), "\n") {
				if strings.Contains(line, fmt.Sprintf("job_id=%d ", id)) {
					fmt.Fprintf(&b, "\n  pid %d: %s", p.Pid(), line)
				}
			}
		}
		t.Log(b.String())
	}
	for _, p := range procs {
		t.Logf("sluice work pid %d warnings:\n%s", p.Pid(), warnings(p.Stderr()))
	}
}
