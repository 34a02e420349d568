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
	"github.com/sluicehq/sluice/internal/testdb"
)

// TestClusterRateLimit runs four `sluice work` processes on a queue whose
// cluster_rate is 20/s with a burst of 10, over a backlog far larger than
// 10 seconds' worth, and reads the job starts from the webhook target's
// log of calls. The bucket grants at most burst + rate*T tokens in any T
// seconds (driver/drivertest proves it exactly); a call reaches the target
// some time after its token was taken (the claim runs in between), and
// that delay varies, so a window
// of calls may hold the tokens of a slightly longer span: startJitter
// bounds that variation. Every 1-second window then holds at most
// rate + burst + rate*startJitter starts, and the first 10 seconds close
// to 200 in total, so the processes shared one limit rather than applying
// four (80/s).
func TestClusterRateLimit(t *testing.T) {
	testdb.ForEach(t, testClusterRate)
}

func testClusterRate(t *testing.T, dbName string) {
	const (
		rate   = 20
		burst  = 10
		procs  = 4
		period = 10 * time.Second
		jobs   = 400
		// startJitter: the spread of the token-to-call delay, which
		// holds the claim query. On a 2-core machine at load average ~50
		// claims took from a few to several hundred milliseconds.
		startJitter = 500 * time.Millisecond
	)
	var mu sync.Mutex
	var starts []time.Time
	calls := map[string]int{}
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		starts = append(starts, time.Now())
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
	_, err = c.EnqueueMany(context.Background(), ps)
	require.NoError(t, err)

	env := []string{"SLUICE_PREFIX=" + tg.Prefix}
	var ws []*proc
	for i := 0; i < procs; i++ {
		ws = append(ws, startWork(t, env, "--config", cfgPath, "--shutdown-timeout", "1s"))
	}
	testdb.WaitFor(t, 30*time.Second, "the first start", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(starts) > 0
	})
	mu.Lock()
	first := starts[0]
	mu.Unlock()
	// All four have joined well before the window ends: a process
	// starts in well under a second here.
	time.Sleep(time.Until(first.Add(period + 500*time.Millisecond)))
	for _, w := range ws {
		_, err := w.term(t, 10*time.Second)
		require.NoError(t, err)
	}

	mu.Lock()
	defer mu.Unlock()
	for id, n := range calls {
		require.Equal(t, 1, n, "job %s started once", id)
	}
	requireRate(t, rateCase{name: "type api", rate: rate, burst: burst, starts: starts}, first, period, startJitter, procs)
}
