package proctest

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/driver"
	"github.com/sluicehq/sluice/internal/testkit/testdb"
	"github.com/sluicehq/sluice/sluicetype"
)

// Enqueue enqueues n jobs of type typ, keyed typ-0 to typ-(n-1).
func Enqueue(t testing.TB, d driver.Driver, typ string, n int) {
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

// AllDone reports whether no job is pending or processing. Errors count
// as not done: the database may be down at that moment.
func AllDone(d driver.Driver) bool {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	st, err := d.Stats(ctx)
	if err != nil {
		return false
	}
	for _, s := range st {
		if s.Pending+s.Processing > 0 {
			return false
		}
	}
	return true
}

// CheckAllSucceeded asserts that the n jobs of type "work" are all in
// success, that each ran (per the log) and ended at least once, and that
// the log has runs of no other job; it returns the ids that ran more than
// once.
func CheckAllSucceeded(t testing.TB, d driver.Driver, l *ExecLog[int64], n int) (dups []int64) {
	t.Helper()
	by := testdb.JobsByStatus(t, d, sluicetype.ListParams{Type: "work"})
	require.Len(t, by[sluicetype.StatusSuccess], n, "every job ends in success (others: %d pending, %d processing, %d failed)",
		len(by[sluicetype.StatusPending]), len(by[sluicetype.StatusProcessing]), len(by[sluicetype.StatusFailed]))
	lost := 0
	for _, j := range by[sluicetype.StatusSuccess] {
		runs := l.Runs[j.ID]
		if len(runs) == 0 {
			lost++
			continue
		}
		ended := 0
		for _, r := range runs {
			if r.Ended {
				ended++
			}
		}
		require.GreaterOrEqual(t, ended, 1, "job %d is success but no run of it ended: %+v", j.ID, runs)
		if len(runs) > 1 {
			dups = append(dups, j.ID)
		}
	}
	require.Zero(t, lost, "jobs in success that never ran")
	require.Len(t, l.Runs, n, "the log has runs of exactly the enqueued jobs")
	return dups
}
