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
	"github.com/sluicehq/sluice/driver"
	"github.com/sluicehq/sluice/internal/testkit/testdb"
	"github.com/sluicehq/sluice/sluicetype"
)

// TestCircuitBreakerOutage points a type with a circuit breaker at a
// webhook that answers 503 for its first 5 seconds, then 200, and runs it
// on two `sluice work` processes. During the outage the target may see at
// most K calls that open the circuit, plus one per worker slot that was
// already past its check when it opened, plus the probes that fit in the
// outage's cool-downs; no job ends failed (each has 5 attempts, far fewer
// than an outage without a breaker burns); and after the recovery every
// job succeeds.
func TestCircuitBreakerOutage(t *testing.T) {
	testdb.ForEach(t, testBreakerOutage)
}

func testBreakerOutage(t *testing.T, dbName string) {
	const (
		outage    = 5 * time.Second
		threshold = 3
		procs     = 2
		slots     = 2 // concurrency per process
		jobs      = 40
	)
	policy := driver.CircuitPolicy{Threshold: threshold, Cooldown: 500 * time.Millisecond, MaxCooldown: 2 * time.Second}
	// Probes start only after a whole cool-down, each longer than the
	// last: count how many fit in the outage.
	maxProbes, spent := 0, time.Duration(0)
	for spent+policy.CooldownAfter(maxProbes+1) < outage {
		maxProbes++
		spent += policy.CooldownAfter(maxProbes)
	}

	var mu sync.Mutex
	var down, up []time.Time // call times
	var t0 time.Time
	seen := map[string]bool{}
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		now := time.Now()
		out := now.Sub(t0) < outage
		if out {
			down = append(down, now)
		} else {
			up = append(up, now)
			seen[r.Header.Get("X-Sluice-Job-Id")] = true
		}
		mu.Unlock()
		if out {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		w.Write([]byte(`{"ok":true}`))
	}))
	t.Cleanup(target.Close)

	d, tg := testdb.OpenURL(t, dbName)
	cfg := fmt.Sprintf(`queues:
  default: { concurrency: %d }
types:
  api:
    http: { url: %q, timeout: 5s }
    max_attempts: 5
    backoff: { base: 100ms, max: 500ms }
    circuit: { threshold: %d, cooldown: %s, max_cooldown: %s }
`, slots, target.URL, threshold, policy.Cooldown, policy.MaxCooldown)
	cfgPath := dbConfig(t, tg.URL, cfg)
	c, err := sluice.NewClient(sluice.Config{Driver: d})
	require.NoError(t, err)
	ps := make([]sluice.EnqueueParams, jobs)
	for i := range ps {
		ps[i] = sluice.EnqueueParams{Type: "api", MaxAttempts: 5}
	}
	_, err = c.EnqueueMany(context.Background(), ps)
	require.NoError(t, err)

	mu.Lock()
	t0 = time.Now()
	mu.Unlock()
	env := []string{"SLUICE_PREFIX=" + tg.Prefix}
	var ws []*proc
	for i := 0; i < procs; i++ {
		ws = append(ws, startWork(t, env, "--config", cfgPath, "--shutdown-timeout", "1s"))
	}
	testdb.WaitFor(t, 60*time.Second, "every job final", func() bool { return allDone(d) })
	for _, w := range ws {
		_, err := w.term(t, 10*time.Second)
		require.NoError(t, err)
	}

	byStatus := testdb.JobsByStatus(t, d, sluicetype.ListParams{})
	require.Empty(t, byStatus[sluicetype.StatusFailed], "no job fails because of the outage")
	require.Len(t, byStatus[sluicetype.StatusSuccess], jobs, "every job succeeds after the recovery")
	mu.Lock()
	defer mu.Unlock()
	require.Len(t, seen, jobs, "every job was called after the recovery")
	bound := threshold + procs*slots - 1 + maxProbes
	require.LessOrEqual(t, len(down), bound, "calls during the outage: K=%d + %d other slots + %d probes", threshold, procs*slots-1, maxProbes)
	require.NotEmpty(t, down, "the outage was seen")
	maxAttempts := 0
	for _, r := range byStatus[sluicetype.StatusSuccess] {
		maxAttempts = max(maxAttempts, r.Attempts)
	}
	circuits, err := d.ListCircuits(context.Background())
	require.NoError(t, err)
	require.Len(t, circuits, 1)
	require.Equal(t, sluicetype.CircuitClosed, circuits[0].State, "the last probe closed the circuit")
	t.Logf("REPORT %s: %d jobs, %d calls during the %s outage (bound %d = K %d + other slots %d + probes %d), %d after; most attempts charged to one job: %d; recovered in %s",
		t.Name(), jobs, len(down), outage, bound, threshold, procs*slots-1, maxProbes, len(up), maxAttempts, up[0].Sub(t0.Add(outage)).Round(time.Millisecond))
}
