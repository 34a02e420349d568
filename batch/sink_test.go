package batch_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/batch"
	"github.com/sluicehq/sluice/handler/webhook"
)

// hookServer answers the batch HTTP sink with the statuses and headers of
// answer, one call after another, and records when each call came.
type hookServer struct {
	*httptest.Server
	mu    sync.Mutex
	calls []time.Time
	other int // requests that reached /other, the redirect target
}

func newHookServer(t *testing.T, answer func(call int, w http.ResponseWriter, r *http.Request)) *hookServer {
	s := &hookServer{}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		if r.URL.Path == "/other" {
			s.other++
			s.mu.Unlock()
			return
		}
		s.calls = append(s.calls, time.Now())
		call := len(s.calls)
		s.mu.Unlock()
		answer(call, w, r)
	}))
	t.Cleanup(s.Close)
	return s
}

func (s *hookServer) snapshot() ([]time.Time, int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]time.Time(nil), s.calls...), s.other
}

// httpBatch runs ten rows through an HTTP sink in one chunk, with quick
// retries so that only a Retry-After can make them wait.
func httpBatch(t *testing.T, f *fixture, sink batch.HTTPSink) error {
	f.create(t)
	f.insert(t, 1, 10)
	b := f.batch("hook")
	b.ChunkSize = 100
	b.Retry = batch.Retry{Attempts: 3, Base: time.Millisecond, Max: time.Millisecond}
	b.Sink = sink
	return b.Run(context.Background(), f.d)
}

// A redirect is not followed: following it would turn the POST into a GET
// elsewhere and count a chunk that nobody received as delivered.
func TestHTTPSinkRedirectNotFollowed(t *testing.T) {
	f := open(t, "sqlite")
	srv := newHookServer(t, func(_ int, w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/other", http.StatusFound)
	})
	err := httpBatch(t, f, batch.HTTPSink{URL: srv.URL + "/hook"})
	require.ErrorContains(t, err, "HTTP 302: redirect to \"/other\" not followed")
	calls, other := srv.snapshot()
	require.Zero(t, other, "the redirect was followed")
	require.Len(t, calls, 1, "a redirect is permanent: not retried")
	cps := f.checkpoints(t, "hook")
	require.Equal(t, batch.StatusFailed, cps[0].Status)
	require.Zero(t, cps[0].RowsDone)
}

// 425 Too Early is transient, as for job webhooks; the retried request is
// signed and carries the chunk's idempotency key.
func TestHTTPSinkRetriesTooEarly(t *testing.T) {
	f := open(t, "sqlite")
	var mu sync.Mutex
	var keys []string
	srv := newHookServer(t, func(call int, w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if err := webhook.Verify("s3cret", r.Header.Get("X-Sluice-Signature"), body, time.Minute); err != nil {
			http.Error(w, err.Error(), http.StatusUnauthorized)
			return
		}
		mu.Lock()
		keys = append(keys, r.Header.Get("Idempotency-Key"))
		mu.Unlock()
		if call == 1 {
			w.WriteHeader(http.StatusTooEarly)
		}
	})
	require.NoError(t, httpBatch(t, f, batch.HTTPSink{URL: srv.URL + "/hook", Secret: "s3cret"}))
	calls, _ := srv.snapshot()
	require.Len(t, calls, 2)
	mu.Lock()
	require.Equal(t, []string{"batch:hook:all:", "batch:hook:all:"}, keys)
	mu.Unlock()
	cps := f.checkpoints(t, "hook")
	require.Equal(t, batch.StatusDone, cps[0].Status)
	require.Equal(t, int64(10), cps[0].RowsDone)
}

// A Retry-After (seconds or an HTTP date) holds the next request back,
// capped by MaxRetryAfter; the batch's own backoff here is a millisecond.
func TestHTTPSinkHonoursRetryAfter(t *testing.T) {
	for _, tc := range []struct {
		name       string
		retryAfter func() string
		max        time.Duration
		wait       time.Duration
	}{
		{"seconds", func() string { return "1" }, 0, time.Second},
		{"date", func() string { return time.Now().Add(2 * time.Second).UTC().Format(http.TimeFormat) }, 0, time.Second},
		{"capped", func() string { return "3600" }, 300 * time.Millisecond, 300 * time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := open(t, "sqlite")
			srv := newHookServer(t, func(call int, w http.ResponseWriter, r *http.Request) {
				if call == 1 {
					w.Header().Set("Retry-After", tc.retryAfter())
					w.WriteHeader(http.StatusServiceUnavailable)
				}
			})
			require.NoError(t, httpBatch(t, f, batch.HTTPSink{URL: srv.URL + "/hook", MaxRetryAfter: tc.max}))
			calls, _ := srv.snapshot()
			require.Len(t, calls, 2)
			gap := calls[1].Sub(calls[0])
			require.GreaterOrEqual(t, gap, tc.wait, "Retry-After not honoured")
			require.Less(t, gap, tc.wait+5*time.Second)
		})
	}
}
