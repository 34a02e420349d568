package patroni

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/dburl"
	"github.com/sluicehq/sluice/driver"
	"github.com/sluicehq/sluice/internal/testkit/clienttest"
	"github.com/sluicehq/sluice/internal/testkit/proctest"
	"github.com/sluicehq/sluice/internal/testkit/testdb"
	"github.com/sluicehq/sluice/sluicetype"
)

// The workload, scaled for a loaded 2-core machine: the assertions hold
// whatever the counts.
const (
	seedJobs        = 150
	workConcurrency = 8
	jobSleep        = "0.05"
	// jobLease outlasts the failover (about patroniTTL), so that a job in
	// flight at the kill keeps its lease until its worker writes the
	// outcome on the new primary, instead of being rescued and run again.
	jobLease = "45s"
	// enqueuePause paces each of the two clients that post jobs, one at
	// a time, each to its own `sluice serve`.
	enqueuePause = 30 * time.Millisecond
	// stallFor is how long replication stalls before the kill.
	stallFor = 2 * time.Second
	dbName   = "sluice_ha"
)

// TestPatroniFailover builds one three-node cluster and fails it over
// twice: first with synchronous_mode on (primary and two replicas), then,
// after switching it off, asynchronous (the new primary and its one
// remaining replica). Each run has its own tables and its own sluice
// processes: two `sluice work` and two `sluice serve --no-workers`, one
// of each on the multi-host URL and one through HAProxy.
func TestPatroniFailover(t *testing.T) {
	c := startCluster(t, true)
	admin := c.open(c.primary(), "postgres")
	_, err := admin.Exec("CREATE DATABASE " + dbName)
	require.NoError(t, err)

	var reports []string
	t.Run("sync", func(t *testing.T) {
		reports = append(reports, failoverRun(t, c, true))
	})
	if t.Failed() {
		return
	}
	t.Run("async", func(t *testing.T) {
		p := c.primary()
		require.NotNil(t, p)
		c.patchConfig(p, map[string]any{"synchronous_mode": false})
		// Patroni clears synchronous_standby_names on its next loop.
		db := c.open(p, "postgres")
		testdb.WaitFor(t, 30*time.Second, "synchronous_standby_names cleared", func() bool {
			var s string
			return db.QueryRow("SHOW synchronous_standby_names").Scan(&s) == nil && s == ""
		})
		reports = append(reports, failoverRun(t, c, false))
	})
	for _, r := range reports {
		t.Log(r)
	}
}

// ack is one acknowledged enqueue: the serve call returned success.
type ack struct {
	key  string
	id   int64
	sent time.Time // when the call that succeeded was made
	at   time.Time // when it returned
}

// enqueuer posts jobs to one `sluice serve`, one at a time, each under a
// business key of its own. A failed call is retried with the same key
// until it is acknowledged: a call that failed after its insert committed
// then comes back as a duplicate with the job's id, which is the
// idempotent enqueue an application does across a failover.
type enqueuer struct {
	name   string
	base   string
	mu     sync.Mutex
	acks   []ack
	errors atomic.Int64
	log    *os.File
}

func (e *enqueuer) run(ctx context.Context, stop <-chan struct{}) {
	client := &http.Client{Timeout: 10 * time.Second}
	for n := 0; ; n++ {
		select {
		case <-stop:
			return
		default:
		}
		key := fmt.Sprintf("%s-%d", e.name, n)
		body := fmt.Sprintf(`{"type":"work","key":%q}`, key)
		for {
			if ctx.Err() != nil {
				return
			}
			sent := time.Now()
			resp, err := client.Post(e.base+"/v1/jobs", "application/json", strings.NewReader(body))
			if err == nil {
				var r struct {
					ID int64 `json:"id"`
				}
				derr := json.NewDecoder(resp.Body).Decode(&r)
				resp.Body.Close()
				if (resp.StatusCode == http.StatusCreated || resp.StatusCode == http.StatusOK) && derr == nil {
					now := time.Now()
					e.mu.Lock()
					e.acks = append(e.acks, ack{key, r.ID, sent, now})
					fmt.Fprintf(e.log, "ack %s %d %d\n", key, r.ID, now.UnixNano())
					e.mu.Unlock()
					break
				}
			}
			e.errors.Add(1)
			time.Sleep(100 * time.Millisecond)
		}
		time.Sleep(enqueuePause)
	}
}

