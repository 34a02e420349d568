package server_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/driver"
	"github.com/sluicehq/sluice/internal/testkit/testdb"
	"github.com/sluicehq/sluice/server"
	"github.com/sluicehq/sluice/sluicetype"
)

// token is the servers' API token in these tests: as strong as a real one
// must be (authtoken.Check).
const token = "s3cret-token-4Vq8Lr2Nx7Kd9Pw3"

// api is a running server and a way to call it.
type api struct {
	t   *testing.T
	srv *httptest.Server
	c   *sluice.Client
	d   driver.Driver
	tok string // sent as a Bearer token when set
}

// start serves a client on d; edit adjusts the config before New.
func start(t *testing.T, d driver.Driver, types map[string]sluice.Type, edit func(*server.Config)) *api {
	t.Helper()
	c, err := sluice.NewClient(sluice.Config{Driver: d, Types: types})
	require.NoError(t, err)
	cfg := server.Config{Client: c, Tokens: []string{"other-token-8Hy3Mc6Tz1Bf5Rj0", token}}
	if edit != nil {
		edit(&cfg)
	}
	h, err := server.New(cfg)
	require.NoError(t, err)
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return &api{t: t, srv: srv, c: c, d: d, tok: token}
}

type response struct {
	code int
	body map[string]any
	raw  string
}

func (a *api) do(method, path, body string) response {
	a.t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, a.srv.URL+path, rd)
	require.NoError(a.t, err)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	if a.tok != "" {
		req.Header.Set("Authorization", "Bearer "+a.tok)
	}
	return a.send(req)
}

func (a *api) send(req *http.Request) response {
	a.t.Helper()
	res, err := a.srv.Client().Do(req)
	require.NoError(a.t, err)
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	require.NoError(a.t, err)
	r := response{code: res.StatusCode, raw: string(b)}
	require.Equal(a.t, "application/json", res.Header.Get("Content-Type"), "every answer is JSON: %s", b)
	require.NoError(a.t, json.Unmarshal(b, &r.body), "body %s", b)
	return r
}

// rows counts every job in the database.
func (a *api) rows() int {
	a.t.Helper()
	jobs, err := a.d.ListJobs(context.Background(), sluicetype.ListParams{Limit: 1000})
	require.NoError(a.t, err)
	return len(jobs)
}

func id(r response) int64 { return int64(r.body["id"].(float64)) }

func TestEnqueueAndGet(t *testing.T) {
	testdb.ForEachDriver(t, func(t *testing.T, d driver.Driver) {
		a := start(t, d, nil, nil)
		r := a.do("POST", "/v1/jobs", `{"type":"sync","key":"order-7","payload":{"n":1},"priority":3,"delay":"30s","max_attempts":4}`)
		require.Equal(t, http.StatusCreated, r.code, r.raw)
		require.Equal(t, false, r.body["duplicate"])
		first := id(r)

		r = a.do("POST", "/v1/jobs", `{"type":"sync","key":"order-7"}`)
		require.Equal(t, http.StatusOK, r.code, r.raw)
		require.Equal(t, true, r.body["duplicate"])
		require.Equal(t, first, id(r))

		r = a.do("GET", fmt.Sprintf("/v1/jobs/%d", first), "")
		require.Equal(t, http.StatusOK, r.code, r.raw)
		require.Equal(t, "sync", r.body["type"])
		require.Equal(t, "order-7", r.body["key"])
		require.Equal(t, map[string]any{"n": float64(1)}, r.body["payload"])
		require.Equal(t, float64(3), r.body["priority"])
		require.Equal(t, float64(4), r.body["max_attempts"])
		require.Equal(t, "pending", r.body["status"])

		r = a.do("POST", "/v1/jobs", `{"type":"later","run_at":"2099-01-02T03:04:05Z","queue":"mail","dedupe":"active"}`)
		require.Equal(t, http.StatusCreated, r.code, r.raw)
		j, err := d.GetJob(context.Background(), id(r))
		require.NoError(t, err)
		require.Equal(t, "mail", j.Queue)
		require.Equal(t, "{}", string(j.Payload))
		require.True(t, j.NextRunAt.Equal(time.Date(2099, 1, 2, 3, 4, 5, 0, time.UTC)))

		r = a.do("GET", "/v1/jobs/999999", "")
		require.Equal(t, http.StatusNotFound, r.code, r.raw)
		require.NotEmpty(t, r.body["error"])
		r = a.do("GET", "/v1/jobs/abc", "")
		require.Equal(t, http.StatusBadRequest, r.code, r.raw)
		require.Contains(t, r.body["error"], "id")
	})
}

