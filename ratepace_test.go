package sluice_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/driver"
)

// TestTypeRateKeptUpByOneProcess runs one process on a type whose cluster
// rate leaves its claims short most of the time: it must use the rate, not
// just respect it. A bucket of 1 loses the refill of every gap between
// claims longer than a token's, so a producer that backed off as from an
// empty queue (PollMax, on a database that pushes wake-ups) would start
// far fewer jobs.
func TestTypeRateKeptUpByOneProcess(t *testing.T) {
	forEachDriver(t, func(t *testing.T, d driver.Driver) {
		const rate, period = 20, 3 * time.Second
		var mu sync.Mutex
		var starts []time.Time
		c, err := sluice.NewClient(sluice.Config{Driver: d,
			Types: map[string]sluice.Type{"api": {ClusterRate: rate, ClusterBurst: 1,
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
			if s.Sub(starts[0]) < period-500*time.Millisecond {
				n++
			}
		}
		want := rate * (period - 500*time.Millisecond).Seconds()
		t.Logf("%d starts in %s at %d/s", n, period-500*time.Millisecond, rate)
		require.LessOrEqual(t, float64(n), 1+want+rate/2, "the rate is respected")
		require.GreaterOrEqual(t, float64(n), 0.85*want, "the rate is used")
	})
}
