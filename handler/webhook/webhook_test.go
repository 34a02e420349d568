package webhook_test

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/handler/webhook"
)

func testJob() *sluice.Job {
	return &sluice.Job{ID: 42, Type: "order_sync", Key: "order-7", Attempt: 2, MaxAttempts: 5,
		Payload: json.RawMessage(`{"order":7}`), CreatedAt: time.UnixMicro(1700000000123456)}
}

func newHandler(t *testing.T, cfg webhook.Config) *webhook.Handler {
	t.Helper()
	h, err := webhook.New(cfg)
	require.NoError(t, err)
	return h
}

func work(t *testing.T, h *webhook.Handler, job *sluice.Job) error {
	t.Helper()
	return h.Work(context.Background(), job)
}

func TestSuccessSendsProtocolAndStoresBody(t *testing.T) {
	var got *http.Request
	var gotBody []byte
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = r
		gotBody, _ = io.ReadAll(r.Body)
		w.Write([]byte(`{"synced":true}`))
	}))
	defer srv.Close()

	h := newHandler(t, webhook.Config{URL: srv.URL + "/hook", Headers: map[string]string{"X-Tenant": "acme"}})
	job := testJob()
	require.NoError(t, work(t, h, job))

	require.Equal(t, http.MethodPost, got.Method)
	require.Equal(t, "/hook", got.URL.Path)
	require.Equal(t, "application/json", got.Header.Get("Content-Type"))
	require.Equal(t, "job-42-1700000000123456", got.Header.Get("Idempotency-Key"), "the key names the job, not its business key")
	require.Equal(t, "order-7", got.Header.Get("X-Sluice-Key"))
	require.Equal(t, "42", got.Header.Get("X-Sluice-Job-Id"))
	require.Equal(t, "2", got.Header.Get("X-Sluice-Attempt"))
	require.Equal(t, "acme", got.Header.Get("X-Tenant"))
	require.Empty(t, got.Header.Get("X-Sluice-Signature"), "no secret, no signature")
	require.JSONEq(t, `{"id":42,"type":"order_sync","key":"order-7","attempt":2,"max_attempts":5,"payload":{"order":7}}`,
		string(gotBody))
	require.Equal(t, `{"synced":true}`, resultOf(t, job))
}

func TestIdempotencyKeyWithoutBusinessKey(t *testing.T) {
	var key string
	var sent http.Header
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		key, sent = r.Header.Get("Idempotency-Key"), r.Header
	}))
	defer srv.Close()
	job := testJob()
	job.Key = ""
	require.NoError(t, work(t, newHandler(t, webhook.Config{URL: srv.URL}), job))
	require.Equal(t, "job-42-1700000000123456", key)
	require.Equal(t, job.IdempotencyKey(), key)
	require.NotContains(t, sent, "X-Sluice-Key", "a job without a business key sends no X-Sluice-Key")
}

// A 2xx whose body stops before its end (the endpoint's timeout here) is a
// failed call, transient, and says so; the job keeps no partial result.
func TestBodyCutByTimeoutFails(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", "100")
		w.WriteHeader(200)
		w.Write([]byte(`{"partial":`))
		w.(http.Flusher).Flush()
		select {
		case <-r.Context().Done():
		case <-time.After(10 * time.Second):
		}
	}))
	defer srv.Close()
	job := testJob()
	err := work(t, newHandler(t, webhook.Config{URL: srv.URL, Timeout: 300 * time.Millisecond}), job)
	require.Error(t, err)
	require.False(t, sluice.IsPermanent(err), "a cut body is retried: %v", err)
	require.Contains(t, err.Error(), "HTTP 200, but the response body stopped after 11 bytes: not complete within 300ms")
	_, ok := job.Result()
	require.False(t, ok, "no partial result")
}

func TestResultIsCappedAt64KiB(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte(strings.Repeat("a", 200<<10)))
	}))
	defer srv.Close()
	job := testJob()
	require.NoError(t, work(t, newHandler(t, webhook.Config{URL: srv.URL}), job))
	require.Len(t, resultOf(t, job), 64<<10)
}

func TestServiceUnavailableThenSuccess(t *testing.T) {
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if calls.Add(1) == 1 {
			http.Error(w, "warming up", http.StatusServiceUnavailable)
			return
		}
		w.Write([]byte("ok"))
	}))
	defer srv.Close()
	h := newHandler(t, webhook.Config{URL: srv.URL})

	err := work(t, h, testJob())
	require.Error(t, err)
	require.False(t, sluice.IsPermanent(err), "503 is transient: %v", err)
	require.Contains(t, err.Error(), "HTTP 503: warming up")

	job := testJob()
	require.NoError(t, work(t, h, job))
	require.Equal(t, "ok", resultOf(t, job))
}

