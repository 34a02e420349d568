package cli_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/batch"
	"github.com/sluicehq/sluice/driver"
	"github.com/sluicehq/sluice/handler/webhook"
	"github.com/sluicehq/sluice/internal/testkit/proctest"
	"github.com/sluicehq/sluice/internal/testkit/testdb"
	"github.com/sluicehq/sluice/sluicetype"
)

// batchTable creates <prefix>items with n rows whose created_at repeats
// every 5 ids, and returns its name.
func batchTable(t *testing.T, d driver.Driver, prefix string, n int) string {
	t.Helper()
	ctx := context.Background()
	tbl := prefix + "items"
	ts := map[string]string{"sqlite": "DATETIME", "mysql": "DATETIME(6)", "postgres": "timestamptz"}[d.Name()]
	_, err := d.DB().ExecContext(ctx, fmt.Sprintf("CREATE TABLE %s (id BIGINT NOT NULL PRIMARY KEY, created_at %s NOT NULL, hits INT NOT NULL DEFAULT 0)", tbl, ts))
	require.NoError(t, err)
	_, err = d.DB().ExecContext(ctx, fmt.Sprintf("CREATE INDEX %s_created ON %s (created_at, id)", tbl, tbl))
	require.NoError(t, err)
	base := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	for start := 1; start <= n; start += 1000 {
		var sb strings.Builder
		fmt.Fprintf(&sb, "INSERT INTO %s (id, created_at) VALUES ", tbl)
		for id := start; id < start+1000 && id <= n; id++ {
			if id > start {
				sb.WriteString(", ")
			}
			// Literal values keep this independent of placeholder styles.
			fmt.Fprintf(&sb, "(%d, '%s')", id, base.Add(time.Duration(id/5)*time.Second).Format("2006-01-02 15:04:05"))
		}
		_, err := d.DB().ExecContext(ctx, sb.String())
		require.NoError(t, err)
	}
	return tbl
}

// writeBatchConfig writes body as a sluice.yaml in a fresh directory and
// returns its path.
func writeBatchConfig(t *testing.T, body string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "sluice.yaml")
	require.NoError(t, os.WriteFile(path, []byte(body), 0o644))
	return path
}

func countWhere(t *testing.T, d driver.Driver, tbl, where string) int64 {
	t.Helper()
	var n int64
	require.NoError(t, d.DB().QueryRowContext(context.Background(), "SELECT COUNT(*) FROM "+tbl+" WHERE "+where).Scan(&n))
	return n
}

// killRuns starts `sluice batch run NAME` and SIGKILLs it mid-run, kills
// times, then runs it to the end. A kill counts only if it lands inside a
// run: after that run committed chunks of its own (the checkpoint moved,
// so the kill is not before the first chunk) and while the process still
// ran (it dies of the signal, the batch not done).
func killRuns(t *testing.T, d driver.Driver, env []string, name string, kills int) {
	t.Helper()
	checkpoint := func() batch.Checkpoint {
		cps, err := batch.Checkpoints(context.Background(), d, name)
		require.NoError(t, err)
		if len(cps) == 0 {
			return batch.Checkpoint{}
		}
		require.Len(t, cps, 1)
		return cps[0]
	}
	for i := range kills {
		before := checkpoint().RowsDone
		cmd := startWorker(t, env, "batch", "run", name, "--interval", "100ms")
		waitFor(t, 60*time.Second, func() bool { return checkpoint().RowsDone > before },
			fmt.Sprintf("kill %d: the run committed no chunk within 60s", i))
		// A random delay further, so that kills land at different points of a chunk.
		time.Sleep(time.Duration(rand.IntN(200)) * time.Millisecond)
		require.NoError(t, cmd.Cmd.Process.Kill(), "kill %d", i)
		err := cmd.Wait()
		var ee *exec.ExitError
		require.ErrorAs(t, err, &ee, "kill %d: the run had already exited", i)
		ws := ee.Sys().(syscall.WaitStatus)
		require.True(t, ws.Signaled() && ws.Signal() == syscall.SIGKILL, "kill %d: the run exited (%v) before the kill", i, err)
		cp := checkpoint()
		require.Greater(t, cp.RowsDone, before, "kill %d landed before the run's first chunk", i)
		require.NotEqual(t, batch.StatusDone, cp.Status, "kill %d landed after the batch was done", i)
		t.Logf("kill %d: rows done %d -> %d", i, before, cp.RowsDone)
	}
	r := run(t, env, "", "batch", "run", name)
	require.Equal(t, 0, r.Code, r.Stderr)
	require.Contains(t, r.Stdout, "batch "+name+": done")
}

