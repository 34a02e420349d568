package sluice

import (
	"context"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/sluicehq/sluice/driver"
	"github.com/sluicehq/sluice/internal/worker"
	"github.com/sluicehq/sluice/sluicetype"
)

// TracerName is the instrumentation scope of sluice's spans.
const TracerName = "github.com/sluicehq/sluice"

// traceContext is how sluice carries a trace across the database, HTTP
// and process boundaries: W3C Trace Context, whatever propagators the
// application installed globally, because the receivers it reaches
// (webhook endpoints, commands, other languages' SDKs) all read it.
var traceContext = propagation.TraceContext{}

// TraceParent returns the W3C traceparent header value of the span in
// ctx, or "" when ctx carries none. A handler passes it on to what it
// calls, as the webhook and command handlers do.
func TraceParent(ctx context.Context) string {
	if !trace.SpanContextFromContext(ctx).IsValid() {
		return ""
	}
	c := propagation.MapCarrier{}
	traceContext.Inject(ctx, c)
	return c["traceparent"]
}

// WithTraceParent returns ctx carrying the remote span context of a W3C
// traceparent value; an invalid or empty value leaves ctx as it is.
func WithTraceParent(ctx context.Context, traceparent string) context.Context {
	if traceparent == "" {
		return ctx
	}
	return traceContext.Extract(ctx, propagation.MapCarrier{"traceparent": traceparent})
}

// tracerOf is the client's tracer: cfg's provider, or the global one, which
// is a no-op until the application installs one.
func tracerOf(tp trace.TracerProvider) trace.Tracer {
	if tp == nil {
		tp = otel.GetTracerProvider()
	}
	return tp.Tracer(TracerName)
}

// startEnqueue starts the producer span of one enqueue call. Every job it
// inserts records the span's context, so that running the job continues
// the caller's trace. Without a tracer the span is the caller's own (or
// none), and the jobs record that.
func (c *Client) startEnqueue(ctx context.Context, ps []EnqueueParams) (context.Context, trace.Span) {
	ctx, span := c.tracer.Start(ctx, "sluice.enqueue", trace.WithSpanKind(trace.SpanKindProducer))
	// Attributes only for a span that keeps them: without a tracer the
	// hot path allocates nothing for tracing.
	if span.IsRecording() {
		span.SetAttributes(attribute.Int("sluice.jobs", len(ps)))
		if len(ps) == 1 {
			span.SetAttributes(attribute.String("sluice.job.type", ps[0].Type))
		}
	}
	return ctx, span
}

// startRun starts the consumer span of one attempt as a child of the
// context recorded at enqueue: one trace then runs from the request that
// enqueued the job through every attempt to what the handler calls. A job
// enqueued without a trace (a schedule, a plain INSERT) starts a new one.
func (c *Client) startRun(ctx context.Context, row sluicetype.JobRow) (context.Context, trace.Span) {
	ctx, span := c.tracer.Start(WithTraceParent(ctx, row.TraceParent), "sluice.run "+row.Type, trace.WithSpanKind(trace.SpanKindConsumer))
	if span.IsRecording() {
		span.SetAttributes(
			attribute.Int64("sluice.job.id", row.ID),
			attribute.String("sluice.job.type", row.Type),
			attribute.String("sluice.queue", row.Queue),
			attribute.Int("sluice.job.attempt", row.Attempts),
		)
	}
	return ctx, span
}

// endRun records the attempt's outcome on its span and ends it. The
// error recorded is the summary, which carries no user data (see
// DetailError).
func endRun(span trace.Span, o worker.Result) {
	defer span.End()
	if !span.IsRecording() {
		return
	}
	span.SetAttributes(attribute.String("sluice.job.outcome", string(outcomeOf(o))))
	if o.HTTPStatus != 0 {
		span.SetAttributes(attribute.Int("http.response.status_code", o.HTTPStatus))
	}
	if o.ExitCode != nil {
		span.SetAttributes(attribute.Int("process.exit.code", *o.ExitCode))
	}
	if o.Error != nil {
		msg := o.Summary
		if msg == "" {
			msg = *o.Error
		}
		span.SetStatus(codes.Error, driver.Truncate(msg, maxLoggedError, false))
	}
}

// traceIDOf is the trace id of a traceparent value, for log lines, or "".
func traceIDOf(ctx context.Context) string {
	sc := trace.SpanContextFromContext(ctx)
	if !sc.IsValid() {
		return ""
	}
	return sc.TraceID().String()
}
