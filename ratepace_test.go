package sluice_test

import (
	"context"
	"math"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/internal/testkit/testdb"
	"github.com/sluicehq/sluice/sluicetype"
)

// TestTypeRateKeptUpByOneProcess runs one process on a backlog of a type
// whose cluster rate, 5/s with a bucket of 1, leaves its claims short
// most of the time. Two properties, neither judged by the machine's speed:
//
//   - safety, exact in database time: from the database's now before the
//     process starts to its now after the process stopped, the starts are
//     at most the bucket's burst + rate × the span;
//   - liveness: the whole backlog runs (a producer that waited for a
//     wake-up that never comes would stall).
//
// That the process uses the rate, claiming again within half a token
// after a short claim instead of backing off as from an empty queue, is
// internal/worker's TestPacedProducerClaimsEveryHalfToken, on a stopped
// clock: as a share of the rate in wall-clock seconds it failed on loaded
// machines.
func TestTypeRateKeptUpByOneProcess(t *testing.T) {
	const rate, burst, jobs = 5, 1, 15
	testdb.ForEach(t, func(t *testing.T, name string) {
		d := testdb.Open(t, name)
		ctx := context.Background()
		var starts atomic.Int64
		c, err := sluice.NewClient(sluice.Config{Driver: d,
			Types: map[string]sluice.Type{"api": {ClusterRate: rate, ClusterBurst: burst,
				Handler: sluice.HandlerFunc(func(context.Context, *sluice.Job) error {
					starts.Add(1)
					return nil
				})}},
			Queues: map[string]sluice.QueueConfig{"default": {Concurrency: 10}}})
		require.NoError(t, err)
		ps := make([]sluice.EnqueueParams, jobs)
		for i := range ps {
			ps[i] = sluice.EnqueueParams{Type: "api"}
		}
		_, err = c.EnqueueMany(ctx, ps)
		require.NoError(t, err)

		from, err := d.Now(ctx)
		require.NoError(t, err)
		require.NoError(t, c.Start(ctx))
		testdb.WaitFor(t, 2*time.Minute, "the whole backlog run", func() bool {
			return len(testdb.JobsByStatus(t, d, sluicetype.ListParams{Type: "api"})[sluicetype.StatusSuccess]) == jobs
		})
		stopCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		c.Stop(stopCtx)
		to, err := d.Now(ctx)
		require.NoError(t, err)

		// The bucket's bound, plus a millisecond of refill for the
		// precision of stored times (docs/design.md "Database time").
		span := to.Sub(from)
		bound := int64(math.Floor(burst + rate*(span+time.Millisecond).Seconds()))
		t.Logf("%d starts in %s of database time at %d/s, burst %d: the bucket allows %d", starts.Load(), span.Round(time.Millisecond), rate, burst, bound)
		require.EqualValues(t, jobs, starts.Load(), "each job started once")
		require.LessOrEqual(t, starts.Load(), bound, "the rate is respected")
	})
}
