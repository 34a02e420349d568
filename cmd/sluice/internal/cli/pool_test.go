package cli_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/internal/testkit/testdb"
)

// The sizing promise of docs/scale.md "Sizing": a `sluice work` process opens at most 32
// pooled connections to MySQL and 16 to PostgreSQL whatever its concurrency
// (plus one LISTEN connection on PostgreSQL). One process runs 200 jobs at once,
// spread over 50 queues so that 50 producers claim and write outcomes side
// by side (one queue of 200 would batch its claims into a few
// connections), and the server's own session list, polled through the
// run, counts its sessions: on MySQL those of a user only it logs in as,
// on PostgreSQL those carrying its application_name.
func TestPoolBoundedWhateverTheConcurrency(t *testing.T) {
	t.Parallel()
	const queues, perQueue, jobs = 50, 4, 400
	for _, tc := range []struct {
		name    string
		maxPool int
		listen  int // the LISTEN connection, outside the pool
	}{{"mysql", 32, 0}, {"postgres", 16, 1}} {
		t.Run(tc.name, func(t *testing.T) {
			d, tg := testdb.OpenURL(t, tc.name)
			admin := d.DB()
			// The defaults, not the cap the other tests' processes run with.
			url, count := withoutParam(tg.URL, testPoolCap), ""
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
			// Each job waits for the gate, which opens once the run holds
			// twice the pool's connections in jobs processing at once, read from the database:
			// however slowly the machine starts them, that state comes.
			gate := filepath.Join(t.TempDir(), "gate")
			var qs, types strings.Builder
			ps := make([]sluice.EnqueueParams, jobs)
			for i := range queues {
				fmt.Fprintf(&qs, "  q%d: { concurrency: %d }\n", i, perQueue)
				fmt.Fprintf(&types, "  w%d: { queue: q%d, command: [\"sh\", \"-c\", \"until [ -e %s ]; do sleep 0.1; done\"] }\n", i, i, gate)
			}
			for i := range ps {
				ps[i] = sluice.EnqueueParams{Type: fmt.Sprintf("w%d", i%queues), Queue: fmt.Sprintf("q%d", i%queues)}
			}
			cfg := filepath.Join(t.TempDir(), "sluice.yaml")
			require.NoError(t, os.WriteFile(cfg, []byte(fmt.Sprintf("db: %s\nqueues:\n%stypes:\n%s", url, qs.String(), types.String())), 0o644))
			c, err := sluice.NewClient(sluice.Config{Driver: d})
			require.NoError(t, err)
			_, err = c.EnqueueMany(context.Background(), ps)
			require.NoError(t, err)
			env := []string{"SLUICE_PREFIX=" + tg.Prefix}
			w := startWorker(t, env, "work", "--config", cfg)

			peak, peakRunning := 0, int64(0) // written by the poller, read once it is done
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
					running := int64(0)
					for _, q := range st {
						running += q.Processing
					}
					peak = max(peak, n)
					if err == nil {
						peakRunning = max(peakRunning, running)
					}
				}
			}()
			testdb.WaitFor(t, 3*time.Minute, "twice the pool's connections in jobs processing at once", func() bool {
				st, err := d.Stats(context.Background())
				require.NoError(t, err)
				running := int64(0)
				for _, q := range st {
					running += q.Processing
				}
				return running >= int64(tc.maxPool*2)
			})
			require.NoError(t, os.WriteFile(gate, nil, 0o644))
			waitDone(t, d, 3*time.Minute)
			close(stop)
			<-done
			require.NoError(t, w.Term(t, 2*time.Minute))
			t.Logf("%s: %d queues of concurrency %d, up to %d jobs processing at once, at most %d server sessions", tc.name, queues, perQueue, peakRunning, peak)
			require.LessOrEqual(t, peak, tc.maxPool+tc.listen, "server sessions of one sluice work process")
			require.Positive(t, peak, "the count saw the process's sessions")
		})
	}
}

// withoutParam removes the URL parameter p that withParam added.
func withoutParam(u, p string) string {
	u = strings.Replace(u, "&"+p, "", 1)
	if base, q, ok := strings.Cut(u, "?"); ok {
		q = strings.TrimPrefix(strings.TrimPrefix(q, p), "&")
		if q == "" {
			return base
		}
		return base + "?" + q
	}
	return u
}
