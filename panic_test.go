package sluice_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/driver"
	"github.com/sluicehq/sluice/internal/testkit/testdb"
	"github.com/sluicehq/sluice/sluicetype"
)

// A panicking handler is a transient failure: the job is retried like any
// other error, up to MaxAttempts, and last_error holds the panic value and
// the stack down to the handler that panicked.
func TestHandlerPanicIsRetried(t *testing.T) {
	testdb.ForEachDriver(t, func(t *testing.T, d driver.Driver) {
		ctx := context.Background()
		var runs atomic.Int32
		c := startClient(t, d, 2, map[string]sluice.Type{
			// Panics on its first two attempts, then succeeds.
			"recovers": {Backoff: fastRetry, MaxAttempts: 3, Handler: sluice.HandlerFunc(func(ctx context.Context, j *sluice.Job) error {
				if n := runs.Add(1); n < 3 {
					panic(fmt.Sprintf("boom %d", n))
				}
				return nil
			})},
			"always": {Backoff: fastRetry, MaxAttempts: 2, Handler: sluice.HandlerFunc(func(ctx context.Context, j *sluice.Job) error {
				panic("always boom")
			})},
		})
		enq := func(typ string) int64 {
			r, err := c.Enqueue(ctx, sluice.EnqueueParams{Type: typ})
			require.NoError(t, err)
			return r.ID
		}

		j := waitStatus(t, d, enq("recovers"), sluicetype.StatusSuccess)
		require.Equal(t, 3, j.Attempts, "two panics, then a success")
		require.Contains(t, j.LastError, "panic: boom 2")
		require.Contains(t, j.LastError, "goroutine", "the stack is kept")
		require.Contains(t, j.LastError, "panic_test.go", "the stack reaches the handler that panicked")

		j = waitStatus(t, d, enq("always"), sluicetype.StatusFailed)
		require.Equal(t, 2, j.Attempts, "a panic uses up attempts like an error, no more and no fewer")
		require.Contains(t, j.LastError, "panic: always boom")
		require.Contains(t, j.LastError, "panic_test.go")
	})
}
