package drivertest

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/driver"
	"github.com/sluicehq/sluice/sluicetype"
)

func exerciseBench(t *testing.T, open Opener) {
	// Seeded jobs are finished ones: counted in success, each with no
	// latency (its next_run_at is its finished_at), and left to analyze.
	t.Run("SeedCountLatencies", func(t *testing.T) {
		t.Parallel()
		b := setup(t, open)
		require.NoError(t, b.d.SeedFinished(b.ctx, driver.SeedFinishedParams{Queue: "default", Type: "seeded", AgoMS: 0, N: 30}))
		require.NoError(t, b.d.SeedFinished(b.ctx, driver.SeedFinishedParams{Queue: "default", Type: "seeded", AgoMS: 30, N: 20}))
		n, err := b.d.CountJobs(b.ctx, driver.CountJobsParams{Type: "seeded", Status: sluicetype.StatusSuccess})
		require.NoError(t, err)
		require.EqualValues(t, 50, n)
		n, err = b.d.CountJobs(b.ctx, driver.CountJobsParams{Type: "seeded", Status: sluicetype.StatusPending})
		require.NoError(t, err)
		require.Zero(t, n)
		var lats []int64
		require.NoError(t, b.d.FinishedLatencies(b.ctx, driver.FinishedLatenciesParams{Type: "seeded", Each: func(us int64) { lats = append(lats, us) }}))
		require.Len(t, lats, 50)
		for _, us := range lats {
			require.Zero(t, us, "a seeded job finished when it was due")
		}
		require.NoError(t, b.d.Analyze(b.ctx))
	})

	// A plain insert names the type and payload only; the table fills in
	// the rest, a pending job in the default queue.
	t.Run("InsertPlain", func(t *testing.T) {
		t.Parallel()
		b := setup(t, open)
		require.NoError(t, b.d.InsertPlain(b.ctx, driver.InsertPlainParams{Type: "plain", Payload: `{"a":1}`}))
		jobs, err := b.d.ListJobs(b.ctx, sluicetype.ListParams{Type: "plain", Limit: 10})
		require.NoError(t, err)
		require.Len(t, jobs, 1)
		require.Equal(t, sluicetype.StatusPending, jobs[0].Status)
		require.Equal(t, "default", jobs[0].Queue)
		require.JSONEq(t, `{"a":1}`, string(jobs[0].Payload))
		n, err := b.d.CountJobs(b.ctx, driver.CountJobsParams{Type: "plain", Status: sluicetype.StatusPending})
		require.NoError(t, err)
		require.EqualValues(t, 1, n)
		var lats int
		require.NoError(t, b.d.FinishedLatencies(b.ctx, driver.FinishedLatenciesParams{Type: "plain", Each: func(int64) { lats++ }}))
		require.Zero(t, lats, "a pending job has no latency yet")
	})
}
