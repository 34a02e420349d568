package cli

import (
	"context"
	"fmt"
	"net/url"
	"time"

	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/sluicehq/sluice/config"
)

// tracerProvider builds the OTLP exporter the config's tracing section
// asks for, or returns nil (no spans) when it names no endpoint. The
// provider is shut down, which flushes what it holds, when Main returns.
func (a *app) tracerProvider(t config.Tracing) (trace.TracerProvider, error) {
	if t.Endpoint == "" {
		return nil, nil
	}
	exp, err := otlptracehttp.New(context.Background(), otlptracehttp.WithEndpointURL(tracesURL(t.Endpoint)), otlptracehttp.WithHeaders(t.Headers))
	if err != nil {
		return nil, fmt.Errorf("tracing: %w", err)
	}
	res := resource.NewWithAttributes(semconv.SchemaURL, semconv.ServiceName(t.ServiceName))
	tp := sdktrace.NewTracerProvider(
		sdktrace.WithBatcher(exp),
		sdktrace.WithResource(res),
		// A caller's sampling decision stands; sluice samples only the
		// traces it starts (jobs enqueued without one).
		sdktrace.WithSampler(sdktrace.ParentBased(sdktrace.TraceIDRatioBased(t.Sampling))),
	)
	a.tracing = tp
	a.log.Info("exporting traces", "endpoint", t.Endpoint, "service", t.ServiceName, "sampling", t.Sampling)
	return tp, nil
}

// tracesURL is where spans go: a collector's base URL, such as
// http://otel-collector:4318, gets OTLP's /v1/traces path, as the OTLP
// exporters' base endpoint setting does; a URL with a path is used as it
// is. (The exporter posts to a URL's own path, so without this the
// endpoint of docs/observability.md "Tracing" would post to "/", which collectors refuse.)
func tracesURL(endpoint string) string {
	u, err := url.Parse(endpoint)
	if err != nil || (u.Path != "" && u.Path != "/") {
		return endpoint // config validation has parsed it; keep what was given
	}
	u.Path = "/v1/traces"
	return u.String()
}

// stopTracing flushes the spans still buffered.
func (a *app) stopTracing() {
	if a.tracing == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := a.tracing.Shutdown(ctx); err != nil {
		a.log.Warn("flushing traces", "err", err)
	}
}
