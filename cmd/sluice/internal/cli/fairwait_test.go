package cli_test

import (
	"context"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/internal/testkit/testdb"
)

// bench/fairwait.sh at a tiny size on PostgreSQL: a big tenant's backlog,
// then two small tenants, worked with and without fair: true. With it, the
// small tenants finish while most of the backlog still waits; without it,
// behind all of it.
func TestFairWaitSmoke(t *testing.T) {
	t.Parallel()
	// Without parameters: psql takes the URL too, and refuses pool_max_conns.
	base, _, _ := strings.Cut(testdb.URL("postgres", ""), "?")
	db := base[:strings.LastIndex(base, "/")] + "/sluice_fw_" + strings.TrimSuffix(testdb.Prefix(), "_")
	t.Cleanup(func() {
		exec.Command("psql", "-q", base, "-c", "DROP DATABASE IF EXISTS "+db[strings.LastIndex(db, "/")+1:]+" WITH (FORCE)").Run()
	})
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "../../../../bench/fairwait.sh")
	cmd.Env = append(os.Environ(), "DB="+db, "A_JOBS=600", "SMALL=10", "PROCS=2", "CONCURRENCY=4", "SLUICE_BIN="+bin,
		"SLUICE_DB=", "SLUICE_CONFIG=", "SLUICE_PREFIX=")
	out, err := cmd.Output()
	require.NoError(t, err, "bench/fairwait.sh:\n%s", out)
	before := map[string]int{}
	for _, line := range strings.Split(string(out), "\n") {
		cells := strings.Split(strings.Trim(line, "| "), " | ")
		if len(cells) == 6 && (cells[0] == "true" || cells[0] == "false") {
			n, err := strconv.Atoi(cells[5])
			require.NoError(t, err, line)
			before[cells[0]] = n
		}
	}
	require.Len(t, before, 2, "one row with fair: true and one without:\n%s", out)
	require.Less(t, before["true"], 300, "fair: most of A's backlog still waits when B and C are done:\n%s", out)
	require.Greater(t, before["false"], 550, "not fair: B and C wait behind A's backlog:\n%s", out)
}
