package server_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/propagation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/handler/webhook"
	"github.com/sluicehq/sluice/internal/testkit/clienttest"
	"github.com/sluicehq/sluice/internal/testkit/testdb"
	"github.com/sluicehq/sluice/server"
	"github.com/sluicehq/sluice/sluicetype"
)

// TestTraceAcrossEnqueueAndWebhook follows one trace from a caller's
// request through the HTTP API, the job's run and its webhook call to the
// receiving service, which, like a service in another language, knows the
// trace only from the traceparent header. The first call answers 503, so
// the job's attempt history and both attempts' spans are checked too.
func TestTraceAcrossEnqueueAndWebhook(t *testing.T) {
	t.Parallel()
	d := testdb.Open(t, "sqlite")
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	tracer := tp.Tracer("test")

	var (
		mu       sync.Mutex
		received []trace.SpanContext // the parent each receiver call was given
	)
	receiver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx := propagation.TraceContext{}.Extract(r.Context(), propagation.HeaderCarrier(r.Header))
		_, span := tracer.Start(ctx, "receiver", trace.WithSpanKind(trace.SpanKindServer))
		defer span.End()
		mu.Lock()
		received = append(received, trace.SpanContextFromContext(ctx))
		first := len(received) == 1
		mu.Unlock()
		if first {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		w.Write([]byte(`{"ok":true}`))
	}))
	t.Cleanup(receiver.Close)

	hook, err := webhook.New(webhook.Config{URL: receiver.URL})
	require.NoError(t, err)
	var logs testdb.SyncBuffer
	c := clienttest.Start(t, sluice.Config{Driver: d, TracerProvider: tp, NodeID: "worker-1:42",
		Logger: slog.New(slog.NewJSONHandler(&logs, nil)),
		Types:  map[string]sluice.Type{"notify": {Handler: hook, Backoff: sluice.Backoff{Base: time.Millisecond, Max: time.Millisecond}}},
		Queues: map[string]sluice.QueueConfig{"default": {Concurrency: 1}}, PollMax: 20 * time.Millisecond})
	h, err := server.New(server.Config{Client: c, Tokens: []string{token}})
	require.NoError(t, err)
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	a := &api{t: t, srv: srv, c: c, d: d, tok: token}

	// The caller's request span, sent as a W3C traceparent.
	callerCtx, caller := tracer.Start(context.Background(), "caller")
	req, err := http.NewRequest("POST", srv.URL+"/v1/jobs", strings.NewReader(`{"type":"notify","payload":{"to":"ada"}}`))
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	propagation.TraceContext{}.Inject(callerCtx, propagation.HeaderCarrier(req.Header))
	r := a.send(req)
	caller.End()
	require.Equal(t, http.StatusCreated, r.code, r.raw)
	jobID := id(r)

	var job response
	testdb.WaitFor(t, time.Minute, "the job's success", func() bool {
		job = a.do("GET", fmt.Sprintf("/v1/jobs/%d", jobID), "")
		return job.body["status"] == string(sluicetype.StatusSuccess)
	})

	traceID := caller.SpanContext().TraceID()
	require.Equal(t, traceID.String(), job.body["trace_id"], "GET /v1/jobs/{id} shows the trace")

	spans := map[string][]tracetest.SpanStub{}
	for _, s := range exp.GetSpans() {
		require.Equal(t, traceID, s.SpanContext.TraceID(), "span %s is outside the caller's trace", s.Name)
		spans[s.Name] = append(spans[s.Name], s)
	}
	require.Len(t, spans["sluice.enqueue"], 1)
	enqueue := spans["sluice.enqueue"][0]
	require.Equal(t, caller.SpanContext().SpanID(), enqueue.Parent.SpanID(), "the enqueue is a child of the caller's span")
	require.True(t, enqueue.Parent.IsRemote(), "the caller's span came over HTTP")

	runs, calls, handled := spans["sluice.run notify"], spans["sluice.webhook POST"], spans["receiver"]
	require.Len(t, runs, 2, "one run span per attempt")
	require.Len(t, calls, 2)
	require.Len(t, handled, 2)
	for i := range 2 {
		require.Equal(t, enqueue.SpanContext.SpanID(), runs[i].Parent.SpanID(), "attempt %d continues the enqueue", i+1)
		require.Equal(t, runs[i].SpanContext.SpanID(), calls[i].Parent.SpanID(), "the webhook call is a child of its run")
		require.Equal(t, calls[i].SpanContext.SpanID(), handled[i].Parent.SpanID(), "the receiver's span is a child of the call")
		mu.Lock()
		require.Equal(t, calls[i].SpanContext.SpanID(), received[i].SpanID(), "traceparent names the call's span")
		require.Equal(t, traceID, received[i].TraceID(), "the receiver got the caller's trace")
		mu.Unlock()
	}

	// The attempt history shows both attempts, with the webhook's status.
	history, ok := job.body["history"].([]any)
	require.True(t, ok, "history missing: %s", job.raw)
	require.Len(t, history, 2)
	first, second := history[0].(map[string]any), history[1].(map[string]any)
	require.EqualValues(t, 1, first["attempt"])
	require.Equal(t, string(sluicetype.OutcomeRetry), first["outcome"])
	require.EqualValues(t, 503, first["http_status"])
	require.Contains(t, first["error"], "HTTP 503")
	require.Equal(t, "worker-1:42", first["node"])
	require.NotNil(t, first["duration_ms"])
	require.EqualValues(t, 2, second["attempt"])
	require.Equal(t, string(sluicetype.OutcomeSuccess), second["outcome"])
	require.EqualValues(t, 200, second["http_status"])

	// The failed attempt's log line names the trace.
	var line map[string]any
	for _, l := range strings.Split(strings.TrimSpace(logs.String()), "\n") {
		require.NoError(t, json.Unmarshal([]byte(l), &line))
		if line["msg"] == "job attempt failed" {
			break
		}
		line = nil
	}
	require.NotNil(t, line, "no attempt log line in %s", logs.String())
	require.Equal(t, traceID.String(), line["trace_id"])
}