func TestTransientStatuses(t *testing.T) {
	for _, code := range []int{408, 425, 429, 500, 502, 504} {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(code)
		}))
		err := work(t, newHandler(t, webhook.Config{URL: srv.URL}), testJob())
		srv.Close()
		require.Error(t, err, "status %d", code)
		require.False(t, sluice.IsPermanent(err), "status %d is transient", code)
	}
}

func TestTooManyRequestsHonoursRetryAfter(t *testing.T) {
	retryAfter := "120"
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Retry-After", retryAfter)
		w.WriteHeader(http.StatusTooManyRequests)
	}))
	defer srv.Close()

	err := work(t, newHandler(t, webhook.Config{URL: srv.URL}), testJob())
	require.Error(t, err)
	require.False(t, sluice.IsPermanent(err))
	require.Equal(t, 120*time.Second, retryAfterOf(err))

	retryAfter = time.Now().Add(time.Hour).UTC().Format(http.TimeFormat)
	err = work(t, newHandler(t, webhook.Config{URL: srv.URL}), testJob())
	require.InDelta(t, time.Hour.Seconds(), retryAfterOf(err).Seconds(), 2)

	retryAfter = "3600"
	err = work(t, newHandler(t, webhook.Config{URL: srv.URL, MaxRetryAfter: time.Minute}), testJob())
	require.Equal(t, time.Minute, retryAfterOf(err), "MaxRetryAfter caps the delay")
}

func TestBadRequestIsPermanentWithBody(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusBadRequest)
		w.Write([]byte(`{"error":"order 7 does not exist"}`))
	}))
	defer srv.Close()
	err := work(t, newHandler(t, webhook.Config{URL: srv.URL}), testJob())
	require.True(t, sluice.IsPermanent(err), "400 is permanent: %v", err)
	require.Equal(t, `HTTP 400: {"error":"order 7 does not exist"}`, err.Error())
}

func TestErrorBodyIsTruncated(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusUnprocessableEntity)
		w.Write([]byte(strings.Repeat("x", 100<<10)))
	}))
	defer srv.Close()
	err := work(t, newHandler(t, webhook.Config{URL: srv.URL}), testJob())
	require.True(t, sluice.IsPermanent(err))
	require.True(t, strings.HasPrefix(err.Error(), "HTTP 422: xxx"))
	require.LessOrEqual(t, len(err.Error()), 4<<10)
}

func TestRedirectIsNotFollowed(t *testing.T) {
	var followed atomic.Bool
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/new" {
			followed.Store(true)
			return
		}
		http.Redirect(w, r, "/new", http.StatusFound)
	}))
	defer srv.Close()
	for _, cfg := range []webhook.Config{{URL: srv.URL}, {URL: srv.URL, Client: &http.Client{}}} {
		err := work(t, newHandler(t, cfg), testJob())
		require.True(t, sluice.IsPermanent(err), "a redirect is permanent: %v", err)
		require.Contains(t, err.Error(), "HTTP 302: redirect to \"/new\" not followed")
		require.False(t, followed.Load())
	}
}

func TestTimeoutBoundsAnEndpointThatNeverAnswers(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// The server notices the client hanging up only once the body is read.
		io.Copy(io.Discard, r.Body)
		select {
		case <-r.Context().Done():
		case <-time.After(10 * time.Second):
		}
	}))
	defer srv.Close()
	h := newHandler(t, webhook.Config{URL: srv.URL, Timeout: 200 * time.Millisecond})

	start := time.Now()
	err := work(t, h, testJob())
	took := time.Since(start)
	require.Error(t, err)
	require.False(t, sluice.IsPermanent(err), "a timeout is transient")
	require.Contains(t, err.Error(), "no response within 200ms")
	// The endpoint would hold the request for 10 s.
	require.Less(t, took, 5*time.Second, "the handler returns at its timeout")
}

func TestCallerContextEndsRequest(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		<-r.Context().Done()
	}))
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	err := newHandler(t, webhook.Config{URL: srv.URL}).Work(ctx, testJob())
	require.ErrorIs(t, err, context.DeadlineExceeded, "the worker must see its own context's end")
}

