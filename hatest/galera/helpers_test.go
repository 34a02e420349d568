package galera

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/dburl"
	"github.com/sluicehq/sluice/driver"
	"github.com/sluicehq/sluice/internal/testdb"
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
	r := run(t, tg.env, "migrate", "--config", dbConfig(t, c.nodes[0].URL(), ""))
	require.Equal(t, 0, r.code, r.stderr)
	for _, nd := range c.nodes {
		d, err := dburl.Open(nd.URL(), dburl.Options{Prefix: tg.prefix})
		require.NoError(t, err)
		tg.drv = append(tg.drv, d)
	}
	t.Cleanup(func() {
		testdb.Drop(tg.drv[0], tg.prefix)
		for _, d := range tg.drv {
			d.Close()
		}
	})
	return tg
}

// dbConfig writes a config file naming its database with db: url,
// followed by body, and returns its path.
func dbConfig(t *testing.T, url, body string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "sluice.yaml")
	require.NoError(t, os.WriteFile(path, []byte(fmt.Sprintf("db: %q\n%s", url, body)), 0o644))
	return path
}

type result struct {
	code           int
	stdout, stderr string
}

// sluiceEnv blanks the variables that would win over a test's config.
func sluiceEnv(env []string) []string {
	return append(append(os.Environ(), "SLUICE_DB=", "SLUICE_PREFIX=", "SLUICE_CONFIG="), env...)
}

func run(t *testing.T, env []string, args ...string) result {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Env = sluiceEnv(env)
	var so, se bytes.Buffer
	cmd.Stdout, cmd.Stderr = &so, &se
	err := cmd.Run()
	code := 0
	if err != nil {
		ee, ok := err.(*exec.ExitError)
		require.True(t, ok, "run %v: %v", args, err)
		code = ee.ExitCode()
	}
	return result{code, so.String(), se.String()}
}

// proc is a running `sluice work` with its stderr captured.
type proc struct {
	cmd  *exec.Cmd
	errb testdb.SyncBuffer
	done chan struct{}
	err  error
}

func (p *proc) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

func startWork(t *testing.T, env []string, args ...string) *proc {
	t.Helper()
	p := &proc{done: make(chan struct{})}
	p.cmd = exec.Command(bin, append([]string{"work"}, args...)...)
	p.cmd.Env = sluiceEnv(env)
	p.cmd.Stderr = &p.errb
	require.NoError(t, p.cmd.Start())
	go func() { p.err = p.cmd.Wait(); close(p.done) }()
	t.Cleanup(func() {
		if !p.exited() {
			p.cmd.Process.Kill()
			<-p.done
		}
		if t.Failed() {
			t.Logf("work pid %d stderr (tail):\n%s", p.cmd.Process.Pid, tail(p.errb.String(), 3000))
		}
	})
	return p
}

// term sends SIGTERM and waits for the exit.
func (p *proc) term(t *testing.T, limit time.Duration) error {
	t.Helper()
	require.NoError(t, p.cmd.Process.Signal(syscall.SIGTERM))
	select {
	case <-p.done:
		return p.err
	case <-time.After(limit):
		t.Fatalf("sluice work pid %d did not exit within %s of SIGTERM", p.cmd.Process.Pid, limit)
		return nil
	}
}

func tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}

// logScript is a command handler that writes "start ID ATTEMPT PID" and
// "end ID ATTEMPT PID" lines around a sleep. $PPID is the sluice process
// (the argv runs without a shell in between), so a line says which worker
// ran it. Each echo is one short O_APPEND write, so lines land whole.
func logScript(logPath, sleep string) string {
	return fmt.Sprintf(`echo "start $SLUICE_JOB_ID $SLUICE_JOB_ATTEMPT $PPID" >> %[1]s; sleep %[2]s; echo "end $SLUICE_JOB_ID $SLUICE_JOB_ATTEMPT $PPID" >> %[1]s`, logPath, sleep)
}

// workConfig writes a config on the database at url with a "work" command
// type built by logScript, and returns it and the execution log's path.
func workConfig(t *testing.T, url, logPath string, concurrency int, extra string) string {
	t.Helper()
	return dbConfig(t, url, fmt.Sprintf(`queues:
  default: { concurrency: %d }
types:
  work:
    command: ["sh", "-c", %q]
    timeout: 60s
    lease: 15s
    backoff: { base: 100ms, max: 1s }
%s`, concurrency, logScript(logPath, "0.01"), extra))
}

