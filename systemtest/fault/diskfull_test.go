package fault

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/dburl"
	"github.com/sluicehq/sluice/internal/testkit/proctest"
	"github.com/sluicehq/sluice/sluicetype"
)

// A full disk under SQLite: the database lives on a 4 MiB tmpfs. Bulk
// enqueues fill it until one fails; that one fails with one clear line and
// writes nothing, the file stays intact, and after the space is freed
// (the mount grown) enqueues and work go on.
func TestSQLiteDiskFull(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "small")
	require.NoError(t, os.Mkdir(dir, 0o755))
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", dir).CombinedOutput(); err != nil {
		unavailable(t, "a small tmpfs (mount needs root)", err, out)
	}
	t.Cleanup(func() { exec.Command("umount", "-l", dir).Run() })
	cfg := dbConfig(t, "sqlite:"+dir+"/q.db", "types:\n  work: { command: [\"true\"] }\n")
	r := proctest.Run(t, bin, nil, "migrate", "--config", cfg)
	require.Equal(t, 0, r.Code, r.Stderr)

	// 100 jobs with 8 KiB payloads per file: about 0.8 MiB a batch, so
	// that the disk fills after some 400 jobs, which the pass below then
	// runs: with 1 KiB payloads it filled after 2,500, and a pass of 3,000
	// command jobs missed its 120 s on a loaded CI machine.
	pad := strings.Repeat("x", 8192)
	batchFile := func(n int) string {
		var b strings.Builder
		for i := 0; i < 100; i++ {
			fmt.Fprintf(&b, `{"type":"work","payload":{"batch":%d,"pad":%q}}`+"\n", n, pad)
		}
		p := filepath.Join(t.TempDir(), fmt.Sprintf("batch%d.ndjson", n))
		require.NoError(t, os.WriteFile(p, []byte(b.String()), 0o644))
		return p
	}
	count := func() int {
		d, err := dburl.Open("sqlite:"+dir+"/q.db", dburl.Options{})
		require.NoError(t, err)
		defer d.Close()
		var n int
		require.NoError(t, d.DB().QueryRow("SELECT COUNT(*) FROM sluice_jobs").Scan(&n))
		var check string
		require.NoError(t, d.DB().QueryRow("PRAGMA integrity_check").Scan(&check))
		require.Equal(t, "ok", check, "the database file is intact")
		return n
	}

	full := false
	for n := 0; n < 40 && !full; n++ {
		before := count()
		r := proctest.Run(t, bin, nil, "enqueue", "--config", cfg, "--ndjson", batchFile(n))
		if r.Code == 0 {
			continue
		}
		full = true
		require.Equal(t, 1, r.Code, "a full disk is a runtime error: %s", r.Stderr)
		require.Contains(t, r.Stderr, "full", "the error says the disk is full")
		require.Equal(t, 1, strings.Count(r.Stderr, "\n"), "one line: %q", r.Stderr)
		require.Equal(t, before, count(), "the failed batch wrote nothing")
		t.Logf("disk full after %d jobs: %s", before, strings.TrimSpace(r.Stderr))
	}
	require.True(t, full, "the 4 MiB disk never filled")

	// Free space, then everything goes on: enqueue, and work what is queued.
	out, err := exec.Command("mount", "-o", "remount,size=256m", dir).CombinedOutput()
	require.NoError(t, err, "%s", out)
	r = proctest.Run(t, bin, nil, "enqueue", "--config", cfg, "--ndjson", batchFile(99))
	require.Equal(t, 0, r.Code, r.Stderr)
	total := count()
	r = proctest.Run(t, bin, nil, "run", "--config", cfg, "--max-jobs", fmt.Sprint(total), "--max-seconds", "120", "--concurrency", "8")
	require.Equal(t, 0, r.Code, r.Stderr)
	require.JSONEq(t, fmt.Sprintf(`{"ok":true,"done":%d,"retried":0,"failed":0,"requeued":0}`, total), r.Stdout)

	d, err := dburl.Open("sqlite:"+dir+"/q.db", dburl.Options{})
	require.NoError(t, err)
	defer d.Close()
	st, err := d.Stats(context.Background())
	require.NoError(t, err)
	for _, s := range st {
		require.Zero(t, s.Pending+s.Processing+s.Failed)
	}
	jobs, err := d.ListJobs(context.Background(), sluicetype.ListParams{Status: sluicetype.StatusSuccess, Limit: 1})
	require.NoError(t, err)
	require.NotEmpty(t, jobs)
}
