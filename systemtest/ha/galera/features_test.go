package galera

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/dburl"
	"github.com/sluicehq/sluice/driver"
	"github.com/sluicehq/sluice/driver/mysql"
	"github.com/sluicehq/sluice/internal/testkit/proctest"
	"github.com/sluicehq/sluice/internal/testkit/testdb"
	"github.com/sluicehq/sluice/lock"
	"github.com/sluicehq/sluice/sluicetype"
)

// GET_LOCK is local to a Galera node: a session on node 2 takes a name
// that a session on node 1 holds. The mysql:// lock backend, built on it,
// must therefore refuse a Galera node with an error naming the lease
// backend (the same URL with ?lease=1), from Go and from the CLI, and the
// lease backend must keep one holder across nodes, with a fence that
// grows when the holder changes.
func TestGaleraRefusesGetLockBackend(t *testing.T) {
	c := getCluster(t)
	tg := newTarget(t, c)
	ctx := context.Background()

	// The fact behind the refusal.
	db1, db2 := adminDB(t, c.nodes[0]), adminDB(t, c.nodes[1])
	conn1, err := db1.Conn(ctx)
	require.NoError(t, err)
	defer conn1.Close()
	conn2, err := db2.Conn(ctx)
	require.NoError(t, err)
	defer conn2.Close()
	name := "galera-test-" + tg.prefix
	var got1, got2 int
	require.NoError(t, conn1.QueryRowContext(ctx, "SELECT GET_LOCK(?, 0)", name).Scan(&got1))
	require.NoError(t, conn2.QueryRowContext(ctx, "SELECT GET_LOCK(?, 0)", name).Scan(&got2))
	require.Equal(t, []int{1, 1}, []int{got1, got2}, "GET_LOCK on two nodes: both sessions hold the name")

	for i, nd := range c.nodes {
		require.True(t, tg.drv[i].(*mysql.Driver).Galera(), "node %d detected as a Galera node", nd.n)
		_, err := lock.Open(nd.URL(), lock.Options{Prefix: tg.prefix})
		require.ErrorIs(t, err, lock.ErrGalera, "node %d", nd.n)
		require.ErrorContains(t, err, "?lease=1")
		require.ErrorContains(t, err, "Galera")
	}
	r := proctest.Run(t, bin, tg.env, "lock", "galera-cli", "--backend", c.nodes[0].URL(), "--", "true")
	require.Equal(t, 2, r.Code, "sluice lock on a Galera node is a usage error: %s", r.Stderr)
	require.Contains(t, r.Stderr, "?lease=1")

	// The lease backend across nodes: a holder on node 1 keeps node 2 and
	// node 3 out; once it lapses, node 2 takes it with a larger fence and
	// node 1's lease is lost for good.
	var lk []lock.Locker
	for i, nd := range c.nodes {
		l, err := lock.Open(nd.URL()+"?lease=1", lock.Options{Prefix: tg.prefix, ID: fmt.Sprintf("n%d", i+1)})
		require.NoError(t, err)
		defer l.Close()
		lk = append(lk, l)
	}
	first, _, err := lk[0].TryAcquire(ctx, "job", 2*time.Second)
	require.NoError(t, err)
	require.NotNil(t, first)
	for _, l := range lk[1:] {
		other, holder, err := l.TryAcquire(ctx, "job", 2*time.Second)
		require.NoError(t, err)
		require.Nil(t, other, "a second node takes a held lease")
		require.True(t, strings.HasPrefix(holder.ID, "n1"), "holder %q", holder.ID)
	}
	time.Sleep(2500 * time.Millisecond)
	second, _, err := lk[1].TryAcquire(ctx, "job", time.Minute)
	require.NoError(t, err)
	require.NotNil(t, second, "node 2 takes the lapsed lease")
	defer second.Release(ctx)
	require.Greater(t, second.Fence(), first.Fence())
	require.ErrorIs(t, first.Renew(ctx), lock.ErrLost, "the stale holder on node 1 cannot renew")
	first.Release(ctx)
	third, _, err := lk[2].TryAcquire(ctx, "job", time.Minute)
	require.NoError(t, err)
	require.Nil(t, third, "the stale holder's release did not free its successor's lease")
	require.NoError(t, second.Renew(ctx))
}

