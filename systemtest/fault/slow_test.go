package fault

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestSlowDatabase holds an ACCESS EXCLUSIVE lock on the jobs table for
// 3 s, longer than the 2 s lease, twice during the run: heartbeats,
// completions, claims and rescues all queue behind it. When it is released
// a rescue may win the race against a heartbeat and take an expired lease;
// that is allowed, but it must be caught by fencing: every job that ran
// twice must have been reported "lease lost" by a worker, and the final
// states must be right.
func TestSlowDatabase(t *testing.T) {
	s := throwaway(t, "postgres")
	res := serverFaultRun(t, s, "2s", []float64{0.2, 0.6}, func(t *testing.T, s *server, _ string) (int, time.Time) {
		ctx := context.Background()
		tx, err := s.adminDB(t).BeginTx(ctx, nil)
		require.NoError(t, err)
		_, err = tx.ExecContext(ctx, "LOCK TABLE "+s.prefix+"jobs IN ACCESS EXCLUSIVE MODE")
		require.NoError(t, err)
		time.Sleep(3 * time.Second)
		require.NoError(t, tx.Commit())
		return 1, time.Time{}
	})
	lostIDs := leaseLostJobs(res.stderr)
	for _, id := range res.dups {
		require.True(t, lostIDs[id], "job %d ran %d times but no worker reported its lease lost: a live lease was stolen unfenced", id, len(res.log.Runs[id]))
	}
	t.Logf("REPORT %s: %d jobs reported lease lost, %d ran twice", t.Name(), len(lostIDs), len(res.dups))
}
