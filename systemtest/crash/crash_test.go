// Package crash kills real worker processes in the middle of a run and
// checks, from an execution log, that no job is lost and that only jobs the
// killed process held ran twice.
package crash

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/dburl"
	"github.com/sluicehq/sluice/driver"
	"github.com/sluicehq/sluice/internal/maintenance"
	"github.com/sluicehq/sluice/internal/testkit/proctest"
	"github.com/sluicehq/sluice/internal/testkit/testdb"
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
	// commands: the workers run commandScript, and the kill waits for a
	// long job in flight.
	commands bool
	// jobs is how many jobs run: each command costs two processes more
	// than a Go handler's job.
	jobs int
}

// goWorkers are copies of the test binary running a Go handler.
func goWorkers(t *testing.T, tg testdb.Target, logPath string) []*exec.Cmd {
	var procs []*exec.Cmd
	for i := 0; i < 3; i++ {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), "CRASHTEST_WORKER=1", "CRASHTEST_DB="+tg.URL, "CRASHTEST_PREFIX="+tg.Prefix, "CRASHTEST_LOG="+logPath)
		cmd.Stderr = workerStderr(t, logPath, i)
		require.NoError(t, cmd.Start())
		procs = append(procs, cmd)
	}
	return procs
}

// commandWorkers are `sluice work` processes of the built binary, from a
// sluice.yaml whose type runs commandScript, as users deploy it.
func commandWorkers(t *testing.T, tg testdb.Target, logPath string) []*exec.Cmd {
	return startCommandWorkers(t, tg, logPath, "15", 3)
}

func startCommandWorkers(t *testing.T, tg testdb.Target, logPath, long string, n int, args ...string) []*exec.Cmd {
	cfg := proctest.WorkConfig(t, tg.URL, 8, commandScript(logPath, long),
		// Commands inherit none of sluice's environment: the worker's
		// config passes $CRASHTEST_PID on.
		"    lease: 5s\n    env: { CRASHTEST_PID: \"${CRASHTEST_PID}\" }", "")
	var procs []*exec.Cmd
	for i := 0; i < n; i++ {
		// sh sets the pid it then execs sluice as: the pid the test sees.
		cmd := exec.Command("sh", append([]string{"-c", `CRASHTEST_PID=$$ exec "$0" "$@"`, bin, "work", "--config", cfg}, args...)...)
		cmd.Env = append(os.Environ(), "SLUICE_PREFIX="+tg.Prefix)
		cmd.Stderr = workerStderr(t, logPath, i)
		require.NoError(t, cmd.Start())
		procs = append(procs, cmd)
	}
	return procs
}

// longJobs is how often a job is long: one in longJobs.
const longJobs = 50

// commandScript logs in proctest.LogScript's format, with its worker's
// pid, which each worker passes down in $CRASHTEST_PID (the same as
// $SLUICE_WORKER_PID, but also in the environment of every process the
// worker starts, supervisors included, where waitDescendantsGone looks). Most
// jobs take 0.1 s; one in longJobs takes long seconds: for a SIGKILL,
// longer than the 5 s lease, so that one left running by a dead worker
// would overlap its next run.
// Those also start two children that would outlive them, one in the
// command's process group and one that left it with setsid, and record
// their pids in logPath.children; and they trap SIGTERM and finish their
// item in 2 s, as a careful command does.
func commandScript(logPath, long string) string {
	return fmt.Sprintf(`log() { echo "$1 $SLUICE_JOB_ID $SLUICE_JOB_ATTEMPT $CRASHTEST_PID" >> %[1]s; }
log start
if [ $((SLUICE_JOB_ID %% %[2]d)) -ne 0 ]; then sleep 0.1; log end; exit 0; fi
sh -c 'echo $$ >> %[1]s.children; exec sleep 601' &
setsid sh -c 'echo $$ >> %[1]s.children; exec sleep 601' &
trap 'sleep 2; log end; exit 0' TERM
sleep %[3]s & wait $!
log end
`, logPath, longJobs, long)
}