func TestBatch(t *testing.T) {
	testdb.ForEachDriver(t, func(t *testing.T, d driver.Driver) {
		a := start(t, d, nil, nil)
		r := a.do("POST", "/v1/jobs/many", `[{"type":"a","key":"k1"},{"type":"b","payload":{"n":[1,2]}},{"type":"a","key":"k1"}]`)
		require.Equal(t, http.StatusOK, r.code, r.raw)
		require.Equal(t, float64(2), r.body["inserted"])
		require.Equal(t, float64(1), r.body["duplicates"])
		ids := r.body["ids"].([]any)
		require.Len(t, ids, 3)
		require.Equal(t, ids[0], ids[2])
		require.Equal(t, 2, a.rows())

		for body, want := range map[string]string{
			`[{"type":"c"},{"type":""}]`:                     "[1].type: must not be empty",
			`[{"type":"c"},{"type":"d\u0000e"}]`:             "[1].type: contains a NUL character",
			`[{"type":"c"},{"type":"d"},{"type":"e","x":1}]`: "[2].x: unknown field",
			`[{"type":"c"},{"type":"d","payload":{nope}}]`:   "[1].payload",
			`[{"type":"c"},{"type":"d","priority":"high"}]`:  "[1].priority",
			`[{"type":"c"},{"type":"d","delay":"soon"}]`:     "[1].delay",
			`{"type":"c"}`: "body",
		} {
			r = a.do("POST", "/v1/jobs/many", body)
			require.Equal(t, http.StatusBadRequest, r.code, "%s: %s", body, r.raw)
			require.Contains(t, r.body["error"], want, body)
		}
		require.Equal(t, 2, a.rows(), "a batch with a bad element writes nothing")
	})
}

func TestListPagination(t *testing.T) {
	testdb.ForEachDriver(t, func(t *testing.T, d driver.Driver) {
		a := start(t, d, nil, nil)
		for i := range 5 {
			r := a.do("POST", "/v1/jobs", fmt.Sprintf(`{"type":"t","key":"k%d"}`, i))
			require.Equal(t, http.StatusCreated, r.code, r.raw)
		}
		a.do("POST", "/v1/jobs", `{"type":"other"}`)

		var seen []float64
		after := ""
		for page := 0; ; page++ {
			require.Less(t, page, 5)
			r := a.do("GET", "/v1/jobs?type=t&limit=2"+after, "")
			require.Equal(t, http.StatusOK, r.code, r.raw)
			for _, j := range r.body["jobs"].([]any) {
				seen = append(seen, j.(map[string]any)["id"].(float64))
			}
			if r.body["next_after_id"] == nil {
				break
			}
			after = fmt.Sprintf("&after_id=%d", int64(r.body["next_after_id"].(float64)))
		}
		require.Len(t, seen, 5)
		for i := 1; i < len(seen); i++ {
			require.Greater(t, seen[i-1], seen[i], "newest first, no repeats")
		}

		r := a.do("GET", "/v1/jobs?status=pending&key_prefix=k1", "")
		require.Equal(t, http.StatusOK, r.code, r.raw)
		require.Len(t, r.body["jobs"], 1)

		for q, field := range map[string]string{"status=nope": "status", "limit=x": "limit", "limit=0": "limit",
			"limit=5000": "limit", "after_id=-1": "after_id", "after_id=1.5": "after_id"} {
			r := a.do("GET", "/v1/jobs?"+q, "")
			require.Equal(t, http.StatusBadRequest, r.code, "%s: %s", q, r.raw)
			require.Contains(t, r.body["error"], field, q)
		}
	})
}

