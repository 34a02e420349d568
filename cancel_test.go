package sluice_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/internal/testkit/testdb"
	"github.com/sluicehq/sluice/sluicetype"
)

// A job cancelled while its Go handler runs, through another client (as
// the API or the CLI would, from another process): the handler's context
// ends with ErrCancelled, the success it returns afterwards is dropped,
// and the job stays cancelled with who cancelled it in its history.
func TestCancelRunningGoHandler(t *testing.T) {
	testdb.ForEach(t, func(t *testing.T, name string) {
		d := testdb.Open(t, name)
		ctx := context.Background()
		started := make(chan int64, 1)
		causes := make(chan error, 1)
		worker, err := sluice.NewClient(sluice.Config{Driver: d, Queues: map[string]sluice.QueueConfig{"default": {Concurrency: 1}}, Types: map[string]sluice.Type{
			"export": {Handler: sluice.HandlerFunc(func(ctx context.Context, job *sluice.Job) error {
				started <- job.ID
				<-ctx.Done()
				causes <- context.Cause(ctx)
				return nil // says it finished: must not count
			})}}})
		require.NoError(t, err)
		operator, err := sluice.NewClient(sluice.Config{Driver: d, Types: map[string]sluice.Type{"export": {}}})
		require.NoError(t, err)
		j, err := operator.Enqueue(ctx, sluice.EnqueueParams{Type: "export"})
		require.NoError(t, err)
		require.NoError(t, worker.Start(ctx))
		t.Cleanup(func() { worker.Stop(context.Background()) })
		select {
		case <-started:
		case <-time.After(time.Minute):
			t.Fatal("the handler did not start within a minute")
		}

		as := sluice.WithActor(ctx, sluice.Actor{Name: "ops", Source: sluicetype.AuditCLI, Address: "host1"})
		require.NoError(t, operator.Cancel(as, j.ID))
		var cause error
		select {
		case cause = <-causes:
		case <-time.After(time.Minute):
			t.Fatal("the handler was not stopped within a minute")
		}
		require.True(t, errors.Is(cause, sluice.ErrCancelled), "cause %v", cause)
		require.False(t, errors.Is(cause, sluice.ErrLeaseLost))
		_, bounded := sluice.StopBy(ctxWithCause(cause))
		require.False(t, bounded, "a cancel sets no StopBy: no other attempt will start the job")

		// Whatever the worker does next, the job stays cancelled.
		worker.Stop(ctx)
		row, err := operator.Job(ctx, j.ID)
		require.NoError(t, err)
		require.Equal(t, sluicetype.StatusCancelled, row.Status)
		require.Len(t, row.History, 1)
		require.Equal(t, sluicetype.OutcomeCancelled, row.History[0].Outcome)
		require.Equal(t, "cancelled by an operator: ops via cli from host1", row.History[0].Error)
		require.Equal(t, row.History[0].Error, row.LastError)
		entries, err := operator.Audit(ctx, sluice.AuditParams{Limit: 10})
		require.NoError(t, err)
		require.Len(t, entries, 1)
		require.Equal(t, "job.cancel", entries[0].Action)
		require.True(t, strings.HasSuffix(entries[0].Target, "(running)"), "target %q", entries[0].Target)
	})
}

// ctxWithCause is a context ended with cause, for StopBy.
func ctxWithCause(cause error) context.Context {
	ctx, cancel := context.WithCancelCause(context.Background())
	cancel(cause)
	return ctx
}
