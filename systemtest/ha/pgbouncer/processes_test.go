package pgbouncer_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/dburl"
	"github.com/sluicehq/sluice/driver"
	"github.com/sluicehq/sluice/internal/testkit/proctest"
	"github.com/sluicehq/sluice/internal/testkit/testdb"
	"github.com/sluicehq/sluice/sluicetype"
)

// Real `sluice migrate`, `work`, `serve`, `enqueue` and `run` processes,
// configured through sluice.yaml as users do (db: through pgbouncer with
// ?pooler=transaction, listen_db: direct), share one set of tables:
//
//   - wake-ups arrive through listen_db: both listeners passed their
//     check, a notification sent through the pooler and received direct;
//   - a second `work` without listen_db probes instead, and works too;
//   - concurrent `enqueue`s of the same keys dedupe to one job each;
//   - every job runs exactly once, by the execution log, whichever process
//     (work, serve, a bounded `sluice run`) claimed it, but for jobs a run
//     pass cut short at its deadline and requeued (none, unless the
//     machine is very slow);
//   - each schedule slot fires once across the three processes.
func TestProcessesThroughPooler(t *testing.T) {
	t.Parallel()
	b := startBouncer(t)
	dir := t.TempDir()
	logPath := filepath.Join(dir, "exec.log")
	addr := testdb.FreeAddr(t)
	// The schedule's jobs have a queue of their own, so that its slots
	// never reset the default queue's idle poll back-off.
	body := fmt.Sprintf(`queues:
  default: { concurrency: 8 }
  cron: { concurrency: 2 }
types:
  work:
    command: ["sh", "-c", "echo \"$SLUICE_JOB_ID $SLUICE_JOB_TYPE $SLUICE_WORKER_PID $SLUICE_JOB_ATTEMPT\" >> %[1]s"]
    timeout: 60s
    backoff: { base: 100ms, max: 1s }
  tick:
    queue: cron
    command: ["sh", "-c", "echo \"$SLUICE_JOB_ID $SLUICE_JOB_TYPE $SLUICE_WORKER_PID $SLUICE_JOB_ATTEMPT $SLUICE_JOB_KEY\" >> %[1]s"]
schedules:
  every-second: { cron: "@every 1s", type: tick }
`, logPath)
	listening := filepath.Join(dir, "sluice.yaml")
	require.NoError(t, os.WriteFile(listening, []byte(fmt.Sprintf("db: %s\nlisten_db: %s\nlisten: %s\n%s", b.pooled, b.direct, addr, body)), 0o644))
	probing := filepath.Join(dir, "probing.yaml")
	require.NoError(t, os.WriteFile(probing, []byte(fmt.Sprintf("db: %s\n%s", b.pooled, body)), 0o644))

	prefix := testdb.Prefix()
	t.Cleanup(func() { b.drop(prefix) })
	env := func(cfg string) []string { return []string{"SLUICE_PREFIX=" + prefix, "SLUICE_CONFIG=" + cfg} }
	before := b.transactions(t)

	require.Contains(t, runSluice(t, env(listening), "", "migrate"), "schema version")
	// The test's own view of the tables, direct.
	d, err := dburl.Open(b.direct, dburl.Options{Prefix: prefix})
	require.NoError(t, err)
	defer d.Close()

	work := startSluice(t, env(listening), "work")
	serve := startSluice(t, env(listening), "serve")
	testdb.WaitFor(t, 30*time.Second, "serve answers /healthz", func() bool { return proctest.Healthy("http://" + addr) })
	// Both listeners are on the server directly (through the pooler their
	// LISTEN session would go to other clients) and passed their check.
	testdb.WaitFor(t, 15*time.Second, "two LISTEN sessions on the server", func() bool { return listeners(t, d, prefix) == 2 })

	// Wake-ups. The check each listener made before the count above was
	// itself a notification sent through the pooled URL and received on
	// its direct one; here jobs enqueued by another process start on the
	// idle, non-probing workers. The pickup times are reported, and bounded
	// only loosely: on a loaded machine they overlap the idle poll's.
	var lat []time.Duration
	for i := range 5 {
		time.Sleep(1200 * time.Millisecond) // let the poll back off
		runSluice(t, env(listening), "", "enqueue", "work", "--key", fmt.Sprintf("wake-%d", i))
		sent := time.Now()
		n := len(readExec(t, logPath))
		testdb.WaitFor(t, 5*time.Second, "the woken job runs", func() bool { return len(readExec(t, logPath)) > n })
		lat = append(lat, time.Since(sent))
	}
	slices.Sort(lat)
	t.Logf("pickup after enqueue on idle listening workers: %v (median %v)", lat, lat[2])
	require.Less(t, lat[2], time.Second, "the median pickup should be below the idle poll's second")

	probe := startSluice(t, env(probing), "work")

	// Three enqueuers race over the same keys: each key makes one job.
	const n = 300
	var ndjson strings.Builder
	for i := range n {
		fmt.Fprintf(&ndjson, `{"type":"work","key":"job-%d"}`+"\n", i)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	inserted := 0
	for range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var r struct{ Inserted, Duplicates int }
			require.NoError(t, json.Unmarshal([]byte(runSluice(t, env(listening), ndjson.String(), "enqueue", "--ndjson", "-")), &r))
			require.Equal(t, n, r.Inserted+r.Duplicates)
			mu.Lock()
			inserted += r.Inserted
			mu.Unlock()
		}()
	}
	// Bounded passes run beside the workers, as cron would start them. A
	// pass requeues what it has not finished by its deadline, and such a
	// job may run again: the log check below allows that many duplicates,
	// each first run by a pass.
	requeued := 0
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var r struct {
				OK       bool
				Requeued int
			}
			out, stderr := runSluiceErr(t, env(listening), "", "run", "--max-jobs", "30", "--max-seconds", "20")
			if strings.Contains(stderr, "level=WARN") || strings.Contains(stderr, "level=ERROR") {
				t.Logf("sluice run stderr:\n%s", stderr)
			}
			require.NoError(t, json.Unmarshal([]byte(out), &r))
			require.True(t, r.OK)
			t.Logf("sluice run: %s", strings.TrimSpace(out))
			mu.Lock()
			requeued += r.Requeued
			mu.Unlock()
		}()
	}
	wg.Wait()
	require.Equal(t, n, inserted, "concurrent enqueues of the same keys made one job per key")

	testdb.WaitFor(t, 60*time.Second, "every job is done", func() bool { return proctest.AllDone(d) })
	// Let the schedule run a few more slots, then stop everything.
	time.Sleep(2 * time.Second)
	for _, p := range []*proctest.Proc{work, serve, probe} {
		require.NoError(t, p.Cmd.Process.Signal(syscall.SIGTERM))
	}
	for _, p := range []*proctest.Proc{work, serve, probe} {
		select {
		case <-p.Done():
			require.NoError(t, p.Err(), "clean exit; stderr: %s", proctest.Tail(p.Stderr(), 2000))
		case <-time.After(30 * time.Second):
			t.Fatal("a sluice process did not exit within 30s of SIGTERM")
		}
		require.NotContains(t, p.Stderr(), "prepared statement")
	}
	// Stopping cancels in-flight queries; pgx's cancel requests used to
	// crash PgBouncer 1.18 here (see driver/postgres dropCancelRequests).
	time.Sleep(500 * time.Millisecond)
	b.requireAlive(t)

	// The execution log against the table: every job that exists ran
	// exactly once, and nothing ran that is not a job.
	runs := readExec(t, logPath)
	ran := map[int64]int{}
	pids := map[string]bool{}
	for _, r := range runs {
		ran[r.id]++
		pids[r.pid] = true
	}
	// Each slot ran once by the log, whichever process fired or ran it.
	slotRuns := map[string][]execRun{}
	for _, r := range runs {
		if r.typ == "tick" {
			slotRuns[r.key] = append(slotRuns[r.key], r)
		}
	}
	for key, rs := range slotRuns {
		require.Len(t, rs, 1, "slot %s ran %d times: %v", key, len(rs), rs)
	}
	rows := testdb.AllJobs(t, d, sluicetype.ListParams{})
	byType := map[string]int{}
	workers := map[string]bool{fmt.Sprint(work.Pid()): true, fmt.Sprint(serve.Pid()): true, fmt.Sprint(probe.Pid()): true}
	dups := 0
	for _, j := range rows {
		if j.Type == "tick" && j.Status == sluicetype.StatusPending {
			// A slot enqueued as the processes stopped: not run, and not lost.
			require.Zero(t, ran[j.ID])
			continue
		}
		require.Equal(t, sluicetype.StatusSuccess, j.Status, "job %d (%s)", j.ID, j.Type)
		if rs := runsOf(runs, j.ID); len(rs) == 2 && !workers[rs[0].pid] {
			t.Logf("job %d ran twice, first in a run pass that requeued it at its deadline: %v", j.ID, rs)
			dups++
			byType[j.Type]++
			continue
		}
		require.Equal(t, 1, ran[j.ID], "job %d (%s %q, %d attempts) ran %d times: %v; processes: work %d, serve %d, probing work %d",
			j.ID, j.Type, j.Key, j.Attempts, ran[j.ID], runsOf(runs, j.ID), work.Pid(), serve.Pid(), probe.Pid())
		byType[j.Type]++
	}
	require.LessOrEqual(t, dups, requeued, "a job ran twice only if a run pass requeued it")
	for id := range ran {
		require.True(t, slices.ContainsFunc(rows, func(j sluicetype.JobRow) bool { return j.ID == id }), "the log names job %d, which is not in the table", id)
	}
	require.Equal(t, n+5, byType["work"])
	require.GreaterOrEqual(t, byType["tick"], 5, "the every-second schedule fired for most of the run")
	t.Logf("%d jobs (%d work, %d schedule slots; %d requeued by a run pass and run again) ran across %d processes; pgbouncer pooled %d transactions on %d server connections",
		len(rows), byType["work"], byType["tick"], dups, len(pids), b.transactions(t)-before, poolSize)
	require.GreaterOrEqual(t, len(pids), 3, "work, serve and the probing work (and any run) shared the jobs")
}

