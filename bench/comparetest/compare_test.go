// Package comparetest runs bench/compare.sh at a tiny size on the built
// binary, so that a change to the script or to `sluice bench` cannot
// silently break the benchmark between its full runs (issue 39). Its own
// package, like bench/batchtest: it times no lease and holds no
// exclusive turn.
package comparetest

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/internal/testkit/testdb"
)

var bin string

// TestMain builds the binary the script measures.
func TestMain(m *testing.M) { testdb.MainWithBinary(m, &bin) }

// The sections of bench/compare.sh that only it runs, no peers (PEERS
// unset: each is listed as skipped), at sizes that take seconds: the
// throughput rounds (whose work/s paces the sustained runs), 2 processes
// scaling out (each setting migrates and drops its own tables: under a
// loaded CI lane those runs were most of the test's minutes), the
// sustained runs with their table samples, and the held-back vacuum's
// three phases with the idle-in-transaction holder.
// On a PostgreSQL without autovacuum (as CI's) the sustained and hold runs
// go to the private cluster the script starts, so that path is covered
// too. The other sections run what other smoke tests run: bench/ceiling.sh
// (bench/ceiling's TestScript) and `sluice bench` in its latency, pickup
// and preloaded modes (cmd/sluice/internal/bench). STRICT=1 makes any
// failed run fail the script; the report must hold each section with its
// figures, and the report's writer, compare_report.py, every section
// (bench/ceiling's TestReport).
func TestCompareSmoke(t *testing.T) {
	testdb.NeedTools(t, "bench/compare.sh smoke", "apt-get install -y postgresql mariadb-client python3", "psql", "mysql", "python3", "initdb")
	pgURL, myURL := testdb.URL("postgres", ""), testdb.URL("mysql", "")
	db := testdb.ScratchDatabase(t, "cmp")
	pgBase, _, ok := strings.Cut(strings.TrimPrefix(pgURL, "postgres://"), "/")
	require.True(t, ok, pgURL)
	myBase, _, ok := strings.Cut(myURL, "?")
	require.True(t, ok || myBase == myURL)
	myBase = myBase[:strings.LastIndex(myBase, "/")]

	dir := t.TempDir()
	out := filepath.Join(dir, "BENCHMARKS.md")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "../compare.sh")
	cmd.Env = append(os.Environ(), "STRICT=1", "SLUICE_BIN="+bin, "OUT="+out, "PEERS=",
		"PG_BASE=postgres://"+pgBase, "PG_DB="+db, "MYSQL_URL="+myBase+"/"+db,
		"SECTIONS=throughput scaling sustained hold",
		"JOBS=300", "RUNS=1", "CONCURRENCY=10",
		"SCALE_PROCS=2", "SCALE_JOBS=200", "SCALE_CONCURRENCY=10",
		"SUSTAINED_JOBS=300", "SUSTAINED_CONCURRENCY=10", "SUSTAINED_INTERVAL=1s", "SUSTAINED_SAMPLE=1",
		"HOLD_RATE=40", "HOLD_CONCURRENCY=4", "HOLD_CLEAN=4", "HOLD_HOLD=4", "HOLD_RECOVERY=4", "HOLD_INTERVAL=1s",
		// The script's own databases, not the test run's.
		"SLUICE_DB=", "SLUICE_CONFIG=", "SLUICE_PREFIX=")
	res, err := cmd.CombinedOutput()
	require.NoError(t, err, "bench/compare.sh:\n%s", res)
	b, err := os.ReadFile(out)
	require.NoError(t, err)
	md := string(b)
	for _, h := range []string{"## Throughput", "## Against the targets", "## Scaling out", "## Sustained load", "## Held-back vacuum"} {
		require.Contains(t, md, h, "the report's sections")
	}
	// The held phases as rows of figures.
	for _, w := range []string{"riverpeer", "asynqpeer"} {
		require.Contains(t, md, w+" (PEERS is not set)", "the skipped peers say why")
	}
	for _, phase := range []string{"clean", "held", "recovery"} {
		require.Regexp(t, regexp.MustCompile(`(?m)^\| `+phase+` \| [0-9]`), md, "the held-back vacuum's %s phase", phase)
	}
	require.NotContains(t, md, "Failed runs", "STRICT=1 let a failed run through")
}