func enqueue(t *testing.T, d driver.Driver, typ string, n int) {
	t.Helper()
	c, err := sluice.NewClient(sluice.Config{Driver: d})
	require.NoError(t, err)
	ps := make([]sluice.EnqueueParams, n)
	for i := range ps {
		ps[i] = sluice.EnqueueParams{Type: typ, Key: fmt.Sprintf("%s-%d", typ, i)}
	}
	_, err = c.EnqueueMany(context.Background(), ps)
	require.NoError(t, err)
}

// allDone reports whether no job of type typ is pending or processing.
// Errors count as not done: the node may be down at that moment.
func allDone(d driver.Driver, typ string) bool {
	ctx, cancel := ctxT(5 * time.Second)
	defer cancel()
	for _, st := range []driver.Status{driver.StatusPending, driver.StatusProcessing} {
		rows, err := d.ListJobs(ctx, driver.ListParams{Status: st, Type: typ, Limit: 1})
		if err != nil || len(rows) > 0 {
			return false
		}
	}
	return true
}

// execRun is one run of a job as the execution log saw it.
type execRun struct {
	attempt, pid int
	ended        bool
	line         int // line number of the start
}

type execLog struct {
	runs  map[int64][]*execRun
	lines int
	ends  int
}

// readLog reads the execution log. While workers run, the last line may
// be caught mid-write and is skipped; once they are stopped (complete),
// every line must parse.
func readLog(t *testing.T, path string, complete bool) *execLog {
	t.Helper()
	l := &execLog{runs: map[int64][]*execRun{}}
	f, err := os.Open(path)
	if os.IsNotExist(err) && !complete {
		return l
	}
	require.NoError(t, err)
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var kind string
		var id int64
		var attempt, pid int
		if _, err := fmt.Sscanf(sc.Text(), "%s %d %d %d", &kind, &id, &attempt, &pid); err != nil {
			require.False(t, complete, "log line %q: %v", sc.Text(), err)
			continue
		}
		l.lines++
		switch kind {
		case "start":
			l.runs[id] = append(l.runs[id], &execRun{attempt: attempt, pid: pid, line: l.lines})
		case "end":
			l.ends++
			for _, r := range l.runs[id] {
				if r.attempt == attempt && r.pid == pid && !r.ended {
					r.ended = true
					break
				}
			}
		}
	}
	return l
}

// checkAllSucceeded asserts that all n jobs are in success and that each
// ran (per the log) and ended at least once; it returns the ids that ran
// more than once.
func checkAllSucceeded(t *testing.T, d driver.Driver, l *execLog, n int) (dups []int64) {
	t.Helper()
	by := testdb.JobsByStatus(t, d, driver.ListParams{Type: "work"})
	require.Len(t, by[driver.StatusSuccess], n, "every job ends in success (others: %d pending, %d processing, %d failed)",
		len(by[driver.StatusPending]), len(by[driver.StatusProcessing]), len(by[driver.StatusFailed]))
	lost := 0
	for _, j := range by[driver.StatusSuccess] {
		runs := l.runs[j.ID]
		if len(runs) == 0 {
			lost++
			continue
		}
		ended := 0
		for _, r := range runs {
			if r.ended {
				ended++
			}
		}
		require.GreaterOrEqual(t, ended, 1, "job %d is success but no run of it ended: %+v", j.ID, runs)
		if len(runs) > 1 {
			dups = append(dups, j.ID)
		}
	}
	require.Zero(t, lost, "jobs in success that never ran")
	require.Len(t, l.runs, n, "the log has runs of exactly the enqueued jobs")
	return dups
}

// figures is one scenario's row of the report's table.
type figures struct {
	topology, fault   string
	jobs, dups, bound int
	lost, ackLost     int
	recovery          time.Duration
}

// report logs a scenario's figures in the shape of the README's table.
func report(t *testing.T, f figures) {
	rec := "-"
	if f.recovery > 0 {
		rec = f.recovery.Round(time.Millisecond).String()
	}
	t.Logf("| %s | %s | %d | %d (bound %d) | %d | %d | %s |", f.topology, f.fault, f.jobs, f.dups, f.bound, f.lost, f.ackLost, rec)
}