func (e *enqueuer) acked() []ack {
	e.mu.Lock()
	defer e.mu.Unlock()
	return slices.Clone(e.acks)
}

// firstAckAfter is when the first enqueue call made after t was
// acknowledged: one made before may have committed before t.
func (e *enqueuer) firstAckAfter(t time.Time) time.Time {
	for _, a := range e.acked() {
		if a.sent.After(t) {
			return a.at
		}
	}
	return time.Time{}
}

// failoverRun runs the workload on fresh tables, kills the primary
// mid-run, and checks and reports what the failover cost.
func failoverRun(t *testing.T, c *cluster, syncMode bool) string {
	ctx := context.Background()
	dir := t.TempDir()
	prefix := testdb.Prefix()
	env := []string{"SLUICE_PREFIX=" + prefix}
	mhURL, haURL := c.multiHostURL(dbName), c.haproxyURL(dbName)
	logPath := filepath.Join(dir, "exec.log")

	// Migrate through the multi-host URL, as a deploy would.
	r := proctest.Run(t, bin, env, "migrate", "--config", writeConfig(t, mhURL, logPath))
	require.Equal(t, 0, r.Code, r.Stderr)

	// The test's own driver, also on the multi-host URL: it seeds jobs,
	// plays the fenced-out worker, and reads the outcome.
	d, err := dburl.Open(mhURL, dburl.Options{Prefix: prefix})
	require.NoError(t, err)
	t.Cleanup(func() { d.Close() })
	d.DB().SetMaxIdleConns(0)

	paths := map[string]string{"multihost": mhURL, "haproxy": haURL}
	pathOfPID := map[int]string{}
	var procs []*proctest.Proc
	enqs := map[string]*enqueuer{}
	for _, path := range []string{"multihost", "haproxy"} {
		cfg := writeConfig(t, paths[path], logPath)
		w := proctest.Start(t, bin, "work-"+path, env, "work", "--config", cfg, "--shutdown-timeout", "10s")
		pathOfPID[w.Pid()] = path
		addr := testdb.FreeAddr(t)
		s := proctest.Start(t, bin, "serve-"+path, env, "serve", "--log-level", "warn", "--no-workers", "--listen", addr, "--config", cfg, "--shutdown-timeout", "10s")
		procs = append(procs, w, s)
		f, err := os.Create(filepath.Join(dir, "acks-"+path+".log"))
		require.NoError(t, err)
		t.Cleanup(func() { f.Close() })
		enqs[path] = &enqueuer{name: path, base: "http://" + addr, log: f}
	}
	for _, e := range enqs {
		testdb.WaitFor(t, 30*time.Second, e.base+" serving", func() bool { return proctest.Healthy(e.base) })
	}

	// The wake-up probe: a client of the library on the multi-host URL
	// whose poll backs off to a minute, so that only a NOTIFY can start
	// its jobs soon.
	wake := newWakeProbe(t, mhURL, prefix)

	seedKeys := make([]string, seedJobs)
	ins := make([]driver.InsertJob, seedJobs)
	for i := range ins {
		seedKeys[i] = fmt.Sprintf("seed-%d", i)
		ins[i] = driver.InsertJob{Queue: "default", Type: "work", Key: seedKeys[i], Dedupe: sluicetype.DedupePermanent, Payload: []byte("{}"), MaxAttempts: 25}
	}
	_, err = d.Insert(ctx, driver.InsertParams{Jobs: ins})
	require.NoError(t, err)

	stopEnq := make(chan struct{})
	enqCtx, cancelEnq := context.WithCancel(ctx)
	defer cancelEnq()
	var enqWG sync.WaitGroup
	for _, e := range enqs {
		enqWG.Add(1)
		go func() { defer enqWG.Done(); e.run(enqCtx, stopEnq) }()
	}

	testdb.WaitFor(t, 90*time.Second, "a third of the seeded jobs done", func() bool { return proctest.CountEnds(logPath) >= seedJobs/3 })
	old := c.primary()
	require.NotNil(t, old, "a primary before the kill")
	oldDB := c.open(old, dbName)
	fence := fenceSetup(t, c, d, oldDB)

	// What the primary acknowledged before the kill: in synchronous mode
	// a commit becomes visible to other sessions only once the
	// synchronous standby has it.
	var syncNames string
	require.NoError(t, oldDB.QueryRow("SHOW synchronous_standby_names").Scan(&syncNames))
	require.Equal(t, syncMode, syncNames != "", "synchronous_standby_names = %q", syncNames)

	// The same fault in both modes: replication stalls for a moment before
	// the primary dies, as when a replica falls behind. On loopback the
	// replicas are otherwise never more than a few milliseconds behind, so
	// an asynchronous cluster would seldom show what it can lose.
	c.stallReplication(old)
	time.Sleep(stallFor)
	successBefore := successKeys(t, oldDB, prefix)
	killStart := time.Now()
	killAt := c.kill(old)
	t.Logf("killed %s (primary) at %s (frozen %s after the kill began, all dead %s after), replication stalled %s before, with %d jobs in success; synchronous_standby_names %q",
		old.name, killAt.Format("15:04:05.000"), killAt.Sub(killStart).Round(time.Millisecond), time.Since(killStart).Round(time.Millisecond),
		stallFor, len(successBefore), syncNames)

	var promoted *node
	testdb.WaitFor(t, 90*time.Second, "a new primary", func() bool {
		promoted = c.primary()
		return promoted != nil
	})
	promotedAt := time.Now()
	t.Logf("%s promoted %s after the kill", promoted.name, promotedAt.Sub(killAt).Round(time.Millisecond))
	newDB := c.open(promoted, dbName)

	// LISTEN must be re-established on the new primary by every process
	// that runs workers: the two `sluice work` and the probe. Watched from
	// now on, every 50 ms.
	channel := `LISTEN "` + prefix + `jobs"`
	listenBack := make(chan time.Time, 1)
	go func() {
		deadline := time.Now().Add(60 * time.Second)
		for time.Now().Before(deadline) {
			var n int
			err := newDB.QueryRow("SELECT count(*) FROM pg_stat_activity WHERE datname = $1 AND query = $2", dbName, channel).Scan(&n)
			if err == nil && n >= 3 {
				listenBack <- time.Now()
				return
			}
			time.Sleep(50 * time.Millisecond)
		}
		close(listenBack)
	}()

	// Every sluice process must carry on by itself: the first job finished
	// on the new primary by each worker, and the first enqueue
	// acknowledged by each serve.
	testdb.WaitFor(t, 60*time.Second, "both workers finished a job on the new primary", func() bool {
		first, err := firstFinished(newDB, prefix, killAt, logPath, pathOfPID)
		if err != nil {
			t.Logf("reading the first jobs on the new primary: %v", err) // it may still be settling
			return false
		}
		return len(first) == 2
	})
	testdb.WaitFor(t, 60*time.Second, "both serves acknowledged an enqueue after the kill", func() bool {
		for _, e := range enqs {
			if e.firstAckAfter(killAt).IsZero() {
				return false
			}
		}
		return true
	})
	for _, p := range procs {
		require.False(t, p.Exited(), "%s exited during the failover: %v", p.Name, p.Err())
	}

	listenAt, ok := <-listenBack
	require.True(t, ok, "LISTEN not re-established on the new primary within 60s")
	require.Less(t, listenAt.Sub(promotedAt), maxListenBack, "LISTEN back on the new primary after its promotion")
	// Each worker's first job on the new primary: the workers resumed by
	// themselves, whichever way they connect.
	first, err := firstFinished(newDB, prefix, killAt, logPath, pathOfPID)
	require.NoError(t, err)
	require.Len(t, first, 2, "a first job per connection path: %v", first)
	for path, d := range first {
		require.Less(t, d-promotedAt.Sub(killAt), maxResume, "first job finished by the %s worker after the promotion (%v after the kill, promotion %s)",
			path, first, promotedAt.Sub(killAt))
	}
	var pickups []time.Duration
	for range 3 {
		pickups = append(pickups, wake.pickup(t, wake.inserter))
	}
	slices.Sort(pickups)
	t.Logf("pickup by NOTIFY after the failover: %v", pickups)
	require.Less(t, pickups[1], wakeBound, "median pickup after the failover: only a NOTIFY on the new primary explains a fast one")

	fenceCheck(t, d, newDB, prefix, fence)

	// Keep enqueueing a moment on the new primary, then drain.
	time.Sleep(2 * time.Second)
	close(stopEnq)
	enqWG.Wait()
	var acked []ack
	for _, e := range enqs {
		acked = append(acked, e.acked()...)
	}
	ackedKeys := map[string]bool{}
	for _, k := range seedKeys {
		ackedKeys[k] = true
	}
	for _, a := range acked {
		ackedKeys[a.key] = true
	}
	testdb.WaitFor(t, 120*time.Second, "every job finished", func() bool {
		st, err := d.Stats(ctx)
		if err != nil {
			return false
		}
		for _, s := range st {
			if s.Queue == "default" && s.Pending+s.Processing > 0 {
				return false
			}
		}
		return true
	})
	for _, p := range procs {
		require.NoError(t, p.Term(t, 20*time.Second), "%s exits 0 on SIGTERM", p.Name)
	}

	// The outcome, from the execution log and the new primary.
	runs := proctest.ReadExecLog[string](t, logPath, true).Runs
	rows := allJobs(t, newDB, prefix)
	byKey := map[string]jobRow{}
	for _, r := range rows {
		byKey[r.key] = r
	}
	var ackedLost, lost []string
	for k := range ackedKeys {
		r, ok := byKey[k]
		if !ok {
			ackedLost = append(ackedLost, k)
			continue
		}
		if r.status != sluicetype.StatusSuccess {
			lost = append(lost, k)
		}
	}
	// An acknowledged enqueue that the new primary never had still counts
	// as a lost job unless its log shows a run of it that ended.
	for _, k := range ackedLost {
		ended := false
		for _, r := range runs[k] {
			ended = ended || r.Ended
		}
		if !ended {
			lost = append(lost, k)
		}
	}
	dups, reran := 0, 0
	for _, r := range rows {
		if len(runs[r.key]) > 1 {
			dups++
			if successBefore[r.key] {
				reran++
			}
		}
		if r.status == sluicetype.StatusSuccess {
			require.NotEmpty(t, runs[r.key], "job %d (%s) is success but never ran", r.id, r.key)
		}
	}
	recovery := min(first["multihost"], first["haproxy"])
	// A completion whose commit reply the kill cut off is retried on the
	// new primary and finds the job already done: it is logged as a lost
	// lease, and dropped, though its outcome was written.
	leaseLost := 0
	for _, p := range procs {
		for _, line := range strings.Split(p.Stderr(), "\n") {
			if strings.Contains(line, "job lease lost") {
				leaseLost++
				t.Logf("%s: %s", p.Name, line)
			}
		}
	}
	enqErrors := int64(0)
	for _, e := range enqs {
		enqErrors += e.errors.Load()
	}
	mode := "async"
	if syncMode {
		mode = "sync"
	}
	report := fmt.Sprintf("REPORT patroni %s: nodes %d, jobs %d (seeded %d, enqueued during the run %d, %d enqueue calls failed and were retried), "+
		"duplicates %d, acknowledged successes re-run %d, lost %d, acknowledged enqueues lost %d, "+
		"replication stalled %s before the kill, promotion %s after it, first job finished on the new primary %s after the kill (multi-host %s, HAProxy %s), "+
		"first enqueue acknowledged after the kill: multi-host serve %s, HAProxy serve %s; LISTEN back %s after promotion; "+
		"NOTIFY pickup after %v; lease-lost log lines %d",
		mode, len(c.live())+1, len(ackedKeys), seedJobs, len(acked), enqErrors,
		dups, reran, len(lost), len(ackedLost),
		stallFor, promotedAt.Sub(killAt).Round(100*time.Millisecond), recovery.Round(100*time.Millisecond),
		first["multihost"].Round(100*time.Millisecond), first["haproxy"].Round(100*time.Millisecond),
		enqs["multihost"].firstAckAfter(killAt).Sub(killAt).Round(100*time.Millisecond),
		enqs["haproxy"].firstAckAfter(killAt).Sub(killAt).Round(100*time.Millisecond),
		listenAt.Sub(promotedAt).Round(100*time.Millisecond), pickups, leaseLost)
	t.Log(report)
	if !syncMode {
		// A check of the check: the stall must expose the asynchronous
		// window, or the zeros of the synchronous run prove nothing.
		require.NotZero(t, len(ackedLost)+reran, "the replication stall lost nothing acknowledged without synchronous replication")
	}
	if syncMode {
		require.Empty(t, ackedLost, "acknowledged enqueues lost with synchronous replication")
		require.Empty(t, lost, "jobs lost with synchronous replication")
		require.Zero(t, reran, "acknowledged successes run again with synchronous replication")
		// The workers' 45 s lease outlasts the failover, so a job in flight
		// at the kill keeps it until its worker writes the outcome on the
		// new primary: none runs twice.
		require.Zero(t, dups, "jobs run twice with synchronous replication")
	}
	return report
}