func TestConnectionRefusedIsTransient(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	ln.Close()

	err = work(t, newHandler(t, webhook.Config{URL: "http://" + addr + "/hook"}), testJob())
	require.Error(t, err)
	require.False(t, sluice.IsPermanent(err))
	require.Contains(t, err.Error(), "connection refused")
}

func TestSignatureVerifies(t *testing.T) {
	var sig, key string
	var body []byte
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sig = r.Header.Get("X-Sluice-Signature")
		key = r.Header.Get("Idempotency-Key")
		body, _ = io.ReadAll(r.Body)
	}))
	defer srv.Close()
	require.NoError(t, work(t, newHandler(t, webhook.Config{URL: srv.URL, Secret: "s3cret"}), testJob()))

	require.Regexp(t, `^t=\d+,v1=[0-9a-f]{64},v2=[0-9a-f]{64}$`, sig)
	require.NoError(t, webhook.Verify("s3cret", sig, body, time.Minute))
	require.NoError(t, webhook.VerifyKey("s3cret", sig, key, body, time.Minute))
	require.ErrorContains(t, webhook.VerifyKey("s3cret", sig, key+"0", body, time.Minute), "mismatch",
		"v2 covers the Idempotency-Key: a replay under another key is refused")
	require.ErrorContains(t, webhook.VerifyKey("s3cret", strings.Split(sig, ",v2=")[0], key, body, time.Minute), "no v2",
		"v1 alone does not cover the key")
	require.ErrorContains(t, webhook.Verify("wrong", sig, body, time.Minute), "mismatch")
	require.ErrorContains(t, webhook.Verify("s3cret", sig, append(body, ' '), time.Minute), "mismatch")
	require.ErrorContains(t, webhook.Verify("s3cret", "", body, time.Minute), "missing")
}

func TestSignatureTimestamp(t *testing.T) {
	body := []byte(`{"id":1}`)
	old := webhook.Sign("k", time.Now().Add(-time.Hour), body)
	require.ErrorContains(t, webhook.Verify("k", old, body, 5*time.Minute), "tolerance")
	require.NoError(t, webhook.Verify("k", old, body, 0), "zero tolerance skips the age check")

	// During a secret rotation a sender can sign with both secrets.
	now := time.Now()
	rotated := webhook.Sign("old", now, body) + ",v1=" + strings.Split(webhook.Sign("new", now, body), "v1=")[1]
	require.NoError(t, webhook.Verify("new", rotated, body, time.Minute))
	require.NoError(t, webhook.Verify("old", rotated, body, time.Minute))
}

func TestKeyWithControlCharactersIsPermanent(t *testing.T) {
	job := testJob()
	job.Key = "a\nb"
	err := work(t, newHandler(t, webhook.Config{URL: "http://127.0.0.1:1"}), job)
	require.True(t, sluice.IsPermanent(err), "no attempt could ever send it: %v", err)
}

func TestURLPasswordStaysOutOfErrors(t *testing.T) {
	_, err := webhook.New(webhook.Config{URL: "ftp://user:hunter2@example.com/x"})
	require.Error(t, err)
	require.NotContains(t, err.Error(), "hunter2")
	_, err = webhook.New(webhook.Config{URL: "http://user:hunter2@example.com/%zz"})
	require.Error(t, err)
	require.NotContains(t, err.Error(), "hunter2")
}

func TestNewRejectsBadConfig(t *testing.T) {
	for _, cfg := range []webhook.Config{
		{URL: ""},
		{URL: "/relative"},
		{URL: "ftp://example.com/x"},
		{URL: "http://"},
		{URL: "http://example.com", Timeout: -time.Second},
		{URL: "http://example.com", Headers: map[string]string{"Bad Name": "x"}},
		{URL: "http://example.com", Headers: map[string]string{"X-A": "a\r\nX-B: b"}},
		{URL: "http://example.com", Headers: map[string]string{"idempotency-key": "x"}},
	} {
		_, err := webhook.New(cfg)
		require.Error(t, err, "%+v", cfg)
	}
}

// resultOf reads the result the handler stored.
func resultOf(t *testing.T, job *sluice.Job) string {
	t.Helper()
	r, ok := job.Result()
	require.True(t, ok, "no result stored")
	return r
}

// retryAfterOf finds the delay sluice.RetryAfter attached to err; 0 when there is none.
func retryAfterOf(err error) time.Duration {
	d, _ := sluice.RetryAfterDelay(err)
	return d
}