// SIGKILL mid-run, three times: with a same-database sink every
// row is still processed exactly once.
func TestBatchCrashExactlyOnce(t *testing.T) {
	t.Parallel()
	testdb.ForEach(t, func(t *testing.T, name string) {
		const n = 20_000
		d, tg := testdb.OpenURL(t, name)
		tbl := batchTable(t, d, tg.Prefix, n)
		cfg := writeBatchConfig(t, fmt.Sprintf(`batches:
  touch:
    source: "SELECT id, created_at FROM %s"
    key: [created_at, id]
    sink: { sql: "UPDATE %s SET hits = hits + 1 WHERE id IN ({ids})" }
    chunk: { size: 100 }
    throttle: { sleep: 10ms }
`, tbl, tbl))
		env := []string{"SLUICE_DB=" + tg.URL, "SLUICE_PREFIX=" + tg.Prefix, "SLUICE_CONFIG=" + cfg}
		killRuns(t, d, env, "touch", 3)
		require.Zero(t, countWhere(t, d, tbl, "hits <> 1"), "rows not processed exactly once")
		r := run(t, env, "", "batch", "status", "touch", "--json")
		require.Equal(t, 0, r.Code, r.Stderr)
		var cps []map[string]any
		require.NoError(t, json.Unmarshal([]byte(r.Stdout), &cps))
		require.Len(t, cps, 1)
		require.Equal(t, "done", cps[0]["status"])
		require.Equal(t, float64(n), cps[0]["rows_done"])
	})
}

// With a webhook sink, each kill repeats at most one chunk, under the same
// idempotency key, and every row is delivered.
func TestBatchCrashWebhook(t *testing.T) {
	t.Parallel()
	const n = 10_000
	d, tg := testdb.OpenURL(t, "sqlite")
	tbl := batchTable(t, d, tg.Prefix, n)
	var mu sync.Mutex
	deliveries := map[string]int{}
	seen := map[float64]bool{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if err := webhook.Verify("s3cret", r.Header.Get("X-Sluice-Signature"), body, time.Minute); err != nil {
			http.Error(w, err.Error(), http.StatusUnauthorized)
			return
		}
		var chunk struct {
			Rows []map[string]any `json:"rows"`
		}
		if err := json.Unmarshal(body, &chunk); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		mu.Lock()
		deliveries[r.Header.Get("Idempotency-Key")]++
		for _, row := range chunk.Rows {
			seen[row["id"].(float64)] = true
		}
		mu.Unlock()
	}))
	defer srv.Close()
	cfg := writeBatchConfig(t, fmt.Sprintf(`batches:
  export:
    source: "SELECT id, created_at FROM %s"
    key: [created_at, id]
    sink: { http: { url: "%s", secret: s3cret, timeout: 5s } }
    chunk: { size: 50 }
    throttle: { sleep: 5ms }
`, tbl, srv.URL))
	env := []string{"SLUICE_DB=" + tg.URL, "SLUICE_PREFIX=" + tg.Prefix, "SLUICE_CONFIG=" + cfg}
	const kills = 3
	killRuns(t, d, env, "export", kills)
	mu.Lock()
	defer mu.Unlock()
	require.Len(t, seen, n, "every row delivered")
	repeats := 0
	for key, c := range deliveries {
		require.True(t, strings.HasPrefix(key, "batch:export:all:"), key)
		repeats += c - 1
	}
	require.LessOrEqual(t, repeats, kills, "at most one chunk repeated per kill")
	require.Equal(t, n/50, len(deliveries))
}