// Bounds on what sluice adds to Patroni's failover. The workers probe a
// lost database every 250 ms, HAProxy checks every 500 ms and the LISTEN
// connection retries at least every second (driver/postgres tests that
// pacing exactly), so each takes about a second; the bounds are loose
// because this machine may be loaded far past its two cores, and what
// they catch is a process that does not follow the new primary by
// itself. The measured figures are in the REPORT line.
const (
	maxResume     = 15 * time.Second
	maxListenBack = 10 * time.Second
)

// wakeBound is the pickup a NOTIFY must beat. The probe's poll starts at
// 5 ms and doubles while claims come back empty: after wakeIdle its next
// claim is over 2 s away, so a job it had to find by polling would wait
// about that long. A NOTIFY takes tens of milliseconds, a few hundred on
// a machine loaded far past its cores.
const (
	wakeIdle  = 3 * time.Second
	wakeBound = time.Second
)

// wakeProbe is a sluice client that runs jobs of queue "wake" and records
// when each starts. Its poll backs off to a minute.
type wakeProbe struct {
	started chan time.Time
	// inserter is a driver of its own that inserts the probe's jobs.
	inserter driver.Driver
}

func newWakeProbe(t *testing.T, url, prefix string) *wakeProbe {
	d, err := dburl.Open(url, dburl.Options{Prefix: prefix})
	require.NoError(t, err)
	t.Cleanup(func() { d.Close() })
	ins, err := dburl.Open(url, dburl.Options{Prefix: prefix})
	require.NoError(t, err)
	t.Cleanup(func() { ins.Close() })
	w := &wakeProbe{started: make(chan time.Time, 16), inserter: ins}
	clienttest.Start(t, sluice.Config{Driver: d, PollMax: time.Minute, DisableMaintenance: true,
		Queues: map[string]sluice.QueueConfig{"wake": {Concurrency: 1}},
		Types: map[string]sluice.Type{"wake": {Queue: "wake", Handler: sluice.HandlerFunc(func(context.Context, *sluice.Job) error {
			w.started <- time.Now()
			return nil
		})}}})
	return w
}

