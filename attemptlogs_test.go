package sluice_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/driver"
	"github.com/sluicehq/sluice/internal/testkit/testdb"
	"github.com/sluicehq/sluice/sluicetype"
)

// A handler's Job.SetLog is kept per attempt, whatever the outcome and
// whichever way the outcome is written: in a batch, or in the handler's
// own transaction. A handler that sets none leaves no log.
func TestAttemptLogsThroughTheWorker(t *testing.T) {
	testdb.ForEachDriver(t, func(t *testing.T, d driver.Driver) {
		ctx := context.Background()
		logged := func(tx bool) sluice.Handler {
			return sluice.HandlerFunc(func(ctx context.Context, j *sluice.Job) error {
				text := fmt.Sprintf("attempt %d\n", j.Attempt)
				j.SetLog(text, int64(len(text)), 0)
				if tx {
					if _, err := j.Tx(ctx); err != nil {
						return err
					}
				}
				if j.Attempt == 1 {
					return errors.New("first attempts fail")
				}
				return nil
			})
		}
		c := startClient(t, d, 2, map[string]sluice.Type{
			"batch":  {Backoff: fastRetry, Handler: logged(false)},
			"intx":   {Backoff: fastRetry, Handler: logged(true)},
			"silent": {Handler: sluice.HandlerFunc(func(context.Context, *sluice.Job) error { return nil })},
		})
		for _, typ := range []string{"batch", "intx"} {
			r, err := c.Enqueue(ctx, sluice.EnqueueParams{Type: typ})
			require.NoError(t, err)
			waitStatus(t, d, r.ID, sluicetype.StatusSuccess)
			logs, err := c.AttemptLogs(ctx, r.ID, 0)
			require.NoError(t, err)
			require.Len(t, logs, 2, typ)
			for i, l := range logs {
				require.Equal(t, r.ID, l.JobID)
				require.Equal(t, i+1, l.Attempt)
				require.Equal(t, fmt.Sprintf("attempt %d\n", i+1), l.Text, typ)
			}
		}
		r, err := c.Enqueue(ctx, sluice.EnqueueParams{Type: "silent"})
		require.NoError(t, err)
		waitStatus(t, d, r.ID, sluicetype.StatusSuccess)
		logs, err := c.AttemptLogs(ctx, r.ID, 0)
		require.NoError(t, err)
		require.Empty(t, logs)
	})
}