// Dry run, pause, resume, reset and a second runner through the CLI.
func TestBatchCommands(t *testing.T) {
	t.Parallel()
	d, tg := testdb.OpenURL(t, "sqlite")
	tbl := batchTable(t, d, tg.Prefix, 2000)
	cfg := writeBatchConfig(t, fmt.Sprintf(`batches:
  slow:
    source: "SELECT id, created_at FROM %s"
    key: [id]
    sink: { sql: "UPDATE %s SET hits = hits + 1 WHERE id IN ({id})" }
    chunk: { size: 100 }
    throttle: { sleep: 100ms }
`, tbl, tbl))
	env := []string{"SLUICE_DB=" + tg.URL, "SLUICE_PREFIX=" + tg.Prefix, "SLUICE_CONFIG=" + cfg}

	r := run(t, env, "", "batch", "run", "slow", "--dry-run")
	require.Equal(t, 0, r.Code, r.Stderr)
	require.Contains(t, r.Stdout, "ORDER BY s.id LIMIT 100")
	require.Contains(t, r.Stdout, "rows: 100")
	require.Contains(t, r.Stdout, "nothing written")
	require.Zero(t, countWhere(t, d, tbl, "hits <> 0"))
	r = run(t, env, "", "batch", "status", "--json")
	require.Equal(t, 0, r.Code, r.Stderr)
	require.Equal(t, "[]\n", r.Stdout, "a dry run writes no checkpoint")

	r = run(t, env, "", "batch", "run", "nope")
	require.Equal(t, 2, r.Code)
	require.Contains(t, r.Stderr, `no batch "nope"`)

	first := startWorker(t, env, "batch", "run", "slow", "--interval", "50ms")
	time.Sleep(500 * time.Millisecond)
	r = run(t, env, "", "batch", "run", "slow")
	require.Equal(t, 1, r.Code)
	require.Contains(t, r.Stderr, "is being run by")

	r = run(t, env, "", "batch", "pause", "slow")
	require.Equal(t, 0, r.Code, r.Stderr)
	require.Contains(t, r.Stdout, "paused 1 shards")
	require.NoError(t, first.Wait(), "a paused run exits 0")
	r = run(t, env, "", "batch", "status", "slow")
	require.Equal(t, 0, r.Code, r.Stderr)
	require.Contains(t, r.Stdout, "paused")
	done := countWhere(t, d, tbl, "hits = 1")
	require.Greater(t, done, int64(0))
	require.Less(t, done, int64(2000))

	r = run(t, env, "", "batch", "resume", "slow")
	require.Equal(t, 0, r.Code, r.Stderr)
	r = run(t, env, "", "batch", "run", "slow", "--interval", "10ms")
	require.Equal(t, 0, r.Code, r.Stderr)
	require.Contains(t, r.Stdout, "rows/s")
	require.Contains(t, r.Stdout, "batch slow: done, 2000 rows")
	require.Zero(t, countWhere(t, d, tbl, "hits <> 1"))

	r = run(t, env, "", "batch", "reset", "slow")
	require.Equal(t, 0, r.Code, r.Stderr)
	require.Contains(t, r.Stdout, "reset 1 shards")
}

// `sluice batch enqueue` turns shards into jobs that `sluice work`
// processes spread between them; every row is processed once.
func TestBatchShardsAsJobs(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"sqlite", "postgres"} {
		t.Run(name, func(t *testing.T) {
			d, tg := testdb.OpenURL(t, name)
			tbl := batchTable(t, d, tg.Prefix, 3000)
			cfg := writeBatchConfig(t, fmt.Sprintf(`batches:
  spread:
    source: "SELECT id, created_at FROM %s WHERE CAST(id %% 4 AS TEXT) = {shard}"
    key: [created_at, id]
    shards: { values: ["0", "1", "2", "3"] }
    sink: { sql: "UPDATE %s SET hits = hits + 1 WHERE id IN ({ids})" }
    chunk: { size: 100 }
`, tbl, tbl))
			env := []string{"SLUICE_DB=" + tg.URL, "SLUICE_PREFIX=" + tg.Prefix, "SLUICE_CONFIG=" + cfg}
			r := run(t, env, "", "batch", "enqueue", "spread")
			require.Equal(t, 0, r.Code, r.Stderr)
			require.JSONEq(t, `{"inserted":4,"duplicates":0}`, r.Stdout)
			r = run(t, env, "", "batch", "enqueue", "spread")
			require.JSONEq(t, `{"inserted":0,"duplicates":4}`, r.Stdout, "shards already queued are not queued twice")
			w1 := startWorker(t, env, "work")
			w2 := startWorker(t, env, "work")
			waitDone(t, d, 60*time.Second)
			for _, w := range []*proctest.Proc{w1, w2} {
				require.NoError(t, w.Term(t, 2*time.Minute))
			}
			require.Zero(t, countWhere(t, d, tbl, "hits <> 1"), "rows not processed exactly once")
			jobs, err := d.ListJobs(context.Background(), sluicetype.ListParams{Type: "batch:spread", Status: sluicetype.StatusSuccess})
			require.NoError(t, err)
			require.Len(t, jobs, 4)
		})
	}
}

