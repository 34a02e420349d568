package fault

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/internal/proctest"
	"github.com/sluicehq/sluice/internal/testdb"
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
	// In parallel: the jobs sleep; three databases at once fit two cores.
	testdb.ForEach(t, func(t *testing.T, name string) {
		d, tg := testdb.OpenURL(t, name)
		env := []string{"SLUICE_PREFIX=" + tg.Prefix}
		// 20 to 100 ms per job by id, and 3 s for one job in 50, longer
		// than the shutdown deadline, so that some runs are cut.
		cfg, logPath := writeConfig(t, tg.URL, 20, "$(( SLUICE_JOB_ID % 50 == 0 ? 3 : 0 )).0$(( SLUICE_JOB_ID % 5 * 2 + 2 ))", "", "")
		proctest.Enqueue(t, d, "work", faultJobs)
		var procs []*proc
		for i := 0; i < 2; i++ {
			procs = append(procs, startWork(t, env, "--config", cfg, "--shutdown-timeout", "1s"))
		}
		testdb.WaitFor(t, 60*time.Second, "a quarter of the jobs done", func() bool { return proctest.CountEnds(logPath) >= faultJobs/4 })
		killed := map[int]bool{}
		for _, p := range procs {
			killed[p.Pid()] = true
			took, err := p.term(t, 15*time.Second)
			require.NoError(t, err, "sluice work exits 0 on SIGTERM")
			// The 1 s deadline, the 1 s grace for cancelled handlers
			// and about a second for the final writes, as the README's
			// "exit within the deadline" and cli's shutdownBound.
			require.Less(t, took, 3*time.Second, "shutdown took %s", took)
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
		testdb.WaitFor(t, 90*time.Second, "every job done", func() bool { return allDone(d) })
		_, err := last.term(t, 15*time.Second)
		require.NoError(t, err)

		l = proctest.ReadExecLog[int64](t, logPath, true)
		proctest.CheckAllSucceeded(t, d, l, faultJobs)
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