// pickup lets the probe idle until its poll has backed off, inserts one
// job through another driver (so no in-process notification announces
// it), and returns how long the job took to start. The insert goes over a
// connection opened beforehand: a new one on the multi-host URL costs a
// try of every host before the primary, which is not pickup latency.
func (w *wakeProbe) pickup(t *testing.T, d driver.Driver) time.Duration {
	t.Helper()
	time.Sleep(wakeIdle)
	testdb.WaitFor(t, 30*time.Second, "the inserting connection", func() bool {
		_, err := d.Now(context.Background())
		return err == nil
	})
	at := time.Now()
	_, err := d.Insert(context.Background(), driver.InsertParams{Jobs: []driver.InsertJob{
		{Queue: "wake", Type: "wake", Dedupe: sluicetype.DedupePermanent, Payload: []byte("{}"), MaxAttempts: 1}}})
	require.NoError(t, err)
	select {
	case s := <-w.started:
		return s.Sub(at)
	case <-time.After(90 * time.Second):
		t.Fatal("a wake job did not start within 90s")
		return 0
	}
}

// fenceState is the lease a worker held on the old primary.
type fenceState struct {
	id       int64
	oldToken string
}

// fenceSetup plays a worker that holds a lease on the old primary: it
// claims a job of its own queue (no sluice process works it) with a lease
// that runs out during the failover, and waits until every replica has
// replayed the claim, so that the new primary knows this worker held it.
func fenceSetup(t *testing.T, c *cluster, d driver.Driver, primary *sql.DB) fenceState {
	t.Helper()
	ctx := context.Background()
	res, err := d.Insert(ctx, driver.InsertParams{Jobs: []driver.InsertJob{
		{Queue: "fence", Type: "work", Key: "fence", Dedupe: sluicetype.DedupePermanent, Payload: []byte("{}"), MaxAttempts: 5}}})
	require.NoError(t, err)
	f := fenceState{id: res[0].ID, oldToken: "held-on-old-primary"}
	jobs, err := d.Claim(ctx, driver.ClaimParams{Queue: "fence", Limit: 1, Lease: 8 * time.Second, Token: f.oldToken})
	require.NoError(t, err)
	require.Len(t, jobs, 1)
	require.Equal(t, f.id, jobs[0].ID)
	var lsn string
	require.NoError(t, primary.QueryRow("SELECT pg_current_wal_lsn()::text").Scan(&lsn))
	for _, n := range c.live() {
		db := c.open(n, "postgres")
		var inRecovery bool
		require.NoError(t, db.QueryRow("SELECT pg_is_in_recovery()").Scan(&inRecovery))
		if !inRecovery {
			continue
		}
		testdb.WaitFor(t, 2*time.Minute, n.name+" replayed the claim", func() bool {
			var ok bool
			return db.QueryRow("SELECT pg_last_wal_replay_lsn() >= $1::pg_lsn", lsn).Scan(&ok) == nil && ok
		})
	}
	return f
}