func TestRetryCancel(t *testing.T) {
	testdb.ForEachDriver(t, func(t *testing.T, d driver.Driver) {
		a := start(t, d, nil, nil)
		jid := id(a.do("POST", "/v1/jobs", `{"type":"t"}`))
		path := func(act string) string { return fmt.Sprintf("/v1/jobs/%d/%s", jid, act) }

		r := a.do("POST", path("retry"), "")
		require.Equal(t, http.StatusConflict, r.code, "a pending job cannot be retried: %s", r.raw)
		r = a.do("POST", path("cancel"), "")
		require.Equal(t, http.StatusOK, r.code, r.raw)
		require.Equal(t, true, r.body["ok"])
		r = a.do("POST", path("cancel"), "")
		require.Equal(t, http.StatusConflict, r.code, r.raw)
		r = a.do("POST", path("retry"), "")
		require.Equal(t, http.StatusOK, r.code, r.raw)
		j, err := d.GetJob(context.Background(), jid)
		require.NoError(t, err)
		require.Equal(t, sluicetype.StatusPending, j.Status)

		require.Equal(t, http.StatusNotFound, a.do("POST", "/v1/jobs/999999/retry", "").code)
		require.Equal(t, http.StatusNotFound, a.do("POST", "/v1/jobs/999999/cancel", "").code)
		require.Equal(t, http.StatusBadRequest, a.do("POST", "/v1/jobs/x/cancel", "").code)

		// Retrying a job whose business key a newer active job holds is a
		// conflict the caller can act on, not a server error.
		old := id(a.do("POST", "/v1/jobs", `{"type":"t","key":"k","dedupe":"active"}`))
		require.Equal(t, http.StatusOK, a.do("POST", fmt.Sprintf("/v1/jobs/%d/cancel", old), "").code)
		id(a.do("POST", "/v1/jobs", `{"type":"t","key":"k","dedupe":"active"}`))
		r = a.do("POST", fmt.Sprintf("/v1/jobs/%d/retry", old), "")
		require.Equal(t, http.StatusConflict, r.code, r.raw)
		require.Contains(t, r.body["error"], "business key")
	})
}

func TestStatsPauseResume(t *testing.T) {
	testdb.ForEachDriver(t, func(t *testing.T, d driver.Driver) {
		a := start(t, d, nil, nil)
		a.do("POST", "/v1/jobs", `{"type":"t","queue":"mail"}`)
		a.do("POST", "/v1/jobs", `{"type":"t","queue":"mail"}`)

		queue := func(name string) map[string]any {
			r := a.do("GET", "/v1/stats", "")
			require.Equal(t, http.StatusOK, r.code, r.raw)
			for _, q := range r.body["queues"].([]any) {
				if m := q.(map[string]any); m["queue"] == name {
					return m
				}
			}
			return nil
		}
		q := queue("mail")
		require.NotNil(t, q)
		require.Equal(t, float64(2), q["pending"])
		require.Equal(t, false, q["paused"])

		r := a.do("POST", "/v1/queues/mail/pause", "")
		require.Equal(t, http.StatusOK, r.code, r.raw)
		require.Equal(t, true, queue("mail")["paused"])
		st, err := a.c.Stats(context.Background())
		require.NoError(t, err)
		require.Contains(t, st, sluicetype.QueueStats{Queue: "mail", Pending: 2, Paused: true, OldestPending: st[0].OldestPending, OldestPendingAge: st[0].OldestPendingAge,
			FinishedHour: map[string]int64{}, FinishedDay: map[string]int64{}})

		r = a.do("POST", "/v1/queues/mail/resume", "")
		require.Equal(t, http.StatusOK, r.code, r.raw)
		require.Equal(t, false, queue("mail")["paused"])

		r = a.do("POST", "/v1/queues/"+strings.Repeat("q", 65)+"/pause", "")
		require.Equal(t, http.StatusBadRequest, r.code, r.raw)
		require.Contains(t, r.body["error"], "queue")
	})
}

func TestCircuitsAPI(t *testing.T) {
	testdb.ForEachDriver(t, func(t *testing.T, d driver.Driver) {
		a := start(t, d, nil, nil)
		circuits := func() []any {
			r := a.do("GET", "/v1/stats", "")
			require.Equal(t, http.StatusOK, r.code, r.raw)
			return r.body["circuits"].([]any)
		}
		require.Empty(t, circuits(), "no circuit has a row yet")

		r := a.do("POST", "/v1/circuits/mailer/open", "")
		require.Equal(t, http.StatusOK, r.code, r.raw)
		require.Equal(t, sluicetype.CircuitOpen, r.body["state"])
		require.Equal(t, true, r.body["manual"])
		cs := circuits()
		require.Len(t, cs, 1)
		require.Equal(t, "mailer", cs[0].(map[string]any)["type"])
		require.Equal(t, sluicetype.CircuitOpen, cs[0].(map[string]any)["state"])

		r = a.do("POST", "/v1/circuits/mailer/close", "")
		require.Equal(t, http.StatusOK, r.code, r.raw)
		require.Equal(t, sluicetype.CircuitClosed, r.body["state"])
		require.Equal(t, sluicetype.CircuitClosed, circuits()[0].(map[string]any)["state"])

		r = a.do("POST", "/v1/circuits/"+strings.Repeat("t", 65)+"/open", "")
		require.Equal(t, http.StatusBadRequest, r.code, r.raw)
		require.Contains(t, r.body["error"], "type")
	})
}