func TestKillWorkerMidRun(t *testing.T) { testKill(t, workers{start: goWorkers, jobs: 1000}) }

// The same with the built `sluice work` running a command handler. A job
// in flight may have ended, unrecorded, just as its worker died, and is
// run again once its lease expires, which the checks allow for a held
// job; but the killed worker's commands die with it, children included,
// so no run of a job overlaps another (issue 35, item 5).
func TestKillSluiceWorkMidRun(t *testing.T) {
	testKill(t, workers{start: commandWorkers, spareLeader: true, commands: true, jobs: 300})
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
	jobs := w.jobs
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
			for _, id := range runs.Unfinished(p.Process.Pid) {
				if !w.commands || id%longJobs == 0 {
					victim = p
					return true
				}
			}
		}
		return false
	})
	killedPID := victim.Process.Pid
	t.Logf("kill after %s", time.Since(t0))
	require.NoError(t, victim.Process.Signal(syscall.SIGKILL))
	victim.Wait()
	// The jobs the dead worker held stay processing, frozen, until their
	// leases expire: read them now. Lease tokens are per claim, so the log
	// says which are the dead worker's: those it started at that attempt.
	// (Jobs it had claimed but not started would run once, elsewhere.)
	atDeath := readLog(t, logPath, false)
	processing, err := d.ListJobs(ctx, sluicetype.ListParams{Status: sluicetype.StatusProcessing, Limit: 1000})
	require.NoError(t, err)
	require.Less(t, len(processing), 1000, "processing rows fit in one page")
	// But the log is not final for the dead worker yet: a command it had
	// started may not have logged its start when it died, and does so
	// until its supervisor, told of the death by a signal, kills it (on a
	// loaded machine, after the reads above: CI saw a job run to its end
	// there, unseen by them, and run again after the rescue). So the log
	// is read once nothing the dead worker started is left.
	if w.commands {
		waitDescendantsGone(t, killedPID)
	}
	atKill := readLog(t, logPath, false)
	late := 0
	for _, rs := range atKill.Runs {
		for _, r := range rs {
			if r.PID == killedPID && r.Line > atDeath.Lines {
				late++
			}
		}
	}
	inFlight := atKill.Unfinished(killedPID)
	if len(inFlight) == 0 {
		return false
	}
	held := map[int64]bool{}
	for _, j := range processing {
		for _, r := range atKill.Runs[j.ID] {
			if r.PID == killedPID && r.Attempt == j.Attempts {
				held[j.ID] = true
			}
		}
	}
	// A worker may lose a lease while it runs (on a machine loaded far
	// beyond its two cores, a heartbeat can miss its deadlines): it stops
	// the handler and logs the loss, and the job runs again. Such a run is
	// told apart from a bug by that log line, of its own worker.
	lost := map[int]map[runKey]bool{}
	for i, p := range procs {
		lost[p.Process.Pid] = lostLeases(t, workerStderrPath(logPath, i))
	}
	for id, rs := range atKill.Runs {
		for _, r := range rs {
			if r.PID == killedPID && !r.Ended {
				require.True(t, held[id] || lost[r.PID][runKey{id, r.Attempt}], "job %d, unfinished in the killed worker at attempt %d, is not processing at that attempt, and its lease was not lost", id, r.Attempt)
			}
		}
	}
	t.Logf("killed pid %d with %d jobs in flight, holding %d; %d of its runs logged their start after its death", killedPID, len(inFlight), len(held), late)

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
	// written before the kill. A run whose worker logged that it lost the
	// lease may be followed by another too (but never overlap it, below).
	for i, p := range procs {
		lost[p.Process.Pid] = lostLeases(t, workerStderrPath(logPath, i))
	}
	runs := readLog(t, logPath, true)
	require.Len(t, runs.Runs, jobs, "every job ran")
	unfinished, twice, afterLoss := 0, 0, 0
	for id, rs := range runs.Runs {
		for _, r := range rs {
			if !r.Ended {
				// A lost lease stops the handler, which may end the
				// command before it logs its end.
				unfinished++
				require.True(t, r.PID == killedPID || lost[r.PID][runKey{id, r.Attempt}], "job %d: run %v never ended, but only the killed process, or a worker that lost the lease, may leave one", id, r)
			}
		}
		if len(rs) > 1 {
			twice++
		}
		for i, r := range rs[:len(rs)-1] {
			if lost[r.PID][runKey{id, r.Attempt}] {
				afterLoss++
				continue
			}
			require.True(t, i == 0 && r.PID == killedPID, "job %d ran %d times (%v): run %v was not in the killed process %d, nor did its worker lose its lease", id, len(rs), rs, r, killedPID)
			require.True(t, held[id], "job %d ran twice (%v) but the killed process did not hold it at the kill", id, rs)
		}
	}
	t.Logf("%s: %d jobs, killed pid %d: %d runs unfinished, %d jobs ran more than once, of %d held; %d runs followed a logged lease loss", tg.Name, jobs, killedPID, unfinished, twice, len(held), afterLoss)
	if w.commands {
		checkNoOverlapNoOrphan(t, runs, logPath)
	}
	return true
}

