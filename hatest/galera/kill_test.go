package galera

import (
	"context"
	"database/sql"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/dburl"
	"github.com/sluicehq/sluice/driver"
	"github.com/sluicehq/sluice/internal/proctest"
	"github.com/sluicehq/sluice/internal/testdb"
)

// A node is SIGKILLed mid-run and brought back. The workers reach the
// cluster as users deploy it, through HAProxy with a Galera health check:
// go-sql-driver/mysql has no multi-host DSN, so a worker given one node's
// URL would wait for that node to come back; behind HAProxy its
// connections to the dead node are cut and new ones go to the live nodes.
//
// While the workers run, a producer keeps enqueuing through HAProxy, and
// retries an enqueue that failed with the same business key (so that a
// retry of an enqueue that did commit is a duplicate, not a second job).
// Checked from the execution log and the tables:
//   - no worker exits; every job, enqueued before or during the fault,
//     ends in success and ran;
//   - no acknowledged enqueue is lost;
//   - a job ran twice only if it was processing when the node died (its
//     claim or completion went through the dead node), and at most twice;
//   - the node rejoins by IST and then holds the same rows as the others.
func TestKillNodeMidRun(t *testing.T) {
	const jobs, live, conc = 400, 150, 8
	c := getCluster(t)
	tg := newTarget(t, c)
	h := startHAProxy(t, c)
	logPath := t.TempDir() + "/exec.log"
	proctest.Enqueue(t, tg.drv[0], "work", jobs)
	var procs []*proctest.Proc
	for range 3 {
		procs = append(procs, startWork(t, tg.env, "--config", workConfig(t, h.URL(), logPath, conc, ""), "--shutdown-timeout", "5s"))
	}
	victim, witness := c.nodes[1], tg.drv[0]

	// The producer, through HAProxy.
	var err error
	var producer *sluice.Client
	var pd driver.Driver
	testdb.WaitFor(t, 30*time.Second, "the producer connected through HAProxy", func() bool {
		pd, err = dburl.Open(h.URL(), dburl.Options{Prefix: tg.prefix})
		return err == nil
	})
	defer pd.Close()
	producer, err = sluice.NewClient(sluice.Config{Driver: pd})
	require.NoError(t, err)
	acked := map[string]int64{}
	var ackMu sync.Mutex
	prodDone := make(chan struct{})
	retries := 0
	go func() {
		defer close(prodDone)
		for i := range live {
			key := fmt.Sprintf("live-%d", i)
			for {
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				r, err := producer.Enqueue(ctx, sluice.EnqueueParams{Type: "work", Key: key})
				cancel()
				if err == nil {
					ackMu.Lock()
					acked[key] = r.ID
					ackMu.Unlock()
					break
				}
				retries++
				time.Sleep(50 * time.Millisecond)
			}
			time.Sleep(40 * time.Millisecond)
		}
	}()

	admin := adminDB(t, c.nodes[0])
	testdb.WaitFor(t, 150*time.Second, "a third of the jobs done", func() bool { return proctest.ReadExecLog[int64](t, logPath, false).Ends >= jobs/3 })
	before := successCount(admin, tg.prefix)
	killAt := time.Now()
	c.kill(victim)
	killLine := proctest.ReadExecLog[int64](t, logPath, false).Lines
	// Jobs processing at the kill, read from a survivor: the only ones
	// allowed to run again. Claims made through survivors after the kill
	// are in the set too, which only loosens the bound.
	ctx := context.Background()
	processing, err := witness.ListJobs(ctx, driver.ListParams{Status: driver.StatusProcessing, Limit: 1000})
	require.NoError(t, err)
	held := map[int64]bool{}
	for _, j := range processing {
		held[j.ID] = true
	}
	// Recovery: from the kill to the first success committed after it,
	// polled every 10 ms on a survivor.
	var recovery time.Duration
	testdb.WaitFor(t, 60*time.Second, "a job succeeded after the kill", func() bool {
		if n := successCount(admin, tg.prefix); n > before && n >= 0 {
			recovery = time.Since(killAt)
			return true
		}
		return false
	})
	t.Logf("node %d killed with %d jobs processing; first success %s after the kill", victim.n, len(held), recovery.Round(time.Millisecond))

	rejoinStart := time.Now()
	require.NoError(t, c.rejoin(victim), "rejoin:\n%s", c.errLog(victim))
	rejoin := time.Since(rejoinStart)
	t.Logf("node %d Synced again %s after its restart, by %s", victim.n, rejoin.Round(time.Millisecond), c.transferKind(victim))

	<-prodDone
	total := jobs + live
	testdb.WaitFor(t, 150*time.Second, "every job finished", func() bool {
		for _, p := range procs {
			require.False(t, p.Exited(), "sluice work pid %d exited: %v\n%s", p.Pid(), p.Err(), proctest.Tail(p.Stderr(), 2000))
		}
		return allDone(witness, "work")
	})
	for _, p := range procs {
		require.NoError(t, p.Term(t, 15*time.Second), "work exits 0 on SIGTERM")
	}
	l := proctest.ReadExecLog[int64](t, logPath, true)
	dups := proctest.CheckAllSucceeded(t, witness, l, total)
	for _, id := range dups {
		runs := l.Runs[id]
		require.Len(t, runs, 2, "job %d ran %d times", id, len(runs))
		require.LessOrEqual(t, runs[0].Line, killLine, "job %d ran twice but its first run started after the kill", id)
		require.True(t, held[id], "job %d ran twice but was not processing when the node died", id)
	}
	ackLost := 0
	rows := testdb.JobsByStatus(t, witness, driver.ListParams{Type: "work"})[driver.StatusSuccess]
	byKey := map[string]int64{}
	for _, r := range rows {
		byKey[r.Key] = r.ID
	}
	for key, id := range acked {
		if byKey[key] != id {
			ackLost++
		}
	}
	require.Len(t, acked, live)
	require.Zero(t, ackLost, "acknowledged enqueues lost")
	// The rejoined node caught up: it holds every job, finished.
	rejoined := adminDB(t, victim)
	testdb.WaitFor(t, 30*time.Second, "the rejoined node holds every finished job", func() bool {
		return successCount(rejoined, tg.prefix) == total
	})
	// Bound: each process holds at most 2×concurrency jobs (running plus
	// prefetched); a dead node can put at most those of every process at
	// risk.
	bound := 3 * 2 * conc
	require.LessOrEqual(t, len(dups), bound)
	t.Logf("%d jobs (%d enqueued during the fault, %d enqueue retries), %d ran twice (all processing at the kill, of %d), recovery %s, rejoin %s",
		total, live, retries, len(dups), len(held), recovery.Round(time.Millisecond), rejoin.Round(time.Millisecond))
	report(t, figures{topology: "Galera 3 nodes, 3 workers via HAProxy (Galera health check)", fault: "SIGKILL one node, rejoin by " + c.transferKind(victim),
		jobs: total, dups: len(dups), bound: len(held), recovery: recovery})
}

// successCount counts finished jobs on one node; -1 when it cannot.
func successCount(db *sql.DB, prefix string) int {
	ctx, cancel := ctxT(2 * time.Second)
	defer cancel()
	n := -1
	if err := db.QueryRowContext(ctx, "SELECT COUNT(*) FROM "+prefix+"jobs WHERE status = 'success'").Scan(&n); err != nil {
		return -1
	}
	return n
}