func TestRunConcurrent(t *testing.T) {
	testdb.ForEachDriver(t, func(t *testing.T, d driver.Driver) {
		var mu sync.Mutex
		runs := map[int64]int{}
		a := start(t, d, map[string]sluice.Type{"ok": {Handler: sluice.HandlerFunc(func(ctx context.Context, j *sluice.Job) error {
			mu.Lock()
			runs[j.ID]++
			mu.Unlock()
			time.Sleep(5 * time.Millisecond)
			return nil
		})}}, nil)
		body := strings.TrimSuffix(strings.Repeat(`{"type":"ok"},`, 50), ",")
		r := a.do("POST", "/v1/jobs/many", "["+body+"]")
		require.Equal(t, http.StatusOK, r.code, r.raw)

		var wg sync.WaitGroup
		var skipped, done atomic.Int32
		for range 4 {
			wg.Go(func() {
				r := a.do("POST", "/v1/run?max_jobs=50&max_seconds=30", "")
				require.Equal(t, http.StatusOK, r.code, r.raw)
				require.Equal(t, true, r.body["ok"])
				if r.body["skipped"] != nil {
					require.Equal(t, "another run is active", r.body["skipped"])
					skipped.Add(1)
				} else {
					done.Add(int32(r.body["done"].(float64)))
				}
			})
		}
		wg.Wait()
		require.GreaterOrEqual(t, skipped.Load(), int32(1), "concurrent runs must skip")
		// Later passes pick up whatever the first ones left.
		for i := 0; done.Load() < 50 && i < 10; i++ {
			r := a.do("POST", "/v1/run?max_jobs=50", "")
			require.Equal(t, http.StatusOK, r.code, r.raw)
			if r.body["done"] != nil {
				done.Add(int32(r.body["done"].(float64)))
			}
		}
		require.Equal(t, int32(50), done.Load())
		mu.Lock()
		defer mu.Unlock()
		require.Len(t, runs, 50)
		for jid, n := range runs {
			require.Equal(t, 1, n, "job %d ran %d times", jid, n)
		}

		for q, field := range map[string]string{"max_jobs=x": "max_jobs", "max_seconds=0": "max_seconds", "queue=" + strings.Repeat("q", 65): "queue"} {
			r := a.do("POST", "/v1/run?"+q, "")
			require.Equal(t, http.StatusBadRequest, r.code, "%s: %s", q, r.raw)
			require.Contains(t, r.body["error"], field)
		}
	})
}

func TestMethodAndPathErrors(t *testing.T) {
	a := start(t, testdb.Open(t, "sqlite"), nil, nil)
	r := a.do("GET", "/v1/run", "")
	require.Equal(t, http.StatusMethodNotAllowed, r.code, r.raw)
	require.Contains(t, r.body["error"], "POST")
	r = a.do("GET", "/v1/nope", "")
	require.Equal(t, http.StatusNotFound, r.code, r.raw)
	require.NotEmpty(t, r.body["error"])
}

func TestHealthReady(t *testing.T) {
	testdb.ForEachDriver(t, func(t *testing.T, d driver.Driver) {
		a := start(t, d, nil, nil)
		a.tok = ""
		r := a.do("GET", "/healthz", "")
		require.Equal(t, http.StatusOK, r.code, "healthz needs no token")
		require.Equal(t, true, r.body["ok"])
		require.Equal(t, http.StatusUnauthorized, a.do("GET", "/readyz", "").code)
		a.tok = token
		r = a.do("GET", "/readyz", "")
		require.Equal(t, http.StatusOK, r.code, r.raw)

		require.NoError(t, d.Close())
		r = a.do("GET", "/readyz", "")
		require.Equal(t, http.StatusServiceUnavailable, r.code, r.raw)
		require.Contains(t, r.body["error"], "database")
	})
}