// logTriggers logs, for each node, the triggers of table and the node's
// brute-force aborts. An enqueue once failed here with "Trigger ... has an
// error in its body" right after the migration, and it has not been seen
// again (docs/scale.md, Galera): MariaDB keeps any error raised while it
// loads a trigger into an opened table, not only a syntax error, and
// reports it on each later write through that table instance. What the
// nodes held at the failure tells which.
func logTriggers(t *testing.T, c *cluster, table string) {
	t.Helper()
	for _, nd := range c.nodes {
		db := adminDB(t, nd)
		rows, err := db.Query(`SELECT trigger_name, created, sql_mode, LENGTH(action_statement)
			FROM information_schema.triggers WHERE trigger_schema = ? AND event_object_table = ?`, dbName, table)
		if err != nil {
			t.Logf("node %d: triggers of %s: %v", nd.n, table, err)
			continue
		}
		for rows.Next() {
			var name, created, mode string
			var n int
			if err := rows.Scan(&name, &created, &mode, &n); err != nil {
				t.Logf("node %d: %v", nd.n, err)
				break
			}
			t.Logf("node %d: trigger %s created %s, sql_mode %s, body of %d bytes", nd.n, name, created, mode, n)
		}
		rows.Close()
		t.Logf("node %d: wsrep_local_bf_aborts %s", nd.n, c.status(nd, "wsrep_local_bf_aborts"))
	}
}

// Many clients on all three nodes enqueue the same business keys at the
// same moment. Each node sees no row for the key and inserts one; Galera
// certifies the unique key at commit, so all but one fail with a deadlock
// error and are retried, then find the winner's row. Every key must end
// with exactly one job, and every enqueue of it must answer that job's id.
func TestDedupeAcrossNodes(t *testing.T) {
	const keys, perNode = 100, 2
	c := getCluster(t)
	tg := newTarget(t, c)
	ctx := context.Background()
	before := c.certFailures(t)
	type answer struct {
		id  int64
		dup bool
	}
	var mu sync.Mutex
	answers := map[string][]answer{}
	var wg sync.WaitGroup
	var flushed atomic.Int64
	start := make(chan struct{})
	errs := make(chan error, len(c.nodes)*perNode)
	for i, d := range tg.drv {
		cl, err := sluice.NewClient(sluice.Config{Driver: d})
		require.NoError(t, err)
		admin := adminDB(t, c.nodes[i])
		for range perNode {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				for k := range keys {
					key := fmt.Sprintf("order-%d", k)
					r, err := enqueueWithin(ctx, cl, key)
					// MariaDB's fault (docs/scale.md, Galera): a brute-force
					// abort that cuts short the load of the insert trigger
					// leaves that table instance failing every write with
					// "Trigger ... has an error in its body" (a syntax error
					// near BEGIN, or "Query was empty": the text cut off),
					// the trigger intact. The guide's remedy, FLUSH LOCAL
					// TABLES on that node, must clear it; the dedupe is then
					// held to the same rule as every other enqueue. LOCAL:
					// a replicated FLUSH runs in total order isolation, and
					// a CI run saw one wait forever behind a replicated
					// CREATE TRIGGER, the cluster stopped by flow control.
					for try := 0; err != nil && strings.Contains(err.Error(), "has an error in its body") && try < 3; try++ {
						flushed.Add(1)
						fctx, cancel := context.WithTimeout(ctx, callLimit)
						_, ferr := admin.ExecContext(fctx, "FLUSH LOCAL TABLES "+tg.prefix+"jobs")
						cancel()
						if ferr != nil {
							errs <- fmt.Errorf("node %d: FLUSH LOCAL TABLES after %v: %w", i+1, err, ferr)
							return
						}
						r, err = enqueueWithin(ctx, cl, key)
					}
					if err != nil {
						errs <- fmt.Errorf("node %d: %w", i+1, err)
						return
					}
					mu.Lock()
					answers[key] = append(answers[key], answer{r.ID, r.Duplicate})
					mu.Unlock()
				}
			}()
		}
	}
	close(start)
	wg.Wait()
	close(errs)
	if len(errs) > 0 {
		c.logProcesses(t)
	}
	if flushed.Load() > 0 {
		t.Logf("MariaDB's broken trigger load met %d times, each cleared by FLUSH LOCAL TABLES on its node", flushed.Load())
		logTriggers(t, c, tg.prefix+"jobs")
	}
	for err := range errs {
		require.NoError(t, err, "an enqueue failed instead of being retried")
	}
	conflicts := c.certFailures(t) - before
	rows := testdb.JobsByStatus(t, tg.drv[2], sluicetype.ListParams{Type: "work"})[sluicetype.StatusPending]
	require.Len(t, rows, keys, "one job per key")
	byKey := map[string]int64{}
	for _, r := range rows {
		byKey[r.Key] = r.ID
	}
	for key, as := range answers {
		require.Len(t, as, len(c.nodes)*perNode)
		fresh := 0
		for _, a := range as {
			require.Equal(t, byKey[key], a.id, "key %s: every enqueue answers the one job", key)
			if !a.dup {
				fresh++
			}
		}
		require.Equal(t, 1, fresh, "key %s: exactly one enqueue inserted", key)
	}
	t.Logf("%d keys enqueued %d times each from 3 nodes: one job per key, %d certification conflicts", keys, len(c.nodes)*perNode, conflicts)
}