// checkNoOverlapNoOrphan asserts that no two runs of a job overlapped in
// time, as the log orders them, and that no child a command started is
// still running once the workers are gone.
func checkNoOverlapNoOrphan(t *testing.T, runs *proctest.ExecLog[int64], logPath string) {
	t.Helper()
	overlaps := runs.Overlaps()
	children := readChildren(t, logPath)
	var alive []int
	for _, pid := range children {
		if isSleeper(pid) {
			alive = append(alive, pid)
		}
	}
	t.Logf("%d jobs ran overlapping; %d of %d children outlived their commands", len(overlaps), len(alive), len(children))
	require.Empty(t, overlaps, "runs of a job overlapped")
	require.Positive(t, len(children), "the long jobs started their children")
	require.Empty(t, alive, "children outlived their commands")
}

// workerStderrPath is where worker i of a run logs.
func workerStderrPath(logPath string, i int) string {
	return fmt.Sprintf("%s.worker%d", logPath, i)
}

// workerStderr creates worker i's log, which the test reads for lost
// leases, and copies it to the test's output if the test fails.
func workerStderr(t *testing.T, logPath string, i int) *os.File {
	f, err := os.Create(workerStderrPath(logPath, i))
	require.NoError(t, err)
	t.Cleanup(func() {
		f.Close()
		if t.Failed() {
			b, _ := os.ReadFile(f.Name())
			fmt.Fprintf(os.Stderr, "--- worker %d of %s:\n%s", i, logPath, b)
		}
	})
	return f
}

// runKey is a job's attempt.
type runKey struct {
	job     int64
	attempt int
}

// lostLease matches the worker's line for a lease it lost (internal/worker
// leaseLost), in slog's text format and in the default logger's.
var lostLease = regexp.MustCompile(`job lease lost; its outcome will be dropped"? job_id=(\d+) .*?attempt=(\d+) `)

// lostLeases reads the attempts whose lease a worker logged as lost.
func lostLeases(t *testing.T, path string) map[runKey]bool {
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	out := map[runKey]bool{}
	for _, m := range lostLease.FindAllSubmatch(b, -1) {
		id, err := strconv.ParseInt(string(m[1]), 10, 64)
		require.NoError(t, err)
		attempt, err := strconv.Atoi(string(m[2]))
		require.NoError(t, err)
		out[runKey{id, attempt}] = true
	}
	return out
}

// waitDescendantsGone waits until no process that the worker pid started
// is left, known by the $CRASHTEST_PID every one of them inherits.
func waitDescendantsGone(t *testing.T, pid int) {
	t.Helper()
	mark := []byte(fmt.Sprintf("\x00CRASHTEST_PID=%d\x00", pid))
	testdb.WaitFor(t, 30*time.Second, fmt.Sprintf("no process the killed worker %d started left", pid), func() bool {
		procs, err := os.ReadDir("/proc")
		require.NoError(t, err)
		for _, p := range procs {
			if _, err := strconv.Atoi(p.Name()); err != nil {
				continue
			}
			// A zombie's environment reads empty; a process gone
			// meanwhile, as an error.
			env, err := os.ReadFile("/proc/" + p.Name() + "/environ")
			if err == nil && bytes.Contains(append([]byte{0}, env...), mark) {
				return false
			}
		}
		return true
	})
}

