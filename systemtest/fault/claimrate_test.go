package fault

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/handler/webhook"
	"github.com/sluicehq/sluice/internal/testdb"
)

// TestClaimRates runs four `sluice work` processes, each on three queues,
// against two start rates that the claim takes from database token buckets
// (docs/design.md "Rate limits"):
//
//   - the type api has cluster_rate 20/s, and its jobs sit in two queues:
//     the rate binds the type whatever queue a job is in;
//   - the fair queue tenants has cluster_rate_per_partition 5/s, and 10/s
//     for the partition big: each tenant gets its own rate.
//
// The webhook target logs each call's time and job. As in
// TestClusterRateLimit, a call reaches the target some time after its
// claim took the token, and startJitter bounds how much that delay varies,
// so every 1-second window holds at most rate + burst + rate*startJitter
// calls of a bucket, and the first 10 seconds close to 10 seconds' worth:
// the processes shared each limit rather than applying four.
func TestClaimRates(t *testing.T) {
	testdb.ForEach(t, testClaimRates)
}

// rateCase is one rate-limited bucket: its calls, rate and burst.
type rateCase struct {
	name        string
	rate, burst int
	starts      []time.Time
}

func testClaimRates(t *testing.T, dbName string) {
	const (
		procs       = 4
		period      = 10 * time.Second
		startJitter = 500 * time.Millisecond // see TestClusterRateLimit
	)
	// A burst of 2: a bucket of 1 loses the refill of any gap between
	// claims longer than a token's, which a loaded CI machine has.
	cases := map[string]*rateCase{
		"api":   {name: "type api", rate: 20, burst: 2},
		"small": {name: "partition small", rate: 5, burst: 2},
		"big":   {name: "partition big", rate: 10, burst: 2},
	}
	var mu sync.Mutex
	calls := map[int64]int{}
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		now := time.Now()
		var m webhook.Message
		var p struct{ Tenant string }
		if json.NewDecoder(r.Body).Decode(&m) != nil || json.Unmarshal(m.Payload, &p) != nil {
			http.Error(w, "bad body", http.StatusBadRequest)
			return
		}
		key := m.Type
		if p.Tenant != "" {
			key = p.Tenant
		}
		mu.Lock()
		calls[m.ID]++
		if c := cases[key]; c != nil {
			c.starts = append(c.starts, now)
		}
		mu.Unlock()
		w.Write([]byte(`{"ok":true}`))
	}))
	t.Cleanup(target.Close)

	d, tg := testdb.OpenURL(t, dbName)
	cfg := fmt.Sprintf(`queues:
  default: { concurrency: 10 }
  other: { concurrency: 10 }
  tenants:
    concurrency: 10
    fair: true
    cluster_rate_per_partition: 5/s
    partition_cluster_rate: { big: 10/s }
    cluster_burst_per_partition: 2
types:
  api:
    http: { url: %[1]q, timeout: 5s }
    cluster_rate: 20/s
    cluster_burst: 2
  tenant:
    queue: tenants
    http: { url: %[1]q, timeout: 5s }
`, target.URL)
	cfgPath := dbConfig(t, tg.URL, cfg)
	c, err := sluice.NewClient(sluice.Config{Driver: d})
	require.NoError(t, err)
	// Twice the jobs each limit allows in the period, so that none runs
	// dry.
	var ps []sluice.EnqueueParams
	for i := range 400 {
		ps = append(ps, sluice.EnqueueParams{Type: "api", Queue: []string{"default", "other"}[i%2]})
	}
	for _, tenant := range []string{"small", "big"} {
		for range 2 * cases[tenant].rate * int(period/time.Second) {
			ps = append(ps, sluice.EnqueueParams{Type: "tenant", Queue: "tenants", Partition: tenant,
				Payload: map[string]string{"tenant": tenant}})
		}
	}
	_, err = c.EnqueueMany(context.Background(), ps)
	require.NoError(t, err)

	env := []string{"SLUICE_PREFIX=" + tg.Prefix}
	var ws []*proc
	for range procs {
		ws = append(ws, startWork(t, env, "--config", cfgPath, "--shutdown-timeout", "1s"))
	}
	var first time.Time
	testdb.WaitFor(t, 30*time.Second, "the first start", func() bool {
		mu.Lock()
		defer mu.Unlock()
		for _, rc := range cases {
			for _, s := range rc.starts {
				if first.IsZero() || s.Before(first) {
					first = s
				}
			}
		}
		return !first.IsZero()
	})
	time.Sleep(time.Until(first.Add(period + 500*time.Millisecond)))
	for _, w := range ws {
		_, err := w.term(t, 10*time.Second)
		require.NoError(t, err)
	}

	mu.Lock()
	defer mu.Unlock()
	for id, n := range calls {
		require.Equal(t, 1, n, "job %d started once", id)
	}
	for _, key := range []string{"api", "small", "big"} {
		requireRate(t, *cases[key], first, period, startJitter, procs)
	}
}

// requireRate checks one bucket's calls over the period after first, each
// start late by up to startJitter (see TestClusterRateLimit): at most
// rate + burst in any 1-second window and burst + rate*period in all, each
// plus the tokens of the jitter, and at least 85% of the rate's share, so
// that the procs processes shared the limit and used it.
func requireRate(t *testing.T, rc rateCase, first time.Time, period, startJitter time.Duration, procs int) {
	t.Helper()
	densest, total := densestSecond(rc.starts, first, period)
	slack := int(math.Ceil(float64(rc.rate) * startJitter.Seconds()))
	bound := rc.burst + rc.rate*int(period/time.Second)
	t.Logf("REPORT %s: %s, %d processes, limit %d/s burst %d: %d starts in the first %s (bucket bound %d, + jitter %d), densest 1s window %d (bucket bound %d, + jitter %d)",
		t.Name(), rc.name, procs, rc.rate, rc.burst, total, period, bound, slack, densest, rc.rate+rc.burst, slack)
	require.LessOrEqual(t, densest, rc.rate+rc.burst+slack, "%s: starts in any 1-second window", rc.name)
	require.LessOrEqual(t, total, bound+slack, "%s: starts in the whole window", rc.name)
	require.GreaterOrEqual(t, total, rc.rate*int(period/time.Second)*85/100, "%s: the limit is used, not just respected", rc.name)
}

// densestSecond counts the starts in the period after first, and the most
// in any 1-second window sliding over them.
func densestSecond(starts []time.Time, first time.Time, period time.Duration) (densest, total int) {
	sort.Slice(starts, func(i, j int) bool { return starts[i].Before(starts[j]) })
	var in []time.Time
	for _, s := range starts {
		if s.Sub(first) < period {
			in = append(in, s)
		}
	}
	j := 0
	for i := range in {
		for in[i].Sub(in[j]) >= time.Second {
			j++
		}
		densest = max(densest, i-j+1)
	}
	return densest, len(in)
}