func TestAuth(t *testing.T) {
	d := testdb.Open(t, "sqlite")
	var logs bytes.Buffer
	var logMu sync.Mutex
	logger := slog.New(slog.NewTextHandler(lockedWriter{&logMu, &logs}, nil))
	a := start(t, d, nil, func(c *server.Config) { c.Logger = logger })

	call := func(a *api, tok, header string) response {
		req, err := http.NewRequest("GET", a.srv.URL+"/v1/stats"+tok, nil)
		require.NoError(t, err)
		if header != "" {
			req.Header.Set("Authorization", header)
		}
		return a.send(req)
	}
	r := call(a, "", "")
	require.Equal(t, http.StatusUnauthorized, r.code, r.raw)
	require.Equal(t, http.StatusForbidden, call(a, "", "Bearer wrong").code)
	require.Equal(t, http.StatusUnauthorized, call(a, "", "Basic Zm9vOmJhcg==").code)
	require.Equal(t, http.StatusOK, call(a, "", "Bearer "+token).code)
	require.Equal(t, http.StatusOK, call(a, "", "Bearer other-token-8Hy3Mc6Tz1Bf5Rj0").code, "every configured token is accepted")

	r = call(a, "?token="+token, "")
	require.Equal(t, http.StatusUnauthorized, r.code, r.raw)
	require.Contains(t, r.body["error"], "query tokens are disabled")

	q := start(t, d, nil, func(c *server.Config) { c.Logger = logger; c.QueryToken = true })
	require.Equal(t, http.StatusOK, call(q, "?token="+token+"&limit=5", "").code)
	require.Equal(t, http.StatusForbidden, call(q, "?token=wrong", "").code)

	cidr := start(t, d, nil, func(c *server.Config) { c.AllowCIDRs = []string{"10.0.0.0/8"} })
	r = call(cidr, "", "Bearer "+token)
	require.Equal(t, http.StatusForbidden, r.code, "127.0.0.1 is outside 10.0.0.0/8: %s", r.raw)
	local := start(t, d, nil, func(c *server.Config) { c.AllowCIDRs = []string{"10.0.0.0/8", "127.0.0.1"} })
	require.Equal(t, http.StatusOK, call(local, "", "Bearer "+token).code)

	open := start(t, d, nil, func(c *server.Config) { c.Tokens = nil })
	require.Equal(t, http.StatusOK, call(open, "", "").code, "no tokens configured: no auth")

	logMu.Lock()
	defer logMu.Unlock()
	require.Contains(t, logs.String(), "path=/v1/stats")
	require.Contains(t, logs.String(), "status=403")
	require.NotContains(t, logs.String(), token, "tokens never reach the log")
}

type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (l lockedWriter) Write(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(b)
}

func TestBadInputWritesNothing(t *testing.T) {
	testdb.ForEachDriver(t, func(t *testing.T, d driver.Driver) {
		a := start(t, d, nil, func(c *server.Config) { c.MaxBody = 4096 })
		require.Equal(t, http.StatusCreated, a.do("POST", "/v1/jobs", `{"type":"seed"}`).code)
		cases := []struct {
			body  string
			code  int
			field string
		}{
			{`{"type":`, 400, "body"},
			{`not json`, 400, "body"},
			{``, 400, "body"},
			{`{"type":"t"} {"type":"u"}`, 400, "exactly one"},
			{`{"type":"t","bogus":1}`, 400, "bogus"},
			{`{"type":"t","payload":{not json}}`, 400, "payload"},
			{`{"type":"t","payload":}`, 400, "payload"},
			{`{"type":""}`, 400, "type"},
			{`{"key":"k"}`, 400, "type"},
			{`{"type":"` + strings.Repeat("t", 65) + `"}`, 400, "type"},
			{`{"type":"t","key":"` + strings.Repeat("k", 192) + `"}`, 400, "key"},
			{`{"type":"t","priority":99999}`, 400, "priority"},
			{`{"type":"t","max_attempts":"3"}`, 400, "max_attempts"},
			{`{"type":"t","delay":"later"}`, 400, "delay"},
			{`{"type":"t","delay":"-5s"}`, 400, "delay"},
			{`{"type":"t","run_at":"tomorrow"}`, 400, "run_at"},
			{`{"type":"t","delay":"5s","run_at":"2099-01-01T00:00:00Z"}`, 400, "run_at"},
			{`{"type":"t","dedupe":"sometimes"}`, 400, "dedupe"},
			{`{"type":"t","payload":"` + strings.Repeat("x", 5000) + `"}`, 413, "body"},
		}
		for _, c := range cases {
			r := a.do("POST", "/v1/jobs", c.body)
			require.Equal(t, c.code, r.code, "%.80s: %s", c.body, r.raw)
			require.Contains(t, r.body["error"], c.field, "%.80s", c.body)
		}
		require.Equal(t, 1, a.rows(), "bad input writes nothing")
	})
}

