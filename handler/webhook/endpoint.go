package webhook

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/driver"
	"github.com/sluicehq/sluice/sluicetype"
)

// Config configures an endpoint: a job type's webhook or a batch's HTTP sink.
type Config struct {
	// URL receives the POST; it must be an absolute http or https URL.
	URL string
	// Timeout bounds the whole request, response body included. Zero
	// means DefaultTimeout.
	Timeout time.Duration
	// Secret signs each request in X-Sluice-Signature when set.
	Secret string
	// Headers are sent with every request. They cannot replace the
	// headers of the protocol.
	Headers map[string]string
	// Client sends the requests. Nil uses a client shared by every
	// endpoint, whose connections are pooled. Redirects are never
	// followed, whichever client is used.
	Client *http.Client
	// MaxRetryAfter caps the delay a Retry-After header can ask for. Zero
	// leaves the cap to the caller (for a job, the type's maximum backoff).
	MaxRetryAfter time.Duration
}

// sharedTransport pools connections for every endpoint that does not bring
// its own client: most deployments call a handful of hosts from many
// workers, and a new TLS handshake per job would dominate small jobs.
var sharedTransport = func() *http.Transport {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.MaxIdleConns = 512
	t.MaxIdleConnsPerHost = 64
	return t
}()

var sharedClient = &http.Client{Transport: sharedTransport, CheckRedirect: noRedirects}

// noRedirects stops at the first response: following a 301 or 302 would
// turn the POST into a GET somewhere else and report success for work
// that never ran.
func noRedirects(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }

// reservedHeaders are set by the protocol and cannot be configured.
var reservedHeaders = []string{"Content-Type", "Idempotency-Key", "X-Sluice-Key", "X-Sluice-Job-Id", "X-Sluice-Attempt", "X-Sluice-Progress-Token", "X-Sluice-Signature", "Traceparent"}

// Endpoint delivers signed POSTs to one URL and classifies the answers.
// Job webhooks and the batch HTTP sink both deliver through it, so that
// both follow one protocol. It is safe for concurrent use.
type Endpoint struct {
	url           string
	shownURL      string // url without its password, for messages
	timeout       time.Duration
	secret        string
	headers       http.Header
	client        *http.Client
	maxRetryAfter time.Duration
}

// NewEndpoint checks cfg and builds an endpoint.
func NewEndpoint(cfg Config) (*Endpoint, error) {
	u, err := parseURL(cfg.URL)
	if err != nil {
		return nil, err
	}
	if cfg.Timeout < 0 {
		return nil, fmt.Errorf("timeout %s is negative", cfg.Timeout)
	}
	e := &Endpoint{url: cfg.URL, shownURL: u.Redacted(), timeout: cfg.Timeout, secret: cfg.Secret, headers: http.Header{},
		client: sharedClient, maxRetryAfter: cfg.MaxRetryAfter}
	if e.timeout == 0 {
		e.timeout = DefaultTimeout
	}
	for name, value := range cfg.Headers {
		if err := CheckHeader(name, value); err != nil {
			return nil, err
		}
		e.headers.Set(name, value)
	}
	if cfg.Client != nil {
		c := *cfg.Client
		c.CheckRedirect = noRedirects
		e.client = &c
	}
	return e, nil
}

// CheckURL reports whether u can receive webhooks: an absolute http or
// https URL with a host.
func CheckURL(u string) error {
	_, err := parseURL(u)
	return err
}

// parseURL checks u as CheckURL does. Its errors show the URL without a
// password, since it often comes from the environment.
func parseURL(u string) (*url.URL, error) {
	p, err := url.Parse(u)
	if err != nil {
		// url.Error repeats the whole URL; keep only what is wrong with it.
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return nil, fmt.Errorf("invalid URL: %w", err)
	}
	if p.Scheme != "http" && p.Scheme != "https" {
		return nil, fmt.Errorf("invalid URL %q: want an absolute http:// or https:// URL", p.Redacted())
	}
	if p.Hostname() == "" {
		return nil, fmt.Errorf("invalid URL %q: no host", p.Redacted())
	}
	return p, nil
}

// CheckHeader reports whether a configured header can be sent: a valid
// name that the protocol does not set itself, and a value on one line.
func CheckHeader(name, value string) error {
	if name == "" || strings.IndexFunc(name, func(r rune) bool { return !isTokenChar(r) }) >= 0 {
		return fmt.Errorf("invalid header name %q", name)
	}
	for _, r := range reservedHeaders {
		if strings.EqualFold(name, r) {
			return fmt.Errorf("header %s is set by sluice and cannot be configured", r)
		}
	}
	if strings.ContainsAny(value, "\r\n\x00") {
		return fmt.Errorf("header %s: the value must be a single line", name)
	}
	return nil
}

// isTokenChar reports whether r may appear in a header name (RFC 9110 token).
func isTokenChar(r rune) bool {
	return r < 0x7f && (r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' ||
		strings.ContainsRune("!#$%&'*+-.^_`|~", r))
}

// checkHeaderValue reports whether value can travel in the header name,
// which cannot carry control characters.
func checkHeaderValue(name, value string) error {
	if strings.ContainsFunc(value, func(r rune) bool { return r < ' ' && r != '\t' || r == 0x7f }) {
		return fmt.Errorf("key %q has control characters, which an %s header cannot carry", value, name)
	}
	return nil
}

