package sluice_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/handler/command"
	"github.com/sluicehq/sluice/internal/testkit/clienttest"
	"github.com/sluicehq/sluice/internal/testkit/testdb"
	"github.com/sluicehq/sluice/sluicetype"
)

// TestCommandHistoryAndTraceparent: a command that fails once, then
// succeeds, leaves both attempts with their exit codes in the job's
// history, and it gets its run span's context as TRACEPARENT, in the
// trace of the Enqueue call's context.
func TestCommandHistoryAndTraceparent(t *testing.T) {
	t.Parallel()
	d := testdb.Open(t, "sqlite")
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	h, err := command.New(command.Config{Argv: []string{"sh", "-c",
		`if [ "$SLUICE_JOB_ATTEMPT" = 1 ]; then echo 'not yet' >&2; exit 3; fi; printf %s "$TRACEPARENT"`}})
	require.NoError(t, err)
	ok, err := command.New(command.Config{Argv: []string{"true"}})
	require.NoError(t, err)
	c := clienttest.Start(t, sluice.Config{Driver: d, TracerProvider: tp, NodeID: "node-a:7",
		Types: map[string]sluice.Type{"report": {Handler: h, Backoff: sluice.Backoff{Base: time.Millisecond, Max: time.Millisecond}},
			"quick": {Handler: ok}},
		Queues: map[string]sluice.QueueConfig{"default": {Concurrency: 1}}, PollMax: 20 * time.Millisecond})

	ctx, caller := tp.Tracer("test").Start(context.Background(), "caller")
	r, err := c.Enqueue(ctx, sluice.EnqueueParams{Type: "report"})
	caller.End()
	require.NoError(t, err)
	row := waitStatus(t, d, r.ID, sluicetype.StatusSuccess)

	traceID := caller.SpanContext().TraceID().String()
	require.True(t, strings.HasPrefix(row.Result, "00-"+traceID+"-"), "TRACEPARENT %q is not in the caller's trace %s", row.Result, traceID)
	var runSpans []string
	for _, s := range exp.GetSpans() {
		if s.Name == "sluice.run report" {
			runSpans = append(runSpans, s.SpanContext.SpanID().String())
		}
	}
	require.Len(t, runSpans, 2)
	require.Equal(t, "00-"+traceID+"-"+runSpans[1]+"-01", row.Result, "TRACEPARENT names the second attempt's span")

	info, err := c.Job(context.Background(), r.ID)
	require.NoError(t, err)
	require.Equal(t, traceID, info.TraceID())
	require.Len(t, info.History, 2)
	first, second := info.History[0], info.History[1]
	require.Equal(t, 1, first.Number)
	require.Equal(t, sluicetype.OutcomeRetry, first.Outcome)
	require.NotNil(t, first.ExitCode)
	require.Equal(t, 3, *first.ExitCode)
	require.Contains(t, first.Error, "exit code 3: not yet")
	require.Equal(t, "node-a:7", first.Node)
	require.False(t, first.Start.IsZero())
	require.False(t, first.End.Before(first.Start))
	require.Equal(t, 2, second.Number)
	require.Equal(t, sluicetype.OutcomeSuccess, second.Outcome)
	require.NotNil(t, second.ExitCode)
	require.Equal(t, 0, *second.ExitCode)
	require.Zero(t, second.HTTPStatus)

	// A job that never fails writes no history.
	q, err := c.Enqueue(context.Background(), sluice.EnqueueParams{Type: "quick"})
	require.NoError(t, err)
	waitStatus(t, d, q.ID, sluicetype.StatusSuccess)
	info, err = c.Job(context.Background(), q.ID)
	require.NoError(t, err)
	require.Empty(t, info.History)
	require.NotEmpty(t, info.TraceID, "with a tracer, an enqueue without a trace starts one")
	require.NotEqual(t, traceID, info.TraceID())
}