// SIGKILL three times during each of the three archive workloads: a purge
// by key range; an archive to a second table in the same database (an
// INSERT ... SELECT and a DELETE in the chunk's transaction); and an
// archive to another database by a copy sink, then a DELETE. The other
// database is another SQLite file, or on MariaDB and PostgreSQL other
// tables reached through a pool of their own (their own transactions,
// which is what the copy's idempotence is about). Every old row ends up
// deleted from the source once and, when archived, in the archive once;
// every newer row is untouched.
func TestBatchArchiveCrash(t *testing.T) {
	t.Parallel()
	const n, cutoffID = 10_000, 6_000 // created_at is base + id/5 s
	cutoff := "'" + time.Date(2024, 1, 1, 0, 0, cutoffID/5, 0, time.UTC).Format("2006-01-02 15:04:05") + "'"
	for _, name := range testdb.Names {
		for _, work := range []string{"purge", "archive", "copy"} {
			t.Run(name+"/"+work, func(t *testing.T) {
				t.Parallel()
				d, tg := testdb.OpenURL(t, name)
				tbl := batchTable(t, d, tg.Prefix, n)
				old := "created_at < " + cutoff
				archive, dest := tg.Prefix+"archive", d
				sink := fmt.Sprintf(`{ sql: "DELETE FROM %s WHERE id BETWEEN {min:id} AND {max:id} AND %s" }`, tbl, old)
				switch work {
				case "archive":
					// No key on the archive, so that a row archived twice shows.
					_, err := d.DB().Exec(fmt.Sprintf("CREATE TABLE %s AS SELECT * FROM %s WHERE 1 = 0", archive, tbl))
					require.NoError(t, err)
					sink = fmt.Sprintf(`{ sql: ["INSERT INTO %s SELECT * FROM %s WHERE id IN ({id})", "DELETE FROM %s WHERE id IN ({id})"] }`, archive, tbl, tbl)
				case "copy":
					var dtg testdb.Target
					dest, dtg = testdb.OpenURL(t, name)
					archive = dtg.Prefix + "archive"
					batchTable(t, dest, dtg.Prefix, 0)
					_, err := dest.DB().Exec(fmt.Sprintf("ALTER TABLE %sitems RENAME TO %s", dtg.Prefix, archive))
					require.NoError(t, err)
					sink = fmt.Sprintf(`{ copy: { db: "%s", table: %s }, sql: "DELETE FROM %s WHERE id BETWEEN {min:id} AND {max:id} AND %s" }`,
						dtg.URL, archive, tbl, old)
				}
				cfg := writeBatchConfig(t, fmt.Sprintf(`batches:
  move:
    source: "SELECT * FROM %s WHERE %s"
    key: [id]
    sink: %s
    chunk: { size: 100 }
    throttle: { sleep: 10ms }
`, tbl, old, sink))
				env := []string{"SLUICE_DB=" + tg.URL, "SLUICE_PREFIX=" + tg.Prefix, "SLUICE_CONFIG=" + cfg}
				killRuns(t, d, env, "move", 3)
				require.Zero(t, countWhere(t, d, tbl, fmt.Sprintf("id < %d", cutoffID)), "old rows left in the source")
				require.Equal(t, int64(n-cutoffID+1), countWhere(t, d, tbl, "hits = 0"), "newer rows left as they were")
				if work == "purge" {
					return
				}
				var rows, distinct, sum int64
				require.NoError(t, dest.DB().QueryRow("SELECT COUNT(*), COUNT(DISTINCT id), SUM(id) FROM "+archive).Scan(&rows, &distinct, &sum))
				require.Equal(t, int64(cutoffID-1), rows, "archived rows")
				require.Equal(t, rows, distinct, "a row archived twice")
				require.Equal(t, int64((cutoffID-1)*cutoffID/2), sum, "the archive holds ids 1..cutoff-1")
			})
		}
	}
}