// Post sends body as JSON, signed when the endpoint has a secret, with
// Idempotency-Key key and the protocol headers in extra, and classifies the
// answer. A 2xx returns the response body, cut to what a job's result
// column holds. A redirect (never followed) or any other 4xx returns an
// error marked sluice.Permanent. 408, 425, 429, 5xx and requests that got
// no answer return a plain (transient) error, wrapped in sluice.RetryAfter
// when the server sent a Retry-After of seconds or an HTTP date, capped at
// MaxRetryAfter.
func (e *Endpoint) Post(ctx context.Context, body []byte, key string, extra http.Header) (string, error) {
	text, _, err := e.post(ctx, body, key, extra)
	return text, err
}

// post is Post that also returns the HTTP status, 0 when no response came.
func (e *Endpoint) post(ctx context.Context, body []byte, key string, extra http.Header) (string, int, error) {
	if err := checkHeaderValue("Idempotency-Key", key); err != nil {
		// HTTP cannot carry it, so no attempt would ever be sent.
		return "", 0, sluice.Permanent(err)
	}
	reqCtx, cancel := context.WithTimeout(ctx, e.timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(reqCtx, http.MethodPost, e.url, bytes.NewReader(body))
	if err != nil {
		return "", 0, sluice.Permanent(fmt.Errorf("build request: %w", err))
	}
	req.Header = e.headers.Clone()
	for name, values := range extra {
		req.Header[name] = values
	}
	req.Header.Set("User-Agent", "sluice-webhook")
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Idempotency-Key", key)
	if e.secret != "" {
		req.Header.Set("X-Sluice-Signature", SignKey(e.secret, time.Now(), key, body))
	}

	resp, err := e.client.Do(req)
	if err != nil {
		return "", 0, e.transportError(ctx, err)
	}
	defer resp.Body.Close()
	// Reading one byte past the limit reaches EOF on a body that fits, so
	// its connection goes back to the pool. A body longer than a result
	// holds is cut on purpose. A 2xx whose body stops early (a reset, or
	// the timeout) is a failed call, as a response whose headers come too
	// late is: the receiver did not finish answering, and the retry carries the
	// same Idempotency-Key, so a receiver that did the work answers again
	// without doing it twice.
	data, readErr := io.ReadAll(io.LimitReader(resp.Body, sluicetype.MaxResultLen+1))
	text := strings.ToValidUTF8(driver.Truncate(string(data), sluicetype.MaxResultLen, false), "\uFFFD")
	code := resp.StatusCode
	if readErr != nil && code >= 200 && code < 300 {
		if ctx.Err() == nil && errors.Is(readErr, context.DeadlineExceeded) {
			readErr = fmt.Errorf("not complete within %s", e.timeout)
		}
		return "", code, fmt.Errorf("POST %s: HTTP %d, but the response body stopped after %d bytes: %w",
			e.shownURL, code, len(data), readErr)
	}
	switch {
	case code >= 200 && code < 300:
		return text, code, nil
	case code >= 300 && code < 400:
		return "", code, sluice.Permanent(fmt.Errorf("HTTP %d: redirect to %q not followed: set the url to the final address",
			code, resp.Header.Get("Location")))
	case code >= 400 && code < 500 && code != http.StatusRequestTimeout && code != http.StatusTooEarly &&
		code != http.StatusTooManyRequests:
		return "", code, sluice.Permanent(statusError(code, text))
	}
	err = statusError(code, text)
	if d, ok := parseRetryAfter(resp.Header.Get("Retry-After"), time.Now()); ok {
		if e.maxRetryAfter > 0 {
			d = min(d, e.maxRetryAfter)
		}
		return "", code, sluice.RetryAfter(err, d)
	}
	return "", code, err
}

// transportError explains a request that got no response. It is
// transient either way. When the caller's context ended (the type's
// timeout, or a shutdown) the context error stays wrapped so the caller
// sees it; the endpoint's own timeout is reported as such instead.
func (e *Endpoint) transportError(ctx context.Context, err error) error {
	if ctx.Err() == nil && errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("POST %s: no response within %s", e.shownURL, e.timeout)
	}
	return err
}

// statusError keeps the start of the response body, where an error
// message usually is, within what the job's last_error column holds. The
// body is the detail: last_error keeps it, logs show it only at debug
// level, since a receiver may echo the payload.
func statusError(code int, body string) error {
	body = strings.TrimSpace(body)
	if body == "" {
		return fmt.Errorf("HTTP %d %s", code, http.StatusText(code))
	}
	status := fmt.Sprintf("HTTP %d", code)
	return &sluice.DetailError{Err: errors.New(status), Detail: driver.Truncate(body, sluicetype.MaxErrorLen-len(status+": "), false)}
}

// parseRetryAfter reads a Retry-After value: delay seconds or an HTTP date.
func parseRetryAfter(v string, now time.Time) (time.Duration, bool) {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0, false
	}
	if secs, err := strconv.ParseInt(v, 10, 64); err == nil {
		if secs < 0 {
			return 0, false
		}
		// Cap before converting so a huge value cannot overflow.
		return time.Duration(min(secs, int64(365*24*time.Hour/time.Second))) * time.Second, true
	}
	t, err := http.ParseTime(v)
	if err != nil {
		return 0, false
	}
	return max(t.Sub(now), 0), true
}
