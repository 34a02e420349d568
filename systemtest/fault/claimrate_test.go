package fault

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/driver"
	"github.com/sluicehq/sluice/handler/webhook"
	"github.com/sluicehq/sluice/internal/testkit/testdb"
	"github.com/sluicehq/sluice/sluicetype"
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
// The webhook target counts each bucket's calls. Each bucket's backlog
// must run (liveness), and from the backlog's stored run time (it is
// enqueued 2 s ahead) to the database's now read at the bucket's last
// call, its starts are at most its burst + rate × that
// span: the exact bound of a token bucket on the database clock, which four processes applying a limit each would
// break. That a process uses a rate rather than only respecting it is
// internal/worker's TestPacedProducerClaimsEveryHalfToken; as a share of
// the rate in wall-clock seconds it failed on loaded machines.
func TestClaimRates(t *testing.T) {
	testdb.ForEach(t, testClaimRates)
}

// rateCase is one rate-limited bucket: its rate, burst, backlog and calls,
// and the database's now read once its last call arrived, later than the
// claim that took its last token.
type rateCase struct {
	name        string
	rate, burst int
	jobs        int
	calls       int
	done        time.Time
	doneErr     error
}

func testClaimRates(t *testing.T, dbName string) {
	const procs = 4
	// About three seconds' worth of each rate.
	cases := map[string]*rateCase{
		"api":   {name: "type api", rate: 20, burst: 2, jobs: 60},
		"small": {name: "partition small", rate: 5, burst: 2, jobs: 15},
		"big":   {name: "partition big", rate: 10, burst: 2, jobs: 30},
	}
	d, tg := testdb.OpenURL(t, dbName)
	var mu sync.Mutex
	calls := map[int64]int{}
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
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
			if c.calls++; c.calls == c.jobs {
				c.done, c.doneErr = d.Now(r.Context())
			}
		}
		mu.Unlock()
		w.Write([]byte(`{"ok":true}`))
	}))
	t.Cleanup(target.Close)

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
	var ps []sluice.EnqueueParams
	for i := range cases["api"].jobs {
		ps = append(ps, sluice.EnqueueParams{Type: "api", Queue: []string{"default", "other"}[i%2]})
	}
	for _, tenant := range []string{"small", "big"} {
		for range cases[tenant].jobs {
			ps = append(ps, sluice.EnqueueParams{Type: "tenant", Queue: "tenants", Partition: tenant,
				Payload: map[string]string{"tenant": tenant}})
		}
	}
	ctx := context.Background()
	env := []string{"SLUICE_PREFIX=" + tg.Prefix}
	var ws []*proc
	for range procs {
		ws = append(ws, startWork(t, env, "--config", cfgPath, "--shutdown-timeout", "1s"))
	}
	// The backlog is due 2 s after it is enqueued, so that no claim can
	// start one of its jobs before its stored run time, the database time
	// that starts the span: a bucket holds at most its burst then.
	for i := range ps {
		ps[i].Delay = 2 * time.Second
	}
	_, err = c.EnqueueMany(ctx, ps)
	require.NoError(t, err)
	var from time.Time
	for _, j := range testdb.AllJobs(t, d, sluicetype.ListParams{}) {
		if from.IsZero() || j.NextRunAt.Before(from) {
			from = j.NextRunAt
		}
	}
	testdb.WaitFor(t, 3*time.Minute, "every bucket's backlog run", func() bool {
		mu.Lock()
		defer mu.Unlock()
		for _, rc := range cases {
			if rc.calls < rc.jobs {
				return false
			}
		}
		return true
	})
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
		rc := cases[key]
		require.NoError(t, rc.doneErr, "%s: the database's now at its last call", rc.name)
		if !withinBucketBound(*rc, rc.done.Sub(from)) {
			logStarts(t, d, key, from, rc.done)
		}
		requireBucketBound(t, *rc, rc.done.Sub(from), procs)
	}
}

// logStarts logs, for a bucket over its bound, when each of its jobs
// finished (and its attempts started, where the history keeps them), in
// database time from the backlog's run time, and the buckets' rows: what
// a failure needs to tell a clock from a token taken twice (seen once, at
// load 33, not reproduced).
func logStarts(t *testing.T, d driver.Driver, key string, from, done time.Time) {
	ctx := context.Background()
	for _, j := range testdb.AllJobs(t, d, sluicetype.ListParams{}) {
		if j.Type != key && j.Partition != key {
			continue
		}
		full, err := d.GetJob(ctx, j.ID)
		if err != nil {
			t.Logf("job %d: %v", j.ID, err)
			continue
		}
		if full.FinishedAt != nil {
			t.Logf("%s: job %d finished at from%+.3fs", key, j.ID, full.FinishedAt.Sub(from).Seconds())
		}
		for _, a := range full.History {
			t.Logf("%s: job %d attempt %d started at from%+.3fs on %s", key, j.ID, a.Number, a.Start.Sub(from).Seconds(), a.Node)
		}
	}
	buckets, err := d.ListRateBuckets(ctx)
	t.Logf("%s: done at from%+.3fs; buckets %+v (%v)", key, done.Sub(from).Seconds(), buckets, err)
}

// requireBucketBound checks one bucket's starts over span, the database
// time from its backlog's run time to after its last start:
// at most burst + rate × span, the token bucket's exact bound, plus a
// millisecond of refill for the precision of stored times
// (docs/design.md "Database time"). Each call of the bucket's jobs is
// one start (the caller checks that none ran twice).
func requireBucketBound(t *testing.T, rc rateCase, span time.Duration, procs int) {
	t.Helper()
	bound := bucketBound(rc, span)
	t.Logf("REPORT %s: %s, %d processes, limit %d/s burst %d: %d starts in %s of database time (bucket bound %d)",
		t.Name(), rc.name, procs, rc.rate, rc.burst, rc.calls, span.Round(time.Millisecond), bound)
	require.Equal(t, rc.jobs, rc.calls, "%s: its whole backlog ran", rc.name)
	require.LessOrEqual(t, rc.calls, bound, "%s: starts within the bucket's bound", rc.name)
}

// bucketBound is the most starts a bucket allows over span.
func bucketBound(rc rateCase, span time.Duration) int {
	return int(math.Floor(float64(rc.burst) + float64(rc.rate)*(span+time.Millisecond).Seconds()))
}

func withinBucketBound(rc rateCase, span time.Duration) bool {
	return rc.calls <= bucketBound(rc, span)
}