// callLimit bounds each of the dedupe test's statements. A CI run at load
// 35 once left the test waiting 30 minutes on a call that never returned
// (its stack was cut from the log); with a bound it fails naming the call,
// and the nodes' process lists show what the server was waiting on.
const callLimit = 2 * time.Minute

// enqueueWithin enqueues the job for key, within callLimit.
func enqueueWithin(ctx context.Context, cl *sluice.Client, key string) (sluice.EnqueueResult, error) {
	ctx, cancel := context.WithTimeout(ctx, callLimit)
	defer cancel()
	return cl.Enqueue(ctx, sluice.EnqueueParams{Type: "work", Key: key})
}

// `sluice run` passes (the runner behind POST /v1/run) started at once on
// the three nodes share one run lock, a row of sluice_leases: at most one
// runs jobs at a time, and the others answer skipped. The execution log
// shows whether two passes ever ran jobs at the same time.
func TestRunLockAcrossNodes(t *testing.T) {
	const rounds = 3
	c := getCluster(t)
	tg := newTarget(t, c)
	logPath := t.TempDir() + "/exec.log"
	proctest.Enqueue(t, tg.drv[0], "work", 60)
	cfgs := make([]string, len(c.nodes))
	for i, nd := range c.nodes {
		cfgs[i] = proctest.Config(t, nd.URL(), fmt.Sprintf(`types:
  work:
    command: ["sh", "-c", %q]
`, proctest.LogScript(logPath, "SLUICE_JOB_ID", "0.3")))
	}
	ran, skipped := 0, 0
	for range rounds {
		var wg sync.WaitGroup
		res := make([]proctest.Result, len(c.nodes))
		for i := range c.nodes {
			wg.Add(1)
			go func() {
				defer wg.Done()
				res[i] = proctest.Run(t, bin, tg.env, "run", "--config", cfgs[i], "--max-jobs", "4", "--concurrency", "2", "--max-seconds", "20")
			}()
		}
		wg.Wait()
		for i, r := range res {
			require.Equal(t, 0, r.Code, "run on node %d: %s", i+1, r.Stderr)
			var out sluice.RunResult
			require.NoError(t, json.Unmarshal([]byte(r.Stdout), &out), r.Stdout)
			if out.Skipped != "" {
				skipped++
			} else {
				ran++
			}
		}
	}
	// Passes never overlap: in the log, once a pass (a pid) starts a job,
	// no other pid starts one until all of the first pass's runs ended.
	l := proctest.ReadExecLog[int64](t, logPath, true)
	for id, runs := range l.Runs {
		for _, r := range runs {
			require.True(t, r.Ended, "job %d: a run of a finished pass did not end", id)
		}
	}
	// Rebuild the sequence: each pid's span is from its first start line
	// to its last line; spans of different pids must not intersect.
	spans := map[int][2]int{}
	b := readLines(t, logPath)
	for i, line := range b {
		var kind string
		var id int64
		var attempt, pid int
		fmt.Sscanf(line, "%s %d %d %d", &kind, &id, &attempt, &pid)
		s, ok := spans[pid]
		if !ok {
			s[0] = i
		}
		s[1] = i
		spans[pid] = s
	}
	for p, a := range spans {
		for q, b := range spans {
			if p < q {
				require.True(t, a[1] < b[0] || b[1] < a[0], "passes %d %v and %d %v ran jobs at the same time", p, a, q, b)
			}
		}
	}
	require.Positive(t, skipped, "passes started together on three nodes: some found the lock held")
	t.Logf("%d rounds of 3 concurrent passes on 3 nodes: %d ran, %d skipped, %d passes ran jobs, never two at once", rounds, ran, skipped, len(spans))
}

