package sluice_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/driver"
	"github.com/sluicehq/sluice/internal/testkit/clienttest"
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

// What a Go handler logs through Job.Logger is its attempt's log, each
// attempt's own, whatever the outcome; a SetLog of the handler's wins.
// The process's log gets the same records, naming the job.
func TestJobLoggerIsTheAttemptLog(t *testing.T) {
	testdb.ForEachDriver(t, func(t *testing.T, d driver.Driver) {
		ctx := context.Background()
		var out testdb.SyncBuffer
		c := clienttest.Start(t, sluice.Config{Driver: d, Logger: slog.New(slog.NewTextHandler(&out, nil)),
			Queues: map[string]sluice.QueueConfig{"default": {Concurrency: 2}}, PollMax: 50 * time.Millisecond, Types: map[string]sluice.Type{
				"chatty": {Backoff: fastRetry, Handler: sluice.HandlerFunc(func(ctx context.Context, j *sluice.Job) error {
					j.Logger().Info("charging card", "order", 42)
					j.Logger().Debug("below the kept level")
					if j.Attempt == 1 {
						j.Logger().Warn("gateway timed out")
						return errors.New("first attempts fail")
					}
					return nil
				})},
				"explicit": {Handler: sluice.HandlerFunc(func(ctx context.Context, j *sluice.Job) error {
					j.Logger().Info("not kept")
					j.SetLog("mine\n", 5, 0)
					return nil
				})},
			}})
		r, err := c.Enqueue(ctx, sluice.EnqueueParams{Type: "chatty"})
		require.NoError(t, err)
		waitStatus(t, d, r.ID, sluicetype.StatusSuccess)
		logs, err := c.AttemptLogs(ctx, r.ID, 0)
		require.NoError(t, err)
		require.Len(t, logs, 2)
		require.Contains(t, logs[0].Text, `msg="charging card" order=42`)
		require.Contains(t, logs[0].Text, `level=WARN msg="gateway timed out"`)
		require.NotContains(t, logs[0].Text, "below the kept level")
		require.NotContains(t, logs[0].Text, "job_id=", "the attempt's own log need not name its job")
		require.Contains(t, logs[1].Text, `msg="charging card"`)
		require.NotContains(t, logs[1].Text, "gateway timed out", "each attempt keeps its own")
		require.Equal(t, int64(len(logs[1].Text)), logs[1].Bytes)
		require.Contains(t, out.String(), fmt.Sprintf(`msg="charging card" job_id=%d type=chatty attempt=1 order=42`, r.ID),
			"the process's log gets the record, naming the job")

		r, err = c.Enqueue(ctx, sluice.EnqueueParams{Type: "explicit"})
		require.NoError(t, err)
		waitStatus(t, d, r.ID, sluicetype.StatusSuccess)
		logs, err = c.AttemptLogs(ctx, r.ID, 0)
		require.NoError(t, err)
		require.Len(t, logs, 1)
		require.Equal(t, "mine\n", logs[0].Text)
	})
}