// fenceCheck waits for the maintenance leader to rescue the job whose
// lease expired during the failover, claims it as a new holder would, and
// checks that the old holder can neither renew nor complete it: its
// token is fenced out on the new primary. The new holder's completion
// then goes through.
func fenceCheck(t *testing.T, d driver.Driver, newDB *sql.DB, prefix string, f fenceState) {
	t.Helper()
	ctx := context.Background()
	testdb.WaitFor(t, 60*time.Second, "the fence job rescued on the new primary", func() bool {
		var status sluicetype.Status
		err := newDB.QueryRow("SELECT status FROM "+prefix+"jobs WHERE id = $1", f.id).Scan(&status)
		return err == nil && status == sluicetype.StatusPending
	})
	newToken := "held-on-new-primary"
	jobs, err := d.Claim(ctx, driver.ClaimParams{Queue: "fence", Limit: 1, Lease: time.Minute, Token: newToken})
	require.NoError(t, err)
	require.Len(t, jobs, 1)
	require.Equal(t, 2, jobs[0].Attempts, "the rescued job's second attempt")

	lost, err := d.Heartbeat(ctx, driver.HeartbeatParams{Token: f.oldToken, IDs: []int64{f.id}, Lease: time.Minute})
	require.NoError(t, err)
	require.Equal(t, []int64{f.id}, lost, "the old holder's heartbeat is fenced out")
	lost, err = d.Complete(ctx, driver.CompleteParams{Completions: []driver.Completion{{ID: f.id, Token: f.oldToken, Status: sluicetype.StatusSuccess}}})
	require.NoError(t, err)
	require.Equal(t, []int64{f.id}, lost, "the old holder's completion is fenced out")
	j, err := d.GetJob(ctx, f.id)
	require.NoError(t, err)
	require.Equal(t, sluicetype.StatusProcessing, j.Status)
	require.Equal(t, newToken, j.LockedBy)

	lost, err = d.Complete(ctx, driver.CompleteParams{Completions: []driver.Completion{{ID: f.id, Token: newToken, Status: sluicetype.StatusSuccess}}})
	require.NoError(t, err)
	require.Empty(t, lost)
	j, err = d.GetJob(ctx, f.id)
	require.NoError(t, err)
	require.Equal(t, sluicetype.StatusSuccess, j.Status)
}

