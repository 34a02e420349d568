package fault

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/internal/testkit/testdb"
	"github.com/sluicehq/sluice/sluicetype"
)

// TestBadWebhookTargets points job types at targets that hang, reset the
// connection, or answer garbage, in the same queue as 2,000 jobs of a fast
// webhook. The bad ones time out and retry per their policy (2 attempts,
// short backoff) and end failed; a 200 with a non-JSON body is a success;
// and the fast jobs all finish while the hanging ones are still retrying:
// the pool is never exhausted by them.
func TestBadWebhookTargets(t *testing.T) {
	var hanging atomic.Int64
	calls := map[string]*atomic.Int64{"hang": {}, "reset": {}, "bad502": {}, "ok200": {}}
	hang := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls["hang"].Add(1)
		hanging.Add(1)
		defer hanging.Add(-1)
		// The server notices a client hang-up only once the body is read.
		io.Copy(io.Discard, r.Body)
		<-r.Context().Done() // never answers; returns when sluice gives up
	}))
	t.Cleanup(hang.Close) // after the worker is killed: cleanups run last-in first-out
	reset := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls["reset"].Add(1)
		conn, _, err := w.(http.Hijacker).Hijack()
		if err != nil {
			return
		}
		conn.(*net.TCPConn).SetLinger(0) // close with an RST
		conn.Close()
	}))
	t.Cleanup(reset.Close) // after the worker is killed: cleanups run last-in first-out
	bad502 := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls["bad502"].Add(1)
		w.WriteHeader(http.StatusBadGateway)
		w.Write([]byte("<html>\x00\xff\xfe upstream garbage"))
	}))
	t.Cleanup(bad502.Close) // after the worker is killed: cleanups run last-in first-out
	ok200 := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls["ok200"].Add(1)
		w.Write([]byte("not json at all \xff"))
	}))
	t.Cleanup(ok200.Close) // after the worker is killed: cleanups run last-in first-out
	var fastMu sync.Mutex
	fastSeen := map[string]int{}
	fast := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fastMu.Lock()
		fastSeen[r.Header.Get("X-Sluice-Job-Id")]++
		fastMu.Unlock()
		w.Write([]byte(`{"ok":true}`))
	}))
	t.Cleanup(fast.Close) // after the worker is killed: cleanups run last-in first-out

	d, tg := testdb.OpenURL(t, "sqlite")
	// The hanging target holds a slot for 4 s per attempt, twice: about
	// 9 s before those jobs are final, far longer than 2,000 fast calls take.
	bad := func(name, url string) string {
		return fmt.Sprintf("  %s:\n    http: { url: %q, timeout: 4s }\n    max_attempts: 2\n    backoff: { base: 500ms, max: 1s }\n", name, url)
	}
	cfg := "queues:\n  default: { concurrency: 8 }\ntypes:\n" +
		bad("hang", hang.URL) + bad("reset", reset.URL) + bad("bad502", bad502.URL) + bad("ok200", ok200.URL) +
		fmt.Sprintf("  fast:\n    http: { url: %q, timeout: 5s }\n", fast.URL)
	cfgPath := dbConfig(t, tg.URL, cfg)

	const nBad, nFast = 4, 2000
	c, err := sluice.NewClient(sluice.Config{Driver: d})
	require.NoError(t, err)
	var ps []sluice.EnqueueParams
	// The bad jobs go first (and before every fast job by priority), so
	// that they hold their slots from the start.
	for _, typ := range []string{"hang", "reset", "bad502", "ok200"} {
		for i := 0; i < nBad; i++ {
			// max_attempts is applied at enqueue time: this client has no
			// type config, so the policy's 2 attempts are given here.
			ps = append(ps, sluice.EnqueueParams{Type: typ, Priority: -1, MaxAttempts: 2})
		}
	}
	for i := 0; i < nFast; i++ {
		ps = append(ps, sluice.EnqueueParams{Type: "fast"})
	}
	_, err = c.EnqueueMany(context.Background(), ps)
	require.NoError(t, err)

	env := []string{"SLUICE_PREFIX=" + tg.Prefix}
	t0 := time.Now()
	w := startWork(t, env, "--config", cfgPath, "--shutdown-timeout", "1s")
	testdb.WaitFor(t, 60*time.Second, "every fast job called", func() bool {
		fastMu.Lock()
		defer fastMu.Unlock()
		return len(fastSeen) == nFast
	})
	fastDone := time.Since(t0)
	stillHanging := hanging.Load()
	hangFinal := 0
	for _, typ := range []string{"hang"} {
		rows, err := d.ListJobs(context.Background(), sluicetype.ListParams{Type: typ})
		require.NoError(t, err)
		for _, r := range rows {
			if sluicetype.IsFinal(r.Status) {
				hangFinal++
			}
		}
	}
	require.Zero(t, hangFinal, "the fast jobs finished only after the hanging ones gave up (fast took %s)", fastDone)
	t.Logf("2,000 fast jobs called in %s while %d hanging requests were open", fastDone.Round(time.Millisecond), stillHanging)

	testdb.WaitFor(t, 60*time.Second, "every job final", func() bool { return allDone(d) })
	took, err := w.term(t, 10*time.Second)
	require.NoError(t, err, "work exits 0 (after %s)", took)

	by := map[string][]sluicetype.JobRow{}
	for _, rows := range testdb.JobsByStatus(t, d, sluicetype.ListParams{}) {
		for _, r := range rows {
			by[r.Type] = append(by[r.Type], r)
		}
	}
	for _, typ := range []string{"hang", "reset", "bad502"} {
		require.Len(t, by[typ], nBad)
		for _, r := range by[typ] {
			require.Equal(t, sluicetype.StatusFailed, r.Status, "%s job %d: %s", typ, r.ID, r.LastError)
			require.Equal(t, 2, r.Attempts, "%s job %d", typ, r.ID)
			require.NotEmpty(t, r.LastError)
		}
		require.EqualValues(t, 2*nBad, calls[typ].Load(), "%s: one call per attempt", typ)
		t.Logf("%s last_error: %.120q", typ, by[typ][0].LastError)
	}
	require.Len(t, by["ok200"], nBad)
	for _, r := range by["ok200"] {
		require.Equal(t, sluicetype.StatusSuccess, r.Status, "a 200 with a non-JSON body is a success: %s", r.LastError)
		require.Equal(t, 1, r.Attempts)
	}
	require.EqualValues(t, nBad, calls["ok200"].Load(), "ok200: one call per job, none retried")
	dups := 0
	require.Len(t, by["fast"], nFast)
	for _, r := range by["fast"] {
		require.Equal(t, sluicetype.StatusSuccess, r.Status)
	}
	for _, n := range fastSeen {
		if n > 1 {
			dups++
		}
	}
	require.Zero(t, dups, "no fault touches the fast jobs' leases, so none runs twice")
	t.Logf("REPORT %s: jobs %d, duplicates %d (bound 0), lost %d, fast jobs done after %s", t.Name(), nFast+4*nBad, dups, nFast-len(fastSeen), fastDone)
}
