// Package webhook runs sluice jobs by POSTing them to an HTTP endpoint. The
// status code decides the outcome: 2xx succeeds, 408, 425, 429, 5xx and
// network failures retry (after Retry-After when the server sends one), a
// redirect or any other 4xx fails the job at once. The batch HTTP sink
// delivers chunks through the same Endpoint.
package webhook

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/sluicehq/sluice"
)

// DefaultTimeout bounds a request when Config.Timeout is zero, so that an
// endpoint that never answers cannot hold a worker forever.
const DefaultTimeout = 30 * time.Second

// Message is the JSON body a webhook receives. Command handlers write the
// same JSON to stdin, and Go receivers can decode it into this type.
type Message struct {
	ID          int64           `json:"id"`
	Type        string          `json:"type"`
	Key         string          `json:"key"`
	Attempt     int             `json:"attempt"`
	MaxAttempts int             `json:"max_attempts"`
	Payload     json.RawMessage `json:"payload"`
}

// Encode returns the protocol body for job.
func Encode(job *sluice.Job) ([]byte, error) {
	m := Message{ID: job.ID, Type: job.Type, Key: job.Key, Attempt: job.Attempt,
		MaxAttempts: job.MaxAttempts, Payload: job.Payload}
	if len(m.Payload) == 0 {
		// Enqueue stores an absent payload as {}; a job built by hand
		// should look the same to the receiver.
		m.Payload = json.RawMessage("{}")
	}
	b, err := json.Marshal(m)
	if err != nil {
		return nil, fmt.Errorf("encode job %d: %w", job.ID, err)
	}
	return b, nil
}

// Handler POSTs jobs to one endpoint. It is safe for concurrent use.
type Handler struct {
	ep *Endpoint
}

var _ sluice.Handler = (*Handler)(nil)

// New checks cfg and builds a handler.
func New(cfg Config) (*Handler, error) {
	ep, err := NewEndpoint(cfg)
	if err != nil {
		return nil, fmt.Errorf("webhook: %w", err)
	}
	return &Handler{ep: ep}, nil
}

// Work POSTs job and classifies the response as Endpoint.Post does; a
// success keeps the response body as the job's result.
func (h *Handler) Work(ctx context.Context, job *sluice.Job) error {
	body, err := Encode(job)
	if err != nil {
		// A stored payload that is not JSON will never encode.
		return sluice.Permanent(err)
	}
	// The call is a client span in the job's trace, whose context the
	// receiver gets as traceparent. Without a tracer the span is the
	// job's (or none), and traceparent passes on the enqueuer's trace.
	ctx, span := trace.SpanFromContext(ctx).TracerProvider().Tracer(sluice.TracerName).Start(ctx, "sluice.webhook POST",
		trace.WithSpanKind(trace.SpanKindClient))
	defer span.End()
	extra := http.Header{}
	extra.Set("X-Sluice-Job-Id", strconv.FormatInt(job.ID, 10))
	extra.Set("X-Sluice-Attempt", strconv.Itoa(job.Attempt))
	if job.Key != "" {
		if err := checkHeaderValue("X-Sluice-Key", job.Key); err != nil {
			// HTTP cannot carry it, so no attempt would ever be sent.
			return sluice.Permanent(err)
		}
		extra.Set("X-Sluice-Key", job.Key)
	}
	if tp := sluice.TraceParent(ctx); tp != "" {
		extra.Set("Traceparent", tp)
	}
	if tok := job.ProgressToken(); tok != "" {
		extra.Set("X-Sluice-Progress-Token", tok)
	}
	result, code, err := h.ep.post(ctx, body, job.IdempotencyKey(), extra)
	if code != 0 {
		job.SetHTTPStatus(code)
		span.SetAttributes(attribute.Int("http.response.status_code", code))
	}
	if err != nil {
		span.SetStatus(codes.Error, "webhook call failed")
		return err
	}
	job.SetResult(result)
	return nil
}