// successKeys reads the keys of the jobs in success on one node.
func successKeys(t *testing.T, db *sql.DB, prefix string) map[string]bool {
	t.Helper()
	rows, err := db.Query("SELECT business_key FROM " + prefix + "jobs WHERE status = 'success' AND queue = 'default'")
	require.NoError(t, err)
	defer rows.Close()
	out := map[string]bool{}
	for rows.Next() {
		var k string
		require.NoError(t, rows.Scan(&k))
		out[k] = true
	}
	require.NoError(t, rows.Err())
	return out
}

type jobRow struct {
	id       int64
	key      string
	status   sluicetype.Status
	finished *time.Time
}

func allJobs(t *testing.T, db *sql.DB, prefix string) []jobRow {
	t.Helper()
	rows, err := db.Query("SELECT id, coalesce(business_key, ''), status, finished_at FROM " + prefix + "jobs WHERE queue = 'default'")
	require.NoError(t, err)
	defer rows.Close()
	var out []jobRow
	for rows.Next() {
		var r jobRow
		require.NoError(t, rows.Scan(&r.id, &r.key, &r.status, &r.finished))
		out = append(out, r)
	}
	require.NoError(t, rows.Err())
	return out
}

// firstFinished returns, per connection path, how long after the kill
// the first job finished on the new primary by that path's worker: its
// finished_at (the database clock, on this same machine) against the
// kill, attributed to a worker by the last run of it in the log. A
// failed read is an error, never an empty answer that the resume-time
// check would pass.
func firstFinished(db *sql.DB, prefix string, killAt time.Time, logPath string, pathOfPID map[int]string) (map[string]time.Duration, error) {
	rows, err := db.Query("SELECT business_key, finished_at FROM "+prefix+"jobs WHERE status = 'success' AND queue = 'default' AND finished_at > $1 ORDER BY finished_at LIMIT 500", killAt)
	if err != nil {
		return nil, fmt.Errorf("first jobs after the kill: %w", err)
	}
	defer rows.Close()
	lastPID := lastEndPIDs(logPath)
	out := map[string]time.Duration{}
	for rows.Next() {
		var key string
		var at time.Time
		if err := rows.Scan(&key, &at); err != nil {
			return nil, fmt.Errorf("first jobs after the kill: %w", err)
		}
		path := pathOfPID[lastPID[key]]
		if _, seen := out[path]; path != "" && !seen {
			out[path] = at.Sub(killAt)
		}
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("first jobs after the kill: %w", err)
	}
	return out, nil
}

// lastEndPIDs maps each job's key to the process of its last ended run,
// from the log as it is now (a line caught mid-write is skipped).
func lastEndPIDs(path string) map[string]int {
	b, _ := os.ReadFile(path)
	out := map[string]int{}
	for _, line := range bytes.Split(b, []byte("\n")) {
		var key string
		var attempt, pid int
		if n, _ := fmt.Sscanf(string(line), "end %s %d %d", &key, &attempt, &pid); n == 3 {
			out[key] = pid
		}
	}
	return out
}
