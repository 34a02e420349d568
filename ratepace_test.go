package sluice_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/driver"
	"github.com/sluicehq/sluice/internal/testdb"
)

// TestTypeRateKeptUpByOneProcess runs one process on a type whose cluster
// rate leaves its claims short most of the time: it must use the rate, not
// just respect it. A bucket of 1 loses the refill of every gap between
// claims longer than a token's, so a producer that backed off as from an
// empty queue (on PostgreSQL, which pushes wake-ups, it then waits for one
// that never comes) starts far fewer jobs. The rate is 5/s: a token every
// 200 ms, long against a loaded machine's round trips, which at 20/s
// (50 ms) cost correct code tokens too (58-82% of the rate in CI on a slow
// 2-core machine). At 5/s correct code used 94-102% of the rate while the
// test suite ran beside it, and a producer without the pace rule 65-84% on
// PostgreSQL over six tries (on SQLite and MariaDB the idle probe bounds
// its back-off, and it kept up there). One try in up to six must use 90% of
// the rate, and none may exceed it; each try has a fresh database.
// The test is not parallel (the package's parallel tests wait for it),
// runs its databases one after another, and holds the lock of the fault
// and HA suites, so that it does not measure a starved machine.
func TestTypeRateKeptUpByOneProcess(t *testing.T) {
	testdb.ExclusiveTest(t)
	const rate, period = 5, 6 * time.Second
	window := period - 500*time.Millisecond
	want := rate * window.Seconds()
	for _, name := range testdb.Names {
		t.Run(name, func(t *testing.T) {
			best := 0
			for try := 1; try <= 6 && float64(best) < 0.9*want; try++ {
				n := startsInWindow(t, testdb.Open(t, name), rate, period, window)
				t.Logf("try %d: %d starts in %s at %d/s", try, n, window, rate)
				require.LessOrEqual(t, float64(n), 1+want+rate/2, "the rate is respected")
				best = max(best, n)
			}
			require.GreaterOrEqual(t, float64(best), 0.9*want, "the rate is used")
		})
	}
}

// startsInWindow works a backlog of the rated type for period and counts
// the starts in the first window after the first one.
func startsInWindow(t *testing.T, d driver.Driver, rate int, period, window time.Duration) int {
	var mu sync.Mutex
	var starts []time.Time
	c, err := sluice.NewClient(sluice.Config{Driver: d,
		Types: map[string]sluice.Type{"api": {ClusterRate: float64(rate), ClusterBurst: 1,
			Handler: sluice.HandlerFunc(func(context.Context, *sluice.Job) error {
				mu.Lock()
				starts = append(starts, time.Now())
				mu.Unlock()
				return nil
			})}},
		Queues: map[string]sluice.QueueConfig{"default": {Concurrency: 10}}})
	require.NoError(t, err)
	ps := make([]sluice.EnqueueParams, 2*rate*int(period/time.Second))
	for i := range ps {
		ps[i] = sluice.EnqueueParams{Type: "api"}
	}
	_, err = c.EnqueueMany(context.Background(), ps)
	require.NoError(t, err)
	require.NoError(t, c.Start(context.Background()))
	time.Sleep(period)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c.Stop(ctx)
	mu.Lock()
	defer mu.Unlock()
	n := 0
	for _, s := range starts {
		if s.Sub(starts[0]) < window {
			n++
		}
	}
	return n
}
