// Package crash kills real worker processes in the middle of a run and
// checks, from an execution log, that no job is lost and that only jobs the
// killed process held ran twice.
package crash

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/dburl"
	"github.com/sluicehq/sluice/driver"
	"github.com/sluicehq/sluice/internal/maintenance"
	"github.com/sluicehq/sluice/internal/proctest"
	"github.com/sluicehq/sluice/internal/testdb"
	"github.com/sluicehq/sluice/sluicetype"
)

// bin is the sluice binary, built once, for the variant that kills a
// `sluice work` as users run it.
var bin string

// TestMain turns the test binary into a worker process when asked to, so
// the crash test runs real processes of a Go handler without a separate
// program; otherwise it builds sluice and runs the tests.
func TestMain(m *testing.M) {
	if os.Getenv("CRASHTEST_WORKER") == "1" {
		os.Exit(workerMain())
	}
	testdb.MainWithBinary(m, &bin)
}

func workerMain() int {
	d, err := dburl.Open(os.Getenv("CRASHTEST_DB"), dburl.Options{Prefix: os.Getenv("CRASHTEST_PREFIX")})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	logf, err := os.OpenFile(os.Getenv("CRASHTEST_LOG"), os.O_APPEND|os.O_WRONLY|os.O_CREATE, 0o644)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	pid := os.Getpid()
	c, err := sluice.NewClient(sluice.Config{
		Driver:      d,
		Queues:      map[string]sluice.QueueConfig{"default": {Concurrency: 8}},
		RescueEvery: 300 * time.Millisecond,
		LeaderTTL:   2 * time.Second,
		// The lease bounds how long the killed worker's jobs wait for rescue.
		// It must also outlast a heartbeat stalled behind other processes'
		// writes, or a survivor's job is rescued and runs twice: with 2s,
		// SQLite under -race on a loaded 2-core machine did that.
		Types: map[string]sluice.Type{"work": {Lease: 5 * time.Second, Handler: sluice.HandlerFunc(func(ctx context.Context, j *sluice.Job) error {
			// One write per line: O_APPEND makes each line land whole.
			fmt.Fprintf(logf, "start %d %d %d\n", j.ID, j.Attempt, pid)
			// Long against a claim's round trip, so that a worker is between
			// claims with nothing in flight for a small share of the run: at
			// 15 ms, under -race on a slow 2-core machine, three kills in a
			// row hit a worker waiting for its next claim.
			time.Sleep(100 * time.Millisecond)
			fmt.Fprintf(logf, "end %d %d %d\n", j.ID, j.Attempt, pid)
			return nil
		})}},
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	ctx := context.Background()
	if err := c.Start(ctx); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, os.Interrupt)
	<-sig
	stop, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	c.Stop(stop)
	return 0
}

// startWorkers starts three worker processes on tg, each logging its runs
// to logPath.
type startWorkers func(t *testing.T, tg testdb.Target, logPath string) []*exec.Cmd

// workers is a way to start them, and whether the kill spares the
// maintenance leader: `sluice work` keeps the default 30 s leader lease,
// and a killed leader would hold up every rescue that long.
type workers struct {
	start       startWorkers
	spareLeader bool
}

// goWorkers are copies of the test binary running a Go handler.
func goWorkers(t *testing.T, tg testdb.Target, logPath string) []*exec.Cmd {
	var procs []*exec.Cmd
	for i := 0; i < 3; i++ {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), "CRASHTEST_WORKER=1", "CRASHTEST_DB="+tg.URL, "CRASHTEST_PREFIX="+tg.Prefix, "CRASHTEST_LOG="+logPath)
		cmd.Stderr = os.Stderr
		require.NoError(t, cmd.Start())
		procs = append(procs, cmd)
	}
	return procs
}

// commandWorkers are `sluice work` processes of the built binary, from a
// sluice.yaml whose type runs a shell command, as users deploy it. The
// command logs in proctest.LogScript's format with its worker's pid, which
// each worker passes down in $CRASHTEST_PID: a command started as its
// worker dies finds itself orphaned already, and its $PPID is 1.
func commandWorkers(t *testing.T, tg testdb.Target, logPath string) []*exec.Cmd {
	script := strings.ReplaceAll(proctest.LogScript(logPath, "SLUICE_JOB_ID", "0.1"), "$PPID", "$CRASHTEST_PID")
	cfg := proctest.WorkConfig(t, tg.URL, 8, script, "    lease: 5s", "")
	var procs []*exec.Cmd
	for i := 0; i < 3; i++ {
		// sh sets the pid it then execs sluice as: the pid the test sees.
		cmd := exec.Command("sh", "-c", `CRASHTEST_PID=$$ exec "$0" "$@"`, bin, "work", "--config", cfg)
		cmd.Env = append(os.Environ(), "SLUICE_PREFIX="+tg.Prefix)
		cmd.Stderr = os.Stderr
		require.NoError(t, cmd.Start())
		procs = append(procs, cmd)
	}
	return procs
}

func TestKillWorkerMidRun(t *testing.T) { testKill(t, workers{start: goWorkers}) }

// The same with the built `sluice work` running a command handler. The
// command runs in a process group of its own, which a SIGKILL of sluice
// does not reach: a job in flight may still end, unrecorded, and is run
// again once its lease expires, which the checks allow for a held job.
func TestKillSluiceWorkMidRun(t *testing.T) {
	testKill(t, workers{start: commandWorkers, spareLeader: true})
}