// readChildren reads the pids commandScript's long jobs record, and makes
// sure none outlives the test.
func readChildren(t *testing.T, logPath string) []int {
	b, err := os.ReadFile(logPath + ".children")
	if os.IsNotExist(err) {
		return nil
	}
	require.NoError(t, err)
	var pids []int
	for _, f := range strings.Fields(string(b)) {
		pid, err := strconv.Atoi(f)
		require.NoError(t, err)
		pids = append(pids, pid)
	}
	t.Cleanup(func() {
		for _, pid := range pids {
			if isSleeper(pid) {
				syscall.Kill(pid, syscall.SIGKILL)
			}
		}
	})
	return pids
}

// isSleeper reports whether pid runs commandScript's child, `sleep 601`,
// and not some later process that was given the same pid.
func isSleeper(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil || string(b) != "sleep\x00601\x00" {
		return false
	}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	_, after, _ := strings.Cut(string(stat), ") ")
	return err == nil && !strings.HasPrefix(after, "Z")
}

// TestTermSluiceWorkMidRun stops a `sluice work` with SIGTERM while it
// runs long commands that trap SIGTERM and take 2 s to finish their item,
// past the shutdown deadline and the worker's grace: the command either
// finishes and its exit 0 is recorded, or dies with its worker. No run
// overlaps another, no exit 0 is lost, no child outlives its worker
// (issue 35, item 6).
func TestTermSluiceWorkMidRun(t *testing.T) {
	for _, name := range testdb.Names {
		t.Run(name, func(t *testing.T) {
			const jobs = 2 * longJobs
			d, tg := testdb.OpenURL(t, name)
			proctest.Enqueue(t, d, "work", jobs)
			logPath := t.TempDir() + "/exec.log"
			procs := startCommandWorkers(t, tg, logPath, "5", 2, "--shutdown-timeout", "1s")
			defer func() {
				for _, p := range procs {
					if p.ProcessState == nil {
						p.Process.Kill()
						p.Wait()
					}
				}
			}()
			var victim *exec.Cmd
			testdb.WaitFor(t, 60*time.Second, "a worker running a long job", func() bool {
				runs := readLog(t, logPath, false)
				for _, p := range procs {
					for _, id := range runs.Unfinished(p.Process.Pid) {
						if id%longJobs == 0 {
							victim = p
							return true
						}
					}
				}
				return false
			})
			require.NoError(t, victim.Process.Signal(syscall.SIGTERM))
			require.NoError(t, victim.Wait(), "sluice work exits 0 on SIGTERM")
			testdb.WaitFor(t, 90*time.Second, "every job done", func() bool { return proctest.AllDone(d) })
			for _, p := range procs {
				if p != victim {
					require.NoError(t, p.Process.Signal(syscall.SIGTERM))
					require.NoError(t, p.Wait())
				}
			}
			runs := readLog(t, logPath, true)
			checkNoOverlapNoOrphan(t, runs, logPath)
			proctest.CheckAllSucceeded(t, d, runs, jobs)
			// A run that ended, with exit 0, was the job's last: its
			// outcome was recorded, not discarded and run again.
			for id, rs := range runs.Runs {
				for _, r := range rs[:len(rs)-1] {
					require.False(t, r.Ended, "job %d: run %v exited 0 but the job ran again: %v", id, r, rs)
				}
			}
		})
	}
}

// readLog reads the log the workers write, in the format of
// proctest.LogScript.
func readLog(t *testing.T, path string, complete bool) *proctest.ExecLog[int64] {
	t.Helper()
	return proctest.ReadExecLog[int64](t, path, complete)
}
