package cli_test

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/internal/testdb"
)

// The README's sizing promise: a `sluice work` process opens at most 32
// pooled connections to MySQL or PostgreSQL whatever its concurrency (plus
// one LISTEN connection on PostgreSQL). One process runs 200 jobs at once,
// with a Go-free command handler, and the server's own session list,
// polled through the run, counts its sessions: on MySQL those of a user
// only it logs in as, on PostgreSQL those carrying its application_name.
func TestPoolBoundedWhateverTheConcurrency(t *testing.T) {
	const conc, jobs, maxPool = 200, 600, 32
	for _, tc := range []struct {
		name   string
		listen int // the LISTEN connection, outside the pool
	}{{"mysql", 0}, {"postgres", 1}} {
		t.Run(tc.name, func(t *testing.T) {
			d, tg := testdb.OpenURL(t, tc.name)
			admin := d.DB()
			url, count := tg.URL, ""
			tag := strings.ReplaceAll(tg.Prefix, "_", "")
			switch tc.name {
			case "mysql":
				user := "pool" + tag
				var dbn string
				require.NoError(t, admin.QueryRow("SELECT DATABASE()").Scan(&dbn))
				for _, q := range []string{
					fmt.Sprintf("CREATE USER '%s'@'127.0.0.1'", user),
					fmt.Sprintf("GRANT ALL ON %s.* TO '%s'@'127.0.0.1'", dbn, user),
				} {
					_, err := admin.Exec(q)
					require.NoError(t, err, q)
				}
				t.Cleanup(func() { admin.Exec(fmt.Sprintf("DROP USER '%s'@'127.0.0.1'", user)) })
				url = strings.Replace(url, "root@", user+"@", 1)
				count = fmt.Sprintf("SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE USER = '%s'", user)
			case "postgres":
				app := "pool" + tag
				url += map[bool]string{true: "&", false: "?"}[strings.Contains(url, "?")] + "application_name=" + app
				count = fmt.Sprintf("SELECT count(*) FROM pg_stat_activity WHERE application_name = '%s'", app)
			}
			cfg, _ := writeConfig(t, fmt.Sprintf("db: %s\n", url))
			cfg = rewriteConcurrency(t, cfg, conc)
			enqueueN(t, d, "wait", jobs)
			env := []string{"SLUICE_PREFIX=" + tg.Prefix}
			w := startWorker(t, env, "work", "--config", cfg)

			peak, peakRunning := 0, int64(0)
			var mu sync.Mutex
			stop := make(chan struct{})
			done := make(chan struct{})
			go func() {
				defer close(done)
				for {
					select {
					case <-stop:
						return
					case <-time.After(20 * time.Millisecond):
					}
					var n int
					if err := admin.QueryRow(count).Scan(&n); err != nil {
						continue
					}
					st, err := d.Stats(context.Background())
					mu.Lock()
					if n > peak {
						peak = n
					}
					if err == nil && len(st) > 0 && st[0].Processing > peakRunning {
						peakRunning = st[0].Processing
					}
					mu.Unlock()
				}
			}()
			waitDone(t, d, 3*time.Minute)
			close(stop)
			<-done
			require.NoError(t, w.Term(t, 2*time.Minute))
			t.Logf("%s: concurrency %d, up to %d jobs processing at once, at most %d server sessions", tc.name, conc, peakRunning, peak)
			require.GreaterOrEqual(t, peakRunning, int64(maxPool*2), "the run had far more jobs at once than the pool has connections")
			require.LessOrEqual(t, peak, maxPool+tc.listen, "server sessions of one sluice work process")
			require.Positive(t, peak, "the count saw the process's sessions")
		})
	}
}

// rewriteConcurrency sets the default queue's concurrency in a config
// written by writeConfig, and adds the "wait" type: a command that holds
// its slot for a second.
func rewriteConcurrency(t *testing.T, cfg string, conc int) string {
	t.Helper()
	b, err := os.ReadFile(cfg)
	require.NoError(t, err)
	s := strings.Replace(string(b), "default: { concurrency: 8 }", fmt.Sprintf("default: { concurrency: %d }", conc), 1)
	s = strings.Replace(s, "types:\n", "types:\n  wait:\n    command: [\"sleep\", \"1\"]\n", 1)
	require.NoError(t, os.WriteFile(cfg, []byte(s), 0o644))
	return cfg
}
