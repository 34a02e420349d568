package fault

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/internal/testkit/proctest"
	"github.com/sluicehq/sluice/internal/testkit/testdb"
	"github.com/sluicehq/sluice/sluicetype"
)

// SIGTERM under heavy load: two `sluice work` processes with 20 slow
// command jobs running each get SIGTERM mid-run with a 1 s shutdown
// deadline. Both exit 0 in time, no job is left processing under a live
// lease, interrupted jobs are back to pending without a charged attempt,
// and a new process finishes everything: every job ends with attempts = 1
// and exactly one finished run. The shared servers are fine here: this
// fault happens to sluice, not to the database.
func TestSIGTERMUnderLoad(t *testing.T) {
	const (
		// 16 of them take 3 s: enough that the SIGTERM at a tenth of the
		// run cuts some.
		jobs = 800
		// The 1 s --shutdown-timeout below and the handlers' 1 s grace
		// (worker.Config.Grace).
		shutdownPromise = time.Second + time.Second
		shutdownSlack   = 10 * time.Second
	)
	// In parallel: the jobs sleep; three databases at once fit two cores.
	testdb.ForEach(t, func(t *testing.T, name string) {
		d, tg := testdb.OpenURL(t, name)
		env := []string{"SLUICE_PREFIX=" + tg.Prefix}
		// 20 to 100 ms per job by id, and 3 s for one job in 50, longer
		// than the shutdown deadline, so that some runs are cut.
		cfg, logPath := writeConfig(t, tg.URL, 20, "$(( SLUICE_JOB_ID % 50 == 0 ? 3 : 0 )).0$(( SLUICE_JOB_ID % 5 * 2 + 2 ))", "", "")
		proctest.Enqueue(t, d, "work", jobs)
		var procs []*proc
		for i := 0; i < 2; i++ {
			procs = append(procs, startWork(t, env, "--config", cfg, "--shutdown-timeout", "1s"))
		}
		// Busy enough: the workers run at full concurrency from the first
		// claims; the count only says the run is well under way. A wait
		// for a state, not a judgement of speed (a loaded CI machine took
		// 3-8 s for these 20-100 ms jobs).
		testdb.WaitFor(t, 3*time.Minute, "a tenth of the jobs done", func() bool { return proctest.CountEnds(logPath) >= jobs/10 })
		killed := map[int]bool{}
		for _, p := range procs {
			killed[p.Pid()] = true
			took, err := p.term(t, 15*time.Second)
			require.NoError(t, err, "sluice work exits 0 on SIGTERM")
			// The product's promise (docs/guarantees.md "Graceful
			// shutdown"): running jobs get the --shutdown-timeout
			// deadline, then the handlers' grace, then go back to pending.
			// The requeue and the exit that follow are database writes,
			// for which nothing promises a time: shutdownSlack is the
			// test's allowance for them on a machine running three
			// databases' tests at once, not a product figure.
			require.Less(t, took, shutdownPromise+shutdownSlack, "shutdown took %s (promised %s, plus the requeue)", took, shutdownPromise)
		}

		by := testdb.JobsByStatus(t, d, sluicetype.ListParams{})
		require.Empty(t, by[sluicetype.StatusProcessing], "no job left processing after the processes exited")
		require.Empty(t, by[sluicetype.StatusFailed])
		for _, j := range by[sluicetype.StatusPending] {
			require.Empty(t, j.LockedBy, "job %d pending with a lease", j.ID)
			require.Zero(t, j.Attempts, "job %d: an attempt cut by shutdown is not charged", j.ID)
		}
		require.NotEmpty(t, by[sluicetype.StatusPending], "the SIGTERM came mid-run")
		// Read after the exit: every cut run is in the log by now.
		l := proctest.ReadExecLog[int64](t, logPath, true)
		interrupted := 0
		for _, runs := range l.Runs {
			for _, r := range runs {
				if !r.Ended {
					interrupted++
					require.True(t, killed[r.PID], "a run of pid %d never ended", r.PID)
				}
			}
		}
		require.Positive(t, interrupted, "the deadline cut the 3 s jobs that were running")

		last := startWork(t, env, "--config", cfg)
		// Liveness only: the rest of the backlog on one process, each
		// command started under its supervisor, on a busy machine.
		testdb.WaitFor(t, 5*time.Minute, "every job done", func() bool { return allDone(d) })
		_, err := last.term(t, 15*time.Second)
		require.NoError(t, err)

		l = proctest.ReadExecLog[int64](t, logPath, true)
		proctest.CheckAllSucceeded(t, d, l, jobs)
		for id, runs := range l.Runs {
			ended := 0
			for _, r := range runs {
				if r.Ended {
					ended++
				}
			}
			require.Equal(t, 1, ended, "job %d finished %d runs: %+v", id, ended, runs)
		}
		for _, j := range testdb.JobsByStatus(t, d, sluicetype.ListParams{})[sluicetype.StatusSuccess] {
			require.Equal(t, 1, j.Attempts, "job %d", j.ID)
		}
		t.Logf("%s: %d jobs pending at shutdown, %d runs interrupted and run again", name, len(by[sluicetype.StatusPending]), interrupted)
	})
}
