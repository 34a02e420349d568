package fault

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/internal/testkit/testdb"
)

// TestClusterRateLimit runs four `sluice work` processes on a queue whose
// cluster_rate is 20/s with a burst of 10, over a backlog of about three
// seconds' worth, and counts the job starts at the webhook target. The
// backlog must run (liveness), and from the database's now before the
// processes start to its now after they stopped, the starts are at most
// burst + rate × that span, the bucket's exact bound on the database clock
// (driver/drivertest proves it of the driver): the processes shared one
// limit rather than applying four (80/s).
func TestClusterRateLimit(t *testing.T) {
	testdb.ForEach(t, testClusterRate)
}

func testClusterRate(t *testing.T, dbName string) {
	const (
		rate  = 20
		burst = 10
		procs = 4
		jobs  = 70
	)
	var mu sync.Mutex
	calls := map[string]int{}
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		calls[r.Header.Get("X-Sluice-Job-Id")]++
		mu.Unlock()
		w.Write([]byte(`{"ok":true}`))
	}))
	t.Cleanup(target.Close)

	d, tg := testdb.OpenURL(t, dbName)
	cfg := fmt.Sprintf(`queues:
  default: { concurrency: 10, cluster_rate: %d/s, cluster_burst: %d }
types:
  api:
    http: { url: %q, timeout: 5s }
`, rate, burst, target.URL)
	cfgPath := dbConfig(t, tg.URL, cfg)
	c, err := sluice.NewClient(sluice.Config{Driver: d})
	require.NoError(t, err)
	ps := make([]sluice.EnqueueParams, jobs)
	for i := range ps {
		ps[i] = sluice.EnqueueParams{Type: "api"}
	}
	ctx := context.Background()
	_, err = c.EnqueueMany(ctx, ps)
	require.NoError(t, err)
	// The span starts at the database's now before any process starts: a
	// queue's cluster bucket is debited before the claim that uses the
	// tokens (and credited back for jobs the claim did not find), so
	// tokens taken by a process polling an empty queue before the span
	// could start jobs inside it. With no process before it, the bucket
	// holds at most its burst at the span's start.
	from, err := d.Now(ctx)
	require.NoError(t, err)
	env := []string{"SLUICE_PREFIX=" + tg.Prefix}
	var ws []*proc
	for range procs {
		ws = append(ws, startWork(t, env, "--config", cfgPath, "--shutdown-timeout", "1s"))
	}
	testdb.WaitFor(t, 3*time.Minute, "the backlog run", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(calls) == jobs
	})
	for _, w := range ws {
		_, err := w.term(t, 10*time.Second)
		require.NoError(t, err)
	}
	to, err := d.Now(ctx)
	require.NoError(t, err)

	mu.Lock()
	defer mu.Unlock()
	n := 0
	for id, k := range calls {
		require.Equal(t, 1, k, "job %s started once", id)
		n += k
	}
	requireBucketBound(t, rateCase{name: "queue default", rate: rate, burst: burst, jobs: jobs, calls: n}, to.Sub(from), procs)
}
