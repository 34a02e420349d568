package galera

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/dburl"
	"github.com/sluicehq/sluice/driver"
	"github.com/sluicehq/sluice/internal/testkit/proctest"
	"github.com/sluicehq/sluice/internal/testkit/testdb"
	"github.com/sluicehq/sluice/sluicetype"
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
// The node killed is the producer's, with one of its enqueues in flight.
// Checked from HAProxy, the execution log and the tables:
//   - the killed node carried sessions of the workers and the producer;
//   - no worker exits; every job, enqueued before or during the fault,
//     ends in success and ran, and none ran twice;
//   - the enqueue in flight was retried; no acknowledged enqueue is lost;
//   - the node rejoins by IST and then holds the same rows as the others.
//
// "None ran twice" holds for a lease longer than the cluster's write stall
// (docs/scale.md): on a loaded machine the writes of every worker stalled
// for about 10 s while the killed node rejoined (heartbeats timed out
// from 8 to 13 s after the kill), and with 15 s leases 22 of the 43 jobs
// claimed just before the kill lapsed and ran again. So the lease here is
// 45 s, the figure docs/scale.md advises.
func TestKillNodeMidRun(t *testing.T) {
	const jobs, live, conc, lease = 400, 150, 8, 45 * time.Second
	c := getCluster(t)
	tg := newTarget(t, c)
	h := startHAProxy(t, c)
	logPath := t.TempDir() + "/exec.log"
	proctest.Enqueue(t, tg.drv[0], "work", jobs)
	var procs []*proctest.Proc
	for range 3 {
		procs = append(procs, startWork(t, tg.env, "--config", workConfig(t, h.URL(), logPath, conc, lease, ""), "--shutdown-timeout", "5s"))
	}

	// The producer, through HAProxy, on one connection: the node it lands
	// on is the one killed, so that the kill cuts the producer too.
	var err error
	var producer *sluice.Client
	var pd driver.Driver
	testdb.WaitFor(t, 30*time.Second, "the producer connected through HAProxy", func() bool {
		pd, err = dburl.Open(h.URL(), dburl.Options{Prefix: tg.prefix})
		return err == nil
	})
	defer pd.Close()
	pd.DB().SetMaxOpenConns(1)
	var nodeName string
	require.NoError(t, pd.DB().QueryRow("SELECT @@wsrep_node_name").Scan(&nodeName))
	vi := slices.IndexFunc(c.nodes, func(nd *node) bool { return fmt.Sprintf("n%d", nd.n) == nodeName })
	require.GreaterOrEqual(t, vi, 0, "the producer's node %q", nodeName)
	victim, witness := c.nodes[vi], tg.drv[(vi+1)%3]
	producer, err = sluice.NewClient(sluice.Config{Driver: pd})
	require.NoError(t, err)
	acked := map[string]int64{}
	var ackMu sync.Mutex
	prodDone := make(chan struct{})
	// hold asks the producer to keep one enqueue's transaction open on the
	// victim: it answers on the first channel once the job is written, and
	// commits when the second is closed, after the kill. So an enqueue is
	// in flight when the node dies, and must be retried, every run.
	hold := make(chan [2]chan struct{})
	retries := 0
	go func() {
		defer close(prodDone)
		for i := range live {
			key := fmt.Sprintf("live-%d", i)
			select {
			case h := <-hold:
				// The transaction dies with the node: its commit fails and
				// the loop below enqueues the key again.
				if tx, err := pd.DB().Begin(); err == nil {
					_, err = producer.EnqueueTx(context.Background(), tx, sluice.EnqueueParams{Type: "work", Key: key})
					close(h[0])
					<-h[1]
					if err == nil && tx.Commit() == nil {
						t.Errorf("enqueue of %s committed on the killed node", key)
					}
				} else {
					close(h[0])
				}
				retries++
			default:
			}
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

	admin := adminDB(t, c.nodes[(vi+1)%3])
	testdb.WaitFor(t, 150*time.Second, "a third of the jobs done", func() bool { return proctest.ReadExecLog[int64](t, logPath, false).Ends >= jobs/3 })
	before := successCount(admin, tg.prefix)
	inFlight := [2]chan struct{}{make(chan struct{}), make(chan struct{})}
	select {
	case hold <- inFlight:
	case <-prodDone:
		t.Fatal("the producer finished before the kill")
	}
	<-inFlight[0]
	// HAProxy's sessions on the victim: the workers' and the producer's.
	carried := h.sessions(t, victim)
	require.Greater(t, carried, 1, "the killed node carried sessions of the workers as well as the producer's")
	// Flow control's pauses, counted on a survivor from the kill to the
	// end: how much of the cluster's write stall around the rejoin it
	// explains (docs/scale.md).
	fcNode := c.nodes[(vi+1)%3]
	fcBefore := c.status(fcNode, "wsrep_flow_control_paused_ns")
	killAt := time.Now()
	c.kill(victim)
	close(inFlight[1])
	// Jobs processing at the kill, read from a survivor: the ones a lost
	// claim or outcome would put at risk.
	ctx := context.Background()
	processing, err := witness.ListJobs(ctx, sluicetype.ListParams{Status: sluicetype.StatusProcessing, Limit: 1000})
	require.NoError(t, err)
	held := len(processing)
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
	t.Logf("node %d killed with %d jobs processing; first success %s after the kill", victim.n, held, recovery.Round(time.Millisecond))

	rejoinStart := time.Now()
	recovered, err := c.rejoin(t, victim)
	require.NoError(t, err, "rejoin:\n%s", c.errLog(victim))
	rejoin := time.Since(rejoinStart)
	t.Logf("node %d Synced again %s after its restart, by %s", victim.n, rejoin.Round(time.Millisecond), c.transferKind(victim))
	if recovered {
		require.Equal(t, "IST", c.transferKind(victim), "the node caught up from a donor's write-set cache, not a full copy")
	}

	<-prodDone
	total := jobs + live
	for deadline := time.Now().Add(150 * time.Second); !allDone(witness, "work"); time.Sleep(50 * time.Millisecond) {
		for _, p := range procs {
			require.False(t, p.Exited(), "sluice work pid %d exited: %v\n%s", p.Pid(), p.Err(), proctest.Tail(p.Stderr(), 2000))
		}
		if time.Now().After(deadline) {
			// What is left, as each node sees it, and the workers' warnings:
			// a CI run at load 20 met this once, with nothing else logged.
			logUnfinished(t, c, tg)
			for _, p := range procs {
				t.Logf("sluice work pid %d warnings:\n%s", p.Pid(), warnings(p.Stderr()))
			}
			t.Fatal("every job finished: not reached within 2m30s")
		}
	}
	for _, p := range procs {
		require.NoError(t, p.Term(t, 15*time.Second), "work exits 0 on SIGTERM")
	}
	if a, err := strconv.ParseInt(fcBefore, 10, 64); err == nil {
		if b, err := strconv.ParseInt(c.status(fcNode, "wsrep_flow_control_paused_ns"), 10, 64); err == nil {
			t.Logf("flow control paused replication %s in all from the kill to the end (node %d's wsrep_flow_control_paused_ns)",
				time.Duration(b-a).Round(time.Millisecond), fcNode.n)
		}
	}
	l := proctest.ReadExecLog[int64](t, logPath, true)
	// Galera commits on every node before it answers, so a claim or an
	// outcome lost with the node was never acknowledged, and the worker
	// writes its outcomes again through a live node (with the job's
	// token) until they commit: no job runs again, as docs/scale.md states.
	dups := proctest.CheckAllSucceeded(t, witness, l, total)
	if len(dups) > 0 {
		// A loaded CI run (two runs at once) saw 16 of the 37 jobs that were
		// processing at the kill run twice, with only the workers' log tails
		// kept: say how each ran and what the workers logged of it.
		explainDuplicates(t, witness, l, dups, procs)
	}
	require.Empty(t, dups, "jobs run twice")
	ackLost := 0
	rows := testdb.JobsByStatus(t, witness, sluicetype.ListParams{Type: "work"})[sluicetype.StatusSuccess]
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
	require.Positive(t, retries, "the enqueue in flight at the kill was retried")
	t.Logf("%d jobs (%d enqueued during the fault, %d enqueue retries), %d ran twice (of %d processing at the kill; %d HAProxy sessions on the node), recovery %s, rejoin %s",
		total, live, retries, len(dups), held, carried, recovery.Round(time.Millisecond), rejoin.Round(time.Millisecond))
	report(t, figures{topology: "Galera 3 nodes, 3 workers via HAProxy (Galera health check)", fault: "SIGKILL one node, rejoin by " + c.transferKind(victim),
		jobs: total, dups: len(dups), bound: held, recovery: recovery})
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