func TestNewRejectsBadConfig(t *testing.T) {
	c, err := sluice.NewClient(sluice.Config{Driver: testdb.Open(t, "sqlite")})
	require.NoError(t, err)
	_, err = server.New(server.Config{Client: c, AllowCIDRs: []string{"10.0.0.0/8", "10.0.0.0/99"}})
	require.ErrorContains(t, err, `"10.0.0.0/99"`)
	_, err = server.New(server.Config{Client: c, Tokens: []string{""}})
	require.ErrorContains(t, err, "tokens[0]")
	_, err = server.New(server.Config{Client: c, Tokens: []string{token, "t0k"}})
	require.ErrorContains(t, err, "tokens[1]: token too weak")
	_, err = server.New(server.Config{})
	require.Error(t, err)
}

func TestCheckListen(t *testing.T) {
	for _, addr := range []string{"0.0.0.0:8080", ":8080", "[::]:8080", "192.168.1.5:8080", "example.com:80"} {
		err := server.CheckListen(addr, false)
		require.Error(t, err, addr)
		require.Contains(t, err.Error(), "no auth token", addr)
		require.NoError(t, server.CheckListen(addr, true), addr)
	}
	for _, addr := range []string{"127.0.0.1:8080", "[::1]:8080", "localhost:8080", "127.0.0.2:9000"} {
		require.NoError(t, server.CheckListen(addr, false), addr)
	}
	require.Error(t, server.CheckListen("nonsense", false))
}

func TestRateBucketsInStats(t *testing.T) {
	testdb.ForEachDriver(t, func(t *testing.T, d driver.Driver) {
		a := start(t, d, nil, nil)
		buckets := func() []any {
			r := a.do("GET", "/v1/stats", "")
			require.Equal(t, http.StatusOK, r.code, r.raw)
			return r.body["rate_buckets"].([]any)
		}
		require.Empty(t, buckets(), "no limit has taken a token yet")
		for _, name := range []string{driver.TypeBucket("mail"), driver.PartitionBucket("tenants", "acme")} {
			_, err := d.TakeTokens(context.Background(), driver.TakeTokensParams{Name: name, Rate: 1, Burst: 3, Want: 1})
			require.NoError(t, err)
		}
		bs := buckets()
		require.Len(t, bs, 2)
		require.Equal(t, "partition:tenants#acme", bs[0].(map[string]any)["name"])
		require.Equal(t, "type:mail", bs[1].(map[string]any)["name"])
		require.InDelta(t, 2.0, bs[1].(map[string]any)["tokens"], 0.01)
	})
}

// A misspelled filter of GET /v1/jobs is refused, naming it: ?staus=failed
// would otherwise list every job as if none had failed.
func TestListJobsRefusesUnknownParameters(t *testing.T) {
	a := start(t, testdb.Open(t, "sqlite"), nil, nil)
	r := a.do("GET", "/v1/jobs?staus=failed", "")
	require.Equal(t, http.StatusBadRequest, r.code, r.raw)
	require.Contains(t, r.body["error"], "unknown query parameter staus")
	r = a.do("GET", "/v1/jobs?status=failed&limit=5", "")
	require.Equal(t, http.StatusOK, r.code, r.raw)
}

// The bulk enqueue's old path answers 410 naming the new one, and writes
// nothing.
func TestOldManyPathGone(t *testing.T) {
	d := testdb.Open(t, "sqlite")
	a := start(t, d, nil, nil)
	r := a.do("POST", "/v1/jobs/batch", `[{"type":"a"}]`)
	require.Equal(t, http.StatusGone, r.code, r.raw)
	require.JSONEq(t, `{"error":"POST /v1/jobs/batch is now POST /v1/jobs/many, with the same body and answer"}`, r.raw)
	n, err := d.CountJobs(context.Background(), driver.CountJobsParams{Type: "a", Status: sluicetype.StatusPending})
	require.NoError(t, err)
	require.Zero(t, n)
}