// A job's completion is fenced by its lease token. A worker that claimed
// a job on node 1 and stalled past its lease cannot complete it once the
// job was rescued (on node 2) and claimed again (on node 3), whichever
// node the stale completion goes to, and the new holder's completion
// counts. The stale completion is also raced against the new holder's on
// two nodes at once: certification lets exactly one through.
func TestFencingAcrossNodes(t *testing.T) {
	c := getCluster(t)
	tg := newTarget(t, c)
	ctx := context.Background()
	n1, n2, n3 := tg.drv[0], tg.drv[1], tg.drv[2]
	proctest.Enqueue(t, n1, "work", 2)
	claimed, err := n1.Claim(ctx, driver.ClaimParams{Queue: "default", Limit: 2, Lease: time.Second, Token: "stale"})
	require.NoError(t, err)
	require.Len(t, claimed, 2)
	time.Sleep(1500 * time.Millisecond)
	testdb.WaitFor(t, 10*time.Second, "rescue on node 2", func() bool {
		r, err := n2.Rescue(ctx, driver.RescueParams{Limit: 10})
		require.NoError(t, err)
		return r.Pending > 0 && allPending(t, n2)
	})
	var again []sluicetype.JobRow
	testdb.WaitFor(t, 10*time.Second, "claim again on node 3", func() bool {
		rows, err := n3.Claim(ctx, driver.ClaimParams{Queue: "default", Limit: 2, Lease: time.Minute, Token: "fresh"})
		require.NoError(t, err)
		again = append(again, rows...)
		return len(again) == 2
	})
	a, b := claimed[0].ID, claimed[1].ID
	// Sequential: the stale holder completes through node 1, then node 2.
	for _, d := range []driver.Driver{n1, n2} {
		lost, err := d.Complete(ctx, driver.CompleteParams{Completions: []driver.Completion{{ID: a, Token: "stale", Status: sluicetype.StatusSuccess}}})
		require.NoError(t, err)
		require.Equal(t, []int64{a}, lost, "a stale completion is refused")
	}
	lost, err := n3.Complete(ctx, driver.CompleteParams{Completions: []driver.Completion{{ID: a, Token: "fresh", Status: sluicetype.StatusSuccess}}})
	require.NoError(t, err)
	require.Empty(t, lost)
	// Racing: stale through node 1 and fresh through node 2 at once.
	var wg sync.WaitGroup
	var staleLost, freshLost []int64
	var staleErr, freshErr error
	wg.Add(2)
	go func() {
		defer wg.Done()
		staleLost, staleErr = n1.Complete(ctx, driver.CompleteParams{Completions: []driver.Completion{{ID: b, Token: "stale", Status: sluicetype.StatusFailed}}})
	}()
	go func() {
		defer wg.Done()
		freshLost, freshErr = n2.Complete(ctx, driver.CompleteParams{Completions: []driver.Completion{{ID: b, Token: "fresh", Status: sluicetype.StatusSuccess}}})
	}()
	wg.Wait()
	require.NoError(t, staleErr)
	require.NoError(t, freshErr)
	require.Equal(t, []int64{b}, staleLost)
	require.Empty(t, freshLost)
	for _, d := range tg.drv {
		testdb.WaitFor(t, 5*time.Second, "both jobs success on every node", func() bool {
			ja, err1 := d.GetJob(ctx, a)
			jb, err2 := d.GetJob(ctx, b)
			return err1 == nil && err2 == nil && ja.Status == sluicetype.StatusSuccess && jb.Status == sluicetype.StatusSuccess
		})
	}
}

