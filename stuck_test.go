package sluice_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/internal/testkit/testdb"
	"github.com/sluicehq/sluice/sluicetype"
)

// A Go handler that reports once and then hangs, whose job's own
// progress timeout (1 s) wins over its type's (an hour): the handler's
// context ends with a *StuckError, and under the type's cancel policy the
// job ends cancelled with the reason, whatever the handler returns.
func TestStuckGoHandler(t *testing.T) {
	testdb.ForEach(t, func(t *testing.T, name string) {
		d := testdb.Open(t, name)
		ctx := context.Background()
		causes := make(chan error, 1)
		c, err := sluice.NewClient(sluice.Config{Driver: d, Queues: map[string]sluice.QueueConfig{"default": {Concurrency: 1}},
			Types: map[string]sluice.Type{"export": {ProgressTimeout: time.Hour, OnStuck: sluicetype.OnStuckCancel,
				Handler: sluice.HandlerFunc(func(ctx context.Context, job *sluice.Job) error {
					job.Progress(1, 2, "half way")
					<-ctx.Done()
					causes <- context.Cause(ctx)
					return nil // says it finished: dropped
				})}}})
		require.NoError(t, err)
		j, err := c.Enqueue(ctx, sluice.EnqueueParams{Type: "export", ProgressTimeout: time.Second})
		require.NoError(t, err)
		require.NoError(t, c.Start(ctx))
		t.Cleanup(func() { c.Stop(context.Background()) })

		var cause error
		select {
		case cause = <-causes:
		case <-time.After(time.Minute):
			t.Fatal("the stuck handler was not stopped within a minute")
		}
		require.True(t, errors.Is(cause, sluice.ErrStuck), "cause %v", cause)
		var se *sluice.StuckError
		require.True(t, errors.As(cause, &se))
		require.Equal(t, time.Second, se.Timeout, "the job's own timeout wins")

		testdb.WaitFor(t, time.Minute, "the job cancelled", func() bool {
			row, err := c.Job(ctx, j.ID)
			require.NoError(t, err)
			return row.Status == sluicetype.StatusCancelled
		})
		row, err := c.Job(ctx, j.ID)
		require.NoError(t, err)
		require.Equal(t, "stuck: no progress reported for 1s", row.LastError)
		require.Len(t, row.History, 1)
		require.Equal(t, sluicetype.OutcomeCancelled, row.History[0].Outcome)
	})
}

// Bad settings are refused naming the field: a type's negative timeout
// or unknown policy at NewClient, a job's negative timeout at Enqueue.
func TestStuckSettingsRefused(t *testing.T) {
	d := testdb.Open(t, "sqlite")
	for _, tc := range []struct {
		t     sluice.Type
		field string
	}{
		{sluice.Type{ProgressTimeout: -time.Second}, "progress_timeout"},
		{sluice.Type{ProgressTimeout: time.Minute, OnStuck: "kill"}, "on_stuck"},
	} {
		_, err := sluice.NewClient(sluice.Config{Driver: d, Types: map[string]sluice.Type{"x": tc.t}})
		var ie *sluice.InputError
		require.True(t, errors.As(err, &ie), "%v", err)
		require.Equal(t, tc.field, ie.Field)
	}
	c, err := sluice.NewClient(sluice.Config{Driver: d})
	require.NoError(t, err)
	_, err = c.Enqueue(t.Context(), sluice.EnqueueParams{Type: "x", ProgressTimeout: -time.Second})
	var ie *sluice.InputError
	require.True(t, errors.As(err, &ie), "%v", err)
	require.Equal(t, "progress_timeout", ie.Field)
	require.Contains(t, err.Error(), "must be positive, got -1s")
}
