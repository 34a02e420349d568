package worker

import (
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/sluicetype"
)

// With every handler blocked, a queue of concurrency N runs N handlers and
// holds N more jobs prefetched, however long it waits and however many jobs
// are runnable; released, it runs the backlog never more than N at once.
func TestProducerRunsConcurrencyAndPrefetchesAsMany(t *testing.T) {
	const n = 3
	d := openSQLite(t)
	enqueue(t, d, 20)
	g := newGate()
	startPool(t, d, newManualClock().Clock(), Queue{Concurrency: n}, g.run, Hooks{})

	eventually(t, 2*time.Second, func() bool {
		now, _, _ := g.counts()
		require.LessOrEqual(t, now, n, "handlers running")
		return now == n
	}, "want %d handlers running", n)
	// The first claim took every slot: the prefetched jobs came with it.
	require.Equal(t, 2*n, count(t, d, sluicetype.StatusProcessing), "jobs processing: running plus prefetched")
	// Idle polls and probes come every few milliseconds: give the producer
	// many chances to claim more than its slots.
	time.Sleep(100 * time.Millisecond)
	now, most, started := g.counts()
	require.Equal(t, n, now, "handlers running")
	require.Equal(t, n, most, "most handlers at once")
	require.Equal(t, n, started, "handlers started")
	require.Equal(t, 2*n, count(t, d, sluicetype.StatusProcessing), "jobs processing: running plus prefetched")
	require.Equal(t, 2*n, d.claimedJobs(), "jobs claimed")

	close(g.release)
	eventually(t, 5*time.Second, func() bool { return count(t, d, sluicetype.StatusSuccess) == 20 },
		"the backlog did not finish")
	_, most, started = g.counts()
	require.Equal(t, n, most, "most handlers at once while the backlog drained")
	require.Equal(t, 20, started, "each job ran once")
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, c := range d.claims {
		require.LessOrEqual(t, c.Limit, 2*n, "a claim asked for more jobs than the producer has slots")
	}
}

// A bounded pass (a cron run of `sluice work --max-jobs`) claims no more
// than MaxJobs in all, and no prefetch: it must not hold jobs it will not run.
func TestBoundedPassClaimsAtMostMaxJobs(t *testing.T) {
	d := openSQLite(t)
	enqueue(t, d, 20)
	g := newGate()
	close(g.release)
	p := startPool(t, d, newManualClock().Clock(), Queue{Concurrency: 3, MaxJobs: 5}, g.run, Hooks{})

	drained := p.Drained()
	eventually(t, 5*time.Second, func() bool {
		require.LessOrEqual(t, d.claimedJobs(), 5, "jobs claimed by the pass")
		select {
		case <-drained:
			return true
		default:
			return false
		}
	}, "the bounded pass did not end")
	p.stop(time.Second) // writes the outcomes still queued
	require.Equal(t, 5, d.claimedJobs(), "jobs claimed by the pass")
	require.Equal(t, 5, count(t, d, sluicetype.StatusSuccess))
	require.Equal(t, 15, count(t, d, sluicetype.StatusPending))
	require.Zero(t, count(t, d, sluicetype.StatusProcessing))
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, c := range d.claims {
		require.LessOrEqual(t, c.Limit, 3, "a bounded pass claimed beyond its concurrency")
	}
}

// At shutdown a prefetched job whose handler never started goes straight
// back to pending with its attempt given back, while the running job
// finishes.
func TestPrefetchedJobGoesBackUnchargedAtShutdown(t *testing.T) {
	d := openSQLite(t)
	ids := enqueue(t, d, 3)
	g := newGate()
	p := startPool(t, d, newManualClock().Clock(), Queue{Concurrency: 1}, g.run, Hooks{})

	eventually(t, 2*time.Second, func() bool {
		now, _, _ := g.counts()
		return now == 1 && count(t, d, sluicetype.StatusProcessing) == 2
	}, "want one job running and one prefetched")
	ran := g.startedIDs()[0]
	var prefetched int64
	for _, id := range ids {
		if id != ran && job(t, d, id).Status == sluicetype.StatusProcessing {
			prefetched = id
		}
	}
	require.NotZero(t, prefetched)

	stopped := make(chan struct{})
	go func() { p.stop(2 * time.Second); close(stopped) }()
	// The prefetched job goes back while the running handler still runs.
	eventually(t, time.Second, func() bool { return job(t, d, prefetched).Status == sluicetype.StatusPending },
		"the prefetched job did not go back at shutdown")
	close(g.release)
	select {
	case <-stopped:
	case <-time.After(5 * time.Second):
		t.Fatal("Stop did not return")
	}

	_, _, started := g.counts()
	require.Equal(t, 1, started, "only the running job's handler ran")
	r := job(t, d, ran)
	require.Equal(t, sluicetype.StatusSuccess, r.Status)
	require.Equal(t, 1, r.Attempts)
	pf := job(t, d, prefetched)
	require.Equal(t, sluicetype.StatusPending, pf.Status)
	require.Zero(t, pf.Attempts, "the prefetched job was charged an attempt it never ran")
	for _, id := range ids {
		if !slices.Contains([]int64{ran, prefetched}, id) {
			require.Zero(t, job(t, d, id).Attempts, "job %d was claimed", id)
		}
	}
}
