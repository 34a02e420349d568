// Package batchtest runs bench/batch.sh at a tiny size on the built
// binary. It is a package of its own, not one of the CLI tests: the CLI
// package runs apart from every other (testdb.Exclusive) and this test,
// which times no lease, would hold that turn while it sets up its second
// servers.
package batchtest

import (
	"context"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/internal/testkit/testdb"
)

var bin string

// TestMain builds the binary the script runs.
func TestMain(m *testing.M) { testdb.MainWithBinary(m, &bin) }

// bench/batch.sh at a tiny size: pt-archiver and sluice side by side on
// each workload (purge, archive to a second table, archive to a second
// MariaDB instance), and sluice alone on the same workloads on PostgreSQL
// (archiving to a second PostgreSQL cluster), each run's rows checked by
// the script, which exits non-zero (STRICT=1) if any run failed or left
// wrong rows. Skipped, loudly, without pt-archiver or the MariaDB and
// PostgreSQL server binaries, unless SLUICE_TEST_REQUIRE_ALL=1.
func TestBatchBenchSmoke(t *testing.T) {
	testdb.NeedTools(t, "bench/batch.sh smoke", "apt-get install -y percona-toolkit mariadb-server postgresql",
		"pt-archiver", "mariadb-install-db", "/usr/sbin/mariadbd", "mysql", "psql", "initdb")
	u, err := url.Parse(testdb.URL("mysql", ""))
	require.NoError(t, err)
	pu, err := url.Parse(testdb.URL("postgres", ""))
	require.NoError(t, err)
	// The script creates it on PostgreSQL.
	db := testdb.ScratchDatabase(t, "bbs")
	out := filepath.Join(t.TempDir(), "BENCHMARKS.md")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "../batch.sh")
	cmd.Env = append(os.Environ(), "ROWS=2000", "RUNS=1", "CHUNK=200", "SIZES=", "FORMS=range", "ADAPTIVE=0", "STRICT=1",
		"ENGINES=mariadb postgres", "MYSQL_HOST="+u.Hostname(), "MYSQL_PORT="+u.Port(), "PG_HOST="+pu.Hostname(), "PG_PORT="+pu.Port(), "DB="+db, "SLUICE_BIN="+bin, "OUT="+out,
		"SLUICE_DB=", "SLUICE_CONFIG=", "SLUICE_PREFIX=")
	res, err := cmd.CombinedOutput()
	require.NoError(t, err, "bench/batch.sh:\n%s", res)
	md, err := os.ReadFile(out)
	require.NoError(t, err)
	for _, w := range []string{"### Purge", "### Archive to a second table, same database", "### Archive to a second MariaDB instance"} {
		require.Contains(t, string(md), w)
	}
	require.Equal(t, 3, strings.Count(string(md), "| pt-archiver | pt-archiver | 200 | 1 | 0 |"), "pt-archiver ran each workload once, with correct results:\n%s", md)
	require.Equal(t, 3, strings.Count(string(md), "| sluice | key range | 200 | 1 | 0 |"), "sluice ran each workload once, with correct results:\n%s", md)
	pgHead := "### PostgreSQL (sluice alone; pt-archiver runs only on MySQL)"
	require.Contains(t, string(md), pgHead)
	pg := string(md)[strings.Index(string(md), pgHead):]
	for _, w := range []string{"Purge", "Archive to a second table, same database", "Archive to a second PostgreSQL cluster"} {
		require.Equal(t, 1, strings.Count(pg, "| "+w+" | key range | 200 | 1 | 0 |"), "sluice ran %s once on PostgreSQL, with correct results:\n%s", w, md)
	}
}