func testKill(t *testing.T, w workers) {
	for _, name := range testdb.Names {
		t.Run(name, func(t *testing.T) {
			// A kill that lands between jobs proves nothing about jobs in
			// flight, so a run whose kill hit none is tried again on a fresh
			// table, a bounded number of times.
			const attempts = 5
			for i := 1; ; i++ {
				d, tg := testdb.OpenURL(t, name)
				if runCrash(t, d, tg, w) {
					return
				}
				if i == attempts {
					t.Fatalf("in %d attempts the killed worker never had a job in flight at the kill", attempts)
				}
				t.Logf("attempt %d: the kill hit no job in flight; trying again", i)
			}
		})
	}
}

// runCrash runs three workers on a fresh queue, SIGKILLs one mid-run and
// checks the outcome. It reports false, having checked nothing, when the
// killed worker turns out to have had no job in flight at the kill.
func runCrash(t *testing.T, d driver.Driver, tg testdb.Target, w workers) bool {
	const jobs = 1000
	ctx := context.Background()
	proctest.Enqueue(t, d, "work", jobs)

	logPath := t.TempDir() + "/exec.log"
	procs := w.start(t, tg, logPath)
	defer func() {
		for _, p := range procs {
			if p.ProcessState == nil {
				p.Process.Kill()
				p.Wait()
			}
		}
	}()

	// Kill a worker once a fair share of the run is done, choosing one the
	// log shows running jobs. A job may still end before the signal lands;
	// the log, final for the victim once it is dead, tells afterwards.
	var victim *exec.Cmd
	t0 := time.Now()
	testdb.WaitFor(t, 60*time.Second, "a quarter of the jobs done and a worker running one", func() bool {
		runs := readLog(t, logPath, false)
		if runs.Ends < jobs/4 {
			return false
		}
		leader := ""
		if w.spareLeader {
			ls, err := d.ListLeases(ctx)
			require.NoError(t, err)
			for _, l := range ls {
				if l.Name == maintenance.LeaderLease {
					leader = l.Holder
				}
			}
		}
		for _, p := range procs {
			if strings.HasSuffix(leader, fmt.Sprintf(":%d", p.Process.Pid)) {
				continue
			}
			if len(runs.Unfinished(p.Process.Pid)) > 0 {
				victim = p
				return true
			}
		}
		return false
	})
	killedPID := victim.Process.Pid
	t.Logf("kill after %s", time.Since(t0))
	require.NoError(t, victim.Process.Signal(syscall.SIGKILL))
	victim.Wait()
	inFlight := readLog(t, logPath, false).Unfinished(killedPID)
	if len(inFlight) == 0 {
		return false
	}
	// The jobs the dead worker held stay processing, frozen, until their
	// leases expire: read them now. Lease tokens are per claim, so the log
	// says which are the dead worker's: those it started at that attempt.
	// (Jobs it had claimed but not started would run once, elsewhere.)
	processing, err := d.ListJobs(ctx, sluicetype.ListParams{Status: sluicetype.StatusProcessing, Limit: 1000})
	require.NoError(t, err)
	require.Less(t, len(processing), 1000, "processing rows fit in one page")
	atKill := readLog(t, logPath, false)
	held := map[int64]bool{}
	for _, j := range processing {
		for _, r := range atKill.Runs[j.ID] {
			if r.PID == killedPID && r.Attempt == j.Attempts {
				held[j.ID] = true
			}
		}
	}
	for _, id := range inFlight {
		require.True(t, held[id], "job %d, unfinished in the killed worker, is not processing at that attempt", id)
	}
	t.Logf("killed pid %d with %d jobs in flight, holding %d", killedPID, len(inFlight), len(held))

	testdb.WaitFor(t, 90*time.Second, "every job done", func() bool { return proctest.AllDone(d) })
	t.Logf("all done after %s", time.Since(t0))
	// The survivors stop cleanly: exit status 0 after SIGTERM (and, when
	// built with -race, no data race reported, which would exit 66).
	for _, p := range procs {
		if p == victim {
			continue
		}
		require.NoError(t, p.Process.Signal(syscall.SIGTERM))
		require.NoError(t, p.Wait(), "surviving worker %d after SIGTERM", p.Process.Pid)
	}

	// Every job succeeded.
	rows, err := d.ListJobs(ctx, sluicetype.ListParams{Status: sluicetype.StatusSuccess, Limit: 1000})
	require.NoError(t, err)
	require.Len(t, rows, jobs)

	// Only jobs the killed process held ran twice: their first run was
	// there, and it either never ended or ended without its outcome being
	// written before the kill.
	runs := readLog(t, logPath, true)
	require.Len(t, runs.Runs, jobs, "every job ran")
	unfinished, twice := 0, 0
	for id, rs := range runs.Runs {
		for _, r := range rs {
			if !r.Ended {
				unfinished++
				require.Equal(t, killedPID, r.PID, "job %d: run %v never ended, but only the killed process may leave one", id, r)
			}
		}
		if len(rs) > 1 {
			twice++
			require.Len(t, rs, 2, "job %d ran %d times: %v", id, len(rs), rs)
			require.Equal(t, killedPID, rs[0].PID, "job %d ran twice (%v) but its first run was not in the killed process %d", id, rs, killedPID)
			require.True(t, held[id], "job %d ran twice (%v) but the killed process did not hold it at the kill", id, rs)
		}
	}
	t.Logf("%s: %d jobs, killed pid %d: %d runs unfinished, %d jobs ran twice, of %d held", tg.Name, jobs, killedPID, unfinished, twice, len(held))
	return true
}

// readLog reads the log the workers write, in the format of
// proctest.LogScript.
func readLog(t *testing.T, path string, complete bool) *proctest.ExecLog[int64] {
	t.Helper()
	return proctest.ReadExecLog[int64](t, path, complete)
}
