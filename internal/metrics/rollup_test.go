package metrics_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/driver"
	"github.com/sluicehq/sluice/internal/metrics"
	"github.com/sluicehq/sluice/internal/testkit/testdb"
	"github.com/sluicehq/sluice/sluicetype"
)

// When Flush returns, every count added before the call is in sluice_stats,
// even while another flush (the heartbeat's in `sluice serve`) has taken
// them and is still writing; and no count is written twice.
func TestFlushWritesEachCountOnceAndBeforeReturning(t *testing.T) {
	for _, name := range testdb.Names {
		t.Run(name, func(t *testing.T) {
			d := testdb.Open(t, name)
			ctx := context.Background()
			r := metrics.NewRollup()
			total := func() int64 {
				rows, err := d.ReadStats(ctx, driver.ReadStatsParams{Since: time.Now().Add(-time.Hour)})
				if !assert.NoError(t, err) {
					return 0
				}
				n := int64(0)
				for _, row := range rows {
					n += row.Count
				}
				return n
			}
			const flushers, rounds = 6, 10
			var added atomic.Int64
			var wg sync.WaitGroup
			for range flushers {
				wg.Go(func() {
					for range rounds {
						r.Add("default", "t", sluicetype.OutcomeSuccess, time.Now(), time.Second)
						before := added.Add(1)
						if !assert.NoError(t, r.Flush(ctx, d)) {
							return
						}
						assert.GreaterOrEqual(t, total(), before, "a count added before Flush was not written when it returned")
					}
				})
			}
			wg.Wait()
			require.Equal(t, int64(flushers*rounds), total())
			// Each attempt's wait went out with its count, once.
			lat, err := d.ReadLatency(ctx, driver.ReadStatsParams{Since: time.Now().Add(-time.Hour)})
			require.NoError(t, err)
			waits := int64(0)
			for _, row := range lat {
				require.Equal(t, sluicetype.LatencySlot(time.Second), row.Slot)
				waits += row.Count
			}
			require.Equal(t, int64(flushers*rounds), waits)
		})
	}
}

// A cancel is counted but ran nothing, so it adds no wait to the latency
// histogram; every other outcome does.
func TestRollupLatencyOnlyForAttemptsThatRan(t *testing.T) {
	d := testdb.Open(t, "sqlite")
	ctx := context.Background()
	r := metrics.NewRollup()
	now := time.Now()
	r.Add("q", "t", sluicetype.OutcomeSuccess, now, 3*time.Millisecond)
	r.Add("q", "t", sluicetype.OutcomeRetry, now, 3*time.Millisecond)
	r.Add("q", "t", sluicetype.OutcomeCancelled, now, time.Hour)
	require.NoError(t, r.Flush(ctx, d))
	lat, err := d.ReadLatency(ctx, driver.ReadStatsParams{Since: now.Add(-time.Hour)})
	require.NoError(t, err)
	require.Len(t, lat, 1, "%+v", lat)
	require.Equal(t, sluicetype.LatencySlot(3*time.Millisecond), lat[0].Slot)
	require.EqualValues(t, 2, lat[0].Count)
}
