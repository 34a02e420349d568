package worker

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/driver"
	"github.com/sluicehq/sluice/sluicetype"
)

// Outcomes that queue up while a batch is being written all go in the next
// batch: eight handlers that return together cost at most two Complete
// calls, however the first one is timed.
func TestCompleterWritesQueuedOutcomesInOneBatch(t *testing.T) {
	const n = 8
	d := openSQLite(t)
	enqueue(t, d, n)
	g := newGate()
	var p *testPool
	// The first write waits until every other outcome is queued behind
	// it, so the test does not depend on how fast the handlers return.
	d.beforeComplete = func(call int, cs []driver.Completion) {
		if call != 1 {
			return
		}
		deadline := time.Now().Add(2 * time.Second)
		for len(p.completer.in) < n-len(cs) && time.Now().Before(deadline) {
			time.Sleep(time.Millisecond)
		}
	}
	// A linger no scheduler hiccup outlasts: the outcomes already queued
	// when the second write begins must all be in it.
	p = startPool(t, d, newManualClock().Clock(), Queue{Concurrency: n}, g.run, Hooks{},
		func(p *Pool) { p.completer.linger = 100 * time.Millisecond })
	eventually(t, 2*time.Second, func() bool { now, _, _ := g.counts(); return now == n }, "want %d handlers running", n)

	close(g.release)
	eventually(t, 2*time.Second, func() bool { return count(t, d, sluicetype.StatusSuccess) == n }, "outcomes not written")
	calls := d.completeCalls()
	written := 0
	for _, cs := range calls {
		written += len(cs)
	}
	require.Equal(t, n, written, "outcomes written")
	require.LessOrEqual(t, len(calls), 2, "Complete calls for %d outcomes", n)
}

// stealLease lets the job's lease expire, rescues it and claims it under
// another token, as another worker would after this one stalled. The
// pool's clock stands still, so its heartbeat never renews the lease.
func stealLease(t *testing.T, d driver.Driver, id int64) {
	t.Helper()
	ctx := context.Background()
	eventually(t, 2*time.Second, func() bool {
		r, err := d.Rescue(ctx, driver.RescueParams{Limit: 10})
		require.NoError(t, err)
		return r.Pending == 1
	}, "the lease never expired")
	jobs, err := d.Claim(ctx, driver.ClaimParams{Queue: "q", Limit: 10, Lease: time.Minute, Token: "other-worker"})
	require.NoError(t, err)
	require.Len(t, jobs, 1)
	require.Equal(t, id, jobs[0].ID)
}

// lostLeases records Hooks.LeaseLost.
type lostLeases struct {
	mu    sync.Mutex
	where map[int64]string
}

func (l *lostLeases) hook(j sluicetype.JobRow, where string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.where == nil {
		l.where = map[int64]string{}
	}
	l.where[j.ID] = where
}

func (l *lostLeases) get(id int64) (string, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	w, ok := l.where[id]
	return w, ok
}

// An outcome whose lease another worker now holds is not written: the
// completer reports the lost lease and leaves the job to its new holder.
func TestCompleterReportsLostLeaseAndWritesNothing(t *testing.T) {
	d := openSQLite(t)
	id := enqueue(t, d, 1)[0]
	g := newGate()
	var lost lostLeases
	// A rate of one claim a quarter-hour: the pool claims this job once
	// and cannot take it back when it is rescued.
	p := startPool(t, d, newManualClock().Clock(), Queue{Concurrency: 1, Lease: 100 * time.Millisecond, Rate: 0.001},
		g.run, Hooks{LeaseLost: lost.hook})
	eventually(t, 2*time.Second, func() bool { _, _, started := g.counts(); return started == 1 }, "the job did not start")

	stealLease(t, d, id)
	close(g.release)
	// The job leaves the pool once its outcome's write returned.
	eventually(t, 2*time.Second, func() bool { return p.Running() == 0 }, "the outcome was never written")
	// It is reported once it leaves.
	eventually(t, 200*time.Millisecond, func() bool { _, ok := lost.get(id); return ok }, "the lost lease was not reported")
	where, _ := lost.get(id)
	require.Equal(t, "completion", where)

	j := job(t, d, id)
	require.Equal(t, sluicetype.StatusProcessing, j.Status, "the stale outcome was written")
	require.Equal(t, "other-worker", j.LockedBy)
	require.Equal(t, 2, j.Attempts)
	require.Empty(t, d.heartbeats(), "the heartbeat ran while the pool's clock stood still")
}