func allPending(t *testing.T, d driver.Driver) bool {
	rows, err := d.ListJobs(context.Background(), sluicetype.ListParams{Status: sluicetype.StatusProcessing, Limit: 10})
	require.NoError(t, err)
	return len(rows) == 0
}

// A certification failure reaches the client as error 1213, which the
// MySQL driver classes as transient (retried), the same as an InnoDB
// deadlock: two transactions update one row on two nodes, and the one
// that commits second fails.
func TestCertificationFailureIsTransient(t *testing.T) {
	c := getCluster(t)
	tg := newTarget(t, c)
	ctx := context.Background()
	proctest.Enqueue(t, tg.drv[0], "work", 1)
	testdb.WaitFor(t, 5*time.Second, "the job on node 2", func() bool { return hasPending(tg.drv[1], "work") })
	tx1, err := tg.drv[0].DB().BeginTx(ctx, nil)
	require.NoError(t, err)
	defer tx1.Rollback()
	tx2, err := tg.drv[1].DB().BeginTx(ctx, nil)
	require.NoError(t, err)
	defer tx2.Rollback()
	q := "UPDATE " + tg.prefix + "jobs SET priority = ? WHERE type = 'work'"
	_, err = tx1.ExecContext(ctx, q, 1)
	require.NoError(t, err)
	_, err = tx2.ExecContext(ctx, q, 2)
	require.NoError(t, err)
	require.NoError(t, tx1.Commit())
	err = tx2.Commit()
	require.Error(t, err, "the second commit of a conflicting write on another node fails certification")
	t.Logf("certification failure: %v", err)
	tr, ok := tg.drv[1].(interface{ IsTransient(error) bool })
	require.True(t, ok)
	require.True(t, tr.IsTransient(err), "%v is retried like a deadlock", err)
}

func readLines(t *testing.T, path string) []string {
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	return strings.Split(strings.TrimSpace(string(b)), "\n")
}

// `sluice migrate` serialises migrations with GET_LOCK, which on Galera
// holds only on its own node. DDL is replicated in total order, and every
// migration but one index creation runs twice harmlessly, so concurrent
// migrations on three nodes either succeed or fail with a clear error
// (duplicate key name). The schema version only grows, so a slow node
// cannot record an older version over a newer one (which made every later
// migrate fail): a second `sluice migrate` succeeds everywhere and the
// schema is complete. docs/scale.md "MariaDB Galera (3 nodes, multi-primary)"
// says to migrate from one place.
func TestConcurrentMigrateAcrossNodes(t *testing.T) {
	c := getCluster(t)
	prefix := testdb.Prefix()
	env := []string{"SLUICE_PREFIX=" + prefix}
	d, err := dburl.Open(c.nodes[0].URL(), dburl.Options{Prefix: prefix})
	require.NoError(t, err)
	defer d.Close()
	defer testdb.Drop(d, prefix)
	var wg sync.WaitGroup
	res := make([]proctest.Result, len(c.nodes))
	for i, nd := range c.nodes {
		cfg := proctest.Config(t, nd.URL(), "")
		wg.Add(1)
		go func() { defer wg.Done(); res[i] = proctest.Run(t, bin, env, "migrate", "--config", cfg) }()
	}
	wg.Wait()
	failed := 0
	for i, r := range res {
		if r.Code != 0 {
			failed++
			t.Logf("concurrent migrate on node %d: exit %d: %s", i+1, r.Code, strings.TrimSpace(r.Stderr))
		}
	}
	for i, nd := range c.nodes {
		r := proctest.Run(t, bin, env, "migrate", "--config", proctest.Config(t, nd.URL(), ""))
		require.Equal(t, 0, r.Code, "second migrate on node %d: %s", i+1, r.Stderr)
	}
	cur, latest, err := d.SchemaVersion(context.Background())
	require.NoError(t, err)
	require.Equal(t, latest, cur, "schema complete")
	t.Logf("3 concurrent migrations on 3 nodes: %d failed, all succeeded when run again", failed)
}
