package pgbouncer_test

import (
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/internal/testkit/testdb"
)

// benchConcurrency and the default of 1,000 jobs scale `sluice bench` down
// to seconds per run; SLUICE_HATEST_BENCH_JOBS raises it for a measurement,
// which runs three rounds.
const benchConcurrency = 50

// The throughput cost of the pooler, measured with `sluice bench` as a
// user would: direct, direct in pgx's exec mode (the pooler's query mode,
// without the pooler), and through pgbouncer. What it asserts is that
// `sluice bench` runs every job in each mode; the figures are for
// docs/scale.md, not a pass mark, and one round of the three modes is all the
// assertion needs. A measurement (SLUICE_HATEST_BENCH_JOBS set) alternates
// three rounds and compares the medians, so that the load of a shared
// machine falls on all three alike. It runs before the package's parallel
// tests, alone.
func TestBenchThroughPooler(t *testing.T) {
	b := startBouncer(t)
	jobs, rounds := 1000, 1
	if v := os.Getenv("SLUICE_HATEST_BENCH_JOBS"); v != "" {
		_, err := fmt.Sscan(v, &jobs)
		require.NoError(t, err)
		rounds = 3
	}
	modes := []struct{ name, db, listen string }{
		{"direct", b.direct, ""},
		{"direct, exec mode", withParam(b.direct, "default_query_exec_mode=exec"), ""},
		{"pgbouncer", b.pooled, b.direct},
	}
	type result struct {
		InsertPerS float64 `json:"insert_per_s"`
		WorkPerS   float64 `json:"work_per_s"`
		Succeeded  int64   `json:"succeeded"`
	}
	got := map[string][]result{}
	for round := range rounds {
		for _, m := range modes {
			args := []string{"bench", "--db", m.db, "--jobs", fmt.Sprint(jobs), "--concurrency", fmt.Sprint(benchConcurrency),
				"--prefix", testdb.Prefix(), "--json"}
			if m.listen != "" {
				args = append(args, "--listen-db", m.listen)
			}
			var r result
			out := runSluice(t, nil, "", args...)
			require.NoError(t, json.Unmarshal([]byte(out), &r), out)
			require.EqualValues(t, jobs, r.Succeeded, "round %d %s", round, m.name)
			got[m.name] = append(got[m.name], r)
		}
	}
	median := func(rs []result, f func(result) float64) float64 {
		v := make([]float64, len(rs))
		for i, r := range rs {
			v[i] = f(r)
		}
		slices.Sort(v)
		return v[len(v)/2]
	}
	ins := func(r result) float64 { return r.InsertPerS }
	work := func(r result) float64 { return r.WorkPerS }
	var report strings.Builder
	fmt.Fprintf(&report, "sluice bench --jobs %d --concurrency %d, median of %d alternating runs:\n", jobs, benchConcurrency, rounds)
	base := got["direct"]
	for _, m := range modes {
		rs := got[m.name]
		fmt.Fprintf(&report, "  %-18s enqueue %8.0f jobs/s (%.2fx)  work %7.0f jobs/s (%.2fx)  runs %v\n", m.name,
			median(rs, ins), median(rs, ins)/median(base, ins), median(rs, work), median(rs, work)/median(base, work), rs)
	}
	t.Log(report.String())
	b.requireAlive(t)
}
