package cli_test

import (
	"context"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluicehq/sluice/internal/testkit/proctest"
	"github.com/sluicehq/sluice/internal/testkit/testdb"
	"github.com/sluicehq/sluice/sluicetype"
)

// A `sluice serve` with jobs running is SIGTERMed: it exits 0 within the
// deadline and the handlers' grace, its running jobs go back to pending
// uncharged and unlocked, and the API stops answering, on every database.
func TestServeShutdownWithJobsRunning(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"sqlite", "mysql", "postgres"} {
		t.Run(name, func(t *testing.T) {
			d, tg := testdb.OpenURL(t, name)
			cfg, _ := writeConfig(t, dbConfig(tg, ""))
			env := []string{"SLUICE_PREFIX=" + tg.Prefix}
			addr := testdb.FreeAddr(t)
			s := startWorker(t, env, "serve", "--config", cfg, "--listen", addr, "--shutdown-timeout", "1s")
			testdb.WaitFor(t, 30*time.Second, "serve answers /healthz", func() bool { return proctest.Healthy("http://" + addr) })
			for range 2 {
				resp, err := http.Post("http://"+addr+"/v1/jobs", "application/json", strings.NewReader(`{"type":"sleep"}`))
				require.NoError(t, err)
				resp.Body.Close()
				require.Equal(t, http.StatusCreated, resp.StatusCode)
			}
			testdb.WaitFor(t, 10*time.Second, "both jobs running", func() bool {
				st, err := d.Stats(context.Background())
				return err == nil && len(st) > 0 && st[0].Processing == 2
			})

			start := time.Now()
			require.NoError(t, s.Cmd.Process.Signal(syscall.SIGTERM))
			select {
			case <-s.Done():
			case <-time.After(time.Minute):
				t.Fatal("serve did not exit within a minute of SIGTERM")
			}
			took := time.Since(start)
			require.NoError(t, s.Err(), "serve exits 0 on SIGTERM; stderr: %s", proctest.Tail(s.Stderr(), 2000))
			require.Less(t, took, shutdownBound(time.Second), "exit within the deadline, the handlers' grace and the requeue")
			require.False(t, proctest.Healthy("http://"+addr), "the API is closed")
			jobs, err := d.ListJobs(context.Background(), sluicetype.ListParams{Type: "sleep"})
			require.NoError(t, err)
			require.Len(t, jobs, 2)
			for _, j := range jobs {
				require.Equal(t, sluicetype.StatusPending, j.Status)
				require.Zero(t, j.Attempts, "interrupted by shutdown: not charged")
				require.Empty(t, j.LockedBy, "no job left processing with a live lease")
			}
			t.Logf("%s: serve with 2 jobs running exited %s after SIGTERM", name, took.Round(time.Millisecond))
		})
	}
}
