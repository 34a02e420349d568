package lock_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/internal/metrics"
	"github.com/sluicehq/sluice/lock"
	"github.com/sluicehq/sluice/lock/locktest"
)

// A Locker opened with Options.Metrics counts each lock taken and each
// attempt that found it held, on every backend, by lock name.
func TestLockMetrics(t *testing.T) {
	for _, backend := range locktest.Backends {
		t.Run(backend, func(t *testing.T) {
			t.Parallel()
			tg := locktest.NewTarget(t, backend)
			m := metrics.New(nil)
			open := func(id string) lock.Locker {
				l, err := lock.Open(tg.URL, lock.Options{ID: id, Prefix: tg.Prefix, Metrics: m})
				require.NoError(t, err)
				t.Cleanup(func() { l.Close() })
				return l
			}
			a, b := open("a"), open("b")
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			name := locktest.Name()

			held, _, err := a.TryAcquire(ctx, name, time.Minute)
			require.NoError(t, err)
			require.NotNil(t, held)
			for range 2 {
				l, _, err := b.TryAcquire(ctx, name, time.Minute)
				require.NoError(t, err)
				require.Nil(t, l, "the lock is held by a")
			}
			require.NoError(t, held.Release(ctx))
			again, _, err := b.TryAcquire(ctx, name, time.Minute)
			require.NoError(t, err)
			require.NotNil(t, again)
			require.NoError(t, again.Release(ctx))
			// A bad name is an error, neither taken nor busy.
			_, _, err = a.TryAcquire(ctx, "", time.Minute)
			require.Error(t, err)

			require.Equal(t, 2.0, m.Value("sluice_lock_acquisitions_total", name))
			require.Equal(t, 2.0, m.Value("sluice_lock_busy_total", name))
			require.Equal(t, 0.0, m.Value("sluice_lock_acquisitions_total", ""))
			require.Equal(t, 0.0, m.Value("sluice_lock_busy_total", ""))
		})
	}
}