// listeners counts the server sessions listening on prefix's channel
// through a listen URL: the last statement such a session sends, once its
// check notification came through the pooled URL, ends the check.
func listeners(t *testing.T, d driver.Driver, prefix string) int {
	t.Helper()
	var n int
	err := d.DB().QueryRow(`SELECT count(*) FROM pg_stat_activity WHERE query = $1`, `UNLISTEN "`+prefix+`jobs_check"`).Scan(&n)
	require.NoError(t, err)
	return n
}

type execRun struct {
	id      int64
	typ     string
	pid     string
	attempt int
	key     string // schedule slots only
}

func runsOf(runs []execRun, id int64) []execRun {
	var out []execRun
	for _, r := range runs {
		if r.id == id {
			out = append(out, r)
		}
	}
	return out
}

// readExec reads the execution log: one "ID TYPE PID ATTEMPT [KEY]" line
// per run.
func readExec(t *testing.T, path string) []execRun {
	t.Helper()
	data, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return nil
	}
	require.NoError(t, err)
	var out []execRun
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		if line == "" {
			continue
		}
		var r execRun
		f := strings.Fields(line)
		require.Contains(t, []int{4, 5}, len(f), "log line %q", line)
		_, err := fmt.Sscanf(strings.Join(f[:4], " "), "%d %s %s %d", &r.id, &r.typ, &r.pid, &r.attempt)
		require.NoError(t, err, "log line %q", line)
		if len(f) == 5 {
			r.key = f[4]
		}
		out = append(out, r)
	}
	return out
}
